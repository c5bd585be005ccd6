#!/usr/bin/env python3
"""taopipe against ONNX Runtime: same machine, same weights, same input.

For each net: build (or reuse from the cache) torchvision-like weights as a safetensors
file and an ONNX model holding the same arrays (``models.py``), check that both engines
compute the same output, then time them interleaved in one run (for each round, for each
thread count: ONNX Runtime, then taopipe) and print a Markdown table of the medians.

taopipe runs as one long-lived ``frame --serve`` process per width, ONNX Runtime as one
``InferenceSession`` per thread count, so neither pays start-up per measurement. Before
the first net's rounds each width's ``frame`` also measures the machine's limits (FMA peak
and bandwidth on one worker and on its workers at once), printed under the table. Progress
goes to stderr, the table to stdout. ``run.sh`` makes the virtual environment and calls
this file; ``run.sh --help`` lists the flags.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import queue
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
REQUIREMENTS = HERE / "requirements.txt"
DEFAULT_CACHE = HERE / ".cache"
# Every net models.py builds (its NETS; test_peers.py checks they agree), and the default
# run: the nets taopipe's `frame` runs today. The others of issue 11 (depthwise and grouped
# convs, ReLU6, leaky ReLU, concat, ceil-mode pools) need its kernels for them.
NETS = ("vgg16", "resnet50", "alexnet", "mobilenet_v2", "mobilenet_v1", "squeezenet1_1",
        "googlenet", "yolov2_tiny")
DEFAULT_NETS = ("vgg16", "resnet50", "alexnet")
TOP = 5
# Pause between two timed blocks, so that the threads of the engine that just ran have
# stopped spinning before the other one starts. ORT's intra-op threads keep a core busy for
# longer than 20 ms after a run: with a 20 ms pause, taopipe's 2-worker AlexNet frames
# took 23.2 ms (median of 18) on a 2-core machine; with 0.3 s, 17.0 ms, as when it runs
# alone; ORT's own times did not change (18.8 and 17.4 ms).
SETTLE_S = 0.3

STARTED = time.monotonic()


class BenchError(Exception):
    """A failure to report in one message and exit non-zero."""


def log(message: str) -> None:
    print(f"[peers {time.monotonic() - STARTED:6.1f}s] {message}", file=sys.stderr, flush=True)


def csv_of(kind, allowed=None):
    def parse(text):
        items = [s.strip() for s in text.split(",") if s.strip()]
        if not items:
            raise argparse.ArgumentTypeError("empty list")
        out = []
        for s in items:
            try:
                v = kind(s)
            except ValueError:
                raise argparse.ArgumentTypeError(f"`{s}` is not a {kind.__name__}") from None
            if allowed is not None and v not in allowed:
                raise argparse.ArgumentTypeError(f"`{s}`: choose from {', '.join(allowed)}")
            if kind is int and v < 1:
                raise argparse.ArgumentTypeError(f"`{s}`: must be at least 1")
            if v in out:
                raise argparse.ArgumentTypeError(f"`{s}` given twice")
            out.append(v)
        return out
    return parse


def positive(text):
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return v


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="bench/peers/run.sh",
        description=(
            "Benchmark taopipe against ONNX Runtime (CPUExecutionProvider) on VGG16, ResNet50 "
            "and AlexNet (or MobileNetV2, MobileNet V1, SqueezeNet 1.1, GoogLeNet, Tiny "
            "YOLOv2) with the same torchvision-like weights and the same input: check that "
            "both compute the same output, time them interleaved at each thread count, print a "
            "Markdown table (stdout; progress on stderr)."),
        epilog=(
            "run.sh makes bench/peers/.venv with requirements.txt unless --system-python (or "
            "PEERS_SYSTEM_PYTHON=1) is given; PYTHON names the interpreter (default python3). "
            "Models and the input are cached in bench/peers/.cache/ (or --cache)."),
    )
    p.add_argument("--nets", type=csv_of(str, NETS), default=",".join(DEFAULT_NETS),
                   metavar="LIST",
                   help=f"nets to run, comma-separated, of {', '.join(NETS)} "
                        f"(default: %(default)s)")
    p.add_argument("--threads", type=csv_of(int), default="1,2", metavar="LIST",
                   help="thread counts, comma-separated: ONNX Runtime's intra-op threads and "
                        "taopipe's workers per layer (default: %(default)s)")
    p.add_argument("--rounds", type=positive, default=7,
                   help="rounds; each times every engine at every thread count once "
                        "(default: %(default)s)")
    p.add_argument("--frames", type=positive, default=3,
                   help="frames timed per engine and thread count in each round "
                        "(default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="seed of the weights and the input (default: %(default)s)")
    p.add_argument("--tolerance", type=float, default=1e-4,
                   metavar="REL",
                   help="largest allowed max|taopipe - ORT| / max|ORT| (default: %(default)g)")
    p.add_argument("--json", metavar="PATH", help="also write a JSON report here (- for stdout)")
    p.add_argument("--taopipe-bin", metavar="PATH",
                   help="a prebuilt taopipe `frame` example binary; implies --no-build")
    p.add_argument("--no-build", action="store_true",
                   help="never call cargo: use --taopipe-bin, else the binary a previous build left "
                        "in $CARGO_TARGET_DIR (default target/)/release/examples/frame")
    p.add_argument("--system-python", action="store_true",
                   help="(run.sh) use the current interpreter's packages, make no venv")
    p.add_argument("--cache", metavar="DIR", default=str(DEFAULT_CACHE),
                   help="where models and the input are kept (default: bench/peers/.cache)")
    p.add_argument("--layers", action="store_true",
                   help="instead of whole frames, compare the engines layer by layer: ORT's "
                        "profiler against `frame --profile`, interleaved rounds, the layers "
                        "paired by kind and FLOPs (layers.py says how); one table per net "
                        "and thread count")
    p.add_argument("--from-onnx", action="store_true",
                   help="taopipe imports the very ONNX file ONNX Runtime runs (`frame --onnx`) "
                        "instead of the safetensors file of the same weights under the zoo net")
    p.add_argument("--timeout", type=positive, default=600, metavar="S",
                   help="seconds to wait for one answer of a taopipe process (default: %(default)s)")
    return p.parse_args(argv)


# --- the machine ------------------------------------------------------------------------

def cpu_info() -> dict:
    model, flags = None, set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "model name" and model is None:
                model = value.strip()
            elif key == "flags" and not flags:
                flags = set(value.split())
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    features = [f for f in ("avx2", "fma", "avx512f", "avx512_vnni", "amx_tile") if f in flags]
    if not flags and platform.machine() in ("aarch64", "arm64"):
        features = ["neon"]
    return {
        "model": model or platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "usable_cpus": usable,
        "arch": platform.machine(),
        "os": f"{platform.system()} {platform.release()}",
        "features": features,
    }


def load_average() -> float | None:
    """The 1-minute load average: other work on the machine makes timings noisy."""
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def pinned_versions() -> dict:
    pins = {}
    for line in REQUIREMENTS.read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[name.strip().lower()] = version.strip()
    return pins


def import_packages() -> tuple:
    """numpy and onnxruntime (needed for every run), with a clear message when missing."""
    missing = []
    try:
        import numpy
    except ImportError:
        missing.append("numpy")
    try:
        import onnxruntime
    except ImportError:
        missing.append("onnxruntime")
    if missing:
        raise BenchError(
            f"{sys.executable} cannot import {', '.join(missing)}: run bench/peers/run.sh "
            f"without --system-python (it makes a venv), or `pip install -r {REQUIREMENTS}`")
    pins = pinned_versions()
    for name, module in (("numpy", numpy), ("onnxruntime", onnxruntime)):
        if pins.get(name) and module.__version__ != pins[name]:
            log(f"note: {name} {module.__version__} here, requirements.txt pins {pins[name]}")
    return numpy, onnxruntime


# --- taopipe -----------------------------------------------------------------------------

def child_env() -> dict:
    env = dict(os.environ)
    env.setdefault("RUST_LIB_BACKTRACE", "0")  # one-line errors from anyhow
    return env


def taopipe_binary(args) -> tuple[Path, str]:
    """The `frame` binary and a description of where it came from."""
    if args.taopipe_bin:
        path = Path(args.taopipe_bin).expanduser()
        if not path.is_file() or not os.access(path, os.X_OK):
            raise BenchError(f"--taopipe-bin {path}: not an executable file")
        return path.resolve(), f"prebuilt {path}"
    if args.no_build:
        target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
        path = target / "release" / "examples" / "frame"
        if not path.is_file():
            raise BenchError(f"--no-build: {path} does not exist; build it with `cargo build "
                             f"--release --example frame`, or name a binary with --taopipe-bin")
        return path, f"{path} (not rebuilt)"
    cargo = shutil.which("cargo")
    if cargo is None:
        raise BenchError("cargo not found: install Rust, or pass --taopipe-bin PATH "
                         "(a prebuilt `frame` example)")
    log("taopipe: cargo build --release --example frame")
    proc = subprocess.Popen(
        [cargo, "build", "--release", "--example", "frame",
         "--message-format=json-render-diagnostics"],
        cwd=REPO, stdout=subprocess.PIPE, text=True)
    executable = None
    for line in proc.stdout:
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if (message.get("reason") == "compiler-artifact"
                and message.get("target", {}).get("name") == "frame"
                and message.get("executable")):
            executable = message["executable"]
    if proc.wait() != 0 or executable is None:
        raise BenchError("cargo build --release --example frame failed (see above)")
    return Path(executable), "built by cargo"


def frame_version(binary) -> str | None:
    """`frame --version`, e.g. `frame 0.1.0`."""
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                             timeout=30, env=child_env())
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() or None


def git_revision() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


# The kernels' instruction set as taopipe prints it (`isa: avx2`, also `..., isa: avx2+fma`).
ISA = re.compile(r"\bisa\s*[:=]\s*([^,;()]+)", re.IGNORECASE)


def find_isa(lines) -> str | None:
    for line in lines:
        m = ISA.search(line)
        if m and m.group(1).strip():
            return m.group(1).strip()
    return None


def tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def model_args(net, weights):
    """`frame`'s arguments for the net: a zoo net with a safetensors file, or (`weights` an
    ``.onnx`` path) the ONNX model itself."""
    if Path(weights).suffix == ".onnx":
        return ["--onnx", str(weights)]
    return ["--net", net, "--weights", str(weights)]


def taopipe_once(binary, net, weights, input_path, output_path, width, timeout):
    """One plain `frame` run (warm-up + 1 frame) writing its output; returns its stdout."""
    cmd = [str(binary), *model_args(net, weights), "--input", str(input_path),
           "--output", str(output_path), "--width", str(width), "--frames", "1"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                             env=child_env(), stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise BenchError(f"{net}: taopipe did not finish one frame in {timeout} s") from None
    if out.returncode != 0:
        raise BenchError(f"{net}: taopipe failed ({' '.join(cmd)}):\n{out.stderr.strip()}")
    return out.stdout.splitlines() + out.stderr.splitlines()


class TaopipeServer:
    """One `frame --serve` process: build, warm-up, `ready`; then `N` → N frame times."""

    def __init__(self, binary, net, weights, input_path, output_path, width, timeout, workdir):
        self.name = f"taopipe {net} w={width}"
        self.timeout = timeout
        self.output_path = output_path
        self.stderr_path = Path(workdir) / f"{net}-w{width}.stderr"
        self.stderr = open(self.stderr_path, "w")
        cmd = [str(binary), *model_args(net, weights), "--input", str(input_path),
               "--output", str(output_path), "--width", str(width), "--serve"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, text=True, bufsize=1, env=child_env())
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.header = []
        while (line := self._next()) != "ready":
            self.header.append(line)

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def _fail(self, why):
        self.kill()
        raise BenchError(f"{self.name}: {why}\n{tail(self.stderr_path)}")

    def _next(self) -> str:
        try:
            line = self.lines.get(timeout=self.timeout)
        except queue.Empty:
            self._fail(f"no answer in {self.timeout} s")
        if line is None:
            self._fail(f"exited with status {self.proc.wait()}")
        return line

    def _ask(self, command: str, key: str):
        """Sends one `--serve` command; returns the `key` of its one-line JSON answer."""
        try:
            self.proc.stdin.write(f"{command}\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            self._fail(f"exited with status {self.proc.wait()}")
        line = self._next()
        try:
            return json.loads(line)[key]
        except (json.JSONDecodeError, KeyError, TypeError):
            self._fail(f"answered `{line}` instead of {{\"{key}\": [...]}}")

    def frames(self, n: int) -> list[float]:
        ms = self._ask(str(n), "ms")
        if len(ms) != n:
            self._fail(f"answered {len(ms)} times for {n} frames")
        return [float(m) for m in ms]

    def limits(self) -> list[dict]:
        """`limits`: the machine's FMA peak and bandwidth on one worker, then on this
        server's workers at once, measured now."""
        limits = self._ask("limits", "limits")
        if not all(l.get("fma_gflops", 0) > 0 and l.get("read_gbs", 0) > 0 for l in limits):
            self._fail(f"answered limits that are not all positive: {limits}")
        return limits

    def close(self):
        """`quit`, and wait for it to write its output."""
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            rc = self.proc.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self._fail(f"did not exit in {self.timeout} s after `quit`")
        self.stderr.close()
        if rc != 0:
            raise BenchError(f"{self.name}: exited with status {rc}\n{tail(self.stderr_path)}")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if not self.stderr.closed:
            self.stderr.close()


