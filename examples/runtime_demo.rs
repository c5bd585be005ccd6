//! Watch the runtime react to a slow cluster.
//!
//! A data-parallel task (each rank hashes its share of a buffer) is left to the runtime
//! to place (`Task::auto`), so every run is placed from the performance trace table. The
//! demo runs it in three phases — all cores at full speed, part of the machine slowed by
//! emulation, full speed again — and after each phase prints where the runs went and the
//! per-place table the runtime decided from.
//!
//! ```text
//! cargo run --release --example runtime_demo
//! cargo run --release --example runtime_demo -- --slow w1=0.25 --tasks 300 --json demo.json
//! ```

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::{Context, ensure};
use clap::Parser;
use serde::{Serialize, Serializer};
use taopipe::runtime::{
    EmulationSpec, Objective, Place, PlacePolicy, Runtime, Task, TaskGraph, TraceSnapshot,
};

use common::{JsonArg, RuntimeArgs, say, sayln};

/// Runs one moldable data-parallel task over and over with the place left to the runtime,
/// slows part of the machine in the middle, and prints the trace table the runtime uses
/// to choose places, so you can see it move work off the slow cores and back.
#[derive(Debug, Parser)]
#[command(version, about, long_about)]
struct Cli {
    #[command(flatten)]
    runtime: RuntimeArgs,
    /// What to slow down in the middle phase (same syntax as --emulate, e.g. `table1:2`
    /// or `w1=0.25`). Default: the workers of the place the runtime used most in the first
    /// phase, at `powersave`, so the reaction is always visible.
    #[arg(long, value_name = "SPEC")]
    slow: Option<EmulationSpec>,
    /// Task runs per phase, 1 to 1 000 000 (each run keeps a result to check).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    tasks: u32,
    /// Buffer elements each run hashes (its size; split among the ranks).
    #[arg(long, default_value_t = 1 << 20, value_parser = clap::value_parser!(u64).range(1..))]
    elements: u64,
    /// Probability of trying a random place instead of the best known one.
    #[arg(long, default_value_t = 0.1)]
    explore: f64,
    #[command(flatten)]
    json: JsonArg,
}

/// A cheap, exact per-element workload: integer mixing, so every width gives the same sum.
fn mix(i: u64) -> u64 {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for _ in 0..8 {
        x ^= x >> 29;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    }
    x
}

/// The demo's `--json` report. It stays in the example: it records this demo's own
/// workload and phases (hash runs, the `--slow` it applied), and what a library user needs
/// from it is the runtime's already (`Runtime::trace_table`, `TraceSnapshot::runs_since`).
/// The runtime crate has no serde dependency; the two `serialize_with` helpers below give
/// its types the JSON form this report has always had.
#[derive(Serialize)]
struct Report {
    /// The runtime's topology, as it prints it.
    topology: String,
    workers: usize,
    /// Task runs per phase (`--tasks`).
    tasks_per_phase: u32,
    /// Buffer elements each run hashes (`--elements`).
    elements: u64,
    /// The place policy's exploration probability (`--explore`).
    explore: f64,
    phases: Vec<Phase>,
}

/// One phase of runs at one setting of speeds.
#[derive(Serialize)]
struct Phase {
    name: String,
    /// Each worker's speed factor during the phase (1 = full speed).
    speeds: Vec<f64>,
    /// Wall time per run, ms.
    mean_ms: f64,
    /// Runs per place during the phase, keyed `leader+width`.
    #[serde(serialize_with = "by_place_name")]
    picks: BTreeMap<Place, u64>,
    /// The trace table after the phase: the task's row, one entry per place measured.
    #[serde(rename = "trace", serialize_with = "first_row")]
    table: TraceSnapshot,
}

/// `picks` as a JSON object keyed by place (`"0+2"`).
fn by_place_name<S: Serializer>(picks: &BTreeMap<Place, u64>, s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(picks.iter().map(|(place, n)| (place.to_string(), n)))
}

/// The first row of `table` (the demo has one task type) as `[{place, leader, width, ms,
/// samples}]`, its time in ms; `[]` before any run.
fn first_row<S: Serializer>(table: &TraceSnapshot, s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Entry {
        place: String,
        leader: usize,
        width: usize,
        ms: f64,
        samples: u64,
    }
    let entries = table.rows.first().map_or(&[][..], |r| &r.entries);
    s.collect_seq(entries.iter().map(|e| Entry {
        place: e.place.to_string(),
        leader: e.place.leader(),
        width: e.place.width(),
        ms: e.seconds * 1e3,
        samples: e.samples,
    }))
}

