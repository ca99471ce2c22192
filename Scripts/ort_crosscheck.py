#!/usr/bin/env python3
"""Run onnxruntime and Shrinkwrap on the same models and inputs; compare.

For every model: expose the input of a final Softmax as an extra output
(softmax of large logits saturates to one-hot and would hide differences),
make one seeded input per graph input (uniform [0, 1)
floats, or arange(n)/n with --arange, the light models' convention), save
them as .npy, run `shrinkwrap run` on them, run onnxruntime (CPU, 2 threads)
on the same arrays, and print per output the max abs diff and the relative
diff max|ours - ort| / max|ort|. Exits 1 when a relative diff exceeds --rtol.

usage: ort_crosscheck.py --shrinkwrap BIN [--rtol 1e-4] [--arange] MODEL...
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

NP_TYPES = {1: np.float32, 10: np.float16, 11: np.float64, 6: np.int32, 7: np.int64, 9: np.bool_, 2: np.uint8, 3: np.int8}


def make_inputs(model_path: str, seed: int, arange: bool):
    m = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    feeds = {}
    rng = np.random.default_rng(seed)
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1 for d in tt.shape.dim)
        dt = NP_TYPES.get(tt.elem_type, np.float32)
        if arange:
            n = int(np.prod(shape))
            x = (np.arange(n).reshape(shape) / n).astype(dt)
        elif np.issubdtype(dt, np.floating):
            x = rng.random(shape).astype(dt)
        else:
            x = rng.integers(0, 4, shape).astype(dt)
        feeds[vi.name] = x
    return feeds


def expose_logits(path: str, tmp: str) -> str:
    """A copy of the model whose final Softmax's input is also an output."""
    m = onnx.load(path)
    outs = {o.name for o in m.graph.output}
    extra = [n.input[0] for n in m.graph.node if n.op_type in ("Softmax", "LogSoftmax") and n.output[0] in outs and n.input[0] not in outs]
    if not extra:
        return path
    for name in extra:
        m.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    out = os.path.join(tmp, "with_logits.onnx")
    onnx.save(m, out)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shrinkwrap", required=True)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--arange", action="store_true")
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    worst_ok = True
    print("%-28s %-22s %12s %12s  %s" % ("model", "output", "max abs", "rel", "ok"))
    for path in args.models:
        name = os.path.basename(path)
        if name == "model.onnx":
            name = os.path.basename(os.path.dirname(path))
        feeds = make_inputs(path, seed=7, arange=args.arange)
        with tempfile.TemporaryDirectory() as tmp:
            path = expose_logits(path, tmp)
            cmd = [args.shrinkwrap, "run", path, "--output-dir", os.path.join(tmp, "out")]
            for k, v in feeds.items():
                p = os.path.join(tmp, "in_%d.npy" % len(cmd))
                np.save(p, v)
                cmd += ["--input", "%s=%s" % (k, p)]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print("%-28s shrinkwrap failed: %s" % (name, r.stderr.strip()))
                worst_ok = False
                continue
            so = ort.SessionOptions()
            so.intra_op_num_threads = 2
            so.inter_op_num_threads = 1
            so.log_severity_level = 3
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            ref = sess.run(None, feeds)
            for o, want in zip(sess.get_outputs(), ref):
                fn = "".join(c if c.isalnum() or c in "-_." else "_" for c in o.name) or "output"
                got = np.load(os.path.join(tmp, "out", fn + ".npy"))
                if got.shape != want.shape:
                    print("%-28s %-22s shape %s vs ort %s  FAIL" % (name, o.name[:22], got.shape, want.shape))
                    worst_ok = False
                    continue
                diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
                mabs = float(diff.max()) if diff.size else 0.0
                scale = float(np.abs(want).max()) if want.size else 0.0
                rel = mabs / scale if scale > 0 else mabs
                ok = rel <= args.rtol
                worst_ok &= ok
                print("%-28s %-22s %12.3e %12.3e  %s" % (name, o.name[:22], mabs, rel, "ok" if ok else "FAIL"))
    print("crosscheck: %s" % ("all within rel %.0e" % args.rtol if worst_ok else "FAILURES"))
    return 0 if worst_ok else 1


if __name__ == "__main__":
    sys.exit(main())
