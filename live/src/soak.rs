//! Soak: a net streamed for a long time (half an hour) while its pipeline is reconfigured
//! every few seconds and the emulated core speeds change every few seconds, to see what a
//! short run cannot: memory that creeps up, a frame lost, duplicated or reordered by one
//! switch in hundreds, latency that drifts.
//!
//! [`soak`] serves frames through [`crate::serve`]'s segments: the configurations of
//! [`SoakOptions::configurations`] in turn, each for [`SoakOptions::switch_every`], switching
//! between two frames on the same runtime (the pipeline drains, the next one takes the next
//! frame from the same source). Beside it a player thread cycles the emulated speeds
//! through [`SoakOptions::speeds`] every [`SoakOptions::speeds_every`] (an
//! [`EmulationSchedule`]), and a sampler thread reads the process's resident memory
//! ([`Rss`]) and the frame counters every [`SoakOptions::sample_every`].
//!
//! # Every frame once, in order
//! Frame `i` carries input `i mod K` of `K` distinct inputs, and each input's output is
//! computed through the whole net before streaming starts. A frame's output is
//! bit-identical whatever the configuration, place or width ran it (taopipe-nets'
//! guarantee), so the sink tells which frame it was handed from its output alone: the
//! frame at position `p` must be frame `p` ([`OrderCheck`]). `K` is one more than the most
//! frames any of the configurations holds in flight ([`Pipeline::max_in_flight`]), so a
//! frame delivered in another's place within a pipeline always shows another input. The
//! frames taken from the source and those delivered are counted too: a frame lost at the
//! end of a segment shows there.
//!
//! # The RSS bound
//! **Rule** ([`RssBound::check`]): the *warm-up* is the reference pass and the first round
//! through every configuration; its peak resident memory is the *baseline*. After the
//! warm-up, no sample may exceed the baseline by more than [`SoakOptions::headroom_mib`]
//! ([`DEFAULT_HEADROOM_MIB`]). A run with no sample after its warm-up fails: it checked
//! nothing. The warm-up's end is sampled too, by the serving thread as the round ends:
//! with only the sampler's ticks, a period longer than the warm-up left the baseline at
//! the empty process's size (CI saw a 2 s soak sampled each second fail so: 8.9 MiB at
//! 0 s, the warm-up's 16.9 MiB first seen at 1 s, after it ended at 0.9 s).
//!
//! What a healthy run still allocates after it starts, and why the warm-up takes it all in:
//! - **frame buffers**: the model's pool grows to the most frames in flight in any of the
//!   configurations, and a buffer set becomes resident only when a frame's layers write
//!   it — a set that only a rare burst reaches would page in late. The reference pass
//!   holds all `K` frames alive at once and runs each through the whole net, so the pool
//!   holds a resident set for every frame any configuration can have in flight before the
//!   first one streams;
//! - **per configuration**: each buffer set's prepared stage graphs, each worker's kernel
//!   scratch (grown to the largest layer it runs alone), the pipelines' driver threads'
//!   stacks and malloc arenas: all there by the end of the first round;
//! - **the soak's own records** (samples, per-interval figures, applied speed steps,
//!   faults kept): allocated up front for the whole duration.
//!
//! So what is left for the headroom is allocator noise (freed memory a heap keeps, stacks
//! of exited threads the C library caches). A leak of more than the headroom over the
//! checked part of the run fails it: 8 MiB over half an hour is 4.6 KiB/s, one 100-byte
//! record leaked per frame at 50 frames/s. A slower leak passes; the samples, in the
//! report, show its slope.
//!
//! # Stopping early
//! Raising [`SoakOptions::stop`] (a SIGINT handler's flag, say) stops admitting frames: the
//! frames in flight finish and are checked, the speed player and the sampler stop, and
//! the report covers what ran, marked [`partial`](SoakReport::partial), with the intervals
//! that had begun. A run stopped before its warm-up ended checked no memory, so its RSS
//! check does not pass.
//!
//! # Latency per interval
//! Each delivery's latency (from the frame's arrival — when it was taken from the source,
//! or its due time at a [`rate`](SoakOptions::rate_fps) — to its output, queueing
//! included) goes into the current interval's [`Latencies`], whose quantiles are the
//! runtime's one definition; the histogram is reset, not reallocated, between intervals.
//! Without a rate the stream saturates the pipeline, and a saturated pipeline's latency is
//! a full queue's: compare intervals with each other, not with a paced run's figures.
//!
//! ```no_run
//! use std::sync::Arc;
//! use std::time::Duration;
//! use taopipe_live::soak::{SoakOptions, soak};
//! use taopipe_nets::{Model, RandomWeights, zoo};
//! use taopipe_runtime::Runtime;
//!
//! let rt = Runtime::builder().workers(2).build()?;
//! let spec = zoo::by_name("alexnet").expect("a zoo net")?;
//! let model = Arc::new(Model::build(spec, &RandomWeights { seed: 1 })?);
//! let mut options = SoakOptions::new(&rt, &model)?; // its configurations and speed cycle
//! options.duration = Duration::from_secs(60);
//! options.switch_every = Duration::from_secs(5);
//! let report = soak(&rt, &model, &options, |_progress| {})?;
//! println!("{report}");
//! assert!(report.checks.passed());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use taopipe_dsl::Seeds;
use taopipe_nets::{Frame, Isa, Model};
use taopipe_runtime::{
    EmulationSchedule, EmulationSpec, Latencies, Pipeline, Runtime, Step, StopSignal,
};
use taopipe_tuner::Configuration;

use crate::LiveError;
use crate::measure::LiveMeasure;
use crate::report::Latency;
use crate::serve::{Gate, Pace, Server};
use crate::stream::{allowed_places, frame_input, widest_place};

