//! Issue 12's bad-input table: every user-facing input of every example (flags, files,
//! environment variables, `frame --serve`'s stdin) given bad values, from one table,
//! [`ROWS`], run through one function, [`check`]. Every row must fail in a way a user can
//! act on:
//!
//! - a non-zero exit that is not a panic: no exit code 101, no `panicked` in stderr, no
//!   death by a signal (an allocation failure aborts), and within [`ROW_TIMEOUT`] (the
//!   child is killed and the row fails, rather than CI hanging);
//! - stderr names the bad value or file: every string of the row's `names`, with the
//!   bad files' paths filled in;
//! - rows marked `early` fail before any work: nothing on stdout, where every example
//!   prints its setup before it starts (output paths in a missing folder among them).
//!
//! The bad files are made in a temporary folder ([`BadFiles`]): empty, random bytes, an
//! 8 GiB sparse file (refused without being read: its size is in the message), truncated
//! and lying safetensors files, wrong dtypes, calibrations that do not fit, layouts
//! naming absent CPUs, a folder where a file belongs, `/dev/zero`. Each example runs with
//! arguments that keep it short ([`BASE`]), so a row that is wrongly accepted still ends.
//!
//! The README's "Bad input and failures" section shows this table, rendered by
//! [`readme_table`]; [`the_readme_shows_the_table`] fails when the two differ (run it with
//! `TAOPIPE_BLESS=1` to rewrite the README's copy).
//!
//! Build the examples first when filtering: `cargo build --release --examples`.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{example_bin, text};

/// How long one row may run before it is killed and fails; every row should fail in well
/// under a second (the slowest is printed).
const ROW_TIMEOUT: Duration = Duration::from_secs(20);

/// One bad input and what its run must show.
#[derive(Debug, Clone, Copy)]
struct Row {
    /// The example run.
    example: &'static str,
    /// Its arguments; a `{name}` argument is the path of the bad file `name` ([`FILES`]).
    args: &'static [&'static str],
    /// Environment variables set for the run (`{name}` as in `args`).
    env: &'static [(&'static str, &'static str)],
    /// What stdin holds (closed after it).
    stdin: &'static str,
    /// What stderr must contain: the bad value, or the bad file (`{name}`).
    names: &'static [&'static str],
    /// Refused before any work: stdout stays empty.
    early: bool,
    /// What the user sees, for the README.
    sees: &'static str,
}

/// A row of `example` run with `args`, whose stderr must contain every string of `names`.
const fn row(
    example: &'static str,
    args: &'static [&'static str],
    names: &'static [&'static str],
    sees: &'static str,
) -> Row {
    Row {
        example,
        args,
        env: &[],
        stdin: "",
        names,
        early: false,
        sees,
    }
}

impl Row {
    /// Also refused before any work (nothing on stdout).
    const fn early(self) -> Row {
        Row {
            early: true,
            ..self
        }
    }

    /// With these environment variables.
    const fn env(self, env: &'static [(&'static str, &'static str)]) -> Row {
        Row { env, ..self }
    }

    /// With this text on stdin.
    const fn stdin(self, stdin: &'static str) -> Row {
        Row { stdin, ..self }
    }
}

/// Arguments that keep each example's run short, added to a row's unless it gives the flag
/// itself. `--a|--b`: the base gives `--a`, left out when the row gives either (they
/// conflict).
const BASE: &[(&str, &[(&str, &str)])] = &[
    ("frame", &[("--net|--onnx", "synth1")]),
    (
        "synthetic",
        &[("--net|--onnx", "synth1"), ("--frames", "1")],
    ),
    ("vgg16", &[("--frames", "1")]),
    ("alexnet", &[("--frames", "1")]),
    ("resnet50", &[("--frames", "1")]),
    ("pipeline", &[("--net", "synth1"), ("--frames", "1")]),
    (
        "compare",
        &[
            ("--net", "synth1"),
            ("--frames", "1"),
            ("--planners", "layer-parallel"),
        ],
    ),
    ("calibrate", &[("--cpus", "0"), ("--reps", "1")]),
    (
        "runtime_bench",
        &[
            ("--tasks", "100"),
            ("--reps", "1"),
            ("--warmup", "0"),
            ("--fj-iters", "10"),
        ],
    ),
    ("runtime_demo", &[("--tasks", "5"), ("--elements", "1000")]),
    // Long enough for the warm-up check: a row wrongly accepted is killed at ROW_TIMEOUT.
    (
        "soak",
        &[("--net", "synth1"), ("--seconds|--minutes", "100")],
    ),
];

