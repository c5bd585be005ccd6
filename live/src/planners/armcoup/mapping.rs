//! Per-unit mapping strings over devices, ARM-CO-UP's `BBBLLL…` (Aghapour et al., TODAES
//! 2024, Tables 4, 8 and 11): character `i` names the device that runs pipeline unit `i`.
//! Consecutive units on the same device form a **run** (the paper's sub-graph); in
//! pipeline mode each run is a stage, in switch mode the runs of one frame execute one
//! after another, each on its device.
//!
//! # Alphabet (a decision: the paper's letters are processor kinds, ours are devices)
//!
//! Devices are the facade's `devices(rt)` list, fastest first. A mapping is written in
//! one of two alphabets, never both in one string:
//!
//! * **letters**, for the common two-device case: `B` (big) = device 0, the fastest, and
//!   `L` (little) = device 1. The paper's `G` (GPU) and `N` (NPU) have no counterpart on a
//!   CPU and are refused.
//! * **digits** `0`–`9`: the index into the device list, for up to ten devices.
//!
//! Letters are upper case only, as the paper writes them. A mapping keeps the alphabet it
//! was written in, so [`Display`](std::fmt::Display) gives back the string it was parsed
//! from. Positions in errors are 0-based character positions, which are also unit indices.
//!
//! # Pipeline mode
//!
//! [`Mapping::pipeline`] makes one stage per run, on its device's place. A device that runs
//! two separate runs (`BBLLBB`) is an error there: its workers would have to serve two
//! stages at once, which the runtime's pipelines refuse (stage places are disjoint). Switch
//! mode runs such a mapping fine, since only one run executes at a time.

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use taopipe_runtime::excerpt;
use taopipe_tuner::{ConfigError, Configuration};

/// The most devices a mapping string can name (digits `0`–`9`).
pub const MAX_DEVICES: usize = 10;

/// How a mapping is written (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Alphabet {
    /// `B` = device 0, `L` = device 1.
    BigLittle,
    /// `0`–`9` = the device's index.
    Digits,
}

impl Alphabet {
    /// The character for `device`, if this alphabet can write it.
    fn symbol(self, device: usize) -> Option<char> {
        match (self, device) {
            (Alphabet::BigLittle, 0) => Some('B'),
            (Alphabet::BigLittle, 1) => Some('L'),
            (Alphabet::BigLittle, _) => None,
            (Alphabet::Digits, d) => u32::try_from(d).ok().and_then(|d| char::from_digit(d, 10)),
        }
    }
}

/// Why a mapping string or its use is invalid. Each variant names the offending value; the
/// mapping it quotes is shortened when long ([`excerpt`]), so a megabyte of `--mapping`
/// does not bury the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MappingError {
    /// An empty string.
    #[error("empty mapping: give one device character per unit, e.g. `BBBLLL`")]
    Empty,
    /// A character that is no device.
    #[error(
        "mapping `{mapping}`: `{character}` at position {position} is not a device \
         (use `B`/`L`, or digits `0`-`9` for the device index)"
    )]
    BadCharacter {
        /// The mapping as given (shortened if long).
        mapping: String,
        /// The character.
        character: char,
        /// Its 0-based position (= unit index).
        position: usize,
    },
    /// Letters and digits in one string.
    #[error(
        "mapping `{mapping}`: `{character}` at position {position} mixes digits and `B`/`L` \
         letters; write the whole mapping in one of them"
    )]
    MixedAlphabet {
        /// The mapping as given (shortened if long).
        mapping: String,
        /// The first character of the other alphabet.
        character: char,
        /// Its 0-based position.
        position: usize,
    },
    /// A mapping whose length is not the net's unit count.
    #[error("mapping `{mapping}` has {length} characters, but the net has {units} units")]
    Length {
        /// The mapping as given (shortened if long).
        mapping: String,
        /// Its length in characters.
        length: usize,
        /// Units of the net.
        units: usize,
    },
    /// A device the platform does not have.
    #[error(
        "mapping `{mapping}`: `{character}` at position {position} names device {device}, \
         but there are {devices} device(s)"
    )]
    NoSuchDevice {
        /// The mapping as given (shortened if long).
        mapping: String,
        /// The character.
        character: char,
        /// Its 0-based position.
        position: usize,
        /// The device it names.
        device: usize,
        /// Devices available.
        devices: usize,
    },
    /// A device index no character can write.
    #[error("unit {unit} maps to device {device}; a mapping string names devices 0 to 9")]
    Unwritable {
        /// The unit.
        unit: usize,
        /// Its device.
        device: usize,
    },
    /// Pipeline mode: one device in two runs.
    #[error(
        "pipeline mode: device {device} runs units {first:?} and again units {second:?}; \
         a device can hold only one pipeline stage (its workers cannot serve two stages at \
         once). Map those units to one run, or use switch mode"
    )]
    DeviceReused {
        /// The device.
        device: usize,
        /// Its first run's units.
        first: Range<usize>,
        /// Its later run's units.
        second: Range<usize>,
    },
    /// Pipeline mode: fewer device places than the mapping names.
    #[error("the mapping names device {device}, but places were given for {places} device(s)")]
    MissingPlace {
        /// The device without a place.
        device: usize,
        /// Device places given.
        places: usize,
    },
    /// The pipeline configuration the runs make is invalid (places outside the platform…).
    #[error("pipeline from the mapping: {0}")]
    Config(#[from] ConfigError),
}

