"""Layer by layer: taopipe against ONNX Runtime (``run.sh --layers``).

Whole-frame ratios say who is faster; this says where. For each net and thread count it
runs, in interleaved rounds, ONNX Runtime with its profiler on (a fresh session per
round, one warm-up run, then ``--frames`` runs; each node's median kernel time) and
taopipe's ``frame --profile --json`` (each layer's time as the runtime's trace table
estimates it: a moving average over the frames), with medians over the rounds; it pairs the layers of the two
engines and prints one table per net and width: every pair's times and their ratio,
then the sums by taopipe's kernel (``conv 1x1/1 direct``, ``maxpool``, ...), then what
only one engine runs (ORT's NCHWc ``ReorderInput``/``ReorderOutput``, say).

Pairing (a decision): the two engines fold batch norm into the conv, fuse ReLU and
residual adds differently, and ORT may run a block's branches in another order than
taopipe (ResNet50's ``conv3`` and ``downsample``), so layers pair by what they compute,
not by position or name. A conv pairs with the first unpaired ORT conv of the same kernel
size and FLOP count (2 · output elements · input channels per group · kh · kw, ORT's from
the shapes its profiler records); pools, global average pools and fully connected layers
pair in order within their kind. Whatever stays unpaired is listed apart. The per-layer
times of both engines include their profilers' small costs, so the sum of a table's
layers need not be a frame's time: the whole-frame ratios stay those of the plain run.
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import time
from pathlib import Path

# taopipe's kernel description, e.g. "conv 7x7/2 direct" or "conv 3x3/1 winograd2".
CONV = re.compile(r"conv (\d+)x(\d+)/")

# ORT op names by the kind taopipe gives the same layer.
ORT_KINDS = {
    "Conv": "conv", "FusedConv": "conv",
    "MaxPool": "maxpool",
    "GlobalAveragePool": "gap",
    "Gemm": "fc", "FusedGemm": "fc", "MatMul": "fc",
}


def tao_kind(kernel: str) -> str:
    """The kind of a taopipe layer: its kernel description's first word."""
    return kernel.split()[0] if kernel else "?"


def tao_key(layer: dict) -> tuple:
    """What a taopipe layer must share with an ORT node to pair with it."""
    m = CONV.match(layer["kernel"])
    if m:
        return ("conv", int(m.group(1)), int(m.group(2)), int(layer["flops"]))
    return (tao_kind(layer["kernel"]),)


def shapes(entries) -> list:
    """The shapes of an ORT profiler `input_type_shape` / `output_type_shape` list."""
    return [next(iter(e.values())) for e in entries or []]


def ort_key(op: str, inputs: list, outputs: list) -> tuple:
    """The pairing key of an ORT node (`tao_key`'s), from its op and shapes."""
    kind = ORT_KINDS.get(op)
    if kind == "conv" and len(inputs) >= 2 and outputs and len(inputs[1]) == 4:
        co, ci, kh, kw = inputs[1]
        out = 1
        for d in outputs[0]:
            out *= d
        return ("conv", kh, kw, 2 * out * ci * kh * kw)
    return (kind or op,)


def pair(tao: list, ort: list) -> tuple[list, list, list]:
    """Pairs taopipe layers (dicts with `key`) with ORT nodes (dicts with `key`), in
    taopipe's order (module docs). Returns (pairs as (tao, ort) tuples, unpaired taopipe
    layers, unpaired ORT nodes)."""
    free = list(range(len(ort)))
    pairs, tao_only = [], []
    for layer in tao:
        hit = next((i for i in free if ort[i]["key"] == layer["key"]), None)
        if hit is None:
            tao_only.append(layer)
        else:
            free.remove(hit)
            pairs.append((layer, ort[hit]))
    return pairs, tao_only, [ort[i] for i in free]


def ort_round(session, ort, onnx_path, threads, x, frames, workdir) -> dict:
    """One profiled ORT session (`session` is `peers.ort_session`, so the settings are the
    whole-frame runs'): node name → (op, inputs, outputs, median ms). Its trace goes to
    `workdir` and is removed once read."""
    s = session(ort, onnx_path, threads, profile_prefix=Path(workdir) / "ort-profile")
    feeds = {s.get_inputs()[0].name: x}
    for _ in range(frames + 1):
        s.run(None, feeds)
    trace = Path(s.end_profiling())
    nodes = {}
    try:
        events = json.loads(trace.read_text())
    finally:
        trace.unlink(missing_ok=True)
    for e in events:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        name = e["name"][: -len("_kernel_time")]
        a = e.get("args", {})
        node = nodes.setdefault(name, {
            "name": name, "op": a.get("op_name", "?"),
            "inputs": shapes(a.get("input_type_shape")),
            "outputs": shapes(a.get("output_type_shape")), "us": []})
        node["us"].append(e["dur"])
    # The first run is the warm-up.
    return {n: {**v, "ms": statistics.median(v["us"][1:] or v["us"]) / 1000}
            for n, v in nodes.items()}