/// The table. The bad files are described in [`FILES`].
#[rustfmt::skip]
const ROWS: &[Row] = &[
    // --cpus, --layout, --emulate and TAOPIPE_LAYOUT: every example's runtime (common::RuntimeArgs),
    // checked through `frame`.
    row("frame", &["--cpus", "0,4095"], &["--cpus 0,4095", "cpu 4095"],
        "`--cpus 0,4095: cpu 4095 is not in this topology (cpus 0-1)`").early(),
    row("frame", &["--cpus", "0-99999999"], &["--cpus 0-99999999", "cpu 99999999"],
        "`cpu 99999999 is above the limit of 65535`").early(),
    row("frame", &["--cpus", "x"], &["--cpus x", "`x`"],
        "`` `x` is not a CPU id or range ``").early(),
    row("frame", &["--cpus", ""], &["--cpus", "empty"],
        "`no usable CPU in an empty CPU restriction`").early(),
    row("frame", &["--cpus", "1,1"], &["--cpus 1,1", "cpu 1 listed twice"],
        "`cpu 1 listed twice`").early(),
    row("frame", &["--layout", "{empty}"], &["{empty}", "empty layout"],
        "`PATH: empty layout, expected a line of CPU ids`").early(),
    row("frame", &["--layout", "{binary}"], &["{binary}", "utf-8"],
        "`cannot read layout file PATH`: not UTF-8").early(),
    row("frame", &["--layout", "{huge}"], &["{huge}", "8589934592 bytes"],
        "`layout file PATH is too large: 8589934592 bytes`, without reading it").early(),
    row("frame", &["--layout", "/dev/zero"], &["/dev/zero", "too large"],
        "`layout file /dev/zero is too large: more than that`, after 16 MiB").early(),
    row("frame", &["--layout", "{dir}"], &["{dir}", "Is a directory"],
        "`cannot read layout file PATH`: a directory").early(),
    row("frame", &["--layout", "{missing}"], &["{missing}", "No such file"],
        "`cannot read layout file PATH`: no such file").early(),
    row("frame", &["--layout", "{layout_absent}"], &["{layout_absent}:2", "cpu 4095"],
        "`PATH:2: cpu 4095 is not usable (offline or not in this process's affinity mask)`").early(),
    row("frame", &["--layout", "{layout_width}"], &["{layout_width}:2", "width 3"],
        "`PATH:2: width 3 for leader worker 0 does not fit 1 workers`").early(),
    row("frame", &[], &["{layout_absent}:2", "cpu 4095"],
        "as `--layout` with the same file").env(&[("TAOPIPE_LAYOUT", "{layout_absent}")]).early(),
    row("frame", &["--emulate", "c0=1e-30"], &["c0=1e-30", "1e-30 is out of range"],
        "`emulation speed 1e-30 is out of range: it must be in [0.001, 1]`").early(),
    row("frame", &["--emulate", "w4095=0.5"], &["--emulate w4095=0.5", "worker 4095"],
        "`emulation names worker 4095, but there are 2 worker(s)`").early(),
    row("frame", &["--emulate", "c7=0.5"], &["--emulate c7=0.5", "cluster 7"],
        "`emulation names cluster 7, but there are 1 cluster(s)`").early(),
    row("frame", &["--emulate", "fast"], &["`fast`"],
        "`` emulation spec item `fast`: expected `performance`, `powersave` or a speed factor … ``").early(),
    row("frame", &["--emulate", "table1:9"], &["table1:9"],
        "`` `table1:9`: Table 1 has governor settings 1 to 4 ``").early(),
    row("frame", &["--emulate", "w0=0.5,w0=0.3"], &["w0=0.5,w0=0.3", "names w0 twice"],
        "`emulation spec names w0 twice`").early(),
    row("frame", &["--emulate", ""], &["--emulate", "empty emulation spec"],
        "`invalid value '' for '--emulate <SPEC>': empty emulation spec`").early(),
    row("frame", &[], &["TAOPIPE_ISA=sse9"],
        "`TAOPIPE_ISA=sse9: unknown ISA; choose one of avx512, avx2, neon, portable`").env(&[("TAOPIPE_ISA", "sse9")]).early(),
    // frame
    row("frame", &["--net", "alexnet2"], &["--net alexnet2"],
        "`--net alexnet2: unknown net; choose one of vgg16, alexnet, …`").early(),
    row("frame", &["--width", "0"], &["--width 0"],
        "`--width 0: this runtime has 2 worker(s)`").early(),
    row("frame", &["--width", "4096"], &["--width 4096"],
        "`--width 4096: this runtime has 2 worker(s)`").early(),
    row("frame", &["--frames", "0"], &["'0' for '--frames"],
        "`invalid value '0' for '--frames <FRAMES>': 0 is not in 1..=4294967295`").early(),
    row("frame", &["--conv", "fast"], &["'fast' for '--conv"],
        "`invalid value 'fast' for '--conv <CONV>'`, with the values possible").early(),
    row("frame", &["--seed", "-1"], &["'-1'"],
        "`unexpected argument '-1' found`").early(),
    row("frame", &["--weights", "{empty}"], &["{empty}", "the file is empty"],
        "`PATH (0 bytes): the file is empty; a safetensors file starts with an 8-byte header length`").early(),
    row("frame", &["--weights", "{binary}"], &["{binary}", "the header claims"],
        "`PATH (4096 bytes): the header claims N bytes but only 4088 follow its 8-byte length`").early(),
    row("frame", &["--weights", "{st_truncated}"], &["{st_truncated}", "truncated"],
        "`PATH (N bytes): the header claims N bytes but only N follow … (a truncated file, …)`").early(),
    row("frame", &["--weights", "{st_huge_tensor}"], &["{st_huge_tensor}", "4398046511104"],
        "`` PATH (N bytes): tensor `conv1.weight` claims bytes 0..4398046511104 of the data, which holds 4 bytes ``").early(),
    row("frame", &["--weights", "{st_f16}"], &["conv1.weight", "F16"],
        "`` layer `conv1`: tensor `conv1.weight` is F16; taopipe reads f32 ``").early(),
    row("frame", &["--weights", "{st_i64}"], &["conv1.weight", "I64"],
        "`` tensor `conv1.weight` is I64; taopipe reads f32 ``").early(),
    row("frame", &["--weights", "{st_shape}"], &["conv1.weight", "shape [1]"],
        "`` tensor `conv1.weight` has shape [1], the layer needs [8, 8, 1, 16] ``").early(),
    row("frame", &["--weights", "{huge}"], &["{huge}", "not a safetensors file"],
        "`PATH is not a safetensors file: its 0-byte header is not a JSON object`, mapped, not read").early(),
    row("frame", &["--weights", "{dir}"], &["{dir}", "is a directory"],
        "`PATH is a directory, not a regular weights file`").early(),
    row("frame", &["--weights", "/dev/zero"], &["/dev/zero", "character device"],
        "`/dev/zero is a character device, not a regular weights file`").early(),
    row("frame", &["--weights", "{missing}"], &["{missing}", "No such file"],
        "`cannot read weights file PATH`: no such file").early(),
    row("frame", &["--input", "{empty}"], &["--input", "{empty}", "the file has 0"],
        "`PATH: the 8x8x8 input takes 2048 bytes (512 little-endian f32 values), the file has 0`").early(),
    row("frame", &["--input", "{binary}"], &["{binary}", "the file has more"],
        "`PATH: the 8x8x8 input takes 2048 bytes (…), the file has more`").early(),
    row("frame", &["--input", "{huge}"], &["{huge}", "the file has more"],
        "the same, after reading 2049 bytes").early(),
    row("frame", &["--input", "/dev/zero"], &["/dev/zero", "the file has more"],
        "the same, after reading 2049 bytes").early(),
    row("frame", &["--input", "{dir}"], &["{dir}", "Is a directory"],
        "`cannot read PATH`: a directory").early(),
    row("frame", &["--onnx", "{missing}"], &["{missing}", "cannot read ONNX file"],
        "`cannot read ONNX file PATH`: no such file").early(),
    row("frame", &["--onnx", "{dir}"], &["{dir}", "not a regular file"],
        "`cannot read ONNX file PATH`: not a regular file").early(),
    row("frame", &["--onnx", "/dev/zero"], &["/dev/zero", "not a regular file"],
        "the same, without reading it").early(),
    row("frame", &["--onnx", "{binary}"], &["{binary}", "is not an ONNX model"],
        "`PATH is not an ONNX model: protobuf: …`").early(),
    row("frame", &["--onnx", "{empty}"], &["{empty}", "the model has no graph"],
        "`PATH is not an ONNX model: the model has no graph`").early(),
    row("frame", &["--onnx", "m.onnx", "--net", "vgg16"], &["'--onnx <FILE>' cannot be used with '--net <NET>'"],
        "`the argument '--onnx <FILE>' cannot be used with '--net <NET>'`").early(),
    row("frame", &["--output", "{in_missing_folder}"], &["{in_missing_folder}", "does not exist"],
        "`PATH: the folder … does not exist`").early(),
    row("frame", &["--output", "{dir}"], &["{dir}", "is a folder"],
        "`PATH is a folder, not a file`").early(),
    row("frame", &["--output", "-"], &["`-`"],
        "`` `-` (stdout) is not accepted here; write `./-` for a file named `-` ``").early(),
    row("frame", &["--trace", "{in_missing_folder}"], &["{in_missing_folder}", "does not exist"],
        "`PATH: the folder … does not exist`").early(),
    row("frame", &["--trace", "t.json", "--check"], &["'--trace <FILE>' cannot be used with '--check'"],
        "`the argument '--trace <FILE>' cannot be used with '--check'`").early(),
    row("frame", &["--json", "{in_missing_folder}"], &["{in_missing_folder}", "does not exist"],
        "`PATH: the folder … does not exist`").early(),
    row("frame", &["--serve"], &["line 2", "`bogus`"],
        "`` --serve: line 2: `bogus` is neither a frame count in 1..=100000 nor `limits` nor `quit` ``, after `ready` and one answer").stdin("2\nbogus\n"),
    row("frame", &["--serve"], &["line 1", "`4294967295`"],
        "the same for `4294967295` (it aborted on a 34 GB allocation)").stdin("4294967295\n"),
    row("frame", &["--serve"], &["line 1", "longer than 64 bytes"],
        "`` --serve: line 1: longer than 64 bytes (starts `0000000000000000`) `` (`< /dev/zero` read until memory ran out)")
        .stdin("00000000000000000000000000000000000000000000000000000000000000000000000000000000"),
    // The tuning driver of vgg16, alexnet, resnet50 and synthetic (common::tune), through
    // `synthetic`.
    row("synthetic", &["--net", "synth9"], &["--net synth9"],
        "`--net synth9: unknown net; choose one of …, random`").early(),
    row("synthetic", &["--onnx", "{binary}"], &["--onnx {binary}", "is not an ONNX model"],
        "`--onnx PATH`: `PATH is not an ONNX model: protobuf: …`").early(),
    row("synthetic", &["--input", "{binary}"], &["--input", "{binary}", "the file has more"],
        "`--input`: `PATH: the 3x32x32 input takes … bytes (…), the file has more`").early(),
    row("synthetic", &["--net", "random", "--depth", "0"], &["--depth 0"],
        "`--net random --depth 0`: `synthetic net: depth must be at least 1`").early(),
    row("synthetic", &["--net", "random", "--depth", "100000"], &["--depth 100000", "more than the limit"],
        "`` synthetic net `random-1` of depth 100000: its f32 weights and activations take 9.2 GiB …, more than the limit of 4.0 GiB ``").early(),
    row("synthetic", &["--tune", "alpha=0"], &["alpha=0"],
        "`` `alpha=0`: α must be a whole number ≥ 1, got `0` ``").early(),
    row("synthetic", &["--tune", "beta=3"], &["beta=3"],
        "`` `beta=3`: expected `alpha=N`, e.g. `alpha=10` ``").early(),
    row("synthetic", &["--search", "annealing"], &["`annealing`"],
        "`` `annealing`: expected one of pipe, exhaustive, random, nohints ``").early(),
    row("synthetic", &["--seeds", "lucky"], &["`lucky`"],
        "`` `lucky`: expected one of paper, speed ``").early(),
    row("synthetic", &["--measure", "guess"], &["`guess`"],
        "`` `guess`: expected one of live, isolated, pipelined ``").early(),
    row("synthetic", &["--reps", "0"], &["'0' for '--reps"],
        "`invalid value '0' for '--reps <REPS>': 0 is not in 1..18446744073709551615`").early(),
    row("synthetic", &["--tolerance", "1.5"], &["`1.5`"],
        "`` `1.5`: expected a fraction in [0, 1), e.g. 0.15 ``").early(),
    row("synthetic", &["--tolerance", "NaN"], &["`NaN`"],
        "`` `NaN`: expected a fraction in [0, 1), e.g. 0.15 ``").early(),
    row("synthetic", &["--retune-threshold", "2"], &["'2' for '--retune-threshold"],
        "`` `2`: expected a fraction in [0, 1), e.g. 0.15 ``").early(),
    row("synthetic", &["--retune-alpha", "0"], &["'0' for '--retune-alpha"],
        "`invalid value '0' for '--retune-alpha <N>': 0 is not in 1..` (was accepted)").early(),
    row("synthetic", &["--retune-window", "0"], &["'0' for '--retune-window"],
        "`invalid value '0' for '--retune-window <RETUNE_WINDOW>'`").early(),
    row("synthetic", &["--emulate-schedule", "0s:w4095=0.5"], &["--emulate-schedule 0s:w4095=0.5", "worker 4095"],
        "`` emulation schedule step `0s:w4095=0.5`: emulation names worker 4095, but there are 2 worker(s) ``, after the setup, before tuning"),
    row("synthetic", &["--emulate-schedule", "5s:none,1s:none"], &["`1s`", "`5s`"],
        "`` emulation schedule times must increase: `1s` comes after `5s` but is not later ``").early(),
    row("synthetic", &["--emulate-schedule", "slow"], &["`slow`"],
        "`` emulation schedule must start with a step `TIME:SPEC` (like `0s:none`), found `slow` ``").early(),
    row("synthetic", &["--emulate-schedule", "1e300s:none"], &["`1e300s`"],
        "`` emulation schedule time `1e300s`: expected a number ≥ 0 of seconds or milliseconds … ``").early(),
    row("synthetic", &["--hog", "4095:0-1"], &["--hog", "CPU 4095"],
        "`` --hog: CPU 4095 cannot be used: `taskset -c 4095` says: … `` (was exit 0, and the hog never ran)").early(),
    row("synthetic", &["--hog", "1:5-2"], &["`1:5-2`"],
        "`` `1:5-2`: START must be ≥ 0 and before STOP ``").early(),
    row("synthetic", &["--hog", "busy"], &["`busy`"],
        "`` `busy`: expected CPU:START-STOP in seconds, e.g. `1:20-40` ``").early(),
    row("synthetic", &["--rate", "0"], &["`0`"],
        "`` `0`: expected a positive number ``").early(),
    row("synthetic", &["--rate", "inf"], &["`inf`"],
        "`` `inf`: expected a positive number ``").early(),
    row("synthetic", &["--rate", "1e-300"], &["`1e-300`"],
        "`` `1e-300`: the lowest rate paced is 1e-6 frames/s `` (a serving thread panicked, and the run exited 0)").early(),
    row("synthetic", &["--seconds", "1e300"], &["`1e300`"],
        "`` `1e300`: too many seconds for a duration `` (panicked)").early(),
    row("synthetic", &["--seconds", "NaN"], &["`NaN`"],
        "`` `NaN`: expected a positive number ``").early(),
    row("synthetic", &["--plots", "{under_file}"], &["{under_file}", "is not a folder"],
        "`PATH: … is not a folder`").early(),
    row("synthetic", &["--max-stages", "0"], &["'0' for '--max-stages"],
        "`invalid value '0' for '--max-stages <MAX_STAGES>': 0 is not in 1..` (was one stage, silently)").early(),
    row("synthetic", &["--frames", "0"], &["'0' for '--frames"],
        "`invalid value '0' for '--frames <FRAMES>'`").early(),
    row("synthetic", &["--json", "{in_missing_folder}"], &["{in_missing_folder}", "does not exist"],
        "`PATH: the folder … does not exist`").early(),
    row("vgg16", &["--json", "{in_missing_folder}"], &["{in_missing_folder}", "does not exist"],
        "the same").early(),
    row("alexnet", &["--json", "{in_missing_folder}"], &["{in_missing_folder}", "does not exist"],
        "the same").early(),
    row("resnet50", &["--json", "{in_missing_folder}"], &["{in_missing_folder}", "does not exist"],
        "the same").early(),
    // pipeline
    row("pipeline", &["--split", "1,1"], &["[1, 1]"],
        "`--split [1, 1] with places [(0, 1), (1, 1)] for synth1 (7 units)`: `covers 2 units, the net has 7`").early(),
    row("pipeline", &["--split", "x,1"], &["--split x,1", "`x`"],
        "`` --split x,1: `x` is not a count ``").early(),
    row("pipeline", &["--places", "0+1,0+1"], &["(0, 1), (0, 1)", "worker 0"],
        "`stages 0 and 1 both use worker 0`").early(),
    row("pipeline", &["--places", "first"], &["--places first", "`first`"],
        "`` --places first: `first` is not `leader+width` ``").early(),
    row("pipeline", &["--mapping", "BBX"], &["`BBX`", "`X` at position 2"],
        "`` mapping `BBX`: `X` at position 2 is not a device … ``").early(),
    row("pipeline", &["--mapping", "BB"], &["`BB`", "7 units"],
        "`` mapping `BB` has 2 characters, but the net has 7 units ``").early(),
    row("pipeline", &["--speeds", "0"], &["--speeds 0", "0 is not a speed factor"],
        "`--speeds 0: 0 is not a speed factor in (0, 1]`").early(),
    row("pipeline", &["--speeds", "NaN"], &["--speeds NaN"],
        "`--speeds NaN: NaN is not a speed factor in (0, 1]`").early(),
    row("pipeline", &["--speeds", "0.5,0.5,0.5"], &["--speeds 0.5,0.5,0.5"],
        "`--speeds 0.5,0.5,0.5 gives 3 factor(s), but the plan has 2 stage(s)`").early(),
    row("pipeline", &["--queue", "0"], &["'0' for '--queue"],
        "`invalid value '0' for '--queue <QUEUE>': 0 is not in 1..=16` (was after the setup)").early(),
    row("pipeline", &["--queue", "18446744073709551615"], &["'18446744073709551615' for '--queue"],
        "the same (panicked: capacity overflow)").early(),
    row("pipeline", &["--mode", "batch"], &["'batch'"],
        "`invalid value 'batch' for '--mode <MODE>'`, with the values possible").early(),
    row("pipeline", &["--json", "{in_missing_folder}"], &["{in_missing_folder}", "does not exist"],
        "`PATH: the folder … does not exist`").early(),
    // compare
    row("compare", &["--planners", "magic"], &["`magic`"],
        "`` unknown planner `magic`; expected one of layer-parallel, pipe-it, … ``").early(),
    row("compare", &["--tune", "alpha=0"], &["alpha=0"],
        "``alpha=0`: α must be a whole number ≥ 1, got `0``").early(),
    row("compare", &["--reps", "0"], &["'0' for '--reps"],
        "`invalid value '0' for '--reps <REPS>'`").early(),
    row("compare", &["--max-stages", "0"], &["'0' for '--max-stages"],
        "`invalid value '0' for '--max-stages <MAX_STAGES>'` (was a failed planner)").early(),
    row("compare", &["--calibration", "{empty}"], &["--calibration {empty}", "EOF"],
        "`--calibration PATH`: `calibration JSON: EOF while parsing a value` (was a failed planner, or accepted when Pipe-it did not run)").early(),
    row("compare", &["--calibration", "{binary}"], &["--calibration {binary}", "UTF-8"],
        "`--calibration PATH`: not UTF-8 text").early(),
    row("compare", &["--calibration", "{huge}"], &["--calibration {huge}", "8589934592 bytes"],
        "`--calibration PATH: the file has 8589934592 bytes, more than the 67108864 read` (was read whole)").early(),
    row("compare", &["--calibration", "/dev/zero"], &["--calibration /dev/zero", "more than"],
        "`--calibration /dev/zero: the file has more than the 67108864 bytes read` (was read without end)").early(),
    row("compare", &["--calibration", "{dir}"], &["--calibration {dir}", "Is a directory"],
        "`--calibration PATH`: a directory").early(),
    row("compare", &["--calibration", "{missing}"], &["--calibration {missing}", "No such file"],
        "`--calibration PATH`: no such file (was accepted when Pipe-it did not run)").early(),
    row("compare", &["--calibration", "{cal_version}"], &["--calibration {cal_version}", "version 7"],
        "`calibration format version 7, this build reads version 1`").early(),
    row("compare", &["--planners", "pipe-it", "--calibration", "{cal_elsewhere}"], &["{cal_elsewhere}", "core types [(5, 1)]"],
        "pipe-it's row `FAILED` with its error, then on stderr `1 of 2 planner(s) failed: pipe-it (errors in the table)` and `pipe-it: the calibration PATH was taken on core types [(5, 1)] …`"),
    row("compare", &["--mapping", "BBX"], &["`BBX`", "`X` at position 2"],
        "`--mapping for synth1 on 1 device(s)`: `` mapping `BBX`: `X` at position 2 is not a device … `` (was ignored unless arm-co-up ran, then failed it)").early(),
    row("compare", &["--json", "{in_missing_folder}"], &["{in_missing_folder}", "does not exist"],
        "`PATH: the folder … does not exist`").early(),
    // calibrate
    row("calibrate", &["--calibration", "{empty}"], &["--calibration {empty}", "EOF"],
        "`--calibration PATH`: `calibration JSON: EOF while parsing a value`").early(),
    row("calibrate", &["--calibration", "{binary}"], &["--calibration {binary}", "UTF-8"],
        "`--calibration PATH`: not UTF-8 text").early(),
    row("calibrate", &["--calibration", "{huge}"], &["--calibration {huge}", "8589934592 bytes"],
        "`--calibration PATH: the file has 8589934592 bytes, more than the 67108864 read` (was read whole)").early(),
    row("calibrate", &["--calibration", "/dev/zero"], &["--calibration /dev/zero", "more than"],
        "`--calibration /dev/zero: the file has more than the 67108864 bytes read` (was read without end)").early(),
    row("calibrate", &["--calibration", "{dir}"], &["--calibration {dir}", "Is a directory"],
        "`--calibration PATH`: a directory").early(),
    row("calibrate", &["--calibration", "{missing}"], &["--calibration {missing}", "No such file"],
        "`--calibration PATH`: no such file").early(),
    row("calibrate", &["--calibration", "{cal_version}"], &["--calibration {cal_version}", "version 7"],
        "`calibration format version 7, this build reads version 1`").early(),
    row("calibrate", &["--calibration", "{cal_elsewhere}"], &["--calibration {cal_elsewhere}", "[(5, 1)]"],
        "`--calibration PATH: taken on core types [(5, 1)] (leader, cores), this runtime has [(0, 1)]`"),
    row("calibrate", &["--calibration", "{cal_bad_sample}"], &["--calibration {cal_bad_sample}", "sample 0", "-1 ms"],
        "`--calibration PATH`: `calibration sample 0: time -1 ms (needs a finite time > 0)`"),
    row("calibrate", &["--report", "--nets", "vgg16,vgg19"], &["--nets vgg16,vgg19", "--net vgg19"],
        "`--nets vgg16,vgg19`: `--net vgg19: unknown net; …` (was after the calibration grid)").early(),
    row("calibrate", &["--reps", "0"], &["'0' for '--reps"],
        "`invalid value '0' for '--reps <REPS>'`").early(),
    row("calibrate", &["--out", "{in_missing_folder}"], &["{in_missing_folder}", "does not exist"],
        "`PATH: the folder … does not exist`").early(),
    row("calibrate", &["--out", "-"], &["`-`"],
        "`` `-` (stdout) is not accepted here … ``").early(),
    row("calibrate", &["--json", "{in_missing_folder}"], &["{in_missing_folder}", "does not exist"],
        "`PATH: the folder … does not exist`").early(),
    // runtime_bench
    row("runtime_bench", &["--workers", "0"], &["--workers 0", "at least one worker"],
        "`--workers 0`: `invalid virtual topology symmetric(0): needs at least one worker`").early(),
    row("runtime_bench", &["--workers", "100000"], &["--workers 100000", "more than 1024 workers"],
        "`--workers 100000`: `… more than 1024 workers`").early(),
    row("runtime_bench", &["--workers", "2", "--cpus", "0"], &["'--workers <WORKERS>' cannot be used with '--cpus <LIST>'"],
        "`the argument '--workers <WORKERS>' cannot be used with '--cpus <LIST>'`").early(),
    row("runtime_bench", &["--workers", "2", "--emulate", "w4095=0.5"], &["--emulate w4095=0.5", "worker 4095"],
        "`emulation names worker 4095, but there are 2 worker(s)`").early(),
    row("runtime_bench", &["--tasks", "0"], &["'0' for '--tasks"],
        "`invalid value '0' for '--tasks <TASKS>': 0 is not in 1..=10000000`").early(),
    row("runtime_bench", &["--tasks", "100000000000"], &["'100000000000' for '--tasks"],
        "the same (aborted on a 400 GB allocation)").early(),
    row("runtime_bench", &["--reps", "18446744073709551615"], &["'18446744073709551615' for '--reps"],
        "`… 18446744073709551615 is not in 1..=10000` (panicked: capacity overflow)").early(),
    row("runtime_bench", &["--warmup", "18446744073709551615"], &["'18446744073709551615' for '--warmup"],
        "`… is not in 0..=10000` (panicked: index out of bounds)").early(),
    row("runtime_bench", &["--fj-iters", "0"], &["'0' for '--fj-iters"],
        "`invalid value '0' for '--fj-iters <FJ_ITERS>'`").early(),
    row("runtime_bench", &["--json", "{in_missing_folder}"], &["{in_missing_folder}", "does not exist"],
        "`PATH: the folder … does not exist`").early(),
    // runtime_demo
    row("runtime_demo", &["--slow", "w4095=0.5"], &["--slow w4095=0.5", "worker 4095"],
        "`--slow w4095=0.5`: `emulation names worker 4095, but there are 2 worker(s)`").early(),
    row("runtime_demo", &["--slow", "turbo"], &["`turbo`"],
        "`` emulation spec item `turbo`: expected … ``").early(),
    row("runtime_demo", &["--explore", "2"], &["--explore 2"],
        "`--explore 2 is not a probability in [0, 1]`").early(),
    row("runtime_demo", &["--explore", "NaN"], &["--explore NaN"],
        "`--explore NaN is not a probability in [0, 1]`").early(),
    row("runtime_demo", &["--tasks", "0"], &["'0' for '--tasks"],
        "`invalid value '0' for '--tasks <TASKS>': 0 is not in 1..=1000000`").early(),
    row("runtime_demo", &["--tasks", "4000000000"], &["'4000000000' for '--tasks"],
        "the same (aborted on a 32 GB allocation)").early(),
    row("runtime_demo", &["--elements", "0"], &["'0' for '--elements"],
        "`invalid value '0' for '--elements <ELEMENTS>'`").early(),
    row("runtime_demo", &["--json", "{in_missing_folder}"], &["{in_missing_folder}", "does not exist"],
        "`PATH: the folder … does not exist`").early(),
    // soak
    row("soak", &["--emulate", "w1=0.5"], &["--emulate"],
        "`--emulate does not apply: a soak cycles through --speeds`").early(),
    row("soak", &["--net", "synth9"], &["--net synth9"],
        "`--net synth9: unknown net; …`").early(),
    row("soak", &["--minutes", "0"], &["'0' for '--minutes"],
        "`` invalid value '0' for '--minutes <M>': `0`: expected a positive number ``").early(),
    row("soak", &["--seconds", "1e300"], &["--seconds 1e300", "not a duration"],
        "`--seconds 1e300: not a duration` (was the value's 301 digits)").early(),
    row("soak", &["--minutes", "1e300"], &["--minutes 1e300", "not a duration"],
        "`--minutes 1e300: not a duration` (was 60 times the value, in 302 digits)").early(),
    row("soak", &["--switch-every", "1e-300"], &["--switch-every 1e-300"],
        "`--switch-every 1e-300: shorter than a nanosecond` (was `switch_every must be longer than zero`)").early(),
    row("soak", &["--interval", "NaN"], &["'NaN' for '--interval"],
        "`` invalid value 'NaN' for '--interval <S>': `NaN`: expected a positive number ``").early(),
    row("soak", &["--seconds", "1000000000", "--speeds-every", "0.000001"], &["every 1µs", "more than the 1000000"],
        "`soak of 1000000000s: a speed setting every 1µs makes 1000000000000000 steps, more than the 1000000 a soak may have` (aborted on a 64 PB allocation)").early(),
    row("soak", &["--headroom", "NaN"], &["headroom NaN"],
        "`soak: RSS headroom NaN MiB: expected a number ≥ 0`").early(),
    row("soak", &["--rate", "1e-300"], &["`1e-300`"],
        "`` `1e-300`: the lowest rate paced is 1e-6 frames/s `` (threads panicked, the run went on)").early(),
    row("soak", &["--splits", "x;4,3"], &["--splits x;4,3", "`x`"],
        "`` --splits x;4,3: `x` is not a list of unit counts ``").early(),
    row("soak", &["--splits", "1,1"], &["[1, 1]"],
        "`composition [1, 1] covers 2 units, the net has 7`").early(),
    row("soak", &["--speeds", "turbo;none"], &["--speeds turbo;none", "`turbo`"],
        "`` --speeds turbo;none: `turbo` ``: `` emulation spec item `turbo`: expected … ``").early(),
    row("soak", &["--speeds", "none;w4095=0.5"], &["worker 4095"],
        "`emulation names worker 4095, but there are 2 worker(s)` (was after the setup)").early(),
    row("soak", &["--plots", "{under_file}"], &["{under_file}", "is not a folder"],
        "`PATH: … is not a folder`").early(),
    row("soak", &["--json", "{in_missing_folder}"], &["{in_missing_folder}", "does not exist"],
        "`PATH: the folder … does not exist`").early(),
];

