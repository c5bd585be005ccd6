//! The report of frames run one at a time, every layer on one place (the `frame` tool).

use serde::Serialize;
use taopipe_nets::probe::{self, Limits};
use taopipe_nets::{BuildOptions, Isa, LayerTime, Model};
use taopipe_runtime::{Place, Runtime, RuntimeError};

/// Frames of one net run one after another on one place, what they took and what the last
/// one output.
///
/// [`FrameReport::new`] fills in what the model and the times say; the caller sets where
/// the weights and input came from, `checked_width1`, `partial`, `layer_times`,
/// `limits` and `timeline`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrameReport {
    /// The net's name.
    pub net: String,
    /// Layers of the net.
    pub layers: usize,
    /// Pipeline units of the net (what a pipeline is cut between).
    pub units: usize,
    /// Floating-point operations of one frame, in GFLOP (multiply-add = 2).
    pub gflop_per_frame: f64,
    /// Buffers one frame holds at most, in MB (10⁶ bytes): the input, the activations
    /// (the memory plan's, or one per layer with `keep_outputs`) and the gangs' workspace.
    pub frame_buffer_mb: f64,
    /// The part of `frame_buffer_mb` that is the gangs' workspace, allocated only by a
    /// gang that uses it (never at width 1).
    pub workspace_mb: f64,
    /// Residual convs that write over their shortcut's buffer and read the residual from it
    /// ([`Model::in_place_layers`](taopipe_nets::Model::in_place_layers)).
    pub residuals_in_place: usize,
    /// Workers of the runtime.
    pub workers: usize,
    /// Workers of the place every layer ran on.
    pub width: usize,
    /// That place, `leader+width`.
    pub place: String,
    /// `random` (seeded random weights) or the weights file's path.
    pub weights: String,
    /// The convolution algorithms: `auto` (as `ConvAlgo::choose` picks) or the name of the
    /// one forced where it applies, `direct` or `lanes` ([`BuildOptions::conv`]).
    ///
    /// [`BuildOptions::conv`]: taopipe_nets::BuildOptions::conv
    pub conv: String,
    /// Whether every layer kept an output buffer of its own ([`BuildOptions::keep_outputs`]).
    pub keep_outputs: bool,
    /// `seeded` (made from the seed) or the input file's path.
    pub input: String,
    /// Each timed frame's time, ms, in order (the warm-up frame is not among them).
    pub frame_ms: Vec<f64>,
    /// The median of `frame_ms` (the upper one of an even count), ms; `None` without
    /// timed frames (a stop came first).
    pub median_ms: Option<f64>,
    /// Throughput at the median frame time, GFLOP/s.
    pub gflops: Option<f64>,
    /// Whether every frame was also run on one worker and found bit-identical.
    pub checked_width1: bool,
    /// The last frame's five highest outputs, highest first.
    pub top5: Vec<TopClass>,
    /// Whether a stop (an interrupt) ended the frames before all were timed.
    pub partial: bool,
    /// Each layer's time at the place, when asked for (`frame --profile`); absent from
    /// the JSON otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layer_times: Option<Vec<LayerTimeReport>>,
    /// The machine's limits measured in the same run, when asked for (`frame --peak`): on
    /// one worker, then on the place's workers at once if it has more; absent from the
    /// JSON otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<Vec<LimitsReport>>,
    /// What the ranks' spans over the timed frames add up to, when asked for (`frame
    /// --trace`); absent from the JSON otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<super::TimelineReport>,
}

/// What some workers reach at once ([`probe::limits_on`]): the anchor a frame's GFLOP/s
/// and a layer's GB/s are read against.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LimitsReport {
    /// Workers measured at once.
    pub workers: usize,
    /// FMA peak, GFLOP/s, summed over the workers.
    pub fma_gflops: f64,
    /// Read bandwidth (the FC layers' row-dot kernel), GB/s, summed over the workers.
    pub read_gbs: f64,
    /// Copy bandwidth (bytes read plus written), GB/s, summed over the workers.
    pub copy_gbs: f64,
}

impl From<&Limits> for LimitsReport {
    fn from(l: &Limits) -> LimitsReport {
        LimitsReport {
            workers: l.workers,
            fma_gflops: l.fma_gflops,
            read_gbs: l.bandwidth.read_gbs,
            copy_gbs: l.bandwidth.copy_gbs,
        }
    }
}

