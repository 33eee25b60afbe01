//! The lint benchmark: how fast `infera lint` goes compared with the parser
//! alone, how it scales from one thread to two, how much memory it needs and
//! how long one small file takes from process start to exit.
//!
//! Run it with `benches/lint-harness.sh` (or `cargo bench --bench lint`).
//! It generates a corpus of about 60 MiB (`INFERA_BENCH_MB`) into a
//! temporary directory: the real InferaDeployment manifests of
//! `tests/fixtures` (`INFERA_BENCH_CORPUS` picks another directory) copied over and over, every copy with fresh
//! `metadata.name`s, one file per copy of a source file. The directory is
//! removed at the end.
//!
//! First the optimised binary (`target/release/infera`) as a user runs it:
//! the whole corpus with `-j1` and `-j2` (wall and CPU time, peak RSS read
//! with `wait4`), and one small file over and over (wall time including
//! process start). Then in-process, through criterion (median of the
//! samples, warm-up excluded):
//!
//! - `parse-only`: [`engine::load_paths`] — the project's own loader (read,
//!   split, the tree from granit-parser's events or serde-saphyr, typed views), on the same thread pool as lint, no
//!   rule;
//! - `lint-json`: [`infera_lint::lint_and_print`] with the JSON printer into a
//!   sink (file by file, printed as it goes) — what `infera lint --format
//!   json` does;
//!
//! each on 1 and 2 threads; and `generic-parse/1`: serde-saphyr parsing the
//! same files into `serde_json::Value` on one thread, the denominator of the
//! issue's lint / parse ratio (target >= 1.3, issue 27).
//!
//! Every throughput is printed as a ratio against parse-only measured in the
//! same run, next to its target, because the machine is shared and absolute
//! numbers move with the load (also printed). Nothing here is a test
//! assertion: a missed target is printed as `MISSED`, never a failure.
//!
//! Peak RSS as the corpus doubles (12 vs 24 MiB, every format) is measured
//! by `benches/lint-rss.sh`.
//!
//! Under `cargo test --benches` (criterion's test mode) the corpus is 1 MiB
//! and each benchmark runs once. After criterion, `INFERA_BENCH_PAIRS` rounds
//! (default 15) of one generic pass and one lint pass, interleaved, give
//! the lint / generic ratio steadier than two benchmarks run minutes apart (see
//! [`interleaved`]). With `INFERA_BENCH_ONE` set it runs one of
//! them once and exits, for a profiler (see [`run_one`]).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput};
use infera_lint::report::Format as LintFormat;
use infera_lint::{config, engine, options};

/// Targets from the lint issue.
const TARGET_LINT_VS_PARSE: f64 = 0.70;
const TARGET_SPEEDUP_2_VS_1: f64 = 1.70;
const TARGET_PEAK_RSS_MIB: f64 = 64.0;
const TARGET_SINGLE_FILE_MS: f64 = 10.0;

const MIB: f64 = 1024.0 * 1024.0;

// ---------------------------------------------------------------------------
// The corpus
// ---------------------------------------------------------------------------

struct Corpus {
    dir: tempfile::TempDir,
    bytes: u64,
    files: usize,
    sources: usize,
    copies: usize,
    /// One small real file, for the single-file run.
    small: PathBuf,
}

fn source_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("INFERA_BENCH_CORPUS") {
        return PathBuf::from(dir);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// `text` with every top-level `metadata.name` suffixed with `-b{copy}`, so
/// no two copies declare the same object.
fn rename(text: &str, copy: usize) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let mut in_metadata = false;
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "metadata:" {
            in_metadata = true;
        } else if in_metadata && !line.starts_with("  ") && !line.trim().is_empty() {
            in_metadata = false;
        }
        match line.strip_prefix("  name: ") {
            Some(name) if in_metadata => {
                out.push_str("  name: ");
                out.push_str(name.trim_end());
                out.push_str(&format!("-b{copy}\n"));
                in_metadata = false;
            }
            _ => out.push_str(line),
        }
    }
    out
}

