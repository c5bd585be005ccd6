//! Which OS CPUs the workers run on, how those CPUs group into clusters, and
//! which places (leader, width) a task may occupy.
//!
//! Workers are numbered `0..n`; worker `i` is pinned to OS CPU `cpus()[i].id`.
//! A place is the contiguous run of workers `leader..leader + width`.
//!
//! # Sources
//!
//! * **sysfs** ([`Topology::from_sysfs`]): every online CPU this process may
//!   use. Missing files are normal (VMs, containers) and only lose detail:
//!   detection never fails for a missing or unreadable file, only when no CPU
//!   is left at all.
//! * **layout file** ([`Topology::from_layout`]): XiTAO's format, which fixes
//!   the worker order and the allowed widths; clusters still come from sysfs.
//! * **virtual** ([`Topology::symmetric`], [`Topology::virtual_clusters`]):
//!   workers that are not pinned, for tests and simulations.
//!
//! # Clustering rule
//!
//! A cluster is a set of CPUs that perform alike, because the tuner learns
//! one performance model per cluster. CPUs are first grouped by the key
//! (core kind, `cpu_capacity`, `cpuinfo_max_freq`, `scaling_governor`).
//! Each group is then split by `topology/cluster_id` **only if** that split
//! leaves no single-CPU cluster in the group: on x86 `cluster_id` often marks
//! per-core L2 domains and would shatter a symmetric machine into 1-core
//! clusters, while on Arm big.LITTLE (Jetson TX2: A57 ×4 in cluster 0,
//! Denver ×2 in cluster 1, same capacity and frequency) it is the only hint
//! of the real clusters. A side effect worth knowing: Intel E-core modules
//! (4 cores sharing an L2, each module its own `cluster_id`) stay separate
//! clusters.
//!
//! The rule runs on every online CPU, then keeps the usable ones: clusters
//! are a property of the hardware, so an affinity mask or a layout listing
//! a subset does not merge clusters (a Jetson TX2 restricted to 3 A57 cores
//! and 1 Denver core still has two clusters, one of them a singleton).
//!
//! Clusters are ordered fastest first: P-cores, then unknown kind, then
//! E-cores; within a kind by descending capacity, then descending maximum
//! frequency (unknown values last); ties by smallest CPU id. Cluster `i` of
//! [`Topology::clusters`] has id `i`.
//!
//! # Worker order
//!
//! For sysfs topologies workers go cluster by cluster, CPU ids ascending
//! inside a cluster, so each cluster is a contiguous run of workers and a
//! place never straddles clusters by accident. Layout files keep the file's
//! order, so a cluster's workers may be non-contiguous there.
//!
//! # Cluster names
//!
//! Intel hybrid clusters are named `P-cores` / `E-cores`; when several
//! clusters share a kind, they become `P-cores/c0`, `P-cores/c1`. Other
//! clusters are named `c0`, `c1`, ... by id; the [`Display`](fmt::Display)
//! of a topology describes them (CPUs, capacity, frequency, governor).
//!
//! # Allowed widths
//!
//! Without a layout file every contiguous run is a place: leader `l` may use
//! widths `1..=n - l`, because pipeline stages need arbitrary widths such as
//! 3 cores of 8. A layout file lists the widths per leader instead.

use std::cmp::Reverse;
use std::fmt;
use std::path::Path;

use crate::cpulist::{format_cpu_list, parse_cpu_list, parse_cpu_token, parse_decimal};
use crate::excerpt::excerpt;
use crate::place::Place;

#[cfg(test)]
mod test;

/// Environment variable naming a layout file that [`Topology::detect`] reads
/// instead of probing sysfs.
const LAYOUT_ENV: &str = "TAOPIPE_LAYOUT";

/// Where the kernel's sysfs is mounted.
const SYSFS_ROOT: &str = "/sys";

/// The online CPUs, relative to the sysfs root.
const ONLINE: &str = "devices/system/cpu/online";

/// Largest virtual topology: default widths take `n²/2` entries, and a
/// simulation larger than any real machine is more likely a mistake.
const MAX_VIRTUAL_WORKERS: usize = 1024;

/// Largest layout file read: a line of CPUs and one line of widths per CPU take well
/// under a megabyte even for 65 536 CPUs, so a bigger file (or an endless one such as
/// `/dev/zero`) is refused after at most this many bytes instead of being read whole.
pub const MAX_LAYOUT_BYTES: u64 = 16 << 20;

/// The kind of a core on an Intel hybrid CPU, from sysfs `devices/cpu_core`
/// and `devices/cpu_atom`; `Unknown` everywhere else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoreKind {
    /// A performance core (`cpu_core`).
    Performance,
    /// An efficiency core (`cpu_atom`).
    Efficiency,
    /// Not a hybrid CPU, or the kernel does not say.
    Unknown,
}

impl CoreKind {
    /// Rank in the cluster order: fast cores first.
    fn rank(self) -> u8 {
        match self {
            CoreKind::Performance => 0,
            CoreKind::Unknown => 1,
            CoreKind::Efficiency => 2,
        }
    }

