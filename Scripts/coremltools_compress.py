#!/usr/bin/env python3
"""Shrinkwrap's weight codecs vs coremltools' on the same weight arrays, same run.

For each model, mode and bit width: `shrinkwrap compress --json` compresses
the model (its log has every weight's SSE and encoding time), then the same
weights (the ones Shrinkwrap compressed, read from the ONNX file with onnx)
go through coremltools' own NeuralNetwork quantization helpers:

  fp16        numpy float16 cast (what quantize_weights(nbits=16) stores)
  linear      _quantize_channelwise_linear (per output channel, as quantize_weights)
  linear-lut  _get_linear_lookup_table_and_weight (per tensor)
  kmeans-lut  _get_kmeans_lookup_table_and_weight (per tensor; scikit-learn k-means++)

Both SSEs are computed in float64 against the float32 originals, with the
stored values (coremltools' tables are cast to float32, as an .mlmodel holds
them). Prints per-tensor rows with --verbose, and one summary line per run:
encoding seconds of each (ours: the pass's clock around its encoders, both
cores; coremltools: the sum of its helper calls, scikit-learn on both cores),
their ratio, and our whole pass and process times (model load, error
statistics) for context.

--check-sse fails (exit 1) when, for k-means, any tensor's SSE is above
coremltools' by more than 1e-9 relative (float64 summation noise).

usage: coremltools_compress.py --shrinkwrap BIN [--modes kmeans-lut] [--bits 8,4,2,1]
                               [--check-sse] [--verbose] [--threads 2] MODEL...
"""
import argparse
import json
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

import logging
logging.disable(logging.WARNING)
from coremltools.models.neural_network import quantization_utils as qu  # noqa: E402


def coreml_encode(mode, bits, w, out_axis):
    """The decoded float32 values coremltools would store, and the seconds it took."""
    t0 = time.perf_counter()
    if mode == "fp16":
        dec = w.astype(np.float16)
        dt = time.perf_counter() - t0
        return dec.astype(np.float32), dt
    if mode == "linear":
        qw, scale, bias = qu._quantize_channelwise_linear(w, bits, axis=out_axis)
        dt = time.perf_counter() - t0
        shape = [1] * w.ndim
        shape[out_axis] = -1
        dec = qw * scale.reshape(shape) + bias.reshape(shape)
        return dec.astype(np.float32), dt
    if mode == "linear-lut":
        lut, qw = qu._get_linear_lookup_table_and_weight(bits, w)
        dt = time.perf_counter() - t0
        return lut.astype(np.float32)[qw.astype(np.int64).reshape(-1)].reshape(w.shape), dt
    if mode == "kmeans-lut":
        lut, wq = qu._get_kmeans_lookup_table_and_weight(bits, w)
        dt = time.perf_counter() - t0
        return lut.reshape(-1).astype(np.float32)[np.asarray(wq).reshape(-1)].reshape(w.shape), dt
    raise ValueError(mode)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shrinkwrap", required=True)
    ap.add_argument("--modes", default="kmeans-lut")
    ap.add_argument("--bits", default="8,4,2,1")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--check-sse", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()

    failures = 0
    for path in a.models:
        model = onnx.load(path)
        weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        name = path.rsplit("/", 1)[-1]
        for mode in a.modes.split(","):
            for bits in ([16] if mode == "fp16" else [int(b) for b in a.bits.split(",")]):
                cmd = [a.shrinkwrap, "compress", path, "--mode", mode, "--json", "--threads", str(a.threads)]
                if mode != "fp16":
                    cmd += ["--bits", str(bits)]
                if mode == "linear":
                    cmd += ["--granularity", "per-channel"]
                t0 = time.perf_counter()
                log = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
                wall = time.perf_counter() - t0
                entries = [e for e in log["entries"] if e.get("skipped") is None]
                ours_s, theirs_s, worse, better, equal = log["encodeSeconds"], 0.0, 0, 0, 0
                ours_sse_total = theirs_sse_total = 0.0
                for e in entries:
                    w = weights[e["name"]].astype(np.float32)
                    # Our per-channel axis is the output-channel axis: 0 for Conv/Gemm(transB) weights.
                    dec, dt = coreml_encode(mode, bits, w, 0)
                    theirs_s += dt
                    theirs = float(((dec.astype(np.float64) - w.astype(np.float64)) ** 2).sum())
                    ours = float(e["sse"])
                    ours_sse_total += ours
                    theirs_sse_total += theirs
                    if ours > theirs * (1 + 1e-9) + 1e-30:
                        worse += 1
                        tag = "WORSE"
                    elif ours < theirs * (1 - 1e-9):
                        better += 1
                        tag = "better"
                    else:
                        equal += 1
                        tag = "equal"
                    if a.verbose or (tag == "WORSE" and mode == "kmeans-lut"):
                        print(f"  {name} {mode} {bits}-bit {e['name']} {w.shape}: SSE ours {ours:.6g} coremltools {theirs:.6g} ({tag}); "
                              f"ms ours {e['milliseconds']:.1f} coremltools {dt * 1000:.1f}")
                ratio = theirs_s / ours_s if ours_s > 0 else float("inf")
                print(f"{name} {mode:10s} {bits:2d}-bit: {len(entries)} tensors; SSE ours {ours_sse_total:.6g} vs coremltools "
                      f"{theirs_sse_total:.6g} (better {better}, equal {equal}, worse {worse}); encode seconds ours {ours_s:.3f} "
                      f"(whole pass {log['seconds']:.2f}, process {wall:.2f}) vs coremltools {theirs_s:.3f}: {ratio:.1f}x", flush=True)
                if a.check_sse and mode == "kmeans-lut" and worse:
                    failures += worse
    if failures:
        print(f"FAIL: {failures} tensor(s) with a k-means SSE above coremltools'", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
