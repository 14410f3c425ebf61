//! Generated stores shared by the benchmarks, kept under [`super::bench_dir`] and
//! reused between runs (a `complete` marker says the build finished).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use skills::bench::gen::{self, Spec};
use skills::embed::Embedder;
use skills::ingest::memories::embed_missing;
use skills::stores::memories::MemoryStore;
use skills::stores::StorePaths;

use super::{fmt_bytes, peak_rss, reset_peak};

/// Folder holding a `memories.sqlite` of `n` generated memories (seed `seed`), every
/// one embedded by `embedder`; built on first use (~2 min at 100k on 2 cores). Its
/// `complete` file holds one line describing the build.
pub fn memo_store(n: usize, seed: u64, embedder: &Embedder) -> Result<PathBuf> {
    let dir = super::bench_dir().join(format!("memo-{n}-{seed:x}"));
    let done = dir.join("complete");
    if done.exists() {
        return Ok(dir);
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("generating {n} memories into {} …", dir.display());
    reset_peak();
    let t = Instant::now();
    let store = MemoryStore::open_rw(&StorePaths::in_dir(&dir).memories)?;
    // Bulk load only: the benchmark's own data, rebuilt if a crash cut it short.
    store
        .lock()
        .execute_batch("PRAGMA synchronous = OFF")
        .map_err(|e| store.error(e))?;
    let mut text_bytes = 0u64;
    let mut batch = Vec::with_capacity(5_000);
    for m in gen::memories(Spec { messages: n, seed }) {
        text_bytes += m.body.len() as u64;
        batch.push(m);
        if batch.len() == batch.capacity() {
            store.upsert_many(&batch)?;
            batch.clear();
        }
    }
    store.upsert_many(&batch)?;
    let stored = t.elapsed();
    let t = Instant::now();
    // The import path's own embedding step (chunked, batched transactions).
    embed_missing(&store, embedder)?;
    let line = format!(
        "{n} memories ({} of body text) upserted in {:.1} s, embedded and stored in {:.1} s \
         (model `{}`, {} dimensions), peak RSS {}",
        fmt_bytes(text_bytes),
        stored.as_secs_f64(),
        t.elapsed().as_secs_f64(),
        embedder.name(),
        embedder.dim(),
        fmt_bytes(peak_rss()),
    );
    drop(store);
    std::fs::write(&done, line)?;
    Ok(dir)
}
