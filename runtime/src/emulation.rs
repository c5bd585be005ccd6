//! Emulated asymmetry: slow a cluster (or one worker) down by a speed factor.
//!
//! A worker whose speed is `s < 1` that just ran its part of a task for `d` keeps its core
//! busy for another `d·(1/s − 1)`, so the part takes `d/s` in all — as if the core ran at
//! `s` times its clock. Speeds can change while tasks run; the next part uses the new one.
//!
//! Presets mirror the governor settings of the paper's Table 1 (Jetson TX2, A57 and Denver
//! clusters at the `performance` or `powersave` governor):
//!
//! | preset        | factor | why |
//! |---------------|--------|-----|
//! | `performance` | 1.0    | the clock the machine has |
//! | `powersave`   | [`POWERSAVE`] = 0.5 | a decision: the paper gives no frequencies, and half speed is an asymmetry as strong as big vs little cores (2×) while keeping emulated runs short. Give a number (`0.17` is the TX2's 345.6 MHz / 2035 MHz) for another factor. |
//!
//! # Spec grammar
//! `SPEC := ITEM (',' ITEM)*`, `ITEM := [TARGET '='] SPEED | 'table1:' N`,
//! `TARGET := 'c'CLUSTER | 'w'WORKER | 'all'`, `SPEED := 'performance' | 'powersave' | FACTOR`
//! with `FACTOR` in [[`MIN_SPEED`], 1]. Items without a target apply to clusters 0, 1, … in
//! order. Items apply in order, so a later one overrides an earlier one where they overlap
//! (`all=0.5,w1=1`), but a spec names each target once: `w0=0.5,w0=0.3` is a mistake, not an
//! override. `table1:N` is setting `N` of
//! Table 1 with cluster 0 as the A57 cluster and cluster 1 as the Denver cluster; on a
//! machine with a single cluster, its first half of workers plays the A57 cluster and the
//! second half the Denver cluster.
//!
//! # Examples
//! ```
//! use taopipe_runtime::{EmulationSpec, Runtime};
//! let rt = Runtime::builder().workers(2).build()?;
//! rt.emulate(&"w1=powersave".parse::<EmulationSpec>()?)?;
//! assert_eq!(rt.speeds(), vec![1.0, 0.5]);
//! rt.emulate(&"table1:3".parse::<EmulationSpec>()?)?; // A57 half slow, Denver half fast
//! assert_eq!(rt.speeds(), vec![0.5, 1.0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::excerpt::excerpt;
use crate::topology::Topology;

mod schedule;

pub use schedule::{EmulationSchedule, ScheduleError, Step};

/// Speed factor of the `powersave` preset.
pub const POWERSAVE: f64 = 0.5;
/// Speed factor of the `performance` preset.
pub const PERFORMANCE: f64 = 1.0;
/// The slowest speed factor accepted: a core a thousand times slower than the machine's.
/// Slower is no core anyone runs (the paper's slowest setting is 0.17), a part of 10 ms
/// already stalls for 10 s at this speed, and a factor near 0 makes the stall `d·(1/s − 1)`
/// too long for any wait, or for a [`Duration`], to hold.
pub const MIN_SPEED: f64 = 1e-3;

/// Which workers an emulation item slows down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// Every worker of a cluster.
    Cluster(usize),
    /// One worker.
    Worker(usize),
    /// Every worker.
    All,
    /// Half `0` (first) or `1` (second) of the workers of a one-cluster machine, or cluster
    /// 0 / 1 where there are several clusters: how Table 1's two clusters map.
    Table1Cluster(usize),
}

/// A parsed `--emulate` spec: speed factors for targets, applied in order.
#[derive(Debug, Clone, PartialEq)]
pub struct EmulationSpec {
    items: Vec<(Target, f64)>,
    /// The spec as written, for messages and reports.
    text: String,
}

