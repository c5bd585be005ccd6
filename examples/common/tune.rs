//! The driver behind the `vgg16`, `alexnet`, `resnet50`, `synthetic` and `onnx` examples:
//! tune a pipeline live (or take the best seed), stream frames through it, and show the
//! layer-parallel baseline side by side. The net is a zoo net (`--net`) or an ONNX model
//! (`--onnx`); the frames are made from a seed or are the user's (`--input`, an image or a
//! raw tensor), whose top classes print at the end.
//!
//! SIGINT or SIGTERM ends it cleanly ([`super::interrupt`]): tuning between trials, serving
//! between frames; the latency run and the baseline are then skipped, the report (marked
//! `partial`) and pictures are written, and it exits with 130 or 143.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use taopipe::dsl::{NetSpec, Seeds, WeightDistribution};
use taopipe::live::input::read_frame;
use taopipe::live::report::PacedRun;
use taopipe::live::report::TopClass;
use taopipe::live::{
    Engine, Handle, LiveError, MIN_RATE_FPS, MeasureKind, SearchKind, SeedKind, TuneOptions,
    allowed_places, frames, widest_place,
};
use taopipe::nets::onnx::OnnxNet;
use taopipe::nets::{Frame, Model, RandomWeights, Weights, zoo};
use taopipe::runtime::EmulationSchedule;
use taopipe::tuner::{Configuration, StageTimes, WatchOptions};

use super::interrupt::Interrupt;
use super::{JsonArg, RuntimeArgs, zoo_net};

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
    #[arg(long, value_name = "alpha=N", value_parser = super::parse_tune)]
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
    /// How trials are measured: live (the pipeline serving frames, each stage's service
    /// time per frame), isolated (each stage alone on its workers, the paper's measurement)
    /// or pipelined (the pipeline streaming 4 frames per repetition).
    #[arg(long, default_value_t = MeasureKind::Live)]
    measure: MeasureKind,
    /// Most samples per trial (frames for live trials, repetitions after one warm-up
    /// otherwise); the medians count.
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) reps: u64,
    /// A trial stops once its slowest stage's median moved by at most this fraction with
    /// its last sample, after at least 3 samples; 0 takes every --reps sample.
    #[arg(long, default_value_t = 0.05, value_parser = parse_fraction)]
    tolerance: f64,
    /// Never re-tune while serving (by default each stage's service time is watched and a
    /// sustained change re-tunes on live frames).
    #[arg(long)]
    no_retune: bool,
    /// Relative shift of a stage's median service time, over the watch window, that
    /// triggers a re-tune.
    #[arg(long, default_value_t = 0.25, value_parser = parse_fraction)]
    retune_threshold: f64,
    /// α of each re-tune while serving, at least 1 (it starts warm, from seeds ranked for
    /// the speeds just measured; a first tuning uses --tune's α).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = at_least_one())]
    retune_alpha: usize,
    /// Frames in the watch window (a change must last more than half of them).
    #[arg(long, default_value_t = 9, value_parser = clap::value_parser!(u64).range(1..))]
    retune_window: u64,
    /// Change the emulated speeds during the run: `TIME:SPEC` steps, e.g.
    /// `0s:none,20s:w1=powersave,40s:none` (SPEC as for --emulate; `none`: full speed).
    #[arg(long, value_name = "SCHEDULE")]
    emulate_schedule: Option<EmulationSchedule>,
    /// A real noisy neighbour during the run: `CPU:START-STOP` runs a busy loop pinned to
    /// OS CPU `CPU` (`taskset -c CPU sh -c 'while :; do :; done'`) from START to STOP
    /// seconds after serving starts, e.g. `1:20-40`; the report marks both moments. A CPU
    /// that `taskset` cannot pin to is refused at start.
    #[arg(long, value_name = "CPU:START-STOP", value_parser = parse_hog)]
    hog: Option<Hog>,
    /// Offer frames at this many per second, as a camera does, and measure latency from
    /// each frame's due time. Without it the run saturates the pipeline (its throughput
    /// counts) and a second, short run at 80% of that throughput measures latency.
    #[arg(long, value_name = "FPS", value_parser = parse_fps)]
    rate: Option<f64>,
    /// Serve for this many seconds instead of --frames frames (the baseline still runs
    /// --frames frames).
    #[arg(long, value_name = "S", value_parser = parse_seconds)]
    seconds: Option<f64>,
    /// Write SVG pictures of the run into this folder: run.svg (throughput and stage times
    /// over time, changes and re-tunes marked, the search trajectory) and balance.svg (the
    /// chosen pipeline's stage balance). DIR is created if missing; checked at start: it
    /// must be a folder, or its nearest existing ancestor one that takes a new file.
    #[arg(long, value_name = "DIR", value_parser = super::output_folder)]
    plots: Option<PathBuf>,
    /// Most stages to consider (C), at least 1. Default: one per worker.
    #[arg(long, value_parser = at_least_one())]
    max_stages: Option<usize>,
    /// Frames to stream through the chosen pipeline, and through the baseline.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    frames: u64,
    /// The net (zoo name, or `random` for a seeded random synthetic net).
    #[arg(long)]
    net: Option<String>,
    /// An ONNX model to run instead of a zoo net, with its own weights: any CNN of the ops
    /// taopipe runs (`taopipe_nets::onnx` lists them), e.g. a torchvision export.
    #[arg(long, value_name = "FILE", conflicts_with = "net")]
    onnx: Option<PathBuf>,
    /// The frame to serve, again and again: an image (.png, .jpg: resized, centre-cropped
    /// and normalised as torchvision's ImageNet evaluation does) or a raw little-endian f32
    /// tensor in CHW order. Its top classes print at the end. Default: frames made from --seed.
    #[arg(long, value_name = "FILE")]
    input: Option<PathBuf>,
    /// Write the output of the last frame served here (raw little-endian f32, replaced
    /// whole; its folder must exist and take a new file: checked at start).
    #[arg(long, value_name = "FILE", value_parser = super::output_file)]
    output: Option<PathBuf>,
    /// Depth of a `random` net.
    #[arg(long, default_value_t = 16)]
    depth: usize,
    /// Seed of the random weights, inputs, random nets and random search.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    json: JsonArg,
}

