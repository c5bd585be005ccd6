//! taopipe runtime vs rayon, side by side in one process, on the same work: DAG task
//! throughput and fork-join latency. Prints a table and JSON.
//!
//! ```text
//! cargo run --release --example runtime_bench -- --json -              # JSON on stdout, table on stderr
//! cargo run --release --example runtime_bench -- --workers 4 --json bench.json
//! ```
//!
//! The workloads (DAG generator, task body, rayon DAG executor) are those of the criterion
//! bench, `runtime/benches/bench/workload.rs`, included below.

mod common;

use common::{JsonArg, RuntimeArgs, say};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use clap::Parser;
use serde::Serialize;
use taopipe::runtime::{Place, Runtime};

#[path = "../runtime/benches/bench/workload.rs"]
mod workload;

use workload::{Dag, Shape};

/// Measures the taopipe runtime against rayon on the same machine, same thread count, same
/// work, in one process.
///
/// DAG throughput: a seeded DAG of small tasks (each a fixed number of rounds of an integer
/// hash), "layered" (layers of 100 tasks, each with 1-3 predecessors in the previous two
/// layers) and "independent" (no edges). taopipe runs it as one TaskGraph with
/// `rt.run(graph)`; rayon with `rayon::scope`, spawning a task once its atomic pending
/// counter reaches zero. Timed: the run only; building the TaskGraph and the rayon counters
/// is untimed. Reported: tasks per second, median of --reps runs, after warm-up runs.
///
/// Fork-join latency at widths 1, 2, 4, ... and the worker count (those a --layout file
/// allows at leader 0): taopipe
/// `rt.run_on(Place::new(0, w), body)`; rayon `pool.broadcast(body)` at the full width and
/// `pool.install(|| rayon::scope(..))` with w spawned ranks below it (rayon may run those on
/// fewer threads: a lower bound for rayon). Reported: ns per fork-join, median of --reps
/// batches of --fj-iters fork-joins.
///
/// ratio = taopipe / rayon throughput for DAGs (> 1: taopipe faster), and taopipe / rayon
/// latency for fork-join (< 1: taopipe faster).
#[derive(Debug, Parser)]
#[command(name = "runtime_bench", version, verbatim_doc_comment)]
struct Args {
    #[command(flatten)]
    runtime: RuntimeArgs,
    /// Worker threads for both runtimes: N unpinned virtual workers instead of the CPUs
    /// that --cpus / --layout name [default: every CPU this process may use, pinned].
    #[arg(long, conflicts_with_all = ["cpus", "layout"])]
    workers: Option<usize>,
    /// Tasks per DAG, 1 to 10 000 000.
    #[arg(long, default_value_t = workload::TASKS, value_parser = count(1, 10_000_000))]
    tasks: usize,
    /// Hash rounds per DAG task (the size of a small task).
    #[arg(long, default_value_t = workload::WORK_ITERS)]
    work: u32,
    /// Timed repetitions per measurement (the median is reported), 1 to 10 000.
    #[arg(long, default_value_t = 9, value_parser = count(1, 10_000))]
    reps: usize,
    /// Untimed warm-up repetitions per measurement, 0 to 10 000.
    #[arg(long, default_value_t = 2, value_parser = count(0, 10_000))]
    warmup: usize,
    /// Fork-joins per timed repetition, at least 1.
    #[arg(long, default_value_t = 2_000, value_parser = count(1, u64::MAX))]
    fj_iters: usize,
    /// Hash rounds each fork-join rank runs (0: an empty body, pure overhead).
    #[arg(long, default_value_t = 0)]
    fj_work: u32,
    /// Seed of the DAG generator.
    #[arg(long, default_value_t = workload::SEED)]
    seed: u64,
    #[command(flatten)]
    json: JsonArg,
}

/// The value parser of a count in `min..=max` (out-of-range counts are refused while
/// parsing, naming the value: a huge --tasks or --reps would fail to allocate).
fn count(min: u64, max: u64) -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::new().range(min..=max)
}

