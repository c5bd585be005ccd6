//! **MOSAIC** (Han et al., *heterogeneity-, communication-, and constraint-aware model
//! slicing*): the latency-optimal cut of a unit chain into consecutive **slices**, each run
//! on one device, one frame at a time, by dynamic programming (Eq. 8–9).
//!
//! A [`Problem`] holds what the paper's profiler and estimators give: every unit's
//! execution time on every device (`e_{k,δ}`), the bytes that cross a cut before and after
//! it (`T_in`, `T_out`), its memory need and every device's memory budget, and a linear
//! [`TransferModel`] (Eq. 1–2) per ordered pair of devices. [`Problem::solve`] returns the
//! [`Plan`] of least predicted latency with its breakdown; [`Problem::evaluate`] prices any
//! other slicing under the same model.
//!
//! # Decisions where the paper is vague or does not fit a CPU
//!
//! - **Transfers per ordered pair.** The paper prices a slice's input and output on its own
//!   device only (a round trip through the CPU's memory). Here devices are groups of cores
//!   of one shared memory, so the cost of a cut depends on both sides: `T(a→b, bytes)`,
//!   zero when `a == b`. (The paper's model is the special case `T(a→b) = c_out,a + c_in,b`,
//!   which is again linear.) The DP's state is therefore the layer count **and** the device
//!   of the last slice, `C_tot[l][δ]`; precomputing, at every cut `k`, the cheapest way to
//!   have its tensors arrive on `δ` (`min over δ' ≠ δ of C_tot[k][δ'] + T(δ'→δ)`) keeps the
//!   paper's `O(Λ²·|D|)` (plus `O(Λ·|D|²)` for the arrivals). Slice sums come from prefix
//!   sums.
//! - **Bytes of a cut.** `out_bytes` of unit `u` must equal `in_bytes` of unit `u + 1`: both
//!   are the tensors live across that cut (residual tensors included). A cut's transfer is
//!   charged from the device of the slice before it, also for tensors an earlier slice
//!   produced.
//! - **The net's input and output** live on a **host** device ([`Problem::host`], device 0,
//!   the fastest, by default): a first slice elsewhere pays `T(host→δ, in_bytes of unit
//!   0)`, a last slice elsewhere pays `T(δ→host, out_bytes of the last unit)`. `None` makes
//!   both free.
//! - **Consecutive slices use different devices.** Two neighbouring slices on one device
//!   cost exactly what their merge costs (a device does not pay to read its own data), so
//!   only maximal slices are considered and every plan alternates devices.
//! - **Memory is checked per unit**, as the profiler's "a layer that cannot run on a device
//!   costs ∞": a unit fits a device when its memory need is at most the device's budget,
//!   and a slice when all its units fit. (The paper's NPU limits a whole slice because it
//!   loads one slice at a time; with free same-device cuts such a limit would be evaded by
//!   cutting anyway, and CPU devices of one memory keep every slice resident.) An infinite
//!   execution time also means "cannot run" (the paper's functionality constraints). A
//!   unit that fits no device makes the problem infeasible, and the error names it.
//! - **Ties** (equal predicted latency): the last slice goes to the lowest device index
//!   (devices come fastest first), then starts as early as possible; the slices before it
//!   are chosen the same way, backwards. With equal devices and free transfers the whole
//!   net runs on device 0.
//!
//! ```
//! use taopipe_live::planners::mosaic::{Problem, TransferModel, UnitCosts};
//!
//! // two units, two devices: the first is fast on device 0, the second on device 1
//! let units = vec![
//!     UnitCosts::new("conv", vec![1.0, 10.0], 400, 100),
//!     UnitCosts::new("fc", vec![10.0, 1.0], 100, 4),
//! ];
//! let mut problem = Problem::new(units, 2);
//! problem.transfer[0][1] = TransferModel::new(0.5, 0.0)?; // 0.5 ms per cut, 0 → 1
//! problem.transfer[1][0] = TransferModel::new(0.25, 0.0)?;
//! let plan = problem.solve()?;
//! assert_eq!(plan.to_string(), "[0..1)@0 [1..2)@1: 2.750 ms (exec 2.000, transfer 0.750)");
//! # Ok::<(), taopipe_live::planners::mosaic::MosaicError>(())
//! ```

use std::fmt;
use std::ops::Range;

use serde::Serialize;

mod profile;
mod transfer;

