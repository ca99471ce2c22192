#!/usr/bin/env python3
"""Check `shrinkwrap run` on TensorFlow Lite files against tf.lite.Interpreter.

usage: tflite_crosscheck.py --shrinkwrap .build/release/shrinkwrap
                            --fixtures .testdata/tflite
                            [--only PATTERN] [--allow-import-errors]
                            [--threads N] [--timeout S] [--verbose]

The fixtures (made by Scripts/make_tflite_fixtures.py with TensorFlow; `make
testdata` writes them to .testdata/tflite) come with manifest.json: per .tflite
file its inputs (tensor name, .npy file), its outputs (tensor name, .npy file
with TFLite's reference values) and, for dynamic-range *.int8.tflite files,
the float32 model's outputs on the same inputs. This script needs NumPy only
(no TensorFlow), so it runs in the main venv.

For every manifest entry (or those whose file name matches --only, a glob or a
substring; repeatable):
  1. `shrinkwrap inspect FILE --json`: if it fails, the file was not imported.
     That is a FAIL with shrinkwrap's one-line error, or, with
     --allow-import-errors, a loud NOT IMPORTED line that does not change the
     exit status (to follow an importer's progress).
  2. `shrinkwrap run FILE -i NAME=INPUT.npy ... --output-dir TMP`; shrinkwrap
     writes each output as <name>.npy with every character that is not a
     letter, a digit or one of "-_." replaced by "_" (ModelRunner.fileName(for:)
     in Sources/Shrinkwrap/RunModel.swift), e.g. StatefulPartitionedCall:0 ->
     StatefulPartitionedCall_0.npy.
  3. Every output must have TFLite's shape and satisfy, with ref = TFLite's
     output of the same file:
       float32 / fp16:  max|ours - ref| <= 1e-4 * max(1, max|ref|)
       int8 (dynamic range): TFLite's hybrid kernels quantize activations on
         the fly, shrinkwrap computes in float with dequantized weights, so
         the bound comes from TFLite's own quantization error, tf_float being
         the float32 model's output:
           max|ours - ref| <= 2 * max|ref - tf_float| + 1e-3 * max(1, max|ref|)
         and the line also shows max|ours - tf_float|.
One line per file (PASS / FAIL / NOT IMPORTED with the numbers), then a
summary. Exit status 1 if any file failed, else 0.
"""
import argparse
import fnmatch
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

FLOAT_RTOL = 1e-4
INT8_SLACK = 2.0
INT8_RTOL = 1e-3


def sanitized(name):
    """ModelRunner.fileName(for:): letters, digits and -_. kept, the rest '_'.
    (Swift tests whole Characters, Python code points; TFLite names are ASCII.)"""
    s = "".join(c if c.isalpha() or c.isnumeric() or c in "-_." else "_" for c in name)
    return s or "output"