    /// Cluster name prefix for hybrid kinds.
    fn label(self) -> Option<&'static str> {
        match self {
            CoreKind::Performance => Some("P-cores"),
            CoreKind::Efficiency => Some("E-cores"),
            CoreKind::Unknown => None,
        }
    }
}

/// One OS CPU used by a worker, with what sysfs says about its speed, so the
/// tuner and the logs can tell fast cores from slow ones.
#[derive(Debug, Clone, PartialEq)]
pub struct Cpu {
    /// OS CPU id the worker is pinned to (worker index for virtual topologies).
    pub id: usize,
    /// Index of the cluster in [`Topology::clusters`].
    pub cluster: usize,
    /// P-core / E-core on Intel hybrid CPUs.
    pub kind: CoreKind,
    /// Relative compute capacity (`cpu_capacity`, 1024 = fastest) if known.
    pub capacity: Option<u32>,
    /// Maximum frequency in kHz (`cpufreq/cpuinfo_max_freq`) if known.
    pub max_freq_khz: Option<u64>,
    /// cpufreq governor (`cpufreq/scaling_governor`) if known.
    pub governor: Option<String>,
}

/// A group of workers whose CPUs perform alike (see the module doc for the
/// rule); the tuner keeps one performance model per cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Cluster {
    /// Index in [`Topology::clusters`].
    pub id: usize,
    /// Short name for logs: `P-cores`, `E-cores`, `c0`, ...
    pub name: String,
    /// Worker indices in this cluster, ascending.
    pub workers: Vec<usize>,
}

/// The workers of the runtime: their CPUs, clusters and allowed places.
#[derive(Debug, Clone)]
pub struct Topology {
    /// Index = worker.
    cpus: Vec<Cpu>,
    clusters: Vec<Cluster>,
    /// Allowed widths per leader worker, ascending.
    widths: Vec<Vec<usize>>,
    /// Human description of where this came from.
    source: String,
    pin: bool,
}

/// Why a topology could not be built. Each variant names the offending value (a long
/// token or line shortened); layout errors start with `origin:line:` like a compiler's.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// No CPU is both online and allowed (or the restriction was empty).
    #[error("no usable CPU in {context}")]
    NoUsableCpu {
        /// What was searched.
        context: String,
    },
    /// A virtual topology with no worker, a zero-size cluster or too many workers.
    #[error("invalid virtual topology {spec}: {reason}")]
    BadVirtual {
        /// The call, e.g. `symmetric(0)`.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The layout file could not be read.
    #[error("cannot read layout file {path}")]
    ReadLayout {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The layout file is larger than [`MAX_LAYOUT_BYTES`] (refused without reading it
    /// whole).
    #[error(
        "layout file {path} is too large: {found}; a layout may have at most {MAX_LAYOUT_BYTES} bytes"
    )]
    LayoutTooLarge {
        /// The file.
        path: String,
        /// Its size (`8589934592 bytes`), or `more than that` for a file with no size
        /// (a device or pipe) that did not end.
        found: String,
    },
    /// The layout has no CPU line (empty, or only blank and comment lines).
    #[error("{origin}: empty layout, expected a line of CPU ids")]
    EmptyLayout {
        /// The layout's name, e.g. its path.
        origin: String,
    },
    /// A layout line has only separators where CPUs or widths belong.
    #[error("{origin}:{line}: no {what} on this line")]
    LayoutEmptyLine {
        /// The layout's name.
        origin: String,
        /// 1-based line number.
        line: usize,
        /// `CPU` or `width`.
        what: &'static str,
    },
    /// A layout token that is not a number (or CPU range).
    #[error("{origin}:{line}: {reason}")]
    LayoutToken {
        /// The layout's name.
        origin: String,
        /// 1-based line number.
        line: usize,
        /// The token, shortened if long.
        token: String,
        /// The message, naming the token.
        reason: String,
    },
    /// A layout CPU that is offline or outside the affinity mask.
    #[error(
        "{origin}:{line}: cpu {cpu} is not usable (offline or not in this process's affinity mask)"
    )]
    LayoutCpuUnusable {
        /// The layout's name.
        origin: String,
        /// 1-based line number.
        line: usize,
        /// The CPU.
        cpu: usize,
    },
    /// A layout CPU listed twice.
    #[error("{origin}:{line}: cpu {cpu} listed twice")]
    LayoutCpuTwice {
        /// The layout's name.
        origin: String,
        /// 1-based line number.
        line: usize,
        /// The CPU.
        cpu: usize,
    },
    /// A width of 0, or one that runs past the last worker.
    #[error(
        "{origin}:{line}: width {width} for leader worker {leader} does not fit {workers} workers (allowed 1..={})",
        .workers - .leader
    )]
    LayoutWidth {
        /// The layout's name.
        origin: String,
        /// 1-based line number.
        line: usize,
        /// The leader worker (0-based).
        leader: usize,
        /// The width.
        width: usize,
        /// Number of workers in the layout.
        workers: usize,
    },
    /// Fewer width lines than CPUs.
    #[error("{origin}:{line}: found {found} width lines, expected {expected} (one per CPU)")]
    LayoutTooFewLines {
        /// The layout's name.
        origin: String,
        /// Last line of the file.
        line: usize,
        /// Width lines found.
        found: usize,
        /// CPUs on the CPU line.
        expected: usize,
    },
    /// More width lines than CPUs.
    #[error("{origin}:{line}: extra width line `{text}`, the CPU line lists only {expected} CPUs")]
    LayoutTooManyLines {
        /// The layout's name.
        origin: String,
        /// 1-based line number of the first extra line.
        line: usize,
        /// Its text, shortened if long.
        text: String,
        /// CPUs on the CPU line.
        expected: usize,
    },
    /// [`Topology::restrict`] named a CPU that the topology does not use.
    #[error("cpu {cpu} is not in this topology (cpus {available})")]
    UnknownCpu {
        /// The CPU.
        cpu: usize,
        /// The topology's CPUs, as a CPU list.
        available: String,
    },
    /// [`Topology::restrict`] named a CPU twice.
    #[error("cpu {cpu} requested twice")]
    RepeatedCpu {
        /// The CPU.
        cpu: usize,
    },
}

