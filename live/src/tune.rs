//! Tuning a net live: which search, how trials are measured, and the one-stage candidate
//! every tuning considers.
//!
//! # The one-stage candidate (a decision beyond the paper)
//! Pipe-search (Alg. 2) searches 2..=C stages. [`tune`] also measures the one-stage
//! configuration, every unit on all workers (layer-parallel), before the search, with the
//! same measurement, and serves it if it is strictly faster than the search's best
//! ([`SearchResult::with_prior`]): a pipeline is only worth its queues when it wins, and
//! on equal cores it often does not.
//!
//! # Layouts
//! Every configuration keeps to the places the runtime's layout allows
//! ([`allowed_places`]): the one-stage candidate runs on the
//! [`widest_place`](crate::widest_place), the
//! search's stages on the widest allowed place inside their runs
//! ([`AllowedPlaces`](taopipe_tuner::AllowedPlaces)). A layout whose runs hold no place
//! for two stages or more leaves the one-stage configuration alone.
//!
//! # Stopping
//! [`tune`] and [`search`] take the caller's [`StopSignal`]: once it is raised, no trial
//! starts (and a live trial in progress admits no frame more, its admitted frames
//! delivered), and the search returns the trials done, marked
//! [`StopReason::Stopped`] ([`MeasureError::Stopped`] ends every search that way). A stop
//! before the first trial is [`LiveError::Stopped`].

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use taopipe_dsl::Seeds;
use taopipe_nets::Model;
use taopipe_runtime::{Runtime, StopSignal};
use taopipe_tuner::{
    Configuration, Exhaustive, Measure, MeasureError, PipeSearch, PlacePolicy, RandomWalk, Robust,
    RobustOptions, SearchError, SearchResult, SearchSpace, Stability, StageTimes, StopReason,
    WatchOptions, confirm, pipe_search_without_hints,
};

use crate::LiveError;
use crate::measure::{LiveMeasure, LiveMode, speed_key};
use crate::serve::{ServedMeasure, Server};
use crate::stream::{allowed_places, frame_input, frames};

/// Defines a settings enum with its names: `FromStr` (an unknown name is an error listing
/// the known ones), `Display`, and serialisation as the name.
macro_rules! named_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
        #[serde(rename_all = "lowercase")]
        pub enum $name { $($(#[$vdoc])* $variant),+ }

        impl $name {
            /// Every value's name, in order.
            pub const NAMES: &[&str] = &[$($text),+];
        }

        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(format!("`{s}`: expected one of {}", Self::NAMES.join(", "))),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(match self { $($name::$variant => $text),+ })
            }
        }
    };
}

named_enum! {
    /// Which search tunes the pipeline.
    SearchKind {
        /// Pipe-search (paper Alg. 2): CV-sorted seeds, α-confidence.
        Pipe = "pipe",
        /// Every configuration once.
        Exhaustive = "exhaustive",
        /// Uniform draws without repeats, α·(C+1) trials (Pipe-search's expected count).
        Random = "random",
        /// Pipe-search with seeds balanced by unit count instead of weight.
        Nohints = "nohints",
    }
}

named_enum! {
    /// How each trial's stage times are taken.
    MeasureKind {
        /// The pipeline serving frames: each stage's service time per live frame, one frame
        /// more at a time until the medians are stable ([`crate::serve`]). The default.
        Live = "live",
        /// Each stage alone on its workers, one after another (the paper's tuning
        /// measurement): repetitions of one frame.
        Isolated = "isolated",
        /// The pipeline streaming 4 frames per repetition, its stages' mean times.
        Pipelined = "pipelined",
    }
}

named_enum! {
    /// How Pipe-search's seed lists are ranked.
    SeedKind {
        /// The CV of the stage weights (Alg. 1).
        Paper = "paper",
        /// Stage weights scaled by the known speed and width of each stage's place
        /// ([`speed_key`]); the same as `paper` when no speed differs.
        Speed = "speed",
    }
}

/// The settings of one tuning.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TuneOptions {
    /// The search.
    pub search: SearchKind,
    /// α: a stage count's exploration stops after this many trials without improvement.
    pub alpha: usize,
    /// Most stages (C); `None`: one per worker.
    pub max_stages: Option<usize>,
    /// Most samples per trial (live frames, or repetitions after one warm-up for the
    /// other measurements); the medians count.
    pub reps: usize,
    /// A trial stops before `reps` samples once its slowest stage's median moved by at
    /// most this fraction with the last sample, after at least 3 ([`Stability`]); 0: always
    /// `reps` samples.
    pub tolerance: f64,
    /// How trials are measured.
    pub measure: MeasureKind,
    /// How seeds are ranked.
    pub seeds: SeedKind,
    /// Seed of the input frame and of the random search.
    pub seed: u64,
    /// Watch the stages while serving and re-tune on a sustained change
    /// ([`Watch`](taopipe_tuner::Watch)); `None`: never re-tune.
    pub watch: Option<WatchOptions>,
    /// α of a re-tune while serving. Smaller than a first tuning's: a re-tune starts warm,
    /// from seeds ranked for the speeds just measured, and every trial it spends is time
    /// the stream runs on a stale or trial configuration. 1 reaches within 5% of the
    /// exhaustive optimum in the simulated schedules of `tuner/tests/retune.rs`.
    pub retune_alpha: usize,
}

