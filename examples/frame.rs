//! Run frames of a zoo net through the runtime and print the time per frame.
//!
//! ```text
//! cargo run --release --example frame -- --net vgg16
//! cargo run --release --example frame -- --net resnet50 --width 1 --frames 10 --check
//! cargo run --release --example frame -- --net vgg16 --weights vgg16.safetensors --json frame.json
//! cargo run --release --example frame -- --net resnet50 --width 1 --frames 10 --profile
//! cargo run --release --example frame -- --net vgg16 --width 2 --peak
//! cargo run --release --example frame -- --net resnet50 --width 2 --trace trace.json
//! cargo run --release --example frame -- --net vgg16 --input x.f32 --output y.f32 --serve
//! ```
//! Weights are random (from `--seed`) unless `--weights` names a safetensors file exported
//! from torchvision (see `taopipe_nets::weights`). Every layer runs as one moldable task on
//! one place: `0+width` with `--width`, else the widest place the runtime's layout allows
//! (all workers without a layout file; `taopipe_live::widest_place`). A `--width` the
//! layout forbids at leader 0 is an error naming the widths it allows. `--check` also runs
//! each frame on one worker and fails unless the outputs are bit-identical. `--profile` adds each layer's time and GFLOP/s, read from
//! the runtime's trace table (a moving average over the frames run).
//!
//! The program's own thread submits each frame and waits for it. Where the runtime pins
//! its workers it is pinned too, to the CPU of the place's first worker
//! (`Runtime::pin_caller`), unless `--unpinned-caller`.
//!
//! `--peak` measures the machine's limits in the same run (`probe::limits_on`): the FMA
//! peak and the read and copy bandwidth of one worker, and of the place's workers at once.
//! A frame's GFLOP/s is then also given as a share of the place's peak, and how far the
//! machine itself scales from one worker to the place bounds what any width can gain.
//!
//! `--serve` keeps the built model for another program to time (the peer benchmark in
//! `bench/peers/` drives one per width): after a warm-up frame it prints `ready`, then reads
//! one command a line from stdin — a frame count `N` (1 to 100 000) runs `N` frames and
//! answers one JSON line `{"ms":[…]}` with each frame's milliseconds; `limits` measures as
//! `--peak` does and answers `{"limits":[…]}` (one worker, then the place if wider: the
//! JSON report's `limits`); `quit` or the end of stdin exits (and writes `--output`); any
//! other line is an error. After `ready`, stdout carries nothing but those answers.
//!
//! SIGINT or SIGTERM during the timed frames (`common::interrupt`) lets the frame in
//! progress finish, prints and writes what ran (`--json` with `"partial": true`, `--output`
//! from the last frame done), and exits with 130 or 143. `--serve` keeps the default
//! disposition: a signal ends it at once (its driver owns it, and it writes no report).

mod common;

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail, ensure};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use taopipe::live::input::read_frame;
use taopipe::live::output::write_atomic;
use taopipe::live::report::{
    FrameReport, LayerTimeReport, LimitsReport, TimelineReport, chrome_trace,
};
use taopipe::live::{allowed_places, widest_place};
use taopipe::nets::onnx::OnnxNet;
use taopipe::nets::{
    BuildOptions, ConvAlgo, Isa, LayerTime, Model, RandomWeights, SafetensorsFile, Weights,
};
use taopipe::runtime::{Place, Runtime};

use common::interrupt::Interrupt;
use common::{JsonArg, RuntimeArgs, frame_input, sayln};

