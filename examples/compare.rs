//! Every planner on the same machine state, side by side: the layer-parallel baseline,
//! Pipe-it, Pipe-search, Pipe-search seeded by Pipe-it's predictor, ARM-CO-UP's switch
//! mode, MOSAIC and CoDL. Each plans (or tunes), then runs the same frames, and one table
//! shows its mode, configuration, predicted and measured throughput and latency, the time
//! it took to plan, and the trials it measured. A planner that fails gets a row with its
//! error, the other planners still run, and the tool then exits non-zero.
//!
//! ```text
//! cargo run --release --example compare -- --net vgg16
//! cargo run --release --example compare -- --net vgg16 --emulate w1=powersave --json compare.json
//! cargo run --release --example compare -- --net alexnet --planners pipe-it,mosaic,codl
//! ```
//!
//! What "predicted" means for each planner:
//! - **Pipe-it**: its per-layer regression (fitted on `--calibration`, or on a calibration
//!   run now): throughput `1 / slowest stage`, latency `Σ stages`.
//! - **Pipe-search** (both): the stage times it measured in isolation for the chosen
//!   configuration, the same way.
//! - **ARM-CO-UP switch, MOSAIC**: the profiled unit times (MOSAIC adds its fitted
//!   transfer costs): latency `Σ runs`, throughput `1 / latency` (one frame at a time).
//! - **CoDL**: its split-latency predictor. CoDL splits between the two fastest devices; on
//!   a machine with one (all workers alike) it splits between that device's two halves.
//! - **layer-parallel**: none (nothing is planned).
//!
//! Measured latency counts from when a frame's buffers exist to its last layer (buffer
//! allocation, 10–40 ms for a VGG16 frame, is left out everywhere). In pipeline mode it
//! starts when the frame enters the first stage's queue, so it includes queueing behind
//! earlier frames (the frames are all offered at once); in switch mode, for CoDL and for
//! layer-parallel a frame runs alone. Before the first planner one untimed frame runs
//! through the whole net, so no planner pays for cold caches and first-touch page faults.
//!
//! SIGINT or SIGTERM (`common::interrupt`) ends the planner in progress at its next trial
//! or frame (a calibration, a profile or CoDL's run goes on to its end, seconds), gives it
//! a row `interrupted`, runs no other planner, writes the rows done (`--json`, with
//! `"partial": true`) and exits with 130 or 143.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use taopipe::dsl::Seeds;
use taopipe::live::devices::Device;
use taopipe::live::planners::armcoup::Mapping;
use taopipe::live::planners::armcoup::{Switch, SwitchStats};
use taopipe::live::planners::codl::{self, CodlOptions};
use taopipe::live::planners::mosaic::{Profile, ProfileOptions, profile};
use taopipe::live::planners::pipeit::{self, Calibration, Predictor, TimeMatrix, describe};
use taopipe::live::planners::pipeit::{CalibrateOptions, calibrate, core_types};
use taopipe::live::report::{CompareReport, Latency, MachineReport, PlannerRow, StreamReport};
use taopipe::nets::{Model, RandomWeights};
use taopipe::runtime::{Place, Runtime};
use taopipe::tuner::{Configuration, SearchResult};

use common::interrupt::Interrupt;
use common::tune::trial_printer;
use common::{JsonArg, RuntimeArgs, baseline, frame_input, frames, sayln, zoo_net};
use taopipe::live::tune::search;
use taopipe::live::{
    MeasureKind, SearchKind, SeedKind, TuneOptions, allowed_places, stream, widest_place,
};

