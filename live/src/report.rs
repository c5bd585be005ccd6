//! What a run of the engine reports: one [`Report`] that derives `Serialize`, so the JSON
//! a script reads is this struct, and a human table ([`fmt::Display`]).

use std::fmt;

use serde::Serialize;
use taopipe_runtime::{PipelineStats, Runtime};
use taopipe_tuner::Configuration;

use crate::planners::armcoup::SwitchStats;
use crate::tune::TuneOptions;

/// Median and tail latency in ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Latency {
    /// 50th percentile.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// One stage of the pipeline served.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageReport {
    /// Consecutive units of the net (a unit is one or more layers).
    pub units: usize,
    /// First worker of its place.
    pub leader: usize,
    /// Workers of its place.
    pub width: usize,
    /// The OS CPUs of those workers.
    pub cpus: Vec<usize>,
    /// Mean busy time per frame, ms.
    pub ms_per_frame: f64,
}

/// A stream of frames: how many, how fast, how late.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamReport {
    /// Frames delivered.
    pub frames: u64,
    /// Frames per second over the stream.
    pub throughput_fps: f64,
    /// Latency per frame, from its admission to its output (queueing included).
    pub latency_ms: Latency,
}

impl StreamReport {
    /// From a pipeline's statistics.
    pub fn from_pipeline(stats: &PipelineStats) -> StreamReport {
        StreamReport {
            frames: stats.delivered,
            throughput_fps: stats.throughput_fps(),
            latency_ms: Latency {
                p50: stats.latency_ms(0.5),
                p99: stats.latency_ms(0.99),
            },
        }
    }

    /// From the layer-parallel baseline's statistics.
    pub fn from_switch(stats: &SwitchStats) -> StreamReport {
        StreamReport {
            frames: stats.frames,
            throughput_fps: stats.throughput_fps(),
            latency_ms: Latency {
                p50: stats.latency_ms(0.5),
                p99: stats.latency_ms(0.99),
            },
        }
    }
}

/// How the served configuration was found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TuningReport {
    /// The settings.
    pub options: TuneOptions,
    /// Every trial, the best and how long it took (the tuner's report).
    pub search: taopipe_tuner::Report,
}

/// A run of the engine.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// taopipe's version.
    pub version: &'static str,
    /// The net's name.
    pub net: String,
    /// The kernels' instruction-set path (`avx512`, `avx2`, `neon`, `portable`).
    pub isa: String,
    /// The OS CPU of each worker.
    pub cpus: Vec<usize>,
    /// Each worker's speed factor (emulation; 1 = full speed).
    pub speeds: Vec<f64>,
    /// The emulation asked for, as given (`--emulate`), if any.
    pub emulation: Option<String>,
    /// The tuning, if the engine was tuned.
    pub tuning: Option<TuningReport>,
    /// The configuration served, stage by stage.
    pub pipeline: Vec<StageReport>,
    /// The stream through it.
    pub run: StreamReport,
    /// The layer-parallel baseline under the same conditions, if it was run.
    pub baseline: Option<StreamReport>,
}

impl Report {
    /// The stages of `config` as served in `stats`, with their CPUs on `rt`.
    pub(crate) fn stages(
        rt: &Runtime,
        config: &Configuration,
        stats: &PipelineStats,
    ) -> Vec<StageReport> {
        let cpus = rt.topology().cpus();
        config
            .stages()
            .iter()
            .zip(&stats.stages)
            .map(|(s, st)| StageReport {
                units: s.layers,
                leader: s.leader,
                width: s.width,
                cpus: (s.leader..s.leader + s.width).map(|w| cpus[w].id).collect(),
                ms_per_frame: st.mean_ms(),
            })
            .collect()
    }

    /// The pipeline's throughput over the baseline's, if there is one.
    pub fn speedup(&self) -> Option<f64> {
        self.baseline
            .as_ref()
            .map(|b| self.run.throughput_fps / b.throughput_fps)
    }
}

impl fmt::Display for Report {
    /// The chosen pipeline, stage by stage, then throughput and latency next to the
    /// baseline's.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<8} {:>8} {:>8} {:>10}",
            "stage", "place", "units", "ms/frame"
        )?;
        for (i, s) in self.pipeline.iter().enumerate() {
            let place = format!("{}+{}", s.leader, s.width);
            writeln!(
                f,
                "{:<8} {:>8} {:>8} {:>10.1}",
                format!("stage{i}"),
                place,
                s.units,
                s.ms_per_frame
            )?;
        }
        writeln!(
            f,
            "\n{:<16} {:>10} {:>10} {:>10}",
            "", "frames/s", "p50 ms", "p99 ms"
        )?;
        let rows = std::iter::once(("pipeline", &self.run))
            .chain(self.baseline.as_ref().map(|b| ("layer-parallel", b)));
        for (name, r) in rows {
            writeln!(
                f,
                "{name:<16} {:>10.2} {:>10.1} {:>10.1}",
                r.throughput_fps, r.latency_ms.p50, r.latency_ms.p99
            )?;
        }
        if let Some(x) = self.speedup() {
            writeln!(f, "pipeline / layer-parallel throughput: {x:.2}")?;
        }
        Ok(())
    }
}