/// The RSS bound's default headroom over the warm-up's peak, MiB (module docs). On the
/// 2-core VM, after the warm-up, resident memory grew 4 and 12 KiB in 90 s (AlexNet, two
/// 2-minute runs) and 20 KiB in 120 s (VGG16, 3 minutes); within the warm-up VGG16 grew
/// 7.4 MiB at its first two-stage segment (each worker's kernel scratch), which is why the warm-up takes
/// a whole round of configurations. 8 MiB is a quarter of one VGG16 frame's buffers
/// (34 MiB) and two AlexNet frames' (3.8 MiB each): one VGG16 frame leaked fails a run,
/// and three AlexNet frames ([`SoakReport::frame_mib`]).
pub const DEFAULT_HEADROOM_MIB: f64 = 8.0;

/// Faults an [`OrderCheck`] keeps (it counts them all).
pub const KEPT_FAULTS: usize = 10;

/// How long the sampler sleeps at most between two looks at the stop signal.
const WAIT_SLICE: Duration = Duration::from_millis(20);

const MIB: f64 = 1024.0 * 1024.0;

/// Most speed settings one soak's schedule may step through (all of them are built
/// before the run): a 30-minute soak at the default 3 s takes 600.
const MAX_SPEED_STEPS: u128 = 1_000_000;

/// What a soak runs and checks (module docs). [`SoakOptions::new`] gives the defaults for
/// a runtime and a net; change the fields you need.
#[derive(Debug, Clone)]
pub struct SoakOptions {
    /// How long frames are admitted; the run ends when the last segment has drained.
    pub duration: Duration,
    /// The configurations served in turn, each for [`switch_every`](Self::switch_every).
    pub configurations: Vec<Configuration>,
    /// How long each configuration serves before the switch to the next.
    pub switch_every: Duration,
    /// The emulated speeds cycled through (`None`: every worker at full speed).
    pub speeds: Vec<Option<EmulationSpec>>,
    /// How long each speed setting holds.
    pub speeds_every: Duration,
    /// The span of each latency and memory figure of the report (a minute for the long
    /// run). A whole number of [`sample_every`](Self::sample_every).
    pub interval: Duration,
    /// How often resident memory and the frame counters are sampled.
    pub sample_every: Duration,
    /// The RSS bound's headroom over the warm-up's peak, MiB (module docs).
    pub headroom_mib: f64,
    /// Frames offered per second, as a camera offers them; `None`: as fast as the
    /// pipeline takes them.
    pub rate_fps: Option<f64>,
    /// Seed of the inputs.
    pub seed: u64,
    /// Raised from outside to end the run early (module docs); never raised by default.
    pub stop: StopSignal,
}

impl SoakOptions {
    /// The long run's defaults for `model` on `rt`: 30 minutes; [`default_configurations`]
    /// switched every 10 s; [`default_speeds`] changed every 3 s (not a divisor of 10, so
    /// every configuration meets every speed setting); figures per minute from samples
    /// every second; [`DEFAULT_HEADROOM_MIB`]; frames as fast as the pipeline takes them.
    ///
    /// # Errors
    /// As [`default_configurations`].
    pub fn new(rt: &Runtime, model: &Model) -> Result<SoakOptions, LiveError> {
        Ok(SoakOptions {
            duration: Duration::from_secs(30 * 60),
            configurations: default_configurations(rt, model)?,
            switch_every: Duration::from_secs(10),
            speeds: default_speeds(rt.num_workers()),
            speeds_every: Duration::from_secs(3),
            interval: Duration::from_secs(60),
            sample_every: Duration::from_secs(1),
            headroom_mib: DEFAULT_HEADROOM_MIB,
            rate_fps: None,
            seed: 1,
            stop: StopSignal::new(),
        })
    }

    /// The nominal warm-up: one round through the configurations (module docs).
    pub fn warmup(&self) -> Duration {
        self.switch_every
            .saturating_mul(u32::try_from(self.configurations.len()).unwrap_or(u32::MAX))
    }

    /// Checks the options against `model` and `rt` before any work.
    ///
    /// # Errors
    /// A configuration that does not fit the net, the workers or the layout's places; a
    /// speed setting naming a worker or cluster `rt` lacks; a zero period; an interval that is not a whole number of samples; a headroom or rate
    /// that is not a finite number ≥ 0 (rate: > 0); a duration shorter than twice the
    /// warm-up; more than a million speed steps over the duration; no configurations or
    /// speed settings.
    pub fn validate(&self, rt: &Runtime, model: &Model) -> Result<(), LiveError> {
        if self.configurations.is_empty() {
            return Err(SoakError::Empty("configurations").into());
        }
        if self.speeds.is_empty() {
            return Err(SoakError::Empty("speed settings").into());
        }
        let places = allowed_places(rt);
        for config in &self.configurations {
            config.validate(model.spec().units().len(), rt.num_workers())?;
            places.check(config)?;
        }
        for spec in self.speeds.iter().flatten() {
            spec.resolve(rt.topology())?;
        }
        for (what, period) in [
            ("switch_every", self.switch_every),
            ("speeds_every", self.speeds_every),
            ("interval", self.interval),
            ("sample_every", self.sample_every),
        ] {
            if period.is_zero() {
                return Err(SoakError::ZeroPeriod(what).into());
            }
        }
        let steps = self
            .duration
            .as_nanos()
            .div_ceil(self.speeds_every.as_nanos());
        if steps > MAX_SPEED_STEPS {
            return Err(SoakError::TooManySteps {
                duration: self.duration,
                speeds_every: self.speeds_every,
                steps,
            }
            .into());
        }
        if !self
            .interval
            .as_nanos()
            .is_multiple_of(self.sample_every.as_nanos())
        {
            return Err(SoakError::Interval {
                interval: self.interval,
                sample_every: self.sample_every,
            }
            .into());
        }
        if !(self.headroom_mib.is_finite() && self.headroom_mib >= 0.0) {
            return Err(SoakError::Headroom(self.headroom_mib).into());
        }
        if let Some(fps) = self
            .rate_fps
            .filter(|f| !(f.is_finite() && *f >= crate::MIN_RATE_FPS))
        {
            return Err(LiveError::BadRate(fps));
        }
        let warmup = self.warmup();
        if self.duration < warmup.saturating_mul(2) {
            return Err(SoakError::TooShort {
                duration: self.duration,
                warmup,
            }
            .into());
        }
        Ok(())
    }