impl Topology {
    /// Detects the machine: reads the layout file named by the environment
    /// variable `TAOPIPE_LAYOUT` if it is set and not empty (to reproduce a
    /// XiTAO experiment), otherwise probes sysfs at `/sys` for the CPUs this
    /// process may run on.
    ///
    /// # Examples
    ///
    /// ```
    /// use taopipe_runtime::Topology;
    ///
    /// let topo = Topology::detect()?;
    /// assert!(topo.num_workers() >= 1);
    /// assert!(topo.pins());
    /// # Ok::<(), taopipe_runtime::TopologyError>(())
    /// ```
    pub fn detect() -> Result<Topology, TopologyError> {
        match std::env::var_os(LAYOUT_ENV).filter(|path| !path.is_empty()) {
            Some(path) => Topology::from_layout_file(Path::new(&path)),
            None => Topology::from_sysfs(Path::new(SYSFS_ROOT), &allowed_cpus()),
        }
    }

    /// Builds the topology from a sysfs tree at `sysfs_root` (tests pass a
    /// fake one) restricted to `allowed`, the CPUs this process may use.
    /// Fails only when no allowed CPU is online.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::path::Path;
    /// use taopipe_runtime::Topology;
    ///
    /// // A tree with no files at all, like a bare VM: one cluster.
    /// let topo = Topology::from_sysfs(Path::new("/nonexistent"), &[0, 1, 2, 3])?;
    /// assert_eq!(topo.num_workers(), 4);
    /// assert_eq!(topo.clusters().len(), 1);
    /// assert_eq!(topo.allowed_widths(1), &[1, 2, 3]);
    /// # Ok::<(), taopipe_runtime::TopologyError>(())
    /// ```
    pub fn from_sysfs(sysfs_root: &Path, allowed: &[usize]) -> Result<Topology, TopologyError> {
        let usable = usable_cpus(sysfs_root, allowed);
        if usable.is_empty() {
            return Err(TopologyError::NoUsableCpu {
                context: format!(
                    "{} (allowed cpus: {})",
                    sysfs_source(sysfs_root),
                    format_cpu_list(allowed)
                ),
            });
        }
        let cpus = cluster_cpus(sysfs_root, &usable);
        let widths = default_widths(cpus.len());
        Ok(Topology::build(
            cpus,
            widths,
            sysfs_source(sysfs_root),
            true,
        ))
    }

    /// Builds the topology from XiTAO layout `text`: a line of CPUs (worker
    /// order), then one line of allowed widths per CPU. `origin` names the
    /// text in errors (e.g. the file path); clusters of the listed CPUs come
    /// from sysfs under `sysfs_root`; `allowed` are the CPUs this process may
    /// use. Separators are spaces and/or commas, the CPU line may use CPU
    /// list ranges (`0-5`), `#` starts a comment, blank lines are skipped;
    /// duplicate widths on a line are merged.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::path::Path;
    /// use taopipe_runtime::{Place, Topology};
    ///
    /// let text = "# 4 threads\n0 1 2 3\n1 2 4\n1\n1 2\n1\n";
    /// let topo = Topology::from_layout(text, "example", Path::new("/nonexistent"), &[0, 1, 2, 3])?;
    /// assert_eq!(topo.allowed_widths(0), &[1, 2, 4]);
    /// assert!(topo.is_allowed(Place::new(2, 2)));
    /// assert!(!topo.is_allowed(Place::new(1, 2)));
    ///
    /// let err = Topology::from_layout("0 1\n1\n3\n", "bad.txt", Path::new("/nonexistent"), &[0, 1]);
    /// assert!(err.unwrap_err().to_string().starts_with("bad.txt:3: width 3"));
    /// # Ok::<(), taopipe_runtime::TopologyError>(())
    /// ```
    pub fn from_layout(
        text: &str,
        origin: &str,
        sysfs_root: &Path,
        allowed: &[usize],
    ) -> Result<Topology, TopologyError> {
        let layout = Layout::parse(text, origin, &usable_cpus(sysfs_root, allowed))?;
        let mut cpus = cluster_cpus(sysfs_root, &layout.cpus);
        cpus.sort_by_key(|cpu| layout.cpus.iter().position(|&id| id == cpu.id));
        Ok(Topology::build(
            cpus,
            layout.widths,
            format!("layout file {origin}"),
            true,
        ))
    }