/// A device for every unit, as written in a mapping string.
///
/// ```
/// use taopipe_live::planners::armcoup::Mapping;
///
/// let m = Mapping::parse("BBBLLL", 6, 2)?;
/// assert_eq!(m.runs(), vec![(0..3, 0), (3..6, 1)]);
/// assert_eq!(m.to_string(), "BBBLLL");
/// // devices 0 and 1 on workers 0+1 and 1+1: a 2-stage pipeline
/// let c = m.pipeline(&[(0, 1), (1, 1)], 2)?;
/// assert_eq!(c.to_string(), "[3,3]@{0+1,1+1}");
/// assert_eq!(Mapping::parse("0012", 4, 3)?.runs(), vec![(0..2, 0), (2..3, 1), (3..4, 2)]);
/// # Ok::<(), taopipe_live::planners::armcoup::MappingError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Mapping {
    devices: Vec<usize>,
    alphabet: Alphabet,
}

impl Mapping {
    /// Parses `text` for a net of `units` units on a platform of `devices` devices.
    ///
    /// # Errors
    /// A bad or mixed character (named with its position), a length other than `units`
    /// (both named), or a device index `≥ devices`.
    pub fn parse(text: &str, units: usize, devices: usize) -> Result<Mapping, MappingError> {
        let m: Mapping = text.parse()?;
        m.check(units, devices)?;
        Ok(m)
    }

    /// The mapping of these per-unit devices, in letters when every device is 0 or 1 and
    /// in digits otherwise.
    ///
    /// ```
    /// use taopipe_live::planners::armcoup::Mapping;
    ///
    /// assert_eq!(Mapping::from_devices(vec![0, 0, 1])?.to_string(), "BBL");
    /// assert_eq!(Mapping::from_devices(vec![2, 0, 1])?.to_string(), "201");
    /// # Ok::<(), taopipe_live::planners::armcoup::MappingError>(())
    /// ```
    ///
    /// # Errors
    /// No units, or a device ≥ [`MAX_DEVICES`].
    pub fn from_devices(devices: Vec<usize>) -> Result<Mapping, MappingError> {
        if devices.is_empty() {
            return Err(MappingError::Empty);
        }
        if let Some((unit, &device)) = devices.iter().enumerate().find(|(_, d)| **d >= MAX_DEVICES)
        {
            return Err(MappingError::Unwritable { unit, device });
        }
        let alphabet = if devices.iter().all(|&d| d <= 1) {
            Alphabet::BigLittle
        } else {
            Alphabet::Digits
        };
        Ok(Mapping { devices, alphabet })
    }

