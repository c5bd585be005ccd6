//! ARM-CO-UP's per-unit mapping strings (`BBBLLL`, `0012`).

use taopipe_live::planners::armcoup::{MAX_DEVICES, Mapping};

use crate::check::message;

/// Workers of the platform a pipeline-mode mapping is placed on: one per device.
const WORKERS: usize = MAX_DEVICES;

/// Parses the bytes (lossily as UTF-8) as a mapping string. An accepted mapping prints back
/// as written, its runs cover its units in order with a new device at each run, it checks
/// against its own length and its largest device, and its devices make the same mapping
/// again; the checks that must fail (one unit more, one device fewer) and the pipeline
/// configuration (one worker per device) give `Ok` or an error with a message.
pub fn armcoup_mapping(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mapping = match text.parse::<Mapping>() {
        Ok(mapping) => mapping,
        Err(error) => {
            message("Mapping::from_str", &error);
            return;
        }
    };
    assert_eq!(mapping.to_string(), text, "does not print back as written");
    let units = mapping.units();
    assert_eq!(units, text.chars().count());
    let runs = mapping.runs();
    assert_eq!(runs.first().map(|(r, _)| r.start), Some(0));
    assert_eq!(runs.last().map(|(r, _)| r.end), Some(units));
    for pair in runs.windows(2) {
        assert_eq!(pair[0].0.end, pair[1].0.start, "runs {pair:?} leave a gap");
        assert_ne!(pair[0].1, pair[1].1, "runs {pair:?} on one device");
    }
    let devices = mapping.devices().iter().max().map_or(0, |d| d + 1);
    assert!(devices <= MAX_DEVICES);
    Mapping::parse(&text, units, devices)
        .unwrap_or_else(|e| panic!("`{text}` does not fit itself: {e}"));
    assert_eq!(
        Mapping::from_devices(mapping.devices().to_vec()).map(|m| m.devices().to_vec()),
        Ok(mapping.devices().to_vec())
    );
    let too_long = Mapping::parse(&text, units + 1, devices).expect_err("a unit too many");
    message("Mapping::parse", &too_long);
    if devices > 1 {
        let missing = Mapping::parse(&text, units, devices - 1).expect_err("a device too few");
        message("Mapping::parse", &missing);
    }
    let places: Vec<(usize, usize)> = (0..MAX_DEVICES).map(|d| (d, 1)).collect();
    match mapping.pipeline(&places, WORKERS) {
        Ok(config) => assert!(!config.to_string().is_empty()),
        Err(error) => {
            message("Mapping::pipeline", &error);
        }
    }
}
