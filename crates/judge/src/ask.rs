//! Asking a model for a JSON answer: a strict parser (a ```json fence is the only thing tolerated
//! around the object), retries on an answer that cannot be used (the model is shown its answer and
//! what is wrong with it), and infrastructure failures kept apart from parse failures.

use h2htalk_data::suite::Lang;
use h2htalk_llm::{ChatMessage, ChatModel, ChatRequest, FaultKind, GenerationSettings, Scheduler};
use h2htalk_store::{CallUsage, JudgeOutcome, PairOutcome, Prices, Purpose, Store, UsageRole, UsageRow, Verdict};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::JudgeError;
use crate::texts::JudgeTexts;

/// How the judge is called; recorded with every judgment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JudgeSettings {
    /// Temperature 0 and a pinned seed by default.
    pub generation: GenerationSettings,
    /// How many answers the judge may give per item before the item counts as `judge_parse_failed`.
    pub max_parse_attempts: u32,
}

impl JudgeSettings {
    /// Temperature 0, the given seed, 512 tokens, three tries per item.
    pub fn pinned(seed: u64) -> JudgeSettings {
        JudgeSettings {
            generation: GenerationSettings { temperature: 0.0, max_tokens: 512, seed: Some(seed), top_p: None },
            max_parse_attempts: 3,
        }
    }

    /// A judge needs a seed (so its numbers can be reproduced) and at least one try.
    pub fn validate(&self) -> Result<(), JudgeError> {
        if self.generation.seed.is_none() {
            return Err(JudgeError::Settings(
                "the judge needs a pinned seed (set `seed` in the judge model's settings)".into(),
            ));
        }
        if self.max_parse_attempts == 0 {
            return Err(JudgeError::Settings("max_parse_attempts must be at least 1".into()));
        }
        Ok(())
    }
}

impl Default for JudgeSettings {
    fn default() -> Self {
        JudgeSettings::pinned(0)
    }
}

/// A judge model with its scheduler and settings.
#[derive(Clone, Copy)]
pub struct JudgeHandle<'a> {
    pub model: &'a dyn ChatModel,
    pub scheduler: &'a Scheduler,
    pub settings: &'a JudgeSettings,
    /// The judge's prompts and the safety rules, from the suite.
    pub texts: &'a JudgeTexts,
    /// The prices configured for the judge model (`None`: not set), recorded with its tokens.
    pub prices: Option<Prices>,
}

impl JudgeHandle<'_> {
    /// The judge's name in the store: `provider:model`.
    pub fn name(&self) -> String {
        self.model.id().to_string()
    }

    /// Adds the tokens of the judge's answers for `purpose` to `run_id`'s count in the store.
    pub fn record(&self, store: &Store, run_id: &str, purpose: Purpose, usage: CallUsage) -> Result<(), JudgeError> {
        let row = UsageRow { role: UsageRole::Judge, model: self.name(), purpose, usage, prices: self.prices };
        Ok(store.add_usage(run_id, &row)?)
    }

    /// [`ask_json`] with the judge's model, scheduler, settings and parse attempts.
    pub async fn ask<T>(
        &self,
        lang: Lang,
        messages: Vec<ChatMessage>,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Asked<T> {
        let s = self.settings;
        let retry = &self.texts.lang(lang).retry;
        ask_json(self.model, self.scheduler, &s.generation, s.max_parse_attempts, retry, messages, parse).await
    }
}

/// Why a model's JSON answer could not be had.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AskFailure {
    /// Every answer was unusable; `error` says what was wrong with the last, `raw` is that answer.
    ParseFailed { error: String, raw: String },
    /// The request itself failed (after the scheduler's retries).
    Infra { fault: FaultKind, message: String },
}

impl AskFailure {
    /// The outcome recorded for a judge call: `judge_parse_failed` or `judge_failed`.
    pub fn as_str(&self) -> &'static str {
        match self {
            AskFailure::ParseFailed { .. } => "judge_parse_failed",
            AskFailure::Infra { .. } => "judge_failed",
        }
    }

    pub fn judge_outcome(&self) -> JudgeOutcome {
        match self {
            AskFailure::ParseFailed { .. } => JudgeOutcome::JudgeParseFailed,
            AskFailure::Infra { .. } => JudgeOutcome::JudgeFailed,
        }
    }

    pub fn pair_outcome(&self) -> PairOutcome {
        match self {
            AskFailure::ParseFailed { .. } => PairOutcome::JudgeParseFailed,
            AskFailure::Infra { .. } => PairOutcome::JudgeFailed,
        }
    }

    pub fn verdict(&self) -> Verdict {
        match self {
            AskFailure::ParseFailed { .. } => Verdict::JudgeParseFailed,
            AskFailure::Infra { .. } => Verdict::JudgeFailed,
        }
    }

    pub fn message(&self) -> String {
        match self {
            AskFailure::ParseFailed { error, .. } => format!("unusable answer: {error}"),
            AskFailure::Infra { fault, message } => format!("{fault}: {message}"),
        }
    }
}