fn generate(target_bytes: u64) -> Corpus {
    let from = source_dir();
    let mut sources: Vec<(String, String)> = std::fs::read_dir(&from)
        .unwrap_or_else(|e| panic!("cannot list the corpus {}: {e}", from.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .filter_map(|p| {
            let text = std::fs::read_to_string(&p).ok()?;
            Some((p.file_name()?.to_string_lossy().into_owned(), text))
        })
        // Only InferaDeployment files (tests/fixtures also holds our own
        // plain Deployments, which are not what users ship).
        .filter(|(_, text)| text.contains("kind: InferaDeployment"))
        .collect();
    sources.sort();
    assert!(!sources.is_empty(), "no *.yaml in {}", from.display());
    let dir = tempfile::Builder::new()
        .prefix("infera-lint-bench-")
        .tempdir()
        .expect("a temporary directory");
    let (mut bytes, mut files, mut copies) = (0u64, 0usize, 0usize);
    while bytes < target_bytes {
        let sub = dir.path().join(format!("copy-{copies:05}"));
        std::fs::create_dir(&sub).expect("create a corpus directory");
        for (name, text) in &sources {
            let renamed = rename(text, copies);
            std::fs::write(sub.join(name), &renamed).expect("write a corpus file");
            bytes += renamed.len() as u64;
            files += 1;
        }
        copies += 1;
    }
    // The smallest real InferaDeployment file: what a user lints in a
    // pre-commit hook.
    let small = sources
        .iter()
        .filter(|(_, t)| t.contains("kind: InferaDeployment"))
        .min_by_key(|(_, t)| t.len())
        .map(|(n, _)| from.join(n))
        .unwrap_or_else(|| from.join(&sources[0].0));
    Corpus {
        dir,
        bytes,
        files,
        sources: sources.len(),
        copies,
        small,
    }
}

// ---------------------------------------------------------------------------
// In-process measurements
// ---------------------------------------------------------------------------

/// The generic-parse baseline's benchmark name.
const GENERIC: &str = "generic-parse/1";

/// lint / generic parse throughput, one thread (issue 27: lint at least
/// 1.3 times as fast as serde-saphyr into `serde_json::Value`).
const TARGET_LINT_VS_GENERIC: f64 = 1.3;

/// Per-iteration times recorded while criterion measures, by benchmark.
static TIMES: Mutex<BTreeMap<String, Vec<Duration>>> = Mutex::new(BTreeMap::new());

fn record(name: &str, per_iteration: Duration) {
    if let Ok(mut t) = TIMES.lock() {
        t.entry(name.to_string()).or_default().push(per_iteration);
    }
}

fn median(name: &str) -> Option<Duration> {
    let times = TIMES.lock().ok()?;
    let mut v = times.get(name)?.clone();
    // The first recorded run is criterion's warm-up.
    if v.len() > 2 {
        v.remove(0);
    }
    v.sort();
    v.get(v.len() / 2).copied()
}

fn options(threads: usize) -> options::LintOptions {
    options::LintOptions {
        node_gpus: 8,
        threads,
        ..Default::default()
    }
}

fn parse_only(paths: &[PathBuf], threads: usize) -> usize {
    let outcome = engine::load_paths(paths, &options(threads));
    outcome.summary.objects
}

/// The yardstick: serde-saphyr parsing every file of the corpus into
/// a generic `serde_json::Value` (all documents), on this one thread. No
/// typed views, no spans, no rules.
fn generic_parse(dir: &Path) -> usize {
    let mut stack = vec![dir.to_path_buf()];
    let mut documents = 0;
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("list the corpus").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("read a corpus file");
            let docs: Vec<serde_json::Value> =
                serde_saphyr::from_multiple(&text).expect("the corpus parses");
            documents += black_box(docs).len();
        }
    }
    documents
}

fn lint_json(paths: &[PathBuf], threads: usize, effective: &config::Effective) -> usize {
    let mut opts = options(threads);
    opts.enabled = effective.enabled.clone();
    // What `infera lint --format json` does: lint file by file, print as
    // it goes.
    let mut sink = std::io::sink();
    let printer = infera_lint::report::Printer::new(
        &mut sink,
        LintFormat::Json,
        engine::rules(),
        None,
        false,
    );
    let (summary, _) = infera_lint::lint_and_print(paths, &opts, effective, printer, &mut |_| {})
        .expect("write to a sink");
    summary.errors + summary.warnings
}

