//! Pipeline configurations, the place policies that map stages to workers, and the search
//! space they span (paper Eq. 4).
//!
//! A [`Configuration`] is explicit: the number of consecutive **units** (pipeline units of
//! the DSL, `NetSpec::units`) in each stage *and* the place of each stage, a contiguous
//! run of workers `leader .. leader + width`.
//!
//! # Place policy
//!
//! The paper searches layer distributions only; which cores a stage runs on is left to the
//! runtime. We make the mapping explicit and name it:
//!
//! * [`PlacePolicy::Contiguous`] (the default, what Pipe-search uses): `p` stages take the
//!   workers in order, each a contiguous run, widths as equal as possible, the first
//!   `workers % p` stages one worker wider (the `split_range` rule). 4 workers, 3 stages:
//!   `0+2, 2+1, 3+1`. One mapping per stage count, so the space is the layer
//!   compositions alone, as in the paper.
//! * [`PlacePolicy::EveryWidthSplit`]: every composition of the workers into `p` widths,
//!   stages still in order over the workers (stage 0 starts at worker 0, each next stage
//!   where the previous one ends, all workers used). `C(workers − 1, p − 1)` mappings per
//!   stage count; the space becomes (layer composition × worker composition), which the
//!   exhaustive and random baselines can visit.
//!
//! Workers are numbered so that a cluster is a contiguous range (as the runtime's
//! topology numbers them), so "stages in order over the workers" fills one cluster before
//! the next and a stage spans two clusters only where a run crosses the boundary.
//!
//! Under a layout that allows fewer places ([`AllowedPlaces`]) both policies keep to the
//! allowed ones: Contiguous puts each stage on the widest allowed place inside its run
//! (some workers may then idle, and a stage count whose run holds no allowed place has
//! no mapping), EveryWidthSplit lists the splits of all workers into allowed places.

use std::collections::HashSet;
use std::fmt;
use std::ops::{Range, RangeInclusive};

use serde::{Deserialize, Serialize};
use taopipe_dsl::{SplitMix64, composition_count};

use crate::places::AllowedPlaces;

/// One pipeline stage: `layers` consecutive units on the workers `leader .. leader + width`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StageConfig {
    /// Number of consecutive units in the stage (≥ 1). Serialised as `units` (a unit is
    /// one or more layers, `NetSpec::units`); `layers` is read too, for older reports.
    #[serde(rename = "units", alias = "layers")]
    pub layers: usize,
    /// First worker of the stage's place.
    pub leader: usize,
    /// Number of workers of the place (≥ 1).
    pub width: usize,
}

impl StageConfig {
    /// The workers of the stage's place, `leader .. leader + width` (saturating).
    ///
    /// ```
    /// use taopipe_tuner::StageConfig;
    ///
    /// let s = StageConfig { layers: 3, leader: 2, width: 2 };
    /// assert_eq!(s.workers(), 2..4);
    /// ```
    pub fn workers(&self) -> Range<usize> {
        self.leader..self.leader.saturating_add(self.width)
    }
}

