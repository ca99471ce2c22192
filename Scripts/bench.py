#!/usr/bin/env python3
"""Inference speed: Shrinkwrap vs onnxruntime on the same models, same run.

For each model, --rounds times alternately: `shrinkwrap bench` (warm-up,
then --runs timed runs, median ms) and onnxruntime's CPU provider with the
same thread count (warm-up, then --runs timed runs, median ms). Alternating
rounds spread a noisy machine's slow spells over both; the table shows the
median over rounds of each, and their ratio shrinkwrap / onnxruntime.

usage: bench.py --shrinkwrap BIN [--runs 20] [--rounds 3] [--threads 2] MODEL...
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort


def ort_ms(path: str, runs: int, threads: int) -> float:
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    feeds = {}
    rng = np.random.default_rng(1)
    inits = {t.name for t in onnx.load(path, load_external_data=False).graph.initializer}
    for i in sess.get_inputs():
        if i.name in inits:
            continue
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in i.shape]
        feeds[i.name] = rng.random(shape, dtype=np.float32)
    for _ in range(3):
        sess.run(None, feeds)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1000)
    return float(np.median(times))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shrinkwrap", required=True)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()
    print("%-24s %14s %14s %8s" % ("model (batch 1)", "shrinkwrap ms", "onnxrt ms", "ratio"))
    for path in a.models:
        ours, theirs = [], []
        for _ in range(a.rounds):
            r = subprocess.run([a.shrinkwrap, "bench", path, "--runs", str(a.runs), "--threads", str(a.threads), "--json"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print("%-24s shrinkwrap failed: %s" % (os.path.basename(path), r.stderr.strip()))
                return 1
            ours.append(json.loads(r.stdout)["median_ms"])
            theirs.append(ort_ms(path, a.runs, a.threads))
        o, t = float(np.median(ours)), float(np.median(theirs))
        print("%-24s %14.2f %14.2f %7.2fx" % (os.path.basename(path)[:24], o, t, o / t))
    print("(median over %d alternating rounds of the median of %d runs after warm-up; %d threads each; onnxruntime %s)"
          % (a.rounds, a.runs, a.threads, ort.__version__))
    return 0


if __name__ == "__main__":
    sys.exit(main())
