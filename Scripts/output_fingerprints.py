#!/usr/bin/env python3
"""Fingerprints of everything a shrinkwrap binary writes for a fixed set of commands, so that
a refactor can prove its outputs byte-identical: `make fingerprints` writes the list for the
current build, and two lists are compared with `diff` (or --compare OLD.txt).

Commands (the ones a pure refactor must not change):
  - the demo sweep (make demo): the digits sample over its 300 test images, every variant and
    the JSON / CSV / Markdown / HTML reports;
  - the sample release pipeline (make demo-release): each .mlmodel and report;
  - convert of every light model (.testdata/models, `make testdata`) × {onnx, tflite, mlmodel}
    × {float, fp16, linear 8, kmeans-lut 4}.

Reports carry wall times; those fields (and lines of the text reports that print them) are
removed before hashing, and everything else is hashed as written.
"""
import argparse, glob, hashlib, json, os, re, shutil, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMING_KEYS = {"seconds", "milliseconds", "encodeSeconds", "encode_seconds", "wallSeconds", "wall_seconds",
               "generated", "date", "elapsed", "elapsedSeconds", "elapsed_seconds", "threads"}
# Text lines that print a time: "… in 1.23 s", "12.3 ms", "(0.8 s)".
TIME_RE = re.compile(r"\b\d+(\.\d+)?\s?(s|ms|seconds)\b")


def strip_timing(x):
    if isinstance(x, dict):
        return {k: strip_timing(v) for k, v in x.items() if k not in TIMING_KEYS and "second" not in k.lower()}
    if isinstance(x, list):
        return [strip_timing(v) for v in x]
    return x


def digest(path):
    data = open(path, "rb").read()
    if path.endswith(".json"):
        data = json.dumps(strip_timing(json.loads(data)), sort_keys=True).encode()
    elif path.endswith((".md", ".csv", ".html", ".txt")):
        data = "\n".join(TIME_RE.sub("<time>", l) for l in data.decode("utf-8", "replace").splitlines()).encode()
    return hashlib.sha256(data).hexdigest()


def run(cmd, log):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log.write(f"$ {' '.join(cmd)}\n(exit {r.returncode})\n")
    return r.returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shrinkwrap", required=True)
    ap.add_argument("--out", required=True, help="work folder (emptied first)")
    ap.add_argument("--list", required=True, help="where to write the fingerprint list")
    ap.add_argument("--no-light", action="store_true", help="skip the light-model converts")
    ap.add_argument("--compare", help="a list written before: exit 1 when they differ")
    a = ap.parse_args()
    bin_ = os.path.abspath(a.shrinkwrap)
    out = os.path.abspath(a.out)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    log = open(os.path.join(out, "commands.log"), "w")
    codes = {}

    # The demo sweep (Makefile: out/demo/sweep.md).
    demo = os.path.join(out, "demo")
    codes["demo"] = run([bin_, "sweep", f"{ROOT}/Samples/digits/digits.tflite", "--data", f"{ROOT}/Samples/digits/test",
                         "--min-elements", "0", "--out-dir", f"{demo}/variants", "--quiet",
                         "--report", f"{demo}/sweep.json", "--report", f"{demo}/sweep.csv",
                         "--report", f"{demo}/sweep.html", "--report", f"{demo}/sweep.md"], log)

    # The release pipeline (Makefile: demo-release).
    rel = os.path.join(out, "release-demo")
    for d in ("models", "data/digits", "data/sentiment"):
        os.makedirs(os.path.join(rel, d))
    for m in ("Samples/digits/digits.tflite", "Samples/sentiment/sentiment.tflite"):
        shutil.copy2(os.path.join(ROOT, m), os.path.join(rel, "models"))
    for f in glob.glob(f"{ROOT}/Samples/digits/test/*.png"):
        shutil.copy2(f, f"{rel}/data/digits/")
    for f in glob.glob(f"{ROOT}/Samples/sentiment/test/*.txt"):
        shutil.copy2(f, f"{rel}/data/sentiment/")
    codes["release"] = run(["make", "--no-print-directory", "-s", "-C", rel, "-f", f"{ROOT}/Samples/release/Makefile",
                            f"SHRINKWRAP={bin_}", "MIN_AGREEMENT=90"], log)

    # Converts of the light models.
    modes = {"float": [], "fp16": ["--mode", "fp16"], "linear8": ["--mode", "linear", "--bits", "8"],
             "kmeans4": ["--mode", "kmeans-lut", "--bits", "4"]}
    models = [] if a.no_light else sorted(glob.glob(f"{ROOT}/.testdata/models/light_*.onnx"))
    if not a.no_light and not models:
        print("*** light models missing (make testdata): converts NOT fingerprinted ***", file=sys.stderr)
    for m in models:
        name = os.path.basename(m)[:-5]
        for tag, flags in modes.items():
            for ext in ("onnx", "tflite", "mlmodel"):
                dst = os.path.join(out, "convert", f"{name}.{tag}.{ext}")
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                codes[os.path.basename(dst)] = run([bin_, "convert", m, "-o", dst, *flags], log)

    lines = []
    for k, c in sorted(codes.items()):
        lines.append(f"exit {c} {k}")
    for dirpath, _, files in os.walk(out):
        for f in files:
            p = os.path.join(dirpath, f)
            rel_p = os.path.relpath(p, out)
            if rel_p == "commands.log":
                continue
            lines.append(f"{digest(p)} {rel_p}")
    lines.sort()
    with open(a.list, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print(f"fingerprints: {len(lines)} lines → {a.list}")
    if a.compare:
        old = open(a.compare).read().splitlines()
        if old != lines:
            diff = sorted(set(old) ^ set(lines))
            print(f"OUTPUTS DIFFER from {a.compare}: {len(diff)} lines", file=sys.stderr)
            for l in diff[:40]:
                print(("  before " if l in old else "  after  ") + l, file=sys.stderr)
            return 1
        print(f"identical to {a.compare}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