/// The bad files: `{name}` in a row, what the README calls it, and its contents.
const FILES: &[(&str, &str, Contents)] = &[
    ("empty", "an empty file", Contents::Bytes(b"")),
    ("binary", "4 KiB of random bytes", Contents::Random(4096)),
    ("huge", "an 8 GiB sparse file", Contents::Sparse(8 << 30)),
    ("dir", "a folder", Contents::Folder),
    ("missing", "a missing file", Contents::Missing),
    (
        "in_missing_folder",
        "a file in a missing folder",
        Contents::InMissingFolder,
    ),
    ("under_file", "a folder under a file", Contents::UnderFile),
    (
        "layout_absent",
        "a layout naming CPU 4095",
        Contents::Bytes(b"# workers on cpus 0 and 4095\n0 4095\n1 2\n1\n"),
    ),
    (
        "layout_width",
        "a layout giving one CPU width 3",
        Contents::Bytes(b"0\n3\n"),
    ),
    (
        "st_truncated",
        "a safetensors file cut short",
        Contents::Safetensors {
            header: r#"{"conv1.weight":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
            data: 8,
            cut: 40,
        },
    ),
    (
        "st_huge_tensor",
        "safetensors whose header claims a [2^40] tensor",
        Contents::Safetensors {
            header: r#"{"conv1.weight":{"dtype":"F32","shape":[1099511627776],"data_offsets":[0,4398046511104]}}"#,
            data: 4,
            cut: usize::MAX,
        },
    ),
    (
        "st_f16",
        "safetensors with an F16 tensor",
        Contents::Safetensors {
            header: r#"{"conv1.weight":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}"#,
            data: 4,
            cut: usize::MAX,
        },
    ),
    (
        "st_i64",
        "safetensors with an I64 tensor",
        Contents::Safetensors {
            header: r#"{"conv1.weight":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}"#,
            data: 8,
            cut: usize::MAX,
        },
    ),
    (
        "st_shape",
        "safetensors with a mis-shaped tensor",
        Contents::Safetensors {
            header: r#"{"conv1.weight":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#,
            data: 4,
            cut: usize::MAX,
        },
    ),
    (
        "cal_version",
        "a calibration of format version 7",
        Contents::Bytes(
            br#"{"version": 7, "machine": {"description": "x", "workers": 1,
                "core_types": [{"leader": 0, "cores": 1, "speed": 1.0, "cluster": 0}]},
                "samples": []}"#,
        ),
    ),
    (
        "cal_elsewhere",
        "a calibration of other core types",
        Contents::Bytes(
            br#"{"version": 1, "machine": {"description": "x", "workers": 6,
                "core_types": [{"leader": 5, "cores": 1, "speed": 1.0, "cluster": 0}]},
                "samples": []}"#,
        ),
    ),
    (
        "cal_bad_sample",
        "a calibration with a sample of -1 ms",
        Contents::Bytes(
            br#"{"version": 1, "machine": {"description": "x", "workers": 1,
                "core_types": [{"leader": 0, "cores": 1, "speed": 1.0, "cluster": 0}]},
                "samples": [{"name": "c", "desc": {"op": "gemm", "n": 1, "k": 1, "m": 1,
                "iters": 1}, "core_type": 0, "width": 1, "ms": -1.0}]}"#,
        ),
    ),
];