pub use profile::{
    Profile, ProfileError, ProfileOptions, TransferSample, cut_bytes, fit_transfers, profile,
    transfer_samples, unit_memory, unit_times,
};
pub use transfer::TransferModel;

/// No memory limit.
pub const UNLIMITED: u64 = u64::MAX;

/// Why a problem cannot be solved or a plan priced. Every variant names the bad value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MosaicError {
    /// The problem has no units.
    #[error("a MOSAIC problem needs at least one unit")]
    NoUnits,
    /// The problem has no devices.
    #[error("a MOSAIC problem needs at least one device")]
    NoDevices,
    /// A unit's execution times are not one per device.
    #[error("unit `{unit}` has {got} execution times for {devices} devices")]
    TimesPerDevice {
        /// The unit.
        unit: String,
        /// Times given.
        got: usize,
        /// Devices.
        devices: usize,
    },
    /// An execution time that is negative or NaN (∞ is allowed: cannot run).
    #[error("unit `{unit}` on device {device}: execution time {ms} ms is not a cost")]
    BadTime {
        /// The unit.
        unit: String,
        /// The device.
        device: usize,
        /// The time.
        ms: f64,
    },
    /// A cut whose two sides disagree on the bytes that cross it.
    #[error(
        "unit `{unit}` sends {out_bytes} bytes across its output cut, but `{next}` receives {in_bytes}"
    )]
    CutBytes {
        /// The unit before the cut.
        unit: String,
        /// Its `out_bytes`.
        out_bytes: u64,
        /// The unit after the cut.
        next: String,
        /// Its `in_bytes`.
        in_bytes: u64,
    },
    /// The transfer models are not a square matrix over the devices.
    #[error("transfer models: row {row} has {got} entries for {devices} devices")]
    TransferShape {
        /// The first bad row (or the row count, when rows are missing).
        row: usize,
        /// Its length (or the number of rows).
        got: usize,
        /// Devices.
        devices: usize,
    },
    /// A transfer model with a coefficient that is not finite.
    #[error("transfer model {intercept_ms} ms + {ms_per_byte} ms/byte: not finite")]
    BadCoefficients {
        /// The intercept.
        intercept_ms: f64,
        /// The slope.
        ms_per_byte: f64,
    },
    /// A measured transfer time that is not finite.
    #[error("transfer sample of {bytes} bytes: {ms} ms is not a time")]
    BadSample {
        /// Its size.
        bytes: u64,
        /// Its time.
        ms: f64,
    },
    /// Too few distinct sizes to fit a line.
    #[error("a transfer model needs samples of at least 2 sizes, got {sizes} in {samples} samples")]
    TooFewSizes {
        /// Distinct sizes.
        sizes: usize,
        /// Samples.
        samples: usize,
    },
    /// A memory budget per device was not given for every device.
    #[error("{got} memory budgets for {devices} devices")]
    Budgets {
        /// Budgets given.
        got: usize,
        /// Devices.
        devices: usize,
    },
    /// A host device that does not exist.
    #[error("host device {host} out of {devices}")]
    NoSuchHost {
        /// The host.
        host: usize,
        /// Devices.
        devices: usize,
    },
    /// A unit that fits no device: no plan exists.
    #[error(
        "unit `{unit}` (#{index}) can run on no device: it needs {memory_bytes} bytes \
         (budgets {budgets:?}), execution ms {exec_ms:?}"
    )]
    Infeasible {
        /// The unit's name.
        unit: String,
        /// Its index.
        index: usize,
        /// Its memory need.
        memory_bytes: u64,
        /// Every device's budget.
        budgets: Vec<u64>,
        /// Its execution time on every device.
        exec_ms: Vec<f64>,
    },
    /// A slicing given to [`Problem::evaluate`] that is not a valid plan.
    #[error("slicing {slices:?}: {reason}")]
    BadSlicing {
        /// The slicing, as `(units, device)`.
        slices: Vec<(Range<usize>, usize)>,
        /// What is wrong.
        reason: String,
    },
}

/// One unit as the profiler sees it (the paper's layer `l`).
#[derive(Debug, Clone, PartialEq)]
pub struct UnitCosts {
    /// Its name, for messages.
    pub name: String,
    /// Execution time on each device, ms (`e_{l,δ}`); `f64::INFINITY`: cannot run there.
    pub exec_ms: Vec<f64>,
    /// Bytes that cross a cut right before it (`T_in,l`).
    pub in_bytes: u64,
    /// Bytes that cross a cut right after it (`T_out,l`; the net output for the last unit).
    pub out_bytes: u64,
    /// Memory it needs on the device that runs it (weights and buffers), bytes.
    pub memory_bytes: u64,
}

