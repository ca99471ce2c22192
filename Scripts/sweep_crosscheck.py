#!/usr/bin/env python3
"""Re-derive `shrinkwrap sweep` agreement numbers with onnxruntime.

For each chosen variant, the ONNX model's initializers are replaced by the
weights shrinkwrap decoded for that variant (`sweep --dump-weights DIR`), the
original and the variant run in onnxruntime over the same .npy inputs (sorted
file names, as shrinkwrap reads a folder), and the top-1 / top-5 agreement of
the first output must equal the numbers in shrinkwrap's JSON report.

usage: sweep_crosscheck.py --model M.onnx --data DIR --report R.json --weights DIR [--variants linear-4,kmeans-lut-2]
"""
import argparse
import json
import os
import sys

import numpy as np


def top1_top5(ref, cand):
    """One row per entry of the leading (batch) axis, the rest flattened into the class axis
    ([1, 1000, 1, 1] is one row of 1000 scores), as shrinkwrap reads score vectors.
    Returns (top-1 matches, top-5 matches, rows)."""
    rows = ref.shape[0] if ref.ndim >= 2 else 1
    r = ref.reshape(rows, -1)
    c = cand.reshape(rows, -1)
    t1 = t5 = 0
    for a, b in zip(r, c):
        ra = int(np.argmax(a))  # first index of the maximum, as shrinkwrap breaks ties
        # candidate top-k: stable descending order, lower index first among ties
        order = sorted(range(len(b)), key=lambda i: (-float(b[i]), i))
        k = min(5, len(b))
        t1 += int(order[0] == ra)
        t5 += int(ra in order[:k])
    return t1, t5, len(r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--variants", default="linear-4,kmeans-lut-2")
    a = ap.parse_args()

    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    ort.set_default_logger_severity(3)  # no warnings about initializers listed as graph inputs

    with open(a.report) as f:
        report = json.load(f)
    model = onnx.load(a.model)
    files = sorted(f for f in os.listdir(a.data) if f.endswith(".npy"))
    if not files:
        print(f"sweep cross-check: no .npy files in {a.data}", file=sys.stderr)
        return 2
    inputs = [np.load(os.path.join(a.data, f)) for f in files]
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ref_sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    in_name = ref_sess.get_inputs()[0].name
    refs = [ref_sess.run(None, {in_name: x})[0] for x in inputs]

    failures = 0
    for tag in a.variants.split(","):
        mode, _, bits = tag.rpartition("-")
        if mode == "":
            mode, bits = tag, "16"
        variant = next((v for v in report["variants"] if v["mode"] == mode and str(v["bits"]) == bits), None)
        if variant is None:
            print(f"FAIL {tag}: not in the report")
            failures += 1
            continue
        wdir = os.path.join(a.weights, tag)
        with open(os.path.join(wdir, "manifest.json")) as f:
            manifest = json.load(f)
        m = onnx.ModelProto()
        m.CopyFrom(model)
        by_name = {init.name: init for init in m.graph.initializer}
        for entry in manifest:
            arr = np.load(os.path.join(wdir, entry["file"])).astype(np.float32)
            init = by_name[entry["name"]]
            init.CopyFrom(numpy_helper.from_array(arr.reshape(tuple(init.dims)), entry["name"]))
        sess = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        t1 = t5 = rows = 0
        for x, r in zip(inputs, refs):
            c = sess.run(None, {in_name: x})[0]
            a1, a5, n = top1_top5(r, c)
            t1 += a1
            t5 += a5
            rows += n
        ours = variant["outputs"][0]
        theirs1, theirs5 = 100.0 * t1 / rows, 100.0 * t5 / rows
        ok = abs(ours["top1Agreement"] - theirs1) < 1e-9 and abs(ours["top5Agreement"] - theirs5) < 1e-9
        failures += 0 if ok else 1
        print(f"{'ok  ' if ok else 'FAIL'} {tag}: onnxruntime top-1 {theirs1:.2f}% ({t1}/{rows}), top-5 {theirs5:.2f}% ({t5}/{rows}); "
              f"shrinkwrap top-1 {ours['top1Agreement']:.2f}%, top-5 {ours['top5Agreement']:.2f}% "
              f"({len(manifest)} weights replaced)")
    print(f"sweep cross-check: {len(a.variants.split(','))} variants, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
