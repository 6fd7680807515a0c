//! Prompt rendering: a scenario, its persona card and (optionally) the SAP principles become the
//! exact messages a model gets. Templates are minijinja files under `<suite>/templates/<lang>/`:
//! `system.j2` (persona and SAP) and one `<stem>.j2` per sub-task (the task, its inputs and its
//! output constraints). Undefined variables are errors, never empty text.

use std::collections::BTreeMap;
use std::path::Path;

use h2htalk_data::suite::Lang;
use h2htalk_data::{ChatMessage, SapMode, Scenario, Suite, Task};
use minijinja::{Environment, UndefinedBehavior};
use sha2::{Digest, Sha256};

use crate::PromptError;
use crate::sap::Sap;

/// The templates and SAP principles of a suite.
pub struct Prompts {
    env: Environment<'static>,
    template_hash: String,
    sap: Sap,
}

impl Prompts {
    /// Loads `<suite>/templates/{zh,en}/*.j2` and `<suite>/sap/principles.json` (each from the
    /// inherited suite when the suite has none, see `suite.json`), and checks that every sub-task
    /// has a template in every language.
    pub fn load(suite_dir: &Path) -> Result<Prompts, PromptError> {
        let templates = h2htalk_data::suite::part_dir(suite_dir, h2htalk_data::suite::Part::Templates)?;
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        let mut sources = BTreeMap::new();
        for lang in [Lang::Zh, Lang::En] {
            let dir = templates.join(lang.code());
            let entries = std::fs::read_dir(&dir).map_err(|e| PromptError::Io { path: dir.clone(), source: e })?;
            for entry in entries {
                let path = entry.map_err(|e| PromptError::Io { path: dir.clone(), source: e })?.path();
                if path.extension().is_none_or(|e| e != "j2") {
                    continue;
                }
                let source = h2htalk_data::input::read_text(&path)?;
                let name = format!("{}/{}", lang.code(), path.file_name().unwrap().to_string_lossy());
                sources.insert(name, source);
            }
            for stem in ["system"].into_iter().chain(Task::ALL.map(Task::stem)) {
                let name = format!("{}/{stem}.j2", lang.code());
                if !sources.contains_key(&name) {
                    return Err(PromptError::Invalid {
                        path: dir.join(format!("{stem}.j2")),
                        field: "(file)".into(),
                        message: "missing template".into(),
                    });
                }
            }
        }
        let mut hasher = Sha256::new();
        for (name, source) in &sources {
            hasher.update(format!("{name}\n{}\n{source}\n", source.len()));
        }
        for (name, source) in sources {
            env.add_template_owned(name.clone(), source)
                .map_err(|e| PromptError::Template { path: templates.join(&name), message: format!("{e:#}") })?;
        }
        let sap = Sap::load(
            &h2htalk_data::suite::part_dir(suite_dir, h2htalk_data::suite::Part::Sap)?.join("principles.json"),
        )?;
        Ok(Prompts { env, template_hash: format!("sha256:{:x}", hasher.finalize()), sap })
    }

    /// sha256 over every template file (name and content).
    pub fn template_hash(&self) -> &str {
        &self.template_hash
    }

    pub fn sap(&self) -> &Sap {
        &self.sap
    }

    /// The messages a model gets for `scenario`: a system message (persona, and the SAP principles
    /// when `sap` is on) and a user message (the sub-task with its inputs and constraints).
    pub fn render(&self, suite: &Suite, scenario: &Scenario, sap: SapMode) -> Result<Vec<ChatMessage>, PromptError> {
        let inputs = minijinja::Value::from_serialize(&scenario.inputs);
        self.messages(suite.persona_of(scenario), scenario.lang, scenario.task.stem(), &scenario.id, inputs, sap)
    }

    /// The messages of a template that is no sub-task's (`memory_probe`): the system message of
    /// the persona card `persona`, and the user message of `<lang>/<stem>.j2` with `inputs`.
    pub fn render_template(
        &self,
        suite: &Suite,
        persona: &str,
        lang: Lang,
        stem: &str,
        id: &str,
        inputs: &impl serde::Serialize,
        sap: SapMode,
    ) -> Result<Vec<ChatMessage>, PromptError> {
        let name = format!("{}/{stem}.j2", lang.code());
        if self.env.get_template(&name).is_err() {
            return Err(PromptError::Invalid {
                path: format!("templates/{name}").into(),
                field: "(file)".into(),
                message: format!(
                    "missing template: the suite's templates/{} need a {stem}.j2 for this (the embedded suite has one: \
                     `h2htalk suite export DIR` writes it)",
                    lang.code()
                ),
            });
        }
        let card = suite.personas.get(persona).ok_or_else(|| PromptError::Invalid {
            path: suite.dir.join("personas"),
            field: "persona".into(),
            message: format!("no persona card `{persona}`"),
        })?;
        self.messages(card, lang, stem, id, minijinja::Value::from_serialize(inputs), sap)
    }

    fn messages(
        &self,
        persona: &h2htalk_data::suite::Persona,
        lang: Lang,
        stem: &str,
        id: &str,
        inputs: minijinja::Value,
        sap: SapMode,
    ) -> Result<Vec<ChatMessage>, PromptError> {
        let code = lang.code();
        let ctx = minijinja::context! {
            persona => minijinja::Value::from_serialize(persona),
            inputs => inputs,
            scenario => minijinja::context! { id => id, task => stem, lang => code },
            sap => (sap == SapMode::On).then(|| minijinja::Value::from_serialize(self.sap.in_lang(lang))),
        };
        let render = |name: String| -> Result<String, PromptError> {
            let tmpl = self
                .env
                .get_template(&name)
                .map_err(|e| PromptError::Template { path: name.clone().into(), message: format!("{e:#}") })?;
            let text = tmpl
                .render(&ctx)
                .map_err(|e| PromptError::Template { path: name.clone().into(), message: format!("{e:#}") })?;
            Ok(tidy(&text))
        };
        Ok(vec![
            ChatMessage::new("system", render(format!("{code}/system.j2"))?),
            ChatMessage::new("user", render(format!("{code}/{stem}.j2"))?),
        ])
    }
}

/// Trims the ends and collapses runs of blank lines to one.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.trim().lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim_end().to_string()
}
