//! The "devices" of the other papers' planners (Pipe-it's core types, ARM-CO-UP's clusters,
//! MOSAIC's devices, CoDL's two processors), mapped onto this runtime's workers.
//!
//! A device is a run of consecutive workers that share a topology cluster **and** the same
//! current speed factor: on a big.LITTLE machine the clusters, and where a cluster is
//! emulated at two speeds (`--emulate w1=powersave` on a 2-core machine) each speed its own
//! device. Decision: devices are contiguous places (the runtime's clusters are contiguous
//! worker ranges), listed fastest first, ties in worker order, so `B` (big) is device 0.
//! Under a layout file that does not allow a run as one place, the run becomes several
//! devices of the same speed, left to right each the widest place the layout allows from
//! its first worker (a worker that leads no place fitting the run is in no device): the
//! planners then use every worker the layout lets them, as they do without a layout.

use serde::ser::{Serialize, SerializeStruct, Serializer};
use taopipe_runtime::{Place, Runtime};
use taopipe_tuner::AllowedPlaces;

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

/// In JSON a device is `{"leader", "width", "speed", "cluster"}`: its place as the two
/// numbers a script compares (the runtime's `Place` has no JSON form of its own).
impl Serialize for Device {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Device", 4)?;
        s.serialize_field("leader", &self.place.leader())?;
        s.serialize_field("width", &self.place.width())?;
        s.serialize_field("speed", &self.speed)?;
        s.serialize_field("cluster", &self.cluster)?;
        s.end()
    }
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
    let places = crate::stream::allowed_places(rt);
    of_workers(&rt.speeds(), |w| rt.topology().cluster_of(w))
        .into_iter()
        .flat_map(|d| {
            tile(&places, d.place)
                .into_iter()
                .map(move |place| Device { place, ..d })
        })
        .collect()
}

/// `run` as allowed places, left to right, each the widest allowed from its first worker
/// that fits the run (module docs).
fn tile(places: &AllowedPlaces, run: Place) -> Vec<Place> {
    let mut tiles = Vec::new();
    let mut leader = run.leader();
    let end = run.leader() + run.width();
    while leader < end {
        let fits = places
            .widths(leader)
            .into_iter()
            .filter(|&w| leader + w <= end)
            .max();
        match fits {
            Some(width) => {
                tiles.push(Place::new(leader, width));
                leader += width;
            }
            None => leader += 1,
        }
    }
    tiles
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

    #[test]
    fn a_device_serializes_its_place_as_leader_and_width() {
        let d = Device {
            place: Place::new(2, 3),
            speed: 0.5,
            cluster: 1,
        };
        assert_eq!(
            serde_json::to_value(d).expect("JSON"),
            serde_json::json!({"leader": 2, "width": 3, "speed": 0.5, "cluster": 1})
        );
    }

    #[test]
    fn a_run_the_layout_forbids_becomes_allowed_places() {
        let width_one = AllowedPlaces::new(vec![vec![1]; 2]).expect("legal");
        assert_eq!(
            tile(&width_one, Place::new(0, 2)),
            vec![Place::new(0, 1), Place::new(1, 1)]
        );
        // Leader 0 leads only 3 workers, more than the run 0+2; leader 1 leads 1 or 2.
        let odd = AllowedPlaces::new(vec![vec![3], vec![1, 2], vec![1]]).expect("legal");
        assert_eq!(tile(&odd, Place::new(0, 2)), vec![Place::new(1, 1)]);
        assert_eq!(tile(&odd, Place::new(0, 3)), vec![Place::new(0, 3)]);
        assert_eq!(
            tile(&AllowedPlaces::all(4), Place::new(1, 3)),
            vec![Place::new(1, 3)]
        );
    }
}
