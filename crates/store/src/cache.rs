//! The answer cache (`call_cache`, `call_cache_uses`): every answered call under what determines
//! its answer, and how often each run or comparison took answers from it. Added within schema 3
//! (created on open when missing; a store without them has kept no answers).

use std::path::Path;
use std::sync::Mutex;

use h2htalk_llm::{CacheKey, CallCache, ChatResponse, FinishReason};
use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use serde_json::Value;

use crate::{Store, StoreResult, now};

pub(crate) const TABLES: &str = "
CREATE TABLE IF NOT EXISTS call_cache (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    messages TEXT NOT NULL,
    settings TEXT NOT NULL,
    sample INTEGER NOT NULL,
    text TEXT NOT NULL,
    finish_reason TEXT NOT NULL,
    input_tokens INTEGER,
    output_tokens INTEGER,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS call_cache_by_messages ON call_cache (messages);
CREATE TABLE IF NOT EXISTS call_cache_uses (
    scope TEXT NOT NULL,
    model TEXT NOT NULL,
    hits INTEGER NOT NULL,
    misses INTEGER NOT NULL,
    PRIMARY KEY (scope, model)
);
";

/// How much a scope (a run, a comparison) took from the cache, per model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CacheUse {
    pub scope: String,
    pub model: String,
    pub hits: u64,
    pub misses: u64,
}

/// What the cache holds, per model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CacheStats {
    pub model: String,
    pub entries: u64,
    /// Characters of the kept answers.
    pub answer_chars: u64,
}

