//! Counters per worker and duration histograms per task type.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use hdrhistogram::Histogram;
use parking_lot::{Mutex, RwLock};

/// One worker's counters, written only by that worker (a plain load and store, no locked
/// instruction on the hot path) and read by anyone; padded so workers never share a line.
#[derive(Default)]
pub(crate) struct Counters {
    busy_ns: AtomicU64,
    parts: AtomicU64,
    steals: AtomicU64,
    parks: AtomicU64,
}

impl Counters {
    fn all(&self) -> [&AtomicU64; 4] {
        [&self.busy_ns, &self.parts, &self.steals, &self.parks]
    }

    fn read(&self) -> [u64; 4] {
        self.all().map(|a| a.load(Ordering::Relaxed))
    }
}

/// Adds to a counter only its owning worker writes.
#[inline]
fn bump(counter: &AtomicU64, by: u64) {
    counter.store(
        counter.load(Ordering::Relaxed).wrapping_add(by),
        Ordering::Relaxed,
    );
}

/// What `reset` saw: the time and every counter's value, subtracted from later reads so
/// that resetting never writes a worker's counters.
struct Baseline {
    since: Instant,
    counters: Vec<[u64; 4]>,
}

/// Per worker: one histogram per task type, indexed by the type's interned id.
type Histograms = Vec<Option<Histogram<u64>>>;

/// Live statistics. Each worker writes only its own slot, so recording never contends.
pub(crate) struct StatsCollector {
    baseline: Mutex<Baseline>,
    counters: Box<[CachePadded<Counters>]>,
    histograms: Box<[CachePadded<Mutex<Histograms>>]>,
    pinned: Box<[AtomicBool]>,
    /// Task type names by id, and ids by name: interned at submission, so recording a
    /// task's time indexes a vector instead of hashing its name.
    kinds: RwLock<(Vec<&'static str>, HashMap<&'static str, usize>)>,
}

/// The histogram for `kind_id` in one worker's list, created if missing.
fn histogram(histograms: &mut Histograms, kind_id: usize) -> &mut Histogram<u64> {
    if histograms.len() <= kind_id {
        histograms.resize_with(kind_id + 1, || None);
    }
    histograms[kind_id].get_or_insert_with(new_histogram)
}

/// Durations from 1 ns to one hour at 3 significant digits.
fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
        .expect("constant histogram bounds are valid")
}

impl StatsCollector {
    pub(crate) fn new(workers: usize) -> StatsCollector {
        StatsCollector {
            baseline: Mutex::new(Baseline {
                since: Instant::now(),
                counters: vec![[0; 4]; workers],
            }),
            counters: (0..workers)
                .map(|_| CachePadded::new(Counters::default()))
                .collect(),
            histograms: (0..workers)
                .map(|_| CachePadded::new(Mutex::new(Vec::new())))
                .collect(),
            pinned: (0..workers).map(|_| AtomicBool::new(false)).collect(),
            kinds: RwLock::new((Vec::new(), HashMap::new())),
        }
    }

    /// The id of a task type, assigned on first sight.
    pub(crate) fn intern(&self, kind: &'static str) -> usize {
        if let Some(&id) = self.kinds.read().1.get(kind) {
            return id;
        }
        let mut kinds = self.kinds.write();
        let (names, ids) = &mut *kinds;
        *ids.entry(kind).or_insert_with(|| {
            names.push(kind);
            names.len() - 1
        })
    }

    /// A worker ran its rank of a task for `took` (emulated stall included).
    pub(crate) fn record_part(&self, worker: usize, took: Duration) {
        let c = &self.counters[worker];
        bump(&c.busy_ns, took.as_nanos() as u64);
        bump(&c.parts, 1);
    }

    /// A task of type `kind_id` finished; `took` is its slowest rank.
    pub(crate) fn record_task(&self, worker: usize, kind_id: usize, took: Duration) {
        histogram(&mut self.histograms[worker].lock(), kind_id)
            .saturating_record(took.as_nanos().max(1) as u64);
    }

    /// Creates the histogram `worker` records tasks of `kind_id` into, if it has none yet:
    /// a histogram is a few hundred kilobytes, so they are made on first use — or ahead of
    /// time, for a prepared graph whose runs must not allocate.
    pub(crate) fn reserve(&self, worker: usize, kind_id: usize) {
        histogram(&mut self.histograms[worker].lock(), kind_id);
    }

    pub(crate) fn record_steal(&self, worker: usize) {
        bump(&self.counters[worker].steals, 1);
    }

    pub(crate) fn record_park(&self, worker: usize) {
        bump(&self.counters[worker].parks, 1);
    }

    pub(crate) fn set_pinned(&self, worker: usize, pinned: bool) {
        self.pinned[worker].store(pinned, Ordering::Relaxed);
    }

    /// Zeroes the histograms (keeping them: a prepared graph's next run must not have to
    /// allocate them again) and takes a new baseline of the counters.
    pub(crate) fn reset(&self) {
        let mut baseline = self.baseline.lock();
        for h in self.histograms.iter() {
            h.lock().iter_mut().flatten().for_each(Histogram::reset);
        }
        baseline.counters = self.counters.iter().map(|c| c.read()).collect();
        baseline.since = Instant::now();
    }

