//! Online tuning of CNN pipelines: pipeline [`Configuration`]s with explicit places (kept
//! to the [`AllowedPlaces`] of a layout file), the [`Measure`] trait with a [`SimulatedPlatform`] and a [`Robust`] wrapper, **Pipe-search**
//! (the paper's Alg. 2, [`PipeSearch`]) and its baselines ([`Exhaustive`], [`RandomWalk`],
//! [`pipe_search_without_hints`]), and serialisable [`Report`]s.
//!
//! The tuner knows nets only as unit weights (the DSL's [`Seeds`](taopipe_dsl::Seeds)) and
//! platforms only through [`Measure`]; it does not depend on `taopipe-nets`.
//!
//! ```
//! use taopipe_dsl::{Seeds, SYNTH2};
//! use taopipe_tuner::{
//!     Exhaustive, PipeSearch, PlacePolicy, SearchSpace, SimulatedPlatform, Tx2Governor,
//! };
//!
//! let costs: Vec<f64> = SYNTH2.iter().map(|&w| w as f64).collect();
//! let mut sim = SimulatedPlatform::tx2(costs, Tx2Governor::Setting3);
//! let found = PipeSearch::new(10, 4).run(&Seeds::new(&SYNTH2, 4)?, &mut sim)?;
//! let space = SearchSpace::new(SYNTH2.len(), 4, 4, PlacePolicy::Contiguous);
//! let truth = Exhaustive::new(space.clone()).run(&mut sim)?;
//! println!("Pipe-search: {} ({:.1} ms) in {} of {} trials", found.best, found.best_ms(),
//!          found.trials.len(), space.size());
//! assert!(found.best_ms() <= truth.best_ms() * 1.05);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod baselines;
mod config;
mod measure;
mod pipe_search;
mod places;
mod report;
mod retune;
mod simulated;
mod speeds;
mod stable;
mod trial;
mod watch;

pub use baselines::{Exhaustive, RandomWalk, count_seeds, pipe_search_without_hints};
pub use config::{
    Compositions, ConfigError, Configuration, PlacePolicy, SearchSpace, SpaceIter, StageConfig,
    contiguous_places, space_size,
};
pub use measure::{
    Measure, MeasureError, Robust, RobustOptions, StageTimes, median, median_without_outliers,
};
pub use pipe_search::PipeSearch;
pub use places::AllowedPlaces;
pub use report::{BestRecord, Report};
pub use retune::{CONFIRM_MAX, WarmStart, confirm, retune};
pub use simulated::{
    POWERSAVE_SPEED, PRESET_EFFICIENCY, PRESET_PENALTY, SimulatedPlatform, Tx2Governor,
};
pub use speeds::{speed_key, worker_speeds};
pub use stable::{PROBE_MARGIN, RACE_MARGIN, RACE_SAMPLES, Samples, Stability};
pub use trial::{Phase, SearchError, SearchResult, StopReason, Trial};
pub use watch::{Change, Watch, WatchOptions};
