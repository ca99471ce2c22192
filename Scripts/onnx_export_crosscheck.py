#!/usr/bin/env python3
"""Check the .onnx files `shrinkwrap convert` writes, with onnx and onnxruntime.

usage: onnx_export_crosscheck.py --shrinkwrap .build/release/shrinkwrap
           [--modes float,fp16,linear8,...] [--timeout S] MODEL...
MODEL may be any format shrinkwrap reads (.onnx, .tflite, .mlmodel).

For every model and every mode (see MODES; `--modes all` is every mode and
width 1-8 bits):
  1. `shrinkwrap convert MODEL -o OUT.onnx FLAGS`; its "wrote" line gives the
     file's layout: bytes = compressed weight bytes + graph bytes (+x %);
  2. onnx.checker.check_model(OUT, full_check=True) must pass;
  3. onnxruntime (CPU) and `shrinkwrap run` run OUT.onnx on the same seeded
     inputs, with the input of a final Softmax exposed as an extra output (a
     saturated softmax would hide differences); every output must satisfy
        max|ours - ort| <= 1e-4 * max(1, max|ort|);
  4. the file must be within 2 % of its compressed weight bytes + graph bytes;
  5. float (no compression) from an .onnx is the round trip ONNX -> IR -> ONNX: every
     initializer of the source must be in OUT with the same dtype, shape and
     bits, and onnxruntime must give the source's outputs (same bound).
One line per model and mode, a summary, exit status 1 on any failure.
Without onnxruntime / onnx the script says so loudly and exits 2 (the
Makefile installs them in the project venv).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

from crosscheck_common import finish, last_error, max_diff, ours_run, sanitized

try:
    import onnx
    from onnx import numpy_helper
    import onnxruntime as ort
    from ort_crosscheck import make_inputs
except ImportError as err:  # pragma: no cover
    print(f"SKIPPED: ONNX export cross-check needs onnx and onnxruntime ({err}); run it from the project venv (make venv)")
    sys.exit(2)

RTOL = 1e-4
MAX_OVERHEAD = 0.02

MODES = {
    "float": [],
    "fp16": ["--mode", "fp16"],
    "linear8": ["--mode", "linear", "--bits", "8"],
    "linear8-sym": ["--mode", "linear", "--bits", "8", "--symmetric"],
    "linear8-exact": ["--mode", "linear", "--bits", "8", "--exact-zero"],
    "linear4-channel": ["--mode", "linear", "--bits", "4", "--granularity", "per-channel"],
    "linear4-block32-sym": ["--mode", "linear", "--bits", "4", "--granularity", "per-block:32", "--symmetric"],
    "linear4-block32": ["--mode", "linear", "--bits", "4", "--granularity", "per-block:32"],
    "linear-lut4": ["--mode", "linear-lut", "--bits", "4"],
    "kmeans-lut4": ["--mode", "kmeans-lut", "--bits", "4"],
    "kmeans-lut4-grouped": ["--mode", "kmeans-lut", "--bits", "4", "--granularity", "per-grouped-channel:16"],
}
for _b in range(1, 9):
    MODES[f"linear{_b}"] = ["--mode", "linear", "--bits", str(_b)]
    MODES[f"linear-lut{_b}"] = ["--mode", "linear-lut", "--bits", str(_b)]
    MODES[f"kmeans-lut{_b}"] = ["--mode", "kmeans-lut", "--bits", str(_b)]
ALL = ["float", "fp16"] + [f"{m}{b}" for m in ("linear", "linear-lut", "kmeans-lut") for b in range(8, 0, -1)]

LAYOUT = re.compile(r"wrote .*: (\d+) bytes = (\d+) compressed weight bytes \+ (\d+) graph bytes \(([-+0-9.]+) %\), opset (\d+)")










def suite_inputs(source, out):
    """The inputs of an ONNX test-suite model (test_data_set_0/input_*.pb beside it), by the export's input names."""
    d = os.path.join(os.path.dirname(source), "test_data_set_0")
    if not os.path.isdir(d):
        return None
    m = onnx.load(out, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    names = [i.name for i in m.graph.input if i.name not in inits]
    files = sorted(f for f in os.listdir(d) if f.startswith("input_") and f.endswith(".pb"))
    if len(files) != len(names):
        return None
    feeds = {}
    for name, f in zip(names, files):
        t = onnx.TensorProto()
        with open(os.path.join(d, f), "rb") as fh:
            t.ParseFromString(fh.read())
        feeds[name] = numpy_helper.to_array(t)
    return feeds


def with_logits(path, out):
    """A copy where the input of each final Softmax (reached from a graph output through
    shape-only ops) is also an output (written to `out`), or `path` itself."""
    m = onnx.load(path)
    outs = {o.name for o in m.graph.output}
    producer = {o: n for n in m.graph.node for o in n.output}
    extra = []
    for name in list(outs):
        n = producer.get(name)
        for _ in range(4):
            if n is None:
                break
            if n.op_type in ("Softmax", "LogSoftmax"):
                if n.input[0] not in outs and n.input[0] not in extra:
                    extra.append(n.input[0])
                break
            if n.op_type not in ("Reshape", "Flatten", "Identity", "Squeeze", "Unsqueeze"):
                break
            n = producer.get(n.input[0])
    if not extra:
        return path
    for name in extra:
        m.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    onnx.save(m, out)
    return out


def ort_run(path, feeds):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.log_severity_level = 3
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in s.get_outputs()]
    return dict(zip(names, s.run(names, feeds)))