/// Runs every planner of the five papers on one net under the same conditions (same
/// runtime, same emulated speeds, same frames) and prints one table to compare them.
///
/// A planner that fails (e.g. on a --calibration taken on other core types) shows its
/// error in the table and in the JSON report (`error`), and the tool exits non-zero once
/// the table is out, repeating the errors on stderr. A --calibration file that cannot be
/// read or parsed, or a --mapping that does not fit, is refused at start.
#[derive(Debug, Parser)]
#[command(version, about, long_about)]
struct Cli {
    #[command(flatten)]
    runtime: RuntimeArgs,
    /// The net: vgg16, alexnet, resnet50, synth1, synth2 or synth3.
    #[arg(long, default_value = "vgg16")]
    net: String,
    /// Which planners to run, comma-separated, in table order. Names: layer-parallel,
    /// pipe-it, pipe-search, pipe-search+pipe-it, arm-co-up, mosaic, codl.
    #[arg(long, value_delimiter = ',', default_values_t = Planner::ALL.map(|p| p.name().to_string()))]
    planners: Vec<String>,
    /// Pipe-search's confidence α, as in the other tools: `--tune alpha=10` stops a stage
    /// count's exploration after 10 trials without improvement.
    #[arg(long, value_name = "alpha=N", default_value = "alpha=10", value_parser = common::parse_tune)]
    tune: usize,
    /// Most pipeline stages (C), at least 1. Default: one per worker.
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    max_stages: Option<usize>,
    /// Measured repetitions per Pipe-search trial (after one warm-up); the median counts.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..))]
    reps: u64,
    /// Frames each planner's plan runs for the measured columns.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    frames: u64,
    /// A Pipe-it calibration saved by `cargo run --release --example calibrate -- --out
    /// PATH` on this machine under the same `--emulate`. Without it, the calibration grid
    /// runs now (and its time counts as Pipe-it's planning time). The file is read and
    /// checked at start, before any work.
    #[arg(long, value_name = "PATH")]
    calibration: Option<PathBuf>,
    /// ARM-CO-UP's mapping string (a device per unit: `B`/`L` or digits into the device
    /// list), checked at start. Default: each unit on the device where it was profiled
    /// fastest.
    #[arg(long, value_name = "STRING")]
    mapping: Option<String>,
    /// Seed of the random weights and the input frames.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    json: JsonArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Planner {
    LayerParallel,
    PipeIt,
    PipeSearch,
    PipeSearchPipeIt,
    ArmCoUp,
    Mosaic,
    Codl,
}

impl Planner {
    const ALL: [Planner; 7] = [
        Planner::LayerParallel,
        Planner::PipeIt,
        Planner::PipeSearch,
        Planner::PipeSearchPipeIt,
        Planner::ArmCoUp,
        Planner::Mosaic,
        Planner::Codl,
    ];

    fn name(self) -> &'static str {
        match self {
            Planner::LayerParallel => "layer-parallel",
            Planner::PipeIt => "pipe-it",
            Planner::PipeSearch => "pipe-search",
            Planner::PipeSearchPipeIt => "pipe-search+pipe-it",
            Planner::ArmCoUp => "arm-co-up",
            Planner::Mosaic => "mosaic",
            Planner::Codl => "codl",
        }
    }

    fn parse(name: &str) -> anyhow::Result<Planner> {
        Planner::ALL
            .into_iter()
            .find(|p| p.name() == name.trim())
            .with_context(|| {
                let names: Vec<&str> = Planner::ALL.iter().map(|p| p.name()).collect();
                format!(
                    "unknown planner `{name}`; expected one of {}",
                    names.join(", ")
                )
            })
    }
}

/// What every planner shares: the runtime, the net, the devices, and the measurements
/// that more than one planner uses (made once, on first use; their time is charged to
/// every planner that uses them).
struct Bench<'a> {
    cli: &'a Cli,
    rt: &'a Runtime,
    model: Arc<Model>,
    devices: Vec<Device>,
    /// Most stages for the pipeline planners.
    max_stages: usize,
    /// `--calibration`, read and checked at start.
    calibration: Option<Calibration>,
    /// `--mapping`, checked against the net and the devices at start.
    mapping: Option<Mapping>,
    bar: ProgressBar,
    interrupt: Interrupt,
    profile: Option<(Profile, f64)>,
    predictor: Option<(Predictor, f64)>,
}