    /// Checks the mapping against a net of `units` units and a platform of `devices`
    /// devices.
    ///
    /// # Errors
    /// [`MappingError::Length`] or [`MappingError::NoSuchDevice`] (the first such unit).
    pub fn check(&self, units: usize, devices: usize) -> Result<(), MappingError> {
        if self.devices.len() != units {
            return Err(MappingError::Length {
                mapping: excerpt(&self.to_string()),
                length: self.devices.len(),
                units,
            });
        }
        if let Some((position, &device)) = self
            .devices
            .iter()
            .enumerate()
            .find(|(_, d)| **d >= devices)
        {
            return Err(MappingError::NoSuchDevice {
                mapping: excerpt(&self.to_string()),
                character: self.alphabet.symbol(device).unwrap_or('?'),
                position,
                device,
                devices,
            });
        }
        Ok(())
    }

    /// Units mapped (the string's length).
    pub fn units(&self) -> usize {
        self.devices.len()
    }

    /// The device of every unit.
    pub fn devices(&self) -> &[usize] {
        &self.devices
    }

    /// The alphabet it is written in.
    pub fn alphabet(&self) -> Alphabet {
        self.alphabet
    }

    /// The maximal runs of consecutive units on one device, in order: `(units, device)`.
    pub fn runs(&self) -> Vec<(Range<usize>, usize)> {
        let mut runs: Vec<(Range<usize>, usize)> = Vec::new();
        for (unit, &device) in self.devices.iter().enumerate() {
            match runs.last_mut() {
                Some((range, d)) if *d == device => range.end = unit + 1,
                _ => runs.push((unit..unit + 1, device)),
            }
        }
        runs
    }

