//! The driver behind the `vgg16`, `alexnet`, `resnet50` and `synthetic` examples: tune a
//! pipeline live (or take the best seed), stream frames through it, and show the
//! layer-parallel baseline side by side.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, ensure};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use taopipe::dsl::{NetSpec, Seeds, WeightDistribution};
use taopipe::live::{Engine, MeasureKind, SearchKind, SeedKind, TuneOptions, frames};
use taopipe::nets::{Model, RandomWeights, zoo};
use taopipe::tuner::{Configuration, StageTimes};

use super::{RuntimeArgs, zoo_net};

/// Tunes a CNN pipeline online by measuring (Pipe-search), then streams frames through the
/// chosen pipeline and, under the same conditions, through the layer-parallel baseline
/// (every layer on all workers, one frame at a time), and prints both.
#[derive(Debug, Parser)]
#[command(version, about, long_about)]
pub(crate) struct TuneCli {
    #[command(flatten)]
    runtime: RuntimeArgs,
    /// Tune online with confidence α: `--tune alpha=10` stops a stage count's exploration after
    /// 10 trials without improvement. Without it, the best CV-sorted seed runs untuned.
    #[arg(long, value_name = "alpha=N", value_parser = parse_tune)]
    tune: Option<usize>,
    /// The search: pipe (Pipe-search, Alg. 2), exhaustive, random (α·(C+1) uniform draws)
    /// or nohints (Pipe-search with seeds balanced by unit count).
    #[arg(long, default_value_t = SearchKind::Pipe)]
    search: SearchKind,
    /// How Pipe-search's seed lists are ranked: `paper` (CV of the stage weights, Alg. 1)
    /// or `speed` (stage weights scaled by the known speed and width of each stage's
    /// place, so the first seeds balance stage *times*; the same as `paper` when the
    /// runtime knows of no speed difference).
    #[arg(long, default_value_t = SeedKind::Paper)]
    seeds: SeedKind,
    /// How trials are measured: isolated (each stage alone on its workers, the paper's
    /// measurement) or pipelined (the pipeline itself, streaming 4 frames).
    #[arg(long, default_value_t = MeasureKind::Isolated)]
    measure: MeasureKind,
    /// Measured repetitions per trial (after one warm-up); the median counts.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) reps: u64,
    /// Most stages to consider (C). Default: one per worker.
    #[arg(long)]
    max_stages: Option<usize>,
    /// Frames to stream through the chosen pipeline, and through the baseline.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    frames: u64,
    /// The net (zoo name, or `random` for a seeded random synthetic net).
    #[arg(long)]
    net: Option<String>,
    /// Depth of a `random` net.
    #[arg(long, default_value_t = 16)]
    depth: usize,
    /// Seed of the random weights, inputs, random nets and random search.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write a JSON report here (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
}

/// `alpha=N` with N ≥ 1.
fn parse_tune(text: &str) -> Result<usize, String> {
    let value = text
        .strip_prefix("alpha=")
        .ok_or_else(|| format!("`{text}`: expected `alpha=N`, e.g. `alpha=10`"))?;
    match value.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "`{text}`: α must be a whole number ≥ 1, got `{value}`"
        )),
    }
}

fn load_net(name: &str, cli: &TuneCli) -> anyhow::Result<NetSpec> {
    if name == "random" {
        let dist = WeightDistribution::LogUniform { min: 1, max: 64 };
        return Ok(zoo::random_net(cli.seed, cli.depth, dist)?);
    }
    zoo_net(name, &["random"])
}

