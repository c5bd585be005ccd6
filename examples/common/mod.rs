//! Command-line pieces every example shares: which CPUs, which layout, what emulation,
//! where reports go and where the text goes.
#![allow(dead_code)]

/// Prints like `print!`, to stdout, or to stderr while stdout carries `--json -`'s report.
macro_rules! say {
    ($($arg:tt)*) => { $crate::common::print_text(format_args!($($arg)*)) };
}

/// Prints like `println!`, to stdout, or to stderr while stdout carries `--json -`'s report.
macro_rules! sayln {
    () => { $crate::common::print_text(format_args!("\n")) };
    ($($arg:tt)*) => {
        $crate::common::print_text(format_args!("{}\n", format_args!($($arg)*)))
    };
}

#[allow(unused_imports)] // not every example prints text
pub(crate) use {say, sayln};

pub(crate) mod interrupt;
pub(crate) mod tune;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Args;
use indicatif::ProgressBar;
use taopipe::dsl::NetSpec;
use taopipe::live::planners::pipeit::Calibration;
use taopipe::live::report::StreamReport;
#[allow(unused_imports)] // not every example uses both
pub(crate) use taopipe::live::{frame_input, frames};
use taopipe::live::{layer_parallel, output};
use taopipe::nets::{Isa, Model, zoo};
use taopipe::runtime::{EmulationSpec, Runtime, Topology, parse_cpu_list};

/// Where the runtime's workers run and how fast each cluster is.
#[derive(Debug, Args)]
pub(crate) struct RuntimeArgs {
    /// OS CPUs to run on, as a Linux CPU list (`0-3,6`). Default: every CPU this process
    /// may use.
    #[arg(long, value_name = "LIST")]
    pub(crate) cpus: Option<String>,
    /// A XiTAO layout file (first line the CPUs, then the allowed widths of each leader).
    /// Overrides `TAOPIPE_LAYOUT` and sysfs detection.
    #[arg(long, value_name = "FILE")]
    pub(crate) layout: Option<PathBuf>,
    /// Emulated asymmetry: speed factors per cluster or worker, e.g. `performance,powersave`,
    /// `w1=powersave`, `c0=0.3`, or `table1:N` for the paper's governor settings 1-4.
    #[arg(long, value_name = "SPEC")]
    pub(crate) emulate: Option<EmulationSpec>,
}

impl RuntimeArgs {
    /// The topology these flags describe.
    pub(crate) fn topology(&self) -> anyhow::Result<Topology> {
        let topology = match &self.layout {
            Some(path) => Topology::from_layout_file(path)?,
            None => Topology::detect()?,
        };
        match &self.cpus {
            Some(list) => {
                let cpus = parse_cpu_list(list)
                    .map_err(anyhow::Error::msg)
                    .with_context(|| format!("--cpus {list}"))?;
                Ok(topology
                    .restrict(&cpus)
                    .with_context(|| format!("--cpus {list}"))?)
            }
            None => Ok(topology),
        }
    }

    /// A runtime on that topology with the emulation applied.
    pub(crate) fn runtime(&self) -> anyhow::Result<Runtime> {
        let rt = Runtime::builder().topology(self.topology()?).build()?;
        if let Some(spec) = &self.emulate {
            rt.emulate(spec)
                .with_context(|| format!("--emulate {spec}"))?;
        }
        Ok(rt)
    }
}