    /// The speed settings as an [`EmulationSchedule`] over the duration: setting
    /// `k mod n` from `k · speeds_every` on.
    fn schedule(&self) -> Result<EmulationSchedule, LiveError> {
        let every = self.speeds_every.as_nanos().max(1);
        let steps = self.duration.as_nanos().div_ceil(every).max(1);
        let steps = (0..steps)
            .map(|k| Step {
                at: Duration::from_nanos(u64::try_from(k * every).unwrap_or(u64::MAX)),
                spec: self.speeds[(k % self.speeds.len() as u128) as usize].clone(),
            })
            .collect();
        Ok(EmulationSchedule::from_steps(steps)?)
    }
}

/// The configurations a soak switches between by default: the one-stage configuration
/// (every unit on the widest place) and, with two workers or more, the two best-CV
/// two-stage seeds (paper Alg. 1) on contiguous places. Three configurations with at most
/// two stages keep every buffer set's prepared graphs within what it caches, so a switch
/// reuses graphs instead of preparing them again.
///
/// # Errors
/// A layout whose places cannot hold the stages; seeds that cannot be built.
pub fn default_configurations(
    rt: &Runtime,
    model: &Model,
) -> Result<Vec<Configuration>, LiveError> {
    let places = allowed_places(rt);
    let units = model.spec().units().len();
    let mut configs = vec![Configuration::contiguous_on(&[units], &places)?];
    if rt.num_workers() >= 2 && units >= 2 {
        for seed in Seeds::from_net(model.spec(), 2)?.top_k(2, 2)? {
            configs.push(Configuration::contiguous_on(&seed.composition, &places)?);
        }
    }
    Ok(configs)
}

/// The speed settings a soak cycles through by default on `workers` workers: full speed,
/// the last worker at `powersave`, the first at `powersave`, every worker at 0.7 — each
/// stage of a two-stage pipeline in turn the slow one, then all slowed together.
pub fn default_speeds(workers: usize) -> Vec<Option<EmulationSpec>> {
    let last = workers.saturating_sub(1);
    let mut specs = vec![format!("w{last}=powersave")];
    if last > 0 {
        specs.push("w0=powersave".to_owned());
    }
    specs.push("all=0.7".to_owned());
    std::iter::once(None)
        .chain(specs.iter().map(|s| Some(s.parse().expect("a valid spec"))))
        .collect()
}

/// Why a soak cannot run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SoakError {
    /// Nothing to switch between, or no speeds to cycle.
    #[error("soak: no {0} given")]
    Empty(&'static str),
    /// A period of zero.
    #[error("soak: {0} must be longer than zero")]
    ZeroPeriod(&'static str),
    /// An interval that is not a whole number of samples.
    #[error(
        "soak: the interval ({interval:?}) must be a whole number of sample periods ({sample_every:?}), so each interval's frames are counted at its ends"
    )]
    Interval {
        /// The interval asked for.
        interval: Duration,
        /// The sample period.
        sample_every: Duration,
    },
    /// So short a speed period that the schedule over the duration would have more than
    /// a million steps (each is built before the run).
    #[error(
        "soak of {duration:?}: a speed setting every {speeds_every:?} makes {steps} steps, more than the {max} a soak may have",
        max = MAX_SPEED_STEPS
    )]
    TooManySteps {
        /// The duration asked for.
        duration: Duration,
        /// The speed period asked for.
        speeds_every: Duration,
        /// The steps they make.
        steps: u128,
    },
    /// A headroom that is not a finite number ≥ 0.
    #[error("soak: RSS headroom {0} MiB: expected a number ≥ 0")]
    Headroom(f64),
    /// A run too short for its warm-up.
    #[error(
        "soak of {duration:?}: its warm-up (one round through the configurations) takes {warmup:?}; run at least twice as long, so that half of the run or more is checked"
    )]
    TooShort {
        /// The duration asked for.
        duration: Duration,
        /// The warm-up.
        warmup: Duration,
    },
    /// Resident memory cannot be read.
    #[error(
        "resident memory: {path}: {source} (read from Linux's /proc, which this system does not have)"
    )]
    Rss {
        /// The file read.
        path: &'static str,
        /// The cause.
        source: std::io::Error,
    },
    /// Two inputs whose outputs are the same: their frames could not be told apart.
    #[error(
        "soak: inputs {a} and {b} give the same output, so the order check could not tell their frames apart (try another seed)"
    )]
    SameOutput {
        /// One input's index.
        a: usize,
        /// The other's.
        b: usize,
    },
}

/// The process's resident memory (RSS), read from `/proc/self/statm` (Linux): the second
/// field, in pages, times the page size, which comes from the auxiliary vector the kernel
/// gave the process (`AT_PAGESZ` in `/proc/self/auxv`, what the C library's `sysconf` reads).
///
/// ```
/// let mut rss = taopipe_live::soak::Rss::open()?;
/// let touched = std::hint::black_box(vec![1u8; 64 << 20]); // 64 MiB written: resident
/// assert!(rss.read()? >= touched.len() as u64);
/// # Ok::<(), taopipe_live::soak::SoakError>(())
/// ```
#[derive(Debug)]
pub struct Rss {
    file: File,
    page: u64,
    text: String,
}

