#!/usr/bin/env python3
"""Check .tflite files written by `shrinkwrap convert` in tf.lite.Interpreter.

usage: tflite_export_crosscheck.py --shrinkwrap .build/release/shrinkwrap
           [--fixtures .testdata/tflite [--only PATTERN]...]
           [MODEL.onnx|MODEL.mlmodel|MODEL.tflite ...]
           [--modes float,fp16,linear8] [--timeout S]

Runs in the TensorFlow venv (.venv-tf). For every source model and every mode:
  1. `shrinkwrap convert SOURCE -o OUT.tflite` (fp16: --mode fp16; linear8:
     --mode linear --bits 8 --symmetric, the per-channel int8 form TFLite's
     dynamic-range kernels read);
  2. tf.lite.Interpreter runs OUT.tflite and `shrinkwrap run OUT.tflite` runs
     the same file on the same inputs (the fixture's .npy inputs from the
     manifest, else seeded normal floats);
  3. every output must have the same shape and
       float / fp16:   max|ours - tflite| <= 1e-4 * max(1, max|tflite|)
       linear8:        ours computes in float with the decoded int8 weights;
                       TFLite's dynamic-range kernels also quantize their
                       activations on the fly. So, strictly,
                         max|ours - tflite'| <= 1e-4 * scale
                       where tflite' runs a copy of the file whose int8
                       weights read by CONV_2D / DEPTHWISE_CONV_2D /
                       FULLY_CONNECTED are dequantized to float32 (by the
                       file's own scales, zero points, axis); and loosely,
                       against the hybrid kernels themselves,
                         max|ours - tflite| <= 2 * max|tflite - float| + max|ours - float| + 1e-3 * scale
                       with float = TFLite's output of the float32 export.
     For fixtures (converter-made .tflite files) the float export must also
     give the converter file's own reference outputs (the round trip
     .tflite -> IR -> .tflite), within the same bound.
One line per file and mode, a summary, exit status 1 on any failure.
"""
import argparse
import fnmatch
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from crosscheck_common import finish, last_error, max_diff, ours_run, sanitized

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

MODES = {
    "float": [],
    "fp16": ["--mode", "fp16"],
    "linear8": ["--mode", "linear", "--bits", "8", "--symmetric"],
}
FLOAT_RTOL = 1e-4








def tflite_run(path, feeds):
    it = tf.lite.Interpreter(model_path=path)
    it.allocate_tensors()
    for d in it.get_input_details():
        it.set_tensor(d["index"], feeds[d["name"]].astype(d["dtype"]))
    it.invoke()
    return {d["name"]: it.get_tensor(d["index"]) for d in it.get_output_details()}


def input_details(path):
    it = tf.lite.Interpreter(model_path=path)
    return [(d["name"], list(d["shape"]), d["dtype"]) for d in it.get_input_details()]