/// Runs frames of a zoo net (VGG16, ResNet50, MobileNetV2, …) or an ONNX model through the
/// taopipe runtime,
/// every layer a moldable task on the same workers, and prints the time per frame, the
/// throughput in GFLOP/s and the top classes.
///
/// With --serve it instead waits for commands on stdin (for a benchmark driving it): it
/// prints `ready` after one warm-up frame, then answers each line `N` (a frame count from
/// 1 to 100000) with one JSON line `{"ms":[...]}`, the time of each of the N frames in ms,
/// and the line `limits` with `{"limits":[...]}`, what --peak measures; `quit` or the end
/// of stdin exits, any other line is an error.
#[derive(Debug, Parser)]
#[command(version, about, long_about)]
struct Cli {
    #[command(flatten)]
    runtime: RuntimeArgs,
    /// The net: a zoo name (vgg16, alexnet, resnet50, mobilenet_v2, mobilenet_v1,
    /// squeezenet1_1, googlenet, yolov2_tiny, synth1, synth2, synth3).
    #[arg(long, default_value = "vgg16")]
    net: String,
    /// An ONNX model to run instead of a zoo net, with its own weights (any CNN of the ops
    /// `taopipe_nets::onnx` lists).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["net", "weights"])]
    onnx: Option<PathBuf>,
    /// Workers each layer runs on (the place 0+width; the layout must allow it). Default:
    /// all of them, or the widest place a --layout file allows.
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
    /// The input frame: an image (.png, .jpg: resized, centre-cropped and normalised as
    /// torchvision's ImageNet evaluation does), or else a raw little-endian f32 tensor in CHW
    /// order with exactly the net's input length (3x224x224 = 602112 values for the ImageNet
    /// nets). Default: a frame made from --seed.
    #[arg(long, value_name = "FILE")]
    input: Option<PathBuf>,
    /// Write the last frame's output here as raw little-endian f32 (the file is replaced
    /// whole). Its folder must exist and take a new file: checked at start.
    #[arg(long, value_name = "FILE", value_parser = common::output_file)]
    output: Option<PathBuf>,
    /// Also run every frame on one worker and fail unless the outputs are bit-identical.
    #[arg(long)]
    check: bool,
    /// Convolution algorithms: `auto` (Winograd F(4×4,3×3), F(2×2,3×3) or F(2×2,5×5) where
    /// it pays off, else the channel-lanes direct conv where that does, else im2col and the
    /// GEMM), `direct` (im2col and the GEMM everywhere), `lanes` (the channel-lanes conv
    /// everywhere) or `winograd` (F(4×4,3×3) on every 3×3 stride-1 conv), the last three
    /// for A/B runs.
    #[arg(long, value_enum, default_value_t = ConvChoice::Auto)]
    conv: ConvChoice,
    /// Give every layer an output buffer of its own instead of the memory plan's shared
    /// ones (for A/B runs: a frame then writes every activation to memory cold in cache,
    /// and every concat copies its inputs).
    #[arg(long)]
    keep_outputs: bool,
    /// Leave this program's own thread, which submits the frames and waits for them, where
    /// the OS puts it, instead of pinning it to the CPU of the place's first worker
    /// (`Runtime::pin_caller`: it then hands each frame to a worker still spinning there
    /// and is woken on a CPU that is not asleep); for A/B runs.
    #[arg(long)]
    unpinned_caller: bool,
    #[command(flatten)]
    json: JsonArg,
    /// Serve frames on request: after a warm-up frame print `ready`, then read commands
    /// from stdin, one a line: `N` runs N frames and prints `{"ms":[...]}`, `quit` (or the
    /// end of stdin) exits. No progress bar, no table.
    #[arg(long, conflicts_with_all = ["frames", "json", "profile"])]
    serve: bool,
    /// Also print each layer's time and GFLOP/s at the place (the runtime trace table's
    /// moving average over the frames) and add them to the JSON report.
    #[arg(long)]
    profile: bool,
    /// Also measure the machine's limits before the frames (about 2 s): the FMA peak and
    /// the read and copy bandwidth of one worker and of the place's workers at once. Prints
    /// them, the frames' GFLOP/s as a share of the place's peak, and adds them to the JSON
    /// report.
    #[arg(long, conflicts_with = "serve")]
    peak: bool,
    /// Record every rank's span of every layer over the timed frames and write them to FILE
    /// as a Chrome trace (open it in ui.perfetto.dev or chrome://tracing: a row per worker).
    /// Also prints, per frame, the ranks' time inside layers and how long a rank waited for
    /// the last one at the layers' ends, and adds them to the JSON report.
    #[arg(long, value_name = "FILE", value_parser = common::output_file, conflicts_with_all = ["serve", "check"])]
    trace: Option<PathBuf>,
}

