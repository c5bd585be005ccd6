//! Stream frames of a zoo net through a pipeline — a given split of its units into stages,
//! each stage on its own workers — and, under the same conditions, through the
//! layer-parallel baseline (every layer on all workers, one frame at a time: how ONNX
//! Runtime and ARM-CL run). Prints both side by side.
//!
//! ```text
//! cargo run --release --example pipeline -- --net vgg16
//! cargo run --release --example pipeline -- --net vgg16 --split 9,12 --emulate w1=powersave
//! cargo run --release --example pipeline -- --net resnet50 --split 30,22 --places 0+1,1+1 --json run.json
//! cargo run --release --example pipeline -- --net vgg16 --emulate w1=powersave \
//!     --mode switch --mapping BBBBBBBBBBBBBBBBBBLLL --speeds 1.0,0.5
//! ```
//! Without `--split` the pipeline is the best CV-sorted seed (paper Alg. 1) with as many
//! stages as workers; without `--places` stage `i` gets a contiguous run of workers, widths
//! as equal as possible (under a `--layout` file, the widest place it allows inside that
//! run; the baseline runs every layer on the widest place the layout allows).
//!
//! ARM-CO-UP's modes (`taopipe::live::planners::armcoup`): `--mapping` names a device per unit (`B` = the
//! fastest device, `L` = the next, or digits `0`–`9` into the device list the example
//! prints); its runs of equal characters are the stages (pipeline mode) or the runs one
//! frame takes in turn (`--mode switch`, lowest latency per frame). `--speeds` scales each
//! stage's or run's workers below their current speed (emulated DVFS; `1` = unchanged).
//!
//! SIGINT or SIGTERM stops it between frames (`common::interrupt`): the frames admitted
//! are finished, what ran is printed and written (`--json`, with `"partial": true`), and it
//! exits with 130 or 143.

mod common;

use std::sync::Arc;

use std::ops::Range;

use anyhow::{Context, bail, ensure};
use clap::{Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use taopipe::dsl::Seeds;
use taopipe::live::planners::armcoup::Mapping;
use taopipe::live::planners::armcoup::{ScaledSpeeds, Switch, SwitchRun};
use taopipe::live::report::{MachineReport, PlanPart, PlanReport, StreamReport};
use taopipe::live::{LiveMeasure, allowed_places, widest_place};
use taopipe::nets::{Model, RandomWeights};
use taopipe::runtime::{Pipeline, Place};
use taopipe::tuner::Configuration;

use common::interrupt::Interrupt;
use common::{JsonArg, RuntimeArgs, baseline, frame_input, sayln};

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
    /// How frames run: `pipeline` (every stage works on its own frame at once: throughput)
    /// or `switch` (one frame at a time, its runs one after another, each on its own
    /// workers: ARM-CO-UP's switch mode, latency).
    #[arg(long, value_enum, default_value_t = Mode::Pipeline)]
    mode: Mode,
    /// Units per stage, e.g. `8,13` (must add up to the net's units). Default: the best
    /// CV-sorted seed with one stage per worker.
    #[arg(long, value_name = "LIST", conflicts_with = "mapping")]
    split: Option<String>,
    /// Each stage's place as `leader+width`, e.g. `0+1,1+1`. Default: contiguous runs.
    #[arg(long, value_name = "LIST", conflicts_with = "mapping")]
    places: Option<String>,
    /// A device per unit, ARM-CO-UP style, instead of `--split`/`--places`: `B` = device 0
    /// (the fastest), `L` = device 1, or digits `0`-`9` into the device list printed at
    /// start (devices = clusters split by current speed, fastest first), e.g.
    /// `BBBBBBBBBBBBBBBBBBLLL` for VGG16's 21 units. Each run of one character is a stage
    /// (pipeline mode: a device may hold only one run) or a switch-mode run.
    #[arg(long, value_name = "STRING")]
    mapping: Option<String>,
    /// A speed factor in (0, 1] per stage or run, e.g. `1.0,0.5`: its workers run at that
    /// fraction of their current (emulated) speed while it runs — DVFS, emulated. Default:
    /// all 1 (unchanged).
    #[arg(long, value_name = "LIST")]
    speeds: Option<String>,
    /// Frames to stream (each run, pipeline and baseline).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    frames: u64,
    /// Frames that may wait between two stages, 1 to 16 (every frame in flight holds a
    /// buffer set of its own, reserved before the run).
    #[arg(long, default_value_t = 2,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=16))]
    queue: usize,
    /// Seed of the random weights and inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    json: JsonArg,
}