    pub(crate) fn snapshot(&self, cpus: &[Option<usize>], clusters: &[usize]) -> Stats {
        let baseline = self.baseline.lock();
        let elapsed = baseline.since.elapsed();
        let workers = self
            .counters
            .iter()
            .zip(&baseline.counters)
            .enumerate()
            .map(|(w, (c, base))| {
                let now = c.read();
                let [busy_ns, parts, steals, parks] =
                    [0, 1, 2, 3].map(|i| now[i].wrapping_sub(base[i]));
                let busy = Duration::from_nanos(busy_ns).min(elapsed);
                WorkerStats {
                    worker: w,
                    cpu: cpus.get(w).copied().flatten(),
                    cluster: clusters.get(w).copied().unwrap_or(0),
                    pinned: self.pinned[w].load(Ordering::Relaxed),
                    busy,
                    idle: elapsed - busy,
                    parts_run: parts,
                    steals,
                    parks,
                }
            })
            .collect();
        drop(baseline);
        let names = self.kinds.read().0.clone();
        let mut merged: HashMap<&'static str, Histogram<u64>> = HashMap::new();
        for h in self.histograms.iter() {
            for (id, hist) in h.lock().iter().enumerate() {
                let Some(hist) = hist.as_ref().filter(|h| !h.is_empty()) else {
                    continue;
                };
                let into = merged.entry(names[id]).or_insert_with(new_histogram);
                // Same bounds on both sides, so adding cannot fail.
                let _ = into.add(hist);
            }
        }
        let mut tasks: Vec<TaskTypeStats> = merged
            .into_iter()
            .map(|(kind, h)| TaskTypeStats {
                kind,
                count: h.len(),
                mean: Duration::from_nanos(h.mean() as u64),
                p50: Duration::from_nanos(h.value_at_quantile(0.5)),
                p99: Duration::from_nanos(h.value_at_quantile(0.99)),
                max: Duration::from_nanos(h.max()),
            })
            .collect();
        tasks.sort_by_key(|t| t.kind);
        Stats {
            elapsed,
            workers,
            tasks,
        }
    }
}

/// Runtime statistics since start (or the last reset).
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// Wall time covered.
    pub elapsed: Duration,
    /// One entry per worker.
    pub workers: Vec<WorkerStats>,
    /// One entry per task type, sorted by name.
    pub tasks: Vec<TaskTypeStats>,
}

/// One worker's share of the work.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerStats {
    /// Worker index.
    pub worker: usize,
    /// OS CPU it is pinned to, for pinned topologies.
    pub cpu: Option<usize>,
    /// Its cluster.
    pub cluster: usize,
    /// Whether pinning took effect.
    pub pinned: bool,
    /// Time spent running task ranks (emulated stalls included).
    pub busy: Duration,
    /// `elapsed - busy`.
    pub idle: Duration,
    /// Task ranks run (a width-w task counts once on each of its w workers).
    pub parts_run: u64,
    /// Ready tasks stolen from other workers.
    pub steals: u64,
    /// Times the worker parked for lack of work.
    pub parks: u64,
}

/// Durations of one task type (slowest rank of each run).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskTypeStats {
    /// Task type.
    pub kind: &'static str,
    /// Runs recorded.
    pub count: u64,
    /// Mean duration.
    pub mean: Duration,
    /// Median.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Longest.
    pub max: Duration,
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "over {:.3} s", self.elapsed.as_secs_f64())?;
        writeln!(
            f,
            "{:>6} {:>5} {:>7} {:>6} {:>10} {:>10} {:>8} {:>7} {:>7}",
            "worker", "cpu", "cluster", "pinned", "busy ms", "idle ms", "parts", "steals", "parks"
        )?;
        for w in &self.workers {
            let cpu = w.cpu.map_or("-".to_string(), |c| c.to_string());
            writeln!(
                f,
                "{:>6} {:>5} {:>7} {:>6} {:>10.1} {:>10.1} {:>8} {:>7} {:>7}",
                w.worker,
                cpu,
                w.cluster,
                w.pinned,
                w.busy.as_secs_f64() * 1e3,
                w.idle.as_secs_f64() * 1e3,
                w.parts_run,
                w.steals,
                w.parks
            )?;
        }
        writeln!(
            f,
            "{:>20} {:>9} {:>10} {:>10} {:>10} {:>10}",
            "task type", "count", "mean us", "p50 us", "p99 us", "max us"
        )?;
        for t in &self.tasks {
            let us = |d: Duration| d.as_secs_f64() * 1e6;
            writeln!(
                f,
                "{:>20} {:>9} {:>10.1} {:>10.1} {:>10.1} {:>10.1}",
                t.kind,
                t.count,
                us(t.mean),
                us(t.p50),
                us(t.p99),
                us(t.max)
            )?;
        }
        Ok(())
    }
}
