//! The driver behind the `vgg16`, `alexnet`, `resnet50` and `synthetic` examples: tune a
//! pipeline live (or take the best seed), stream frames through it, and show the
//! layer-parallel baseline side by side.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, ensure};
use clap::{Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use taopipe::dsl::{NetSpec, Seeds, WeightDistribution};
use taopipe::live::{LiveMeasure, LiveMode};
use taopipe::nets::{Model, RandomWeights, zoo};
use taopipe::runtime::{Pipeline, PipelineStats, Runtime, StopSignal};
use taopipe::tuner::{
    Configuration, Exhaustive, Measure, MeasureError, PipeSearch, PlacePolicy, RandomWalk, Report,
    Robust, RobustOptions, SearchResult, SearchSpace, StageTimes, pipe_search_without_hints,
};

use super::{Baseline, RuntimeArgs, frame_input, zoo_net};

/// Which search `--tune` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SearchKind {
    /// Pipe-search (paper Alg. 2): CV-sorted seeds, α-confidence.
    Pipe,
    /// Every configuration once.
    Exhaustive,
    /// Uniform draws without repeats, α·(C+1) trials (Pipe-search's expected count).
    Random,
    /// Pipe-search with seeds balanced by layer count instead of weight.
    Nohints,
}

/// How each trial's stage times are measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum MeasureKind {
    /// Each stage alone on its workers (the paper's tuning measurement).
    Isolated,
    /// The pipeline itself, streaming a few frames.
    Pipelined,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SeedKind {
    /// The paper's CV order of stage weights.
    Paper,
    /// Stage weights scaled by each place's known speed and width.
    Speed,
}

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
    /// The search: pipe, exhaustive, random or nohints.
    #[arg(long, value_enum, default_value_t = SearchKind::Pipe)]
    search: SearchKind,
    /// How Pipe-search's seed lists are ranked: `paper` (CV of the stage weights, Alg. 1)
    /// or `speed` (stage weights scaled by the known speed and width of each stage's
    /// place, so the first seeds balance stage *times*; the same as `paper` when the
    /// runtime knows of no speed difference).
    #[arg(long, value_enum, default_value_t = SeedKind::Paper)]
    seeds: SeedKind,
    /// How trials are measured.
    #[arg(long, value_enum, default_value_t = MeasureKind::Isolated)]
    measure: MeasureKind,
    /// Measured repetitions per trial (after one warm-up); the median counts.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    reps: u64,
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

/// Prints each trial (after the median of its repetitions) and moves the progress bar.
struct Shown<'b, M> {
    inner: M,
    bar: &'b ProgressBar,
    trials: usize,
}

impl<M: Measure> Measure for Shown<'_, M> {
    fn stage_times(&mut self, config: &Configuration) -> Result<StageTimes, MeasureError> {
        let times = self.inner.stage_times(config)?;
        self.trials += 1;
        let ms: Vec<String> = times.stage_ms.iter().map(|t| format!("{t:.1}")).collect();
        let line = format!(
            "{:>5}  {:<36} {:>12.1}  [{}]",
            self.trials,
            config.to_string(),
            times.slowest_ms(),
            ms.join(", ")
        );
        self.bar.suspend(|| println!("{line}"));
        self.bar
            .set_message(format!("last {:.1} ms", times.slowest_ms()));
        self.bar.inc(1);
        Ok(times)
    }
}

/// A live search: the measurement and stopping settings of one `--tune` run.
pub(crate) struct LiveSearch {
    pub(crate) kind: SearchKind,
    pub(crate) alpha: usize,
    /// Most stages (C).
    pub(crate) max_stages: usize,
    pub(crate) reps: u64,
    pub(crate) measure: MeasureKind,
    /// Seed of the input frame and of the random search.
    pub(crate) seed: u64,
}

impl LiveSearch {
    /// Runs the search on `model` (Pipe-search from `seeds`), printing one line per trial
    /// under a progress bar.
    pub(crate) fn run(
        &self,
        rt: &Runtime,
        model: &Arc<Model>,
        seeds: &Seeds,
    ) -> anyhow::Result<SearchResult> {
        let (alpha, c) = (self.alpha, self.max_stages);
        let workers = rt.num_workers();
        let units = model.spec().units().len();
        let space = SearchSpace::new(units, workers, c, PlacePolicy::Contiguous);
        let expected = match self.kind {
            SearchKind::Exhaustive => space.size() as u64,
            _ => (alpha * (c + 1)) as u64,
        };
        let bar = ProgressBar::new(expected).with_style(ProgressStyle::with_template(
            "{bar:30} {pos}/~{len} trials {msg}",
        )?);
        bar.suspend(|| {
            println!(
                "{:>5}  {:<36} {:>12}  stage ms",
                "trial", "configuration", "slowest ms"
            )
        });
        let mode = match self.measure {
            MeasureKind::Isolated => LiveMode::Isolated,
            MeasureKind::Pipelined => LiveMode::Pipelined { frames: 4 },
        };
        let live = LiveMeasure::new(
            rt,
            model.clone(),
            frame_input(model.input_len(), self.seed),
            mode,
        )?;
        let robust = Robust::new(
            live,
            RobustOptions {
                warmup: 1,
                repetitions: self.reps as usize,
                mad_k: 3.0,
            },
        );
        let mut measure = Shown {
            inner: robust,
            bar: &bar,
            trials: 0,
        };
        let search = PipeSearch::new(alpha, workers);
        let result = match self.kind {
            SearchKind::Pipe => search.run(seeds, &mut measure)?,
            SearchKind::Exhaustive => Exhaustive::new(space).run(&mut measure)?,
            SearchKind::Random => RandomWalk {
                space,
                seed: self.seed,
                target_ms: None,
                budget: alpha * (c + 1),
            }
            .run(&mut measure)?,
            SearchKind::Nohints => pipe_search_without_hints(&search, units, c, &mut measure)?,
        };
        bar.finish_and_clear();
        Ok(result)
    }
}