const STATM: &str = "/proc/self/statm";
const AUXV: &str = "/proc/self/auxv";

impl Rss {
    /// Opens `/proc/self/statm` and reads the page size, once.
    ///
    /// # Errors
    /// [`SoakError::Rss`] where `/proc` is missing or unreadable (not Linux).
    pub fn open() -> Result<Rss, SoakError> {
        let file = File::open(STATM).map_err(|source| SoakError::Rss {
            path: STATM,
            source,
        })?;
        let page = page_size().map_err(|source| SoakError::Rss { path: AUXV, source })?;
        let mut rss = Rss {
            file,
            page,
            text: String::with_capacity(128),
        };
        rss.read()?;
        Ok(rss)
    }

    /// Resident bytes now. Reuses its open file and buffer: sampling allocates nothing.
    ///
    /// # Errors
    /// [`SoakError::Rss`] if the file cannot be read or does not parse.
    pub fn read(&mut self) -> Result<u64, SoakError> {
        let error = |source| SoakError::Rss {
            path: STATM,
            source,
        };
        self.text.clear();
        self.file.seek(SeekFrom::Start(0)).map_err(error)?;
        self.file.read_to_string(&mut self.text).map_err(error)?;
        let pages = resident_pages(&self.text).ok_or_else(|| {
            error(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "no resident page count in its second field",
            ))
        })?;
        Ok(pages.saturating_mul(self.page))
    }
}

/// The resident page count of a `statm` line (`size resident shared text lib data dt`).
fn resident_pages(statm: &str) -> Option<u64> {
    statm.split_whitespace().nth(1)?.parse().ok()
}

/// The page size from `/proc/self/auxv`: native-endian (type, value) word pairs.
fn page_size() -> std::io::Result<u64> {
    const AT_PAGESZ: usize = 6;
    const WORD: usize = std::mem::size_of::<usize>();
    let word = |b: &[u8]| {
        let mut w = [0u8; WORD];
        w.copy_from_slice(b);
        usize::from_ne_bytes(w)
    };
    std::fs::read(AUXV)?
        .chunks_exact(2 * WORD)
        .map(|pair| (word(&pair[..WORD]), word(&pair[WORD..])))
        .find(|&(kind, _)| kind == AT_PAGESZ)
        .map(|(_, size)| size as u64)
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "no AT_PAGESZ entry"))
}

/// Checks that frames come out once each, in the order they went in: the frame handed
/// out at position `p` (0, 1, …) must be frame `p` (module docs).
///
/// ```
/// use taopipe_live::soak::OrderCheck;
///
/// let mut check = OrderCheck::new();
/// for got in [0, 1, 3, 2, 4] {
///     check.push(Some(got));
/// }
/// assert_eq!(check.faults, 2); // positions 2 and 3
/// assert!(!check.passed(5));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OrderCheck {
    /// Frames handed out.
    pub delivered: u64,
    /// Positions whose frame was not the one expected.
    pub faults: u64,
    /// The first [`KEPT_FAULTS`] of them.
    pub first_faults: Vec<OrderFault>,
}

/// A position whose frame was not the one expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OrderFault {
    /// The position (frames handed out before it).
    pub position: u64,
    /// The frame found there; `None`: an output that matches no input.
    pub got: Option<u64>,
}

impl Default for OrderCheck {
    fn default() -> Self {
        OrderCheck::new()
    }
}

impl OrderCheck {
    /// Nothing handed out yet; room for the faults it keeps, so a faulty run does not
    /// allocate in its sink.
    pub fn new() -> OrderCheck {
        OrderCheck {
            delivered: 0,
            faults: 0,
            first_faults: Vec::with_capacity(KEPT_FAULTS),
        }
    }

    /// The next frame handed out was frame `got` (`None`: unrecognised).
    pub fn push(&mut self, got: Option<u64>) {
        let position = self.delivered;
        if got != Some(position) {
            self.faults += 1;
            if self.first_faults.len() < KEPT_FAULTS {
                self.first_faults.push(OrderFault { position, got });
            }
        }
        self.delivered += 1;
    }

    /// Whether every one of `taken` frames came out once, in order: no fault, and as many
    /// out as went in.
    pub fn passed(&self, taken: u64) -> bool {
        self.faults == 0 && self.delivered == taken
    }
}

/// The `K` distinct inputs and their outputs through the whole net (module docs).
struct References {
    inputs: Vec<Vec<f32>>,
    outputs: Vec<Vec<f32>>,
}

impl References {
    /// Runs `count` inputs from `seed` through the whole net on the widest place, every
    /// frame alive at once (module docs: the frame pool's warm-up).
    fn new(rt: &Runtime, model: &Model, count: usize, seed: u64) -> Result<References, LiveError> {
        let inputs: Vec<Vec<f32>> = (0..count as u64)
            .map(|i| frame_input(model.input_len(), seed.wrapping_add(i)))
            .collect();
        let frames = inputs
            .iter()
            .map(|input| model.frame_from(input))
            .collect::<Result<Vec<Frame>, _>>()?;
        let place = widest_place(rt);
        for frame in &frames {
            model.run(rt, frame, place)?;
        }
        let outputs: Vec<Vec<f32>> = frames.iter().map(Frame::output).collect();
        for (a, x) in outputs.iter().enumerate() {
            if let Some(b) = outputs[a + 1..].iter().position(|y| same_bits(x, y)) {
                return Err(SoakError::SameOutput { a, b: a + 1 + b }.into());
            }
        }
        Ok(References { inputs, outputs })
    }

