//! Soak: stream a zoo net for a long time while the pipeline switches between
//! configurations and the emulated core speeds change; record resident memory, frames in
//! and out, and p50/p99 latency per interval; exit non-zero if a frame was lost, duplicated
//! or reordered, or memory grew past its bound (`taopipe::live::soak` has the rules).
//!
//! SIGINT or SIGTERM (`common::interrupt`) stops admitting frames: the frames in flight
//! finish and are checked, the report of what ran is printed and written (`--json`, with
//! `"partial": true`; `--plots`), and it exits with 130 or 143.
//!
//! ```text
//! cargo run --release --example soak -- --net alexnet --minutes 2 --json soak.json --plots soak
//! cargo run --release --example soak -- --net alexnet --minutes 30 --json soak-alexnet.json --plots soak-alexnet
//! cargo run --release --example soak -- --net vgg16 --minutes 30 --switch-every 20 --json soak-vgg16.json --plots soak-vgg16
//! ```

mod common;

use std::path::PathBuf;
use std::time::Duration;

use std::sync::Arc;

use anyhow::{Context, bail, ensure};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use taopipe::live::allowed_places;
use taopipe::live::soak::{DEFAULT_HEADROOM_MIB, SoakOptions, soak};
use taopipe::nets::{Model, RandomWeights};
use taopipe::runtime::EmulationSpec;
use taopipe::tuner::Configuration;

use common::interrupt::Interrupt;
use common::tune::{parse_fps, parse_rate};
use common::{JsonArg, RuntimeArgs, say, sayln};

/// Streams a net for a long time while its pipeline is reconfigured and the emulated core
/// speeds change, and checks that every frame comes out once, in order, and that resident
/// memory stays bounded.
///
/// The configurations (`--splits`) serve in turn, `--switch-every` seconds each; each
/// switch happens between two frames on the same runtime (the pipeline drains, the next
/// takes the next frame). The emulated speeds cycle through `--speeds`, one setting every
/// `--speeds-every` seconds. Frames come as fast as the pipeline takes them, or at
/// `--rate`. Each frame carries one of K distinct inputs whose outputs are computed first;
/// a frame's output is bit-identical on any configuration, so the output tells which frame
/// came out where.
///
/// RSS bound: the warm-up is the reference pass (every frame that can be in flight
/// alive at once, so the frame pool is at its largest and resident) and one round through
/// the configurations; after it, resident memory (sampled every second from
/// /proc/self/statm) must stay within the warm-up's peak plus `--headroom` MiB.
///
/// Prints p50/p99 latency, frames in and out, RSS, reconfigurations and speed changes per
/// `--interval`; `--json` writes all of it with every sample, `--plots` draws it. Exits
/// with an error (status 1) when a check fails, after writing both. Linux only (RSS is
/// read from /proc).
///
/// SIGINT or SIGTERM ends the run early: the frames in flight finish, the report of what
/// ran is printed and written, marked partial, and the exit code is 130 or 143.
#[derive(Debug, Parser)]
#[command(version, about, long_about)]
struct Cli {
    #[command(flatten)]
    runtime: RuntimeArgs,
    /// The net: alexnet or vgg16 (any zoo net works).
    #[arg(long, default_value = "alexnet")]
    net: String,
    /// Minutes to stream (default 30).
    #[arg(long, value_name = "M", value_parser = parse_rate, conflicts_with = "seconds")]
    minutes: Option<f64>,
    /// Seconds to stream, instead of --minutes.
    #[arg(long, value_name = "S", value_parser = parse_rate)]
    seconds: Option<f64>,
    /// Seconds each configuration serves before the switch to the next.
    #[arg(long, value_name = "S", default_value_t = 10.0, value_parser = parse_rate)]
    switch_every: f64,
    /// Seconds each speed setting holds.
    #[arg(long, value_name = "S", default_value_t = 3.0, value_parser = parse_rate)]
    speeds_every: f64,
    /// The configurations, `;`-separated units per stage, each stage on a contiguous run
    /// of workers, e.g. `11;5,6;6,5` for AlexNet. Default: the one-stage configuration and
    /// the two best-CV two-stage seeds.
    #[arg(long, value_name = "LIST")]
    splits: Option<String>,
    /// The emulated speed settings cycled through, `;`-separated `--emulate` specs or
    /// `none` (full speed), e.g. `none;w1=powersave;w0=0.3`. Default: none, the last
    /// worker at powersave, the first at powersave, every worker at 0.7.
    #[arg(long, value_name = "LIST")]
    speeds: Option<String>,
    /// Seconds per interval of the latency and memory figures.
    #[arg(long, value_name = "S", default_value_t = 60.0, value_parser = parse_rate)]
    interval: f64,
    /// The RSS bound's headroom over the warm-up's peak, MiB.
    #[arg(long, value_name = "MIB", default_value_t = DEFAULT_HEADROOM_MIB)]
    headroom: f64,
    /// Offer frames at this many per second instead of as fast as the pipeline takes them.
    #[arg(long, value_name = "FPS", value_parser = parse_fps)]
    rate: Option<f64>,
    /// Seed of the random weights and inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write soak.svg into this folder: RSS against its bound, p50/p99 per interval,
    /// throughput. DIR is created if missing; checked at start.
    #[arg(long, value_name = "DIR", value_parser = common::output_folder)]
    plots: Option<PathBuf>,
    #[command(flatten)]
    json: JsonArg,
}

