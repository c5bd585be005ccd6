//! Live measurement: the tuner's [`Measure`] on a real net, through the runtime.
//!
//! [`LiveMeasure`] runs one frame through the whole net once, so that every layer's output
//! is in the frame's buffers; a configuration's stage `i` is then the graph of its units on
//! its place, and each stage can be timed on its own — **isolated**, as the paper measures
//! during tuning (the stage alone on its workers, reading inputs an earlier stage left) —
//! or all stages together as a real **pipelined** stream of frames. Wrap it in
//! [`taopipe_tuner::Robust`] for warm-up runs, repetitions and a median.

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use taopipe_dsl::SpeedScaled;
use taopipe_nets::{Frame, Model, ModelError};
use taopipe_runtime::{Pipeline, Place, Runtime, RuntimeError, Stage};
use taopipe_tuner::{Configuration, Measure, MeasureError, StageTimes};

/// The speed-aware seed key for `rt` as it runs now (beyond the paper):
/// [`taopipe_tuner::speed_key`] of the runtime's worker speeds on the places its layout
/// allows.
///
/// The speeds are what the runtime knows — emulation factors (`--emulate`). A noisy
/// neighbour it does not know about leaves every speed at 1, and then the seeds are
/// exactly the paper's; measuring (Pipe-search) still finds the slow core.
///
/// ```
/// use taopipe_dsl::{Seeds, StageKey};
/// use taopipe_runtime::{EmulationSpec, Runtime, Topology};
///
/// let rt = Runtime::builder().topology(Topology::symmetric(2)?).pin(false).build()?;
/// rt.emulate(&"w1=powersave".parse::<EmulationSpec>()?)?;
/// let seeds = Seeds::new(&[1; 9], 2)?.with_key(taopipe_live::speed_key(&rt));
/// assert_eq!(seeds.top_k(2, 1)?[0].composition, vec![6, 3]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn speed_key(rt: &Runtime) -> SpeedScaled {
    taopipe_tuner::speed_key(rt.speeds(), &crate::stream::allowed_places(rt))
}

/// A callback after each measurement.
type OnTrial<'a> = dyn FnMut(&Configuration, &StageTimes) + 'a;

/// How a configuration's stage times are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveMode {
    /// Each stage alone on its place, one after another (the paper's tuning measurement).
    Isolated,
    /// The pipeline itself, streaming this many frames; a stage's time is its mean.
    Pipelined {
        /// Frames per measurement.
        frames: u64,
    },
}

/// Stage times of configurations of `model`, measured on `rt`.
pub struct LiveMeasure<'a> {
    rt: &'a Runtime,
    model: Arc<Model>,
    input: Vec<f32>,
    frame: Arc<Frame>,
    mode: LiveMode,
    on_trial: Option<Box<OnTrial<'a>>>,
}

impl<'a> LiveMeasure<'a> {
    /// Runs `input` through the whole net once (on the [`widest_place`](crate::widest_place))
    /// so every stage has inputs.
    ///
    /// # Errors
    /// A wrong input length, or a failing layer.
    pub fn new(
        rt: &'a Runtime,
        model: Arc<Model>,
        input: Vec<f32>,
        mode: LiveMode,
    ) -> Result<LiveMeasure<'a>, ModelError> {
        let frame = Arc::new(model.frame(input.clone())?);
        let place = crate::stream::widest_place(rt);
        rt.run(model.graph(&frame, |_| place))?;
        Ok(LiveMeasure {
            rt,
            model,
            input,
            frame,
            mode,
            on_trial: None,
        })
    }

    /// Calls `f` after every measurement (progress bars, trial tables).
    pub fn on_trial(mut self, f: impl FnMut(&Configuration, &StageTimes) + 'a) -> LiveMeasure<'a> {
        self.on_trial = Some(Box::new(f));
        self
    }

    /// The pipeline stages of a configuration of this model: each runs its units of a frame
    /// through a graph prepared for the frame's pooled buffers (`Model::run_stage`).
    pub fn stages(model: &Arc<Model>, config: &Configuration) -> Vec<Stage<Arc<Frame>>> {
        stage_units(config)
            .into_iter()
            .enumerate()
            .map(|(i, (range, place))| {
                let m = model.clone();
                Stage::runner(format!("stage{i}"), place, move |rt, f: &Arc<Frame>| {
                    m.run_stage(rt, f, range.clone(), place)
                })
            })
            .collect()
    }

    /// Fills the model's frame pool for `pipeline` (built from [`stages`](Self::stages) of
    /// `config`): as many buffer sets as it can hold in flight, each with its stages'
    /// graphs prepared, so no frame of the run allocates or prepares a graph.
    ///
    /// # Errors
    /// A stage place outside `rt`.
    pub fn reserve(
        rt: &Runtime,
        model: &Model,
        config: &Configuration,
        pipeline: &Pipeline<Arc<Frame>>,
    ) -> Result<(), RuntimeError> {
        model.reserve_frames(rt, pipeline.max_in_flight(), &stage_units(config))
    }

    fn isolated(&self, config: &Configuration) -> Result<Vec<f64>, MeasureError> {
        let mut stage_ms = Vec::with_capacity(config.stage_count());
        for (range, (leader, width)) in config.unit_ranges().into_iter().zip(config.places()) {
            let graph = self
                .model
                .stage_graph(&self.frame, range, Place::new(leader, width));
            let start = Instant::now();
            self.rt.run(graph).map_err(|e| MeasureError::Failed {
                reason: format!("{config}: {e}"),
            })?;
            stage_ms.push(start.elapsed().as_secs_f64() * 1e3);
        }
        Ok(stage_ms)
    }

    fn pipelined(&self, config: &Configuration, frames: u64) -> Result<Vec<f64>, MeasureError> {
        let (model, input) = (&self.model, &self.input);
        let source = (0..frames).map(|_| {
            model
                .frame_from(input)
                .expect("the input length was checked")
        });
        let stats =
            crate::stream::stream(self.rt, model, config, source, |_, _| {}).map_err(|e| {
                MeasureError::Failed {
                    reason: format!("{config}: {e}"),
                }
            })?;
        Ok(stats.stages.iter().map(|s| s.mean_ms()).collect())
    }
}

impl Measure for LiveMeasure<'_> {
    fn stage_times(&mut self, config: &Configuration) -> Result<StageTimes, MeasureError> {
        let stage_ms = match self.mode {
            LiveMode::Isolated => self.isolated(config)?,
            LiveMode::Pipelined { frames } => self.pipelined(config, frames.max(1))?,
        };
        let times = StageTimes::new(stage_ms);
        if let Some(f) = &mut self.on_trial {
            f(config, &times);
        }
        Ok(times)
    }
}

impl std::fmt::Debug for LiveMeasure<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveMeasure")
            .field("net", &self.model.spec().name())
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

/// Each stage of `config`: its units and its place.
fn stage_units(config: &Configuration) -> Vec<(Range<usize>, Place)> {
    config
        .unit_ranges()
        .into_iter()
        .zip(config.places())
        .map(|(range, (leader, width))| (range, Place::new(leader, width)))
        .collect()
}