/// Why a [`Configuration`] is invalid. Each variant names the offending stage and value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A configuration needs at least one stage.
    #[error("a configuration needs at least one stage")]
    NoStages,
    /// A stage holds no units.
    #[error("stage {stage} holds 0 units (each stage needs at least 1)")]
    EmptyStage {
        /// The stage (0-based).
        stage: usize,
    },
    /// The stages' unit counts do not add up to the net's unit count.
    #[error("composition {composition:?} covers {covered} units, the net has {units}")]
    UnitCount {
        /// Units per stage.
        composition: Vec<usize>,
        /// Their sum.
        covered: usize,
        /// Units of the net.
        units: usize,
    },
    /// A stage has width 0.
    #[error("stage {stage} has width 0 (each stage needs at least 1 worker)")]
    ZeroWidth {
        /// The stage (0-based).
        stage: usize,
    },
    /// A stage's place reaches past the last worker.
    #[error("stage {stage}: place {leader}+{width} reaches past the {workers} workers")]
    OutsidePlatform {
        /// The stage (0-based).
        stage: usize,
        /// Its leader.
        leader: usize,
        /// Its width.
        width: usize,
        /// Workers of the platform.
        workers: usize,
    },
    /// Two stages share a worker.
    #[error("stages {first} and {second} both use worker {worker}")]
    Overlap {
        /// The earlier stage.
        first: usize,
        /// The later stage.
        second: usize,
        /// A worker in both places.
        worker: usize,
    },
    /// A place policy cannot map this many stages onto the workers.
    #[error("{stages} stages do not fit on {workers} workers (one worker per stage at least)")]
    TooManyStages {
        /// Stages asked for.
        stages: usize,
        /// Workers of the platform.
        workers: usize,
    },
    /// The places given do not match the composition's stage count.
    #[error("{places} places for {stages} stages")]
    PlaceCount {
        /// Places given.
        places: usize,
        /// Stages of the composition.
        stages: usize,
    },
    /// A stage's place is one the platform's layout does not allow.
    #[error(
        "stage {stage}: place {leader}+{width} is not allowed (leader {leader} may use widths {allowed:?})"
    )]
    PlaceNotAllowed {
        /// The stage (0-based).
        stage: usize,
        /// Its leader.
        leader: usize,
        /// Its width.
        width: usize,
        /// The widths the layout allows at that leader.
        allowed: Vec<usize>,
    },
    /// A stage's run of workers holds no place the layout allows.
    #[error("stage {stage}: no allowed place inside its workers {leader}+{width}")]
    NoAllowedPlace {
        /// The stage (0-based).
        stage: usize,
        /// First worker of its run.
        leader: usize,
        /// Workers in its run.
        width: usize,
    },
    /// An allowed width of 0, or one that runs past the last worker.
    #[error("leader {leader}: width {width} does not fit {workers} workers")]
    LayoutWidth {
        /// The leader worker.
        leader: usize,
        /// The width.
        width: usize,
        /// Workers of the platform.
        workers: usize,
    },
}

/// A pipeline configuration: ordered stages, each a run of consecutive units on a
/// contiguous run of workers.
///
/// Displayed as `[units per stage]@{leader+width, …}`:
///
/// ```
/// use taopipe_tuner::{Configuration, PlacePolicy};
///
/// let c = Configuration::with_places(&[6, 5, 10], &[(0, 1), (1, 1), (2, 2)], 21, 4)?;
/// assert_eq!(c.to_string(), "[6,5,10]@{0+1,1+1,2+2}");
/// let c = Configuration::contiguous(&[6, 5, 10], 4)?;
/// assert_eq!(c.to_string(), "[6,5,10]@{0+2,2+1,3+1}");
/// assert_eq!(c.composition(), vec![6, 5, 10]);
/// # Ok::<(), taopipe_tuner::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Configuration {
    stages: Vec<StageConfig>,
}

impl Configuration {
    /// A configuration of `units` units on `workers` workers, validated.
    ///
    /// # Errors
    ///
    /// See [`Configuration::validate`].
    pub fn new(
        stages: Vec<StageConfig>,
        units: usize,
        workers: usize,
    ) -> Result<Self, ConfigError> {
        let c = Configuration { stages };
        c.validate(units, workers)?;
        Ok(c)
    }

    /// A configuration from a composition (units per stage) and one `(leader, width)` per
    /// stage, validated.
    ///
    /// # Errors
    ///
    /// [`ConfigError::PlaceCount`] if the lengths differ, else as [`Configuration::validate`].
    pub fn with_places(
        composition: &[usize],
        places: &[(usize, usize)],
        units: usize,
        workers: usize,
    ) -> Result<Self, ConfigError> {
        if composition.len() != places.len() {
            return Err(ConfigError::PlaceCount {
                places: places.len(),
                stages: composition.len(),
            });
        }
        Configuration::new(stage_configs(composition, places), units, workers)
    }

    /// The composition placed by [`PlacePolicy::Contiguous`] on `workers` workers (the net
    /// has `composition.iter().sum()` units).
    ///
    /// # Errors
    ///
    /// [`ConfigError::TooManyStages`] when there are more stages than workers, else as
    /// [`Configuration::validate`].
    pub fn contiguous(composition: &[usize], workers: usize) -> Result<Self, ConfigError> {
        Configuration::contiguous_on(composition, &AllowedPlaces::all(workers))
    }