/// What every timed frame needs.
struct Runner<'a> {
    model: &'a Model,
    rt: &'a Runtime,
    isa: Isa,
    input: &'a [f32],
    place: Place,
    /// A place of one worker (`--peak`'s and `limits`' baseline).
    one_worker: Place,
    /// With `--check`: the one-worker place every frame is compared with.
    check: Option<Place>,
}

impl Runner<'_> {
    /// Runs one frame on `place` and returns its time in ms and its output; with `check`
    /// also on that one worker, failing unless the outputs are bit-identical.
    fn frame(&self) -> anyhow::Result<(f64, Vec<f32>)> {
        // A pooled frame borrows the input (no per-frame copy of it into a fresh `Vec`, as
        // `Model::forward` takes), as a serving loop would run it.
        let t = Instant::now();
        let frame = self.model.frame_from(self.input)?;
        self.model.run(self.rt, &frame, self.place)?;
        let output = frame.output();
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if let Some(one_place) = self.check {
            let one = self
                .model
                .forward(self.rt, self.input.to_vec(), one_place)?;
            let same = one
                .iter()
                .zip(&output)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            ensure!(
                same,
                "place {} and place {one_place} outputs differ",
                self.place
            );
        }
        Ok((ms, output))
    }

    /// The machine's limits on one worker and on the place (`--peak`, `limits`).
    fn limits(&self) -> anyhow::Result<Vec<LimitsReport>> {
        Ok(LimitsReport::measure(
            self.rt,
            self.isa,
            self.one_worker,
            self.place,
        )?)
    }
}

/// The place every layer runs on: `0+width` for `--width`, checked against the runtime's
/// workers and layout, else the widest place the layout allows.
fn frame_place(rt: &Runtime, width: Option<usize>) -> anyhow::Result<Place> {
    let Some(width) = width else {
        return Ok(widest_place(rt));
    };
    ensure!(
        (1..=rt.num_workers()).contains(&width),
        "--width {width}: this runtime has {} worker(s)",
        rt.num_workers()
    );
    let places = allowed_places(rt);
    ensure!(
        places.allows(0, width),
        "--width {width}: the {} allows leader 0 only widths {:?}",
        rt.topology().source(),
        places.widths(0)
    );
    Ok(Place::new(0, width))
}

