//! Shared helpers of the benchmark runners: timing statistics, peak memory, the data
//! folder, and markdown output. Benchmarks print their tables on stdout.
#![allow(dead_code, clippy::print_stdout)]

pub mod plain_bm25;
pub mod postgres;
pub mod search_cases;
pub mod session;
pub mod stores;

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Reads an environment variable as a number, or `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// `BENCH_ARCHIVE_URL` (a superuser URL of the PostgreSQL to bench the team archive
/// on) when set and not empty; otherwise prints that the bench is skipped and returns
/// `None`.
pub fn archive_url() -> Option<String> {
    let url = std::env::var("BENCH_ARCHIVE_URL")
        .ok()
        .filter(|u| !u.is_empty());
    if url.is_none() {
        println!("skipped: BENCH_ARCHIVE_URL is not set\n");
    }
    url
}

/// A comma-separated list from environment variable `name`, else from `default`:
/// items trimmed, empty ones dropped.
pub fn env_list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_owned())
        .split(',')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Copies folder `from` to `to` (files and subfolders).
///
/// # Errors
/// The first I/O error.
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// The temporal routing's boost a ranking variant names with a last part `tB` (`t0`:
/// none; quality's and locomo_semantic's variants), taken off `parts` (the variant
/// `name` split on `:`); [`skills::engines::temporal::BOOST`] when the last part is
/// no `t` part. `alone`: whether the only part of a one-part variant is read as one
/// too (quality: `t…` alone is refused as a boost; locomo_semantic: it stays the mode
/// name).
///
/// # Errors
/// A last part `t…` whose rest is not a number.
pub fn temporal_boost(parts: &mut Vec<&str>, name: &str, alone: bool) -> anyhow::Result<f64> {
    use anyhow::Context as _;
    match parts.last().and_then(|l| l.strip_prefix('t')) {
        Some(b) if alone || parts.len() > 1 => {
            let boost = b
                .parse::<f64>()
                .with_context(|| format!("variant `{name}`: `t{b}` is not a boost"))?;
            parts.pop();
            Ok(boost)
        }
        _ => Ok(skills::engines::temporal::BOOST),
    }
}

/// `bench_dir()/<bench>/<model>`: where a harness keeps the stores it embedded with
/// `model` between runs (`QUALITY_REUSE`, `BENCH_REUSE`), one folder per model so a
/// store is never queried with another model's vectors.
#[allow(dead_code)] // Not every bench including this module keeps stores.
pub fn model_dir(bench: &str, model: &str) -> PathBuf {
    let slug: String = model
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    bench_dir().join(bench).join(slug)
}

/// Folder for generated corpora and stores: `$BENCH_DIR`, else
/// `$CARGO_TARGET_DIR/bench-data`, else `target/bench-data`.
pub fn bench_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("BENCH_DIR").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("bench-data")
}

/// The 1-minute load average (`/proc/loadavg`), `?` when unknown.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

/// Median and 95th percentile of a set of timings.
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    pub median: Duration,
    pub p95: Duration,
    pub runs: usize,
}

impl Stats {
    /// Stats of `samples` (nearest-rank percentiles; with few runs p95 is the maximum).
    pub fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort();
        let n = samples.len().max(1);
        let rank = |q: f64| {
            let r = (q * n as f64).ceil() as usize;
            samples.get(r.clamp(1, n) - 1).copied().unwrap_or_default()
        };
        Self {
            median: rank(0.5),
            p95: rank(0.95),
            runs: samples.len(),
        }
    }
}

/// Runs `f` once untimed (warm-up), then `runs` times, or fewer when the timed runs
/// already took more than `budget`. Returns the stats and the last result.
pub fn measure<T>(runs: usize, budget: Duration, mut f: impl FnMut() -> T) -> (Stats, T) {
    let mut last = f();
    let mut samples = Vec::with_capacity(runs);
    let start = Instant::now();
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        last = f();
        samples.push(t.elapsed());
        if start.elapsed() > budget && samples.len() >= 3 {
            break;
        }
    }
    (Stats::of(samples), last)
}

/// A field of `/proc/self/status` in bytes (`VmRSS`, `VmHWM`), 0 when unknown.
fn status_bytes(field: &str) -> u64 {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return 0;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Current resident set size, bytes.
pub fn rss() -> u64 {
    status_bytes("VmRSS")
}

/// Peak resident set size since the last [`reset_peak`] (or process start), bytes.
pub fn peak_rss() -> u64 {
    status_bytes("VmHWM")
}

/// Resets the peak RSS to the current RSS (Linux: `5` into `/proc/self/clear_refs`).
pub fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// A duration for a table: µs below 1 ms, ms below 10 s, else s.
pub fn fmt_dur(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1_000.0 {
        format!("{us:.1} µs")
    } else if us < 10_000_000.0 {
        format!("{:.1} ms", us / 1e3)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// Bytes as MB (10^6) or GB for a table.
pub fn fmt_bytes(b: u64) -> String {
    if b >= 10_000_000_000 {
        format!("{:.1} GB", b as f64 / 1e9)
    } else {
        format!("{:.0} MB", b as f64 / 1e6)
    }
}

/// Total size of the files directly in `dir` or below it, bytes.
pub fn dir_bytes(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            Ok(_) => e.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

/// Prints one markdown table.
pub fn table(header: &[&str], rows: &[Vec<String>]) {
    println!("| {} |", header.join(" | "));
    println!("|{}", "---|".repeat(header.len()));
    for row in rows {
        println!("| {} |", row.join(" | "));
    }
    println!();
}

/// One line describing the machine (CPU model, cores, memory), from `/proc`.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpu
        .lines()
        .find_map(|l| l.strip_prefix("model name")?.split(':').nth(1))
        .unwrap_or("unknown CPU")
        .trim()
        .to_owned();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024);
    format!("{model}, {cores} cores available, {} RAM", fmt_bytes(mem))
}

/// The 95 % interval of mean(`b`) − mean(`a`), where `a[i]` and `b[i]` say whether
/// question `i` was answered (e.g. a relevant unit in the top k) by two rankings: 2,000
/// paired bootstrap resamples with a fixed-seed xorshift, so runs repeat. `(0, 0)` for
/// no questions.
#[allow(dead_code)] // not every bench measures quality
pub fn paired_bootstrap(a: &[bool], b: &[bool]) -> (f64, f64) {
    let d: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| f64::from(u8::from(y)) - f64::from(u8::from(x)))
        .collect();
    if d.is_empty() {
        return (0.0, 0.0);
    }
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
    let mut means: Vec<f64> = (0..2000)
        .map(|_| {
            (0..d.len())
                .map(|_| d[(next() % d.len() as u64) as usize])
                .sum::<f64>()
                / d.len() as f64
        })
        .collect();
    means.sort_by(f64::total_cmp);
    (means[50], means[1949])
}

/// One ranking variant's per-question hits under each metric (e.g. turn and session
/// R@5), for [`leave_one_out`]: `hits[m][i]` says whether question `i` was a hit under
/// metric `m`.
pub struct Scored<'a> {
    /// The variant's name.
    pub name: &'a str,
    /// Per metric, per question (in the order of `groups`).
    pub hits: Vec<Vec<bool>>,
}

/// What [`leave_one_out`] found.
#[derive(Debug)]
pub struct HeldOut {
    /// Per held-out group (0, 1, …): the variant chosen on the other groups.
    pub chosen: Vec<String>,
    /// Per metric: the share of hits on every group's questions, each scored by the
    /// variant chosen without it (all folds' questions together).
    pub held: Vec<f64>,
    /// Per metric: the mean over groups of each group's held-out share.
    pub fold_mean: Vec<f64>,
}

/// Leave one group (a LoCoMo conversation) out: for each group, the variant whose
/// summed shares of hits over all metrics are the best on the other groups' questions
/// (ties: the earlier variant), scored on that group's questions. `groups[i]` is
/// question `i`'s group, numbered from 0. `None` without variants or questions.
#[allow(clippy::cast_precision_loss)] // counts of questions
pub fn leave_one_out(groups: &[usize], variants: &[Scored<'_>]) -> Option<HeldOut> {
    let folds = groups.iter().max()? + 1;
    let metrics = variants.first()?.hits.len();
    let share = |v: &Scored<'_>, m: usize, keep: &dyn Fn(usize) -> bool| -> (usize, usize) {
        v.hits[m]
            .iter()
            .enumerate()
            .filter(|(i, _)| keep(groups[*i]))
            .fold((0, 0), |(h, n), (_, x)| (h + usize::from(*x), n + 1))
    };
    let mut chosen = Vec::new();
    let mut held = vec![(0usize, 0usize); metrics];
    let mut fold_sum = vec![0.0; metrics];
    for fold in 0..folds {
        let mut best: Option<(&Scored<'_>, f64)> = None;
        for v in variants {
            let score: f64 = (0..metrics)
                .map(|m| {
                    let (h, n) = share(v, m, &|g| g != fold);
                    h as f64 / n.max(1) as f64
                })
                .sum();
            if best.is_none_or(|b| score > b.1 + 1e-12) {
                best = Some((v, score));
            }
        }
        let (v, _) = best?;
        chosen.push(v.name.to_owned());
        for (m, tally) in held.iter_mut().enumerate() {
            let (h, n) = share(v, m, &|g| g == fold);
            tally.0 += h;
            tally.1 += n;
            fold_sum[m] += h as f64 / n.max(1) as f64;
        }
    }
    Some(HeldOut {
        chosen,
        held: held
            .iter()
            .map(|(h, n)| *h as f64 / (*n).max(1) as f64)
            .collect(),
        fold_mean: fold_sum.iter().map(|s| s / folds as f64).collect(),
    })
}

/// `BIN --data-dir DATA --archive URL ARGS…` with the machine label `bench` and the
/// environment `env`; its stdout, or an error with its stderr.
pub fn skills_on_archive(
    bin: &std::path::Path,
    data: &std::path::Path,
    url: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> anyhow::Result<String> {
    let out = std::process::Command::new(bin)
        .arg("--data-dir")
        .arg(data)
        .args(["--archive", url])
        .args(args)
        .envs(env.iter().copied())
        .env("SKILLS_MACHINE_NAME", "bench")
        .output()?;
    if !out.status.success() {
        anyhow::bail!(
            "skills {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