impl Store {
    /// The kept answer under `key`, if any.
    pub fn cached_answer(&self, key: &CacheKey) -> StoreResult<Option<ChatResponse>> {
        if !self.has_table("call_cache")? {
            return Ok(None);
        }
        let row: Option<(String, String, Option<i64>, Option<i64>)> = self
            .conn
            .query_row(
                "SELECT text, finish_reason, input_tokens, output_tokens FROM call_cache WHERE key = ?1",
                [key.digest()],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        let Some((text, finish, input, output)) = row else { return Ok(None) };
        let item = format!("call_cache {}", &key.digest()[..16]);
        let tokens = |column: &str, v: Option<i64>| -> StoreResult<Option<u64>> {
            v.map(|v| self.decoder("").count(&item, column, v)).transpose()
        };
        Ok(Some(ChatResponse {
            text,
            finish_reason: FinishReason::parse(&finish),
            input_tokens: tokens("call_cache.input_tokens", input)?,
            output_tokens: tokens("call_cache.output_tokens", output)?,
        }))
    }

    /// Keeps an answer under `key` (a later answer to the same key replaces it).
    pub fn put_cached_answer(&mut self, key: &CacheKey, response: &ChatResponse) -> StoreResult<()> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO call_cache (key, model, messages, settings, sample, text, finish_reason, \
                 input_tokens, output_tokens, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    key.digest(),
                    key.model,
                    key.messages,
                    key.settings,
                    key.sample,
                    response.text,
                    response.finish_reason.as_str(),
                    response.input_tokens.map(|t| t as i64),
                    response.output_tokens.map(|t| t as i64),
                    now()
                ],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// Counts a hit or a miss of `scope` on `model`.
    pub fn count_cache_use(&mut self, scope: &str, model: &str, hit: bool) -> StoreResult<()> {
        let (h, m) = if hit { (1, 0) } else { (0, 1) };
        self.conn
            .execute(
                "INSERT INTO call_cache_uses (scope, model, hits, misses) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (scope, model) DO UPDATE SET hits = hits + ?3, misses = misses + ?4",
                params![scope, model, h, m],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// How `scope` used the cache (every scope when `None`).
    pub fn cache_uses(&self, scope: Option<&str>) -> StoreResult<Vec<CacheUse>> {
        if !self.has_table("call_cache_uses")? {
            return Ok(Vec::new());
        }
        self.all(
            "SELECT scope, model, hits, misses FROM call_cache_uses WHERE ?1 IS NULL OR scope = ?1 ORDER BY scope, model",
            params![scope],
            |r| {
                Ok(CacheUse {
                    scope: r.get(0)?,
                    model: r.get(1)?,
                    hits: r.get::<_, i64>(2)? as u64,
                    misses: r.get::<_, i64>(3)? as u64,
                })
            },
        )
    }

    /// What the cache holds, per model.
    pub fn cache_stats(&self) -> StoreResult<Vec<CacheStats>> {
        if !self.has_table("call_cache")? {
            return Ok(Vec::new());
        }
        self.all("SELECT model, count(*), sum(length(text)) FROM call_cache GROUP BY model ORDER BY model", [], |r| {
            Ok(CacheStats {
                model: r.get(0)?,
                entries: r.get::<_, i64>(1)? as u64,
                answer_chars: r.get::<_, Option<i64>>(2)?.unwrap_or(0) as u64,
            })
        })
    }

    /// Why `key` is not kept: the field in which it differs from the nearest kept call.
    pub fn explain_cache_miss(&self, key: &CacheKey) -> StoreResult<String> {
        if !self.has_table("call_cache")? {
            return Ok("the store keeps no answers yet".into());
        }
        let same_messages: Vec<(String, String, u32)> = self.all(
            "SELECT model, settings, sample FROM call_cache WHERE messages = ?1 ORDER BY created_at LIMIT 100",
            [&key.messages],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        if let Some((_, settings, sample)) = same_messages.iter().find(|(m, _, _)| *m == key.model) {
            if *settings != key.settings {
                return Ok(format!(
                    "settings differ from the kept call's: {}",
                    settings_difference(settings, &key.settings)
                ));
            }
            return Ok(format!("sample differs: kept sample {sample}, asked sample {}", key.sample));
        }
        if let Some((model, _, _)) = same_messages.first() {
            return Ok(format!("model differs: these messages were answered by {model}, asked of {}", key.model));
        }
        let of_model: i64 = self
            .conn
            .query_row("SELECT count(*) FROM call_cache WHERE model = ?1", [&key.model], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        Ok(if of_model > 0 {
            format!("messages differ: none of the {of_model} calls kept for {} has these messages", key.model)
        } else {
            format!("nothing kept for {} (a new model, endpoint or GGUF file)", key.model)
        })
    }
}

/// The fields of two settings objects that differ (`temperature: kept 0.0, asked 0.7`).
fn settings_difference(kept: &str, asked: &str) -> String {
    let (k, a): (Value, Value) =
        (serde_json::from_str(kept).unwrap_or(Value::Null), serde_json::from_str(asked).unwrap_or(Value::Null));
    let (Some(k), Some(a)) = (k.as_object(), a.as_object()) else {
        return format!("kept {kept}, asked {asked}");
    };
    let mut fields: Vec<&String> = k.keys().chain(a.keys()).collect();
    fields.sort();
    fields.dedup();
    fields
        .into_iter()
        .filter(|f| k.get(*f) != a.get(*f))
        .map(|f| {
            let show = |v: Option<&Value>| v.map_or("(absent)".to_string(), Value::to_string);
            format!("{f}: kept {}, asked {}", show(k.get(f)), show(a.get(f)))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The answer cache of the store at `path`, counting uses under `scope`.
pub struct StoreCache {
    store: Mutex<Store>,
    scope: String,
}

impl StoreCache {
    pub fn open(path: &Path, scope: &str) -> StoreResult<StoreCache> {
        Ok(StoreCache { store: Mutex::new(Store::open(path)?), scope: scope.to_string() })
    }
}

impl CallCache for StoreCache {
    fn get(&self, key: &CacheKey) -> Result<Option<ChatResponse>, String> {
        let mut store = self.store.lock().unwrap();
        let found = store.cached_answer(key).map_err(|e| e.to_string())?;
        store.count_cache_use(&self.scope, &key.model, found.is_some()).map_err(|e| e.to_string())?;
        Ok(found)
    }

    fn put(&self, key: &CacheKey, response: &ChatResponse) -> Result<(), String> {
        self.store.lock().unwrap().put_cached_answer(key, response).map_err(|e| e.to_string())
    }

    fn explain(&self, key: &CacheKey) -> Result<String, String> {
        self.store.lock().unwrap().explain_cache_miss(key).map_err(|e| e.to_string())
    }
}