/// What a bad file holds.
#[derive(Debug, Clone, Copy)]
enum Contents {
    /// These bytes.
    Bytes(&'static [u8]),
    /// This many seeded random bytes, the first 0xFF (never UTF-8).
    Random(usize),
    /// A sparse file of this many bytes, never written.
    Sparse(u64),
    /// A folder.
    Folder,
    /// Nothing: the path does not exist.
    Missing,
    /// A path in a folder that does not exist.
    InMissingFolder,
    /// A path below a regular file.
    UnderFile,
    /// A safetensors file: the 8-byte header length, `header`, `data` zero bytes, the
    /// whole cut to `cut` bytes.
    Safetensors {
        header: &'static str,
        data: usize,
        cut: usize,
    },
}

/// The bad files of [`FILES`], made in a temporary folder removed on drop.
struct BadFiles {
    _dir: tempfile::TempDir,
    paths: BTreeMap<&'static str, String>,
}

impl BadFiles {
    fn new() -> BadFiles {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut paths = BTreeMap::new();
        for &(name, _, contents) in FILES {
            let path = dir.path().join(name);
            let path = match contents {
                Contents::Bytes(bytes) => write(&path, bytes),
                Contents::Random(len) => write(&path, &random_bytes(len)),
                Contents::Sparse(len) => {
                    std::fs::File::create(&path)
                        .and_then(|f| f.set_len(len))
                        .expect("a sparse file");
                    path
                }
                Contents::Folder => {
                    std::fs::create_dir(&path).expect("a folder");
                    path
                }
                Contents::Missing => path,
                Contents::InMissingFolder => path.join("report.json"),
                Contents::UnderFile => write(&path, b"a file").join("pictures"),
                Contents::Safetensors { header, data, cut } => {
                    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
                    bytes.extend(header.as_bytes());
                    bytes.resize(bytes.len() + data, 0);
                    bytes.truncate(cut);
                    write(&path, &bytes)
                }
            };
            let path = path.to_str().expect("a UTF-8 temp dir").to_string();
            paths.insert(name, path);
        }
        BadFiles { _dir: dir, paths }
    }