#[derive(Debug, Serialize)]
struct Report {
    workers: usize,
    pinned: bool,
    reps: usize,
    work_iters: u32,
    /// Sequential time of one task's work, for scale.
    work_ns_per_task: f64,
    dag: Vec<DagRow>,
    fork_join: Vec<ForkJoinRow>,
}

#[derive(Debug, Serialize)]
struct DagRow {
    shape: &'static str,
    tasks: usize,
    edges: usize,
    depth: usize,
    taopipe_tasks_per_s: f64,
    rayon_tasks_per_s: f64,
    /// taopipe / rayon throughput.
    ratio: f64,
    /// One thread, no runtime: the work alone.
    serial_tasks_per_s: f64,
}

#[derive(Debug, Serialize)]
struct ForkJoinRow {
    width: usize,
    taopipe_ns: f64,
    rayon_ns: f64,
    /// taopipe / rayon latency.
    ratio: f64,
    /// Which rayon primitive `rayon_ns` measures.
    rayon_kind: &'static str,
    /// `pool.install(|| rayon::scope(..))` at this width, for reference at the full width.
    rayon_scope_ns: f64,
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// Lets the other runtime's workers finish spinning and park, so that they do not compete
/// for cores with the one being timed (both spin a little after running out of work).
fn settle() {
    std::thread::sleep(Duration::from_millis(2));
}

/// Runs `setup` untimed and `run` timed, `warmup + reps` times for both sides,
/// alternating taopipe and rayon; returns the median seconds of each.
fn time_pair<A, B>(
    warmup: usize,
    reps: usize,
    mut setup_a: impl FnMut() -> A,
    mut run_a: impl FnMut(A),
    mut setup_b: impl FnMut() -> B,
    mut run_b: impl FnMut(B),
) -> (f64, f64) {
    let (mut ta, mut tb) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    for rep in 0..warmup + reps {
        let a = setup_a();
        settle();
        let start = Instant::now();
        run_a(a);
        let da = start.elapsed().as_secs_f64();
        let b = setup_b();
        settle();
        let start = Instant::now();
        run_b(b);
        let db = start.elapsed().as_secs_f64();
        if rep >= warmup {
            ta.push(da);
            tb.push(db);
        }
    }
    (median(ta), median(tb))
}

fn main() -> Result<()> {
    let args = Args::parse();
    args.json.route_text();
    let rt = match args.workers {
        Some(n) => {
            let rt = Runtime::builder()
                .workers(n)
                .build()
                .with_context(|| format!("--workers {n}"))?;
            if let Some(spec) = &args.runtime.emulate {
                rt.emulate(spec)
                    .with_context(|| format!("--emulate {spec}"))?;
            }
            rt
        }
        None => args.runtime.runtime()?,
    };
    let workers = rt.num_workers();
    let pinned = rt.topology().pins();
    let pool = workload::rayon_pool(workers);

    // The work alone, one thread.
    let probe = Dag::generate(Shape::Independent, args.tasks, args.work, args.seed);
    probe.run_serial();
    let serial_s = median(
        (0..args.reps.min(5))
            .map(|_| {
                let start = Instant::now();
                probe.run_serial();
                start.elapsed().as_secs_f64()
            })
            .collect(),
    );
    let work_ns_per_task = serial_s * 1e9 / args.tasks as f64;

    let mut dag_rows = Vec::new();
    for shape in Shape::ALL {
        let dag = Dag::generate(shape, args.tasks, args.work, args.seed);
        let mut rayon_ok = true;
        let (t_taopipe, t_rayon) = time_pair(
            args.warmup,
            args.reps,
            || workload::taopipe_graph(&dag),
            |g| rt.run(g).expect("the taopipe DAG runs"),
            || dag.pending(),
            |pending| {
                workload::rayon_run(&pool, &dag, &pending);
                rayon_ok &= workload::rayon_completed(&pending);
            },
        );
        ensure!(rayon_ok, "the rayon executor left tasks unrun");
        let (a, b) = (dag.tasks as f64 / t_taopipe, dag.tasks as f64 / t_rayon);
        dag_rows.push(DagRow {
            shape: shape.name(),
            tasks: dag.tasks,
            edges: dag.edges(),
            depth: dag.depth(),
            taopipe_tasks_per_s: a,
            rayon_tasks_per_s: b,
            ratio: a / b,
            serial_tasks_per_s: dag.tasks as f64 / serial_s,
        });
    }

    let mut fj_rows = Vec::new();
    let n = args.fj_iters;
    // A layout file may forbid some widths at leader 0: only the allowed ones are timed.
    let widths = workload::fork_join_widths(workers)
        .into_iter()
        .filter(|&w| rt.topology().is_allowed(Place::new(0, w)));
    for w in widths {
        let per = |s: f64| s * 1e9 / n as f64;
        let (t_taopipe, t_rayon) = time_pair(
            args.warmup,
            args.reps,
            || (),
            |()| (0..n).for_each(|_| workload::taopipe_fork_join(&rt, w, args.fj_work)),
            || (),
            |()| (0..n).for_each(|_| workload::rayon_fork_join(&pool, workers, w, args.fj_work)),
        );
        let (_, t_scope) = time_pair(
            args.warmup.min(1),
            args.reps,
            || (),
            |()| {},
            || (),
            |()| (0..n).for_each(|_| workload::rayon_scope_fork_join(&pool, w, args.fj_work)),
        );
        fj_rows.push(ForkJoinRow {
            width: w,
            taopipe_ns: per(t_taopipe),
            rayon_ns: per(t_rayon),
            ratio: t_taopipe / t_rayon,
            rayon_kind: if w >= workers { "broadcast" } else { "scope" },
            rayon_scope_ns: per(t_scope),
        });
    }

    let report = Report {
        workers,
        pinned,
        reps: args.reps,
        work_iters: args.work,
        work_ns_per_task,
        dag: dag_rows,
        fork_join: fj_rows,
    };
    say!("{}", render(&report));
    if let Some(json) = &args.json.target {
        // Serialised from the structs, so the keys keep their declared order.
        json.write_text(&serde_json::to_string_pretty(&report)?)?;
    }
    Ok(())
}

fn render(r: &Report) -> String {
    let mut s = String::new();
    let pin = if r.pinned { "pinned" } else { "unpinned" };
    s += &format!(
        "taopipe vs rayon: {} workers ({pin}) / {} rayon threads, median of {} reps; task work {} rounds = {:.0} ns serial\n\n",
        r.workers, r.workers, r.reps, r.work_iters, r.work_ns_per_task
    );
    s += &format!(
        "{:<30} {:>14} {:>14} {:>8} {:>14}\n",
        "DAG throughput (tasks/s)", "taopipe", "rayon", "ratio", "1 thread"
    );
    for d in &r.dag {
        let name = format!("{} ({} tasks, {} edges)", d.shape, d.tasks, d.edges);
        s += &format!(
            "{name:<30} {:>14.0} {:>14.0} {:>8.2} {:>14.0}\n",
            d.taopipe_tasks_per_s, d.rayon_tasks_per_s, d.ratio, d.serial_tasks_per_s
        );
    }
    s += &format!(
        "\n{:<30} {:>14} {:>14} {:>8} {:>14}\n",
        "fork-join latency (ns)", "taopipe", "rayon", "ratio", "rayon scope"
    );
    for f in &r.fork_join {
        let name = format!("width {} (rayon {})", f.width, f.rayon_kind);
        s += &format!(
            "{name:<30} {:>14.0} {:>14.0} {:>8.2} {:>14.0}\n",
            f.taopipe_ns, f.rayon_ns, f.ratio, f.rayon_scope_ns
        );
    }
    s += "\nratio: taopipe/rayon; DAG: > 1 = taopipe faster; fork-join: < 1 = taopipe faster\n";
    s
}
