#!/usr/bin/env python3
"""Core ML itself on our ML Program packages (macOS only; never run on Linux).

usage: python Scripts/check_macos.py --shrinkwrap BIN [--models M.onnx ...] [--out DIR]

For every model, writes float32, float16-compute and compressed packages with
`shrinkwrap convert` / `compress`, compiles each with `xcrun coremlcompiler
compile` (Apple's own validator: a package it rejects is a failure), loads it
with coremltools (which predicts through Core ML on macOS), and compares Core
ML's outputs on seeded random inputs with `shrinkwrap run` on the source
model: float32 within rel 1e-3 (Core ML may run on the GPU / Neural Engine in
lower precision; CPU_ONLY is asked for), float16 and compressed within 5e-2.

Linux has no Core ML: the script says so and exits 2.
"""
import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from crosscheck_common import last_error, max_diff, ours_run, sanitized  # noqa: E402

CASES = [
    ("fp32", ["convert"], 1e-3),
    ("fp16-compute", ["convert", "--precision", "float16"], 5e-2),
    ("kmeans4", ["compress", "--mode", "kmeans-lut", "--bits", "4"], 5e-2),
    ("linear8", ["compress", "--mode", "linear", "--bits", "8", "--symmetric"], 5e-2),
    ("linear4-block32", ["compress", "--mode", "linear", "--bits", "4", "--symmetric", "--granularity", "per-block:32"], 5e-2),
    ("kmeans3-g16", ["compress", "--mode", "kmeans-lut", "--bits", "3", "--granularity", "per-grouped-channel:16"], 5e-2),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shrinkwrap", required=True)
    ap.add_argument("--models", nargs="+", default=[])
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "shrinkwrap-check-macos"))
    args = ap.parse_args()
    if platform.system() != "Darwin" or shutil.which("xcrun") is None:
        print("check-macos: SKIPPED — needs macOS with Xcode (xcrun coremlcompiler) and Core ML; nothing was checked")
        return 2
    import coremltools as ct
    os.makedirs(args.out, exist_ok=True)
    failed = 0
    rng = np.random.default_rng(0)
    for model in args.models:
        stem = os.path.splitext(os.path.basename(model))[0]
        for tag, argv, rtol in CASES:
            pkg = os.path.join(args.out, f"{stem}.{tag}.mlpackage")
            r = subprocess.run([args.shrinkwrap, argv[0], model, "-o", pkg] + argv[1:], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"refused {stem}.{tag}: {last_error(r.stderr)}")
                continue
            c = subprocess.run(["xcrun", "coremlcompiler", "compile", pkg, args.out], capture_output=True, text=True)
            if c.returncode != 0:
                failed += 1
                print(f"FAIL {stem}.{tag}: coremlcompiler: {last_error(c.stderr or c.stdout)}")
                continue
            ml = ct.models.MLModel(pkg, compute_units=ct.ComputeUnit.CPU_ONLY)
            spec = ml.get_spec()
            feeds = {}
            for i in spec.description.input:
                shape = list(i.type.multiArrayType.shape)
                feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
            theirs = ml.predict(feeds)
            # The package's inputs are the source's, in order, under valid MIL names.
            info = json.loads(subprocess.run([args.shrinkwrap, "inspect", model, "--json"], capture_output=True, text=True).stdout)
            source_feeds = {i["name"]: x for i, x in zip(info["inputs"], feeds.values())}
            with tempfile.TemporaryDirectory() as tmp:
                ours = ours_run(args.shrinkwrap, model, source_feeds, tmp, 600)
            worst = 0.0
            for name, ref in ours.items():
                got = theirs.get(sanitized(name), theirs.get(name))
                if got is None:
                    continue
                rel = max_diff(np.asarray(got, dtype=np.float32).reshape(ref.shape), ref) / max(1.0, float(np.abs(ref).max()))
                worst = max(worst, rel)
            status = "ok  " if worst <= rtol else "FAIL"
            failed += worst > rtol
            print(f"{status} {stem}.{tag}: compiled; Core ML vs shrinkwrap rel {worst:.2e} (limit {rtol:g})")
    print(f"check-macos: {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