/// `--hog`: a CPU and when the busy loop runs.
#[derive(Debug, Clone, Copy)]
struct Hog {
    cpu: usize,
    start: f64,
    stop: f64,
}

/// `CPU:START-STOP` with START < STOP, in seconds.
fn parse_hog(text: &str) -> Result<Hog, String> {
    let bad = || format!("`{text}`: expected CPU:START-STOP in seconds, e.g. `1:20-40`");
    let (cpu, span) = text.split_once(':').ok_or_else(bad)?;
    let (start, stop) = span.split_once('-').ok_or_else(bad)?;
    let hog = Hog {
        cpu: cpu.parse().map_err(|_| bad())?,
        start: start.parse().map_err(|_| bad())?,
        stop: stop.parse().map_err(|_| bad())?,
    };
    if !(hog.start >= 0.0 && hog.stop > hog.start && hog.stop.is_finite()) {
        return Err(format!("`{text}`: START must be ≥ 0 and before STOP"));
    }
    Ok(hog)
}

/// Checks that `taskset` can pin to the hog's CPU, so that a CPU this process may not use
/// (or a missing `taskset`) fails before any work, not silently in the middle of the run.
fn check_hog(hog: Hog) -> anyhow::Result<()> {
    let cpu = hog.cpu.to_string();
    let out = std::process::Command::new("taskset")
        .args(["-c", &cpu, "true"])
        .stdin(std::process::Stdio::null())
        .output()
        .with_context(|| format!("--hog: CPU {cpu}: running `taskset` (util-linux)"))?;
    anyhow::ensure!(
        out.status.success(),
        "--hog: CPU {cpu} cannot be used: `taskset -c {cpu}` says: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(())
}

/// Runs `hog` beside the run that starts now, marking its start and stop on `handle`;
/// stops early (killing the loop) when `done` is raised.
fn run_hog(hog: Hog, handle: Handle, done: &AtomicBool) -> anyhow::Result<()> {
    let t0 = Instant::now();
    let wait_until = |s: f64| {
        while t0.elapsed().as_secs_f64() < s && !done.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    wait_until(hog.start);
    if done.load(Ordering::Acquire) {
        return Ok(());
    }
    let mut child = std::process::Command::new("taskset")
        .args([
            "-c",
            &hog.cpu.to_string(),
            "sh",
            "-c",
            "while :; do :; done",
        ])
        .spawn()
        .context("--hog: starting `taskset` (util-linux)")?;
    handle.mark(format!("hog on CPU {}", hog.cpu));
    wait_until(hog.stop);
    child.kill().ok();
    child.wait().ok();
    handle.mark(format!("hog off CPU {}", hog.cpu));
    Ok(())
}

/// A fraction in [0, 1).
fn parse_fraction(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if (0.0..1.0).contains(&x) => Ok(x),
        _ => Err(format!(
            "`{text}`: expected a fraction in [0, 1), e.g. 0.15"
        )),
    }
}

/// A positive finite number.
pub(crate) fn parse_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("`{text}`: expected a positive number")),
    }
}