    /// The composition placed by [`PlacePolicy::Contiguous`] on `places`: each stage on
    /// the widest allowed place inside its run ([`AllowedPlaces::contiguous`]).
    ///
    /// ```
    /// use taopipe_tuner::{AllowedPlaces, Configuration};
    ///
    /// let width_one = AllowedPlaces::new(vec![vec![1], vec![1]])?;
    /// assert_eq!(Configuration::contiguous_on(&[7], &width_one)?.to_string(), "[7]@{0+1}");
    /// # Ok::<(), taopipe_tuner::ConfigError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`AllowedPlaces::contiguous`], else as [`Configuration::validate`].
    pub fn contiguous_on(
        composition: &[usize],
        places: &AllowedPlaces,
    ) -> Result<Self, ConfigError> {
        let placed = places.contiguous(composition.len())?;
        let units = composition.iter().fold(0usize, |a, &n| a.saturating_add(n));
        Configuration::with_places(composition, &placed, units, places.workers())
    }

    /// Checks the configuration for a net of `units` units on `workers` workers: at least
    /// one stage, every stage with ≥ 1 unit and width ≥ 1, the unit counts summing to
    /// `units`, every place inside `0..workers`, no worker in two places.
    ///
    /// # Errors
    ///
    /// The first violation found, in the order above, as a [`ConfigError`] naming it.
    pub fn validate(&self, units: usize, workers: usize) -> Result<(), ConfigError> {
        if self.stages.is_empty() {
            return Err(ConfigError::NoStages);
        }
        if let Some(stage) = self.stages.iter().position(|s| s.layers == 0) {
            return Err(ConfigError::EmptyStage { stage });
        }
        let covered = self
            .stages
            .iter()
            .fold(0usize, |a, s| a.saturating_add(s.layers));
        if covered != units {
            return Err(ConfigError::UnitCount {
                composition: self.composition(),
                covered,
                units,
            });
        }
        let mut owner: Vec<Option<usize>> = vec![None; workers];
        for (stage, s) in self.stages.iter().enumerate() {
            if s.width == 0 {
                return Err(ConfigError::ZeroWidth { stage });
            }
            if s.leader
                .checked_add(s.width)
                .is_none_or(|end| end > workers)
            {
                return Err(ConfigError::OutsidePlatform {
                    stage,
                    leader: s.leader,
                    width: s.width,
                    workers,
                });
            }
            for worker in s.workers() {
                if let Some(first) = owner[worker] {
                    return Err(ConfigError::Overlap {
                        first,
                        second: stage,
                        worker,
                    });
                }
                owner[worker] = Some(stage);
            }
        }
        Ok(())
    }

    /// The stages, in pipeline order.
    pub fn stages(&self) -> &[StageConfig] {
        &self.stages
    }

    /// Number of stages.
    pub fn stage_count(&self) -> usize {
        self.stages.len()
    }

    /// Units per stage.
    pub fn composition(&self) -> Vec<usize> {
        self.stages.iter().map(|s| s.layers).collect()
    }

    /// `(leader, width)` of each stage.
    pub fn places(&self) -> Vec<(usize, usize)> {
        self.stages.iter().map(|s| (s.leader, s.width)).collect()
    }

    /// Total units (saturating).
    pub fn units(&self) -> usize {
        self.stages
            .iter()
            .fold(0usize, |a, s| a.saturating_add(s.layers))
    }

    /// The unit range of each stage (`0..6, 6..11, 11..21` for `[6,5,10]`).
    pub fn unit_ranges(&self) -> Vec<Range<usize>> {
        let mut start = 0usize;
        self.stages
            .iter()
            .map(|s| {
                let end = start.saturating_add(s.layers);
                let r = start..end;
                start = end;
                r
            })
            .collect()
    }
}

impl fmt::Display for Configuration {
    /// `[6,5,10]@{0+1,1+1,2+2}`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, s) in self.stages.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}", s.layers)?;
        }
        f.write_str("]@{")?;
        for (i, s) in self.stages.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}+{}", s.leader, s.width)?;
        }
        f.write_str("}")
    }
}

