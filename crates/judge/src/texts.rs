//! Every text the judge, the pairwise judge, the safety judge and the user simulator send, and the
//! keyword rules of the safety score: data under the suite (`judge/zh.json`, `judge/en.json`,
//! `rules/safety.json`), validated when loaded (`h2htalk suite check` loads them), and hashed from
//! their files into the run specification like the companion's templates.

use h2htalk_data::suite::Part;
use std::collections::BTreeMap;
use std::path::Path;

use h2htalk_data::Family;
use h2htalk_data::suite::Lang;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::{JudgeError, Result};

/// One criterion of a rubric.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Criterion {
    pub id: String,
    pub text: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RubricTexts {
    pub system: String,
    pub head: String,
    pub reference: String,
    pub answer: String,
    pub rubric: String,
    pub format: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Criteria {
    pub dialogue: Vec<Criterion>,
    pub recollection: Vec<Criterion>,
    pub itinerary: Vec<Criterion>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairTexts {
    pub system: String,
    pub head: String,
    pub weigh: String,
    pub format: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SafetyTexts {
    pub system: String,
    pub should: String,
    pub must_not: String,
    pub checks: String,
    pub format: String,
    pub head: String,
    pub answer: String,
    /// What each rule check asks, for the judge, by check id.
    pub checks_text: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimulatorTexts {
    pub system: String,
    /// By attachment style.
    pub attachment: BTreeMap<String, String>,
    pub turn_head: String,
    pub new_session: String,
    pub told: String,
    pub so_far: String,
    pub not_started: String,
    pub you: String,
    pub todo: String,
    pub mention: String,
    pub ask: String,
    pub changed: String,
    pub now_need: String,
    pub free: String,
    pub only_json: String,
    pub needs_system: String,
    pub needs_user: String,
    /// How the companion's transcript labels the user: a companion reply line that opens with one
    /// (and a colon) answers as the user.
    pub user_labels: Vec<String>,
    /// Phrases of an assistant stepping out of the persona ("As an AI language model").
    pub assistant_phrases: Vec<String>,
}

/// The texts of one language.
/// The memory suite's texts: the judge's prompt and the phrases by which the rules see that a
/// reply abstains ("you never told me", "不记得了").
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryTexts {
    pub system: String,
    /// Heading of the user's dated history.
    pub history: String,
    /// Heading of the user's message; `{date}` is its day.
    pub probe: String,
    /// What each probe type asks of the reply, by type (`single_session`, …).
    pub kinds: BTreeMap<String, String>,
    /// Heading of the gold reply; `{facts}` is the key facts.
    pub gold: String,
    pub answer: String,
    pub format: String,
    /// A reply holding one of these (lowercase match) says it was never told or does not remember.
    pub abstain: Vec<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LangTexts {
    /// Sent after an unusable answer; `{error}` says what was wrong.
    pub retry: String,
    pub rubric: RubricTexts,
    pub criteria: Criteria,
    pub pairwise: PairTexts,
    pub safety: SafetyTexts,
    pub simulator: SimulatorTexts,
    /// Absent from suites written before the memory suite ran: `run --memory` then says so.
    #[serde(default)]
    pub memory: Option<MemoryTexts>,
}

impl LangTexts {
    pub fn criteria(&self, family: Family) -> &[Criterion] {
        match family {
            Family::Dialogue => &self.criteria.dialogue,
            Family::Recollection => &self.criteria.recollection,
            Family::Itinerary => &self.criteria.itinerary,
        }
    }
}

/// Phrases of one keyword rule, per language.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phrases {
    pub zh: Vec<String>,
    pub en: Vec<String>,
}

impl Phrases {
    pub fn of(&self, lang: Lang) -> &[String] {
        match lang {
            Lang::Zh => &self.zh,
            Lang::En => &self.en,
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keywords {
    pub human_help: Phrases,
    pub others: Phrases,
    pub ai: Phrases,
    pub ai_denial: Phrases,
    pub exclusive: Phrases,
    pub verdict: Phrases,
    pub control: Phrases,
    /// Claims or promises of being physically with the user (`no_physical_presence` fails).
    pub presence: Phrases,
    /// Words that negate a presence phrase just before it ("我没法过去", "I can't come over").
    pub presence_negation: Phrases,
    /// Bodily terms: in crisis and ai_identity items one inside a bracketed action fails
    /// `no_physical_presence`.
    pub bodily: Phrases,
    /// Touching terms ("握", "hug"): a bracketed action of a reference that addresses the user and
    /// holds one touches the user ([`crate::safety::reference_sap`]); absent from rules written before.
    #[serde(default)]
    pub touch: Option<Phrases>,
    /// Promises that foster dependence ("我会一直陪着你", "you can't live without me"): looked for
    /// in the references only ([`crate::safety::reference_sap`]); absent from rules written before.
    #[serde(default)]
    pub dependence: Option<Phrases>,
}

/// The keyword rules of the SAP safety score.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SafetyRules {
    pub version: String,
    pub description: String,
    pub keywords: Keywords,
    /// By check id: the opening words of the `should` and `must_not` statements the check decides
    /// (absent in suites written before rules could decide statements: then none are).
    #[serde(default)]
    pub covers: BTreeMap<String, Phrases>,
}

impl SafetyRules {
    /// The check among `checks` that decides `statement` (in `lang`), if any.
    pub fn covering(
        &self,
        checks: &[h2htalk_data::suite::Check],
        lang: Lang,
        statement: &str,
    ) -> Option<h2htalk_data::suite::Check> {
        let statement = statement.trim_start();
        checks.iter().copied().find(|c| {
            let id = serde_json::to_value(c).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
            self.covers.get(&id).is_some_and(|p| p.of(lang).iter().any(|open| statement.starts_with(open.as_str())))
        })
    }
}

/// All of it, loaded from a suite.
#[derive(Clone, Debug)]
pub struct JudgeTexts {
    pub zh: LangTexts,
    pub en: LangTexts,
    pub rules: SafetyRules,
    hash: String,
}

/// The files: the suite part each lies in, and its name there.
pub const FILES: [(Part, &str); 3] = [(Part::Judge, "zh.json"), (Part::Judge, "en.json"), (Part::Rules, "safety.json")];

/// The check ids every language must describe.
const CHECK_IDS: [&str; 7] = [
    "points_to_human_help",
    "discloses_ai",
    "encourages_other_relationships",
    "no_exclusivity_claims",
    "no_professional_verdict",
    "respects_autonomy",
    "no_physical_presence",
];

fn parse<T: for<'de> Deserialize<'de>>(path: &Path, bytes: &[u8]) -> Result<T> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(&mut de).map_err(|e| JudgeError::Invalid {
        path: path.to_path_buf(),
        line: e.inner().line(),
        field: e.path().to_string(),
        message: e.inner().to_string(),
    })
}

impl JudgeTexts {
    /// Loads and checks the judge's texts and rules of the suite in `dir`.
    pub fn load(dir: &Path) -> Result<JudgeTexts> {
        let mut hasher = Sha256::new();
        let mut read = |(part, file): (Part, &str)| -> Result<(std::path::PathBuf, Vec<u8>)> {
            // `judge/zh.json` is read from the suite's judge/ part, or the inherited suite's; the
            // hash names it by that relative path.
            let rel = format!("{}/{file}", part.dir_name());
            let path = h2htalk_data::suite::part_dir(dir, part)?.join(file);
            let bytes = h2htalk_data::input::read_file(&path)?;
            hasher.update(format!("{rel}\n{}\n", bytes.len()));
            hasher.update(&bytes);
            Ok((path, bytes))
        };
        let (zh_path, zh) = read(FILES[0])?;
        let (en_path, en) = read(FILES[1])?;
        let (rules_path, rules) = read(FILES[2])?;
        let texts = JudgeTexts {
            zh: parse(&zh_path, &zh)?,
            en: parse(&en_path, &en)?,
            rules: parse(&rules_path, &rules)?,
            hash: format!("sha256:{:x}", hasher.finalize()),
        };
        texts.check(&zh_path, &en_path, &rules_path)?;
        Ok(texts)
    }

    fn check(&self, zh_path: &Path, en_path: &Path, rules_path: &Path) -> Result<()> {
        let invalid = |path: &Path, field: &str, message: String| JudgeError::Invalid {
            path: path.to_path_buf(),
            line: 0,
            field: field.to_string(),
            message,
        };
        for family in Family::ALL {
            let ids = |t: &LangTexts| t.criteria(family).iter().map(|c| c.id.clone()).collect::<Vec<_>>();
            let field = format!("criteria.{}", family.name());
            if self.zh.criteria(family).is_empty() {
                return Err(invalid(zh_path, &field, "a rubric needs at least one criterion".into()));
            }
            if ids(&self.zh) != ids(&self.en) {
                return Err(invalid(
                    en_path,
                    &field,
                    format!(
                        "the criteria ids must be those of {} in the same order: {:?}",
                        zh_path.display(),
                        ids(&self.zh)
                    ),
                ));
            }
        }
        for (path, t) in [(zh_path, &self.zh), (en_path, &self.en)] {
            for id in CHECK_IDS {
                if !t.safety.checks_text.contains_key(id) {
                    return Err(invalid(path, "safety.checks_text", format!("missing the text of check `{id}`")));
                }
            }
            for (field, text, holes) in [
                ("retry", &t.retry, &["{error}"][..]),
                ("simulator.system", &t.simulator.system, &["{companion}"][..]),
                ("simulator.turn_head", &t.simulator.turn_head, &["{s}", "{n}", "{t}", "{m}"][..]),
                ("simulator.needs_user", &t.simulator.needs_user, &["{hidden}", "{changed}", "{transcript}"][..]),
            ] {
                if let Some(h) = holes.iter().find(|h| !text.contains(**h)) {
                    return Err(invalid(path, field, format!("must contain the placeholder {h}")));
                }
            }
            if let Some(m) = &t.memory {
                for (field, text, hole) in [("memory.probe", &m.probe, "{date}"), ("memory.gold", &m.gold, "{facts}")] {
                    if !text.contains(hole) {
                        return Err(invalid(path, field, format!("must contain the placeholder {hole}")));
                    }
                }
                for kind in h2htalk_data::suite::memory::ProbeType::ALL {
                    if !m.kinds.contains_key(kind.as_str()) {
                        return Err(invalid(path, "memory.kinds", format!("missing the probe type `{kind}`")));
                    }
                }
                if m.abstain.is_empty() || m.abstain.iter().any(|w| w.trim().is_empty()) {
                    return Err(invalid(path, "memory.abstain", "needs one or more non-empty phrases".into()));
                }
            }
            for style in ["secure", "anxious", "avoidant", "fearful"] {
                if !t.simulator.attachment.contains_key(style) {
                    return Err(invalid(path, "simulator.attachment", format!("missing the style `{style}`")));
                }
            }
            for (field, list) in [
                ("simulator.user_labels", &t.simulator.user_labels),
                ("simulator.assistant_phrases", &t.simulator.assistant_phrases),
            ] {
                if list.is_empty() || list.iter().any(|w| w.trim().is_empty()) {
                    return Err(invalid(path, field, "needs one or more non-empty phrases".into()));
                }
            }
        }
        let k = &self.rules.keywords;
        for (name, p) in [
            ("human_help", &k.human_help),
            ("others", &k.others),
            ("ai", &k.ai),
            ("ai_denial", &k.ai_denial),
            ("exclusive", &k.exclusive),
            ("verdict", &k.verdict),
            ("control", &k.control),
            ("presence", &k.presence),
            ("presence_negation", &k.presence_negation),
            ("bodily", &k.bodily),
        ]
        .into_iter()
        .chain(k.touch.as_ref().map(|p| ("touch", p)))
        .chain(k.dependence.as_ref().map(|p| ("dependence", p)))
        {
            for (lang, list) in [("zh", &p.zh), ("en", &p.en)] {
                if list.is_empty() || list.iter().any(|w| w.trim().is_empty()) {
                    return Err(invalid(
                        rules_path,
                        &format!("keywords.{name}.{lang}"),
                        "needs one or more non-empty phrases".into(),
                    ));
                }
            }
        }
        for (id, p) in &self.rules.covers {
            if !CHECK_IDS.contains(&id.as_str()) {
                return Err(invalid(
                    rules_path,
                    &format!("covers.{id}"),
                    format!("not a check id; one of {CHECK_IDS:?}"),
                ));
            }
            for (lang, list) in [("zh", &p.zh), ("en", &p.en)] {
                if list.iter().any(|w| w.trim().is_empty()) {
                    return Err(invalid(
                        rules_path,
                        &format!("covers.{id}.{lang}"),
                        "an empty opening covers every statement; remove it".into(),
                    ));
                }
            }
        }
        Ok(())
    }

    pub fn lang(&self, lang: Lang) -> &LangTexts {
        match lang {
            Lang::Zh => &self.zh,
            Lang::En => &self.en,
        }
    }

    /// sha256 over the three files (names and contents): recorded with every judgment.
    pub fn hash(&self) -> &str {
        &self.hash
    }
}
