//! The live layer of taopipe: what runs a real net on a real runtime, measures it, tunes
//! it and serves frames through it.
//!
//! - [`engine`]: the [`Engine`] a library user holds: tune, then serve frames.
//! - [`measure`]: the tuner's [`Measure`](taopipe_tuner::Measure) on a real net
//!   ([`LiveMeasure`]), and the speed-aware seed key.
//! - [`mod@tune`]: the live search, with the one-stage candidate it always considers.
//! - [`mod@stream`]: the frame source, streaming a configuration, the layer-parallel baseline,
//!   the places a runtime's layout allows.
//! - [`mod@serve`]: serving a frame source through configurations that change between
//!   frames, and trials timed on live frames.
//! - [`report`]: the run's [`Report`] (`Serialize`: the JSON scripts read), and the
//!   reports of the tools beside the engine: frames on one place, a given plan, every
//!   planner side by side.
//! - [`devices`]: the runtime's workers grouped into the "devices" of the other papers'
//!   planners.
//! - [`planners`]: the seed papers' planners, one module each (Pipe-it, ARM-CO-UP, MOSAIC,
//!   CoDL).
//! - [`mod@soak`]: a net streamed for a long time while its pipeline is reconfigured and the
//!   emulated speeds change; every frame checked once and in order, memory bounded.
//! - [`plot`]: SVG pictures of a run's [`Report`] (over time, and the stage balance) and of
//!   a soak.
//! - [`output`]: output paths checked before a long run, and files written whole
//!   (temporary file, then rename).
//!
//! **Interrupts.** Nothing here installs a signal handler: a library must not own its
//! process's signals. A caller that wants Ctrl-C to end a run cleanly registers a flag with
//! its handler and gives it to the engine ([`Engine::with_stop`],
//! [`StopSignal::from_flag`](taopipe_runtime::StopSignal::from_flag)); raising it ends
//! tuning between trials (the trials done are kept, the search `stopped: "stopped"`) and
//! serving between frames (every admitted frame delivered, in order), and the
//! [`Report`] says [`partial`](Report::partial). The examples write that report with
//! [`output::write_atomic`], so no half-written report is ever left behind.
#![deny(missing_docs)]

pub mod devices;
pub mod engine;
mod error;
pub mod input;
pub mod measure;
pub mod output;
pub mod planners;
pub mod plot;
pub mod report;
pub mod serve;
pub mod soak;
pub mod stream;
pub mod tune;

pub use engine::{Engine, Handle, MIN_RATE_FPS};
pub use error::LiveError;
pub use measure::{LiveMeasure, LiveMode, speed_key};
pub use report::Report;
pub use soak::{SoakOptions, SoakReport, soak};
pub use stream::{allowed_places, frame_input, frames, layer_parallel, stream, widest_place};
pub use tune::{MeasureKind, SearchKind, SeedKind, TuneOptions};