impl LimitsReport {
    /// Seconds of the FMA probe on each worker in [`LimitsReport::measure`].
    pub const FMA_SECS: f64 = 0.3;

    /// The limits of `one` (a place of one worker), then of `place` if it is wider, each
    /// measured now ([`probe::limits_on`], [`probe::LIMITS_BYTES`] streamed): a report's
    /// `limits`. Takes about a second per place.
    ///
    /// # Errors
    /// A place the runtime does not have.
    pub fn measure(
        rt: &Runtime,
        isa: Isa,
        one: Place,
        place: Place,
    ) -> Result<Vec<LimitsReport>, RuntimeError> {
        let places = if place.width() > 1 {
            vec![one, place]
        } else {
            vec![one]
        };
        places
            .into_iter()
            .map(|p| {
                let l = probe::limits_on(rt, p, isa, Self::FMA_SECS, probe::LIMITS_BYTES)?;
                Ok(LimitsReport::from(&l))
            })
            .collect()
    }
}

impl std::fmt::Display for LimitsReport {
    /// `2 workers at once: FMA 480.2 GFLOP/s, read 35.1 GB/s, copy 40.3 GB/s`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let who = match self.workers {
            1 => "1 worker".to_string(),
            n => format!("{n} workers at once"),
        };
        write!(
            f,
            "{who}: FMA {:.1} GFLOP/s, read {:.1} GB/s, copy {:.1} GB/s",
            self.fma_gflops, self.read_gbs, self.copy_gbs
        )
    }
}

/// One output of a frame: a class index and its score.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TopClass {
    /// Index into the net's output (an ImageNet class for the zoo's nets).
    pub class: usize,
    /// Its value in the output (a logit: the zoo's nets end without softmax).
    pub score: f32,
}

impl TopClass {
    /// The `k` highest values of `output`, highest first; equal scores keep index order.
    pub fn top(output: &[f32], k: usize) -> Vec<TopClass> {
        let mut all: Vec<TopClass> = output
            .iter()
            .enumerate()
            .map(|(class, &score)| TopClass { class, score })
            .collect();
        all.sort_by(|a, b| b.score.total_cmp(&a.score));
        all.truncate(k);
        all
    }
}

/// One layer's time at the place (the trace table's moving average over the frames).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayerTimeReport {
    /// Index of the layer in the net.
    pub index: usize,
    /// Its name.
    pub name: String,
    /// Its kernel, as the nets crate describes it.
    pub kernel: String,
    /// Floating-point operations of one run.
    pub flops: u64,
    /// Its time, ms.
    pub ms: f64,
    /// GFLOP/s at that time.
    pub gflops: f64,
    /// Runs the average has seen.
    pub samples: u64,
}

impl From<&LayerTime> for LayerTimeReport {
    fn from(t: &LayerTime) -> LayerTimeReport {
        LayerTimeReport {
            index: t.index,
            name: t.name.clone(),
            kernel: t.kernel.clone(),
            flops: t.flops,
            ms: t.seconds * 1e3,
            gflops: t.gflops(),
            samples: t.samples,
        }
    }
}

impl FrameReport {
    /// The report of `frame_ms` (each timed frame, ms) of `model`, built with `options`,
    /// every layer on `place` of a runtime of `workers` workers; `output` is the last
    /// frame's output. Weights `random`, input `seeded`, not checked, not partial, no layer
    /// times: set those fields where they differ.
    ///
    /// ```
    /// use taopipe_live::report::FrameReport;
    /// use taopipe_nets::{BuildOptions, Model, RandomWeights, zoo};
    /// use taopipe_runtime::Place;
    ///
    /// let model = Model::build(zoo::synth1()?, &RandomWeights { seed: 1 })?;
    /// let options = BuildOptions::default();
    /// let report = FrameReport::new(&model, &options, 2, Place::new(0, 2), vec![4.0, 2.0, 3.0], &[0.5, 2.0]);
    /// assert_eq!(report.median_ms, Some(3.0));
    /// assert_eq!(report.top5[0].class, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(
        model: &Model,
        options: &BuildOptions,
        workers: usize,
        place: Place,
        frame_ms: Vec<f64>,
        output: &[f32],
    ) -> FrameReport {
        let mut sorted = frame_ms.clone();
        sorted.sort_by(f64::total_cmp);
        let median_ms = sorted.get(sorted.len() / 2).copied();
        let gflop = model.flops() as f64 / 1e9;
        FrameReport {
            net: model.spec().name().to_string(),
            layers: model.spec().len(),
            units: model.spec().units().len(),
            gflop_per_frame: gflop,
            frame_buffer_mb: model.frame_floats() as f64 * 4e-6,
            workspace_mb: model.workspace_floats() as f64 * 4e-6,
            residuals_in_place: model.in_place_layers(),
            workers,
            width: place.width(),
            place: place.to_string(),
            weights: "random".into(),
            conv: options.conv.map_or("auto", |a| a.name()).into(),
            keep_outputs: options.keep_outputs,
            input: "seeded".into(),
            frame_ms,
            median_ms,
            gflops: median_ms.map(|m| gflop / (m / 1e3)),
            checked_width1: false,
            top5: TopClass::top(output, 5),
            partial: false,
            layer_times: None,
            limits: None,
            timeline: None,
        }
    }
}

