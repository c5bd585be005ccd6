//! Emulation schedules: speed changes at set times during a run, to see how a pipeline
//! copes when its cores slow down (a governor switching to `powersave`) and speed up again.
//!
//! # Grammar
//! `SCHEDULE := STEP (',' STEP)*`, `STEP := TIME ':' SPEC`, `TIME := NUMBER ('s' | 'ms')`,
//! `SPEC := 'none' | EMULATION_SPEC` (see [`EmulationSpec`]). `none` puts every worker back
//! to full speed (1.0). Times count from the start of the run; they must be finite, ≥ 0 and
//! strictly increasing.
//!
//! An emulation spec has commas of its own (`w0=0.5,w1=powersave`), so the schedule is
//! split on commas and a token whose part before its first `:` is a time starts a new step;
//! every other token (including `table1:N`, the one spec item with a colon, and any item
//! with a `=`) continues the spec of the step before it. Each step replaces the speeds of
//! the step before: workers its spec does not name run at 1.0.
//!
//! # Examples
//! ```
//! use std::time::{Duration, Instant};
//! use taopipe_runtime::{EmulationSchedule, Runtime, StopSignal};
//!
//! let rt = Runtime::builder().workers(2).pin(false).build()?;
//! // Worker 1 at half speed from the start, everyone back to full speed after 30 ms.
//! let schedule: EmulationSchedule = "0ms:w1=powersave,30ms:none".parse()?;
//! schedule.validate(rt.topology())?; // a bad worker index fails here, not mid-run
//! let stop = StopSignal::new();
//! let mut seen = Vec::new();
//! std::thread::scope(|s| {
//!     // Beside the player, a pipeline would run here with `&rt` and `&stop`.
//!     let player = s.spawn(|| {
//!         schedule.play(&rt, Instant::now(), &stop, |at, _step| seen.push((at, rt.speeds())))
//!     });
//!     player.join().expect("player panicked")
//! })?;
//! assert_eq!(seen[0].1, vec![1.0, 0.5]);
//! assert!(seen[1].0 >= Duration::from_millis(30));
//! assert_eq!(rt.speeds(), vec![1.0, 1.0]);
//! assert_eq!(schedule.to_string(), "0ms:w1=powersave,30ms:none");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use super::{EmulationError, EmulationSpec, PERFORMANCE};
use crate::excerpt::excerpt;
use crate::pipeline::StopSignal;
use crate::pool::Runtime;
use crate::topology::Topology;

/// Longest sleep between two looks at the stop signal while waiting for a step: short
/// enough that stopping a run is not held up noticeably, long enough to cost nothing.
const WAIT_SLICE: Duration = Duration::from_millis(20);

/// A parsed `--emulate-schedule`: emulation specs to apply at times since a run's start.
///
/// Written `TIME:SPEC,TIME:SPEC,…` with `TIME` like `20s` or `1500ms` and `SPEC` an
/// [`EmulationSpec`] (its own commas allowed) or `none`, e.g.
/// `0s:w0=0.5,w1=powersave,20s:none`. Built with [`str::parse`]; play it with
/// [`EmulationSchedule::play`].
#[derive(Debug, Clone, PartialEq)]
pub struct EmulationSchedule {
    steps: Vec<Step>,
    /// The schedule as written, for messages and reports.
    text: String,
}

/// One step of an [`EmulationSchedule`]: at `at` since the start, apply `spec`.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// When, counted from the start of the run.
    pub at: Duration,
    /// The speeds from then on; `None` (written `none`) puts every worker back to 1.0.
    /// Kept apart from a spec like `all=1` so the schedule prints back as written.
    pub spec: Option<EmulationSpec>,
}

