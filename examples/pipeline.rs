//! Stream frames of a zoo net through a pipeline — a given split of its units into stages,
//! each stage on its own workers — and, under the same conditions, through the
//! layer-parallel baseline (every layer on all workers, one frame at a time: how ONNX
//! Runtime and ARM-CL run). Prints both side by side.
//!
//! ```text
//! cargo run --release --example pipeline -- --net vgg16
//! cargo run --release --example pipeline -- --net vgg16 --split 9,12 --emulate w1=powersave
//! cargo run --release --example pipeline -- --net resnet50 --split 30,22 --places 0+1,1+1 --json run.json
//! ```
//! Without `--split` the pipeline is the best CV-sorted seed (paper Alg. 1) with as many
//! stages as workers; without `--places` stage `i` gets a contiguous run of workers, widths
//! as equal as possible.

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, ensure};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use taopipe::dsl::Seeds;
use taopipe::live::LiveMeasure;
use taopipe::nets::{Model, RandomWeights};
use taopipe::runtime::{Pipeline, Place, StopSignal};
use taopipe::tuner::{Configuration, contiguous_places};

use common::{Baseline, RuntimeArgs, frame_input};

/// Streams frames of a net through a pipeline of stages on their own workers, and through
/// the layer-parallel baseline under the same conditions, and prints both.
#[derive(Debug, Parser)]
#[command(version, about, long_about)]
struct Cli {
    #[command(flatten)]
    runtime: RuntimeArgs,
    /// The net: vgg16, alexnet, resnet50, synth1, synth2 or synth3.
    #[arg(long, default_value = "vgg16")]
    net: String,
    /// Units per stage, e.g. `8,13` (must add up to the net's units). Default: the best
    /// CV-sorted seed with one stage per worker.
    #[arg(long, value_name = "LIST")]
    split: Option<String>,
    /// Each stage's place as `leader+width`, e.g. `0+1,1+1`. Default: contiguous runs.
    #[arg(long, value_name = "LIST")]
    places: Option<String>,
    /// Frames to stream (each run, pipeline and baseline).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    frames: u64,
    /// Frames that may wait between two stages.
    #[arg(long, default_value_t = 2)]
    queue: usize,
    /// Seed of the random weights and inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write a JSON report here (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
}

fn parse_list(text: &str, flag: &str) -> anyhow::Result<Vec<usize>> {
    text.split(',')
        .map(|t| {
            t.trim()
                .parse::<usize>()
                .with_context(|| format!("{flag} {text}: `{t}` is not a count"))
        })
        .collect()
}

fn parse_places(text: &str) -> anyhow::Result<Vec<(usize, usize)>> {
    text.split(',')
        .map(|t| {
            let (l, w) = t
                .trim()
                .split_once('+')
                .with_context(|| format!("--places {text}: `{t}` is not `leader+width`"))?;
            Ok((
                l.parse()
                    .with_context(|| format!("--places: leader `{l}`"))?,
                w.parse()
                    .with_context(|| format!("--places: width `{w}`"))?,
            ))
        })
        .collect()
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let spec = common::zoo_net(&cli.net, &[])?;
    let rt = cli.runtime.runtime()?;
    let workers = rt.num_workers();
    let units = spec.units().len();
    let split = match &cli.split {
        Some(text) => parse_list(text, "--split")?,
        None if workers.min(units) < 2 => vec![units],
        None => {
            let stages = workers.min(units);
            Seeds::from_net(&spec, stages)?
                .top_k(stages, 1)?
                .first()
                .context("no seed")?
                .composition
                .clone()
        }
    };
    let places = match &cli.places {
        Some(text) => parse_places(text)?,
        None => contiguous_places(workers, split.len())?,
    };
    // The tuner's configuration checks the split and the places (counts, overlaps, fit).
    let config =
        Configuration::with_places(&split, &places, units, workers).with_context(|| {
            format!(
                "--split {split:?} with places {places:?} for {} ({units} units)",
                cli.net
            )
        })?;
    for &(leader, width) in &places {
        let place = Place::new(leader, width);
        ensure!(
            rt.topology().is_allowed(place),
            "place {place} is not allowed by this runtime's layout"
        );
    }
    let model = Arc::new(Model::build(spec, &RandomWeights { seed: cli.seed })?);
    println!("{}", rt.topology());
    println!("speeds: {:?}", rt.speeds());
    println!("{}: {units} units; pipeline {config}", cli.net);

    // Warm-up: one frame through everything (pages in weights, sizes scratch buffers).
    model.forward(
        &rt,
        frame_input(model.input_len(), cli.seed),
        Place::new(0, workers),
    )?;
    let bar = ProgressBar::new(2 * cli.frames).with_style(ProgressStyle::with_template(
        "{bar:30} {pos}/{len} frames {msg}",
    )?);
    bar.set_message("layer-parallel");
    let base = Baseline::run(&rt, &model, cli.frames, cli.seed, &bar)?;

    bar.set_message("pipeline");
    let pipeline = Pipeline::new(LiveMeasure::stages(&model, &config))?.with_queue(cli.queue)?;
    let m = model.clone();
    let mut frames = (0..cli.frames).map(move |i| {
        Arc::new(
            m.frame(frame_input(m.input_len(), cli.seed + i))
                .expect("input length matches"),
        )
    });
    let stats = pipeline.run(&rt, &mut frames, |_, _| bar.inc(1), &StopSignal::new())?;
    bar.finish_and_clear();

    println!(
        "\n{:<16} {:>12} {:>12} {:>12}",
        "", "frames/s", "p50 ms", "p99 ms"
    );
    println!(
        "{:<16} {:>12.2} {:>12.1} {:>12.1}",
        "pipeline",
        stats.throughput_fps(),
        stats.latency_ms(0.5),
        stats.latency_ms(0.99)
    );
    println!(
        "{:<16} {:>12.2} {:>12.1} {:>12.1}",
        "layer-parallel",
        base.fps,
        base.percentile_ms(0.5),
        base.percentile_ms(0.99)
    );
    println!(
        "pipeline / layer-parallel throughput: {:.2}",
        stats.throughput_fps() / base.fps
    );
    println!(
        "\n{:<8} {:>8} {:>8} {:>10}",
        "stage", "place", "units", "ms/frame"
    );
    for (s, n) in stats.stages.iter().zip(&split) {
        println!(
            "{:<8} {:>8} {:>8} {:>10.1}",
            s.name,
            s.place.to_string(),
            n,
            s.mean_ms()
        );
    }
    if let Some(path) = &cli.json {
        let cpu = |w: usize| rt.topology().cpus()[w].id;
        let report = json!({
            "net": cli.net,
            "cpus": (0..workers).map(cpu).collect::<Vec<_>>(),
            "speeds": rt.speeds(),
            "pipeline": {"stages": config.stages().iter().zip(&stats.stages).map(|(c, s)| json!({
                "layers": c.layers, "cpus": c.workers().map(cpu).collect::<Vec<_>>(),
                "leader": c.leader, "width": c.width, "ms_per_frame": s.mean_ms()})).collect::<Vec<_>>()},
            "run": {"frames": stats.delivered, "throughput_fps": stats.throughput_fps(),
                    "latency_ms": {"p50": stats.latency_ms(0.5), "p99": stats.latency_ms(0.99)}},
            "baseline": {"layer_parallel_fps": base.fps, "latency_ms": {"p50": base.percentile_ms(0.5), "p99": base.percentile_ms(0.99)}},
        });
        common::write_json(path, &report)?;
    }
    Ok(())
}