    /// Reads a layout file (see [`Topology::from_layout`]), checking its CPUs
    /// against the real `/sys` and this process's affinity mask.
    /// A file larger than [`MAX_LAYOUT_BYTES`] is refused without being read whole.
    pub fn from_layout_file(path: &Path) -> Result<Topology, TopologyError> {
        let origin = path.display().to_string();
        let text = read_layout(path, &origin)?;
        Topology::from_layout(&text, &origin, Path::new(SYSFS_ROOT), &allowed_cpus())
    }

    /// `n` virtual workers in one cluster, not pinned: for tests and
    /// simulations that must not depend on the machine. `n == 0` is an error.
    ///
    /// # Examples
    ///
    /// ```
    /// use taopipe_runtime::Topology;
    ///
    /// let topo = Topology::symmetric(4)?;
    /// assert_eq!(topo.num_workers(), 4);
    /// assert!(!topo.pins());
    /// assert_eq!(topo.places().len(), 4 + 3 + 2 + 1);
    /// assert!(Topology::symmetric(0).is_err());
    /// # Ok::<(), taopipe_runtime::TopologyError>(())
    /// ```
    pub fn symmetric(n: usize) -> Result<Topology, TopologyError> {
        if n == 0 {
            return Err(TopologyError::BadVirtual {
                spec: "symmetric(0)".to_owned(),
                reason: "needs at least one worker".to_owned(),
            });
        }
        Topology::virtual_clusters(&[n])
    }

    /// Virtual workers grouped in clusters of the given sizes (e.g. `[2, 2]`
    /// models a big.LITTLE machine), not pinned. An empty list, a size of 0
    /// or more than 1024 workers in all is an error.
    ///
    /// # Examples
    ///
    /// ```
    /// use taopipe_runtime::Topology;
    ///
    /// let topo = Topology::virtual_clusters(&[2, 2])?;
    /// assert_eq!(topo.clusters()[1].workers, vec![2, 3]);
    /// assert_eq!(topo.cluster_of(1), 0);
    /// assert!(Topology::virtual_clusters(&[2, 0]).is_err());
    /// # Ok::<(), taopipe_runtime::TopologyError>(())
    /// ```
    pub fn virtual_clusters(sizes: &[usize]) -> Result<Topology, TopologyError> {
        check_virtual_sizes(sizes)?;
        let cpus: Vec<Cpu> = sizes
            .iter()
            .enumerate()
            .flat_map(|(cluster, &size)| std::iter::repeat_n(cluster, size))
            .enumerate()
            .map(|(id, cluster)| Cpu::unprobed(id, cluster))
            .collect();
        let widths = default_widths(cpus.len());
        Ok(Topology::build(cpus, widths, "virtual".to_owned(), false))
    }

    /// Keeps only the workers on the given OS CPUs (a `--cpus LIST` flag), in
    /// this topology's worker order. Clusters are renumbered; each kept
    /// leader keeps the widths it had that still fit (width 1 if none does,
    /// so every worker can still run a task alone). A CPU not in this
    /// topology, a CPU named twice or an empty list is an error.
    ///
    /// # Examples
    ///
    /// ```
    /// use taopipe_runtime::Topology;
    ///
    /// let topo = Topology::virtual_clusters(&[2, 2])?.restrict(&[1, 2, 3])?;
    /// assert_eq!(topo.num_workers(), 3);
    /// assert_eq!(topo.clusters()[0].workers, vec![0]);
    /// assert_eq!(topo.allowed_widths(0), &[1, 2, 3]);
    /// # Ok::<(), taopipe_runtime::TopologyError>(())
    /// ```
    pub fn restrict(&self, cpus: &[usize]) -> Result<Topology, TopologyError> {
        self.check_restriction(cpus)?;
        let kept: Vec<usize> = (0..self.cpus.len())
            .filter(|&worker| cpus.contains(&self.cpus[worker].id))
            .collect();
        let mut old_clusters: Vec<usize> = kept.iter().map(|&w| self.cpus[w].cluster).collect();
        old_clusters.sort_unstable();
        old_clusters.dedup();
        let new_cpus = kept
            .iter()
            .map(|&worker| {
                let cpu = &self.cpus[worker];
                let cluster = old_clusters.partition_point(|&old| old < cpu.cluster);
                Cpu {
                    cluster,
                    ..cpu.clone()
                }
            })
            .collect();
        let widths = kept
            .iter()
            .enumerate()
            .map(|(leader, &worker)| fitting_widths(&self.widths[worker], kept.len() - leader))
            .collect();
        let source = format!(
            "{}, restricted to cpus {}",
            self.source,
            format_cpu_list(cpus)
        );
        Ok(Topology::build(new_cpus, widths, source, self.pin))
    }