HYBRID_OPS = {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"}


def dequantize_hybrid_weights(src, dst):
    """Copy of `src` where every int8 constant read directly by a dynamic-range kernel
    (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED) is float32 = scale * (q - zero_point)."""
    from tensorflow.lite.python import schema_py_generated as schema
    from tensorflow.lite.tools import flatbuffer_utils as fu
    model = fu.read_model(src)
    names = {v: k for k, v in schema.BuiltinOperator.__dict__.items() if not k.startswith("_")}
    sg = model.subgraphs[0]
    hybrid_inputs = set()
    for op in sg.operators:
        code = model.operatorCodes[op.opcodeIndex]
        if names.get(max(code.builtinCode, code.deprecatedBuiltinCode)) in HYBRID_OPS:
            hybrid_inputs.update(int(i) for i in op.inputs if i >= 0)
    for k in sorted(hybrid_inputs):
        t = sg.tensors[k]
        if t.type != schema.TensorType.INT8 or t.quantization is None or not t.buffer:
            continue
        q = np.frombuffer(bytes(model.buffers[t.buffer].data), dtype=np.int8).astype(np.float64).reshape(list(t.shape))
        scale = np.asarray(t.quantization.scale, dtype=np.float64)
        zp = np.asarray(t.quantization.zeroPoint if t.quantization.zeroPoint is not None else [0] * len(scale), dtype=np.float64)
        shape = [1] * q.ndim
        if len(scale) > 1:
            shape[t.quantization.quantizedDimension] = -1
        w = ((q - zp.reshape(shape)) * scale.reshape(shape)).astype(np.float32)
        model.buffers[t.buffer].data = np.frombuffer(w.tobytes(), dtype=np.uint8)
        t.type = schema.TensorType.FLOAT32
        t.quantization = None
    fu.write_model(model, dst)


def convert(args, source, out, flags):
    r = subprocess.run([args.shrinkwrap, "convert", source, "-o", out] + flags, capture_output=True, text=True,
                       timeout=args.timeout)
    if r.returncode != 0:
        raise RuntimeError("convert: " + last_error(r.stderr))


def check(args, source, mode, fixture_inputs, fixture_refs, tmp):
    """Returns (ok, message)."""
    out = os.path.join(tmp, f"model.{mode}.tflite")
    convert(args, source, out, MODES[mode])
    details = input_details(out)
    note = ""
    if fixture_inputs is not None and all(list(fixture_inputs[n].shape) == s for n, s, _ in details if n in fixture_inputs) \
            and all(n in fixture_inputs for n, _, _ in details):
        feeds = fixture_inputs
    else:
        if fixture_inputs is not None:
            # The export fixes a free batch axis to 1; the source's reference used another batch.
            note = " (export has fixed shapes " + ", ".join(f"{n} {s}" for n, s, _ in details) + \
                "; seeded inputs, source file not compared)"
            fixture_refs = None
        rng = np.random.default_rng(0)
        feeds = {}
        for name, shape, dtype in details:
            if np.issubdtype(dtype, np.floating):
                feeds[name] = rng.standard_normal(shape).astype(np.float32)
            else:
                feeds[name] = rng.integers(0, 2, shape).astype(dtype)
    ref = tflite_run(out, feeds)
    ours = ours_run(args.shrinkwrap, out, feeds, tmp, args.timeout)
    dequant = None
    plain = None
    if mode == "linear8":
        # TFLite's own int8 error on this model: its hybrid output against its output of the float export.
        float_file = os.path.join(tmp, "model.float.tflite")
        convert(args, source, float_file, [])
        plain = tflite_run(float_file, feeds)
        # The same file with the int8 weights the kernels read turned into float32 by TFLite's own numbers:
        # TFLite then computes what ours does (float with the decoded weights), so this must agree tightly.
        dequant_file = os.path.join(tmp, "model.linear8-dequantized.tflite")
        dequantize_hybrid_weights(out, dequant_file)
        dequant = tflite_run(dequant_file, feeds)
    texts, bad = [], []
    for name, r in ref.items():
        o = ours.get(sanitized(name))
        if o is None:
            return False, f"no output '{name}' from shrinkwrap (wrote {sorted(ours)})"
        if list(o.shape) != list(r.shape):
            return False, f"output '{name}': shape {list(o.shape)}, TFLite {list(r.shape)}"
        scale = max(1.0, float(np.max(np.abs(r))) if r.size else 0.0)
        err = max_diff(o, r)
        if dequant is not None:
            # Strict: ours vs TFLite on the dequantized weights. Loose: ours vs TFLite's hybrid kernels,
            # which also quantize activations, within both sides' distance from the float model.
            strict = max_diff(o, dequant[name])
            tol = FLOAT_RTOL * scale
            hybrid_q = max_diff(r, plain[name])
            ours_q = max_diff(o, plain[name])
            loose_tol = 2 * hybrid_q + ours_q + 1e-3 * scale
            text = (f"max|d|={strict:.2e} tol={tol:.2e} vs TFLite on dequantized weights; hybrid kernels "
                    f"max|d|={err:.2e} tol={loose_tol:.2e} (TFLite int8 vs float {hybrid_q:.2e}, ours vs float {ours_q:.2e})")
            if err > loose_tol:
                bad.append(text)
            err = strict
        else:
            tol = FLOAT_RTOL * scale
            text = f"max|d|={err:.2e} tol={tol:.2e}"
        if fixture_refs is not None and mode == "float":
            want = fixture_refs.get(name)
            if want is None:
                return False, f"exported file has output '{name}', the source file does not"
            rt = max_diff(r, want)
            text += f", vs source file {rt:.2e}"
            if rt > tol:
                bad.append(text)
        if err > tol:
            bad.append(text)
        texts.append(text if len(ref) == 1 else f"{name}: {text}")
    if bad:
        return False, "; ".join(bad)
    return True, "; ".join(texts) + note


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shrinkwrap", required=True)
    ap.add_argument("--fixtures", help="folder with manifest.json (converter-made .tflite files)")
    ap.add_argument("--only", action="append", default=[], metavar="PATTERN")
    ap.add_argument("--modes", default="float,fp16,linear8")
    ap.add_argument("--fixture-modes", help="modes for fixtures whose name matches --fixture-modes-only (default: --modes)")
    ap.add_argument("--fixture-modes-only", default="op_*", metavar="PATTERN")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--skip", action="append", default=[], metavar="FILE=REASON",
                    help="do not check FILE (a fixture or model file name), and say why, loudly")
    ap.add_argument("models", nargs="*")
    args = ap.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    for m in modes:
        if m not in MODES:
            sys.exit(f"unknown mode {m}; known: {', '.join(MODES)}")

    jobs = []  # (label, source, inputs, refs)
    if args.fixtures:
        with open(os.path.join(args.fixtures, "manifest.json")) as f:
            manifest = json.load(f)
        for e in manifest:
            if e["variant"] != "float32":
                continue
            if args.only and not any(fnmatch.fnmatch(e["file"], p) or p in e["file"] for p in args.only):
                continue
            inputs = {i["name"]: np.load(os.path.join(args.fixtures, i["file"])) for i in e["inputs"]}
            refs = {o["name"]: np.load(os.path.join(args.fixtures, o["file"])) for o in e["outputs"]}
            jobs.append((e["file"], os.path.join(args.fixtures, e["file"]), inputs, refs))
    for m in args.models:
        # .../light_squeezenet/model.onnx is named by its folder.
        base = os.path.basename(m)
        label = os.path.basename(os.path.dirname(m)) + "/" + base if base.startswith("model.") else base
        jobs.append((label, m, None, None))
    if not jobs:
        sys.exit("nothing to check")

    skips = dict(s.split("=", 1) if "=" in s else (s, "no reason given") for s in args.skip)
    for label, reason in skips.items():
        print(f"SKIPPED {label}: {reason}")
    jobs = [j for j in jobs if j[0] not in skips]
    width = max(len(j[0]) for j in jobs) + 9
    failed = []
    total = 0
    for label, source, inputs, refs in jobs:
        job_modes = modes
        if args.fixture_modes and refs is not None and fnmatch.fnmatch(label, args.fixture_modes_only):
            job_modes = [m for m in args.fixture_modes.split(",") if m]
        for mode in job_modes:
            total += 1
            with tempfile.TemporaryDirectory(prefix="tflite-export-") as tmp:
                try:
                    ok, msg = check(args, source, mode, inputs, refs, tmp)
                except (RuntimeError, ValueError, subprocess.TimeoutExpired) as err:
                    ok, msg = False, str(err).splitlines()[0] if str(err) else type(err).__name__
            name = f"{label} {mode}"
            if not ok:
                failed.append(name)
            print(f"{'PASS' if ok else 'FAIL':5s} {name:{width}s} {msg}", flush=True)
    finish(total, failed)


if __name__ == "__main__":
    main()
