//! Command-line pieces every example shares: which CPUs, which layout, what emulation.
#![allow(dead_code)]

pub(crate) mod tune;

use std::path::PathBuf;

use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Args;
use indicatif::ProgressBar;
use taopipe::dsl::NetSpec;
use taopipe::nets::{Frame, Isa, Model, zoo};
use taopipe::runtime::{EmulationSpec, Place, Runtime, Topology, parse_cpu_list};
use taopipe::switch::{Switch, SwitchRun};

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

/// A deterministic input frame in [-1, 1) (xorshift of the seed): the same frame on every run.
pub(crate) fn frame_input(len: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// `count` frames of `model` with inputs `frame_input(_, seed + i)`, made as they are taken.
pub(crate) fn frames(
    model: &Arc<Model>,
    count: u64,
    seed: u64,
) -> impl Iterator<Item = Frame> + use<> {
    let model = model.clone();
    (0..count).map(move |i| {
        model
            .frame_from(&frame_input(model.input_len(), seed + i))
            .expect("frame_input has the model's input length")
    })
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

/// The layer-parallel baseline (how ONNX Runtime and ARM-CL run): frames one at a time,
/// every layer on all workers.
pub(crate) struct Baseline {
    /// Frames per second over the whole run.
    pub(crate) fps: f64,
    /// Each frame's time in ms (from its buffers' allocation to its last layer), sorted.
    ms: Vec<f64>,
}

impl Baseline {
    /// Runs `count` frames (inputs `frame_input(_, seed + i)`), moving `bar` once per frame:
    /// a switch-mode plan of one run, every unit on all workers.
    pub(crate) fn run(
        rt: &Runtime,
        model: &Arc<Model>,
        count: u64,
        seed: u64,
        bar: &ProgressBar,
    ) -> anyhow::Result<Baseline> {
        let everyone = SwitchRun {
            units: 0..model.spec().units().len(),
            place: Place::new(0, rt.num_workers()),
            speed: 1.0,
        };
        let stats = Switch::new(model.clone(), vec![everyone])?.run(
            rt,
            frames(model, count, seed),
            |_, _| bar.inc(1),
        )?;
        Ok(Baseline {
            fps: stats.throughput_fps(),
            ms: stats.latency_ms,
        })
    }

    /// The `q` quantile (0..=1) of the frame times, in ms.
    pub(crate) fn percentile_ms(&self, q: f64) -> f64 {
        self.ms[((self.ms.len() - 1) as f64 * q).round() as usize]
    }
}