    /// `text` with every `{name}` of [`FILES`] replaced by its path.
    fn fill(&self, text: &str) -> String {
        self.paths.iter().fold(text.to_string(), |t, (name, path)| {
            t.replace(&format!("{{{name}}}"), path)
        })
    }
}

fn write(path: &Path, bytes: &[u8]) -> PathBuf {
    std::fs::write(path, bytes).expect("a bad file");
    path.to_path_buf()
}

/// `len` bytes of a seeded xorshift, the first 0xFF so that they are never UTF-8.
fn random_bytes(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut bytes: Vec<u8> = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    if let Some(first) = bytes.first_mut() {
        *first = 0xFF;
    }
    bytes
}

/// The arguments a row runs with: its own, then [`BASE`]'s for the flags it does not give.
fn arguments(row: &Row, files: &BadFiles) -> Vec<String> {
    let mut args: Vec<String> = row.args.iter().map(|a| files.fill(a)).collect();
    let base = BASE
        .iter()
        .find(|(example, _)| *example == row.example)
        .map_or(&[][..], |(_, base)| *base);
    for (flags, value) in base {
        if !flags.split('|').any(|flag| row.args.contains(&flag)) {
            let flag = flags.split('|').next().unwrap_or(flags);
            args.extend([flag.to_string(), value.to_string()]);
        }
    }
    args
}

/// What a run left.
struct Run {
    /// `None`: killed at [`ROW_TIMEOUT`].
    status: Option<ExitStatus>,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Runs `example` with `args`, `env` and `stdin`, killing it at [`ROW_TIMEOUT`]; backtraces
/// off and no inherited `TAOPIPE_*` settings, so stderr holds just the error.
fn run(example: &str, args: &[String], env: &[(&str, String)], stdin: &str) -> Run {
    let started = Instant::now();
    let mut child = Command::new(example_bin(example))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .env("RUST_LIB_BACKTRACE", "0")
        .env_remove("TAOPIPE_LAYOUT")
        .env_remove("TAOPIPE_ISA")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {example}: {e}"));
    let mut input = child.stdin.take().expect("stdin");
    // A child that exits before reading its stdin closes the pipe: not this test's concern.
    let _ = input.write_all(stdin.as_bytes());
    drop(input);
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            text(&bytes)
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("stderr")));
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for the child") {
            break Some(status);
        }
        if started.elapsed() > ROW_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let took = started.elapsed();
    Run {
        status,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
        took,
    }
}