    /// The input of frame `i`.
    fn input(&self, i: u64) -> &[f32] {
        &self.inputs[(i % self.inputs.len() as u64) as usize]
    }

    /// Which frame handed out at `position` gave `output`: `position` itself if it is its
    /// input's output, else the nearest frame whose input gives it, `None` if none does.
    fn identify(&self, position: u64, output: &[f32]) -> Option<u64> {
        let k = self.outputs.len() as u64;
        let expected = (position % k) as usize;
        if same_bits(&self.outputs[expected], output) {
            return Some(position);
        }
        let j = self.outputs.iter().position(|y| same_bits(y, output))? as u64;
        Some(nearest_with_residue(position, j, k))
    }
}

/// The number `≡ j (mod k)` nearest to `position` (not below 0; ties go back).
fn nearest_with_residue(position: u64, j: u64, k: u64) -> u64 {
    let ahead = (j + k - position % k) % k;
    let back = k - ahead;
    if ahead < back || position < back {
        position + ahead
    } else {
        position - back
    }
}

fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// What the sampler saw at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sample {
    /// Seconds since streaming started (when the sample was due; the warm-up's end's: when
    /// the warm-up ended; the last sample's: when the run ended).
    pub at_s: f64,
    /// Resident memory, MiB.
    pub rss_mib: f64,
    /// Frames taken from the source so far.
    pub frames_in: u64,
    /// Frames delivered so far.
    pub frames_out: u64,
}

/// Reads resident memory and the frame counters now, as a sample at `at_s`.
fn sample_now(
    rss: &mut Rss,
    at_s: f64,
    taken: &AtomicU64,
    delivered: &AtomicU64,
) -> Result<Sample, SoakError> {
    Ok(Sample {
        at_s,
        rss_mib: rss.read()? as f64 / MIB,
        frames_in: taken.load(Ordering::Relaxed),
        frames_out: delivered.load(Ordering::Relaxed),
    })
}

/// The RSS bound's rule applied to a run's samples (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RssBound {
    /// The warm-up's end, seconds since streaming started.
    pub warmup_s: f64,
    /// The warm-up's peak resident memory, MiB.
    pub baseline_mib: f64,
    /// The headroom allowed over it, MiB.
    pub headroom_mib: f64,
    /// `baseline + headroom`, MiB.
    pub limit_mib: f64,
    /// The peak after the warm-up, MiB (0 without samples).
    pub peak_mib: f64,
    /// When that peak was sampled, seconds.
    pub peak_at_s: f64,
    /// Samples after the warm-up.
    pub checked: usize,
    /// Whether some were taken and none exceeded the limit.
    pub held: bool,
}

impl RssBound {
    /// Applies the rule to `samples` with the warm-up ending at `warmup_s`: the samples up
    /// to it give the baseline (their peak), every later one must stay within
    /// `baseline + headroom_mib`.
    ///
    /// ```
    /// use taopipe_live::soak::{RssBound, Sample};
    ///
    /// let at = |at_s: f64, rss_mib: f64| Sample { at_s, rss_mib, frames_in: 0, frames_out: 0 };
    /// // Growing during the warm-up is fine; 8 MiB a second after it is not.
    /// let flat = [at(0.0, 100.0), at(1.0, 180.0), at(2.0, 181.0), at(3.0, 179.0)];
    /// assert!(RssBound::check(&flat, 1.0, 4.0).held);
    /// let leak: Vec<Sample> = (0..10).map(|s| at(s as f64, 180.0 + 8.0 * s as f64)).collect();
    /// let bound = RssBound::check(&leak, 1.0, 16.0);
    /// assert!(!bound.held);
    /// assert_eq!(bound.peak_mib, 252.0);
    /// ```
    pub fn check(samples: &[Sample], warmup_s: f64, headroom_mib: f64) -> RssBound {
        let baseline_mib = samples
            .iter()
            .filter(|s| s.at_s <= warmup_s)
            .map(|s| s.rss_mib)
            .fold(0.0, f64::max);
        let after = samples.iter().filter(|s| s.at_s > warmup_s);
        let peak = after.clone().max_by(|a, b| a.rss_mib.total_cmp(&b.rss_mib));
        let limit_mib = baseline_mib + headroom_mib;
        RssBound {
            warmup_s,
            baseline_mib,
            headroom_mib,
            limit_mib,
            peak_mib: peak.map_or(0.0, |s| s.rss_mib),
            peak_at_s: peak.map_or(0.0, |s| s.at_s),
            checked: after.count(),
            held: peak.is_some_and(|s| s.rss_mib <= limit_mib),
        }
    }
}

/// One interval of the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interval {
    /// Its start, seconds since streaming started.
    pub start_s: f64,
    /// Its end (for the last one, the run's end: it takes the final drain too).
    pub end_s: f64,
    /// Whether it overlaps the warm-up.
    pub warmup: bool,
    /// Frames taken from the source in it.
    pub frames_in: u64,
    /// Frames delivered in it.
    pub frames_out: u64,
    /// Latency of the frames delivered in it, ms; `None` without any.
    pub latency_ms: Option<Latency>,
    /// Peak resident memory sampled in it, MiB.
    pub rss_mib: f64,
    /// Switches to another configuration in it.
    pub reconfigurations: u64,
    /// Speed changes in it.
    pub speed_changes: u64,
}

/// The soak's pass/fail checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Checks {
    /// Every frame taken was delivered once, in order ([`OrderCheck::passed`]).
    pub in_order: bool,
    /// Resident memory stayed within the bound ([`RssBound::held`](RssBound)).
    pub rss_bounded: bool,
}

impl Checks {
    /// Whether both held.
    pub fn passed(self) -> bool {
        self.in_order && self.rss_bounded
    }
}

