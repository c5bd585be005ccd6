//! The live layer's one error type: whatever failed below it, with its source.

use taopipe_dsl::DslError;
use taopipe_nets::ModelError;
use taopipe_runtime::{EmulationError, PipelineError, RuntimeError, ScheduleError};
use taopipe_tuner::{ConfigError, SearchError};

use crate::planners::armcoup::SwitchError;
use crate::soak::SoakError;

/// What went wrong while tuning or serving.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LiveError {
    /// The model rejected a frame or failed a layer.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The runtime refused a graph or a place.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// A pipeline stage failed.
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    /// The search failed (a measurement, or no stage count to search).
    #[error(transparent)]
    Search(#[from] SearchError),
    /// A configuration does not fit the net or the workers.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The layer-parallel baseline failed.
    #[error(transparent)]
    Switch(#[from] SwitchError),
    /// The net's seeds could not be built.
    #[error("seeds: {0}")]
    Dsl(#[from] DslError),
    /// An emulation schedule that does not fit the runtime.
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    /// Applying an emulation step failed.
    #[error(transparent)]
    Emulation(#[from] EmulationError),
    /// A soak that cannot run.
    #[error(transparent)]
    Soak(#[from] SoakError),
    /// A frame rate that is not a finite number of at least [`crate::MIN_RATE_FPS`].
    #[error(
        "frame rate {0:?}: expected a finite number of frames per second of at least {min:e}",
        min = crate::MIN_RATE_FPS
    )]
    BadRate(f64),
    /// Stopped ([`Engine::with_stop`](crate::Engine::with_stop)) before a tuning had
    /// measured anything: there is no result to return. A stop after the first trial is
    /// no error: the search returns the trials done.
    #[error("stopped before the first trial was measured")]
    Stopped,
}