/// How the stages of a composition are mapped onto the workers (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlacePolicy {
    /// One mapping per stage count: contiguous runs, widths as equal as possible, the
    /// first stages one wider ([`contiguous_places`]).
    #[default]
    Contiguous,
    /// Every composition of the workers into `p` widths, stages in order over the workers.
    EveryWidthSplit,
}

impl PlacePolicy {
    /// How many place mappings `stages` stages have on `places`: without a restriction 1
    /// (Contiguous) or `C(workers − 1, stages − 1)` (EveryWidthSplit); 0 when `stages` is
    /// 0 or exceeds the workers. Under a restriction, Contiguous has 1 when every stage's
    /// run holds an allowed place, and EveryWidthSplit counts the splits of the workers
    /// into allowed places. Saturates at `u128::MAX`.
    ///
    /// ```
    /// use taopipe_tuner::{AllowedPlaces, PlacePolicy};
    ///
    /// let four = AllowedPlaces::all(4);
    /// assert_eq!(PlacePolicy::Contiguous.mapping_count(&four, 3), 1);
    /// assert_eq!(PlacePolicy::EveryWidthSplit.mapping_count(&four, 3), 3);
    /// assert_eq!(PlacePolicy::EveryWidthSplit.mapping_count(&AllowedPlaces::all(3), 4), 0);
    /// ```
    pub fn mapping_count(self, places: &AllowedPlaces, stages: usize) -> u128 {
        let workers = places.workers();
        if stages == 0 || stages > workers {
            return 0;
        }
        match self {
            PlacePolicy::Contiguous => u128::from(places.contiguous(stages).is_ok()),
            PlacePolicy::EveryWidthSplit if places.allows_every_run() => {
                composition_count(workers, stages).unwrap_or(u128::MAX)
            }
            PlacePolicy::EveryWidthSplit => places.tilings(stages)[stages][0],
        }
    }

    /// The place mappings of `stages` stages on `places`, each one `(leader, width)` per
    /// stage: Contiguous gives [`AllowedPlaces::contiguous`] (none when a run holds no
    /// allowed place); EveryWidthSplit lists the splits of the workers into allowed
    /// places in lexicographic order of their widths.
    ///
    /// ```
    /// use taopipe_tuner::{AllowedPlaces, PlacePolicy};
    ///
    /// let four = AllowedPlaces::all(4);
    /// assert_eq!(PlacePolicy::Contiguous.mappings(&four, 3), vec![vec![(0, 2), (2, 1), (3, 1)]]);
    /// assert_eq!(
    ///     PlacePolicy::EveryWidthSplit.mappings(&four, 3),
    ///     vec![
    ///         vec![(0, 1), (1, 1), (2, 2)],
    ///         vec![(0, 1), (1, 2), (3, 1)],
    ///         vec![(0, 2), (2, 1), (3, 1)],
    ///     ]
    /// );
    /// let width_one = AllowedPlaces::new(vec![vec![1]; 4])?;
    /// assert_eq!(PlacePolicy::Contiguous.mappings(&width_one, 2), vec![vec![(0, 1), (2, 1)]]);
    /// assert!(PlacePolicy::EveryWidthSplit.mappings(&width_one, 2).is_empty());
    /// # Ok::<(), taopipe_tuner::ConfigError>(())
    /// ```
    pub fn mappings(self, places: &AllowedPlaces, stages: usize) -> Vec<Vec<(usize, usize)>> {
        if stages == 0 || stages > places.workers() {
            return Vec::new();
        }
        match self {
            PlacePolicy::Contiguous => places.contiguous(stages).into_iter().collect(),
            PlacePolicy::EveryWidthSplit => places.tilings_of(stages),
        }
    }
}

