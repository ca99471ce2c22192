#!/usr/bin/env python3
"""Keras models through Shrinkwrap, against Keras' own outputs (`make crosscheck-keras`).

For every NAME.h5 / NAME.keras / NAME.savedmodel (folder) / NAME.pb (frozen graph) in DIR
with its NAME.<ext>.json (inputs and `model(x)` outputs, written by
Scripts/make_keras_fixtures.py --set=crosscheck in the Keras 2 venv — .h5, SavedModel,
frozen .pb — and the Keras 3 venv — .keras), this script
  1. runs the Keras file with `shrinkwrap run` and compares every output with Keras';
  2. converts it with `shrinkwrap convert` to .onnx, .tflite, .mlmodel and .mlpackage, and
     runs the .onnx with onnxruntime (ORT_PYTHON, the main venv), the .tflite with
     tf.lite.Interpreter (this venv), and the Core ML files with Shrinkwrap's interpreter
     after coremltools has loaded them (the .mlpackage through its MIL loader);
     Core ML predictions need macOS.
A comparison passes when max |a - b| <= TOL * max(1, max |b|) and the norm of the error
is <= TOL of the norm of Keras' output (TOL 1e-4). A conversion the output format
cannot hold is a failure that names the ops. Exit 1 on any failure.

usage: keras_crosscheck.py DIR SHRINKWRAP ORT_PYTHON
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from crosscheck_common import finish, last_error, ours_run, sanitized  # noqa: E402

TOL = 1e-4
FORMATS = ["onnx", "tflite", "mlmodel", "mlpackage"]


def expected(path):
    """Keras' inputs and outputs, each as (name, array)."""
    with open(path + ".json") as f:
        j = json.load(f)
    ins = [(e["name"], np.array(e["data"], dtype=e["dtype"]).reshape(e["shape"])) for e in j["inputs"]]
    outs = [(e.get("name"), np.array(e["data"], dtype=np.float32).reshape(e["shape"])) for e in j["outputs"]]
    return ins, outs


def paired(ours, theirs):
    """Our names against Keras' (name, value) list: by name when every Keras name is among ours
    (a SavedModel's signature sorts its outputs by key), else in order."""
    names = [n for n, _ in theirs]
    if all(n is not None and n in ours for n in names):
        return [ours.index(n) for n in names]
    return list(range(len(theirs)))


