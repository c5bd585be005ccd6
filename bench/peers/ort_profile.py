"""Per-node times of ONNX Runtime on a model that run.sh exported, to compare with
taopipe's `frame --profile`: `bench/peers/.venv/bin/python bench/peers/ort_profile.py
resnet50 [threads] [runs]`. Prints each node's median kernel time in ms (ORT's profiler,
after one warm-up run), in ORT's execution order, then their sum."""
import argparse
import collections
import json
import os
import statistics
from pathlib import Path

import numpy as np
import onnxruntime as ort

HERE = Path(__file__).resolve().parent


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("net", help="vgg16, resnet50 or alexnet (exported by run.sh)")
    p.add_argument("threads", type=int, nargs="?", default=1, help="intra-op threads")
    p.add_argument("runs", type=int, nargs="?", default=30, help="profiled runs")
    p.add_argument("--cache", default=str(HERE / ".cache"), help="run.sh's model cache")
    args = p.parse_args()
    model = Path(args.cache) / f"{args.net}-seed0-v1.onnx"
    if not model.exists():
        raise SystemExit(f"{model} not found: run bench/peers/run.sh --nets {args.net} first")
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.enable_profiling = True
    s = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
    feed = {s.get_inputs()[0].name: np.random.rand(1, 3, 224, 224).astype(np.float32)}
    for _ in range(args.runs + 1):
        s.run(None, feed)
    trace = s.end_profiling()
    times = collections.defaultdict(list)
    ops = {}
    for e in json.load(open(trace)):
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            name = e["name"][: -len("_kernel_time")]
            times[name].append(e["dur"])
            ops[name] = e["args"].get("op_name", "?")
    os.remove(trace)
    total = 0.0
    for name, durs in times.items():
        ms = statistics.median(durs) / 1000
        total += ms
        print(f"{name:40s} {ops[name]:18s} {ms:8.3f}")
    print(f"sum of nodes {total:.1f} ms")


if __name__ == "__main__":
    main()