fn bench_in_process(c: &mut Criterion, corpus: &Corpus) {
    let paths = vec![corpus.dir.path().to_path_buf()];
    let effective = config::resolve(
        engine::rules(),
        &config::LoadedConfig::default(),
        &config::CliOverrides::default(),
    )
    .expect("the default configuration");
    let mut group = c.benchmark_group("corpus");
    group
        .throughput(Throughput::Bytes(corpus.bytes))
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5));
    group.bench_function(GENERIC, |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(generic_parse(corpus.dir.path()));
            }
            let elapsed = start.elapsed();
            record(GENERIC, elapsed / iters.max(1) as u32);
            elapsed
        })
    });
    for threads in [1usize, 2] {
        let name = format!("parse-only/{threads}");
        group.bench_function(&name, |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(parse_only(&paths, threads));
                }
                let elapsed = start.elapsed();
                record(&name, elapsed / iters.max(1) as u32);
                elapsed
            })
        });
        let name = format!("lint-json/{threads}");
        group.bench_function(&name, |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(lint_json(&paths, threads, &effective));
                }
                let elapsed = start.elapsed();
                record(&name, elapsed / iters.max(1) as u32);
                elapsed
            })
        });
    }
    group.finish();
}

// ---------------------------------------------------------------------------
// The release binary
// ---------------------------------------------------------------------------

struct Run {
    wall: Duration,
    /// User + system CPU time of the child.
    cpu: Duration,
    max_rss_kib: i64,
    status: i32,
}

/// Run `infera ARGS` with stdout to /dev/null and return its wall time, CPU
/// time, peak RSS (the kernel's `ru_maxrss` for exactly this child) and exit
/// status.
///
/// Linux carries the spawning process's peak RSS into the child's
/// `ru_maxrss` (the child starts as a copy of it until `exec`), so the
/// binary is measured before anything big is in this process: see
/// [`own_peak_rss_kib`], printed beside the figure.
fn run_infera(args: &[&std::ffi::OsStr]) -> Run {
    let start = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_infera"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn infera");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value, and wait4 only writes
    // through the two pointers, which outlive the call.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed();
    // The child is reaped here, not by `Child`, which is only dropped.
    drop(child);
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Run {
        wall,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        max_rss_kib: usage.ru_maxrss,
        status: if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            -1
        },
    }
}

/// This process's peak RSS so far (`VmHWM`), the floor under any child's
/// `ru_maxrss`.
fn own_peak_rss_kib() -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

struct CliFigures {
    j1: Run,
    j2: Run,
    single: Vec<Duration>,
    single_rss_kib: i64,
    /// This process's peak RSS when it spawned the runs.
    floor_rss_kib: i64,
}

fn bench_cli(corpus: &Corpus, single_runs: usize) -> CliFigures {
    let dir = corpus.dir.path().as_os_str();
    let lint = std::ffi::OsStr::new("lint");
    let json = [
        std::ffi::OsStr::new("--format"),
        std::ffi::OsStr::new("json"),
    ];
    let cli = |threads: &str| {
        run_infera(&[
            lint,
            json[0],
            json[1],
            std::ffi::OsStr::new("-j"),
            std::ffi::OsStr::new(threads),
            dir,
        ])
    };
    // One warm-up pass brings the corpus into the page cache.
    let _ = cli("2");
    let best = |a: Run, b: Run| if a.wall <= b.wall { a } else { b };
    let j1 = best(cli("1"), cli("1"));
    let j2 = best(cli("2"), cli("2"));
    let small = corpus.small.as_os_str();
    let mut single = Vec::with_capacity(single_runs);
    let mut single_rss_kib = 0;
    for i in 0..single_runs + 3 {
        let run = run_infera(&[lint, json[0], json[1], small]);
        single_rss_kib = single_rss_kib.max(run.max_rss_kib);
        if i >= 3 {
            single.push(run.wall);
        }
    }
    single.sort();
    CliFigures {
        j1,
        j2,
        single,
        single_rss_kib,
        floor_rss_kib: own_peak_rss_kib(),
    }
}

// ---------------------------------------------------------------------------
// The summary
// ---------------------------------------------------------------------------

fn verdict(ok: bool) -> &'static str {
    if ok { "ok" } else { "MISSED" }
}

fn mib_per_s(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / MIB / d.as_secs_f64()
}