#[cfg(test)]
mod test {
    use taopipe_nets::{RandomWeights, zoo};

    use super::*;

    #[test]
    fn limits_name_their_workers() {
        let l = LimitsReport {
            workers: 2,
            fma_gflops: 480.25,
            read_gbs: 35.06,
            copy_gbs: 40.3,
        };
        assert_eq!(
            l.to_string(),
            "2 workers at once: FMA 480.2 GFLOP/s, read 35.1 GB/s, copy 40.3 GB/s"
        );
        let one = LimitsReport { workers: 1, ..l };
        assert!(one.to_string().starts_with("1 worker: FMA"), "{one}");
    }

    #[test]
    fn limits_are_measured_on_one_worker_then_on_a_wider_place() {
        let rt = Runtime::builder().workers(2).build().expect("runtime");
        let (one, two) = (Place::new(0, 1), Place::new(0, 2));
        let both = LimitsReport::measure(&rt, Isa::Portable, one, two).expect("measured");
        let workers: Vec<usize> = both.iter().map(|l| l.workers).collect();
        assert_eq!(workers, [1, 2]);
        assert!(both.iter().all(|l| l.fma_gflops > 0.0 && l.read_gbs > 0.0));
        let alone = LimitsReport::measure(&rt, Isa::Portable, one, one).expect("measured");
        assert_eq!(alone.len(), 1, "a one-worker place is measured once");
    }

    #[test]
    fn the_median_throughput_and_top_classes_come_from_the_frames() {
        let model = Model::build(zoo::synth1().expect("synth1"), &RandomWeights { seed: 1 })
            .expect("model");
        let options = BuildOptions {
            conv: Some(taopipe_nets::ConvAlgo::Direct),
            ..BuildOptions::default()
        };
        let output = [0.1, 3.0, -1.0, 3.0, 2.0, 0.5, 0.2];
        let r = FrameReport::new(
            &model,
            &options,
            4,
            Place::new(1, 2),
            vec![20.0, 10.0],
            &output,
        );
        // An even count: the upper median.
        assert_eq!(r.median_ms, Some(20.0));
        let gflops = r.gflops.expect("a median");
        assert!((gflops - r.gflop_per_frame / 0.020).abs() < 1e-9, "{r:?}");
        assert_eq!((r.place.as_str(), r.width, r.workers), ("1+2", 2, 4));
        assert_eq!(r.conv, "direct");
        let classes: Vec<usize> = r.top5.iter().map(|c| c.class).collect();
        assert_eq!(classes, [1, 3, 4, 5, 6], "ties keep index order");

        let none = FrameReport::new(&model, &options, 4, Place::new(0, 1), Vec::new(), &output);
        assert_eq!((none.median_ms, none.gflops), (None, None));
        let json = serde_json::to_value(&none).expect("JSON");
        assert!(json["median_ms"].is_null() && json.get("layer_times").is_none());
    }

    #[test]
    fn a_layer_time_is_reported_in_ms_with_its_throughput() {
        let t = LayerTime {
            index: 3,
            name: "conv2".into(),
            kernel: "direct 3x3".into(),
            flops: 2_000_000,
            seconds: 0.001,
            samples: 7,
        };
        let r = LayerTimeReport::from(&t);
        assert!(
            (r.ms - 1.0).abs() < 1e-12 && (r.gflops - 2.0).abs() < 1e-9,
            "{r:?}"
        );
        assert_eq!((r.index, r.samples), (3, 7));
    }
}