/// ARM-CO-UP's two modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// Stages on their own workers, frames overlapping.
    Pipeline,
    /// One frame at a time, runs in turn.
    Switch,
}

fn parse_speeds(text: &str) -> anyhow::Result<Vec<f64>> {
    text.split(',')
        .map(|t| {
            let speed = t
                .trim()
                .parse::<f64>()
                .with_context(|| format!("--speeds {text}: `{t}` is not a number"))?;
            ensure!(
                speed > 0.0 && speed <= 1.0,
                "--speeds {text}: {speed} is not a speed factor in (0, 1]"
            );
            Ok(speed)
        })
        .collect()
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
    cli.json.route_text();
    let interrupt = Interrupt::install()?;
    let spec = common::zoo_net(&cli.net, &[])?;
    let rt = cli.runtime.runtime()?;
    let workers = rt.num_workers();
    let units = spec.units().len();
    // The devices (and speeds) the plan is made on, before a run scales any.
    let machine = MachineReport::of(&rt);
    let devs = &machine.devices;
    // The plan: each stage's (pipeline) or run's (switch) units and place; a pipeline
    // configuration where pipeline mode can have one.
    let (runs, config, mapping): (Vec<(Range<usize>, Place)>, Option<Configuration>, _) =
        if let Some(text) = &cli.mapping {
            let mapping = Mapping::parse(text, units, devs.len()).with_context(|| {
                format!("--mapping for {} on {} device(s)", cli.net, devs.len())
            })?;
            let runs = mapping
                .runs()
                .into_iter()
                .map(|(r, d)| (r, devs[d].place))
                .collect();
            let config = match cli.mode {
                Mode::Pipeline => {
                    let places: Vec<(usize, usize)> = devs
                        .iter()
                        .map(|d| (d.place.leader(), d.place.width()))
                        .collect();
                    Some(mapping.pipeline(&places, workers).context("--mapping")?)
                }
                Mode::Switch => None,
            };
            (runs, config, Some(mapping))
        } else {
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
                None => allowed_places(&rt).contiguous(split.len())?,
            };
            // The tuner's configuration checks the split and the places (counts, overlaps, fit).
            let config =
                Configuration::with_places(&split, &places, units, workers).with_context(|| {
                    format!(
                        "--split {split:?} with places {places:?} for {} ({units} units)",
                        cli.net
                    )
                })?;
            let runs = config
                .unit_ranges()
                .into_iter()
                .zip(config.places())
                .map(|(r, (l, w))| (r, Place::new(l, w)))
                .collect();
            (runs, Some(config), None)
        };
    for (_, place) in &runs {
        ensure!(
            rt.topology().is_allowed(*place),
            "place {place} is not allowed by the {} (leader {} may use widths {:?})",
            rt.topology().source(),
            place.leader(),
            rt.topology().allowed_widths(place.leader())
        );
    }
    let speeds = match &cli.speeds {
        Some(text) => parse_speeds(text)?,
        None => vec![1.0; runs.len()],
    };
    if speeds.len() != runs.len() {
        bail!(
            "--speeds {} gives {} factor(s), but the plan has {} {}",
            cli.speeds.as_deref().unwrap_or_default(),
            speeds.len(),
            runs.len(),
            if cli.mode == Mode::Switch {
                "run(s)"
            } else {
                "stage(s)"
            }
        );
    }
    let model = Arc::new(Model::build(spec, &RandomWeights { seed: cli.seed })?);
    sayln!("{}", rt.topology());
    sayln!("speeds: {:?}", rt.speeds());
    for (i, d) in devs.iter().enumerate() {
        sayln!("device {i}: workers {} at speed {}", d.place, d.speed);
    }
    let plan: Vec<String> = runs
        .iter()
        .zip(&speeds)
        .map(|((r, p), s)| format!("{}..{}@{p}x{s}", r.start, r.end))
        .collect();
    sayln!(
        "{}: {units} units; {:?} mode{}; units@place x speed: {}",
        cli.net,
        cli.mode,
        mapping
            .as_ref()
            .map_or(String::new(), |m| format!(" mapping {m}")),
        plan.join(" ")
    );

    // Warm-up: one frame through everything (pages in weights, sizes scratch buffers).
    model.forward(
        &rt,
        frame_input(model.input_len(), cli.seed),
        widest_place(&rt),
    )?;
    let bar = ProgressBar::new(2 * cli.frames).with_style(ProgressStyle::with_template(
        "{bar:30} {pos}/{len} frames {msg}",
    )?);
    bar.set_message("layer-parallel");
    let base = baseline(&rt, &model, cli.frames, cli.seed, &bar, &interrupt)?;

    let label = match cli.mode {
        Mode::Pipeline => "pipeline",
        Mode::Switch => "switch",
    };
    bar.set_message(label);
    let inputs = interrupt.until(common::frames(&model, cli.frames, cli.seed));
    // What the stream measured, and each stage's or run's share.
    let (run, parts): (StreamReport, Vec<PlanPart>) = match cli.mode {
        Mode::Pipeline => {
            let config = config
                .as_ref()
                .context("pipeline mode has a configuration")?;
            let pipeline =
                Pipeline::new(LiveMeasure::stages(&model, config))?.with_queue(cli.queue)?;
            LiveMeasure::reserve(&rt, &model, config, &pipeline)?;
            let scales: Vec<(Place, f64)> = runs
                .iter()
                .map(|(_, p)| *p)
                .zip(speeds.iter().copied())
                .collect();
            let _dvfs = ScaledSpeeds::apply(&rt, &scales)?; // per-stage, restored on drop
            let mut frames = inputs.map(Arc::new);
            let stop = interrupt.stop_signal();
            let stats = pipeline.run(&rt, &mut frames, |_, _| bar.inc(1), &stop)?;
            let parts = runs
                .iter()
                .zip(&speeds)
                .zip(&stats.stages)
                .map(|(((r, p), &s), st)| {
                    PlanPart::new(rt.topology(), r.clone(), *p, s, st.mean_ms())
                })
                .collect();
            (StreamReport::from_pipeline(&stats), parts)
        }
        Mode::Switch => {
            let plan = runs
                .iter()
                .zip(&speeds)
                .map(|((units, place), &speed)| SwitchRun {
                    units: units.clone(),
                    place: *place,
                    speed,
                })
                .collect();
            let stats = Switch::new(model.clone(), plan)?.run(&rt, inputs, |_, _| bar.inc(1))?;
            let parts = stats
                .runs
                .iter()
                .map(|r| {
                    PlanPart::new(
                        rt.topology(),
                        r.units.clone(),
                        r.place,
                        r.speed,
                        r.mean_ms(),
                    )
                })
                .collect();
            (StreamReport::from_switch(&stats), parts)
        }
    };
    bar.finish_and_clear();

    sayln!(
        "\n{:<16} {:>12} {:>12} {:>12}",
        "",
        "frames/s",
        "p50 ms",
        "p99 ms"
    );
    sayln!(
        "{:<16} {:>12.2} {:>12.1} {:>12.1}",
        label,
        run.throughput_fps,
        run.latency_ms.p50,
        run.latency_ms.p99
    );
    sayln!(
        "{:<16} {:>12.2} {:>12.1} {:>12.1}",
        "layer-parallel",
        base.throughput_fps,
        base.latency_ms.p50,
        base.latency_ms.p99
    );
    sayln!(
        "{label} / layer-parallel throughput: {:.2}",
        run.throughput_fps / base.throughput_fps
    );
    let part = if cli.mode == Mode::Switch {
        "run"
    } else {
        "stage"
    };
    sayln!(
        "\n{:<8} {:>8} {:>8} {:>8} {:>10}",
        part,
        "place",
        "units",
        "speed",
        "ms/frame"
    );
    for (i, p) in parts.iter().enumerate() {
        sayln!(
            "{:<8} {:>8} {:>8} {:>8} {:>10.1}",
            format!("{part}{i}"),
            format!("{}+{}", p.leader, p.width),
            format!("{}..{}", p.unit_range[0], p.unit_range[1]),
            p.speed_factor,
            p.ms_per_frame
        );
    }
    let (base_frames, run_frames) = (base.frames, run.frames);
    if let Some(json) = &cli.json.target {
        json.write(&PlanReport {
            net: model.spec().name().to_string(),
            machine,
            mode: label.into(),
            mapping: mapping.as_ref().map(ToString::to_string),
            plan: parts,
            run,
            baseline: base,
            partial: interrupt.raised(),
        })?;
    }
    interrupt.exit_if_raised(&format!(
        "{base_frames} baseline and {run_frames} {label} frame(s) run{}",
        cli.json.written()
    ));
    Ok(())
}