impl UnitCosts {
    /// A unit that needs no memory (set [`UnitCosts::memory_bytes`] for one that does).
    pub fn new(
        name: impl Into<String>,
        exec_ms: Vec<f64>,
        in_bytes: u64,
        out_bytes: u64,
    ) -> UnitCosts {
        UnitCosts {
            name: name.into(),
            exec_ms,
            in_bytes,
            out_bytes,
            memory_bytes: 0,
        }
    }
}

/// A MOSAIC slicing problem (see the module docs for the cost model). Fields are public;
/// [`Problem::solve`] and [`Problem::evaluate`] check them and name what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// The unit chain, in order.
    pub units: Vec<UnitCosts>,
    /// Memory budget of each device, bytes ([`UNLIMITED`]: none). Its length is the number
    /// of devices.
    pub device_memory: Vec<u64>,
    /// `transfer[from][to]`: moving a cut's tensors between devices. The diagonal is never
    /// read (a device reads its own data for free).
    pub transfer: Vec<Vec<TransferModel>>,
    /// Where the net's input comes from and its output goes (see the module docs).
    pub host: Option<usize>,
}

impl Problem {
    /// A problem over `devices` devices with no memory limits, free transfers and device 0
    /// as the host.
    pub fn new(units: Vec<UnitCosts>, devices: usize) -> Problem {
        Problem {
            units,
            device_memory: vec![UNLIMITED; devices],
            transfer: vec![vec![TransferModel::ZERO; devices]; devices],
            host: Some(0),
        }
    }

    /// Number of devices.
    pub fn devices(&self) -> usize {
        self.device_memory.len()
    }

    /// Whether unit `unit` can run on `device` (finite time, memory within budget).
    ///
    /// # Panics
    /// If `unit` or `device` is out of range.
    pub fn fits(&self, unit: usize, device: usize) -> bool {
        let u = &self.units[unit];
        u.exec_ms[device].is_finite() && u.memory_bytes <= self.device_memory[device]
    }

    /// The predicted time of moving `bytes` from `from` to `to` (0 when they are equal).
    ///
    /// # Panics
    /// If a device is out of range.
    pub fn transfer_ms(&self, from: usize, to: usize, bytes: u64) -> f64 {
        if from == to {
            0.0
        } else {
            self.transfer[from][to].predict_ms(bytes)
        }
    }

    /// Checks the problem's shape and values, and that every unit fits some device.
    ///
    /// # Errors
    /// The first thing wrong, naming it.
    pub fn validate(&self) -> Result<(), MosaicError> {
        let d = self.devices();
        if self.units.is_empty() {
            return Err(MosaicError::NoUnits);
        }
        if d == 0 {
            return Err(MosaicError::NoDevices);
        }
        if self.transfer.len() != d {
            return Err(MosaicError::TransferShape {
                row: self.transfer.len(),
                got: self.transfer.len(),
                devices: d,
            });
        }
        for (row, models) in self.transfer.iter().enumerate() {
            if models.len() != d {
                return Err(MosaicError::TransferShape {
                    row,
                    got: models.len(),
                    devices: d,
                });
            }
            for m in models {
                TransferModel::new(m.intercept_ms, m.ms_per_byte)?;
            }
        }
        if let Some(host) = self.host
            && host >= d
        {
            return Err(MosaicError::NoSuchHost { host, devices: d });
        }
        for (index, u) in self.units.iter().enumerate() {
            if u.exec_ms.len() != d {
                return Err(MosaicError::TimesPerDevice {
                    unit: u.name.clone(),
                    got: u.exec_ms.len(),
                    devices: d,
                });
            }
            if let Some((device, &ms)) = u
                .exec_ms
                .iter()
                .enumerate()
                .find(|(_, ms)| ms.is_nan() || **ms < 0.0)
            {
                return Err(MosaicError::BadTime {
                    unit: u.name.clone(),
                    device,
                    ms,
                });
            }
            if let Some(next) = self.units.get(index + 1)
                && next.in_bytes != u.out_bytes
            {
                return Err(MosaicError::CutBytes {
                    unit: u.name.clone(),
                    out_bytes: u.out_bytes,
                    next: next.name.clone(),
                    in_bytes: next.in_bytes,
                });
            }
        }
        for (index, u) in self.units.iter().enumerate() {
            if !(0..d).any(|dev| self.fits(index, dev)) {
                return Err(MosaicError::Infeasible {
                    unit: u.name.clone(),
                    index,
                    memory_bytes: u.memory_bytes,
                    budgets: self.device_memory.clone(),
                    exec_ms: u.exec_ms.clone(),
                });
            }
        }
        Ok(())
    }