/// Runs `row` and checks it: `Err` says how it failed the checks.
fn check(row: &Row, files: &BadFiles) -> Result<Duration, String> {
    let args = arguments(row, files);
    let env: Vec<(&str, String)> = row.env.iter().map(|(k, v)| (*k, files.fill(v))).collect();
    let out = run(row.example, &args, &env, row.stdin);
    let status = out
        .status
        .ok_or_else(|| format!("still running after {ROW_TIMEOUT:?}: killed"))?;
    let stderr = &out.stderr;
    match status.code() {
        None => return Err(format!("killed by a signal ({status}): {stderr}")),
        Some(0) => return Err(format!("accepted (exit 0): {stderr}")),
        Some(101) => return Err(format!("panicked (exit 101): {stderr}")),
        Some(_) if stderr.contains("panicked") => return Err(format!("panicked: {stderr}")),
        Some(_) => {}
    }
    for name in row.names.iter().map(|n| files.fill(n)) {
        if !stderr.contains(&name) {
            return Err(format!("stderr does not name `{name}`: {stderr}"));
        }
    }
    if row.early && !out.stdout.is_empty() {
        return Err(format!(
            "worked before refusing: stdout {:?}; stderr {stderr}",
            out.stdout
        ));
    }
    Ok(out.took)
}

