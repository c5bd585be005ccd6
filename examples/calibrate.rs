//! Calibrate Pipe-it's per-layer time predictor on this machine (paper Eq. 3–8), and check
//! it against every unit of the paper's Table III nets from the zoo (AlexNet, GoogLeNet,
//! MobileNet V1, ResNet50, SqueezeNet 1.1; `--nets vgg16,…` for others).
//!
//! ```text
//! cargo run --release --example calibrate -- --out calibration.json
//! cargo run --release --example calibrate -- --calibration calibration.json --report
//! cargo run --release --example calibrate -- --emulate w1=powersave --report --json report.json
//! ```

mod common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use taopipe::live::output;
use taopipe::live::planners::pipeit::{
    AccuracyCell, CalibrationReport, CoreType, ErrorStats, NetAccuracy, Predictor, TimeMatrix,
    accuracy, describe, plan,
};
use taopipe::live::planners::pipeit::{CalibrateOptions, calibrate, core_types, measure_units};
use taopipe::nets::{Model, RandomWeights};

use common::{JsonArg, RuntimeArgs, frame_input, say, sayln, zoo_net};

/// Calibrates Pipe-it's layer time predictor on this machine, once per device.
///
/// Pipe-it (Wang et al., TCAD 2020) predicts each layer's time on k cores of one core type
/// from its GEMM sizes N, K, M (Eq. 5, per core type) and its split into chunks (Eq. 6-8),
/// and plans a pipeline from the predictions. This tool runs the micro-benchmark grid
/// (125 single layers: convolutions spanning the zoo's N, K, M; fully connected, pooling,
/// element-wise, concat and depthwise layers) with the real kernels on every core type (the
/// runtime's devices: clusters split by emulated speed, fastest first) at every width, and
/// fits the predictor. `--out` saves the samples as JSON so a device is calibrated once;
/// `--calibration` reuses a saved file. `--report` then measures every unit of the paper's
/// Table III nets (AlexNet, GoogLeNet, MobileNet V1, ResNet50, SqueezeNet 1.1; `--nets`
/// picks others, e.g. vgg16) on every core type and width and prints the prediction error
/// as the paper's Table III does (mean and largest |error| %, over the units holding a
/// convolution, depthwise ones included, then over all units), and the pipeline Pipe-it's
/// search plans from the predictions.
#[derive(Debug, Parser)]
#[command(version, about, long_about)]
struct Cli {
    #[command(flatten)]
    runtime: RuntimeArgs,
    /// Save the calibration (machine and samples) as JSON here (the file is replaced
    /// whole). Its folder must exist and take a new file: checked at start.
    #[arg(long, value_name = "PATH", value_parser = common::output_file)]
    out: Option<PathBuf>,
    /// Use this saved calibration instead of running the grid. It must come from a machine
    /// with the same core types (count and cores each) as this runtime.
    #[arg(long, value_name = "PATH")]
    calibration: Option<PathBuf>,
    /// Measure every unit of the nets and print the prediction error per core type and
    /// width (Table III), and Pipe-it's planned pipeline for each net.
    #[arg(long)]
    report: bool,
    /// The nets of the report, comma-separated (any of the zoo's, e.g. vgg16). The default
    /// is the paper's Table III: AlexNet, GoogLeNet, MobileNet (V1, as Pipe-it used),
    /// ResNet50, SqueezeNet (1.1).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "alexnet,googlenet,mobilenet_v1,resnet50,squeezenet1_1"
    )]
    nets: Vec<String>,
    /// Runs per measurement; the median is kept (the first run warms up).
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u64).range(1..))]
    reps: u64,
    /// Seed of the random weights and inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    json: JsonArg,
}

fn bar(len: usize, what: &str) -> anyhow::Result<ProgressBar> {
    Ok(
        ProgressBar::new(len as u64).with_style(ProgressStyle::with_template(&format!(
            "{{bar:30}} {{pos}}/{{len}} {what} {{msg}}"
        ))?),
    )
}

/// `T0x2`: core type 0, 2 cores (the paper's `2B`).
fn label(core_type: usize, width: usize) -> String {
    format!("T{core_type}x{width}")
}

fn cell(s: &ErrorStats) -> String {
    if s.count == 0 {
        "-".to_string()
    } else {
        format!("{:.1}/{:.0}", s.mean_abs_pct, s.max_abs_pct)
    }
}

