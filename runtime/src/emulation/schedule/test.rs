use std::sync::Mutex;

use super::*;

fn schedule(text: &str) -> EmulationSchedule {
    text.parse()
        .unwrap_or_else(|e| panic!("{text:?} should parse: {e}"))
}

fn spec(text: &str) -> Option<EmulationSpec> {
    Some(text.parse().expect("spec"))
}

fn runtime(workers: usize) -> Runtime {
    Runtime::builder()
        .workers(workers)
        .pin(false)
        .build()
        .expect("runtime")
}

#[test]
fn examples_parse_into_steps() {
    let s = schedule("0s:none,20s:w1=powersave,40s:none");
    assert_eq!(
        s.steps(),
        &[
            Step {
                at: Duration::ZERO,
                spec: None
            },
            Step {
                at: Duration::from_secs(20),
                spec: spec("w1=powersave")
            },
            Step {
                at: Duration::from_secs(40),
                spec: None
            },
        ]
    );
    assert_eq!(s.to_string(), "0s:none,20s:w1=powersave,40s:none");

    // A spec's own commas continue its step; `ms` and `s` mix.
    let s = schedule("0s:w0=0.5,w1=powersave,1500ms:none");
    assert_eq!(
        s.steps(),
        &[
            Step {
                at: Duration::ZERO,
                spec: spec("w0=0.5,w1=powersave")
            },
            Step {
                at: Duration::from_millis(1500),
                spec: None
            },
        ]
    );
    assert_eq!(s.to_string(), "0s:w0=0.5,w1=powersave,1500ms:none");
}

#[test]
fn table1_items_and_spaces_continue_a_step() {
    let s = schedule(" 0.5s : table1:3 , 1s:w0=0.5, table1:2 ");
    assert_eq!(
        s.steps(),
        &[
            Step {
                at: Duration::from_millis(500),
                spec: spec("table1:3")
            },
            Step {
                at: Duration::from_secs(1),
                spec: spec("w0=0.5,table1:2")
            },
        ]
    );
    assert_eq!(s.to_string(), "0.5s : table1:3 , 1s:w0=0.5, table1:2");
}

#[test]
fn steps_print_as_time_and_spec() {
    let s = schedule("0s:none,1500ms:w1=powersave,2s:all=0.25,2000.5ms:none");
    let printed: Vec<String> = s.steps().iter().map(Step::to_string).collect();
    assert_eq!(
        printed,
        [
            "0s:none",
            "1500ms:w1=powersave",
            "2s:all=0.25",
            "2000.5ms:none"
        ]
    );
}

#[test]
fn bad_schedules_name_the_bad_value() {
    let cases = [
        ("", "empty emulation schedule"),
        (" , ", "empty emulation schedule"),
        ("w1=powersave,10s:none", "found `w1=powersave`"),
        ("table1:3", "found `table1:3`"),
        ("20:none", "time `20`"),
        ("2x:none", "time `2x`"),
        ("-1s:none", "time `-1s`"),
        ("infs:none", "time `infs`"),
        ("NaNms:none", "time `NaNms`"),
        ("1e400s:none", "time `1e400s`"),
        ("1e300s:none", "time `1e300s`"),
        ("0s:none,s:none", "time `s`"),
        ("0s:w1=fast", "step `0s:w1=fast`"),
        ("0s:w1=fast", "`fast`"),
        ("0s:none,5s:w0=0.5,x1=0.5", "step `5s:w0=0.5,x1=0.5`"),
        ("0s:none,5s:", "step `5s:`"),
        ("0s:none,w1=0.5", "`none`"),
        ("10s:none,5s:w1=0.5", "`5s` comes after `10s`"),
        ("1s:none,1000ms:none", "`1000ms` comes after `1s`"),
    ];
    for (text, needle) in cases {
        let err = text
            .parse::<EmulationSchedule>()
            .expect_err(text)
            .to_string();
        assert!(
            err.contains(needle),
            "schedule {text:?}: error {err:?} should name {needle:?}"
        );
    }
}

#[test]
fn validate_resolves_every_step_against_the_topology() {
    let topo = Topology::symmetric(2).expect("topology");
    schedule("0s:w1=0.5,1s:none,2s:all=powersave")
        .validate(&topo)
        .expect("fits two workers");
    let err = schedule("0s:w1=0.5,1s:none,2s:w5=powersave")
        .validate(&topo)
        .expect_err("no worker 5");
    assert_eq!(
        err,
        ScheduleError::BadSpec {
            step: "2s:w5=powersave".into(),
            error: EmulationError::NoSuchWorker {
                worker: 5,
                workers: 2
            },
        }
    );
    assert!(err.to_string().contains("worker 5"), "{err}");
}

#[test]
fn none_puts_every_worker_back_to_full_speed() {
    let rt = runtime(3);
    rt.emulate(&"all=0.25".parse().expect("spec"))
        .expect("emulate");
    assert_eq!(rt.speeds(), vec![0.25; 3]);
    schedule("0s:none")
        .play(&rt, Instant::now(), &StopSignal::new(), |_, _| {})
        .expect("plays");
    assert_eq!(rt.speeds(), vec![1.0; 3]);
}

#[test]
fn play_applies_steps_in_order_at_their_times() {
    let rt = runtime(2);
    let s = schedule("0ms:w0=0.5,w1=powersave,30ms:w1=0.25,60ms:none");
    let start = Instant::now();
    let mut seen = Vec::new();
    s.play(&rt, start, &StopSignal::new(), |at, step| {
        seen.push((at, step.clone(), rt.speeds()));
    })
    .expect("plays");
    assert_eq!(seen.len(), 3);
    let speeds: Vec<Vec<f64>> = seen.iter().map(|(_, _, s)| s.clone()).collect();
    assert_eq!(speeds, [vec![0.5, 0.5], vec![1.0, 0.25], vec![1.0, 1.0]]);
    let steps: Vec<Step> = seen.iter().map(|(_, s, _)| s.clone()).collect();
    assert_eq!(steps, s.steps());
    for (at, step, _) in &seen {
        assert!(*at >= step.at, "step {step} applied early, at {at:?}");
    }
    assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0));
    assert!(start.elapsed() >= Duration::from_millis(60));
}