/// Streams `frames` frames (inputs `frame_input(_, seed + i)`) through the pipeline of
/// `config`, moving `bar` once per frame.
pub(crate) fn stream(
    rt: &Runtime,
    model: &Arc<Model>,
    config: &Configuration,
    frames: u64,
    seed: u64,
    bar: &ProgressBar,
) -> anyhow::Result<PipelineStats> {
    let pipeline = Pipeline::new(LiveMeasure::stages(model, config))?;
    LiveMeasure::reserve(rt, model, config, &pipeline)?;
    let mut source = super::frames(model, frames, seed).map(Arc::new);
    Ok(pipeline.run(rt, &mut source, |_, _| bar.inc(1), &StopSignal::new())?)
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
    let seeds = match cli.seeds {
        SeedKind::Paper => Seeds::from_net(&spec, c)?,
        SeedKind::Speed => Seeds::from_net(&spec, c)?.with_key(taopipe::live::speed_key(&rt)),
    };
    let model = Arc::new(Model::build(spec, &RandomWeights { seed: cli.seed })?);
    println!("{}", rt.topology());
    println!("speeds: {:?}", rt.speeds());
    println!(
        "{name}: {units} units, {:.2} GFLOP per frame; stage counts 2..={c}",
        model.flops() as f64 / 1e9
    );

    let (best, report) = match cli.tune {
        Some(alpha) => {
            let algorithm = format!("{:?}", cli.search).to_lowercase();
            let search = LiveSearch {
                kind: cli.search,
                alpha,
                max_stages: c,
                reps: cli.reps,
                measure: cli.measure,
                seed: cli.seed,
            };
            let result = search.run(&rt, &model, &seeds)?;
            let report = Report::new(&algorithm, Some(alpha), &result);
            println!("\n{report}");
            (result.best, Some(report))
        }
        None => {
            let seed = seeds.top_k(c, 1)?.into_iter().next().context("no seed")?;
            println!(
                "not tuned (pass --tune alpha=N): running the best-CV seed {:?}",
                seed.composition
            );
            (Configuration::contiguous(&seed.composition, workers)?, None)
        }
    };

    // Stream frames through the chosen pipeline, then the layer-parallel baseline.
    let bar = ProgressBar::new(2 * cli.frames).with_style(ProgressStyle::with_template(
        "{bar:30} {pos}/{len} frames {msg}",
    )?);
    bar.set_message("pipeline");
    let stats = stream(&rt, &model, &best, cli.frames, cli.seed, &bar)?;
    bar.set_message("layer-parallel");
    let base = Baseline::run(&rt, &model, cli.frames, cli.seed, &bar)?;
    bar.finish_and_clear();

    println!("\nchosen pipeline: {best}");
    println!(
        "{:<8} {:>8} {:>8} {:>10}",
        "stage", "place", "units", "ms/frame"
    );
    for (s, n) in stats.stages.iter().zip(best.composition()) {
        println!(
            "{:<8} {:>8} {:>8} {:>10.1}",
            s.name,
            s.place.to_string(),
            n,
            s.mean_ms()
        );
    }
    println!(
        "\n{:<16} {:>10} {:>10} {:>10}",
        "", "frames/s", "p50 ms", "p99 ms"
    );
    println!(
        "{:<16} {:>10.2} {:>10.1} {:>10.1}",
        "pipeline",
        stats.throughput_fps(),
        stats.latency_ms(0.5),
        stats.latency_ms(0.99)
    );
    println!(
        "{:<16} {:>10.2} {:>10.1} {:>10.1}",
        "layer-parallel",
        base.fps,
        base.percentile_ms(0.5),
        base.percentile_ms(0.99)
    );
    println!(
        "pipeline / layer-parallel throughput: {:.2}",
        stats.throughput_fps() / base.fps
    );

    if let Some(path) = &cli.json {
        let cpu = |w: usize| rt.topology().cpus()[w].id;
        let mut search = match &report {
            Some(r) => serde_json::to_value(r)?,
            None => json!({"algorithm": "seed", "alpha": null, "trials": [], "tuning_s": 0.0}),
        };
        search["seeds"] = json!(format!("{:?}", cli.seeds).to_lowercase());
        let report = json!({
            "net": name,
            "cpus": (0..workers).map(cpu).collect::<Vec<_>>(),
            "speeds": rt.speeds(),
            "search": search,
            "best": {"stages": best.stages().iter().map(|s| json!({
                "layers": s.layers, "leader": s.leader, "width": s.width,
                "cpus": (s.leader..s.leader + s.width).map(cpu).collect::<Vec<_>>()})).collect::<Vec<_>>()},
            "run": {"frames": stats.delivered, "throughput_fps": stats.throughput_fps(),
                    "latency_ms": {"p50": stats.latency_ms(0.5), "p99": stats.latency_ms(0.99)},
                    "stage_ms": stats.stages.iter().map(|s| s.mean_ms()).collect::<Vec<_>>()},
            "baseline": {"layer_parallel_fps": base.fps, "latency_ms": {"p50": base.percentile_ms(0.5), "p99": base.percentile_ms(0.99)}},
        });
        super::write_json(path, &report)?;
    }
    Ok(())
}