def compare(ours, ref, what):
    texts, bad = [], []
    for name, r in ref.items():
        o = ours.get(sanitized(name))
        if o is None:
            return [], [f"no output '{name}' from {what} (have {sorted(ours)})"]
        if list(o.shape) != list(r.shape):
            return [], [f"output '{name}': shape {list(o.shape)} vs {list(r.shape)} ({what})"]
        if np.isnan(o).any() or np.isnan(r).any():
            if not np.array_equal(np.isnan(o), np.isnan(r)):
                return [], [f"output '{name}': NaN in different places ({what})"]
            o, r = np.nan_to_num(o), np.nan_to_num(r)
        tol = RTOL * max(1.0, float(np.max(np.abs(r))) if r.size else 0.0)
        err = max_diff(o, r)
        text = f"{err:.1e}"
        texts.append(text)
        if err > tol:
            bad.append(f"output '{name}' max|d|={err:.2e} > {tol:.2e} ({what})")
    return texts, bad


def same_initializers(source, out):
    """Every initializer of `source` must be in `out`, bit for bit."""
    a = onnx.load(source)
    b = {t.name: t for t in onnx.load(out).graph.initializer}
    for t in a.graph.initializer:
        u = b.get(t.name)
        if u is None:
            return f"initializer '{t.name}' is missing"
        x, y = numpy_helper.to_array(t), numpy_helper.to_array(u)
        if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
            return f"initializer '{t.name}' differs ({x.dtype}{list(x.shape)} vs {y.dtype}{list(y.shape)})"
    return None