/// What a soak saw (`Serialize`: the JSON report); [`fmt::Display`] prints the interval
/// table and the checks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SoakReport {
    /// taopipe's version.
    pub version: &'static str,
    /// The net's name.
    pub net: String,
    /// The kernels' instruction-set path.
    pub isa: String,
    /// The OS CPU of each worker.
    pub cpus: Vec<usize>,
    /// The configurations served in turn.
    pub configurations: Vec<String>,
    /// Seconds each served before the next.
    pub switch_every_s: f64,
    /// The speed settings cycled through (`none`: full speed).
    pub speeds: Vec<String>,
    /// Seconds each held.
    pub speeds_every_s: f64,
    /// Frames offered per second, if paced.
    pub rate_fps: Option<f64>,
    /// Seconds frames were admitted for.
    pub duration_s: f64,
    /// Seconds the run took, the last drain included.
    pub elapsed_s: f64,
    /// Distinct inputs the frames cycle through (module docs).
    pub inputs: usize,
    /// One frame's buffers (input, activations, workspace), MiB: what a frame leaked
    /// would cost, against the RSS bound's headroom.
    pub frame_mib: f64,
    /// Frames taken from the source.
    pub frames_in: u64,
    /// Frames delivered.
    pub frames_out: u64,
    /// Frames delivered per second over the run.
    pub throughput_fps: f64,
    /// Latency over the whole run, ms.
    pub latency_ms: Latency,
    /// Segments served (one configuration each).
    pub segments: u64,
    /// Switches to another configuration.
    pub reconfigurations: u64,
    /// Speed changes after the first setting.
    pub speed_changes: u64,
    /// The order check.
    pub order: OrderCheck,
    /// The RSS bound.
    pub rss: RssBound,
    /// The checks.
    pub checks: Checks,
    /// Figures per interval.
    pub intervals: Vec<Interval>,
    /// Every sample.
    pub samples: Vec<Sample>,
    /// Whether [`SoakOptions::stop`] ended the run before its duration (module docs).
    pub partial: bool,
}

/// Where a soak stands, for a progress display; given to the callback after each frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Since streaming started.
    pub elapsed: Duration,
    /// Frames delivered.
    pub frames: u64,
    /// Resident memory at the last sample, MiB.
    pub rss_mib: f64,
}

/// Latency quantiles of the frames each interval delivered, ms; the last interval takes
/// the frames of the final drain too.
struct IntervalLatency {
    every: Duration,
    count: usize,
    index: usize,
    current: Latencies,
    done: Vec<Option<Latency>>,
}

impl IntervalLatency {
    /// For `count` intervals (at least one) of `every`.
    fn new(every: Duration, count: usize) -> Self {
        IntervalLatency {
            every,
            count: count.max(1),
            index: 0,
            current: Latencies::new(),
            done: Vec::with_capacity(count.max(1)),
        }
    }

    /// A frame delivered `at` after the start took `took`.
    fn record(&mut self, at: Duration, took: Duration) {
        let index = (at.as_nanos() / self.every.as_nanos()) as usize;
        self.roll_to(index.min(self.count - 1));
        self.current.record(took);
    }

    fn roll_to(&mut self, index: usize) {
        while self.index < index {
            self.done.push(quantiles(&self.current));
            self.current.reset();
            self.index += 1;
        }
    }

    /// One entry per interval.
    fn finish(mut self) -> Vec<Option<Latency>> {
        self.roll_to(self.count - 1);
        self.done.push(quantiles(&self.current));
        self.done
    }
}

/// How many intervals of `every` a span of `span` begins: at least one.
fn intervals_over(span: Duration, every: Duration) -> usize {
    span.as_nanos().div_ceil(every.as_nanos().max(1)).max(1) as usize
}

fn quantiles(l: &Latencies) -> Option<Latency> {
    (!l.is_empty()).then(|| Latency {
        p50: l.quantile_ms(0.5),
        p99: l.quantile_ms(0.99),
    })
}

/// What a run recorded, to be cut into intervals.
struct Recorded<'a> {
    samples: &'a [Sample],
    /// When each switch to another configuration came, seconds.
    switches: &'a [f64],
    /// When each speed change came (the first setting excluded), seconds.
    changes: &'a [f64],
    /// Each interval's latency.
    latencies: Vec<Option<Latency>>,
    warmup_s: f64,
    elapsed_s: f64,
    /// Frames in and out over the run.
    frames: (u64, u64),
}

impl Recorded<'_> {
    /// The run cut into intervals of `every` seconds, as many as there are latency
    /// entries; the last one runs to the end. Frames are counted at the samples on the
    /// intervals' ends (a whole number of sample periods apart) and at the run's end,
    /// and the first interval counts from zero: the sample due at 0 s is taken once its
    /// thread runs, when the server may already have admitted frames. So the intervals'
    /// frames always add up to the run's.
    fn intervals(&self, every: f64) -> Vec<Interval> {
        let count = self.latencies.len();
        // The counters at the last sample at or before `t`, and none before the start.
        let counted = |t: f64| {
            if t <= 0.0 {
                return (0, 0);
            }
            self.samples
                .iter()
                .take_while(|s| s.at_s <= t + 1e-9)
                .last()
                .map_or((0, 0), |s| (s.frames_in, s.frames_out))
        };
        let within =
            |times: &[f64], a: f64, b: f64| times.iter().filter(|&&t| t >= a && t < b).count();
        (0..count)
            .map(|j| {
                let last = j + 1 == count;
                let start_s = j as f64 * every;
                let end_s = if last {
                    self.elapsed_s
                } else {
                    start_s + every
                };
                let (in0, out0) = counted(start_s);
                let (in1, out1) = if last { self.frames } else { counted(end_s) };
                Interval {
                    start_s,
                    end_s,
                    warmup: start_s < self.warmup_s,
                    frames_in: in1 - in0,
                    frames_out: out1 - out0,
                    latency_ms: self.latencies[j],
                    rss_mib: self
                        .samples
                        .iter()
                        .filter(|s| s.at_s >= start_s && (s.at_s < end_s || last))
                        .map(|s| s.rss_mib)
                        .fold(0.0, f64::max),
                    reconfigurations: within(self.switches, start_s, end_s) as u64,
                    speed_changes: within(self.changes, start_s, end_s) as u64,
                }
            })
            .collect()
    }
}