#[test]
fn steps_already_due_apply_at_once_in_order() {
    let rt = runtime(2);
    let start = Instant::now() - Duration::from_secs(1);
    let mut order = Vec::new();
    schedule("0s:w0=0.5,100ms:w1=0.5,200ms:none")
        .play(&rt, start, &StopSignal::new(), |_, step| {
            order.push(step.to_string())
        })
        .expect("plays");
    assert_eq!(order, ["0s:w0=0.5", "100ms:w1=0.5", "200ms:none"]);
    assert_eq!(rt.speeds(), vec![1.0, 1.0]);
}

#[test]
fn stop_ends_play_early_keeping_the_last_step() {
    let rt = runtime(2);
    let s = schedule("0s:w1=powersave,3600s:none");
    let stop = StopSignal::new();
    let seen = Mutex::new(Vec::new());
    let begun = Instant::now();
    std::thread::scope(|scope| {
        let player = scope.spawn(|| {
            s.play(&rt, Instant::now(), &stop, |at, step| {
                seen.lock().expect("lock").push((at, step.clone()));
            })
        });
        while seen.lock().expect("lock").is_empty() {
            std::thread::sleep(Duration::from_millis(1));
        }
        stop.stop();
        player.join().expect("player").expect("plays");
    });
    assert!(
        begun.elapsed() < Duration::from_secs(10),
        "stop should end play within a wait slice"
    );
    assert_eq!(seen.into_inner().expect("lock").len(), 1);
    assert_eq!(rt.speeds(), vec![1.0, 0.5]);
}

#[test]
fn stop_before_play_applies_nothing() {
    let rt = runtime(2);
    let stop = StopSignal::new();
    stop.stop();
    let mut calls = 0;
    schedule("0s:w1=powersave")
        .play(&rt, Instant::now(), &stop, |_, _| calls += 1)
        .expect("plays");
    assert_eq!(calls, 0);
    assert_eq!(rt.speeds(), vec![1.0, 1.0]);
}

#[test]
fn play_fails_before_any_step_when_a_spec_does_not_fit() {
    let rt = runtime(2);
    let mut calls = 0;
    let err = schedule("0s:w1=powersave,10ms:w7=0.5")
        .play(&rt, Instant::now(), &StopSignal::new(), |_, _| calls += 1)
        .expect_err("no worker 7");
    assert_eq!(
        err,
        EmulationError::NoSuchWorker {
            worker: 7,
            workers: 2
        }
    );
    assert_eq!(calls, 0);
    assert_eq!(rt.speeds(), vec![1.0, 1.0]);
}

#[test]
fn a_step_naming_a_target_twice_is_rejected() {
    let err = "0s:none,5s:w0=0.5,w1=0.5,w0=0.3"
        .parse::<EmulationSchedule>()
        .expect_err("w0 twice in one step");
    assert_eq!(
        err,
        ScheduleError::BadSpec {
            step: "5s:w0=0.5,w1=0.5,w0=0.3".into(),
            error: EmulationError::Repeated(crate::Target::Worker(0)),
        }
    );
    assert!(err.to_string().contains("w0 twice"), "{err}");
    // Each step is a spec of its own: naming a target again in a later step is the point.
    schedule("0s:w0=0.5,1s:w0=0.3");
}

#[test]
fn bad_schedules_quote_long_input_shortened() {
    let long = "5".repeat(10_000_000);
    for text in [
        format!("{long}x:none"),
        format!("w{long}=0.5,1s:none"),
        format!("0s:w0=0.5,w1=x{long}"),
        format!("{long}s:none,1s:none"),
        format!("5s:none,0.{}1s:none", "0".repeat(10_000_000)),
    ] {
        let err = text.parse::<EmulationSchedule>().expect_err("bad schedule");
        let message = err.to_string();
        assert!(
            message.len() < 300,
            "{} bytes: {message:.300}",
            message.len()
        );
        assert!(message.contains("bytes in all"), "{message}");
    }
    let topo = Topology::symmetric(2).expect("topology");
    let err = schedule(&format!("0s:w1=0.5,1s:w0=0.5{},w7=0.5", "0".repeat(1000)))
        .validate(&topo)
        .expect_err("no worker 7");
    assert!(err.to_string().len() < 300, "{err}");
}

#[test]
fn schedules_built_from_steps_parse_back_and_refuse_what_parsing_refuses() {
    let steps = vec![
        Step {
            at: Duration::ZERO,
            spec: None,
        },
        Step {
            at: Duration::from_millis(1500),
            spec: spec("table1:2"),
        },
        Step {
            at: Duration::from_secs(3),
            spec: spec("w0=0.5,w1=powersave"),
        },
    ];
    let built = EmulationSchedule::from_steps(steps.clone()).expect("increasing steps");
    assert_eq!(built, schedule(&built.to_string()));
    assert_eq!(built.steps(), steps.as_slice());
    assert_eq!(
        EmulationSchedule::from_steps(Vec::new()),
        Err(ScheduleError::Empty)
    );
    let mut late = steps;
    late[2].at = Duration::from_millis(1500);
    assert_eq!(
        EmulationSchedule::from_steps(late),
        Err(ScheduleError::NotIncreasing {
            earlier: "1500ms".into(),
            later: "1500ms".into()
        })
    );
}