impl Bench<'_> {
    fn input(&self, i: u64) -> Vec<f32> {
        frame_input(self.model.input_len(), self.cli.seed + i)
    }

    /// MOSAIC's profile: every unit alone on every device, and transfer costs.
    fn profile(&mut self) -> anyhow::Result<&(Profile, f64)> {
        if self.profile.is_none() {
            self.bar.set_message("profiling units on every device");
            let t = Instant::now();
            let p = profile(
                self.rt,
                &self.model,
                self.input(0),
                &self.devices,
                &ProfileOptions::default(),
            )?;
            self.profile = Some((p, t.elapsed().as_secs_f64()));
        }
        Ok(self.profile.as_ref().expect("just set"))
    }

    /// Pipe-it's predictor, from the saved calibration or one run now.
    fn predictor(&mut self) -> anyhow::Result<&(Predictor, f64)> {
        if self.predictor.is_none() {
            let t = Instant::now();
            let cal = match &self.calibration {
                Some(cal) => cal.clone(),
                None => {
                    self.bar.set_message("calibrating Pipe-it's predictor");
                    calibrate(self.rt, &CalibrateOptions::default(), |_, _, name| {
                        self.bar.set_message(format!("calibrating: {name}"))
                    })?
                }
            };
            let now = core_types(self.rt);
            let then = &cal.machine.core_types;
            let shape = |c: &[pipeit::CoreType]| -> Vec<(usize, usize)> {
                c.iter().map(|c| (c.leader, c.cores)).collect()
            };
            if shape(&now) != shape(then) {
                let path = self.cli.calibration.as_deref().unwrap_or(Path::new("-"));
                bail!(
                    "the calibration {} was taken on core types {:?} (leader, cores), but this \
                     runtime has {:?}: calibrate again under the same --cpus/--emulate",
                    path.display(),
                    shape(then),
                    shape(&now)
                );
            }
            self.predictor = Some((Predictor::fit(&cal)?, t.elapsed().as_secs_f64()));
        }
        Ok(self.predictor.as_ref().expect("just set"))
    }

    fn run(&mut self, planner: Planner) -> anyhow::Result<PlannerRow> {
        match planner {
            Planner::LayerParallel => self.layer_parallel(),
            Planner::PipeIt => self.pipe_it(),
            Planner::PipeSearch => self.pipe_search(planner, None),
            Planner::PipeSearchPipeIt => {
                let units = describe(self.model.spec());
                let (predictor, fit_s) = self.predictor()?;
                let (predictor, fit_s) = (predictor.clone(), *fit_s);
                let t = Instant::now();
                let places = allowed_places(self.rt);
                let key = pipeit::SeedKey::new(predictor, units, &places)?;
                let extra = fit_s + t.elapsed().as_secs_f64();
                self.pipe_search(planner, Some((key, extra)))
            }
            Planner::ArmCoUp => self.arm_co_up(),
            Planner::Mosaic => self.mosaic(),
            Planner::Codl => self.codl(),
        }
    }

    fn layer_parallel(&mut self) -> anyhow::Result<PlannerRow> {
        self.bar.set_message("layer-parallel");
        let base = baseline(
            self.rt,
            &self.model,
            self.cli.frames,
            self.cli.seed,
            &self.bar,
            &self.interrupt,
        )?;
        Ok(PlannerRow::ran(
            Planner::LayerParallel.name(),
            "layer-parallel",
            format!("every layer on {}", widest_place(self.rt)),
            base.throughput_fps,
            base.latency_ms,
        ))
    }

    /// Streams the pipeline of `config` and fills a row's measured columns.
    fn pipeline_row(
        &self,
        planner: Planner,
        config: &Configuration,
        stage_ms: &[f64],
        plan_s: f64,
        trials: usize,
    ) -> anyhow::Result<PlannerRow> {
        self.bar
            .set_message(format!("{}: streaming", planner.name()));
        let stats = stream(
            self.rt,
            &self.model,
            config,
            self.interrupt
                .until(frames(&self.model, self.cli.frames, self.cli.seed)),
            |_, _| self.bar.inc(1),
        )?;
        let measured = StreamReport::from_pipeline(&stats);
        Ok(PlannerRow::ran(
            planner.name(),
            "pipeline",
            config.to_string(),
            measured.throughput_fps,
            measured.latency_ms,
        )
        .predicting_stages(stage_ms)
        .planned(plan_s, trials))
    }

    fn pipe_it(&mut self) -> anyhow::Result<PlannerRow> {
        let units = describe(self.model.spec());
        let (predictor, fit_s) = self.predictor()?;
        let fit_s = *fit_s;
        let t = Instant::now();
        let cores: Vec<usize> = predictor.core_types().iter().map(|c| c.cores).collect();
        let matrix = TimeMatrix::predict(predictor, &units, &cores)?;
        let plan = pipeit::plan(&matrix, predictor.core_types())?;
        let plan_s = fit_s + t.elapsed().as_secs_f64();
        if plan.configuration.stage_count() < 2 {
            // one stage: a frame at a time on that stage's workers
            let (leader, width) = plan.configuration.places()[0];
            let mut row = self.switch_row(
                Planner::PipeIt,
                Switch::new(
                    self.model.clone(),
                    vec![taopipe::live::planners::armcoup::SwitchRun {
                        units: 0..self.model.spec().units().len(),
                        place: Place::new(leader, width),
                        speed: 1.0,
                    }],
                )?,
                plan.stage_ms[0],
                plan_s,
            )?;
            row.configuration = format!("{} {}", plan.pipeline_string(), plan.configuration);
            return Ok(row);
        }
        let mut row = self.pipeline_row(
            Planner::PipeIt,
            &plan.configuration,
            &plan.stage_ms,
            plan_s,
            0,
        )?;
        row.configuration = format!("{} {}", plan.pipeline_string(), plan.configuration);
        Ok(row)
    }

    fn pipe_search(
        &mut self,
        planner: Planner,
        key: Option<(pipeit::SeedKey, f64)>,
    ) -> anyhow::Result<PlannerRow> {
        let spec = self.model.spec();
        let seeds = Seeds::from_net(spec, self.max_stages)?;
        let (seeds, extra_s) = match key {
            Some((key, s)) => (seeds.with_key(key), s),
            None => (seeds, 0.0), // the paper's Alg. 1
        };
        self.bar.set_message(format!("{}: tuning", planner.name()));
        let options = TuneOptions {
            search: SearchKind::Pipe,
            alpha: self.cli.tune,
            max_stages: Some(self.max_stages),
            reps: self.cli.reps as usize,
            tolerance: 0.0,
            measure: MeasureKind::Isolated,
            seeds: SeedKind::Paper,
            seed: self.cli.seed,
            watch: None,
            retune_alpha: 2,
        };
        let (trials, mut print) = trial_printer(options.expected_trials(self.rt, &self.model) - 1)?;
        let stop = self.interrupt.stop_signal();
        let result: SearchResult = self
            .bar
            .suspend(|| search(self.rt, &self.model, &options, &seeds, &stop, &mut print))?;
        trials.finish_and_clear();
        self.pipeline_row(
            planner,
            &result.best,
            &result.best_times.stage_ms,
            extra_s + result.tuning.as_secs_f64(),
            result.trials.len(),
        )
    }

    /// Runs a switch-mode plan and fills a row's measured columns.
    fn switch_row(
        &self,
        planner: Planner,
        switch: Switch,
        predicted_ms: f64,
        plan_s: f64,
    ) -> anyhow::Result<PlannerRow> {
        self.bar.set_message(format!("{}: running", planner.name()));
        let stats: SwitchStats = switch.run(
            self.rt,
            self.interrupt
                .until(frames(&self.model, self.cli.frames, self.cli.seed)),
            |_, _| self.bar.inc(1),
        )?;
        let runs: Vec<String> = switch
            .runs()
            .iter()
            .map(|r| format!("{}..{}@{}", r.units.start, r.units.end, r.place))
            .collect();
        let measured = StreamReport::from_switch(&stats);
        Ok(PlannerRow::ran(
            planner.name(),
            "switch",
            runs.join(" "),
            measured.throughput_fps,
            measured.latency_ms,
        )
        .predicting_frame(predicted_ms)
        .planned(plan_s, 0))
    }

    fn arm_co_up(&mut self) -> anyhow::Result<PlannerRow> {
        let (profiled, profile_s) = self.profile()?;
        let (exec, profile_s) = (profiled.exec_ms(), *profile_s);
        let t = Instant::now();
        let mapping = match &self.mapping {
            Some(mapping) => mapping.clone(),
            None => Mapping::from_devices(
                exec.iter()
                    .map(|row| {
                        (0..row.len())
                            .min_by(|&a, &b| row[a].total_cmp(&row[b]))
                            .unwrap_or(0)
                    })
                    .collect(),
            )?,
        };
        let predicted: f64 = mapping
            .devices()
            .iter()
            .enumerate()
            .map(|(u, &d)| exec[u][d])
            .sum();
        let plan_s = profile_s + t.elapsed().as_secs_f64();
        let switch = Switch::from_mapping(self.model.clone(), &mapping, &self.devices, &[])?;
        let mut row = self.switch_row(Planner::ArmCoUp, switch, predicted, plan_s)?;
        row.configuration = format!("{mapping} ({})", row.configuration);
        Ok(row)
    }

    fn mosaic(&mut self) -> anyhow::Result<PlannerRow> {
        let model = self.model.clone();
        let (profiled, profile_s) = self.profile()?;
        let profile_s = *profile_s;
        let t = Instant::now();
        let plan = profiled.problem.solve()?;
        let switch = profiled.switch(model, &plan)?;
        let plan_s = profile_s + t.elapsed().as_secs_f64();
        self.switch_row(Planner::Mosaic, switch, plan.latency_ms, plan_s)
    }

    fn codl(&mut self) -> anyhow::Result<PlannerRow> {
        // one device (all workers alike): CoDL splits between its two halves, where the
        // layout allows them
        let halves = |one: Place| {
            let half = one.width() / 2;
            let a = Place::new(one.leader(), one.width() - half);
            let b = Place::new(one.leader() + one.width() - half, half);
            let topology = self.rt.topology();
            (half >= 1 && topology.is_allowed(a) && topology.is_allowed(b)).then_some((a, b))
        };
        let (a, b, note) = match codl::device_pair(self.rt) {
            Ok((a, b)) => (a, b, None),
            Err(e) => match self.devices.first().and_then(|d| halves(d.place)) {
                Some((a, b)) => (
                    a,
                    b,
                    Some(format!("one device: split between its halves {a} and {b}")),
                ),
                None => return Ok(PlannerRow::skipped(Planner::Codl.name(), e.to_string())),
            },
        };
        self.bar.set_message("codl: profiling and planning");
        let t = Instant::now();
        let options = CodlOptions::default();
        let input = self.input(0);
        let profiled = codl::Profile::measure(self.rt, &self.model, &input, a, b, &options)?;
        let plan = codl::plan(&self.model, &profiled, &options)?;
        let plan_s = t.elapsed().as_secs_f64();
        self.bar.set_message("codl: running");
        let stats = plan.run(self.rt, &self.model, &input, self.cli.frames as usize)?;
        self.bar.inc(self.cli.frames);
        // Graph latencies (buffer allocation left out, as for every other planner).
        let latency = Latency {
            p50: stats.graph_quantile_ms(0.5),
            p99: stats.graph_quantile_ms(0.99),
        };
        let configuration = format!(
            "{a} + {b}, {} chains, {:.0}% on {a}",
            plan.chains().len(),
            100.0 * plan.share_a()
        );
        Ok(PlannerRow {
            note,
            ..PlannerRow::ran(
                Planner::Codl.name(),
                "split",
                configuration,
                stats.throughput_fps(),
                latency,
            )
            .predicting_frame(plan.predicted_ms())
            .planned(plan_s, 0)
        })
    }
}

