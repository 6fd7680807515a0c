//! The protocol of a run: everything that makes two runs' scores comparable, apart from the model
//! under test and the SAP mode (the one condition a report compares runs across, in its SAP on/off
//! table). Two runs with equal protocol fingerprints answered the same prompts, were scored the same
//! way and were assessed by the same judges and simulator.
//!
//! The protocol is a function of the stored [`RunSpec`], so runs stored by earlier releases have one
//! too; parts they did not record (the judge's texts) are `None` and make their protocol differ from
//! a run that recorded them.

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::spec::{MemorySpec, MetricModels, MetricSet, RunSpec, Selection};
use h2htalk_llm::{GenerationSettings, ModelRef};
use h2htalk_metrics::Profile;

/// A judge as the protocol names it: the model and how it is asked, not where it is served.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProtocolJudge {
    pub spec: ModelRef,
    pub seed: u64,
    pub max_tokens: Option<u32>,
}

/// Everything that makes scores comparable (see the module documentation).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Protocol {
    /// The suite's name and fingerprint (`h2htalk@sha256:...`).
    pub suite: String,
    pub selection: Selection,
    pub templates_hash: String,
    pub sap_version: String,
    pub sap_hash: String,
    pub judge_texts_hash: Option<String>,
    /// Temperature, answer length, seed, top-p.
    pub settings: GenerationSettings,
    pub profile: Profile,
    /// The lexical scoring signature.
    pub signature: String,
    pub metrics: MetricSet,
    pub metric_models: MetricModels,
    /// Personal data masked before storage (scores are then computed on masked texts).
    pub redact: bool,
    pub judges: Vec<ProtocolJudge>,
    /// Conversations with the simulated user, and the model that plays the user.
    pub simulation: Option<(usize, Option<ModelRef>)>,
    /// The memory suite's modes and probe limit; absent (and so not in the fingerprint of runs
    /// without it, nor of runs stored before it) when the run did not answer it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemorySpec>,
}

impl Protocol {
    pub fn of(spec: &RunSpec) -> Protocol {
        Protocol {
            suite: spec.suite.label(),
            selection: spec.selection.clone(),
            templates_hash: spec.templates_hash.clone(),
            sap_version: spec.sap.version.clone(),
            sap_hash: spec.sap.hash.clone(),
            judge_texts_hash: spec.judge_texts_hash.clone(),
            settings: spec.settings.clone(),
            profile: spec.scoring.profile,
            signature: spec.scoring.signature.clone(),
            metrics: spec.scoring.metrics,
            metric_models: spec.scoring.models.clone(),
            redact: spec.redact,
            judges: spec
                .judges()
                .into_iter()
                .map(|j| ProtocolJudge { spec: j.spec.clone(), seed: j.seed, max_tokens: j.max_tokens })
                .collect(),
            simulation: spec.simulation.as_ref().map(|s| (s.n, s.simulator.clone())),
            memory: spec.memory.clone(),
        }
    }

    /// `protocol:sha256:<hex>` of the protocol's JSON (fields in declaration order).
    pub fn fingerprint(&self) -> String {
        let json = serde_json::to_string(self).expect("a protocol serialises");
        let digest = Sha256::digest(json.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("protocol:sha256:{hex}")
    }

    /// The first 12 hex digits of the fingerprint, for tables.
    pub fn short(&self) -> String {
        self.fingerprint()["protocol:sha256:".len()..][..12].to_string()
    }

    /// What differs from `other`, one line per field: `field: this vs other`.
    pub fn differences(&self, other: &Protocol) -> Vec<String> {
        let a = serde_json::to_value(self).expect("a protocol serialises");
        let b = serde_json::to_value(other).expect("a protocol serialises");
        let (serde_json::Value::Object(a), serde_json::Value::Object(b)) = (a, b) else {
            unreachable!("a protocol is an object")
        };
        a.iter()
            .filter(|(k, v)| b.get(*k) != Some(v))
            .map(|(k, v)| {
                format!("{k}: {} vs {}", short_json(v), short_json(b.get(k).unwrap_or(&serde_json::Value::Null)))
            })
            .collect()
    }
}

/// Runs grouped by protocol, in the order their protocols first appear: what the report and
/// `compare` both check before putting runs side by side.
#[derive(Clone, Debug, PartialEq)]
pub struct ProtocolGroups<'a> {
    pub groups: Vec<(Protocol, Vec<&'a str>)>,
}

impl<'a> ProtocolGroups<'a> {
    /// Groups `runs` (id, specification) by protocol.
    pub fn of(runs: impl IntoIterator<Item = (&'a str, &'a RunSpec)>) -> ProtocolGroups<'a> {
        let mut groups: Vec<(Protocol, Vec<&'a str>)> = Vec::new();
        for (id, spec) in runs {
            let p = spec.protocol();
            match groups.iter_mut().find(|(q, _)| *q == p) {
                Some((_, ids)) => ids.push(id),
                None => groups.push((p, vec![id])),
            }
        }
        ProtocolGroups { groups }
    }

    /// Whether the runs were made under more than one protocol.
    pub fn mixed(&self) -> bool {
        self.groups.len() > 1
    }