# --- ONNX Runtime ------------------------------------------------------------------------

def ort_session(ort, path, threads, profile_prefix=None):
    """The session every measurement uses; with `profile_prefix`, ORT's profiler on, its
    trace written under that prefix (`--layers`)."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if profile_prefix is not None:
        so.enable_profiling = True
        so.profile_file_prefix = str(profile_prefix)
    return ort.InferenceSession(str(path), sess_options=so, providers=["CPUExecutionProvider"])


# --- agreement ---------------------------------------------------------------------------

def agreement(np, ort_out, tao_out) -> dict:
    ort_out = np.asarray(ort_out, dtype=np.float64).ravel()
    tao_out = np.asarray(tao_out, dtype=np.float64).ravel()
    if ort_out.shape != tao_out.shape:
        return {"shape_ort": list(ort_out.shape), "shape_taopipe": list(tao_out.shape),
                "rel_diff": float("inf"), "top5_same": False}
    scale = float(np.abs(ort_out).max())
    diff = float(np.abs(tao_out - ort_out).max())
    order = np.argsort(-ort_out, kind="stable")
    top_ort = order[:TOP].tolist()
    top_tao = np.argsort(-tao_out, kind="stable")[:TOP].tolist()
    # How far apart ORT's TOP-th and next class are, in units of max|ORT|: a near tie
    # explains a top-5 difference.
    margin = float(ort_out[order[TOP - 1]] - ort_out[order[TOP]]) / scale if scale else 0.0
    return {
        "max_abs_diff": diff,
        "max_abs_ort": scale,
        "rel_diff": diff / scale if scale else (0.0 if diff == 0 else float("inf")),
        "top5_ort": top_ort,
        "top5_taopipe": top_tao,
        "top5_same": top_ort == top_tao,
        "top5_margin_rel": margin,
        "nonfinite": int((~np.isfinite(tao_out)).sum() + (~np.isfinite(ort_out)).sum()),
    }


def check_agreement(net, what, a, tolerance):
    ok = a["rel_diff"] <= tolerance and a["top5_same"] and a.get("nonfinite", 0) == 0
    if not ok:
        detail = ", ".join(f"{k} {v}" for k, v in a.items())
        raise BenchError(
            f"{net}: taopipe and ONNX Runtime DISAGREE ({what}): max|diff|/max|ORT| = "
            f"{a['rel_diff']:.3g} (tolerance {tolerance:g}), top-5 "
            f"{'same' if a['top5_same'] else 'DIFFERENT'}; {detail}")


def read_f32(np, path, count):
    data = np.fromfile(path, dtype="<f4")
    if data.size != count:
        raise BenchError(f"{path}: expected {count} f32 values, found {data.size}")
    return data.astype(np.float32)


# --- one net -----------------------------------------------------------------------------

def model_files(models, args, net) -> tuple[Path, Path]:
    """`net`'s safetensors and ONNX files, made once into the cache."""
    try:
        return models.ensure_model(Path(args.cache), net, args.seed, log=log)
    except ImportError as e:
        raise BenchError(
            f"{net}: building its models needs the `{e.name}` package: install the versions "
            f"of {REQUIREMENTS}, or copy {args.cache} from a machine that built them (the "
            f"files depend only on the seed and models.py)") from None