/// A frame rate the engine paces at: at least [`MIN_RATE_FPS`].
pub(crate) fn parse_fps(text: &str) -> Result<f64, String> {
    match parse_rate(text)? {
        fps if fps >= MIN_RATE_FPS => Ok(fps),
        _ => Err(format!(
            "`{text}`: the lowest rate paced is {MIN_RATE_FPS:e} frames/s"
        )),
    }
}

/// A positive number of seconds that a `Duration` holds.
fn parse_seconds(text: &str) -> Result<f64, String> {
    let seconds = parse_rate(text)?;
    Duration::try_from_secs_f64(seconds)
        .map_err(|_| format!("`{text}`: too many seconds for a duration"))?;
    Ok(seconds)
}

/// The value parser of a count that must be at least 1.
fn at_least_one() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::new().range(1..)
}

fn load_net(name: &str, cli: &TuneCli) -> anyhow::Result<NetSpec> {
    if name == "random" {
        let dist = WeightDistribution::LogUniform { min: 1, max: 64 };
        return zoo::random_net(cli.seed, cli.depth, dist)
            .with_context(|| format!("--net random --depth {}", cli.depth));
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
        sayln!(
            "{:>5}  {:<36} {:>12}  stage ms",
            "trial",
            "configuration",
            "slowest ms"
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
        shown.suspend(|| sayln!("{line}"));
        shown.set_message(format!("last {:.1} ms", times.slowest_ms()));
        if shown.position() + 1 >= shown.length().unwrap_or(0) {
            shown.inc_length(1); // a search may run past its expected count
        }
        shown.inc(1);
    };
    Ok((bar, print))
}

/// Runs the tool for the example `default_net` (`None`: the `onnx` example, whose net is
/// `--onnx`'s).
pub(crate) fn main(default_net: Option<&str>) -> anyhow::Result<()> {
    let cli = TuneCli::parse();
    cli.json.route_text();
    if let Some(hog) = cli.hog {
        check_hog(hog)?;
    }
    let interrupt = Interrupt::install()?;
    let (name, spec, weights): (String, NetSpec, Box<dyn Weights>) =
        match (&cli.onnx, cli.net.as_deref(), default_net) {
            (Some(path), _, _) => {
                let onnx =
                    OnnxNet::open(path).with_context(|| format!("--onnx {}", path.display()))?;
                (
                    onnx.spec().name().to_string(),
                    onnx.spec().clone(),
                    Box::new(onnx.into_weights()),
                )
            }
            (None, Some(name), _) | (None, None, Some(name)) => (
                name.to_string(),
                load_net(name, &cli)?,
                Box::new(RandomWeights { seed: cli.seed }),
            ),
            (None, None, None) => {
                bail!("pass --onnx FILE (an ONNX model) or --net NAME (a zoo net)")
            }
        };
    // Read the input before the (long) model build, so a bad file fails at once.
    let input = match &cli.input {
        Some(path) => Some(read_frame(path, spec.input()).context("--input")?),
        None => None,
    };
    let rt = cli.runtime.runtime()?;
    let workers = rt.num_workers();
    let units = spec.units().len();
    let c = cli.max_stages.unwrap_or(workers).min(workers).min(units);
    let model =
        Arc::new(Model::build(spec, weights.as_ref()).with_context(|| format!("building {name}"))?);
    drop(weights);
    // The frames of every run: the user's, or made from the seed.
    let frames = |count: u64| -> Box<dyn Iterator<Item = Frame> + Send> {
        match &input {
            Some(x) => {
                let (model, x) = (model.clone(), x.clone());
                Box::new((0..count).map(move |_| {
                    model
                        .frame_from(&x)
                        .expect("--input has the model's input length")
                }))
            }
            None => Box::new(frames(&model, count, cli.seed)),
        }
    };
    sayln!("{}", rt.topology());
    sayln!("speeds: {:?}", rt.speeds());
    sayln!(
        "{name}: {units} units, {:.2} GFLOP per frame; stage counts 1..={c}",
        model.flops() as f64 / 1e9
    );
    let options = TuneOptions {
        search: cli.search,
        alpha: cli.tune.unwrap_or(10),
        max_stages: Some(c),
        reps: cli.reps as usize,
        tolerance: cli.tolerance,
        measure: cli.measure,
        seeds: cli.seeds,
        seed: cli.seed,
        watch: (!cli.no_retune).then_some(WatchOptions {
            window: cli.retune_window as usize,
            threshold: cli.retune_threshold,
        }),
        retune_alpha: cli.retune_alpha,
    };
    let mut engine = Engine::new(&rt, model.clone(), options)?.with_stop(interrupt.stop_signal());
    if let Some(spec) = &cli.runtime.emulate {
        engine = engine.with_emulation(spec.to_string());
    }
    if let Some(schedule) = &cli.emulate_schedule {
        engine = engine
            .with_schedule(schedule.clone())
            .with_context(|| format!("--emulate-schedule {schedule}"))?;
    }
    engine.set_rate(cli.rate)?;
    match cli.tune {
        Some(_) => {
            let (bar, print) = trial_printer(engine.options().expected_trials(&rt, &model))?;
            let tuned = engine.tune(print);
            bar.finish_and_clear();
            match tuned {
                Ok(found) => {
                    let algorithm = cli.search.to_string();
                    sayln!(
                        "\n{}",
                        taopipe::tuner::Report::new(&algorithm, cli.tune, found)
                    );
                }
                Err(LiveError::Stopped) => sayln!("tuning stopped before its first trial"),
                Err(e) => return Err(e.into()),
            }
        }
        None if c >= 2 => {
            let seeds = Seeds::from_net(model.spec(), c)?;
            let seed = seeds.top_k(c, 1)?.into_iter().next().context("no seed")?;
            sayln!(
                "not tuned (pass --tune alpha=N): running the best-CV seed {:?}",
                seed.composition
            );
            let places = allowed_places(&rt);
            engine.serve(Configuration::contiguous_on(&seed.composition, &places)?)?;
        }
        None => sayln!(
            "one stage: {units} unit(s) on {} of {workers} worker(s)",
            widest_place(&rt)
        ),
    }

    // Serve frames (watched, re-tuned on change), then the layer-parallel baseline.
    let bar = match cli.seconds {
        Some(s) => ProgressBar::new(s.ceil() as u64).with_style(ProgressStyle::with_template(
            "{bar:30} {pos}/{len} s, {msg}",
        )?),
        None => ProgressBar::new(cli.frames).with_style(ProgressStyle::with_template(
            "{bar:30} {pos}/{len} frames, {elapsed} {msg}",
        )?),
    };
    bar.set_message("serving");
    let started = Instant::now();
    let count = if cli.seconds.is_some() {
        u64::MAX
    } else {
        cli.frames
    };
    let until = cli.seconds.map(Duration::from_secs_f64);
    let source = frames(count).take_while(move |_| until.is_none_or(|u| started.elapsed() < u));
    // The line a script (or the interrupt tests) can wait for: serving has begun.
    sayln!(
        "serving {}: {}",
        engine.configuration(),
        match cli.seconds {
            Some(s) => format!("{s} s"),
            None => format!("{} frames", cli.frames),
        }
    );
    let mut served = 0u64;
    let mut last = vec![0.0; model.output_len()];
    let done = AtomicBool::new(false);
    let handle = engine.handle();
    let mut report = std::thread::scope(|s| {
        let done = &done;
        let hog = cli
            .hog
            .map(|hog| s.spawn(move || run_hog(hog, handle, done)));
        let report = engine.run(source, |_, frame| {
            frame.output_into(&mut last);
            served += 1;
            match cli.seconds {
                Some(_) => {
                    bar.set_position(started.elapsed().as_secs());
                    bar.set_message(format!("{served} frames"));
                }
                None => bar.inc(1),
            }
        });
        done.store(true, Ordering::Release);
        if let Some(h) = hog {
            h.join()
                .map_err(|_| anyhow::anyhow!("--hog thread panicked"))??;
        }
        anyhow::Ok(report?)
    })?;
    bar.finish_and_clear();
    if cli.rate.is_none() && report.run.throughput_fps > 0.0 && !interrupt.raised() {
        // Latency at a sustainable rate, in a run of its own.
        let rate = 0.8 * report.run.throughput_fps;
        let latency_frames = cli.frames.min(30);
        sayln!("latency: {latency_frames} frames offered at {rate:.2}/s");
        engine.clear_schedule();
        engine.set_rate(Some(rate))?;
        let paced = engine.run(frames(latency_frames), |_, _| {})?;
        report.latency_run = Some(PacedRun {
            rate_fps: rate,
            stream: paced.run,
        });
    }
    if !interrupt.raised() {
        // (A signal during it ends it between frames: the engine holds the stop.)
        sayln!("layer-parallel baseline: {} frames", cli.frames);
        report.baseline = Some(engine.baseline(frames(cli.frames), |_, _| {})?);
    }
    // What was skipped, or cut, for a signal makes the whole report partial.
    report.partial |= interrupt.raised();

    sayln!(
        "\nconfiguration served at the end: {}",
        engine.configuration()
    );
    say!("{report}");
    if served > 0 {
        let top: Vec<String> = TopClass::top(&last, 5)
            .iter()
            .map(|c| format!("{}: {:.4}", c.class, c.score))
            .collect();
        sayln!(
            "top classes of the last frame served (index: score): {}",
            top.join(", ")
        );
        if let Some(path) = &cli.output {
            super::write_f32_file(path, &last).context("--output")?;
            sayln!(
                "output ({} values) written to {}",
                last.len(),
                path.display()
            );
        }
    }
    if let Some(json) = &cli.json.target {
        json.write(&report)?;
    }
    if let Some(dir) = &cli.plots {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--plots: creating {}", dir.display()))?;
        let (run, balance) = (dir.join("run.svg"), dir.join("balance.svg"));
        taopipe::live::plot::run_svg(&report, &run)?;
        taopipe::live::plot::balance_svg(&report, &balance)?;
        sayln!("pictures: {} and {}", run.display(), balance.display());
    }
    let trials = report.tuning.as_ref().map_or(0, |t| t.search.trials.len());
    interrupt.exit_if_raised(&format!(
        "stopped after {trials} trial(s) and {} frame(s) served{}",
        report.run.frames,
        cli.json.written()
    ));
    Ok(())
}