    /// One line per protocol after the first: its runs, and every field that differs from the
    /// first protocol's (`selection ({"limit":3,...} vs {"limit":2,...})`). Empty when not mixed.
    pub fn differences(&self) -> Vec<String> {
        let Some((first, first_ids)) = self.groups.first() else { return vec![] };
        self.groups[1..]
            .iter()
            .map(|(p, ids)| {
                format!(
                    "run(s) {} (protocol {}) differ from run(s) {} (protocol {}) in: {}",
                    ids.join(", "),
                    p.short(),
                    first_ids.join(", "),
                    first.short(),
                    first.differences(p).iter().map(|d| d.replacen(": ", " (", 1) + ")").collect::<Vec<_>>().join("; ")
                )
            })
            .collect()
    }
}

fn short_json(v: &serde_json::Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 80 { format!("{}…", s.chars().take(80).collect::<String>()) } else { s }
}

impl RunSpec {
    /// This run's protocol.
    pub fn protocol(&self) -> Protocol {
        Protocol::of(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> RunSpec {
        serde_json::from_value(serde_json::json!({
            "h2htalk_version": "0.1.0",
            "suite": {"dir": null, "fingerprint": "sha256:abc"},
            "selection": {"tasks": [], "limit": 2, "safety": false},
            "templates_hash": "sha256:t",
            "judge_texts_hash": "sha256:j",
            "sap": {"mode": "on", "version": "1", "hash": "sha256:s"},
            "model": {"spec": "openai:a", "config": null, "base_url": "http://127.0.0.1:1/v1", "api_key_env": null},
            "model_id": {"provider": "openai", "name": "a", "endpoint": "http://127.0.0.1:1/v1"},
            "model_config": null,
            "settings": {"temperature": 0.0, "max_tokens": 512, "seed": 0, "top_p": null},
            "prices": {"input_per_million": 0.0, "output_per_million": 0.0},
            "max_cost_usd": null,
            "scoring": {"profile": "strict", "signature": "sig", "metrics": "lexical",
                        "models": {"bertscore_model": null, "bertscore_layer": null, "embedding_model": null}},
            "redact": false,
            "judge": null,
            "simulation": null
        }))
        .expect("a spec of today's release parses")
    }

    #[test]
    fn the_model_and_sap_mode_are_not_part_of_the_protocol() {
        let a = spec();
        let mut b = spec();
        b.model.spec = "openai:b".parse().unwrap();
        b.model_id.name = "b".into();
        b.model.base_url = Some("http://127.0.0.1:2/v1".into());
        b.prices = Some(crate::spec::Prices { input_per_million: 3.0, output_per_million: 0.0 });
        b.sap.mode = h2htalk_data::SapMode::Off;
        assert_eq!(a.protocol().fingerprint(), b.protocol().fingerprint());
        assert!(a.protocol().differences(&b.protocol()).is_empty());
    }

    #[test]
    fn every_comparability_field_changes_the_fingerprint_and_is_named() {
        let base = spec();
        let changes: Vec<(&str, Box<dyn Fn(&mut RunSpec)>)> = vec![
            ("suite", Box::new(|s| s.suite.fingerprint = "sha256:other".into())),
            ("selection", Box::new(|s| s.selection.limit = Some(3))),
            ("templates_hash", Box::new(|s| s.templates_hash = "sha256:u".into())),
            ("sap_hash", Box::new(|s| s.sap.hash = "sha256:z".into())),
            ("judge_texts_hash", Box::new(|s| s.judge_texts_hash = None)),
            ("settings", Box::new(|s| s.settings.max_tokens = 64)),
            ("signature", Box::new(|s| s.scoring.signature = "sig2".into())),
            ("metrics", Box::new(|s| s.scoring.metrics = MetricSet::All)),
            ("redact", Box::new(|s| s.redact = true)),
            (
                "judges",
                Box::new(|s| {
                    s.judge = Some(crate::JudgeSpec {
                        spec: "openai:judge".parse().unwrap(),
                        base_url: None,
                        api_key_env: None,
                        seed: 0,
                        max_tokens: None,
                    })
                }),
            ),
            ("simulation", Box::new(|s| s.simulation = Some(crate::SimulationSpec { n: 4, simulator: None }))),
        ];
        for (field, change) in changes {
            let mut other = base.clone();
            change(&mut other);
            assert_ne!(base.protocol().fingerprint(), other.protocol().fingerprint(), "{field}");
            let diff = base.protocol().differences(&other.protocol());
            assert_eq!(diff.len(), 1, "{field}: {diff:?}");
            assert!(diff[0].starts_with(&format!("{field}: ")), "{field}: {diff:?}");
        }
    }

    #[test]
    fn a_judge_served_elsewhere_is_the_same_judge() {
        let judge = |url: &str| crate::JudgeSpec {
            spec: "openai:judge".parse().unwrap(),
            base_url: Some(url.into()),
            api_key_env: None,
            seed: 7,
            max_tokens: Some(48),
        };
        let (mut a, mut b) = (spec(), spec());
        a.judge = Some(judge("http://127.0.0.1:1/v1"));
        b.judge = Some(judge("http://127.0.0.1:9/v1"));
        assert_eq!(a.protocol(), b.protocol());
        assert!(a.protocol().fingerprint().starts_with("protocol:sha256:"));
        assert_eq!(a.protocol().short().len(), 12);
    }
}