def run_net(np, ort, models, args, binary, net, input_path, x, workdir, limits) -> dict:
    """Times `net`; measures the machine's limits at each width into `limits` (thread
    count → `frame`'s `limits` answer) where it has none yet."""
    weights, onnx_path = model_files(models, args, net)
    result = {"net": net, "files": {}}
    for path in (weights, onnx_path, input_path):
        result["files"][path.name] = models.recorded_sha256(path)

    sessions = {}
    for t in args.threads:
        started = time.monotonic()
        sessions[t] = ort_session(ort, onnx_path, t)
        log(f"{net}: ORT session t={t} ready in {time.monotonic() - started:.1f} s")
    input_name = sessions[args.threads[0]].get_inputs()[0].name
    feeds = {input_name: x}
    ort_outputs = {t: s.run(None, feeds)[0] for t, s in sessions.items()}  # also warm-up
    reference = ort_outputs[args.threads[0]]

    width = max(args.threads)
    once = Path(workdir) / f"{net}-once.f32"
    log(f"{net}: checking agreement (ORT t={args.threads[0]}, taopipe w={width})")
    header = taopipe_once(binary, net, weights, input_path, once, width, args.timeout)
    tao_reference = read_f32(np, once, reference.size)
    check = agreement(np, reference, tao_reference)
    check_agreement(net, "one frame", check, args.tolerance)
    log(f"{net}: agree: max|diff|/max|ORT| = {check['rel_diff']:.2e}, top-5 "
        f"{check['top5_ort']} same")
    result["agreement"] = check
    result["isa"] = find_isa(header)

    servers = {}
    try:
        for t in args.threads:
            started = time.monotonic()
            servers[t] = TaopipeServer(binary, net, weights, input_path,
                                       Path(workdir) / f"{net}-w{t}.f32", t, args.timeout,
                                       workdir)
            log(f"{net}: taopipe w={t} ready in {time.monotonic() - started:.1f} s")
            result["isa"] = result["isa"] or find_isa(servers[t].header)
        for t in args.threads:
            if t not in limits:
                limits[t] = servers[t].limits()
                log(f"limits at w={t}: " + "; ".join(
                    f"{l['workers']} worker(s): FMA {l['fma_gflops']:.1f} GFLOP/s, read "
                    f"{l['read_gbs']:.1f} GB/s" for l in limits[t]))

        order = [(engine, t) for t in args.threads for engine in ("ort", "taopipe")]
        samples = {key: [] for key in order}
        rounds = {key: [] for key in order}  # each round's samples, for paired ratios
        gc.collect()
        gc.disable()
        try:
            for r in range(args.rounds):
                line = []
                for engine, t in order:
                    time.sleep(SETTLE_S)
                    if engine == "ort":
                        session, ms = sessions[t], []
                        for _ in range(args.frames):
                            t0 = time.perf_counter()
                            session.run(None, feeds)
                            ms.append((time.perf_counter() - t0) * 1e3)
                    else:
                        ms = servers[t].frames(args.frames)
                    samples[(engine, t)].extend(ms)
                    rounds[(engine, t)].append(ms)
                    label = f"ORT t={t}" if engine == "ort" else f"taopipe w={t}"
                    line.append(f"{label} {statistics.median(ms):.1f}")
                log(f"{net}: round {r + 1}/{args.rounds} (ms/frame): {', '.join(line)}")
        finally:
            gc.enable()
        for t, server in servers.items():
            server.close()
    finally:
        for server in servers.values():
            server.kill()

    # Every output seen agrees with ORT's reference: taopipe's at every width (they
    # should be bit-identical), and ORT's at every thread count.
    consistency = {}
    for t in args.threads:
        out = read_f32(np, servers[t].output_path, reference.size)
        a = agreement(np, reference, out)
        a["bit_identical_to_check"] = bool(np.array_equal(out.view(np.uint32),
                                                          tao_reference.view(np.uint32)))
        check_agreement(net, f"taopipe w={t} after timing", a, args.tolerance)
        consistency[f"taopipe_w{t}"] = a
        if t != args.threads[0]:
            consistency[f"ort_t{t}"] = agreement(np, reference, ort_outputs[t])
    result["consistency"] = consistency
    result["agreement"]["worst_rel_diff"] = max(
        [check["rel_diff"]] + [v["rel_diff"] for k, v in consistency.items()
                               if k.startswith("taopipe")])

    result["timings"] = {}
    for t in args.threads:
        ort_ms, tao_ms = samples[("ort", t)], samples[("taopipe", t)]
        entry = {
            "ort": summary(ort_ms),
            "taopipe": summary(tao_ms),
        }
        entry["taopipe_over_ort_throughput"] = entry["ort"]["median_ms"] / entry["taopipe"][
            "median_ms"]
        entry.update(paired_ratios(rounds[("ort", t)], rounds[("taopipe", t)]))
        result["timings"][str(t)] = entry
    del sessions
    gc.collect()
    return result