/// A spec that does not parse, or does not fit the runtime.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EmulationError {
    /// A token that is neither a preset nor a number (shortened if long).
    #[error(
        "emulation spec item `{0}`: expected `performance`, `powersave` or a speed factor in [{min}, 1]",
        min = MIN_SPEED
    )]
    BadSpeed(String),
    /// A factor outside [[`MIN_SPEED`], 1] (written in exponent form when tiny).
    #[error("emulation speed {0:?} is out of range: it must be in [{min}, 1]", min = MIN_SPEED)]
    OutOfRange(f64),
    /// A target that is not `cN`, `wN` or `all` (shortened if long).
    #[error("emulation target `{0}`: expected `cN` (cluster), `wN` (worker) or `all`")]
    BadTarget(String),
    /// `table1:N` with N outside 1..=4 (shortened if long).
    #[error("`table1:{0}`: Table 1 has governor settings 1 to 4")]
    BadTable1(String),
    /// A target named twice in one spec: the later item would silently override the first.
    #[error("emulation spec names {0} twice; give each worker or cluster one speed")]
    Repeated(Target),
    /// A cluster the topology does not have.
    #[error("emulation names cluster {cluster}, but there are {clusters} cluster(s)")]
    NoSuchCluster {
        /// The cluster named.
        cluster: usize,
        /// Clusters available.
        clusters: usize,
    },
    /// A worker the runtime does not have.
    #[error("emulation names worker {worker}, but there are {workers} worker(s)")]
    NoSuchWorker {
        /// The worker named.
        worker: usize,
        /// Workers available.
        workers: usize,
    },
    /// An empty spec.
    #[error("empty emulation spec")]
    Empty,
}

impl EmulationSpec {
    /// Governor setting `n` (1–4) of the paper's Table 1.
    pub fn table1(n: u8) -> Result<EmulationSpec, EmulationError> {
        let (a57, denver) = match n {
            1 => (PERFORMANCE, PERFORMANCE),
            2 => (PERFORMANCE, POWERSAVE),
            3 => (POWERSAVE, PERFORMANCE),
            4 => (POWERSAVE, POWERSAVE),
            _ => return Err(EmulationError::BadTable1(n.to_string())),
        };
        Ok(EmulationSpec {
            items: vec![
                (Target::Table1Cluster(0), a57),
                (Target::Table1Cluster(1), denver),
            ],
            text: format!("table1:{n}"),
        })
    }

    /// Every worker at `speed`.
    pub fn uniform(speed: f64) -> Result<EmulationSpec, EmulationError> {
        Ok(EmulationSpec {
            items: vec![(Target::All, check_speed(speed)?)],
            text: format!("all={speed}"),
        })
    }

    /// The items, in order.
    pub fn items(&self) -> &[(Target, f64)] {
        &self.items
    }

    /// Per-worker speeds this spec gives on `topology` (unnamed workers run at 1.0).
    pub fn resolve(&self, topology: &Topology) -> Result<Vec<f64>, EmulationError> {
        let n = topology.num_workers();
        let clusters = topology.clusters();
        let mut speeds = vec![PERFORMANCE; n];
        for &(target, speed) in &self.items {
            let workers: Vec<usize> = match target {
                Target::All => (0..n).collect(),
                Target::Worker(w) if w < n => vec![w],
                Target::Worker(w) => {
                    return Err(EmulationError::NoSuchWorker {
                        worker: w,
                        workers: n,
                    });
                }
                Target::Cluster(c) => clusters.get(c).map(|cl| cl.workers.clone()).ok_or(
                    EmulationError::NoSuchCluster {
                        cluster: c,
                        clusters: clusters.len(),
                    },
                )?,
                Target::Table1Cluster(half) if clusters.len() >= 2 => {
                    clusters[half].workers.clone()
                }
                Target::Table1Cluster(half) => {
                    let mid = n.div_ceil(2);
                    if half == 0 {
                        (0..mid).collect()
                    } else {
                        (mid..n).collect()
                    }
                }
            };
            for w in workers {
                speeds[w] = speed;
            }
        }
        Ok(speeds)
    }
}

/// Whether `speed` is a factor the runtime emulates: in [[`MIN_SPEED`], 1], not NaN.
pub(crate) fn valid_speed(speed: f64) -> bool {
    (MIN_SPEED..=PERFORMANCE).contains(&speed)
}

fn check_speed(speed: f64) -> Result<f64, EmulationError> {
    if valid_speed(speed) {
        Ok(speed)
    } else {
        Err(EmulationError::OutOfRange(speed))
    }
}

fn parse_speed(token: &str) -> Result<f64, EmulationError> {
    match token {
        "performance" => Ok(PERFORMANCE),
        "powersave" => Ok(POWERSAVE),
        _ => check_speed(
            token
                .parse::<f64>()
                .map_err(|_| EmulationError::BadSpeed(excerpt(token)))?,
        ),
    }
}

