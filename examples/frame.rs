//! Run frames of a zoo net through the runtime and print the time per frame.
//!
//! ```text
//! cargo run --release --example frame -- --net vgg16
//! cargo run --release --example frame -- --net resnet50 --width 1 --frames 10 --check
//! cargo run --release --example frame -- --net vgg16 --weights vgg16.safetensors --json frame.json
//! ```
//! Weights are random (from `--seed`) unless `--weights` names a safetensors file exported
//! from torchvision (see `taopipe_nets::weights`). Every layer runs as one moldable task on
//! the place `0+width`; `--check` also runs each frame at width 1 and fails unless the
//! outputs are bit-identical.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use taopipe::nets::{Model, RandomWeights, SafetensorsFile, Weights};
use taopipe::runtime::Place;

use common::{RuntimeArgs, frame_input};

/// Runs frames of VGG16, AlexNet, ResNet50 or a synthetic net through the taopipe runtime,
/// every layer a moldable task on the same workers, and prints the time per frame, the
/// throughput in GFLOP/s and the top classes.
#[derive(Debug, Parser)]
#[command(version, about, long_about)]
struct Cli {
    #[command(flatten)]
    runtime: RuntimeArgs,
    /// The net: vgg16, alexnet, resnet50, synth1, synth2 or synth3.
    #[arg(long, default_value = "vgg16")]
    net: String,
    /// Workers each layer runs on (the place 0+width). Default: all of them.
    #[arg(long)]
    width: Option<usize>,
    /// Frames to time (after one warm-up frame).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    frames: u32,
    /// A safetensors file with torchvision's parameter names. Default: random weights.
    #[arg(long, value_name = "FILE")]
    weights: Option<PathBuf>,
    /// Seed of the random weights and of the input frame.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Also run every frame at width 1 and fail unless the outputs are bit-identical.
    #[arg(long)]
    check: bool,
    /// Write a JSON report here (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let spec = common::zoo_net(&cli.net, &[])?;
    let rt = cli.runtime.runtime()?;
    let width = cli.width.unwrap_or(rt.num_workers());
    ensure!(
        (1..=rt.num_workers()).contains(&width),
        "--width {width}: this runtime has {} worker(s)",
        rt.num_workers()
    );
    let weights: Box<dyn Weights> = match &cli.weights {
        Some(path) => Box::new(SafetensorsFile::open(path)?),
        None => Box::new(RandomWeights { seed: cli.seed }),
    };
    let started = Instant::now();
    let model =
        Model::build(spec, weights.as_ref()).with_context(|| format!("building {}", cli.net))?;
    let build = started.elapsed();
    println!("{}", rt.topology());
    println!(
        "{}: {} layers, {} units, {:.2} GFLOP per frame; built in {:.2} s; {} on place 0+{width}",
        cli.net,
        model.spec().len(),
        model.spec().units().len(),
        model.flops() as f64 / 1e9,
        build.as_secs_f64(),
        if cli.weights.is_some() {
            "file weights"
        } else {
            "random weights"
        },
    );
    let input = frame_input(model.input_len(), cli.seed);
    let place = Place::new(0, width);
    model.forward(&rt, input.clone(), place)?; // warm-up: page in weights, size scratch
    let bar = ProgressBar::new(u64::from(cli.frames)).with_style(ProgressStyle::with_template(
        "{bar:30} {pos}/{len} frames {msg}",
    )?);
    let mut times: Vec<Duration> = Vec::new();
    let mut output = Vec::new();
    for _ in 0..cli.frames {
        let t = Instant::now();
        output = model.forward(&rt, input.clone(), place)?;
        times.push(t.elapsed());
        bar.set_message(format!(
            "{:.1} ms",
            times[times.len() - 1].as_secs_f64() * 1e3
        ));
        bar.inc(1);
        if cli.check {
            let one = model.forward(&rt, input.clone(), Place::new(0, 1))?;
            let same = one
                .iter()
                .zip(&output)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            ensure!(same, "width {width} and width 1 outputs differ");
        }
    }
    bar.finish_and_clear();
    let mut sorted = times.clone();
    sorted.sort();
    let median = sorted[sorted.len() / 2];
    let gflops = model.flops() as f64 / 1e9 / median.as_secs_f64();
    let ms: Vec<f64> = times.iter().map(|t| t.as_secs_f64() * 1e3).collect();
    println!(
        "time per frame: median {:.1} ms, min {:.1} ms ({} frames: {:?})",
        median.as_secs_f64() * 1e3,
        sorted[0].as_secs_f64() * 1e3,
        ms.len(),
        ms.iter()
            .map(|m| (m * 10.0).round() / 10.0)
            .collect::<Vec<_>>()
    );
    println!(
        "throughput: {:.2} frames/s, {gflops:.1} GFLOP/s",
        1.0 / median.as_secs_f64()
    );
    if cli.check {
        println!("check: every frame bit-identical to width 1");
    }
    let mut top: Vec<(usize, f32)> = output.iter().copied().enumerate().collect();
    top.sort_by(|a, b| b.1.total_cmp(&a.1));
    top.truncate(5);
    println!(
        "top classes (index: score): {}",
        top.iter()
            .map(|(i, s)| format!("{i}: {s:.4}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Some(path) = &cli.json {
        let report = json!({
            "net": cli.net,
            "layers": model.spec().len(),
            "units": model.spec().units().len(),
            "gflop_per_frame": model.flops() as f64 / 1e9,
            "workers": rt.num_workers(),
            "width": width,
            "weights": cli.weights.as_ref().map_or("random".to_string(), |p| p.display().to_string()),
            "frame_ms": ms,
            "median_ms": median.as_secs_f64() * 1e3,
            "gflops": gflops,
            "checked_width1": cli.check,
            "top5": top.iter().map(|(i, s)| json!({"class": i, "score": s})).collect::<Vec<_>>(),
        });
        common::write_json(path, &report)?;
    }
    Ok(())
}
