//! Layout files reach the runtime through `TAOPIPE_LAYOUT`, and bad ones are clear errors
//! naming the file and line. One test per process section: the environment is global.

use std::io::Write;

use taopipe_runtime::Runtime;

fn layout_file(name: &str, text: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("taopipe-layout-{}-{name}", std::process::id()));
    let mut f = std::fs::File::create(&path).expect("temp file");
    f.write_all(text.as_bytes()).expect("write");
    path
}

#[test]
fn taopipe_layout_overrides_detection_and_reports_bad_lines() {
    let usable = core_affinity_first_cpu();
    let good = layout_file("good", &format!("{usable}\n1\n"));
    let bad_width = layout_file("badwidth", &format!("# one worker\n{usable}\n1 2\n"));
    let garbage = layout_file("garbage", "zero one\n1\n");
    // SAFETY: this is the only test in this binary, so no other thread reads the
    // environment while it changes.
    unsafe { std::env::set_var("TAOPIPE_LAYOUT", &good) };
    let rt = Runtime::new().expect("good layout");
    assert_eq!(rt.num_workers(), 1);
    assert!(
        rt.topology().source().contains("layout"),
        "{}",
        rt.topology().source()
    );
    drop(rt);

    // SAFETY: as above, the only test in this binary.
    unsafe { std::env::set_var("TAOPIPE_LAYOUT", &bad_width) };
    let err = Runtime::new()
        .expect_err("width 2 on one worker")
        .to_string();
    assert!(
        err.contains(":3") && err.contains('2'),
        "names line 3 and the width: {err}"
    );

    // SAFETY: as above, the only test in this binary.
    unsafe { std::env::set_var("TAOPIPE_LAYOUT", &garbage) };
    let err = Runtime::new().expect_err("garbage").to_string();
    assert!(
        err.contains(":1") && err.contains("zero"),
        "names line 1 and the token: {err}"
    );

    // SAFETY: as above, the only test in this binary.
    unsafe { std::env::set_var("TAOPIPE_LAYOUT", "/nonexistent/taopipe.layout") };
    let err = Runtime::new().expect_err("missing file").to_string();
    assert!(err.contains("/nonexistent/taopipe.layout"), "{err}");
    // SAFETY: as above, the only test in this binary.
    unsafe { std::env::remove_var("TAOPIPE_LAYOUT") };
}

/// A CPU this process may run on (the layout must name a usable one).
fn core_affinity_first_cpu() -> usize {
    taopipe_runtime::Topology::detect().expect("detect").cpus()[0].id
}