#[test]
fn every_bad_input_fails_naming_it_without_a_panic() {
    let files = BadFiles::new();
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4));
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(row) = ROWS.get(i) else { break };
                    let result = check(row, &files);
                    results.lock().expect("results").push((i, result));
                }
            });
        }
    });
    let mut results = results.into_inner().expect("results");
    results.sort_by_key(|(i, _)| *i);
    let describe = |i: usize| {
        let row = &ROWS[i];
        let env: Vec<String> = row.env.iter().map(|(k, v)| format!("{k}={v} ")).collect();
        format!(
            "row {i}: {}{} {}",
            env.concat(),
            row.example,
            row.args.join(" ")
        )
    };
    let failures: Vec<String> = results
        .iter()
        .filter_map(|(i, r)| {
            r.as_ref()
                .err()
                .map(|e| format!("{}\n    {e}", describe(*i)))
        })
        .collect();
    let slowest = results
        .iter()
        .filter_map(|(i, r)| Some((*i, *r.as_ref().ok()?)))
        .max_by_key(|(_, took)| *took);
    if let Some((i, took)) = slowest {
        eprintln!(
            "{} rows in {:.1} s on {threads} threads; slowest {:.2} s, {}",
            ROWS.len(),
            started.elapsed().as_secs_f64(),
            took.as_secs_f64(),
            describe(i)
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        ROWS.len(),
        failures.join("\n")
    );
}