/// Runs `tasks` runs one after another (so the runtime sees each time undisturbed) and
/// checks each result against the serial one.
fn run_phase(
    rt: &Runtime,
    name: &str,
    tasks: u32,
    elements: u64,
    expected: u64,
) -> anyhow::Result<Phase> {
    let before = rt.trace_table();
    let sums: Arc<Vec<AtomicU64>> = Arc::new((0..tasks).map(|_| AtomicU64::new(0)).collect());
    let mut g = TaskGraph::new();
    let mut prev = None;
    for t in 0..tasks as usize {
        let sums = sums.clone();
        let id = g.add(
            Task::new("hash", move |ctx| {
                let n = elements as usize;
                let part = ctx
                    .split(n)
                    .fold(0u64, |acc, i| acc.wrapping_add(mix(i as u64)));
                sums[t].fetch_add(part, Ordering::Relaxed);
            })
            .auto(),
        );
        if let Some(p) = prev {
            g.make_edge(p, id);
        }
        prev = Some(id);
    }
    let start = Instant::now();
    rt.run(g)?;
    let mean_ms = start.elapsed().as_secs_f64() * 1e3 / f64::from(tasks);
    for s in sums.iter() {
        ensure!(
            s.load(Ordering::Relaxed) == expected,
            "a run gave a different result than the serial sum"
        );
    }
    let table = rt.trace_table();
    Ok(Phase {
        name: name.to_string(),
        speeds: rt.speeds(),
        mean_ms,
        picks: table.runs_since(&before),
        table,
    })
}

/// `powersave` on every worker of the place that ran the most in `phase`.
fn busiest_place_slowed(phase: &Phase) -> anyhow::Result<EmulationSpec> {
    let (place, _) = phase
        .picks
        .iter()
        .max_by_key(|(_, n)| **n)
        .context("no runs in the first phase")?;
    let items: Vec<String> = place.workers().map(|w| format!("w{w}=powersave")).collect();
    Ok(items.join(",").parse()?)
}

/// A spec that sets every worker's speed explicitly.
fn per_worker_spec(speeds: &[f64]) -> anyhow::Result<EmulationSpec> {
    let items: Vec<String> = speeds
        .iter()
        .enumerate()
        .map(|(w, s)| format!("w{w}={s}"))
        .collect();
    Ok(items.join(",").parse()?)
}

fn print_phase(p: &Phase) {
    sayln!(
        "\n== {} (speeds {:?}) — {:.3} ms per run",
        p.name,
        p.speeds,
        p.mean_ms
    );
    let picks: Vec<String> = p
        .picks
        .iter()
        .map(|(place, n)| format!("{place}: {n}"))
        .collect();
    sayln!("runs per place (leader+width): {}", picks.join(", "));
    say!("{}", p.table);
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    cli.json.route_text();
    ensure!(
        (0.0..=1.0).contains(&cli.explore),
        "--explore {} is not a probability in [0, 1]",
        cli.explore
    );
    let rt = cli.runtime.runtime()?;
    rt.set_place_policy(PlacePolicy {
        objective: Objective::WidthTime,
        explore: cli.explore,
    });
    let base = rt.speeds();
    // Check --slow against the topology before spending a phase on it.
    if let Some(slow) = &cli.slow {
        slow.resolve(rt.topology())
            .with_context(|| format!("--slow {slow}"))?;
    }
    sayln!("{}", rt.topology());
    let expected = (0..cli.elements).fold(0u64, |acc, i| acc.wrapping_add(mix(i)));

    let mut phases = vec![run_phase(
        &rt,
        "full speed",
        cli.tasks,
        cli.elements,
        expected,
    )?];
    print_phase(&phases[0]);
    let slow = match cli.slow.clone() {
        Some(spec) => spec,
        None => busiest_place_slowed(&phases[0])?,
    };
    let slowed = slow
        .resolve(rt.topology())
        .with_context(|| format!("--slow {slow}"))?;
    let combined: Vec<f64> = base.iter().zip(&slowed).map(|(a, b)| a.min(*b)).collect();
    let spec = per_worker_spec(&combined)?;
    rt.emulate(&spec)?;
    phases.push(run_phase(
        &rt,
        &format!("slowed: {slow}"),
        cli.tasks,
        cli.elements,
        expected,
    )?);
    print_phase(&phases[1]);
    let spec = per_worker_spec(&base)?;
    rt.emulate(&spec)?;
    phases.push(run_phase(
        &rt,
        "full speed again",
        cli.tasks,
        cli.elements,
        expected,
    )?);
    print_phase(&phases[2]);

    if let Some(json) = &cli.json.target {
        json.write(&Report {
            topology: rt.topology().to_string(),
            workers: rt.num_workers(),
            tasks_per_phase: cli.tasks,
            elements: cli.elements,
            explore: cli.explore,
            phases,
        })?;
    }
    Ok(())
}
