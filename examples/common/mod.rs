//! Command-line pieces every example shares: which CPUs, which layout, what emulation.
#![allow(dead_code)]

pub(crate) mod tune;

use std::path::PathBuf;

use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Args;
use indicatif::ProgressBar;
use taopipe::dsl::NetSpec;
use taopipe::live::layer_parallel;
use taopipe::live::report::StreamReport;
#[allow(unused_imports)] // not every example uses both
pub(crate) use taopipe::live::{frame_input, frames};
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
                Ok(topology.restrict(&cpus)?)
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

/// Writes `value` as pretty JSON to `path`, or to stdout when `path` is `-`.
/// Every report records the kernels' instruction-set path (`isa`), so numbers from two
/// machines or two `TAOPIPE_ISA` settings are never compared unknowingly.
pub(crate) fn write_json(path: &std::path::Path, value: &serde_json::Value) -> anyhow::Result<()> {
    let mut value = value.clone();
    if let Some(report) = value.as_object_mut() {
        report.insert("isa".into(), Isa::current()?.name().into());
    }
    let text = serde_json::to_string_pretty(&value)?;
    if path == std::path::Path::new("-") {
        println!("{text}");
    } else {
        std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Reads a raw little-endian f32 tensor of exactly `len` values (`what` names it in errors).
pub(crate) fn read_f32_file(
    path: &std::path::Path,
    len: usize,
    what: &str,
) -> anyhow::Result<Vec<f32>> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if bytes.len() != len * 4 {
        bail!(
            "{}: {what} takes {} bytes ({len} little-endian f32 values), the file has {}",
            path.display(),
            len * 4,
            bytes.len()
        );
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

/// Writes `values` as raw little-endian f32.
pub(crate) fn write_f32_file(path: &std::path::Path, values: &[f32]) -> anyhow::Result<()> {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// Fails unless `path` can be a file to write later: its folder exists and it is not a
/// folder itself (checked before long work, so a typo does not cost a whole run).
pub(crate) fn check_output_folder(path: &std::path::Path) -> anyhow::Result<()> {
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    if !folder.is_dir() {
        bail!(
            "{}: the folder {} does not exist",
            path.display(),
            folder.display()
        );
    }
    if path.is_dir() {
        bail!("{} is a folder", path.display());
    }
    Ok(())
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
/// a time, every layer on all workers, moving `bar` once per frame.
pub(crate) fn baseline(
    rt: &Runtime,
    model: &Arc<Model>,
    count: u64,
    seed: u64,
    bar: &ProgressBar,
) -> anyhow::Result<StreamReport> {
    let stats = layer_parallel(rt, model, frames(model, count, seed), |_, _| bar.inc(1))?;
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