/// The [`PlacePolicy::Contiguous`] places of `stages` stages on `workers` workers: widths
/// `workers / stages`, the first `workers % stages` stages one wider, in order.
///
/// # Errors
///
/// [`ConfigError::TooManyStages`] unless `1 ≤ stages ≤ workers`.
///
/// ```
/// use taopipe_tuner::contiguous_places;
///
/// assert_eq!(contiguous_places(4, 3)?, vec![(0, 2), (2, 1), (3, 1)]);
/// assert_eq!(contiguous_places(16, 3)?, vec![(0, 6), (6, 5), (11, 5)]);
/// # Ok::<(), taopipe_tuner::ConfigError>(())
/// ```
pub fn contiguous_places(
    workers: usize,
    stages: usize,
) -> Result<Vec<(usize, usize)>, ConfigError> {
    if stages == 0 || stages > workers {
        return Err(ConfigError::TooManyStages { stages, workers });
    }
    let (base, extra) = (workers / stages, workers % stages);
    let mut leader = 0;
    Ok((0..stages)
        .map(|i| {
            let width = base + usize::from(i < extra);
            let place = (leader, width);
            leader += width;
            place
        })
        .collect())
}

fn places_of_widths(widths: &[usize]) -> Vec<(usize, usize)> {
    let mut leader = 0;
    widths
        .iter()
        .map(|&w| {
            let p = (leader, w);
            leader += w;
            p
        })
        .collect()
}

/// The compositions of `total` into `parts` parts (each ≥ 1), in lexicographic order.
///
/// ```
/// use taopipe_tuner::Compositions;
///
/// let all: Vec<Vec<usize>> = Compositions::new(4, 2).collect();
/// assert_eq!(all, vec![vec![1, 3], vec![2, 2], vec![3, 1]]);
/// assert_eq!(Compositions::new(2, 3).count(), 0);
/// ```
#[derive(Debug, Clone)]
pub struct Compositions {
    next: Option<Vec<usize>>,
}

impl Compositions {
    /// Starts at `[1, …, 1, total − parts + 1]`; empty unless `1 ≤ parts ≤ total`.
    pub fn new(total: usize, parts: usize) -> Self {
        let next = (parts >= 1 && parts <= total).then(|| {
            let mut c = vec![1; parts];
            c[parts - 1] = total - (parts - 1);
            c
        });
        Compositions { next }
    }
}

impl Iterator for Compositions {
    type Item = Vec<usize>;

    fn next(&mut self) -> Option<Vec<usize>> {
        let current = self.next.take()?;
        let k = current.len();
        // the rightmost j ≤ k − 2 whose suffix j+1.. has slack (sum > its length)
        let mut suffix = 0usize;
        let mut successor = None;
        for j in (0..k.saturating_sub(1)).rev() {
            suffix += current[j + 1];
            let len = k - 1 - j;
            if suffix > len {
                let mut c = current.clone();
                c[j] += 1;
                for x in c.iter_mut().take(k - 1).skip(j + 1) {
                    *x = 1;
                }
                c[k - 1] = suffix - 1 - (len - 1);
                successor = Some(c);
                break;
            }
        }
        self.next = successor;
        Some(current)
    }
}

/// The search space of a tuner: every configuration of `units` units on the allowed places
/// of the workers with `2..=max_stages` stages, placed by `policy` (paper Eq. 4, with
/// places made explicit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchSpace {
    /// Units of the net (`M`).
    pub units: usize,
    /// The places stages may use (every contiguous run of the workers, or a layout's).
    pub places: AllowedPlaces,
    /// The most stages (`C`; the paper takes the core count).
    pub max_stages: usize,
    /// How stages are placed.
    pub policy: PlacePolicy,
}

impl SearchSpace {
    /// The space of `units` units on `workers` workers (every contiguous run allowed),
    /// `C = max_stages`.
    pub fn new(units: usize, workers: usize, max_stages: usize, policy: PlacePolicy) -> Self {
        SearchSpace::on(units, AllowedPlaces::all(workers), max_stages, policy)
    }

    /// The space of `units` units on `places` (e.g. a layout file's), `C = max_stages`.
    ///
    /// ```
    /// use taopipe_tuner::{AllowedPlaces, PlacePolicy, SearchSpace};
    ///
    /// let width_one = AllowedPlaces::new(vec![vec![1]; 3])?;
    /// let space = SearchSpace::on(5, width_one, 3, PlacePolicy::Contiguous);
    /// assert!(space.iter().all(|c| c.places().iter().all(|&(_, w)| w == 1)));
    /// assert_eq!(space.iter().count() as u128, space.size());
    /// # Ok::<(), taopipe_tuner::ConfigError>(())
    /// ```
    pub fn on(units: usize, places: AllowedPlaces, max_stages: usize, policy: PlacePolicy) -> Self {
        SearchSpace {
            units,
            places,
            max_stages,
            policy,
        }
    }

