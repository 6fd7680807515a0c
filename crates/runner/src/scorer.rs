//! The scoring service of a process: one copy of each metric model, shared by every run that
//! scores in the process (the runs of a sweep), and one run scoring at a time, so that memory
//! holds the models once and one run's encodings, however many models a sweep has. Scoring uses
//! every core already: taking turns costs no throughput. The references' encodings go to the
//! on-disk encoding cache ([`h2htalk_neural::cache`]) when the service has one, so that the
//! references shared by every model of a sweep are encoded once; after each turn the cache is
//! pruned to its bound.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use h2htalk_neural::NeuralSetup;
use h2htalk_store::ScoringSpec;

use crate::Result;
use crate::models::metric_models;

/// Where the encoding cache is kept and how large it may grow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodingCacheDir {
    pub dir: PathBuf,
    pub max_bytes: u64,
}

/// The default bound of the encoding cache: 4 GiB (the official set's references take 443 MB with
/// m3e-small, 8,590 entries).
pub const DEFAULT_CACHE_BYTES: u64 = 4 << 30;

impl EncodingCacheDir {
    /// The cache beside a run store (`DIR/encoding-cache/` for `DIR/h2htalk.db`), with the default
    /// bound; `$H2HTALK_NEURAL_CACHE`, when set, names another directory.
    pub fn beside(db: &std::path::Path) -> EncodingCacheDir {
        let dir = std::env::var_os(h2htalk_neural::cache::CACHE_ENV)
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| db.parent().unwrap_or(std::path::Path::new(".")).join("encoding-cache"));
        EncodingCacheDir { dir, max_bytes: DEFAULT_CACHE_BYTES }
    }
}

/// What a turn of scoring left in the encoding cache.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheState {
    pub dir: PathBuf,
    /// Entries and bytes kept after pruning.
    pub entries: usize,
    pub bytes: u64,
    /// Entries pruned, in all turns so far.
    pub pruned: usize,
    /// References read from the cache and references encoded and stored, in all turns so far.
    pub read: usize,
    pub stored: usize,
}

/// The metric models of a process and its turn to score (see the module's text).
#[derive(Default)]
pub struct ScoringService {
    cache: Option<EncodingCacheDir>,
    /// The setups loaded so far, by the scoring specification's models and profile.
    loaded: Mutex<Vec<(String, Arc<NeuralSetup>)>>,
    turn: Mutex<Option<CacheState>>,
}

impl ScoringService {
    /// A service with the encoding cache `cache` (none: every text is encoded in every run).
    pub fn new(cache: Option<EncodingCacheDir>) -> Arc<ScoringService> {
        Arc::new(ScoringService { cache, ..ScoringService::default() })
    }

    /// The metric models of `scoring` (none for lexical metrics), loaded once per process: every
    /// later call with the same models and profile gets the same copy. Loading happens before
    /// anything is generated, so that a missing model stops a run at once.
    pub fn models(&self, scoring: &ScoringSpec) -> Result<Option<Arc<NeuralSetup>>> {
        let key = serde_json::json!([scoring.metrics, scoring.models, scoring.profile]).to_string();
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, setup)) = loaded.iter().find(|(k, _)| *k == key) {
            return Ok(Some(setup.clone()));
        }
        let Some(mut setup) = metric_models(scoring.metrics, &scoring.models, scoring.profile)? else {
            return Ok(None);
        };
        setup.cache = self.cache.as_ref().map(|c| c.dir.clone());
        let setup = Arc::new(setup);
        loaded.push((key, setup.clone()));
        Ok(Some(setup))
    }

    /// Runs `score` in this process's turn (one at a time), then prunes the encoding cache to its
    /// bound.
    pub fn in_turn<T>(&self, score: impl FnOnce() -> Result<T>) -> Result<T> {
        let mut state = self.turn.lock().unwrap_or_else(|e| e.into_inner());
        let out = score()?;
        if let Some(c) = &self.cache {
            let pruned = h2htalk_neural::cache::prune(&c.dir, c.max_bytes)?;
            let before = state.as_ref().map_or(0, |s| s.pruned);
            let loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
            let served = loaded.iter().map(|(_, s)| *s.cache_served.lock().unwrap_or_else(|e| e.into_inner()));
            let (read, stored) = served.fold((0, 0), |(r, s), u| (r + u.read, s + u.stored));
            *state = Some(CacheState {
                dir: c.dir.clone(),
                entries: pruned.entries - pruned.removed,
                bytes: pruned.bytes - pruned.removed_bytes,
                pruned: before + pruned.removed,
                read,
                stored,
            });
        }
        Ok(out)
    }

    /// The encoding cache after the last turn (`None`: no cache, or nothing scored yet).
    pub fn cache_state(&self) -> Option<CacheState> {
        self.turn.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
