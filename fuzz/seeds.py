#!/usr/bin/env python3
"""Writes the hand-made seeds of the fuzz targets: fuzz/seeds/TARGET/seed-NAME.

Meaningful valid and invalid inputs for each text parser (the examples of README and
--help, real layout files and CPU lists, the bad inputs of README's "Bad input" table),
and safetensors files for the fuzz crate's tiny net (`taopipe_fuzz_targets::tiny_net`):
a valid one and a few broken ones, packed with `struct` (no torch needed). The netspec
target reads structured bytes (the `arbitrary` crate), so it has no seeds: its inputs are
the fuzzer's own, in fuzz/corpus/netspec.

Seeds are kept apart from fuzz/corpus/ because `cargo fuzz cmin` renames what it keeps to
hashes and drops what adds no coverage; these stay named, and `scripts/fuzz.sh` gives them
to every run. Re-run after changing the tiny net: `python3 fuzz/seeds.py`.
"""

import json
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")

TEXT = {
    "cpu_list": {
        "range-and-single": "0-3,5\n",
        "sysfs-online": "0-7\n",
        "sysfs-hybrid": "0-15,16-23\n",
        "empty": "",
        "blank": "  \n",
        "single": "4",
        "order-kept": "6-7,0-1",
        "spaces": " 0-3,5 , 7-8\n",
        "largest": "0-65535",
        "bad-token": "0-3,x",
        "descending": "5-3",
        "empty-entry": "1,,2",
        "sign": "+3",
        "above-limit": "0-4000000000",
        "u64-overflow": "18446744073709551616",
        "double-dash": "1-2-3",
        "repeat": "0-3,2",
        "unicode": "0-3,\u0663",
    },
    "layout": {
        "xitao-example": "0 1 2 3 4 5\n1 2\n1\n1 2\n1\n1 2\n1\n",
        "readme": "# 4 threads\n0 1 2 3\n1 2 4\n1\n1 2\n1\n",
        "reordered": "1 0 2 3 4 5\n1 2\n1\n1 2\n1\n1 2\n1\n",
        "ranges-commas": "0-3,8-11\n1,2,4,8\n1\n1,2\n1\n1 2 4\n1\n1 2\n1\n",
        "width-one": "0 1 2 3\n1\n1\n1\n1\n",
        "comments-blank": "# big\n\n0 1 # cpus\n\n2 1 # widths\n1\n",
        "unusable-cpu": "0 1 99\n1\n1\n1\n",
        "repeat-cpu": "0-2,1\n1\n1\n1\n",
        "descending": "3-1\n1\n",
        "width-too-wide": "0 1\n1\n2\n",
        "bad-width": "0 1\n1 two\n1\n",
        "negative-width": "0 1\n1 -2\n1\n",
        "too-few-lines": "0 1\n1\n",
        "too-many-lines": "0 1\n1\n1\n\n1 2\n",
        "no-width": "0 1\n, ,\n1\n",
        "no-cpu": ",\n1\n",
        "huge-width": "0 1\n1\n18446744073709551615\n",
        "empty": "",
        "crlf": "0 1\r\n2 1\r\n1\r\n",
    },
    "emulation_spec": {
        "powersave": "w1=powersave",
        "table1": "table1:3",
        "positional": "0.5,performance,powersave",
        "override": "all=0.5,w1=1",
        "tx2-factor": "c1=0.17",
        "min-speed": "w0=0.001",
        "tiny": "c0=1e-30",
        "repeat": "w0=0.5,w0=0.3",
        "bad-table1": "table1:5",
        "bad-target": "x=1",
        "nan": "w0=NaN",
        "inf": "all=inf",
        "above-one": "c0=1.5",
        "empty": "",
        "commas": ",, ,",
        "spaces": " c0 = 0.5 , w2 = powersave ",
        "sign": "c+1=0.5",
        "unicode-target": "\u00e9=0.5",
    },
    "emulation_schedule": {
        "doc": "0ms:w1=powersave,30ms:none",
        "readme": "0s:none,20s:w1=powersave,40s:none",
        "spec-commas": "0s:w0=0.5,w1=powersave,20s:none",
        "table1": "0s:table1:2,10s:table1:4,20s:none",
        "fractions": "0.5ms:all=0.5,1.5s:none,1500.25ms:w0=0.9",
        "not-increasing": "10s:none,5s:none",
        "equal-times": "1s:none,1000ms:none",
        "bad-time": "2x:none",
        "no-unit": "5:none",
        "negative": "-1s:none",
        "huge": "1e300s:none",
        "not-a-step": "w0=0.5",
        "bad-spec": "0s:w0=7",
        "empty": "",
        "empty-spec": "0s:,w0=0.5",
    },
    "armcoup_mapping": {
        "big-little": "BBBLLL",
        "readme": "BBBBBBBBBBBBBBBBBBLLL",
        "reused": "BBLLBB",
        "digits": "0012",
        "ten-devices": "9876543210",
        "gpu": "BBGL",
        "mixed": "BB1",
        "lower": "bbll",
        "empty": "",
        "unicode": "B\u00dfL",
    },
}