/// Streams `model` on `rt` as `options` say (module docs), calling `progress` after every
/// frame; the report says whether every frame came out once, in order, and resident
/// memory stayed bounded. A failed check is in the report, not an error. The speeds of
/// the last setting played stay applied, as after [`EmulationSchedule::play`].
///
/// # Errors
/// Options that do not fit (checked before any work, [`SoakOptions::validate`]); no
/// `/proc` to read memory from ([`SoakError::Rss`]); a failing layer or stage, or an
/// emulation step that cannot be applied, after the frames ahead of it were delivered.
pub fn soak(
    rt: &Runtime,
    model: &Arc<Model>,
    options: &SoakOptions,
    mut progress: impl FnMut(&Progress),
) -> Result<SoakReport, LiveError> {
    options.validate(rt, model)?;
    let mut rss = Rss::open()?;
    let schedule = options.schedule()?;
    schedule.validate(rt.topology())?;
    let mut in_flight = 0;
    for config in &options.configurations {
        let pipeline = Pipeline::new(LiveMeasure::stages(model, config))?;
        in_flight = in_flight.max(pipeline.max_in_flight());
    }
    let refs = References::new(rt, model, in_flight + 1, options.seed)?;

    // Everything recorded during the run is allocated here, for the whole duration.
    let secs = |d: Duration| d.as_secs_f64();
    let periods =
        |every: Duration| (options.duration.as_nanos() / every.as_nanos().max(1)) as usize + 2;
    // Intervals cover the admitting; the last one also takes the final drain.
    let interval_count = intervals_over(options.duration, options.interval);
    let mut samples = Vec::with_capacity(periods(options.sample_every) + 64);
    let mut applied = Vec::with_capacity(schedule.steps().len());
    let mut switches = Vec::with_capacity(periods(options.switch_every));
    let mut latency = IntervalLatency::new(options.interval, interval_count);
    let mut order = OrderCheck::new();
    let mut out = vec![0.0f32; model.output_len()];
    let (taken, delivered, rss_now) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    // The serving thread's own reader, for the sample at the warm-up's end.
    let mut rss_at_warmup = Rss::open()?;
    let mut warmup_sample = None;

    let start = Instant::now();
    let mut source = (0u64..).map(|i| {
        taken.fetch_add(1, Ordering::Relaxed);
        model
            .frame_from(refs.input(i))
            .expect("the references have the model's input length")
    });
    let mut sink = |_seq: u64, frame: Arc<Frame>, took: Option<Duration>| {
        frame.output_into(&mut out);
        drop(frame); // its buffers back to the pool before the next frame needs them
        order.push(refs.identify(order.delivered, &out));
        let at = start.elapsed();
        if let Some(took) = took {
            latency.record(at, took);
        }
        let frames = delivered.fetch_add(1, Ordering::Relaxed) + 1;
        progress(&Progress {
            elapsed: at,
            frames,
            rss_mib: rss_now.load(Ordering::Relaxed) as f64 / MIB,
        });
    };
    let pace = options.rate_fps.map(|fps| Pace { fps });
    let retune = Arc::new(AtomicBool::new(false)); // never asked: the soak switches itself
    let mut server = Server::new(
        rt,
        model.clone(),
        &mut source,
        &mut sink,
        pace,
        retune,
        options.stop.clone(),
    );
    // Ends the player and the sampler once serving is over.
    let stop = StopSignal::new();
    let mut segments = 0u64;
    let mut warmup = None;
    let mut partial = false;
    let served = std::thread::scope(|s| {
        let player = s.spawn(|| schedule.play(rt, start, &stop, |at, _| applied.push(secs(at))));
        let sampler = s.spawn(|| {
            let (taken, delivered, rss_now) = (&taken, &delivered, &rss_now);
            let mut sample = |at_s: f64| {
                let now = sample_now(&mut rss, at_s, taken, delivered)?;
                // Exact: the bytes were divided by a power of two.
                rss_now.store((now.rss_mib * MIB) as u64, Ordering::Relaxed);
                samples.push(now);
                Ok::<(), SoakError>(())
            };
            for k in 0u32.. {
                let due = options.sample_every.saturating_mul(k);
                while !stop.is_stopped() && start.elapsed() < due {
                    std::thread::sleep(due.saturating_sub(start.elapsed()).min(WAIT_SLICE));
                }
                if stop.is_stopped() {
                    break;
                }
                sample(secs(due))?;
            }
            sample(secs(start.elapsed())) // the end, every frame counted
        });
        let configs = &options.configurations;
        let served = (|| {
            while start.elapsed() < options.duration && !options.stop.is_stopped() {
                let k = segments as usize;
                let config = &configs[k % configs.len()];
                if k > 0 && *config != configs[(k - 1) % configs.len()] {
                    switches.push(secs(start.elapsed()));
                }
                let boundary = options
                    .switch_every
                    .saturating_mul(u32::try_from(k + 1).unwrap_or(u32::MAX));
                let end = start + boundary.min(options.duration);
                server.segment(config, Gate::Until(end))?;
                // Each segment's per-frame records are dropped, so they cannot pass for a leak.
                server.timeline.clear();
                segments += 1;
                if segments as usize == configs.len() {
                    let at = start.elapsed();
                    warmup = Some(at);
                    // The baseline's own sample (module docs): the sampler's period may
                    // be longer than the warm-up.
                    warmup_sample = Some(sample_now(
                        &mut rss_at_warmup,
                        secs(at),
                        &taken,
                        &delivered,
                    )?);
                }
            }
            partial = options.stop.is_stopped() && start.elapsed() < options.duration;
            Ok::<(), LiveError>(())
        })();
        stop.stop();
        let played = player
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        let sampled = sampler
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        served?;
        played?;
        Ok::<(), LiveError>(sampled?)
    });
    let total = quantiles(&server.latency).unwrap_or(Latency { p50: 0.0, p99: 0.0 });
    drop(server);
    served?;
    let elapsed = start.elapsed();

    if let Some(at_end) = warmup_sample {
        let k = samples.partition_point(|s| s.at_s <= at_end.at_s);
        samples.insert(k, at_end);
    }
    let warmup_s = secs(warmup.unwrap_or(elapsed));
    let bound = RssBound::check(&samples, warmup_s, options.headroom_mib);
    let (frames_in, frames_out) = (taken.into_inner(), delivered.into_inner());
    // The first step applied sets the starting speeds; the later ones change them.
    let changes = applied.get(1..).unwrap_or_default();
    let mut latencies = latency.finish();
    if partial {
        // Only the intervals that had begun (deliveries all fall before the stop).
        latencies.truncate(intervals_over(elapsed, options.interval));
    }
    let intervals = Recorded {
        samples: &samples,
        switches: &switches,
        changes,
        latencies,
        warmup_s,
        elapsed_s: secs(elapsed),
        frames: (frames_in, frames_out),
    }
    .intervals(secs(options.interval));
    let cpus = rt.topology().cpus();
    let checks = Checks {
        in_order: order.passed(frames_in),
        rss_bounded: bound.held,
    };
    Ok(SoakReport {
        version: env!("CARGO_PKG_VERSION"),
        net: model.spec().name().to_string(),
        isa: Isa::current().map_or("unknown", Isa::name).to_string(),
        cpus: (0..rt.num_workers()).map(|w| cpus[w].id).collect(),
        configurations: options
            .configurations
            .iter()
            .map(ToString::to_string)
            .collect(),
        switch_every_s: secs(options.switch_every),
        speeds: options
            .speeds
            .iter()
            .map(|s| s.as_ref().map_or("none".to_owned(), ToString::to_string))
            .collect(),
        speeds_every_s: secs(options.speeds_every),
        rate_fps: options.rate_fps,
        duration_s: secs(options.duration),
        elapsed_s: secs(elapsed),
        inputs: refs.inputs.len(),
        frame_mib: (model.frame_floats() * std::mem::size_of::<f32>()) as f64 / MIB,
        frames_in,
        frames_out,
        throughput_fps: frames_out as f64 / secs(elapsed).max(1e-9),
        latency_ms: total,
        segments,
        reconfigurations: switches.len() as u64,
        speed_changes: changes.len() as u64,
        order,
        rss: bound,
        checks,
        intervals,
        samples,
        partial,
    })
}