/// A schedule that does not parse, or does not fit the runtime. What it quotes of the
/// schedule is shortened when long.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    /// A time that is not a finite number ≥ 0 followed by `s` or `ms`.
    #[error(
        "emulation schedule time `{0}`: expected a number ≥ 0 of seconds or milliseconds, like `20s` or `1500ms`"
    )]
    BadTime(String),
    /// A step whose spec does not parse, or names workers or clusters the runtime lacks.
    #[error("emulation schedule step `{step}`: {error}")]
    BadSpec {
        /// The step as written (`TIME:SPEC`).
        step: String,
        /// What is wrong with its spec.
        error: EmulationError,
    },
    /// A step not later than the one before it.
    #[error(
        "emulation schedule times must increase: `{later}` comes after `{earlier}` but is not later"
    )]
    NotIncreasing {
        /// The time of the step before, as written.
        earlier: String,
        /// The time that is not later, as written.
        later: String,
    },
    /// A schedule that starts with something other than `TIME:SPEC`.
    #[error("emulation schedule must start with a step `TIME:SPEC` (like `0s:none`), found `{0}`")]
    NotAStep(String),
    /// An empty schedule.
    #[error("empty emulation schedule")]
    Empty,
}

impl EmulationSchedule {
    /// A schedule of `steps` built in code rather than written (a soak's speeds cycling
    /// every few seconds for half an hour); it prints as the text that parses back to it.
    ///
    /// ```
    /// use std::time::Duration;
    /// use taopipe_runtime::{EmulationSchedule, Step};
    ///
    /// let specs = [None, Some("w0=powersave".parse()?)];
    /// let steps = (0..3u64)
    ///     .map(|k| Step { at: Duration::from_secs(2 * k), spec: specs[k as usize % 2].clone() })
    ///     .collect();
    /// let schedule = EmulationSchedule::from_steps(steps)?;
    /// assert_eq!(schedule.to_string(), "0s:none,2s:w0=powersave,4s:none");
    /// assert_eq!(schedule, schedule.to_string().parse()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// No steps ([`ScheduleError::Empty`]), or a step not later than the one before it
    /// ([`ScheduleError::NotIncreasing`]).
    pub fn from_steps(steps: Vec<Step>) -> Result<EmulationSchedule, ScheduleError> {
        if steps.is_empty() {
            return Err(ScheduleError::Empty);
        }
        if let Some(pair) = steps.windows(2).find(|pair| pair[1].at <= pair[0].at) {
            let time = |step: &Step| step.to_string().split(':').next().unwrap_or("").to_owned();
            return Err(ScheduleError::NotIncreasing {
                earlier: time(&pair[0]),
                later: time(&pair[1]),
            });
        }
        let text = steps
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",");
        Ok(EmulationSchedule { steps, text })
    }

    /// The steps, in time order.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// Checks every step's spec against `topology` (worker and cluster indices), so that a
    /// schedule that does not fit fails before a long run rather than in its middle.
    pub fn validate(&self, topology: &Topology) -> Result<(), ScheduleError> {
        for step in &self.steps {
            if let Some(spec) = &step.spec {
                spec.resolve(topology)
                    .map_err(|error| ScheduleError::BadSpec {
                        step: excerpt(&step.to_string()),
                        error,
                    })?;
            }
        }
        Ok(())
    }

    /// Plays the schedule on `rt`: for each step in order, waits until `start + step.at`,
    /// applies it ([`Runtime::emulate`], or every worker at 1.0 for `none`) and calls
    /// `on_change` with the time since `start` and the step. Steps already due when play
    /// begins are applied at once, in order.
    ///
    /// Meant for a thread of its own beside a pipeline run: it returns `Ok(())` as soon as
    /// `stop` is raised (looking at least every 20 ms), leaving the speeds of the last
    /// step applied, or after the last step. Every spec is resolved before the first step,
    /// so a spec that does not fit `rt` fails with nothing applied.
    pub fn play(
        &self,
        rt: &Runtime,
        start: Instant,
        stop: &StopSignal,
        mut on_change: impl FnMut(Duration, &Step),
    ) -> Result<(), EmulationError> {
        for spec in self.steps.iter().filter_map(|s| s.spec.as_ref()) {
            spec.resolve(rt.topology())?;
        }
        let full_speed = EmulationSpec::uniform(PERFORMANCE)?;
        for step in &self.steps {
            // `None`: so far in the future that `Instant` cannot hold it; wait for `stop`.
            let due = start.checked_add(step.at);
            loop {
                if stop.is_stopped() {
                    return Ok(());
                }
                let now = Instant::now();
                match due {
                    Some(due) if now >= due => break,
                    Some(due) => std::thread::sleep((due - now).min(WAIT_SLICE)),
                    None => std::thread::sleep(WAIT_SLICE),
                }
            }
            rt.emulate(step.spec.as_ref().unwrap_or(&full_speed))?;
            on_change(start.elapsed(), step);
        }
        Ok(())
    }
}