def check(args, source, mode, tmp):
    out = os.path.join(tmp, f"model.{mode}.onnx")
    r = subprocess.run([args.shrinkwrap, "convert", source, "-o", out] + MODES[mode], capture_output=True, text=True,
                       timeout=args.timeout)
    if r.returncode != 0:
        return False, "convert: " + last_error(r.stderr)
    m = LAYOUT.search(r.stderr)
    if not m:
        return False, "convert printed no layout line: " + last_error(r.stderr)
    file_bytes, weight_bytes, graph_bytes, opset = int(m[1]), int(m[2]), int(m[3]), int(m[5])
    if file_bytes != os.path.getsize(out):
        return False, f"layout says {file_bytes} bytes, the file has {os.path.getsize(out)}"
    overhead = file_bytes / max(1, weight_bytes + graph_bytes) - 1
    onnx.checker.check_model(out, full_check=True)
    probe = with_logits(out, os.path.join(tmp, "probe.onnx"))
    feeds = suite_inputs(source, out) or make_inputs(out, seed=3, arange=False)
    ref = ort_run(probe, feeds)
    ours = ours_run(args.shrinkwrap, probe, feeds, tmp, args.timeout)
    texts, bad = compare(ours, ref, "ours vs onnxruntime")
    extra = ""
    if mode == "float" and source.endswith(".onnx"):
        # The graph outputs of both files (the exposed logits may be named differently after import).
        mine = ort_run(out, feeds)
        try:
            src, who = ort_run(source, feeds), "onnxruntime"
        except Exception as err:  # an old opset onnxruntime no longer runs: ours on the source instead
            src, who = ours_run(args.shrinkwrap, source, feeds, tmp, args.timeout), "shrinkwrap (onnxruntime cannot run the source: " + \
                (str(err).strip().splitlines() or [""])[0][:80] + ")"
            src = {k: src.get(sanitized(k)) for k in mine if src.get(sanitized(k)) is not None}
        _, rt_bad = compare({sanitized(k): v for k, v in mine.items()}, src, f"round trip vs source in {who}")
        bad += rt_bad
        diff = same_initializers(source, out)
        if diff:
            bad.append(diff)
        extra = ", initializers bit for bit"
    if overhead > MAX_OVERHEAD:
        bad.append(f"file {file_bytes} bytes is {overhead * 100:.1f} % over weights {weight_bytes} + graph {graph_bytes}")
    msg = (f"opset {opset}, {file_bytes} B = {weight_bytes} + {graph_bytes} ({overhead * 100:+.2f} %), "
           f"max|d| {' '.join(texts)}{extra}")
    if bad:
        return False, msg + ": " + "; ".join(bad)
    return True, msg


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shrinkwrap", required=True)
    ap.add_argument("--modes", default="float,fp16,linear8,linear4-channel,linear4-block32-sym,linear4-block32,linear-lut4,kmeans-lut2")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--skip", action="append", default=[], metavar="FILE=REASON",
                    help="do not check FILE (a model file name), and say why, loudly")
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    skips = dict(s.split("=", 1) if "=" in s else (s, "no reason given") for s in args.skip)
    for label, reason in skips.items():
        print(f"SKIPPED {label}: {reason}")
    args.models = [m for m in args.models if os.path.basename(m) not in skips]
    modes = ALL if args.modes == "all" else [m for m in args.modes.split(",") if m]
    for m in modes:
        if m not in MODES:
            sys.exit(f"unknown mode {m}; known: {', '.join(MODES)}")
    print(f"onnx {onnx.__version__}, onnxruntime {ort.__version__}")
    width = max(len(os.path.basename(os.path.dirname(m))) + len(os.path.basename(m)) + 1 for m in args.models) + max(len(m) for m in modes) + 2
    failed = []
    for source in args.models:
        for mode in modes:
            with tempfile.TemporaryDirectory(prefix="onnx-export-") as tmp:
                try:
                    ok, msg = check(args, source, mode, tmp)
                except (RuntimeError, ValueError, subprocess.TimeoutExpired, onnx.checker.ValidationError) as err:
                    ok, msg = False, (str(err).strip().splitlines() or [type(err).__name__])[0]
                except Exception as err:  # onnxruntime raises its own exception types
                    ok, msg = False, f"{type(err).__name__}: " + (str(err).strip().splitlines() or [""])[0]
            base = os.path.basename(source)
            # .../test_x/model.onnx is named by its folder.
            name = f"{os.path.basename(os.path.dirname(source)) + '/' + base if base == 'model.onnx' else base} {mode}"
            if not ok:
                failed.append(name)
            print(f"{'PASS' if ok else 'FAIL':5s} {name:{width}s} {msg}", flush=True)
    finish(len(args.models) * len(modes), failed)


if __name__ == "__main__":
    main()