def safetensors(tensors, metadata=None, header_len=None):
    """A safetensors file: 8-byte little-endian header length, JSON header, data.

    `tensors` is a list of (name, dtype, shape, raw bytes), stored in that order.
    """
    header, data, offset = {}, b"", 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        data += raw
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the safetensors writer pads to 8 bytes
    length = len(text) if header_len is None else header_len
    return struct.pack("<Q", length) + text + data


def f32(shape, start=0.0):
    n = 1
    for d in shape:
        n *= d
    return struct.pack(f"<{n}f", *[start + 0.01 * i for i in range(n)])


def tiny_net_tensors():
    """Every tensor `tiny_net()` reads, in its order, with small deterministic values."""
    shapes = [
        ("features.0.weight", [4, 3, 3, 3]),
        ("features.1.weight", [4]),
        ("features.1.bias", [4]),
        ("features.1.running_mean", [4]),
        ("features.1.running_var", [4]),
        ("features.3.weight", [2, 4, 1, 1]),
        ("features.3.bias", [2]),
        ("classifier.weight", [2, 8]),
        ("classifier.bias", [2]),
    ]
    out = []
    for name, shape in shapes:
        start = 1.0 if name.endswith(("running_var", "1.weight")) else 0.0
        out.append((name, "F32", shape, f32(shape, start)))
    return out


def safetensors_seeds():
    valid = tiny_net_tensors()
    batches = ("features.1.num_batches_tracked", "I64", [], struct.pack("<q", 7))
    wrong_shape = [(n, d, [2, 2] if n == "classifier.bias" else s, r if n != "classifier.bias" else f32([2, 2]))
                   for n, d, s, r in valid]
    f16 = [(n, "F16" if n == "features.3.bias" else d, [4] if n == "features.3.bias" else s, r)
           for n, d, s, r in valid]
    full = safetensors(valid)
    return {
        "tiny-valid.safetensors": full,
        "tiny-extra.safetensors": safetensors(valid + [batches], metadata={"format": "pt"}),
        "tiny-missing.safetensors": safetensors(valid[1:]),
        "tiny-wrong-shape.safetensors": safetensors(wrong_shape),
        "tiny-f16.safetensors": safetensors(f16),
        "truncated.safetensors": full[: len(full) - 5],
        "header-too-long.safetensors": safetensors(valid, header_len=1 << 40),
        "empty-header.safetensors": safetensors([]),
        "empty.safetensors": b"",
        "short.safetensors": b"\x01\x02\x03",
        "not-json.safetensors": struct.pack("<Q", 8) + b"not json",
        "bad-offsets.safetensors": struct.pack("<Q", 64)
        + b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[4,0]}}'.ljust(64)
        + b"\0" * 8,
    }


def main():
    for target, seeds in TEXT.items():
        folder = os.path.join(ROOT, target)
        os.makedirs(folder, exist_ok=True)
        for name, text in seeds.items():
            with open(os.path.join(folder, f"seed-{name}"), "wb") as f:
                f.write(text.encode())
    folder = os.path.join(ROOT, "safetensors")
    os.makedirs(folder, exist_ok=True)
    for name, data in safetensors_seeds().items():
        with open(os.path.join(folder, f"seed-{name}"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