/// `--conv`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ConvChoice {
    Auto,
    Direct,
    Lanes,
    Winograd,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    cli.json.route_text();
    let interrupt = if cli.serve {
        None
    } else {
        Some(Interrupt::install()?)
    };
    // A bad `TAOPIPE_ISA` fails here, before anything long.
    let isa = Isa::current()?;
    let (name, spec, onnx) = match &cli.onnx {
        Some(path) => {
            let onnx = OnnxNet::open(path).with_context(|| format!("--onnx {}", path.display()))?;
            (
                onnx.spec().name().to_string(),
                onnx.spec().clone(),
                Some(onnx.into_weights()),
            )
        }
        None => (cli.net.clone(), common::zoo_net(&cli.net, &[])?, None),
    };
    // Read the input before the (long) model build, so a bad file fails at once.
    let shape = spec.input();
    let input_len = shape.c * shape.h * shape.w;
    let input = match &cli.input {
        Some(path) => read_frame(path, shape).context("--input")?,
        None => frame_input(input_len, cli.seed),
    };
    let rt = cli.runtime.runtime()?;
    let place = frame_place(&rt, cli.width)?;
    // Every worker leads some place of width 1 (the last one at least).
    let one_worker = (0..rt.num_workers())
        .map(|leader| Place::new(leader, 1))
        .find(|&p| rt.topology().is_allowed(p))
        .context("no place of one worker")?;
    let weights: Box<dyn Weights> = match (onnx, &cli.weights) {
        (Some(onnx), _) => Box::new(onnx),
        (None, Some(path)) => Box::new(SafetensorsFile::open(path)?),
        (None, None) => Box::new(RandomWeights { seed: cli.seed }),
    };
    let started = Instant::now();
    let options = BuildOptions {
        isa: Some(isa),
        conv: match cli.conv {
            ConvChoice::Auto => None,
            ConvChoice::Direct => Some(ConvAlgo::Direct),
            ConvChoice::Lanes => Some(ConvAlgo::Lanes),
            ConvChoice::Winograd => Some(ConvAlgo::Winograd),
        },
        keep_outputs: cli.keep_outputs,
    };
    let model = Model::build_with(spec, weights.as_ref(), &options)
        .with_context(|| format!("building {name}"))?;
    let build = started.elapsed();
    sayln!("{}", rt.topology());
    // Where the workers are pinned, so is this thread: onto the place's first worker's CPU.
    let caller = if !cli.unpinned_caller && rt.pin_caller(place.leader())? {
        format!("on worker {}'s CPU", place.leader())
    } else {
        "unpinned".to_string()
    };
    sayln!(
        "isa: {isa}; convolutions: {:?}; this thread (the frames' caller) {caller}",
        cli.conv
    );
    sayln!(
        "{}: {} layers, {} units, {:.2} GFLOP and {:.1} MB of buffers per frame ({:.1} MB of them the gangs' workspace, allocated on first use; {} residual adds and {} concats in place); built in {:.2} s; {}, {} input; on place {place}",
        name,
        model.spec().len(),
        model.spec().units().len(),
        model.flops() as f64 / 1e9,
        model.frame_floats() as f64 * 4e-6,
        model.workspace_floats() as f64 * 4e-6,
        model.in_place_layers(),
        model.joined_concats(),
        build.as_secs_f64(),
        if cli.onnx.is_some() {
            "ONNX weights"
        } else if cli.weights.is_some() {
            "file weights"
        } else {
            "random weights"
        },
        if cli.input.is_some() {
            "file"
        } else {
            "seeded"
        },
    );
    let runner = Runner {
        model: &model,
        rt: &rt,
        isa,
        input: &input,
        place,
        one_worker,
        check: cli.check.then_some(one_worker),
    };
    // Warm-up: page in weights, size scratch.
    let (_, warm_output) = runner.frame()?;
    let (output, timed) = match &interrupt {
        Some(interrupt) => timed_run(&cli, &runner, &options, warm_output, interrupt)?,
        None => (serve(&runner, warm_output)?, 0),
    };
    if let Some(path) = &cli.output {
        common::write_f32_file(path, &output).context("--output")?;
    }
    if let Some(interrupt) = &interrupt {
        interrupt.exit_if_raised(&format!(
            "{timed} of {} frame(s) timed{}",
            cli.frames,
            cli.json.written()
        ));
    }
    Ok(())
}

/// Most frames one `--serve` command may ask for (its answer holds one time per frame).
const MAX_SERVE_FRAMES: u32 = 100_000;

/// Longest `--serve` command line read, newline excluded: a longer one is an error, not a
/// read without end (`frame --serve < /dev/zero` once read until memory ran out).
const MAX_COMMAND_BYTES: u64 = 64;