fn summary(corpus: &Corpus, cli: Option<&CliFigures>) {
    let mut out = std::io::stdout().lock();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let _ = writeln!(
        out,
        "\n== infera lint benchmark ==\ncorpus: {:.1} MiB in {} files ({} source files x {} copies); {cpus} CPUs; load average {}",
        corpus.bytes as f64 / MIB,
        corpus.files,
        corpus.sources,
        corpus.copies,
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let (Some(p1), Some(l1)) = (median("parse-only/1"), median("lint-json/1")) else {
        let _ = writeln!(
            out,
            "(parse-only/1 or lint-json/1 was filtered out: no ratios)"
        );
        return;
    };
    let bytes = corpus.bytes;
    let base = mib_per_s(bytes, p1);
    let _ = writeln!(
        out,
        "\nin-process (median per pass)          MiB/s   x parse-only/1   target"
    );
    let row = |out: &mut std::io::StdoutLock<'_>, name: &str, d: Duration, target: &str| {
        let _ = writeln!(
            out,
            "  {name:<34} {:>6.1}   {:>6.2}           {target}",
            mib_per_s(bytes, d),
            mib_per_s(bytes, d) / base
        );
    };
    row(&mut out, "parse-only, 1 thread", p1, "(baseline)");
    let generic = median(GENERIC);
    if let Some(g) = generic {
        row(
            &mut out,
            "serde-saphyr -> Value, 1 thread",
            g,
            "(denominator of lint/parse)",
        );
    }
    let ratio = p1.as_secs_f64() / l1.as_secs_f64();
    row(
        &mut out,
        "lint + JSON to a sink, 1 thread",
        l1,
        &format!(
            ">= {TARGET_LINT_VS_PARSE:.2}  {}",
            verdict(ratio >= TARGET_LINT_VS_PARSE)
        ),
    );
    let p2 = median("parse-only/2");
    let l2 = median("lint-json/2");
    if let Some(p2) = p2 {
        row(&mut out, "parse-only, 2 threads", p2, "");
    }
    if let Some(l2) = l2 {
        row(&mut out, "lint + JSON to a sink, 2 threads", l2, "");
    }
    let _ = writeln!(out, "\nratios");
    if let Some(g) = generic {
        let r = g.as_secs_f64() / l1.as_secs_f64();
        let _ = writeln!(
            out,
            "  lint / generic parse (serde-saphyr -> serde_json::Value), 1 thread   {r:.2}   target >= {TARGET_LINT_VS_GENERIC:.2}  {}",
            verdict(r >= TARGET_LINT_VS_GENERIC)
        );
    }
    let _ = writeln!(
        out,
        "  lint / parse-only throughput, 1 thread   {ratio:.2}   target >= {TARGET_LINT_VS_PARSE:.2}  {}",
        verdict(ratio >= TARGET_LINT_VS_PARSE)
    );
    if let (Some(p2), Some(l2)) = (p2, l2) {
        let r2 = p2.as_secs_f64() / l2.as_secs_f64();
        let _ = writeln!(
            out,
            "  lint / parse-only throughput, 2 threads  {r2:.2}   target >= {TARGET_LINT_VS_PARSE:.2}  {}",
            verdict(r2 >= TARGET_LINT_VS_PARSE)
        );
        let s = l1.as_secs_f64() / l2.as_secs_f64();
        let _ = writeln!(
            out,
            "  lint speedup, 2 threads vs 1             {s:.2}x  target >= {TARGET_SPEEDUP_2_VS_1:.2}  {}",
            verdict(s >= TARGET_SPEEDUP_2_VS_1)
        );
        let sp = p1.as_secs_f64() / p2.as_secs_f64();
        let _ = writeln!(
            out,
            "  parse-only speedup, 2 threads vs 1       {sp:.2}x  (what the machine allows now)"
        );
    }
    if let Some(cli) = cli {
        cli_summary(&mut out, corpus, cli, base);
    }
}