def paired_ratios(ort_rounds, tao_rounds) -> dict:
    """The ratio within each round (ORT's median ms over taopipe's, timed minutes apart at
    most), its quartiles, and how many rounds taopipe won. A slow phase of a shared machine
    then stretches both engines of a round, so the spread of these ratios shows what the
    overall ratio of medians cannot: whether it differs from 1 by more than the noise."""
    ratios = [statistics.median(o) / statistics.median(t)
              for o, t in zip(ort_rounds, tao_rounds)]
    q = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else ratios * 3
    return {"round_ratios": ratios, "round_ratio_q1": q[0], "round_ratio_q3": q[2],
            "rounds_taopipe_faster": sum(r > 1 for r in ratios)}


def summary(ms):
    s = sorted(ms)
    q = statistics.quantiles(s, n=4) if len(s) >= 2 else [s[0]] * 3
    return {"median_ms": statistics.median(s), "min_ms": s[0], "q1_ms": q[0], "q3_ms": q[2],
            "samples_ms": ms}


# --- report ------------------------------------------------------------------------------

def table(results, threads) -> str:
    head = ["net"]
    align = ["---"]
    for t in threads:
        head += [f"ORT t={t} ms", f"taopipe w={t} ms", f"taopipe/ORT t={t}"]
        align += ["---:", "---:", "---:"]
    head += ["max rel diff", "top-5 same"]
    align += ["---:", ":---:"]
    rows = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    for r in results:
        cells = [r["net"]]
        for t in threads:
            e = r["timings"][str(t)]
            cells += [f"{e['ort']['median_ms']:.1f}", f"{e['taopipe']['median_ms']:.1f}",
                      f"{e['taopipe_over_ort_throughput']:.2f}× ({e['round_ratio_q1']:.2f}–"
                      f"{e['round_ratio_q3']:.2f}; {e['rounds_taopipe_faster']}/"
                      f"{len(e['round_ratios'])})"]
        a = r["agreement"]
        cells += [f"{a['worst_rel_diff']:.1e}", "yes" if a["top5_same"] else "NO"]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def limits_line(limits) -> str:
    """The machine's limits as `frame` measured them at each width, against one worker's."""
    one = next((l for v in limits.values() for l in v if l["workers"] == 1), None)
    if one is None:
        return "Limits: not measured."
    parts = [f"1 worker: FMA {one['fma_gflops']:.1f} GFLOP/s, read {one['read_gbs']:.1f} GB/s"]
    for t, v in limits.items():
        for l in v:
            if l["workers"] > 1:
                parts.append(
                    f"{l['workers']} at once: FMA {l['fma_gflops']:.1f} "
                    f"({l['fma_gflops'] / one['fma_gflops']:.2f}×), read {l['read_gbs']:.1f} GB/s "
                    f"({l['read_gbs'] / one['read_gbs']:.2f}×)")
    return ("Limits measured in this run (`frame`'s `limits`: FMA chains and streaming reads "
            "on every worker at once): " + "; ".join(parts) + ".")