impl fmt::Display for SoakReport {
    /// One line per interval, then the totals and the checks.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:>11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7}",
            "interval s", "frames in", "out", "p50 ms", "p99 ms", "RSS MiB", "reconf", "speeds"
        )?;
        for i in &self.intervals {
            let span = format!(
                "{:.0}-{:.0}{}",
                i.start_s,
                i.end_s,
                if i.warmup { "*" } else { "" }
            );
            let (p50, p99) = i.latency_ms.map_or(("-".to_owned(), "-".to_owned()), |l| {
                (format!("{:.1}", l.p50), format!("{:.1}", l.p99))
            });
            writeln!(
                f,
                "{span:>11} {:>9} {:>9} {p50:>9} {p99:>9} {:>9.1} {:>7} {:>7}",
                i.frames_in, i.frames_out, i.rss_mib, i.reconfigurations, i.speed_changes
            )?;
        }
        writeln!(
            f,
            "(* overlaps the warm-up, which ended at {:.1} s)",
            self.rss.warmup_s
        )?;
        if self.partial {
            writeln!(
                f,
                "partial: stopped at {:.1} s of {:.0} s",
                self.elapsed_s, self.duration_s
            )?;
        }
        writeln!(
            f,
            "{}: {} frames in, {} out in {:.1} s ({:.2} frames/s), p50 {:.1} ms, p99 {:.1} ms; {} segments, {} reconfigurations, {} speed changes",
            self.net,
            self.frames_in,
            self.frames_out,
            self.elapsed_s,
            self.throughput_fps,
            self.latency_ms.p50,
            self.latency_ms.p99,
            self.segments,
            self.reconfigurations,
            self.speed_changes
        )?;
        let verdict = |ok: bool| if ok { "ok" } else { "FAILED" };
        write!(
            f,
            "every frame once, in order: {}",
            verdict(self.checks.in_order)
        )?;
        if !self.checks.in_order {
            write!(
                f,
                " ({} faults, first {:?})",
                self.order.faults, self.order.first_faults
            )?;
        }
        writeln!(f)?;
        let r = &self.rss;
        writeln!(
            f,
            "RSS bounded: {} (peak {:.1} MiB at {:.0} s after the warm-up; limit {:.1} = warm-up peak {:.1} + {:.1}; {} samples checked; one frame's buffers {:.1} MiB)",
            verdict(self.checks.rss_bounded),
            r.peak_mib,
            r.peak_at_s,
            r.limit_mib,
            r.baseline_mib,
            r.headroom_mib,
            r.checked,
            self.frame_mib
        )
    }
}

#[cfg(test)]
mod test;