/// The release binary's figures, against parse-only/1 (`base`, MiB/s).
fn cli_summary(out: &mut std::io::StdoutLock<'_>, corpus: &Corpus, cli: &CliFigures, base: f64) {
    let bytes = corpus.bytes;
    let _ = writeln!(out, "\nrelease binary ({})", env!("CARGO_BIN_EXE_infera"));
    for (name, run) in [("-j1", &cli.j1), ("-j2", &cli.j2)] {
        let _ = writeln!(
            out,
            "  infera lint --format json {name} CORPUS  {:>7.3} s wall  {:>7.3} s CPU  {:>6.1} MiB/s  {:.2} x parse-only/1  peak RSS {:.1} MiB  exit {}",
            run.wall.as_secs_f64(),
            run.cpu.as_secs_f64(),
            mib_per_s(bytes, run.wall),
            mib_per_s(bytes, run.wall) / base,
            run.max_rss_kib as f64 / 1024.0,
            run.status
        );
    }
    let _ = writeln!(
        out,
        "  (CPU -j2 / CPU -j1 = {:.2}: work added by the second thread; the harness's own peak RSS when it spawned them was {:.1} MiB, a floor under every RSS figure)",
        cli.j2.cpu.as_secs_f64() / cli.j1.cpu.as_secs_f64(),
        cli.floor_rss_kib as f64 / 1024.0
    );
    let s = cli.j1.wall.as_secs_f64() / cli.j2.wall.as_secs_f64();
    let _ = writeln!(
        out,
        "  CLI speedup -j2 vs -j1                   {s:.2}x  target >= {TARGET_SPEEDUP_2_VS_1:.2}  {}",
        verdict(s >= TARGET_SPEEDUP_2_VS_1)
    );
    let rss = cli.j1.max_rss_kib.max(cli.j2.max_rss_kib) as f64 / 1024.0;
    let _ = writeln!(
        out,
        "  peak RSS over the corpus                 {rss:.1} MiB ({:.2} x the corpus)  target < {TARGET_PEAK_RSS_MIB:.0} MiB  {}",
        rss * MIB / corpus.bytes as f64,
        verdict(rss < TARGET_PEAK_RSS_MIB)
    );
    let n = cli.single.len();
    if n > 0 {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let med = cli.single[n / 2];
        let p90 = cli.single[(n * 9 / 10).min(n - 1)];
        let size = std::fs::metadata(&corpus.small).map_or(0, |m| m.len());
        let _ = writeln!(
            out,
            "  one small file ({}, {} bytes), {n} runs: median {:.2} ms, min {:.2} ms, p90 {:.2} ms, peak RSS {:.1} MiB  target < {TARGET_SINGLE_FILE_MS:.0} ms  {}",
            corpus.small.display(),
            size,
            ms(med),
            ms(cli.single[0]),
            ms(p90),
            cli.single_rss_kib as f64 / 1024.0,
            verdict(ms(med) < TARGET_SINGLE_FILE_MS)
        );
    }
}

/// CPU time of this process, all threads (`CLOCK_PROCESS_CPUTIME_ID`;
/// lint's one worker may not be the calling thread).
fn process_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill in.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// One pass of `f`: (wall, the process's CPU time).
fn timed(f: &mut dyn FnMut()) -> (Duration, Duration) {
    let (wall, cpu) = (Instant::now(), process_cpu());
    f();
    (wall.elapsed(), process_cpu() - cpu)
}

/// One interleaved round: the wall and CPU time of its generic pass and of
/// its lint pass.
struct Round {
    generic: (Duration, Duration),
    lint: (Duration, Duration),
}

impl Round {
    fn wall_ratio(&self) -> f64 {
        self.generic.0.as_secs_f64() / self.lint.0.as_secs_f64()
    }

    fn cpu_ratio(&self) -> f64 {
        self.generic.1.as_secs_f64() / self.lint.1.as_secs_f64()
    }
}

/// lint / generic parse, interleaved: `pairs` rounds of one generic pass
/// and one lint pass (1 thread each; the order alternates per round), each
/// round's ratio taken from its own two passes. A slow minute of the
/// machine slows both halves of a round, so the median of the per-round
/// ratios holds where two benchmarks measured minutes apart do not.
fn interleaved(corpus: &Corpus, pairs: usize) -> Vec<Round> {
    let paths = vec![corpus.dir.path().to_path_buf()];
    let effective = config::resolve(
        engine::rules(),
        &config::LoadedConfig::default(),
        &config::CliOverrides::default(),
    )
    .expect("the default configuration");
    let mut generic = || {
        black_box(generic_parse(corpus.dir.path()));
    };
    let mut lint = || {
        black_box(lint_json(&paths, 1, &effective));
    };
    timed(&mut generic);
    timed(&mut lint);
    (0..pairs)
        .map(|round| {
            if round % 2 == 0 {
                let generic = timed(&mut generic);
                Round {
                    generic,
                    lint: timed(&mut lint),
                }
            } else {
                let lint = timed(&mut lint);
                Round {
                    generic: timed(&mut generic),
                    lint,
                }
            }
        })
        .collect()
}