fn cell(value: Option<f64>, digits: usize) -> String {
    value.map_or("-".into(), |v| format!("{v:.digits$}"))
}

fn print_table(rows: &[PlannerRow]) {
    sayln!(
        "{:<20} {:<15} {:>9} {:>9} {:>10} {:>10} {:>10} {:>8} {:>6}  configuration",
        "planner",
        "mode",
        "pred fps",
        "fps",
        "pred ms",
        "p50 ms",
        "p99 ms",
        "plan s",
        "trials"
    );
    for r in rows {
        sayln!(
            "{:<20} {:<15} {:>9} {:>9} {:>10} {:>10} {:>10} {:>8.1} {:>6}  {}",
            r.planner,
            r.mode,
            cell(r.predicted_fps, 2),
            cell(r.measured_fps, 2),
            cell(r.predicted_latency_ms, 1),
            cell(r.measured_latency_ms, 1),
            cell(r.measured_latency_p99_ms, 1),
            r.plan_s,
            r.trials,
            r.configuration
        );
        if let Some(note) = &r.note {
            sayln!("{:<20} note: {note}", "");
        }
        if let Some(error) = &r.error {
            sayln!("{:<20} error: {error}", "");
        }
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    cli.json.route_text();
    let interrupt = Interrupt::install()?;
    let planners = cli
        .planners
        .iter()
        .map(|p| Planner::parse(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    // Input files and strings are checked before any work, whichever planners use them.
    let calibration = cli
        .calibration
        .as_deref()
        .map(common::read_calibration)
        .transpose()?;
    let spec = zoo_net(&cli.net, &[])?;
    let rt = cli.runtime.runtime()?;
    let workers = rt.num_workers();
    let units = spec.units().len();
    let max_stages = cli.max_stages.unwrap_or(workers).min(workers).min(units);
    let machine = MachineReport::of(&rt);
    let devices = machine.devices.len();
    let mapping = cli
        .mapping
        .as_deref()
        .map(|text| Mapping::parse(text, units, devices))
        .transpose()
        .with_context(|| format!("--mapping for {} on {devices} device(s)", cli.net))?;
    let model = Arc::new(Model::build(spec, &RandomWeights { seed: cli.seed })?);
    sayln!("{}", rt.topology());
    sayln!("speeds: {:?}", machine.speeds);
    for (i, d) in machine.devices.iter().enumerate() {
        sayln!("device {i}: {} at speed {}", d.place, d.speed);
    }
    sayln!(
        "{}: {units} units, {:.2} GFLOP per frame; {} frames per planner\n",
        cli.net,
        model.flops() as f64 / 1e9,
        cli.frames
    );

    let bar = ProgressBar::new(cli.frames * planners.len() as u64).with_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} frames {msg}")?,
    );
    let mut bench = Bench {
        cli: &cli,
        rt: &rt,
        model,
        devices: machine.devices.clone(),
        max_stages,
        calibration,
        mapping,
        bar,
        interrupt: interrupt.clone(),
        profile: None,
        predictor: None,
    };
    // warm-up: one untimed frame on every worker (the layout allows)
    bench
        .model
        .forward(&rt, bench.input(0), widest_place(&rt))?;
    let mut rows = Vec::new();
    for planner in planners {
        let row = match bench.run(planner) {
            // Cut short by a signal: its numbers (or its error) are not the planner's.
            _ if interrupt.raised() => {
                rows.push(PlannerRow::skipped(planner.name(), "interrupted".into()));
                break;
            }
            Ok(row) => row,
            Err(e) => PlannerRow::failed(planner.name(), format!("{e:#}")),
        };
        if row.measured_fps.is_none() {
            bench.bar.inc(cli.frames);
        }
        rows.push(row);
    }
    bench.bar.finish_and_clear();
    sayln!();
    print_table(&rows);

    let report = CompareReport {
        net: bench.model.spec().name().to_string(),
        machine,
        frames: cli.frames,
        alpha: cli.tune,
        rows,
        partial: interrupt.raised(),
    };
    if let Some(json) = &cli.json.target {
        json.write(&report)?;
    }
    let rows = &report.rows;
    let done = rows
        .iter()
        .filter(|r| r.note.as_deref() != Some("interrupted"))
        .count();
    interrupt.exit_if_raised(&format!("{done} planner row(s) done{}", cli.json.written()));
    let failed: Vec<&str> = rows
        .iter()
        .filter(|r| r.error.is_some())
        .map(|r| r.planner.as_str())
        .collect();
    if !failed.is_empty() {
        let errors: Vec<String> = rows
            .iter()
            .filter_map(|r| Some(format!("  {}: {}", r.planner, r.error.as_ref()?)))
            .collect();
        bail!(
            "{} of {} planner(s) failed: {} (errors in the table)\n{}",
            failed.len(),
            rows.len(),
            failed.join(", "),
            errors.join("\n")
        );
    }
    Ok(())
}