def machine_lines(report) -> str:
    m = report["machine"]
    cpus = f"{m['cpus']} CPUs"
    if m["usable_cpus"] and m["usable_cpus"] != m["cpus"]:
        cpus += f" ({m['usable_cpus']} usable)"
    features = ", ".join(f.upper() for f in m["features"]) or "no AVX2"
    isa = report["taopipe"]["isa"] or "not reported"
    rev = report["taopipe"]["revision"]
    s = report["settings"]
    load = ""
    if m["load_average_start"] is not None and m["load_average_end"] is not None:
        load = (f" Load average {m['load_average_start']:.2f} at the start, "
                f"{m['load_average_end']:.2f} at the end.")
    return "\n".join([
        f"Machine: {m['model']}, {cpus}, {m['arch']} {m['os']}; CPU features: {features}."
        + load,
        limits_line(m.get("limits") or {}),
        f"ONNX Runtime {report['onnxruntime']['version']} (CPUExecutionProvider, intra-op "
        f"threads = t, inter-op 1, sequential, all graph optimisations); "
        f"{report['taopipe']['version'] or 'taopipe'} `frame`{(' at ' + rev) if rev else ''} "
        f"({report['taopipe']['binary']}), isa: {isa}"
        + ("; taopipe imports the ONNX file ONNX Runtime runs (--from-onnx)."
           if s.get("from_onnx") else "; taopipe loads the same weights as safetensors."),
        f"Median ms per frame over {s['rounds']} interleaved rounds × {s['frames']} frames; "
        f"taopipe/ORT = ORT ms / taopipe ms (> 1: taopipe faster); in brackets the "
        f"quartiles of that ratio taken round by round, and the rounds taopipe won. "
        f"Agreement: worst "
        f"max|taopipe − ORT| / max|ORT| over taopipe's outputs, and ORT's top-5 classes in "
        f"order. Seed {s['seed']}.",
    ])