fn print_table(title: &str, nets: &[NetAccuracy], pick: fn(&AccuracyCell) -> ErrorStats) {
    let keys: Vec<(usize, usize)> = nets
        .first()
        .map(|n| {
            n.accuracy
                .cells
                .iter()
                .map(|c| (c.core_type, c.width))
                .collect()
        })
        .unwrap_or_default();
    sayln!("\n{title} (mean/max |error| %):");
    say!("{:<14}", "net");
    for &(t, w) in &keys {
        say!(" {:>10}", label(t, w));
    }
    sayln!();
    let mut sums = vec![(0.0, 0usize); keys.len()];
    for n in nets {
        say!("{:<14}", n.net);
        for (i, &(t, w)) in keys.iter().enumerate() {
            let stats = n
                .accuracy
                .cells
                .iter()
                .find(|c| (c.core_type, c.width) == (t, w))
                .map(pick);
            match stats {
                Some(s) => {
                    say!(" {:>10}", cell(&s));
                    if s.count > 0 {
                        sums[i].0 += s.mean_abs_pct;
                        sums[i].1 += 1;
                    }
                }
                None => say!(" {:>10}", "-"),
            }
        }
        sayln!();
    }
    say!("{:<14}", "average");
    for (sum, n) in sums {
        if n == 0 {
            say!(" {:>10}", "-");
        } else {
            say!(" {:>10}", format!("{:.1}", sum / n as f64));
        }
    }
    sayln!();
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    cli.json.route_text();
    // The report's nets are known before the grid runs: a typo fails now, not after it.
    let specs = if cli.report {
        cli.nets
            .iter()
            .map(|name| zoo_net(name, &[]))
            .collect::<anyhow::Result<Vec<_>>>()
            .with_context(|| format!("--nets {}", cli.nets.join(",")))?
    } else {
        Vec::new()
    };
    let saved = cli
        .calibration
        .as_deref()
        .map(common::read_calibration)
        .transpose()?;
    let rt = cli.runtime.runtime()?;
    let types = core_types(&rt);
    let shape: Vec<usize> = types.iter().map(|c| c.cores).collect();
    sayln!(
        "{} workers; core types (fastest first): {}",
        rt.num_workers(),
        types
            .iter()
            .enumerate()
            .map(|(t, c)| format!(
                "T{t} = workers {}..{} at speed {}",
                c.leader,
                c.leader + c.cores,
                c.speed
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let reps = cli.reps as usize;

    let cal = match saved.zip(cli.calibration.as_ref()) {
        Some((cal, path)) => {
            let places = |c: &[CoreType]| -> Vec<(usize, usize)> {
                c.iter().map(|c| (c.leader, c.cores)).collect()
            };
            let (theirs, ours) = (places(&cal.machine.core_types), places(&types));
            if theirs != ours {
                bail!(
                    "--calibration {}: taken on core types {theirs:?} (leader, cores), this \
                     runtime has {ours:?}; calibrate again under the same --cpus/--emulate",
                    path.display()
                );
            }
            for (t, (a, b)) in cal.machine.core_types.iter().zip(&types).enumerate() {
                if a.speed != b.speed {
                    eprintln!(
                        "warning: core type T{t} was calibrated at speed {}, it runs at {} now",
                        a.speed, b.speed
                    );
                }
            }
            sayln!(
                "calibration {} ({} samples): {}",
                path.display(),
                cal.samples.len(),
                cal.machine.description
            );
            cal
        }
        None => {
            let options = CalibrateOptions {
                repetitions: reps,
                seed: cli.seed,
                ..CalibrateOptions::default()
            };
            let bar = bar(options.grid.len(), "layers")?;
            let start = Instant::now();
            let cal = calibrate(&rt, &options, |done, _, name| {
                bar.set_position(done as u64);
                bar.set_message(name.to_string());
            })?;
            bar.finish_and_clear();
            sayln!(
                "calibrated {} layers, {} samples in {:.1} s",
                options.grid.len(),
                cal.samples.len(),
                start.elapsed().as_secs_f64()
            );
            cal
        }
    };
    if let Some(path) = &cli.out {
        output::write_atomic(path, cal.to_json() + "\n")
            .with_context(|| format!("--out {}", path.display()))?;
        sayln!("saved {}", path.display());
    }

    let predictor = Predictor::fit(&cal).with_context(|| match &cli.calibration {
        Some(path) => format!("--calibration {}", path.display()),
        None => "fitting the predictor".to_string(),
    })?;
    let mut report = CalibrationReport::new(&cal, &predictor);
    sayln!("\nfit on the grid itself (in-sample, every width; mean/max |error| %):");
    for f in &report.fit {
        if let Some(s) = &f.grid_error {
            sayln!(
                "  T{} {:<12} {:>3} samples  {}",
                f.core_type,
                f.op.name(),
                s.count,
                cell(s)
            );
        }
    }

    if cli.report {
        for (name, spec) in cli.nets.iter().zip(specs) {
            let units = describe(&spec);
            let model = Arc::new(Model::build(spec, &RandomWeights { seed: cli.seed })?);
            let places = types.iter().map(|c| c.cores).sum::<usize>();
            let bar = bar(places, &format!("{name} places"))?;
            let measured = measure_units(
                &rt,
                &model,
                frame_input(model.input_len(), cli.seed),
                reps,
                |done, _, place| {
                    bar.set_position(done as u64);
                    bar.set_message(format!("{}+{}", place.leader(), place.width()));
                },
            )?;
            bar.finish_and_clear();
            let accuracy = accuracy(&predictor, &units, &measured)?;
            let matrix = TimeMatrix::predict(&predictor, &units, &shape)?;
            report.nets.push(NetAccuracy {
                net: name.clone(),
                accuracy,
                plan: plan(&matrix, &types)?,
            });
        }
        print_table(
            "Table III: units holding a convolution (depthwise included)",
            &report.nets,
            |c| c.gemm,
        );
        print_table("all units (pool, fc, ... included)", &report.nets, |c| {
            c.all
        });
        sayln!("\nPipe-it plans from the predictions:");
        for NetAccuracy { net, plan: p, .. } in &report.nets {
            sayln!(
                "  {net:<13} {} {:?} on {}: predicted {:.1} ms per frame ({:.1} frames/s)",
                p.pipeline_string(),
                p.composition,
                p.configuration,
                p.bottleneck_ms(),
                p.throughput()
            );
        }
    }

    if let Some(json) = &cli.json.target {
        json.write(&report)?;
    }
    Ok(())
}