    /// The plan of least predicted latency (Eq. 9; see the module docs for the state,
    /// merging and ties). `O(Λ²·|D| + Λ·|D|²)` time.
    ///
    /// # Errors
    /// What [`Problem::validate`] finds, [`MosaicError::Infeasible`] naming the first
    /// unit that fits no device among them.
    pub fn solve(&self) -> Result<Plan, MosaicError> {
        self.validate()?;
        let (n, d) = (self.units.len(), self.devices());
        // prefix[dev][k]: Σ exec of feasible units < k; blocked[dev][k]: infeasible units < k
        let mut prefix = vec![vec![0.0; n + 1]; d];
        let mut blocked = vec![vec![0usize; n + 1]; d];
        for dev in 0..d {
            for (u, unit) in self.units.iter().enumerate() {
                let fits = self.fits(u, dev);
                prefix[dev][u + 1] = prefix[dev][u] + if fits { unit.exec_ms[dev] } else { 0.0 };
                blocked[dev][u + 1] = blocked[dev][u] + usize::from(!fits);
            }
        }
        // best[l][dev]: units 0..l done, the last slice on dev; first[l][dev]: its start
        let mut best = vec![vec![f64::INFINITY; d]; n + 1];
        let mut first = vec![vec![0usize; d]; n + 1];
        // arrive[k][dev]: units 0..k done elsewhere (or nothing done, k = 0) and cut k's
        // tensors on dev; came_from[k][dev]: the device of the slice before (None: host)
        let mut arrive = vec![vec![f64::INFINITY; d]; n];
        let mut came_from: Vec<Vec<Option<usize>>> = vec![vec![None; d]; n];
        for (dev, cost) in arrive[0].iter_mut().enumerate() {
            *cost = self
                .host
                .map_or(0.0, |h| self.transfer_ms(h, dev, self.units[0].in_bytes));
        }
        for l in 1..=n {
            let k = l - 1;
            if k > 0 {
                let bytes = self.units[k].in_bytes;
                for to in 0..d {
                    for from in (0..d).filter(|&f| f != to) {
                        let cost = best[k][from] + self.transfer_ms(from, to, bytes);
                        if cost < arrive[k][to] {
                            arrive[k][to] = cost;
                            came_from[k][to] = Some(from);
                        }
                    }
                }
            }
            for dev in 0..d {
                for k in 0..l {
                    if blocked[dev][l] != blocked[dev][k] {
                        continue;
                    }
                    let cost = arrive[k][dev] + (prefix[dev][l] - prefix[dev][k]);
                    if cost < best[l][dev] {
                        best[l][dev] = cost;
                        first[l][dev] = k;
                    }
                }
            }
        }
        let out_bytes = self.units[n - 1].out_bytes;
        let mut last = None;
        let mut least = f64::INFINITY;
        for (dev, &done) in best[n].iter().enumerate() {
            let cost = done
                + self
                    .host
                    .map_or(0.0, |h| self.transfer_ms(dev, h, out_bytes));
            if cost < least {
                least = cost;
                last = Some(dev);
            }
        }
        let Some(mut dev) = last else {
            unreachable!("validate() found a device for every unit");
        };
        let mut slices = Vec::new();
        let mut l = n;
        loop {
            let k = first[l][dev];
            slices.push((k..l, dev));
            if k == 0 {
                break;
            }
            dev = came_from[k][dev].expect("a cut after unit 0 has a device before it");
            l = k;
        }
        slices.reverse();
        self.evaluate(&slices)
    }