def one_line_error(stderr, path):
    """shrinkwrap's last 'error:' line, without the 'shrinkwrap: error: FILE:' prefix."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    errs = [l for l in lines if "error:" in l]
    line = (errs or lines or ["(no message)"])[-1]
    if line.startswith("shrinkwrap: error:"):
        line = line[len("shrinkwrap: error:"):].strip()
    for p in (os.path.realpath(path), os.path.abspath(path), path):
        if line.startswith(p + ":"):
            return line[len(p) + 1:].strip()
    return line


def selected(entry, patterns):
    if not patterns:
        return True
    f = entry["file"]
    return any(fnmatch.fnmatch(f, p) or p in f for p in patterns)


def max_abs(a):
    return float(np.max(np.abs(a))) if a.size else 0.0


def max_diff(a, b):
    return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0


def check_entry(entry, args):
    """Returns (status, message): status is PASS, FAIL or NOT IMPORTED."""
    fixtures = args.fixtures
    path = os.path.join(fixtures, entry["file"])
    try:
        r = subprocess.run([args.shrinkwrap, "inspect", path, "--json"], capture_output=True,
                           text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return "FAIL", f"inspect timed out after {args.timeout} s"
    if r.returncode != 0:
        return "NOT IMPORTED", one_line_error(r.stderr, path)

    with tempfile.TemporaryDirectory(prefix="tflite-crosscheck-") as tmp:
        if args.via:
            # .tflite → shrinkwrap convert → .mlmodel (or another format), then run that file instead.
            converted = os.path.join(tmp, "model." + args.via)
            try:
                r = subprocess.run([args.shrinkwrap, "convert", path, "-o", converted], capture_output=True,
                                   text=True, timeout=args.timeout)
            except subprocess.TimeoutExpired:
                return "FAIL", f"convert timed out after {args.timeout} s"
            if r.returncode != 0:
                return "FAIL", "convert: " + one_line_error(r.stderr, path)
            path = converted
        cmd = [args.shrinkwrap, "run", path, "--output-dir", tmp]
        for i in entry["inputs"]:
            cmd += ["-i", f"{i['name']}={os.path.join(fixtures, i['file'])}"]
        if args.threads:
            cmd += ["--threads", str(args.threads)]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            return "FAIL", f"run timed out after {args.timeout} s"
        if r.returncode != 0:
            if args.verbose:
                sys.stderr.write(r.stderr)
            return "FAIL", "run: " + one_line_error(r.stderr, path)
        written = sorted(f for f in os.listdir(tmp) if f.endswith(".npy"))

        is_int8 = entry["variant"] == "int8"
        floats = entry.get("float_reference") if is_int8 else None
        worst = None  # (ratio, text) of the output closest to / furthest over its bound
        notes = []
        for k, out in enumerate(entry["outputs"]):
            want = sanitized(out["name"]) + ".npy"
            if want not in written:
                return "FAIL", (f"no output '{out['name']}' ({want}); shrinkwrap wrote: "
                                + (", ".join(written) or "nothing"))
            ours = np.load(os.path.join(tmp, want))
            ref = np.load(os.path.join(fixtures, out["file"]))
            if list(ours.shape) != list(ref.shape):
                return "FAIL", f"output '{out['name']}' has shape {list(ours.shape)}, TFLite's is {list(ref.shape)}"
            if not np.all(np.isfinite(ours.astype(np.float64))):
                return "FAIL", f"output '{out['name']}' has NaN or infinite values"
            err = max_diff(ours, ref)
            scale = max(1.0, max_abs(ref))
            if is_int8 and floats:
                tf_float = np.load(os.path.join(fixtures, floats[k]))
                tf_quant_err = max_diff(ref, tf_float)
                tol = INT8_SLACK * tf_quant_err + INT8_RTOL * scale
                vs_float = max_diff(ours, tf_float)
                text = (f"max|d|={err:.2e} tol={tol:.2e} (TFLite int8 vs float {tf_quant_err:.2e}, "
                        f"ours vs TFLite float {vs_float:.2e})")
            else:
                tol = FLOAT_RTOL * scale
                text = f"max|d|={err:.2e} tol={tol:.2e}"
            if len(entry["outputs"]) > 1:
                text = f"{out['name']}: " + text
            ratio = err / tol if tol > 0 else (0.0 if err == 0 else float("inf"))
            if ratio > 1.0:
                notes.append(text)
            if worst is None or ratio > worst[0]:
                worst = (ratio, text)
        if notes:
            return "FAIL", "; ".join(notes)
        return "PASS", worst[1] if worst else "no outputs"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shrinkwrap", required=True, help="the shrinkwrap binary")
    ap.add_argument("--fixtures", required=True, help="the folder with manifest.json")
    ap.add_argument("--only", action="append", default=[], metavar="PATTERN",
                    help="only files whose name matches this glob or contains this text (repeatable)")
    ap.add_argument("--allow-import-errors", action="store_true",
                    help="report files shrinkwrap cannot import as NOT IMPORTED instead of failing")
    ap.add_argument("--threads", type=int, default=None, help="passed to shrinkwrap run --threads")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per shrinkwrap call (default 300)")
    ap.add_argument("--verbose", action="store_true", help="show shrinkwrap's stderr when a run fails")
    ap.add_argument("--via", metavar="EXT", help="convert each file to this format first (e.g. mlmodel) and check the converted file")
    args = ap.parse_args()

    with open(os.path.join(args.fixtures, "manifest.json")) as f:
        manifest = json.load(f)
    entries = [e for e in manifest if selected(e, args.only)]
    if not entries:
        sys.exit(f"no manifest entry matches {args.only}")

    width = max(len(e["file"]) for e in entries)
    counts = {"PASS": 0, "FAIL": 0, "NOT IMPORTED": 0}
    failed = []
    for e in entries:
        status, msg = check_entry(e, args)
        if status == "NOT IMPORTED" and not args.allow_import_errors:
            status, msg = "FAIL", "import: " + msg
        counts[status] += 1
        if status == "FAIL":
            failed.append(e["file"])
        label = "NOT IMPORTED" if status == "NOT IMPORTED" else status
        print(f"{label:12s} {e['file']:{width}s}  {msg}", flush=True)

    print(f"\n{len(entries)} files: {counts['PASS']} passed, {counts['FAIL']} failed"
          + (f", {counts['NOT IMPORTED']} NOT IMPORTED (allowed by --allow-import-errors)"
             if counts["NOT IMPORTED"] else ""))
    if failed:
        print("failed: " + " ".join(failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