    /// Number of workers.
    pub fn num_workers(&self) -> usize {
        self.cpus.len()
    }

    /// The CPU of each worker (index = worker).
    pub fn cpus(&self) -> &[Cpu] {
        &self.cpus
    }

    /// The clusters, fastest first for sysfs-based topologies.
    pub fn clusters(&self) -> &[Cluster] {
        &self.clusters
    }

    /// Cluster index of `worker`.
    ///
    /// # Panics
    ///
    /// If `worker >= num_workers()`.
    pub fn cluster_of(&self, worker: usize) -> usize {
        self.cpus[worker].cluster
    }

    /// Widths a place led by `leader` may have, ascending; empty for a
    /// leader that is not a worker.
    pub fn allowed_widths(&self, leader: usize) -> &[usize] {
        self.widths.get(leader).map_or(&[], Vec::as_slice)
    }

    /// Whether `place` is one of [`Topology::places`].
    pub fn is_allowed(&self, place: Place) -> bool {
        self.allowed_widths(place.leader())
            .binary_search(&place.width())
            .is_ok()
    }

    /// Every allowed place, ordered by (leader, width).
    pub fn places(&self) -> Vec<Place> {
        self.widths
            .iter()
            .enumerate()
            .flat_map(|(leader, widths)| widths.iter().map(move |&width| Place::new(leader, width)))
            .collect()
    }

    /// Whether workers should be pinned to their CPUs: true for sysfs and
    /// layout topologies, false for virtual ones.
    pub fn pins(&self) -> bool {
        self.pin
    }

    /// Where this topology came from: `sysfs`, `layout file PATH`,
    /// `virtual`, plus any restriction.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Assembles a topology; `cpus[i].cluster` must be dense cluster indices.
    fn build(cpus: Vec<Cpu>, widths: Vec<Vec<usize>>, source: String, pin: bool) -> Topology {
        let clusters = clusters_of(&cpus);
        Topology {
            cpus,
            clusters,
            widths,
            source,
            pin,
        }
    }

    /// Rejects an empty restriction, repeated CPUs and CPUs we do not use.
    fn check_restriction(&self, cpus: &[usize]) -> Result<(), TopologyError> {
        if cpus.is_empty() {
            return Err(TopologyError::NoUsableCpu {
                context: "an empty CPU restriction".to_owned(),
            });
        }
        for (i, &cpu) in cpus.iter().enumerate() {
            if cpus[..i].contains(&cpu) {
                return Err(TopologyError::RepeatedCpu { cpu });
            }
            if !self.cpus.iter().any(|c| c.id == cpu) {
                let mut ids: Vec<usize> = self.cpus.iter().map(|c| c.id).collect();
                ids.sort_unstable();
                return Err(TopologyError::UnknownCpu {
                    cpu,
                    available: format_cpu_list(&ids),
                });
            }
        }
        Ok(())
    }
}

impl fmt::Display for Topology {
    /// One header line, then one line per cluster.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pinned = if self.pin { "pinned" } else { "not pinned" };
        writeln!(
            f,
            "{} from {} ({pinned}), {}, {}",
            plural(self.num_workers(), "worker"),
            self.source,
            plural(self.clusters.len(), "cluster"),
            plural(self.places().len(), "place")
        )?;
        for cluster in &self.clusters {
            writeln!(f, "  {}", self.describe(cluster))?;
        }
        Ok(())
    }
}

/// `1 cluster`, `2 clusters`.
fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

impl Topology {
    /// One line about a cluster: name, CPUs, workers and what its CPUs share.
    fn describe(&self, cluster: &Cluster) -> String {
        let ids: Vec<usize> = cluster.workers.iter().map(|&w| self.cpus[w].id).collect();
        let mut line = format!(
            "{}: cpus {} -> workers {}",
            cluster.name,
            format_cpu_list(&ids),
            format_cpu_list(&cluster.workers)
        );
        if let Some(cpu) = cluster.workers.first().map(|&w| &self.cpus[w]) {
            line.push_str(&cpu.traits());
        }
        line
    }
}

impl Cpu {
    /// A CPU nothing is known about (virtual topologies).
    fn unprobed(id: usize, cluster: usize) -> Cpu {
        Cpu {
            id,
            cluster,
            kind: CoreKind::Unknown,
            capacity: None,
            max_freq_khz: None,
            governor: None,
        }
    }