def inspect(shrinkwrap, path):
    r = subprocess.run([shrinkwrap, "inspect", path, "--json"], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError("shrinkwrap inspect: " + last_error(r.stderr))
    j = json.loads(r.stdout)
    return [i["name"] for i in j["inputs"]], [o["name"] for o in j["outputs"]]


def compare(got, want):
    if got.shape != want.shape:
        return "shape %s, Keras %s" % (got.shape, want.shape)
    err = np.abs(got.astype(np.float64) - want.astype(np.float64))
    worst = float(err.max()) if err.size else 0.0
    rel = float(np.linalg.norm(err) / max(np.linalg.norm(want.astype(np.float64)), 1e-30))
    scale = max(1.0, float(np.abs(want).max()) if want.size else 1.0)
    if worst > TOL * scale or rel > TOL:
        return "max error %.3g, relative %.3g" % (worst, rel)
    return None


def run_onnx(ort_python, path, feeds, tmp):
    np.savez(os.path.join(tmp, "feeds.npz"), **feeds)
    script = ("import numpy as np, onnxruntime as ort, sys\n"
              "s = ort.InferenceSession(sys.argv[1], providers=['CPUExecutionProvider'])\n"
              "f = dict(np.load(sys.argv[2]))\n"
              "ys = s.run(None, f)\n"
              "np.savez(sys.argv[3], *ys)\n")
    out = os.path.join(tmp, "ort.npz")
    r = subprocess.run([ort_python, "-c", script, path, os.path.join(tmp, "feeds.npz"), out], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError("onnxruntime: " + last_error(r.stderr))
    z = np.load(out)
    return [z["arr_%d" % i] for i in range(len(z.files))]


def run_tflite(path, feeds, output_names):
    import tensorflow as tf
    it = tf.lite.Interpreter(model_path=path)
    by_name = {d["name"]: d for d in it.get_input_details()}
    for name, x in feeds.items():
        d = by_name.get(name) or it.get_input_details()[list(feeds).index(name)]
        it.resize_tensor_input(d["index"], x.shape)
    it.allocate_tensors()
    for name, x in feeds.items():
        d = by_name.get(name) or it.get_input_details()[list(feeds).index(name)]
        it.set_tensor(d["index"], x.astype(d["dtype"]))
    it.invoke()
    outs = {d["name"]: it.get_tensor(d["index"]) for d in it.get_output_details()}
    return [outs[n] for n in output_names]


def coreml_loads(ort_python, path):
    """coremltools (main venv) loads the spec; a .mlpackage also through its MIL loader."""
    script = ("import sys, coremltools as ct\n"
              "from coremltools.converters.mil.frontend.milproto.load import load as mil_load\n"
              "m = ct.models.MLModel(sys.argv[1], skip_model_load=True)\n"
              "spec = m.get_spec()\n"
              "if spec.WhichOneof('Type') == 'mlProgram':\n"
              "    mil_load(spec, specification_version=spec.specificationVersion, file_weights_dir=m.weights_dir)\n")
    r = subprocess.run([ort_python, "-c", script, path], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError("coremltools: " + last_error(r.stderr))


def check_file(shrinkwrap, ort_python, path, failed):
    name = os.path.basename(path)
    ins, want_named = expected(path)
    input_names, output_names = inspect(shrinkwrap, path)
    feeds = {input_names[k]: ins[j][1] for j, k in enumerate(paired(input_names, ins))}
    order = paired(output_names, want_named)
    want = [w for _, w in want_named]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        def report(what, outs):
            problems = [p for p in (compare(np.asarray(o), w) for o, w in zip(outs, want)) if p]
            if len(outs) != len(want):
                problems.append("%d outputs, Keras %d" % (len(outs), len(want)))
            rows.append((what, problems))
        try:
            got = ours_run(shrinkwrap, path, feeds, os.path.join(tmp, "src"), 600)
            report("shrinkwrap run", [got.get(sanitized(output_names[k]), np.zeros(0)) for k in order])
        except Exception as e:  # noqa: BLE001 - reported as a failed row
            rows.append(("shrinkwrap run", [str(e)]))
        for fmt in FORMATS:
            out = os.path.join(tmp, "model." + fmt)
            r = subprocess.run([shrinkwrap, "convert", path, "-o", out], capture_output=True, text=True, timeout=1200)
            if r.returncode != 0:
                rows.append(("convert → ." + fmt, [last_error(r.stderr)]))
                continue
            try:
                # The converted file keeps the source's inputs and outputs, in order.
                if fmt == "onnx":
                    outs = run_onnx(ort_python, out, feeds, tmp)
                    report("onnxruntime .onnx", [outs[k] if k < len(outs) else np.zeros(0) for k in order])
                elif fmt == "tflite":
                    names = inspect(shrinkwrap, out)[1]
                    report("tf.lite .tflite", run_tflite(out, feeds, [names[k] for k in order if k < len(names)]))
                else:
                    coreml_loads(ort_python, out)
                    _, names = inspect(shrinkwrap, out)
                    got = ours_run(shrinkwrap, out, feeds, os.path.join(tmp, fmt), 600)
                    report("coremltools loads ." + fmt + ", shrinkwrap runs it",
                           [got.get(sanitized(names[k]), np.zeros(0)) if k < len(names) else np.zeros(0) for k in order])
            except Exception as e:  # noqa: BLE001
                rows.append((fmt, [str(e)]))
    for what, problems in rows:
        print("  %-8s %-55s %s" % (name, what, "ok" if not problems else "FAILED: " + "; ".join(problems)))
        if problems:
            failed.append("%s %s" % (name, what))
    return len(rows)


def main():
    folder, shrinkwrap, ort_python = sys.argv[1:4]
    files = sorted(f for f in os.listdir(folder) if f.endswith((".h5", ".keras", ".savedmodel", ".pb")))
    failed, total = [], 0
    for f in files:
        total += check_file(shrinkwrap, ort_python, os.path.join(folder, f), failed)
    finish(total, failed, "checks")


if __name__ == "__main__":
    main()