/// `--serve`: answers frame counts from stdin until `quit` or its end; returns the last
/// frame's output (`output`, the warm-up frame's, if none ran).
fn serve(runner: &Runner<'_>, mut output: Vec<f32>) -> anyhow::Result<Vec<f32>> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "ready")?;
    stdout.flush()?;
    let mut stdin = std::io::stdin().lock();
    let mut bytes = Vec::new();
    for n in 0.. {
        bytes.clear();
        let read = (&mut stdin)
            .take(MAX_COMMAND_BYTES + 1)
            .read_until(b'\n', &mut bytes)
            .context("--serve: reading stdin")?;
        if read == 0 {
            break; // the end of stdin
        }
        if bytes.last() == Some(&b'\n') {
            bytes.pop();
        } else if read as u64 > MAX_COMMAND_BYTES {
            bail!(
                "--serve: line {}: longer than {MAX_COMMAND_BYTES} bytes (starts `{}`)",
                n + 1,
                String::from_utf8_lossy(&bytes[..16]).escape_debug()
            );
        }
        let line = String::from_utf8_lossy(&bytes);
        let command = line.trim();
        if command == "quit" {
            break;
        }
        if command == "limits" {
            writeln!(stdout, "{}", json!({ "limits": runner.limits()? }))?;
            stdout.flush()?;
            continue;
        }
        let count = match command.parse::<u32>() {
            Ok(count) if (1..=MAX_SERVE_FRAMES).contains(&count) => count,
            _ => bail!(
                "--serve: line {}: `{}` is neither a frame count in 1..={MAX_SERVE_FRAMES} nor `limits` nor `quit`",
                n + 1,
                line.escape_debug()
            ),
        };
        let mut ms = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let (t, out) = runner.frame()?;
            ms.push(t);
            output = out;
        }
        // The answer of the `--serve` protocol (module docs), not a report: one line that
        // `bench/peers/peers.py` reads, a literal as its module docs spell it.
        writeln!(stdout, "{}", json!({ "ms": ms }))?;
        stdout.flush()?;
    }
    Ok(output)
}