    /// Workers of the platform.
    pub fn workers(&self) -> usize {
        self.places.workers()
    }

    /// The stage counts searched: `2..=min(max_stages, units, workers)` (empty when that
    /// is below 2). Under a layout a count may have no mapping, and then no configuration.
    pub fn stage_counts(&self) -> RangeInclusive<usize> {
        2..=self.max_stages.min(self.units).min(self.workers())
    }

    /// The number of configurations: [`space_size`] in closed form without a layout;
    /// under one, the place mappings are counted.
    ///
    /// ```
    /// use taopipe_tuner::{PlacePolicy, SearchSpace};
    ///
    /// // VGG16's 21 units on 4 cores, contiguous places: C(20,1)+C(20,2)+C(20,3)
    /// assert_eq!(SearchSpace::new(21, 4, 4, PlacePolicy::Contiguous).size(), 20 + 190 + 1140);
    /// ```
    pub fn size(&self) -> u128 {
        size_on(self.units, &self.places, self.stage_counts(), self.policy)
    }

    /// Every configuration once: stage counts ascending, then compositions in
    /// lexicographic order, then place mappings in the order of [`PlacePolicy::mappings`].
    pub fn iter(&self) -> SpaceIter {
        SpaceIter {
            space: self.clone(),
            counts: self.stage_counts(),
            current: None,
        }
    }

    /// One configuration drawn uniformly from the space (`None` when it is empty or its
    /// size overflows `u128`): a stage count with probability proportional to its share of
    /// the space, then uniform layer and worker compositions (under a layout, a uniform
    /// split of the workers into allowed places).
    pub fn sample(&self, rng: &mut SplitMix64) -> Option<Configuration> {
        let size = self.size();
        if size == 0 || size == u128::MAX {
            return None;
        }
        let mut r = uniform_u128(rng, size);
        let mut stages = None;
        for p in self.stage_counts() {
            let n = composition_count(self.units, p)?
                .checked_mul(self.policy.mapping_count(&self.places, p))?;
            if r < n {
                stages = Some(p);
                break;
            }
            r -= n;
        }
        let p = stages?;
        let composition = random_composition(rng, self.units, p);
        let workers = self.workers();
        let places = match self.policy {
            PlacePolicy::Contiguous => self.places.contiguous(p).ok()?,
            PlacePolicy::EveryWidthSplit if self.places.allows_every_run() => {
                places_of_widths(&random_composition(rng, workers, p))
            }
            PlacePolicy::EveryWidthSplit => random_tiling(rng, &self.places, p)?,
        };
        Configuration::with_places(&composition, &places, self.units, workers).ok()
    }
}

/// A uniform split of the workers into `stages` allowed places, in order (`None` when
/// there is none).
fn random_tiling(
    rng: &mut SplitMix64,
    places: &AllowedPlaces,
    stages: usize,
) -> Option<Vec<(usize, usize)>> {
    let ways = places.tilings(stages);
    let mut pos = 0;
    let mut out = Vec::with_capacity(stages);
    for left in (1..=stages).rev() {
        let total = ways[left][pos];
        if total == 0 {
            return None;
        }
        let mut r = uniform_u128(rng, total);
        let mut chosen = None;
        for width in places.widths(pos) {
            let Some(&n) = ways[left - 1].get(pos + width) else {
                break;
            };
            if r < n {
                chosen = Some(width);
                break;
            }
            r -= n;
        }
        let width = chosen?;
        out.push((pos, width));
        pos += width;
    }
    Some(out)
}

/// Uniform in `0..n` (`n ≥ 1`), by rejection.
fn uniform_u128(rng: &mut SplitMix64, n: u128) -> u128 {
    let zone = u128::MAX - (u128::MAX - n + 1) % n;
    loop {
        let x = (u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64());
        if x <= zone {
            return x % n;
        }
    }
}