/// Reads a text file of at most `limit` bytes (`flag` names it in errors, with the path): a
/// larger file, or an endless one like `/dev/zero`, is refused without being read whole.
pub(crate) fn read_text_file(
    path: &std::path::Path,
    limit: u64,
    flag: &str,
) -> anyhow::Result<String> {
    use std::io::Read;
    let context = || format!("{flag} {}", path.display());
    let file = std::fs::File::open(path).with_context(context)?;
    let meta = file.metadata().with_context(context)?;
    if meta.is_file() && meta.len() > limit {
        bail!(
            "{}: the file has {} bytes, more than the {limit} read",
            context(),
            meta.len()
        );
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .with_context(context)?;
    if bytes.len() as u64 > limit {
        bail!(
            "{}: the file has more than the {limit} bytes read",
            context()
        );
    }
    String::from_utf8(bytes)
        .map_err(|e| anyhow::anyhow!("not UTF-8 text: {e}"))
        .with_context(context)
}

/// Largest calibration file read (`--calibration`): one of a 16-core machine takes about
/// a megabyte.
const MAX_CALIBRATION_BYTES: u64 = 64 << 20;

/// Reads and parses a Pipe-it calibration saved by `calibrate --out` (`--calibration
/// PATH`); errors name the path.
pub(crate) fn read_calibration(path: &std::path::Path) -> anyhow::Result<Calibration> {
    let text = read_text_file(path, MAX_CALIBRATION_BYTES, "--calibration")?;
    Calibration::from_json(&text).with_context(|| format!("--calibration {}", path.display()))
}

/// Writes `values` as raw little-endian f32, whole ([`output::write_atomic`]).
pub(crate) fn write_f32_file(path: &std::path::Path, values: &[f32]) -> anyhow::Result<()> {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    Ok(output::write_atomic(path, bytes)?)
}

/// The zoo net `name`; an unknown name is an error listing the zoo's names and `also`.
pub(crate) fn zoo_net(name: &str, also: &[&str]) -> anyhow::Result<NetSpec> {
    match zoo::by_name(name) {
        Some(spec) => Ok(spec?),
        None => {
            let names: Vec<&str> = zoo::NAMES.iter().chain(also).copied().collect();
            bail!(
                "--net {name}: unknown net; choose one of {}",
                names.join(", ")
            )
        }
    }
}

/// The layer-parallel baseline (how ONNX Runtime and ARM-CL run): `count` frames one at
/// a time, every layer on all workers, moving `bar` once per frame; the frames end early
/// once `interrupt` is raised.
pub(crate) fn baseline(
    rt: &Runtime,
    model: &Arc<Model>,
    count: u64,
    seed: u64,
    bar: &ProgressBar,
    interrupt: &interrupt::Interrupt,
) -> anyhow::Result<StreamReport> {
    let source = interrupt.until(frames(model, count, seed));
    let stats = layer_parallel(rt, model, source, |_, _| bar.inc(1))?;
    Ok(StreamReport::from_switch(&stats))
}

/// `alpha=N` with N ≥ 1.
pub(crate) fn parse_tune(text: &str) -> Result<usize, String> {
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

/// `--json`, the same in every example. Its path is checked while the command line is
/// parsed, so a typo fails before any work rather than after a run of minutes.
#[derive(Debug, Args)]
pub(crate) struct JsonArg {
    /// Write the report as JSON to PATH once the run is done (the file is replaced whole).
    /// PATH's folder must exist and take a new file: checked at start, before any work.
    /// `-` writes the JSON to stdout alone, and all other output goes to stderr.
    #[arg(id = "json", long = "json", value_name = "PATH", value_parser = json_target)]
    pub(crate) target: Option<JsonTarget>,
}

impl JsonArg {
    /// Where the report went, for a closing note: `; report in PATH`, `; report on
    /// stdout`, or nothing without `--json`.
    pub(crate) fn written(&self) -> String {
        match &self.target {
            Some(JsonTarget::File(path)) => format!("; report in {}", path.display()),
            Some(JsonTarget::Stdout) => "; report on stdout".into(),
            None => String::new(),
        }
    }

    /// Sends the text output ([`say!`], [`sayln!`]) to stderr when the JSON takes stdout;
    /// every example calls it right after parsing.
    pub(crate) fn route_text(&self) {
        let to_stderr = matches!(self.target, Some(JsonTarget::Stdout));
        TEXT_TO_STDERR.store(to_stderr, Ordering::Relaxed);
    }
}

/// Where `--json` writes.
#[derive(Debug, Clone)]
pub(crate) enum JsonTarget {
    /// `-`: stdout holds the JSON and nothing else.
    Stdout,
    /// A file, checked by [`output::check_file`] at parse time.
    File(PathBuf),
}

impl JsonTarget {
    /// Writes `report` (one of the library's report structs) as pretty JSON. Every report
    /// records the kernels' instruction-set path (`isa`), so numbers from two machines or
    /// two `TAOPIPE_ISA` settings are never compared unknowingly.
    pub(crate) fn write(&self, report: &impl serde::Serialize) -> anyhow::Result<()> {
        let mut value = serde_json::to_value(report)?;
        if let Some(report) = value.as_object_mut() {
            report.insert("isa".into(), Isa::current()?.name().into());
        }
        self.write_text(&serde_json::to_string_pretty(&value)?)
    }

    /// Writes `json` and a newline: on stdout, or whole into the file.
    pub(crate) fn write_text(&self, json: &str) -> anyhow::Result<()> {
        match self {
            JsonTarget::Stdout => println!("{json}"),
            JsonTarget::File(path) => output::write_atomic(path, format!("{json}\n"))?,
        }
        Ok(())
    }
}

/// Whether text goes to stderr ([`JsonArg::route_text`]).
static TEXT_TO_STDERR: AtomicBool = AtomicBool::new(false);

/// What [`say!`] and [`sayln!`] expand to.
pub(crate) fn print_text(args: std::fmt::Arguments<'_>) {
    if TEXT_TO_STDERR.load(Ordering::Relaxed) {
        eprint!("{args}");
    } else {
        print!("{args}");
    }
}

/// `--json`'s value parser: `-`, or a file path [`output::check_file`] accepts.
fn json_target(text: &str) -> Result<JsonTarget, String> {
    if text == "-" {
        return Ok(JsonTarget::Stdout);
    }
    output_file(text).map(JsonTarget::File)
}

/// Value parser of an output file (`--output`, `--out`): its folder must exist and take a
/// new file ([`output::check_file`]); checked at parse time, before any work. `-` is
/// refused (it is not stdout here): `./-` names a file `-`.
pub(crate) fn output_file(text: &str) -> Result<PathBuf, String> {
    if text == "-" {
        return Err("`-` (stdout) is not accepted here; write `./-` for a file named `-`".into());
    }
    let path = PathBuf::from(text);
    output::check_file(&path).map_err(|e| e.to_string())?;
    Ok(path)
}

/// Value parser of an output folder (`--plots`): it exists, or can be created later (its
/// nearest existing ancestor is a folder that takes a new file) ([`output::check_folder`]).
pub(crate) fn output_folder(text: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(text);
    output::check_folder(&path).map_err(|e| e.to_string())?;
    Ok(path)
}