    /// The pipeline-mode configuration: one stage per run, on `device_places[device]`
    /// (`(leader, width)` of each device, in device order) on a platform of `workers`
    /// workers.
    ///
    /// # Errors
    /// [`MappingError::DeviceReused`] when a device holds two runs (see the module docs),
    /// [`MappingError::MissingPlace`] when a device has no place, or the configuration's
    /// own check ([`MappingError::Config`]: places outside the platform or overlapping).
    pub fn pipeline(
        &self,
        device_places: &[(usize, usize)],
        workers: usize,
    ) -> Result<Configuration, MappingError> {
        let runs = self.runs();
        for (i, (second, device)) in runs.iter().enumerate() {
            if let Some((first, _)) = runs[..i].iter().find(|(_, d)| d == device) {
                return Err(MappingError::DeviceReused {
                    device: *device,
                    first: first.clone(),
                    second: second.clone(),
                });
            }
        }
        let places = runs
            .iter()
            .map(|(_, device)| {
                device_places
                    .get(*device)
                    .copied()
                    .ok_or(MappingError::MissingPlace {
                        device: *device,
                        places: device_places.len(),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let composition: Vec<usize> = runs.iter().map(|(r, _)| r.len()).collect();
        Ok(Configuration::with_places(
            &composition,
            &places,
            self.units(),
            workers,
        )?)
    }
}

impl FromStr for Mapping {
    type Err = MappingError;

    /// Parses the characters alone; [`Mapping::check`] (or [`Mapping::parse`]) checks the
    /// length and the device indices.
    fn from_str(text: &str) -> Result<Mapping, MappingError> {
        let mut devices = Vec::with_capacity(text.len());
        let mut alphabet: Option<Alphabet> = None;
        for (position, character) in text.chars().enumerate() {
            let (kind, device) = match character {
                'B' => (Alphabet::BigLittle, 0),
                'L' => (Alphabet::BigLittle, 1),
                '0'..='9' => (Alphabet::Digits, character as usize - '0' as usize),
                _ => {
                    return Err(MappingError::BadCharacter {
                        mapping: excerpt(text),
                        character,
                        position,
                    });
                }
            };
            if *alphabet.get_or_insert(kind) != kind {
                return Err(MappingError::MixedAlphabet {
                    mapping: excerpt(text),
                    character,
                    position,
                });
            }
            devices.push(device);
        }
        let alphabet = alphabet.ok_or(MappingError::Empty)?;
        Ok(Mapping { devices, alphabet })
    }
}

impl fmt::Display for Mapping {
    /// The mapping string, in the alphabet it was written in.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for &d in &self.devices {
            // Every constructor keeps devices writable in the alphabet.
            let c = self.alphabet.symbol(d).unwrap_or('?');
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The naive reading: each unit's device straight from its character.
    fn naive_devices(text: &str) -> Vec<usize> {
        text.bytes()
            .map(|b| match b {
                b'B' => 0,
                b'L' => 1,
                d => usize::from(d - b'0'),
            })
            .collect()
    }

    #[test]
    fn letters_and_digits_parse_to_devices() {
        let m = Mapping::parse("BBLLLB", 6, 2).expect("valid");
        assert_eq!(m.devices(), &[0, 0, 1, 1, 1, 0]);
        assert_eq!(m.alphabet(), Alphabet::BigLittle);
        assert_eq!(m.runs(), vec![(0..2, 0), (2..5, 1), (5..6, 0)]);
        let m = Mapping::parse("2201", 4, 3).expect("valid");
        assert_eq!(m.devices(), &[2, 2, 0, 1]);
        assert_eq!(m.alphabet(), Alphabet::Digits);
        assert_eq!(m.to_string(), "2201");
    }

    #[test]
    fn errors_name_the_character_position_and_lengths() {
        let e = Mapping::parse("BBGL", 4, 2).expect_err("G");
        assert_eq!(
            e,
            MappingError::BadCharacter {
                mapping: "BBGL".into(),
                character: 'G',
                position: 2
            }
        );
        assert!(e.to_string().contains("`G` at position 2"), "{e}");
        let e = Mapping::parse("BB1", 3, 2).expect_err("mixed");
        assert!(
            matches!(
                e,
                MappingError::MixedAlphabet {
                    character: '1',
                    position: 2,
                    ..
                }
            ),
            "{e:?}"
        );
        let e = Mapping::parse("BBBL", 6, 2).expect_err("short");
        assert_eq!(
            e.to_string(),
            "mapping `BBBL` has 4 characters, but the net has 6 units"
        );
        let e = Mapping::parse("0102", 4, 2).expect_err("device 2");
        assert!(
            matches!(
                e,
                MappingError::NoSuchDevice {
                    character: '2',
                    position: 3,
                    device: 2,
                    devices: 2,
                    ..
                }
            ),
            "{e:?}"
        );
        let e = Mapping::parse("BL", 2, 1).expect_err("one device");
        assert!(
            e.to_string()
                .contains("names device 1, but there are 1 device(s)"),
            "{e}"
        );
        assert_eq!(Mapping::parse("", 0, 2), Err(MappingError::Empty));
        // a non-ASCII character: position in characters, not bytes
        let e = Mapping::parse("Bé L", 4, 2).expect_err("é");
        assert!(matches!(
            e,
            MappingError::BadCharacter {
                character: 'é',
                position: 1,
                ..
            }
        ));
        let e = Mapping::parse("b", 1, 2).expect_err("lower case");
        assert!(matches!(
            e,
            MappingError::BadCharacter {
                character: 'b',
                position: 0,
                ..
            }
        ));
    }

    #[test]
    fn long_mappings_are_quoted_shortened() {
        // Found by fuzzing (fuzz/regressions/armcoup_mapping/): errors echoed the whole
        // mapping, so a megabyte of `--mapping` made a megabyte of message.
        let long = "B".repeat(1_000_000);
        for (text, units) in [
            (format!("{long}G"), 1_000_001),
            (format!("{long}1"), 1_000_001),
            (long.clone(), 3),
            (format!("{}9", "0".repeat(1_000_000)), 1_000_001),
            (format!("7489{}", "\u{fffd}".repeat(100)), 104),
        ] {
            let e = Mapping::parse(&text, units, 2).expect_err("a bad mapping");
            let message = e.to_string();
            assert!(
                message.len() < 300,
                "{} bytes: {message:.300}",
                message.len()
            );
            assert!(message.contains("bytes in all"), "{message}");
        }
    }

    #[test]
    fn pipeline_mode_makes_one_stage_per_run() {
        let m = Mapping::parse("LLBBBB", 6, 2).expect("valid");
        let c = m.pipeline(&[(0, 1), (1, 1)], 2).expect("pipeline");
        assert_eq!(c.composition(), vec![2, 4]);
        assert_eq!(c.places(), vec![(1, 1), (0, 1)]);

        let e = Mapping::parse("BBLLBB", 6, 2)
            .expect("valid")
            .pipeline(&[(0, 1), (1, 1)], 2)
            .expect_err("B twice");
        assert_eq!(
            e,
            MappingError::DeviceReused {
                device: 0,
                first: 0..2,
                second: 4..6
            }
        );
        assert!(e.to_string().contains("use switch mode"), "{e}");

        let e = Mapping::parse("0012", 4, 3)
            .expect("valid")
            .pipeline(&[(0, 1), (1, 1)], 2)
            .expect_err("no place for device 2");
        assert_eq!(
            e,
            MappingError::MissingPlace {
                device: 2,
                places: 2
            }
        );

        let e = Mapping::parse("BL", 2, 2)
            .expect("valid")
            .pipeline(&[(0, 2), (1, 1)], 2)
            .expect_err("overlapping places");
        assert!(
            matches!(e, MappingError::Config(ConfigError::Overlap { .. })),
            "{e:?}"
        );
    }

    #[test]
    fn from_devices_picks_the_alphabet() {
        assert_eq!(
            Mapping::from_devices(vec![1, 1, 0])
                .expect("ok")
                .to_string(),
            "LLB"
        );
        assert_eq!(
            Mapping::from_devices(vec![1, 3]).expect("ok").to_string(),
            "13"
        );
        assert_eq!(
            Mapping::from_devices(vec![0, 10]),
            Err(MappingError::Unwritable {
                unit: 1,
                device: 10
            })
        );
        assert_eq!(Mapping::from_devices(vec![]), Err(MappingError::Empty));
    }

    fn mapping_text() -> impl Strategy<Value = String> {
        prop_oneof!["[BL]{1,40}", "[0-9]{1,40}"]
    }

    proptest! {
        #[test]
        fn runs_rebuild_the_string_and_are_maximal(text in mapping_text()) {
            let naive = naive_devices(&text);
            let m = Mapping::parse(&text, naive.len(), MAX_DEVICES).expect("valid");
            prop_assert_eq!(m.devices(), &naive[..]);
            prop_assert_eq!(m.to_string(), text.clone());
            let runs = m.runs();
            // the runs tile 0..units in order, each one device, neighbours on other devices
            let mut expanded = Vec::new();
            for (range, device) in &runs {
                prop_assert_eq!(range.start, expanded.len());
                prop_assert!(!range.is_empty());
                expanded.extend(range.clone().map(|_| *device));
            }
            prop_assert_eq!(&expanded, &naive);
            for pair in runs.windows(2) {
                prop_assert_ne!(pair[0].1, pair[1].1);
            }
            // run count = 1 + number of device changes between neighbours
            let changes = naive.windows(2).filter(|w| w[0] != w[1]).count();
            prop_assert_eq!(runs.len(), changes + 1);
        }

        #[test]
        fn pipeline_mode_accepts_exactly_the_mappings_without_a_repeated_device(
            text in "[0-3]{1,12}"
        ) {
            let naive = naive_devices(&text);
            let m = Mapping::parse(&text, naive.len(), 4).expect("valid");
            let places = [(0, 1), (1, 2), (3, 1), (4, 1)];
            // a device repeats iff it appears again after another device
            let repeated = (0..naive.len()).any(|i| {
                (i + 1..naive.len()).any(|j| naive[j] == naive[i] && naive[i..j].iter().any(|&d| d != naive[i]))
            });
            match m.pipeline(&places, 5) {
                Ok(c) => {
                    prop_assert!(!repeated);
                    prop_assert_eq!(c.units(), naive.len());
                    for (range, (leader, width)) in c.unit_ranges().into_iter().zip(c.places()) {
                        for unit in range {
                            prop_assert_eq!((leader, width), places[naive[unit]]);
                        }
                    }
                }
                Err(MappingError::DeviceReused { .. }) => prop_assert!(repeated),
                Err(e) => prop_assert!(false, "unexpected {e}"),
            }
        }
    }
}