/// The default mode: `--frames` frames with a progress bar, then the times and top classes
/// (and `--json`; `options`: what the model was built with); returns the last frame's
/// output (`output`, the warm-up frame's, if a signal came before any) and the frames
/// timed. A signal ends it between frames.
fn timed_run(
    cli: &Cli,
    runner: &Runner<'_>,
    options: &BuildOptions,
    mut output: Vec<f32>,
    interrupt: &Interrupt,
) -> anyhow::Result<(Vec<f32>, usize)> {
    let model = runner.model;
    let limits = if cli.peak {
        let limits = runner.limits()?;
        for l in &limits {
            sayln!("limits, measured now: {l}");
        }
        if let [one, place] = limits.as_slice() {
            sayln!(
                "limits: the place's {} workers reach {:.2}× one worker's FMA peak, {:.2}× its read bandwidth",
                place.workers,
                place.fma_gflops / one.fma_gflops,
                place.read_gbs / one.read_gbs
            );
        }
        Some(limits)
    } else {
        None
    };
    let bar = ProgressBar::new(u64::from(cli.frames)).with_style(ProgressStyle::with_template(
        "{bar:30} {pos}/{len} frames {msg}",
    )?);
    if cli.trace.is_some() {
        // Room for every rank of every layer of every frame: one span per worker each.
        let layers = model.spec().layers().len();
        runner.rt.record_spans(cli.frames as usize * layers);
    }
    let mut ms: Vec<f64> = Vec::new();
    for _ in 0..cli.frames {
        if interrupt.raised() {
            break;
        }
        let (t, out) = runner.frame()?;
        ms.push(t);
        output = out;
        bar.set_message(format!("{t:.1} ms"));
        bar.inc(1);
    }
    bar.finish_and_clear();
    let timed = ms.len();
    let timeline = match &cli.trace {
        Some(path) => Some(write_trace(runner, path, timed)?),
        None => None,
    };
    let mut report = FrameReport::new(
        model,
        options,
        runner.rt.num_workers(),
        runner.place,
        ms,
        &output,
    );
    let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
    if let Some(weights) = path(&cli.weights) {
        report.weights = weights;
    }
    if let Some(input) = path(&cli.input) {
        report.input = input;
    }
    report.checked_width1 = cli.check;
    report.limits = limits;
    report.timeline = timeline;
    report.partial = interrupt.raised();
    // No median when a signal came before the first timed frame.
    if let (Some(median), Some(gflops)) = (report.median_ms, report.gflops) {
        let min = report
            .frame_ms
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        sayln!(
            "time per frame: median {median:.1} ms, min {min:.1} ms ({timed} frames: {:?})",
            report
                .frame_ms
                .iter()
                .map(|m| (m * 10.0).round() / 10.0)
                .collect::<Vec<_>>()
        );
        let share = match report.limits.as_ref().and_then(|l| l.last()) {
            Some(l) => format!(
                " ({:.0}% of the place's FMA peak measured now; Winograd layers count the direct path's FLOPs)",
                100.0 * gflops / l.fma_gflops
            ),
            None => String::new(),
        };
        sayln!(
            "throughput: {:.2} frames/s, {gflops:.1} GFLOP/s{share}",
            1e3 / median
        );
    }
    if let Some(one_worker) = runner.check {
        sayln!("check: every frame bit-identical to one worker ({one_worker})");
    }
    if cli.profile {
        let times = model.layer_times(&runner.rt.trace_table(), runner.place);
        if let Some(median) = report.median_ms {
            print_profile(&times, median);
        }
        report.layer_times = Some(times.iter().map(LayerTimeReport::from).collect());
    }
    sayln!(
        "top classes (index: score): {}",
        report
            .top5
            .iter()
            .map(|c| format!("{}: {:.4}", c.class, c.score))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Some(json) = &cli.json.target {
        json.write(&report)?;
    }
    Ok((output, timed))
}

/// `--trace`: takes the spans of the timed frames, writes them to `path` as a Chrome trace
/// and prints what they add up to per frame.
fn write_trace(runner: &Runner<'_>, path: &Path, frames: usize) -> anyhow::Result<TimelineReport> {
    let spans = runner.rt.take_spans();
    let layers = runner.model.spec().layers();
    let name = |kind: &str, hint: u64| match layers.get(hint as usize) {
        Some(layer) => layer.name().to_string(),
        None => format!("{kind} {hint}"),
    };
    let json = serde_json::to_vec(&chrome_trace(&spans, name))?;
    write_atomic(path, json).with_context(|| format!("writing {}", path.display()))?;
    let t = TimelineReport::new(&spans, frames, name);
    sayln!(
        "trace: {} spans ({} dropped) in {}; per frame, the ranks spent {:.2} ms in layers, \
         and {:.2} ms passed from a layer's first rank's end to its last's ({:.2} from start to start), summed over the layers",
        t.spans,
        t.dropped,
        path.display(),
        t.busy_ms_per_frame,
        t.end_skew_ms_per_frame,
        t.start_skew_ms_per_frame
    );
    let most: Vec<_> = t
        .most_end_skew
        .iter()
        .map(|l| format!("{} {:.3} ms", l.layer, l.end_skew_ms))
        .collect();
    sayln!("trace: most end skew per frame: {}", most.join(", "));
    Ok(t)
}

/// `--profile`: one line per layer, with its share of the median frame.
fn print_profile(times: &[LayerTime], frame_ms: f64) {
    sayln!(
        "{:>4} {:<24} {:<22} {:>9} {:>8} {:>7}",
        "#",
        "layer",
        "kernel",
        "ms",
        "GFLOP/s",
        "frame%"
    );
    for t in times {
        sayln!(
            "{:>4} {:<24} {:<22} {:>9.3} {:>8.1} {:>6.1}%",
            t.index,
            t.name,
            t.kernel,
            t.seconds * 1e3,
            t.gflops(),
            100.0 * t.seconds * 1e3 / frame_ms
        );
    }
    let sum: f64 = times.iter().map(|t| t.seconds * 1e3).sum();
    sayln!(
        "sum of layers {sum:.1} ms of a {frame_ms:.1} ms frame ({:.1} ms between tasks)",
        frame_ms - sum
    );
}