    /// Prices a slicing `(units, device)` under this problem's model: the breakdown of
    /// [`Plan`]. Neighbouring slices may share a device here (they cost what their merge
    /// costs).
    ///
    /// # Errors
    /// An invalid problem (as [`Problem::validate`]); slices that do not cover the units
    /// in order without gaps, name a device that does not exist, or hold a unit that does
    /// not fit their device.
    pub fn evaluate(&self, slices: &[(Range<usize>, usize)]) -> Result<Plan, MosaicError> {
        self.validate()?;
        let bad = |reason: String| MosaicError::BadSlicing {
            slices: slices.to_vec(),
            reason,
        };
        let mut next = 0;
        let mut previous: Option<usize> = self.host;
        let mut plan = Vec::with_capacity(slices.len());
        for (units, dev) in slices {
            if units.start != next || units.is_empty() {
                return Err(bad(format!(
                    "slice {units:?} does not start at unit {next}"
                )));
            }
            if units.end > self.units.len() {
                return Err(bad(format!("slice {units:?} ends past the last unit")));
            }
            if *dev >= self.devices() {
                return Err(bad(format!("device {dev} out of {}", self.devices())));
            }
            if let Some(u) = units.clone().find(|&u| !self.fits(u, *dev)) {
                return Err(bad(format!(
                    "unit `{}` does not fit device {dev}",
                    self.units[u].name
                )));
            }
            let bytes = self.units[units.start].in_bytes;
            plan.push(Slice {
                units: units.clone(),
                device: *dev,
                exec_ms: units.clone().map(|u| self.units[u].exec_ms[*dev]).sum(),
                transfer_in_ms: previous.map_or(0.0, |p| self.transfer_ms(p, *dev, bytes)),
            });
            previous = Some(*dev);
            next = units.end;
        }
        if next != self.units.len() {
            return Err(bad(format!(
                "units {next}..{} are in no slice",
                self.units.len()
            )));
        }
        let last_dev = slices.last().map(|(_, dev)| *dev);
        let transfer_out_ms = match (last_dev, self.host) {
            (Some(dev), Some(h)) => self.transfer_ms(dev, h, self.units[next - 1].out_bytes),
            _ => 0.0,
        };
        let exec_ms: f64 = plan.iter().map(|s| s.exec_ms).sum();
        let transfer_ms = plan.iter().map(|s| s.transfer_in_ms).sum::<f64>() + transfer_out_ms;
        Ok(Plan {
            slices: plan,
            transfer_out_ms,
            exec_ms,
            transfer_ms,
            latency_ms: exec_ms + transfer_ms,
        })
    }
}

/// One slice of a [`Plan`]: consecutive units on one device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Slice {
    /// Its units.
    pub units: Range<usize>,
    /// The device that runs them.
    pub device: usize,
    /// Σ of its units' execution times on that device (`Σ e_{k,δ}`), ms.
    pub exec_ms: f64,
    /// Moving its input tensors from the previous slice's device (or the host), ms.
    pub transfer_in_ms: f64,
}

/// A slicing and its predicted latency, broken down (Eq. 8 summed over the slices).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// The slices, in order, covering every unit.
    pub slices: Vec<Slice>,
    /// Moving the net's output to the host, ms.
    pub transfer_out_ms: f64,
    /// Σ of the slices' execution times, ms.
    pub exec_ms: f64,
    /// Σ of all transfers (into every slice, and out of the last), ms.
    pub transfer_ms: f64,
    /// The predicted latency of one frame: `exec_ms + transfer_ms`.
    pub latency_ms: f64,
}

impl Plan {
    /// The device of every unit, in order (a per-unit mapping).
    pub fn device_of_units(&self) -> Vec<usize> {
        self.slices
            .iter()
            .flat_map(|s| s.units.clone().map(move |_| s.device))
            .collect()
    }

    /// The slices as `(units, device)`, the input of [`Problem::evaluate`].
    pub fn ranges(&self) -> Vec<(Range<usize>, usize)> {
        self.slices
            .iter()
            .map(|s| (s.units.clone(), s.device))
            .collect()
    }
}

impl fmt::Display for Plan {
    /// `[0..13)@0 [13..21)@1: 301.200 ms (exec 300.000, transfer 1.200)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.slices.iter().enumerate() {
            let sep = if i == 0 { "" } else { " " };
            write!(f, "{sep}[{}..{})@{}", s.units.start, s.units.end, s.device)?;
        }
        write!(
            f,
            ": {:.3} ms (exec {:.3}, transfer {:.3})",
            self.latency_ms, self.exec_ms, self.transfer_ms
        )
    }
}

#[cfg(test)]
mod test;