    /// `, P-core, capacity 1024, max 2035 MHz, governor schedutil`, leaving
    /// out what is unknown.
    fn traits(&self) -> String {
        let kind = match self.kind {
            CoreKind::Performance => Some("performance cores".to_owned()),
            CoreKind::Efficiency => Some("efficiency cores".to_owned()),
            CoreKind::Unknown => None,
        };
        let capacity = self.capacity.map(|c| format!("capacity {c}"));
        let freq = self
            .max_freq_khz
            .map(|khz| format!("max {} MHz", khz / 1000));
        let governor = self.governor.as_ref().map(|g| format!("governor {g}"));
        [kind, capacity, freq, governor]
            .into_iter()
            .flatten()
            .map(|t| format!(", {t}"))
            .collect()
    }
}

/// What sysfs says about one CPU.
#[derive(Debug)]
struct Probe {
    id: usize,
    kind: CoreKind,
    capacity: Option<u32>,
    max_freq_khz: Option<u64>,
    governor: Option<String>,
    /// `topology/cluster_id`; `None` when missing or -1.
    cluster_id: Option<u64>,
}

impl Probe {
    /// Reads `<root>/devices/system/cpu/cpu<id>/...`; missing files give `None`.
    fn read(root: &Path, id: usize, hybrid: &Hybrid) -> Probe {
        let dir = root.join(format!("devices/system/cpu/cpu{id}"));
        Probe {
            id,
            kind: hybrid.kind(id),
            capacity: read_value(&dir.join("cpu_capacity")),
            max_freq_khz: read_value(&dir.join("cpufreq/cpuinfo_max_freq")),
            governor: read_trimmed(&dir.join("cpufreq/scaling_governor")),
            cluster_id: read_value::<i64>(&dir.join("topology/cluster_id"))
                .and_then(|id| u64::try_from(id).ok()),
        }
    }

    /// The grouping key of the clustering rule.
    fn key(&self) -> (CoreKind, Option<u32>, Option<u64>, Option<&str>) {
        (
            self.kind,
            self.capacity,
            self.max_freq_khz,
            self.governor.as_deref(),
        )
    }

    /// The cluster order: kind, then descending capacity and frequency.
    fn speed_rank(&self) -> (u8, Reverse<Option<u32>>, Reverse<Option<u64>>) {
        (
            self.kind.rank(),
            Reverse(self.capacity),
            Reverse(self.max_freq_khz),
        )
    }

    fn to_cpu(&self, cluster: usize) -> Cpu {
        Cpu {
            id: self.id,
            cluster,
            kind: self.kind,
            capacity: self.capacity,
            max_freq_khz: self.max_freq_khz,
            governor: self.governor.clone(),
        }
    }
}

/// Intel hybrid CPU lists (`devices/cpu_core/cpus`, `devices/cpu_atom/cpus`).
#[derive(Debug)]
struct Hybrid {
    performance: Vec<usize>,
    efficiency: Vec<usize>,
}

impl Hybrid {
    fn read(root: &Path) -> Hybrid {
        let list = |pmu: &str| {
            read_cpu_list(&root.join(format!("devices/{pmu}/cpus"))).unwrap_or_default()
        };
        Hybrid {
            performance: list("cpu_core"),
            efficiency: list("cpu_atom"),
        }
    }

    fn kind(&self, cpu: usize) -> CoreKind {
        if self.performance.contains(&cpu) {
            CoreKind::Performance
        } else if self.efficiency.contains(&cpu) {
            CoreKind::Efficiency
        } else {
            CoreKind::Unknown
        }
    }
}