/// The median and quartiles of `values`.
fn quartiles(mut values: Vec<f64>) -> [f64; 3] {
    values.sort_by(f64::total_cmp);
    let q = |f: f64| values[((values.len() - 1) as f64 * f).round() as usize];
    [q(0.25), q(0.5), q(0.75)]
}

/// The interleaved ratio's line: median, quartiles, the CPU-time ratio,
/// and each pass's own median wall time (which of the two moved, when the
/// ratio does).
fn interleaved_summary(rounds: &[Round], mib: f64) {
    if rounds.is_empty() {
        return;
    }
    let [q1, median, q3] = quartiles(rounds.iter().map(Round::wall_ratio).collect());
    let [_, cpu_median, _] = quartiles(rounds.iter().map(Round::cpu_ratio).collect());
    let ms = |pass: fn(&Round) -> Duration| {
        quartiles(rounds.iter().map(|r| pass(r).as_secs_f64() * 1e3).collect())[1]
    };
    let (generic_ms, lint_ms) = (ms(|r| r.generic.0), ms(|r| r.lint.0));
    println!(
        "\ninterleaved ({} rounds of generic + lint, 1 thread)\n  lint / generic parse, wall   median {median:.2} (quartiles {q1:.2} .. {q3:.2})   target >= {TARGET_LINT_VS_GENERIC:.2}  {}\n  lint / generic parse, CPU time   median {cpu_median:.2}\n  median pass: generic {generic_ms:.0} ms ({:.1} MiB/s), lint {lint_ms:.0} ms ({:.1} MiB/s)",
        rounds.len(),
        verdict(median >= TARGET_LINT_VS_GENERIC),
        mib / generic_ms * 1e3,
        mib / lint_ms * 1e3,
    );
}

fn env_number<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// `INFERA_BENCH_ONE=parse-only|lint-json|generic-parse|interleaved|none`: generate the corpus, run
/// that once on `INFERA_BENCH_THREADS` threads (default 1) and exit: for
/// instruction counts under `valgrind --tool=callgrind`, which do not move
/// with the machine's load (`benches/lint-harness.sh --callgrind`).
fn run_one(what: &str, corpus: &Corpus) {
    let paths = vec![corpus.dir.path().to_path_buf()];
    let threads = env_number("INFERA_BENCH_THREADS").unwrap_or(1);
    let effective = config::resolve(
        engine::rules(),
        &config::LoadedConfig::default(),
        &config::CliOverrides::default(),
    )
    .expect("the default configuration");
    let n = match what {
        "parse-only" => parse_only(&paths, threads),
        "lint-json" => lint_json(&paths, threads, &effective),
        "generic-parse" => generic_parse(corpus.dir.path()),
        "interleaved" => {
            let pairs = env_number("INFERA_BENCH_PAIRS").unwrap_or(15);
            interleaved_summary(&interleaved(corpus, pairs), corpus.bytes as f64 / MIB);
            pairs
        }
        "none" => 0,
        other => panic!(
            "INFERA_BENCH_ONE={other}: expected parse-only, lint-json, generic-parse, interleaved or none"
        ),
    };
    println!(
        "{what}: {n} over {:.1} MiB on {threads} thread(s)",
        corpus.bytes as f64 / MIB
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not.
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let one = std::env::var("INFERA_BENCH_ONE").ok();
    let mib: u64 =
        env_number("INFERA_BENCH_MB").unwrap_or(if bench_mode || one.is_some() { 60 } else { 1 });
    let single_runs: usize = env_number("INFERA_BENCH_RUNS").unwrap_or(100);
    let corpus = generate(mib * 1024 * 1024);
    if let Some(what) = one {
        run_one(&what, &corpus);
        return;
    }
    // The binary first, while this process is still small (see `run_infera`).
    let cli = bench_mode.then(|| bench_cli(&corpus, single_runs));
    let mut c = Criterion::default().configure_from_args();
    bench_in_process(&mut c, &corpus);
    c.final_summary();
    summary(&corpus, cli.as_ref());
    let pairs = env_number("INFERA_BENCH_PAIRS").unwrap_or(if bench_mode { 15 } else { 1 });
    interleaved_summary(&interleaved(&corpus, pairs), corpus.bytes as f64 / MIB);
}