/// A uniform composition of `total` into `parts` parts: `parts − 1` distinct cut points
/// out of `1..total`, drawn with Floyd's algorithm.
fn random_composition(rng: &mut SplitMix64, total: usize, parts: usize) -> Vec<usize> {
    let n = total - 1; // candidate cuts 1..=n
    let k = parts - 1;
    let mut cuts: HashSet<usize> = HashSet::with_capacity(k);
    for j in (n - k + 1)..=n {
        let t = rng.range(1, j as u64) as usize;
        if !cuts.insert(t) {
            cuts.insert(j);
        }
    }
    let mut cuts: Vec<usize> = cuts.into_iter().collect();
    cuts.sort_unstable();
    let mut prev = 0;
    let mut out = Vec::with_capacity(parts);
    for c in cuts {
        out.push(c - prev);
        prev = c;
    }
    out.push(total - prev);
    out
}

/// One stage per entry of `composition` (units per stage), on the matching
/// `(leader, width)` of `places`.
fn stage_configs(composition: &[usize], places: &[(usize, usize)]) -> Vec<StageConfig> {
    composition
        .iter()
        .zip(places)
        .map(|(&layers, &(leader, width))| StageConfig {
            layers,
            leader,
            width,
        })
        .collect()
}

/// The iterator of [`SearchSpace::iter`].
#[derive(Debug, Clone)]
pub struct SpaceIter {
    space: SearchSpace,
    counts: RangeInclusive<usize>,
    current: Option<StageCountCursor>,
}

/// Where [`SpaceIter`] is inside one stage count: the remaining compositions, the place
/// mappings, the current composition and the index of its next mapping.
type StageCountCursor = (
    Compositions,
    Vec<Vec<(usize, usize)>>,
    Option<Vec<usize>>,
    usize,
);

impl Iterator for SpaceIter {
    type Item = Configuration;

    fn next(&mut self) -> Option<Configuration> {
        loop {
            if let Some((comps, mappings, comp, idx)) = &mut self.current {
                if let Some(c) = comp
                    && let Some(places) = mappings.get(*idx)
                {
                    *idx += 1;
                    return Some(Configuration {
                        stages: stage_configs(c, places),
                    });
                }
                *comp = comps.next();
                *idx = 0;
                if comp.is_some() {
                    continue;
                }
            }
            let p = self.counts.next()?;
            let mappings = self.space.policy.mappings(&self.space.places, p);
            let mut comps = Compositions::new(self.space.units, p);
            let first = comps.next();
            self.current = Some((comps, mappings, first, 0));
        }
    }
}

/// The size of the search space in closed form (Eq. 4 with places):
/// `Σ_{p ∈ stage_counts} C(units − 1, p − 1) × mappings(p)`, where `mappings(p)` is
/// [`PlacePolicy::mapping_count`] (1, or `C(workers − 1, p − 1)`). Saturates at
/// `u128::MAX`.
///
/// ```
/// use taopipe_tuner::{space_size, PlacePolicy};
///
/// assert_eq!(space_size(7, 4, 2..=4, PlacePolicy::Contiguous), 6 + 15 + 20);
/// assert_eq!(space_size(7, 4, 2..=4, PlacePolicy::EveryWidthSplit), 6 * 3 + 15 * 3 + 20);
/// ```
pub fn space_size(
    units: usize,
    workers: usize,
    stage_counts: RangeInclusive<usize>,
    policy: PlacePolicy,
) -> u128 {
    size_on(units, &AllowedPlaces::all(workers), stage_counts, policy)
}

/// [`space_size`] on `places`.
fn size_on(
    units: usize,
    places: &AllowedPlaces,
    stage_counts: RangeInclusive<usize>,
    policy: PlacePolicy,
) -> u128 {
    stage_counts
        .map(|p| {
            composition_count(units, p)
                .unwrap_or(u128::MAX)
                .saturating_mul(policy.mapping_count(places, p))
        })
        .fold(0u128, u128::saturating_add)
}

#[cfg(test)]
mod test;