/// The text of the layout file at `path` (`origin` in errors): at most
/// [`MAX_LAYOUT_BYTES`] are read, so an 8 GiB file or `/dev/zero` is refused at once.
fn read_layout(path: &Path, origin: &str) -> Result<String, TopologyError> {
    use std::io::Read;
    let io = |source| TopologyError::ReadLayout {
        path: origin.to_owned(),
        source,
    };
    let too_large = |found: String| TopologyError::LayoutTooLarge {
        path: origin.to_owned(),
        found,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    // A regular file says its size: refuse a large one without reading a byte of it.
    let meta = file.metadata().map_err(io)?;
    if meta.is_file() && meta.len() > MAX_LAYOUT_BYTES {
        return Err(too_large(format!("{} bytes", meta.len())));
    }
    let mut bytes = Vec::new();
    file.take(MAX_LAYOUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_LAYOUT_BYTES {
        return Err(too_large("more than that".to_owned()));
    }
    String::from_utf8(bytes)
        .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
}

/// The CPUs of this process (`sched_getaffinity`), or `0..n` when the mask
/// cannot be read.
fn allowed_cpus() -> Vec<usize> {
    core_affinity::get_core_ids()
        .map(|ids| ids.into_iter().map(|core| core.id).collect::<Vec<_>>())
        .filter(|ids| !ids.is_empty())
        .unwrap_or_else(|| {
            let n = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
            (0..n).collect()
        })
}

/// `allowed` ∩ online CPUs (all of `allowed` when `online` is missing),
/// ascending.
fn usable_cpus(root: &Path, allowed: &[usize]) -> Vec<usize> {
    let online = read_cpu_list(&root.join(ONLINE));
    let mut usable: Vec<usize> = allowed
        .iter()
        .copied()
        .filter(|cpu| online.as_ref().is_none_or(|online| online.contains(cpu)))
        .collect();
    usable.sort_unstable();
    usable.dedup();
    usable
}

/// The CPUs `ids` with clusters assigned by the module's rule, cluster by
/// cluster, ids ascending inside a cluster. The rule runs on every online CPU
/// (plus `ids`), so an affinity mask or a layout listing a subset does not
/// change which cluster a CPU belongs to; clusters with no CPU of `ids` are
/// dropped.
fn cluster_cpus(root: &Path, ids: &[usize]) -> Vec<Cpu> {
    let hybrid = Hybrid::read(root);
    let mut all = read_cpu_list(&root.join(ONLINE)).unwrap_or_default();
    all.extend_from_slice(ids);
    all.sort_unstable();
    all.dedup();
    let probes: Vec<Probe> = all
        .iter()
        .map(|&id| Probe::read(root, id, &hybrid))
        .collect();
    cluster_groups(&probes)
        .into_iter()
        .map(|group| {
            group
                .into_iter()
                .map(|i| &probes[i])
                .filter(|p| ids.contains(&p.id))
                .collect::<Vec<_>>()
        })
        .filter(|members| !members.is_empty())
        .enumerate()
        .flat_map(|(cluster, members)| members.into_iter().map(move |probe| probe.to_cpu(cluster)))
        .collect()
}

/// The clusters as lists of indices into `probes`, in cluster order.
fn cluster_groups(probes: &[Probe]) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = group_by(0..probes.len(), |&i| probes[i].key())
        .into_iter()
        .flat_map(|group| split_by_cluster_id(group, probes))
        .collect();
    groups.sort_by_key(|group| {
        let first = group.first().map(|&i| probes[i].speed_rank());
        let min_id = group.iter().map(|&i| probes[i].id).min();
        (first, min_id)
    });
    groups
}

/// Splits a group by `cluster_id` unless that leaves a single-CPU cluster.
fn split_by_cluster_id(group: Vec<usize>, probes: &[Probe]) -> Vec<Vec<usize>> {
    let split = group_by(group.iter().copied(), |&i| probes[i].cluster_id);
    if split.iter().any(|part| part.len() == 1) {
        vec![group]
    } else {
        split
    }
}

/// Groups items by key, groups in order of first appearance.
fn group_by<T, K: PartialEq>(
    items: impl IntoIterator<Item = T>,
    key: impl Fn(&T) -> K,
) -> Vec<Vec<T>> {
    let mut groups: Vec<(K, Vec<T>)> = Vec::new();
    for item in items {
        let k = key(&item);
        match groups.iter_mut().find(|(group_key, _)| *group_key == k) {
            Some((_, members)) => members.push(item),
            None => groups.push((k, vec![item])),
        }
    }
    groups.into_iter().map(|(_, members)| members).collect()
}

/// Builds the cluster list from each CPU's cluster index.
fn clusters_of(cpus: &[Cpu]) -> Vec<Cluster> {
    let count = cpus.iter().map(|cpu| cpu.cluster + 1).max().unwrap_or(0);
    let mut workers = vec![Vec::new(); count];
    for (worker, cpu) in cpus.iter().enumerate() {
        workers[cpu.cluster].push(worker);
    }
    let kinds: Vec<CoreKind> = workers
        .iter()
        .map(|members| members.first().map_or(CoreKind::Unknown, |&w| cpus[w].kind))
        .collect();
    workers
        .into_iter()
        .enumerate()
        .map(|(id, workers)| Cluster {
            id,
            name: cluster_name(id, &kinds),
            workers,
        })
        .collect()
}

/// `P-cores` / `E-cores` when that kind has one cluster, `P-cores/c<id>`
/// when it has several, `c<id>` otherwise.
fn cluster_name(id: usize, kinds: &[CoreKind]) -> String {
    let kind = kinds[id];
    match kind.label() {
        Some(label) if kinds.iter().filter(|&&k| k == kind).count() == 1 => label.to_owned(),
        Some(label) => format!("{label}/c{id}"),
        None => format!("c{id}"),
    }
}

/// Every contiguous run: leader `l` may use widths `1..=n - l`.
fn default_widths(n: usize) -> Vec<Vec<usize>> {
    (0..n).map(|leader| (1..=n - leader).collect()).collect()
}

/// The widths that fit in `room` workers, or `[1]` if none does.
fn fitting_widths(widths: &[usize], room: usize) -> Vec<usize> {
    let fit: Vec<usize> = widths.iter().copied().filter(|&w| w <= room).collect();
    if fit.is_empty() { vec![1] } else { fit }
}

/// Rejects an empty list, a zero size and oversized virtual topologies.
fn check_virtual_sizes(sizes: &[usize]) -> Result<(), TopologyError> {
    let reason = if sizes.is_empty() {
        "needs at least one cluster".to_owned()
    } else if let Some(i) = sizes.iter().position(|&size| size == 0) {
        format!("cluster {i} has size 0")
    } else if sizes
        .iter()
        .try_fold(0usize, |sum, &size| sum.checked_add(size))
        .is_none_or(|n| n > MAX_VIRTUAL_WORKERS)
    {
        format!("more than {MAX_VIRTUAL_WORKERS} workers")
    } else {
        return Ok(());
    };
    Err(TopologyError::BadVirtual {
        spec: format!("virtual_clusters({sizes:?})"),
        reason,
    })
}

/// `sysfs` for the real one, `sysfs at ROOT` for a fake tree.
fn sysfs_source(root: &Path) -> String {
    if root == Path::new(SYSFS_ROOT) {
        "sysfs".to_owned()
    } else {
        format!("sysfs at {}", root.display())
    }
}

/// A sysfs file's content, trimmed; `None` if missing, unreadable or empty.
fn read_trimmed(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// A sysfs number; `None` if missing or not a number.
fn read_value<T: std::str::FromStr>(path: &Path) -> Option<T> {
    read_trimmed(path)?.parse().ok()
}

/// A sysfs CPU list; `None` if missing, empty or garbled.
fn read_cpu_list(path: &Path) -> Option<Vec<usize>> {
    parse_cpu_list(&read_trimmed(path)?).ok()
}

/// A parsed layout file: CPUs in worker order and widths per leader.
#[derive(Debug)]
struct Layout {
    cpus: Vec<usize>,
    widths: Vec<Vec<usize>>,
}

impl Layout {
    /// Parses XiTAO layout `text`; CPUs must be in `usable`.
    fn parse(text: &str, origin: &str, usable: &[usize]) -> Result<Layout, TopologyError> {
        let mut lines = content_lines(text);
        let (cpu_line, cpu_text) = lines.next().ok_or_else(|| TopologyError::EmptyLayout {
            origin: origin.to_owned(),
        })?;
        let cpus = parse_layout_cpus(origin, cpu_line, cpu_text, usable)?;
        let n = cpus.len();
        let mut widths = Vec::with_capacity(n);
        for (line, text) in lines {
            if widths.len() == n {
                return Err(TopologyError::LayoutTooManyLines {
                    origin: origin.to_owned(),
                    line,
                    text: excerpt(text),
                    expected: n,
                });
            }
            widths.push(parse_width_line(origin, line, text, widths.len(), n)?);
        }
        if widths.len() < n {
            return Err(TopologyError::LayoutTooFewLines {
                origin: origin.to_owned(),
                line: text.lines().count().max(1),
                found: widths.len(),
                expected: n,
            });
        }
        Ok(Layout { cpus, widths })
    }
}

/// Non-blank lines with comments stripped, as (1-based line number, text).
fn content_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, line)| (i + 1, line.split('#').next().unwrap_or_default().trim()))
        .filter(|(_, line)| !line.is_empty())
}

