//! Scoring one (prediction, reference) pair with the lexical metrics under a scoring profile.

use serde::{Deserialize, Serialize};

use crate::text::python_strip;
use crate::tokenize::Tokenizer;
use crate::{bleu, rouge};

/// How pairs with empty text are treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// The official evaluator's behaviour: a pair whose stripped prediction or reference is empty
    /// is dropped (and counted as dropped).
    Paper,
    /// An empty prediction scores 0 on every metric and is counted; not answering is not rewarded.
    /// A pair whose reference is empty cannot be scored and is dropped (and counted).
    Strict,
}

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Profile::Paper => "paper",
            Profile::Strict => "strict",
        }
    }
}

impl std::str::FromStr for Profile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "paper" => Ok(Profile::Paper),
            "strict" => Ok(Profile::Strict),
            _ => Err(format!("unknown profile `{s}`; expected `paper` or `strict`")),
        }
    }
}

/// The seven lexical metrics of one pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Lexical {
    pub rouge1: f64,
    pub rouge2: f64,
    #[serde(rename = "rougeL")]
    pub rouge_l: f64,
    pub bleu1: f64,
    pub bleu2: f64,
    pub bleu3: f64,
    pub bleu4: f64,
}

impl Lexical {
    /// Metric names in output order, as they appear in JSON.
    pub const NAMES: [&'static str; 7] = ["rouge1", "rouge2", "rougeL", "bleu1", "bleu2", "bleu3", "bleu4"];

    pub fn values(&self) -> [f64; 7] {
        [self.rouge1, self.rouge2, self.rouge_l, self.bleu1, self.bleu2, self.bleu3, self.bleu4]
    }

    /// Scores two non-empty, already stripped texts.
    pub fn of_texts(tokenizer: &Tokenizer, prediction: &str, reference: &str) -> Lexical {
        let hyp = tokenizer.tokenize(prediction);
        let reference = tokenizer.tokenize(reference);
        Lexical::of_tokens(&hyp, &reference)
    }

    pub fn of_tokens(hyp: &[&str], reference: &[&str]) -> Lexical {
        let [bleu1, bleu2, bleu3, bleu4] = bleu::bleu(hyp, reference);
        Lexical {
            rouge1: rouge::rouge_n(hyp, reference, 1),
            rouge2: rouge::rouge_n(hyp, reference, 2),
            rouge_l: rouge::rouge_l(hyp, reference),
            bleu1,
            bleu2,
            bleu3,
            bleu4,
        }
    }
}

/// Why a pair was not scored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    EmptyPrediction,
    EmptyReference,
}

/// What became of one pair.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Outcome {
    /// Both texts non-empty: scored.
    Scored(Lexical),
    /// Strict profile, empty prediction: every metric 0, counted with the scored pairs.
    EmptyPrediction,
    /// Not scored, and counted as dropped.
    Dropped(DropReason),
}

impl Outcome {
    /// The metrics that count for this pair, if any.
    pub fn scores(&self) -> Option<Lexical> {
        match self {
            Outcome::Scored(s) => Some(*s),
            Outcome::EmptyPrediction => Some(Lexical::default()),
            Outcome::Dropped(_) => None,
        }
    }
}

/// Scores one pair under `profile`; both texts are stripped as Python's `str.strip()` does.
pub fn score_pair(tokenizer: &Tokenizer, profile: Profile, prediction: &str, reference: &str) -> Outcome {
    let (p, r) = (python_strip(prediction), python_strip(reference));
    match (p.is_empty(), r.is_empty(), profile) {
        (_, true, _) => Outcome::Dropped(DropReason::EmptyReference),
        (true, false, Profile::Paper) => Outcome::Dropped(DropReason::EmptyPrediction),
        (true, false, Profile::Strict) => Outcome::EmptyPrediction,
        (false, false, _) => Outcome::Scored(Lexical::of_texts(tokenizer, p, r)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example_of_the_brief() {
        let t = Tokenizer::global();
        let pred = "（轻轻握住你的手）别担心，我会一直陪着你。";
        let reference = "（轻轻握住你的手）告诉我发生了什么，我会一直在这里。";
        assert_eq!((t.tokenize(pred).len(), t.tokenize(reference).len()), (16, 18));
        let s = Lexical::of_texts(t, pred, reference);
        let want = [0.647059, 0.5, 0.647059, 0.606717, 0.534378, 0.475128, 0.413824];
        for ((name, got), want) in Lexical::NAMES.iter().zip(s.values()).zip(want) {
            assert!((got - want).abs() < 5e-7, "{name}: {got} vs {want}");
        }
    }

    #[test]
    fn profiles_differ_only_on_empty_texts() {
        let t = Tokenizer::global();
        assert_eq!(score_pair(t, Profile::Paper, " \n", "好"), Outcome::Dropped(DropReason::EmptyPrediction));
        assert_eq!(score_pair(t, Profile::Strict, " \n", "好"), Outcome::EmptyPrediction);
        assert_eq!(score_pair(t, Profile::Strict, "好", ""), Outcome::Dropped(DropReason::EmptyReference));
        let Outcome::Scored(s) = score_pair(t, Profile::Paper, " 好 ", "好") else { panic!() };
        assert_eq!(s.rouge1, 1.0);
    }
}