def write_json(args, report) -> None:
    if args.json:
        body = json.dumps(report, indent=2) + "\n"
        if args.json == "-":
            print(body, end="")
        else:
            Path(args.json).write_text(body)
            log(f"wrote {args.json}")


def net_input(models, args, net):
    """`net`'s input file and array (224x224, or YOLO's 416x416), made once into the cache."""
    return models.ensure_input(Path(args.cache), args.seed, log=log,
                               shape=models.input_shape(net))


def layer_report(np, ort, models, args, binary, origin, revision, machine) -> int:
    """`--layers`: per-layer tables of every net and thread count (`layers.py`)."""
    import layers

    results = []
    with tempfile.TemporaryDirectory(prefix="taopipe-layers-") as workdir:
        for net in args.nets:
            weights, onnx_path = model_files(models, args, net)
            input_path, x = net_input(models, args, net)
            try:
                results += layers.run_net(ort_session, ort, args, binary, net, weights, onnx_path,
                                          input_path, x, workdir, child_env(), log, SETTLE_S)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                raise BenchError(f"{net}: {e}") from None
    machine["load_average_end"] = load_average()
    report = {
        "machine": machine,
        "onnxruntime": {"version": ort.__version__, "providers": ["CPUExecutionProvider"]},
        "taopipe": {"binary": origin, "revision": revision, "version": frame_version(binary)},
        "settings": {"nets": args.nets, "threads": args.threads, "rounds": args.rounds,
                     "frames": args.frames, "seed": args.seed, "layers": True},
        "wall_s": time.monotonic() - STARTED,
        "layers": results,
    }
    rev = f" at {revision}" if revision else ""
    print("\n\n".join(layers.table(r) for r in results), flush=True)
    print(f"\nMachine: {machine['model']}, {machine['cpus']} CPUs; ONNX Runtime "
          f"{ort.__version__}; taopipe `frame`{rev} ({origin}). ORT: each node's median "
          f"kernel time in a profiled session (one warm-up run, then {args.frames}); "
          f"taopipe: `frame --profile`'s time per layer over {args.frames} frames; both "
          f"the median of {args.rounds} interleaved rounds. Seed {args.seed}.", flush=True)
    write_json(args, report)
    log(f"done in {report['wall_s']:.0f} s")
    return 0


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.taopipe_bin:
        args.no_build = True
    try:
        np, ort = import_packages()
        sys.path.insert(0, str(HERE))
        import models

        machine = cpu_info()
        machine["load_average_start"] = load_average()
        if (machine["load_average_start"] or 0) >= 0.5:
            log(f"note: load average {machine['load_average_start']} before starting: other "
                f"work on this machine will make the timings noisy")
        if machine["usable_cpus"] and max(args.threads) > machine["usable_cpus"]:
            log(f"note: {max(args.threads)} threads on {machine['usable_cpus']} usable CPUs")
        log(f"machine: {machine['model']}, {machine['cpus']} CPUs; onnxruntime "
            f"{ort.__version__}; nets {','.join(args.nets)}; threads "
            f"{','.join(map(str, args.threads))}; {args.rounds} rounds × {args.frames} frames")
        binary, origin = taopipe_binary(args)
        revision = None if args.taopipe_bin else git_revision()
        log(f"taopipe: {binary}")
        if args.layers:
            return layer_report(np, ort, models, args, binary, origin, revision, machine)

        results = []
        limits = {}
        with tempfile.TemporaryDirectory(prefix="taopipe-peers-") as workdir:
            for net in args.nets:
                input_path, x = net_input(models, args, net)
                results.append(run_net(np, ort, models, args, binary, net, input_path, x,
                                       workdir, limits))
        machine["limits"] = {str(t): v for t, v in sorted(limits.items())}
        machine["load_average_end"] = load_average()
        isas = {r["isa"] for r in results if r["isa"]}
        report = {
            "machine": machine,
            "onnxruntime": {"version": ort.__version__,
                            "providers": ["CPUExecutionProvider"]},
            "numpy": np.__version__,
            "python": platform.python_version(),
            "taopipe": {"binary": origin, "revision": revision,
                        "version": frame_version(binary),
                        "isa": ", ".join(sorted(isas)) or None},
            "settings": {"nets": args.nets, "threads": args.threads, "rounds": args.rounds,
                         "frames": args.frames, "seed": args.seed,
                         "tolerance": args.tolerance, "models_format": models.FORMAT,
                         "from_onnx": args.from_onnx},
            "wall_s": time.monotonic() - STARTED,
            "results": results,
        }
        text = table(results, args.threads) + "\n\n" + machine_lines(report)
        print(text, flush=True)
        write_json(args, report)
        log(f"done in {report['wall_s']:.0f} s")
        return 0
    except BenchError as e:
        print(f"peers: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("peers: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