def tao_round(binary, net, weights, input_path, width, frames, out, env, timeout) -> list:
    """One `frame --profile --json` run: its `layer_times`."""
    cmd = [str(binary), "--net", net, "--weights", str(weights), "--input", str(input_path),
           "--width", str(width), "--frames", str(frames), "--profile", "--json", str(out)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                         stdin=subprocess.DEVNULL)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{run.stderr.strip()}")
    return json.loads(Path(out).read_text())["layer_times"]


def compare(net, width, tao_rounds: list, ort_rounds: list) -> dict:
    """Medians over rounds of every layer of both engines, paired."""
    tao = []
    for i, layer in enumerate(tao_rounds[0]):
        ms = [r[i]["ms"] for r in tao_rounds]
        tao.append({"name": layer["name"], "kernel": layer["kernel"],
                    "flops": layer["flops"], "ms": statistics.median(ms), "rounds_ms": ms,
                    "key": tao_key(layer)})
    ort = []
    for name, node in ort_rounds[0].items():
        ms = [r[name]["ms"] for r in ort_rounds if name in r]
        ort.append({"name": name, "op": node["op"], "ms": statistics.median(ms),
                    "rounds_ms": ms, "key": ort_key(node["op"], node["inputs"],
                                                    node["outputs"])})
    pairs, tao_only, ort_only = pair(tao, ort)
    by_kernel = {}
    for t, o in pairs:
        k = by_kernel.setdefault(t["kernel"], {"kernel": t["kernel"], "layers": 0,
                                               "taopipe_ms": 0.0, "ort_ms": 0.0})
        k["layers"] += 1
        k["taopipe_ms"] += t["ms"]
        k["ort_ms"] += o["ms"]
    return {
        "net": net, "width": width, "rounds": len(tao_rounds),
        "pairs": [{"taopipe": strip(t), "ort": strip(o)} for t, o in pairs],
        "by_kernel": list(by_kernel.values()),
        "taopipe_only": [strip(t) for t in tao_only],
        "ort_only": [strip(o) for o in ort_only],
        "taopipe_ms": sum(t["ms"] for t in tao),
        "ort_ms": sum(o["ms"] for o in ort),
    }


def strip(row: dict) -> dict:
    """A row without its pairing key (for the report)."""
    return {k: v for k, v in row.items() if k != "key"}


def ratio(ort_ms, tao_ms) -> str:
    return f"{ort_ms / tao_ms:.2f}×" if tao_ms > 0 else "—"


def table(result: dict) -> str:
    """The Markdown tables of one `compare` result."""
    lines = [f"### {result['net']}, {result['width']} thread(s): per layer, medians of "
             f"{result['rounds']} round(s)",
             "",
             "| taopipe layer | kernel | ORT node | taopipe ms | ORT ms | taopipe/ORT |",
             "|---|---|---|---:|---:|---:|"]
    for p in result["pairs"]:
        t, o = p["taopipe"], p["ort"]
        lines.append(f"| {t['name']} | {t['kernel']} | {o['name']} | {t['ms']:.3f} | "
                     f"{o['ms']:.3f} | {ratio(o['ms'], t['ms'])} |")
    lines += ["", "| taopipe kernel | layers | taopipe ms | ORT ms | taopipe/ORT |",
              "|---|---:|---:|---:|---:|"]
    for k in sorted(result["by_kernel"], key=lambda k: -k["taopipe_ms"]):
        lines.append(f"| {k['kernel']} | {k['layers']} | {k['taopipe_ms']:.2f} | "
                     f"{k['ort_ms']:.2f} | {ratio(k['ort_ms'], k['taopipe_ms'])} |")
    for who, rows in (("taopipe", result["taopipe_only"]), ("ORT", result["ort_only"])):
        if rows:
            listed = ", ".join(f"{r['name']} ({r.get('kernel') or r.get('op')}) "
                               f"{r['ms']:.3f} ms" for r in rows)
            lines.append(f"\nOnly in {who}: {listed}.")
    lines.append(f"\nAll layers: taopipe {result['taopipe_ms']:.2f} ms, ORT "
                 f"{result['ort_ms']:.2f} ms ({ratio(result['ort_ms'], result['taopipe_ms'])}"
                 f"; taopipe/ORT = ORT ms / taopipe ms, > 1: taopipe faster).")
    return "\n".join(lines)


def run_net(session, ort, args, binary, net, weights, onnx_path, input_path, x, workdir, env, log,
            settle_s) -> list:
    """`compare` results of `net` at every thread count of `args`; `session` makes ORT's
    sessions (`ort_round`)."""
    results = []
    for t in args.threads:
        tao_rounds, ort_rounds = [], []
        for r in range(args.rounds):
            started = time.monotonic()
            ort_rounds.append(ort_round(session, ort, onnx_path, t, x, args.frames,
                                        workdir))
            time.sleep(settle_s)
            tao_rounds.append(tao_round(binary, net, weights, input_path, t, args.frames,
                                        Path(workdir) / f"{net}-w{t}.json", env,
                                        args.timeout))
            time.sleep(settle_s)
            log(f"{net}: layers at {t} thread(s), round {r + 1}/{args.rounds} "
                f"({time.monotonic() - started:.1f} s)")
        results.append(compare(net, t, tao_rounds, ort_rounds))
    return results