/// Tokens of a layout line: separated by whitespace and/or commas.
fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|token| !token.is_empty())
}

/// The layout's CPU line: ids or ranges, each usable, none twice.
fn parse_layout_cpus(
    origin: &str,
    line: usize,
    text: &str,
    usable: &[usize],
) -> Result<Vec<usize>, TopologyError> {
    let mut cpus = Vec::new();
    for token in tokens(text) {
        let range = parse_cpu_token(token).map_err(|reason| TopologyError::LayoutToken {
            origin: origin.to_owned(),
            line,
            token: excerpt(token),
            reason,
        })?;
        for cpu in range {
            if cpus.contains(&cpu) {
                return Err(TopologyError::LayoutCpuTwice {
                    origin: origin.to_owned(),
                    line,
                    cpu,
                });
            }
            if !usable.contains(&cpu) {
                return Err(TopologyError::LayoutCpuUnusable {
                    origin: origin.to_owned(),
                    line,
                    cpu,
                });
            }
            cpus.push(cpu);
        }
    }
    if cpus.is_empty() {
        return Err(TopologyError::LayoutEmptyLine {
            origin: origin.to_owned(),
            line,
            what: "CPU",
        });
    }
    Ok(cpus)
}

/// One widths line for `leader` of `n` workers: ascending, deduplicated.
fn parse_width_line(
    origin: &str,
    line: usize,
    text: &str,
    leader: usize,
    n: usize,
) -> Result<Vec<usize>, TopologyError> {
    let mut widths = Vec::new();
    for token in tokens(text) {
        let width = parse_decimal(token).ok_or_else(|| TopologyError::LayoutToken {
            origin: origin.to_owned(),
            line,
            token: excerpt(token),
            reason: format!("`{}` is not a width", excerpt(token)),
        })?;
        // `leader < n`: written as `leader + width > n`, a huge width would overflow.
        if width == 0 || width > n - leader {
            return Err(TopologyError::LayoutWidth {
                origin: origin.to_owned(),
                line,
                leader,
                width,
                workers: n,
            });
        }
        widths.push(width);
    }
    if widths.is_empty() {
        return Err(TopologyError::LayoutEmptyLine {
            origin: origin.to_owned(),
            line,
            what: "width",
        });
    }
    widths.sort_unstable();
    widths.dedup();
    Ok(widths)
}