/// The result of asking, with what it took.
#[derive(Clone, Debug)]
pub struct Asked<T> {
    pub result: Result<T, AskFailure>,
    /// Answers received (each parse retry is one more).
    pub attempts: u32,
    /// The last answer received, if any.
    pub raw: Option<String>,
    /// Tokens the server reported (answers without usage count 0 here and in `unknown_usage`).
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Answers whose server reported no usage.
    pub unknown_usage: u32,
}

impl<T> Asked<T> {
    /// The tokens of the answers received, as the store counts them.
    pub fn usage(&self) -> CallUsage {
        CallUsage {
            calls: u64::from(self.attempts),
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            unknown_usage: u64::from(self.unknown_usage),
        }
    }
}

/// `text` without surrounding whitespace and without a Markdown code fence (```json … ```).
pub fn strip_fence(text: &str) -> &str {
    let t = text.trim();
    if let Some(rest) = t.strip_prefix("```") {
        let rest = rest.strip_prefix("json").or_else(|| rest.strip_prefix("JSON")).unwrap_or(rest);
        if let Some(body) = rest.strip_suffix("```") {
            return body.trim();
        }
    }
    t
}

/// Parses `text` (optionally fenced) as exactly one `T`; the error names the offending field.
pub fn parse_strict<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let body = strip_fence(text);
    let mut de = serde_json::Deserializer::from_str(body);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            format!("not the JSON object asked for: {}", e.inner())
        } else {
            format!("field `{path}`: {}", e.inner())
        }
    })?;
    de.end().map_err(|e| format!("text after the JSON object: {e}"))?;
    Ok(value)
}

/// Asks `model` with `messages` until `parse` accepts an answer, at most `max_attempts` answers.
/// After an unusable answer the conversation continues with that answer and `retry` (its
/// `{error}` replaced by what is wrong with it).
pub async fn ask_json<T>(
    model: &dyn ChatModel,
    scheduler: &Scheduler,
    settings: &GenerationSettings,
    max_attempts: u32,
    retry: &str,
    mut messages: Vec<ChatMessage>,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Asked<T> {
    let mut asked = Asked {
        result: Err(AskFailure::ParseFailed { error: "no answer".into(), raw: String::new() }),
        attempts: 0,
        raw: None,
        input_tokens: 0,
        output_tokens: 0,
        unknown_usage: 0,
    };
    while asked.attempts < max_attempts.max(1) {
        let request = ChatRequest { messages: messages.clone(), settings: settings.clone() };
        let outcome = scheduler.call(model, &request).await;
        let response = match outcome.result {
            Ok(r) => r,
            Err(e) => {
                asked.result = Err(AskFailure::Infra { fault: e.kind, message: e.message });
                return asked;
            }
        };
        asked.attempts += 1;
        asked.input_tokens += response.input_tokens.unwrap_or(0);
        asked.output_tokens += response.output_tokens.unwrap_or(0);
        asked.unknown_usage += u32::from(response.input_tokens.is_none() || response.output_tokens.is_none());
        asked.raw = Some(response.text.clone());
        match parse(&response.text) {
            Ok(v) => {
                asked.result = Ok(v);
                return asked;
            }
            Err(error) => {
                messages.push(ChatMessage::new("assistant", response.text.clone()));
                messages.push(ChatMessage::new("user", retry.replace("{error}", &error)));
                asked.result = Err(AskFailure::ParseFailed { error, raw: response.text });
            }
        }
    }
    asked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct A {
        x: u8,
    }

    #[test]
    fn fences_are_tolerated_and_nothing_else() {
        assert_eq!(parse_strict::<A>("```json\n{\"x\": 3}\n```"), Ok(A { x: 3 }));
        assert_eq!(parse_strict::<A>("  {\"x\": 3}\n"), Ok(A { x: 3 }));
        assert!(parse_strict::<A>("Sure! {\"x\": 3}").unwrap_err().contains("not the JSON object"));
        assert!(parse_strict::<A>("{\"x\": 3} thanks").unwrap_err().contains("after the JSON"));
        assert!(parse_strict::<A>("{\"x\": 3.5}").unwrap_err().contains("`x`"));
        assert!(parse_strict::<A>("{\"x\": 3, \"y\": 1}").is_err());
    }
}