impl Default for TuneOptions {
    /// Pipe-search with α = 10, trials on live frames (3 to 7 per trial, stable within
    /// 5%: on a 2-core VM whose service times drift by 15% a 2% rule always ran to 7), the paper's seeds, watched with the default [`WatchOptions`], re-tunes with
    /// α = 1.
    fn default() -> Self {
        TuneOptions {
            search: SearchKind::Pipe,
            alpha: 10,
            max_stages: None,
            reps: 7,
            tolerance: 0.05,
            measure: MeasureKind::Live,
            seeds: SeedKind::Paper,
            seed: 1,
            watch: Some(WatchOptions::default()),
            retune_alpha: 1,
        }
    }
}

impl TuneOptions {
    /// C for `model` on `rt`: `max_stages`, at most one stage per worker and per unit.
    pub fn stage_limit(&self, rt: &Runtime, model: &Model) -> usize {
        let (workers, units) = (rt.num_workers(), model.spec().units().len());
        self.max_stages.unwrap_or(workers).min(workers).min(units)
    }

    /// Trials the search is expected to take (for a progress bar, so a total it can
    /// reach): the space's size for the exhaustive search, else α·(C + 1) but at most the
    /// space's size (a search never measures a configuration twice); plus the one-stage
    /// candidate.
    pub fn expected_trials(&self, rt: &Runtime, model: &Model) -> u64 {
        let c = self.stage_limit(rt, model);
        let searched = match self.search {
            _ if c < 2 => 0,
            SearchKind::Exhaustive => self.space(rt, model).size() as u64,
            _ => ((self.alpha * (c + 1)) as u64).min(self.space(rt, model).size() as u64),
        };
        searched + 1
    }

    /// When a trial has samples enough: 3 to `reps`, stable within `tolerance`.
    pub fn stability(&self) -> Stability {
        Stability::up_to(self.reps, self.tolerance)
    }

    fn space(&self, rt: &Runtime, model: &Model) -> SearchSpace {
        let c = self.stage_limit(rt, model);
        SearchSpace::on(
            model.spec().units().len(),
            allowed_places(rt),
            c,
            PlacePolicy::Contiguous,
        )
    }
}

/// Calls `on_trial` once per trial, after its repetitions; starts no trial once `stop` is
/// raised (module docs).
struct Observed<'f, M> {
    inner: M,
    on_trial: &'f mut dyn FnMut(&Configuration, &StageTimes),
    stop: &'f StopSignal,
}

impl<M: Measure> Measure for Observed<'_, M> {
    fn set_best(&mut self, best_ms: f64) {
        self.inner.set_best(best_ms);
    }

    fn stage_times(&mut self, config: &Configuration) -> Result<StageTimes, MeasureError> {
        if self.stop.is_stopped() {
            return Err(MeasureError::Stopped);
        }
        let times = self.inner.stage_times(config)?;
        (self.on_trial)(config, &times);
        Ok(times)
    }
}

/// Tunes `model` on `rt` by measuring: the one-stage candidate first, then the search
/// from the seeds `options.seeds` names (module docs). `on_trial` sees every trial's
/// configuration and stage times as they are measured (progress bars, trial tables). A net,
/// runtime or layout with no room for two stages gets the one-stage configuration. Raising
/// `stop` ends it between trials with the trials done (module docs).
///
/// # Errors
/// A failing measurement or layer; [`LiveError::Stopped`] when stopped before the first
/// trial was done.
pub fn tune(
    rt: &Runtime,
    model: &Arc<Model>,
    options: &TuneOptions,
    stop: &StopSignal,
    on_trial: &mut dyn FnMut(&Configuration, &StageTimes),
) -> Result<SearchResult, LiveError> {
    with_measure(rt, model, options, stop, on_trial, &mut |measure| {
        let units = model.spec().units().len();
        let c = options.stage_limit(rt, model);
        let one = Configuration::contiguous_on(&[units], &allowed_places(rt))?;
        let start = Instant::now();
        let one_times = measure.stage_times(&one).map_err(SearchError::from)?;
        let took = start.elapsed();
        if c < 2 || options.space(rt, model).size() == 0 {
            let alone = SearchResult {
                best: one.clone(),
                best_times: one_times.clone(),
                trials: Vec::new(),
                tuning: Duration::ZERO,
                stopped: StopReason::Complete,
            };
            return Ok(alone.with_prior(one, one_times, took));
        }
        let seeds = match options.seeds {
            SeedKind::Paper => Seeds::from_net(model.spec(), c)?,
            SeedKind::Speed => Seeds::from_net(model.spec(), c)?.with_key(speed_key(rt)),
        };
        let found = match run_search(rt, model, options, &seeds, measure) {
            // Stopped before the search's first trial: the candidate alone was measured.
            Err(LiveError::Search(SearchError::Measure(MeasureError::Stopped))) => {
                let alone = SearchResult {
                    best: one.clone(),
                    best_times: one_times.clone(),
                    trials: Vec::new(),
                    tuning: Duration::ZERO,
                    stopped: StopReason::Stopped,
                };
                return Ok(alone.with_prior(one, one_times, took));
            }
            found => found?,
        };
        // Near-ties are measured again, as after a re-tune: a lucky trial must not
        // decide alone what is served (`taopipe_tuner::confirm`).
        Ok(confirm(found.with_prior(one, one_times, took), measure)?)
    })
}

