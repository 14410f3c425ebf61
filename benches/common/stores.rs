//! Generated stores shared by the benchmarks, kept under [`super::bench_dir`] and
//! reused between runs (a `complete` marker says the build finished).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use skills::bench::gen::{self, Spec};
use skills::embed::Embedder;
use skills::ingest::memories::embed_missing;
use skills::stores::conversations::ConversationStore;
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
    let text_bytes = fill_memories(&store, n, seed)?;
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

/// Folder holding a `memories.sqlite` of `n` generated memories (seed `seed`), not
/// embedded (for what reads memories without searching them: lists, one memory);
/// built on first use.
pub fn plain_memory_store(n: usize, seed: u64) -> Result<PathBuf> {
    let dir = super::bench_dir().join(format!("memories-{n}-{seed:x}"));
    let done = dir.join("complete");
    if done.exists() {
        return Ok(dir);
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("generating {n} memories into {} …", dir.display());
    let t = Instant::now();
    let store = MemoryStore::open_rw(&StorePaths::in_dir(&dir).memories)?;
    let text_bytes = fill_memories(&store, n, seed)?;
    drop(store);
    let line = format!(
        "{n} memories ({} of body text) upserted in {:.1} s, not embedded",
        fmt_bytes(text_bytes),
        t.elapsed().as_secs_f64(),
    );
    std::fs::write(&done, line)?;
    Ok(dir)
}

/// Upserts `n` generated memories (seed `seed`) into `store` in batches of 5,000;
/// the bytes of body text written.
fn fill_memories(store: &MemoryStore, n: usize, seed: u64) -> Result<u64> {
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
    Ok(text_bytes)
}

/// Folder holding a `conversations.duckdb` of `spec`'s generated messages and its
/// search index (`search-<messages>-<seed>`, shared by the benchmarks that read a
/// large conversation store); built on first use (~60 s fill and ~9 s index at 1M
/// on an idle machine). Its `complete` file holds one line describing the build.
pub fn conversation_store(spec: Spec) -> Result<PathBuf> {
    let dir = super::bench_dir().join(format!("search-{}-{:x}", spec.messages, spec.seed));
    let done = dir.join("complete");
    if done.exists() {
        return Ok(dir);
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    eprintln!(
        "generating {} messages into {} …",
        spec.messages,
        dir.display()
    );
    reset_peak();
    let t = Instant::now();
    let store = ConversationStore::open_rw(&StorePaths::in_dir(&dir).conversations)?;
    let g = gen::fill_store(&store, spec, 50_000)?;
    let secs = t.elapsed().as_secs_f64();
    let t = Instant::now();
    store.close()?;
    let index_secs = t.elapsed().as_secs_f64();
    let line = format!(
        "generated and stored {} messages ({} conversations, {} of text) in {secs:.1} s \
         ({:.0} messages/s through ConversationStore::insert, batches of 50,000), then the \
         search index built at close in {index_secs:.1} s; peak RSS {}",
        g.messages,
        g.conversations,
        fmt_bytes(g.text_bytes),
        g.messages as f64 / secs,
        fmt_bytes(peak_rss()),
    );
    std::fs::write(&done, &line)?;
    Ok(dir)
}