/// The progress bar and the trial table of a tuning: one line per trial.
pub(crate) fn trial_printer(
    expected: u64,
) -> anyhow::Result<(ProgressBar, impl FnMut(&Configuration, &StageTimes))> {
    let bar = ProgressBar::new(expected).with_style(ProgressStyle::with_template(
        "{bar:30} {pos}/~{len} trials, {elapsed} {msg}",
    )?);
    bar.suspend(|| {
        println!(
            "{:>5}  {:<36} {:>12}  stage ms",
            "trial", "configuration", "slowest ms"
        )
    });
    let (shown, mut trials) = (bar.clone(), 0);
    let print = move |config: &Configuration, times: &StageTimes| {
        trials += 1;
        let ms: Vec<String> = times.stage_ms.iter().map(|t| format!("{t:.1}")).collect();
        let line = format!(
            "{trials:>5}  {:<36} {:>12.1}  [{}]",
            config.to_string(),
            times.slowest_ms(),
            ms.join(", ")
        );
        shown.suspend(|| println!("{line}"));
        shown.set_message(format!("last {:.1} ms", times.slowest_ms()));
        if shown.position() + 1 >= shown.length().unwrap_or(0) {
            shown.inc_length(1); // a search may run past its expected count
        }
        shown.inc(1);
    };
    Ok((bar, print))
}

/// Runs the tool for the example `default_net`.
pub(crate) fn main(default_net: &str) -> anyhow::Result<()> {
    let cli = TuneCli::parse();
    let name = cli.net.clone().unwrap_or_else(|| default_net.to_string());
    let spec = load_net(&name, &cli)?;
    let rt = cli.runtime.runtime()?;
    let workers = rt.num_workers();
    let units = spec.units().len();
    let c = cli.max_stages.unwrap_or(workers).min(workers).min(units);
    ensure!(
        c >= 2,
        "a pipeline needs at least 2 stages: this runtime has {workers} worker(s) and {name} {units} unit(s)"
    );
    let model = Arc::new(Model::build(spec, &RandomWeights { seed: cli.seed })?);
    println!("{}", rt.topology());
    println!("speeds: {:?}", rt.speeds());
    println!(
        "{name}: {units} units, {:.2} GFLOP per frame; stage counts 1..={c}",
        model.flops() as f64 / 1e9
    );
    let options = TuneOptions {
        search: cli.search,
        alpha: cli.tune.unwrap_or(10),
        max_stages: Some(c),
        reps: cli.reps as usize,
        measure: cli.measure,
        seeds: cli.seeds,
        seed: cli.seed,
    };
    let mut engine = Engine::new(&rt, model.clone(), options)?;
    if let Some(spec) = &cli.runtime.emulate {
        engine = engine.with_emulation(spec.to_string());
    }
    match cli.tune {
        Some(_) => {
            let (bar, print) = trial_printer(engine.options().expected_trials(&rt, &model))?;
            let found = engine.tune(print)?;
            bar.finish_and_clear();
            let algorithm = cli.search.to_string();
            println!(
                "\n{}",
                taopipe::tuner::Report::new(&algorithm, cli.tune, found)
            );
        }
        None => {
            let seeds = Seeds::from_net(model.spec(), c)?;
            let seed = seeds.top_k(c, 1)?.into_iter().next().context("no seed")?;
            println!(
                "not tuned (pass --tune alpha=N): running the best-CV seed {:?}",
                seed.composition
            );
            engine.serve(Configuration::contiguous(&seed.composition, workers)?)?;
        }
    }

    // Stream frames through the chosen configuration, then the layer-parallel baseline.
    let bar = ProgressBar::new(2 * cli.frames).with_style(ProgressStyle::with_template(
        "{bar:30} {pos}/{len} frames, {elapsed} {msg}",
    )?);
    bar.set_message("pipeline");
    let mut report = engine.run(frames(&model, cli.frames, cli.seed), |_, _| bar.inc(1))?;
    bar.set_message("layer-parallel");
    report.baseline =
        Some(engine.baseline(frames(&model, cli.frames, cli.seed), |_, _| bar.inc(1))?);
    bar.finish_and_clear();

    println!("\nchosen configuration: {}", engine.configuration());
    print!("{report}");
    if let Some(path) = &cli.json {
        super::write_json(path, &serde_json::to_value(&report)?)?;
    }
    Ok(())
}
