"""From a torchvision model to taopipe, as a user with a model would go: export the model
to ONNX with `torch.onnx.export`, run the file in ONNX Runtime and in taopipe
(`frame --onnx`, the same file), and check that the two agree.

    python3 bench/peers/torchvision_onnx.py --frame target/release/examples/frame \\
        --nets mobilenet_v2,squeezenet1_1,googlenet,resnet50 --out /tmp/tv

Needs torch, torchvision, onnx and onnxruntime (not the peer benchmark's venv: it has no
torch). The weights are torchvision's random initialisation (no download: `weights=None`),
in eval mode, so batchnorms hold their initial statistics; the input is a seeded normal
frame. For each net it prints the export time, ORT's and taopipe's top-5 classes, and
max|taopipe − ORT| / max|ORT|, and fails (exit 1) unless that is within --tolerance and the
top-5 classes are the same. It writes NET.onnx, the input and both outputs under --out.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

NETS = ("mobilenet_v2", "squeezenet1_1", "googlenet", "resnet50", "alexnet", "vgg16")


def export(net: str, path: Path) -> float:
    import torch
    import torchvision

    kwargs = {"weights": None}
    if net == "googlenet":
        # Inference form: no auxiliary classifiers, the input as given (transform_input
        # rescales channels only for the pretrained ImageNet weights).
        kwargs.update(aux_logits=False, transform_input=False, init_weights=True)
    model = getattr(torchvision.models, net)(**kwargs).eval()
    x = torch.zeros(1, 3, 224, 224)
    started = time.monotonic()
    options = {"input_names": ["input"], "output_names": ["logits"], "opset_version": 17}
    try:
        # The TorchScript exporter (the dynamo one needs onnxscript).
        torch.onnx.export(model, (x,), str(path), dynamo=False, **options)
    except TypeError:
        torch.onnx.export(model, (x,), str(path), **options)
    return time.monotonic() - started


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--frame", required=True, help="taopipe's frame example binary")
    p.add_argument("--nets", default="mobilenet_v2,squeezenet1_1,googlenet,resnet50",
                   help=f"comma-separated, of {', '.join(NETS)} (default: %(default)s)")
    p.add_argument("--out", default="torchvision-onnx", help="folder for the files")
    p.add_argument("--tolerance", type=float, default=1e-4,
                   help="largest max|taopipe - ORT| / max|ORT| (default: %(default)g)")
    p.add_argument("--width", type=int, default=2, help="taopipe's workers (default: 2)")
    args = p.parse_args()
    import numpy as np
    import onnxruntime as ort

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    (out / "input.f32").write_bytes(x.astype("<f4").tobytes())
    failed = []
    for net in args.nets.split(","):
        if net not in NETS:
            p.error(f"--nets: unknown net {net!r}; choose from {', '.join(NETS)}")
        onnx_path = out / f"{net}.onnx"
        seconds = export(net, onnx_path)
        session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
        (want,) = session.run(None, {session.get_inputs()[0].name: x})
        want = want.reshape(-1)
        got_path = out / f"{net}.taopipe.f32"
        cmd = [args.frame, "--onnx", str(onnx_path), "--input", str(out / "input.f32"),
               "--output", str(got_path), "--frames", "3", "--width", str(args.width)]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            print(f"{net}: taopipe failed: {' '.join(cmd)}\n{run.stderr.strip()}")
            failed.append(net)
            continue
        got = np.fromfile(got_path, dtype="<f4")
        rel = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
        top_ort, top_tao = np.argsort(-want)[:5].tolist(), np.argsort(-got)[:5].tolist()
        times = [line for line in run.stdout.splitlines() if line.startswith("time per frame")]
        ok = rel <= args.tolerance and top_ort == top_tao
        print(f"{net}: exported in {seconds:.1f} s; max|taopipe - ORT|/max|ORT| = {rel:.1e}; "
              f"top-5 ORT {top_ort}, taopipe {top_tao}: {'agree' if ok else 'DIFFER'}; "
              f"{times[0] if times else ''}")
        if not ok:
            failed.append(net)
    if failed:
        print(f"failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
