//! The report of a given plan streamed in pipeline or switch mode, next to the
//! layer-parallel baseline (the `pipeline` tool).

use std::ops::Range;

use serde::Serialize;
use taopipe_runtime::{Place, Topology};

use super::{MachineReport, StreamReport, cpu_ids};

/// A plan run on live frames: its stages (pipeline mode: every stage on its own workers,
/// frames overlapping) or its runs (switch mode, ARM-CO-UP's: one frame at a time, run
/// after run), and the layer-parallel baseline under the same conditions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanReport {
    /// The net's name.
    pub net: String,
    /// The workers, their speeds and devices before the run.
    #[serde(flatten)]
    pub machine: MachineReport,
    /// `pipeline` or `switch`.
    pub mode: String,
    /// The ARM-CO-UP mapping string the plan came from, if it came from one.
    pub mapping: Option<String>,
    /// One entry per pipeline stage (pipeline mode) or run (switch mode), in net order.
    pub plan: Vec<PlanPart>,
    /// The stream through the plan.
    pub run: StreamReport,
    /// The layer-parallel baseline (every layer on the widest allowed place, one frame at a
    /// time) under the same conditions.
    pub baseline: StreamReport,
    /// Whether a stop (an interrupt) ended a stream before its frames were all run.
    pub partial: bool,
}

/// One stage or run of a plan, and what it measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanPart {
    /// Its units, `[first, end)`.
    pub unit_range: [usize; 2],
    /// How many units that is.
    pub units: usize,
    /// The OS CPUs of its workers.
    pub cpus: Vec<usize>,
    /// First worker of its place.
    pub leader: usize,
    /// Workers of its place.
    pub width: usize,
    /// The factor its workers' speed was scaled by while it ran (emulated DVFS; 1 =
    /// unchanged).
    pub speed_factor: f64,
    /// Its mean busy time per frame, ms.
    pub ms_per_frame: f64,
}

impl PlanPart {
    /// The part running `units` on `place` of `topology` at `speed_factor`, busy
    /// `ms_per_frame` per frame.
    pub fn new(
        topology: &Topology,
        units: Range<usize>,
        place: Place,
        speed_factor: f64,
        ms_per_frame: f64,
    ) -> PlanPart {
        PlanPart {
            unit_range: [units.start, units.end],
            units: units.len(),
            cpus: cpu_ids(topology, place.workers()),
            leader: place.leader(),
            width: place.width(),
            speed_factor,
            ms_per_frame,
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn a_part_counts_its_units_and_names_the_cpus_of_its_place() {
        // Workers 0..4 on OS CPUs 2, 3, 6, 7.
        let topology = Topology::symmetric(8)
            .and_then(|t| t.restrict(&[2, 3, 6, 7]))
            .expect("topology");
        let p = PlanPart::new(&topology, 5..12, Place::new(1, 2), 0.5, 3.25);
        assert_eq!((p.unit_range, p.units), ([5, 12], 7));
        assert_eq!(p.cpus, [3, 6]);
        assert_eq!((p.leader, p.width), (1, 2));
    }
}