/// Whether `head`, the part of a token before its first `:`, is meant as a step's time
/// rather than the start of a spec item with a colon (`table1:N`). Anything else is taken
/// as a time so that a mistyped one (`2x:none`) is reported as a bad time.
fn is_time_head(head: &str) -> bool {
    let head = head.trim();
    head != "table1" && !head.contains('=')
}

/// `20s`, `1.5s`, `1500ms` → the duration.
fn parse_time(text: &str) -> Result<Duration, ScheduleError> {
    let bad = || ScheduleError::BadTime(excerpt(text));
    let (number, scale) = if let Some(ms) = text.strip_suffix("ms") {
        (ms, 1e-3)
    } else if let Some(s) = text.strip_suffix('s') {
        (s, 1.0)
    } else {
        return Err(bad());
    };
    let value = number.trim().parse::<f64>().map_err(|_| bad())?;
    if !value.is_finite() || value < 0.0 {
        return Err(bad());
    }
    Duration::try_from_secs_f64(value * scale).map_err(|_| bad())
}

impl FromStr for EmulationSchedule {
    type Err = ScheduleError;

    fn from_str(text: &str) -> Result<EmulationSchedule, ScheduleError> {
        // (time as written, its duration, spec tokens)
        let mut parsed: Vec<(&str, Duration, Vec<&str>)> = Vec::new();
        for token in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            match token.split_once(':') {
                Some((head, spec)) if is_time_head(head) => {
                    let time = head.trim();
                    let at = parse_time(time)?;
                    if let Some(&(earlier, before, _)) = parsed.last()
                        && at <= before
                    {
                        return Err(ScheduleError::NotIncreasing {
                            earlier: excerpt(earlier),
                            later: excerpt(time),
                        });
                    }
                    parsed.push((time, at, vec![spec.trim()]));
                }
                _ => match parsed.last_mut() {
                    Some((_, _, spec)) => spec.push(token),
                    None => return Err(ScheduleError::NotAStep(excerpt(token))),
                },
            }
        }
        if parsed.is_empty() {
            return Err(ScheduleError::Empty);
        }
        let steps = parsed
            .into_iter()
            .map(|(time, at, tokens)| {
                let spec = tokens.join(",");
                let spec = match spec.as_str() {
                    "none" => None,
                    _ => Some(spec.parse::<EmulationSpec>().map_err(|error| {
                        ScheduleError::BadSpec {
                            step: excerpt(&format!("{time}:{spec}")),
                            error,
                        }
                    })?),
                };
                Ok(Step { at, spec })
            })
            .collect::<Result<Vec<_>, ScheduleError>>()?;
        Ok(EmulationSchedule {
            steps,
            text: text.trim().to_string(),
        })
    }
}

impl fmt::Display for EmulationSchedule {
    /// The schedule as it was written.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Display for Step {
    /// `TIME:SPEC`, the time in whole seconds (`20s`) where it is one, else in milliseconds
    /// (`1500ms`, `0.5ms`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.at.subsec_nanos() == 0 {
            write!(f, "{}s:", self.at.as_secs())?;
        } else if self.at.subsec_nanos().is_multiple_of(1_000_000) {
            write!(f, "{}ms:", self.at.as_millis())?;
        } else {
            write!(f, "{}ms:", self.at.as_nanos() as f64 / 1e6)?;
        }
        match &self.spec {
            Some(spec) => write!(f, "{spec}"),
            None => f.write_str("none"),
        }
    }
}

#[cfg(test)]
mod test;
