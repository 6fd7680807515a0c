//! The pairwise judges' cards ([`crate::compute::judge_cards`]) as tables.

use crate::compute::judge_cards::JudgeCard;
use crate::format::{fmt_ci, fmt4};
use crate::render::tables::{Table, text_cell};

/// `rate [lo, hi] (k/n)`, or `n/a (0/n)` (text only: the card's figures are in JSON).
fn share(p: &h2htalk_stats::Proportion) -> String {
    match p.rate {
        Some(r) => format!("{} {} ({}/{})", fmt4(r), fmt_ci(p.ci95.map(|c| c[0]), p.ci95.map(|c| c[1])), p.k, p.n),
        None => format!("n/a (0/{})", p.n),
    }
}

/// One judge's card: each run's raw and length-controlled rank, the shares in the note.
pub fn card_table(c: &JudgeCard) -> Table {
    let rows = c
        .ranks
        .iter()
        .map(|r| {
            vec![
                text_cell(&r.run),
                text_cell(r.raw_rank.to_string()),
                text_cell(r.controlled_rank.to_string()),
                text_cell(format!("{:+.3}", r.controlled_score)),
            ]
        })
        .chain([
            vec![
                text_cell("longer answer won"),
                text_cell(share(&c.longer_preferred)),
                text_cell(if c.prefers_longer { "flagged: above 70%" } else { "" }),
                text_cell(""),
            ],
            vec![
                text_cell("answer shown first won"),
                text_cell(share(&c.first_preferred)),
                text_cell(if c.position_biased { "flagged: interval excludes 50%" } else { "" }),
                text_cell(""),
            ],
        ])
        .collect();
    let changes = c.ranks.iter().filter(|r| r.raw_rank != r.controlled_rank).count();
    Table {
        section: format!("judge_card:{}", c.judge),
        title: format!("Judge card of `{}` (pairwise, {} compared items)", c.judge, c.comparisons),
        head: vec!["run".into(), "raw rank".into(), "length-controlled rank".into(), "controlled score".into()],
        rows,
        not_run: false,
        note: Some(format!(
            "From the judgments `h2htalk compare` stored for these runs. Length-controlled Bradley–Terry: the \
             answers' length difference (len_A − len_B)/(len_A + len_B) as a covariate, coefficient {:+.3}; {} \
             run(s) change rank. The longer answer's share counts decided judgments between answers of different \
             length; the first-shown share counts single-order verdicts that named a winner (50% for a judge \
             without position bias).",
            c.length_coefficient, changes
        )),
    }
}