fn parse_target(token: &str) -> Result<Target, EmulationError> {
    let bad = || EmulationError::BadTarget(excerpt(token));
    if token == "all" {
        return Ok(Target::All);
    }
    let (kind, index) = token.split_at_checked(1).ok_or_else(bad)?;
    let index = index.parse::<usize>().map_err(|_| bad())?;
    match kind {
        "c" => Ok(Target::Cluster(index)),
        "w" => Ok(Target::Worker(index)),
        _ => Err(bad()),
    }
}

impl FromStr for EmulationSpec {
    type Err = EmulationError;

    fn from_str(spec: &str) -> Result<EmulationSpec, EmulationError> {
        let mut items = Vec::new();
        let mut positional = 0;
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if let Some(n) = item.strip_prefix("table1:") {
                let n = n
                    .parse::<u8>()
                    .map_err(|_| EmulationError::BadTable1(excerpt(n)))?;
                items.extend(EmulationSpec::table1(n)?.items);
            } else if let Some((target, speed)) = item.split_once('=') {
                items.push((parse_target(target.trim())?, parse_speed(speed.trim())?));
            } else {
                items.push((Target::Cluster(positional), parse_speed(item)?));
                positional += 1;
            }
        }
        if items.is_empty() {
            return Err(EmulationError::Empty);
        }
        let mut named = HashSet::with_capacity(items.len());
        if let Some(&(target, _)) = items.iter().find(|&&(target, _)| !named.insert(target)) {
            return Err(EmulationError::Repeated(target));
        }
        Ok(EmulationSpec {
            items,
            text: spec.trim().to_string(),
        })
    }
}

impl fmt::Display for Target {
    /// As a spec writes it (`c1`, `w3`, `all`); Table 1's clusters by name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Cluster(c) => write!(f, "c{c}"),
            Target::Worker(w) => write!(f, "w{w}"),
            Target::All => f.write_str("all"),
            Target::Table1Cluster(0) => f.write_str("Table 1's A57 cluster"),
            Target::Table1Cluster(1) => f.write_str("Table 1's Denver cluster"),
            Target::Table1Cluster(half) => write!(f, "Table 1's cluster {half}"),
        }
    }
}

impl fmt::Display for EmulationSpec {
    /// The spec as it was written (or built).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Live per-worker speed factors (f64 bits), readable by workers without locks.
pub(crate) struct Speeds {
    factors: Box<[AtomicU64]>,
}

impl Speeds {
    pub(crate) fn new(workers: usize) -> Speeds {
        Speeds {
            factors: (0..workers)
                .map(|_| AtomicU64::new(PERFORMANCE.to_bits()))
                .collect(),
        }
    }

    pub(crate) fn get(&self, worker: usize) -> f64 {
        f64::from_bits(self.factors[worker].load(Ordering::Relaxed))
    }

    pub(crate) fn set_all(&self, speeds: &[f64]) {
        for (slot, s) in self.factors.iter().zip(speeds) {
            slot.store(s.to_bits(), Ordering::Relaxed);
        }
    }

    pub(crate) fn snapshot(&self) -> Vec<f64> {
        (0..self.factors.len()).map(|w| self.get(w)).collect()
    }

    /// Keeps `worker` busy as a core of its speed would be after `ran` of real work.
    /// Returns whether it stalled (full-speed workers return at once).
    #[inline]
    pub(crate) fn stall(&self, worker: usize, ran: Duration) -> bool {
        let speed = self.get(worker);
        if speed >= 1.0 {
            return false;
        }
        busy_wait(stall_for(ran, speed));
        true
    }
}

/// How much longer than `ran` a core of `speed` takes: `ran·(1/speed − 1)`. Saturates at
/// [`Duration::MAX`] (and gives zero for a speed that is not below 1) instead of panicking
/// as `Duration::mul_f64` does: it runs on a worker, around a task. Speeds are checked
/// against [`MIN_SPEED`] before they get here, so it saturates only for absurd `ran`.
fn stall_for(ran: Duration, speed: f64) -> Duration {
    let seconds = ran.as_secs_f64() * (1.0 / speed - 1.0);
    if seconds.is_nan() || seconds <= 0.0 {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX)
}

/// Sleeps for most of a long wait (the OS wakes us a little late), then spins to the end.
#[cold]
fn busy_wait(extra: Duration) {
    const SLEEP_SLACK: Duration = Duration::from_micros(200);
    let Some(deadline) = Instant::now().checked_add(extra) else {
        // Past what `Instant` can hold: there is no end to spin to.
        std::thread::sleep(extra);
        return;
    };
    if extra > SLEEP_SLACK * 5 {
        std::thread::sleep(extra - SLEEP_SLACK);
    }
    while Instant::now() < deadline {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod test;