/// `value` of `flag`, in units of `unit` seconds, as a duration of at least a nanosecond;
/// errors quote the value as written (`1e300`, not its 301 digits).
fn seconds(value: f64, unit: f64, flag: &str) -> anyhow::Result<Duration> {
    let duration = Duration::try_from_secs_f64(value * unit)
        .with_context(|| format!("{flag} {value:?}: not a duration"))?;
    ensure!(
        !duration.is_zero(),
        "{flag} {value:?}: shorter than a nanosecond"
    );
    Ok(duration)
}

/// `--splits`: `;`-separated compositions, each placed contiguously.
fn parse_splits(
    text: &str,
    places: &taopipe::tuner::AllowedPlaces,
) -> anyhow::Result<Vec<Configuration>> {
    text.split(';')
        .map(|split| {
            let composition = split
                .split(',')
                .map(|n| n.trim().parse::<usize>())
                .collect::<Result<Vec<usize>, _>>()
                .with_context(|| {
                    format!("--splits {text}: `{split}` is not a list of unit counts")
                })?;
            Configuration::contiguous_on(&composition, places)
                .with_context(|| format!("--splits {text}: `{split}`"))
        })
        .collect()
}

/// `--speeds`: `;`-separated specs or `none`.
fn parse_speeds(text: &str) -> anyhow::Result<Vec<Option<EmulationSpec>>> {
    text.split(';')
        .map(|spec| match spec.trim() {
            "none" => Ok(None),
            spec => Ok(Some(
                spec.parse::<EmulationSpec>()
                    .with_context(|| format!("--speeds {text}: `{spec}`"))?,
            )),
        })
        .collect()
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let interrupt = Interrupt::install()?;
    cli.json.route_text();
    ensure!(
        cli.runtime.emulate.is_none(),
        "--emulate does not apply: a soak cycles through --speeds"
    );
    let spec = common::zoo_net(&cli.net, &[])?;
    let rt = cli.runtime.runtime()?;
    let model = Arc::new(Model::build(spec, &RandomWeights { seed: cli.seed })?);
    let mut options = SoakOptions::new(&rt, &model)?;
    options.duration = match (cli.minutes, cli.seconds) {
        (_, Some(s)) => seconds(s, 1.0, "--seconds")?,
        (Some(m), None) => seconds(m, 60.0, "--minutes")?,
        (None, None) => options.duration,
    };
    options.switch_every = seconds(cli.switch_every, 1.0, "--switch-every")?;
    options.speeds_every = seconds(cli.speeds_every, 1.0, "--speeds-every")?;
    options.interval = seconds(cli.interval, 1.0, "--interval")?;
    options.headroom_mib = cli.headroom;
    options.rate_fps = cli.rate;
    options.seed = cli.seed;
    options.stop = interrupt.stop_signal();
    if let Some(text) = &cli.splits {
        options.configurations = parse_splits(text, &allowed_places(&rt))?;
    }
    if let Some(text) = &cli.speeds {
        options.speeds = parse_speeds(text)?;
    }
    options.validate(&rt, &model)?;

    sayln!("{}", rt.topology());
    let configs: Vec<String> = options
        .configurations
        .iter()
        .map(ToString::to_string)
        .collect();
    let speeds: Vec<String> = options
        .speeds
        .iter()
        .map(|s| s.as_ref().map_or("none".into(), ToString::to_string))
        .collect();
    sayln!(
        "{}: {:.0} s, configurations {} every {:.0} s, speeds {} every {:.0} s",
        cli.net,
        options.duration.as_secs_f64(),
        configs.join(" "),
        options.switch_every.as_secs_f64(),
        speeds.join(" "),
        options.speeds_every.as_secs_f64()
    );
    let bar = ProgressBar::new(options.duration.as_secs_f64().ceil() as u64).with_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} s, {msg}")?,
    );
    let mut shown = u64::MAX;
    let report = soak(&rt, &model, &options, |p| {
        // Once a second: the message is a new string each time.
        let second = p.elapsed.as_secs();
        if second != shown {
            shown = second;
            bar.set_position(second);
            bar.set_message(format!("{} frames, RSS {:.0} MiB", p.frames, p.rss_mib));
        }
    })?;
    bar.finish_and_clear();
    say!("{report}");
    if let Some(json) = &cli.json.target {
        json.write(&serde_json::to_value(&report)?)?;
    }
    if let Some(dir) = &cli.plots {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--plots: creating {}", dir.display()))?;
        let path = dir.join("soak.svg");
        taopipe::live::plot::soak_svg(&report, &path)?;
        sayln!("picture: {}", path.display());
    }
    interrupt.exit_if_raised(&format!(
        "{} frames in, {} out in {:.1} s, in order: {}",
        report.frames_in, report.frames_out, report.elapsed_s, report.checks.in_order
    ));
    let mut failed = Vec::new();
    if !report.checks.in_order {
        failed.push("frames lost, duplicated or reordered");
    }
    if !report.checks.rss_bounded {
        failed.push("resident memory past its bound");
    }
    if !failed.is_empty() {
        bail!("soak failed: {}", failed.join("; "));
    }
    Ok(())
}