/// The markdown table of [`ROWS`] that the README shows.
fn readme_table() -> String {
    let mut table = String::from("| example | bad input | what the user sees |\n|---|---|---|\n");
    for row in ROWS {
        let mut words: Vec<String> = row.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        words.extend(row.args.iter().map(|a| a.to_string()));
        let mut input = shown(&words);
        if !row.stdin.is_empty() {
            input += &format!(" with stdin {}", code(&row.stdin.replace('\n', "⏎")));
        }
        let when = if row.early { "; before any work" } else { "" };
        table += &format!(
            "| {} | {} | {}{when} |\n",
            row.example,
            input.trim(),
            row.sees.replace('|', "\\|")
        );
    }
    table
}

/// Command-line words as the README shows them: runs of literal words as one code span,
/// each bad file (`{name}`, also after `VAR=`) by its description in italics.
fn shown(words: &[String]) -> String {
    let file = |word: &str| {
        FILES
            .iter()
            .find(|(name, _, _)| word == format!("{{{name}}}"))
            .map(|(_, what, _)| *what)
    };
    let (mut out, mut literal) = (String::new(), Vec::new());
    for word in words {
        let (text, bad) = match word.split_once('=') {
            Some((var, value)) if file(value).is_some() => (Some(format!("{var}=")), file(value)),
            _ => match file(word) {
                Some(what) => (None, Some(what)),
                None if word.is_empty() => (Some("''".to_string()), None),
                None => (Some(word.clone()), None),
            },
        };
        literal.extend(text);
        if let Some(what) = bad {
            out += &format!("{} *{what}* ", code(&literal.join(" ")));
            literal.clear();
        }
    }
    if !literal.is_empty() {
        out += &code(&literal.join(" "));
    }
    out
}

/// `text` as inline code that may hold backticks; nothing for an empty text.
fn code(text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    let text = text.replace('|', "\\|");
    if text.contains('`') {
        format!("`` {text} ``")
    } else {
        format!("`{text}`")
    }
}

const TABLE_START: &str = "<!-- bad-input table: tests/bad_input.rs -->";
const TABLE_END: &str = "<!-- end of the bad-input table -->";

#[test]
fn the_readme_shows_the_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = std::fs::read_to_string(&path).expect("README.md");
    let (start, end) = match (readme.find(TABLE_START), readme.find(TABLE_END)) {
        (Some(s), Some(e)) if s < e => (s + TABLE_START.len(), e),
        _ => panic!("README.md lacks the markers {TABLE_START} … {TABLE_END}"),
    };
    let table = format!("\n{}", readme_table());
    if readme[start..end] == table {
        return;
    }
    if std::env::var_os("TAOPIPE_BLESS").is_some() {
        let updated = format!("{}{table}{}", &readme[..start], &readme[end..]);
        std::fs::write(&path, updated).expect("writing README.md");
        return;
    }
    panic!(
        "README.md's bad-input table differs from tests/bad_input.rs's ROWS; \
         run `TAOPIPE_BLESS=1 cargo test --release --test bad_input` to rewrite it:\n{table}"
    );
}