/// The search alone (no one-stage candidate) from `seeds`, e.g. seeds ranked by a
/// planner's predictor: what [`tune`] runs after its candidate. Raising `stop` ends it
/// between trials with the trials done (module docs).
///
/// # Errors
/// Fewer than two stages possible, a failing measurement or layer; [`LiveError::Stopped`]
/// when stopped before the first trial was done.
pub fn search(
    rt: &Runtime,
    model: &Arc<Model>,
    options: &TuneOptions,
    seeds: &Seeds,
    stop: &StopSignal,
    on_trial: &mut dyn FnMut(&Configuration, &StageTimes),
) -> Result<SearchResult, LiveError> {
    with_measure(rt, model, options, stop, on_trial, &mut |measure| {
        run_search(rt, model, options, seeds, measure)
    })
}

/// Calls `f` with the measurement `options.measure` names, each trial reported to
/// `on_trial`: live trials stream deterministic frames ([`frames`]) whose outputs are
/// dropped; the others run the frame [`frame_input`]`(_, options.seed)`. A stop with
/// nothing measured is [`LiveError::Stopped`].
fn with_measure(
    rt: &Runtime,
    model: &Arc<Model>,
    options: &TuneOptions,
    stop: &StopSignal,
    on_trial: &mut dyn FnMut(&Configuration, &StageTimes),
    f: &mut dyn FnMut(&mut dyn Measure) -> Result<SearchResult, LiveError>,
) -> Result<SearchResult, LiveError> {
    let found = match options.measure {
        MeasureKind::Live => {
            let mut source = frames(model, u64::MAX, options.seed);
            let mut sink = |_, _, _| {};
            let mut server = Server::new(
                rt,
                model.clone(),
                &mut source,
                &mut sink,
                None,
                Arc::default(),
                stop.clone(),
            );
            let inner = ServedMeasure::new(&mut server, options.stability());
            f(&mut Observed {
                inner,
                on_trial,
                stop,
            })
        }
        MeasureKind::Isolated => {
            let inner = live_measure(rt, model, options, LiveMode::Isolated)?;
            f(&mut Observed {
                inner,
                on_trial,
                stop,
            })
        }
        MeasureKind::Pipelined => {
            let mode = LiveMode::Pipelined { frames: 4 };
            let inner = live_measure(rt, model, options, mode)?;
            f(&mut Observed {
                inner,
                on_trial,
                stop,
            })
        }
    };
    match found {
        Err(LiveError::Search(SearchError::Measure(MeasureError::Stopped))) => {
            Err(LiveError::Stopped)
        }
        found => found,
    }
}

/// Stage times through the runtime, warm-up, repetitions and median as `options` say.
fn live_measure<'a>(
    rt: &'a Runtime,
    model: &Arc<Model>,
    options: &TuneOptions,
    mode: LiveMode,
) -> Result<Robust<LiveMeasure<'a>>, LiveError> {
    let input = frame_input(model.input_len(), options.seed);
    let live = LiveMeasure::new(rt, model.clone(), input, mode)?;
    Ok(Robust::new(
        live,
        RobustOptions {
            warmup: 1,
            repetitions: options.reps.max(1),
            tolerance: options.tolerance,
            mad_k: 3.0,
        },
    ))
}

fn run_search(
    rt: &Runtime,
    model: &Model,
    options: &TuneOptions,
    seeds: &Seeds,
    measure: &mut dyn Measure,
) -> Result<SearchResult, LiveError> {
    let units = model.spec().units().len();
    let c = options.stage_limit(rt, model);
    let space = options.space(rt, model);
    let search = PipeSearch::on(options.alpha, space.places.clone());
    Ok(match options.search {
        SearchKind::Pipe => search.run(seeds, measure)?,
        SearchKind::Exhaustive => Exhaustive::new(space).run(measure)?,
        SearchKind::Random => RandomWalk {
            space,
            seed: options.seed,
            target_ms: None,
            budget: options.alpha * (c + 1),
        }
        .run(measure)?,
        SearchKind::Nohints => pipe_search_without_hints(&search, units, c, measure)?,
    })
}
