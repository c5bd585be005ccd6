//! The "devices" of the other papers' planners (Pipe-it's core types, ARM-CO-UP's clusters,
//! MOSAIC's devices, CoDL's two processors), mapped onto this runtime's workers.
//!
//! A device is a run of consecutive workers that share a topology cluster **and** the same
//! current speed factor: on a big.LITTLE machine the clusters, and where a cluster is
//! emulated at two speeds (`--emulate w1=powersave` on a 2-core machine) each speed its own
//! device. Decision: devices are contiguous places (the runtime's clusters are contiguous
//! worker ranges), listed fastest first, ties in worker order, so `B` (big) is device 0.

use taopipe_runtime::{Place, Runtime};

/// One device: a place and the speed factor its workers run at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Device {
    /// The device's workers.
    pub place: Place,
    /// The current speed factor of its workers (1.0 = full speed).
    pub speed: f64,
    /// The topology cluster it belongs to.
    pub cluster: usize,
}

/// The devices of `rt` as it runs now (see the module docs), fastest first.
///
/// ```
/// use taopipe_live::devices::devices;
/// use taopipe_runtime::{EmulationSpec, Runtime, Topology};
///
/// let rt = Runtime::builder().topology(Topology::symmetric(2)?).pin(false).build()?;
/// assert_eq!(devices(&rt).len(), 1);
/// rt.emulate(&"w1=powersave".parse::<EmulationSpec>()?)?;
/// let d = devices(&rt);
/// assert_eq!((d[0].place.leader(), d[0].speed), (0, 1.0));
/// assert_eq!((d[1].place.leader(), d[1].speed), (1, 0.5));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn devices(rt: &Runtime) -> Vec<Device> {
    of_workers(&rt.speeds(), |w| rt.topology().cluster_of(w))
}

/// Devices of workers with these speeds and clusters.
fn of_workers(speeds: &[f64], cluster_of: impl Fn(usize) -> usize) -> Vec<Device> {
    let mut found: Vec<Device> = Vec::new();
    for (w, &speed) in speeds.iter().enumerate() {
        let cluster = cluster_of(w);
        match found.last_mut() {
            Some(d) if d.cluster == cluster && d.speed == speed => {
                d.place = Place::new(d.place.leader(), d.place.width() + 1);
            }
            _ => found.push(Device {
                place: Place::new(w, 1),
                speed,
                cluster,
            }),
        }
    }
    // stable: equal speeds keep worker order
    found.sort_by(|a, b| b.speed.total_cmp(&a.speed));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_clusters_by_speed_and_sorts_fastest_first() {
        let d = of_workers(&[0.5, 0.5, 1.0, 1.0, 1.0, 0.25], |w| usize::from(w >= 4));
        let got: Vec<(usize, usize, f64)> = d
            .iter()
            .map(|d| (d.place.leader(), d.place.width(), d.speed))
            .collect();
        assert_eq!(
            got,
            vec![(2, 2, 1.0), (4, 1, 1.0), (0, 2, 0.5), (5, 1, 0.25)]
        );
    }
}
