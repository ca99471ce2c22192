#!/usr/bin/env python3
"""A full default sweep of a ~3 MB real classifier over 200 real inputs, timed (issue 25's target: <= 10 s
on 2 cores).

The classifier is magika-v3-3 (the corpus' jax2tf-exported file-type model, 3.0 MiB of weights). Its 200
inputs are real files out of the cached corpus wheels (every member of every wheel, sorted by wheel and
name, taken at an even stride), turned into its 2048 byte features by magika 1.0.3's own extractor (the
same as `corpus_inputs_text.magika`, on more files). Steps:
  1. make the inputs (once; .venv-corpus has magika): out/bench/magika200/bytes/NNN.npy
  2. `shrinkwrap sweep MODEL --data bytes=DIR --threads T` (fp16 + linear / linear-lut / kmeans-lut at
     8/4/2/1 bits: 13 variants), timed wall-clock, process start and model load included;
  3. the same sweep with --threads 1, whose report must be byte-identical (the numbers do not depend on
     how the work is spread).
Writes out/bench/sweep.md and .json.

usage: bench_sweep.py --shrinkwrap BIN [--threads 2] [--count 200] [--python-corpus .venv-corpus/bin/python]
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402

TARGET_SECONDS = 10.0

MAKE_INPUTS = r'''
import io, json, os, sys, zipfile
import numpy as np
import magika as mk
from magika.magika import Magika
from magika.types.seekable import Seekable
wheels, out, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
config = json.load(open(os.path.join(os.path.dirname(mk.__file__), "models", "standard_v3_3", "config.min.json")))
members = []
for w in sorted(os.listdir(wheels)):
    with zipfile.ZipFile(os.path.join(wheels, w)) as z:
        members += [(w, i.filename) for i in sorted(z.infolist(), key=lambda i: i.filename) if i.file_size > 0]
step = max(1, len(members) // count)
picked = members[::step][:count]
os.makedirs(out, exist_ok=True)
index = []
for k, (w, name) in enumerate(picked):
    with zipfile.ZipFile(os.path.join(wheels, w)) as z:
        data = z.read(name)
    fs = Magika._extract_features_from_seekable(Seekable(io.BytesIO(data)), config["beg_size"], config["mid_size"], config["end_size"],
                                                config["padding_token"], config["block_size"], config["use_inputs_at_offsets"])
    x = np.asarray([fs.beg[:config["beg_size"]] + fs.end[-config["end_size"]:]], np.int32)
    np.save(os.path.join(out, "%03d.npy" % k), x)
    index.append({"file": "%03d.npy" % k, "wheel": w, "member": name, "bytes": len(data)})
json.dump(index, open(os.path.join(os.path.dirname(out), "index.json"), "w"), indent=1)
print(len(index))
'''


def make_inputs(python, work, count):
    folder = os.path.join(work, "bytes")
    if os.path.isdir(folder) and len([f for f in os.listdir(folder) if f.endswith(".npy")]) == count:
        return folder
    wheels = os.path.join(corpus.cache_dir(), "wheels")
    got = subprocess.run([python, "-c", MAKE_INPUTS, wheels, folder, str(count)], check=True, capture_output=True, text=True)
    made = int(got.stdout.strip().splitlines()[-1])
    if made != count:
        raise SystemExit(f"bench-sweep: only {made} files in the cached wheels (wanted {count})")
    return folder


def sweep(binary, model, folder, threads, report):
    t0 = time.monotonic()
    subprocess.run([binary, "sweep", model, "--data", f"bytes={folder}", "--threads", str(threads), "--quiet",
                    "--report", report], check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shrinkwrap", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--python-corpus", default=os.path.join(corpus.ROOT, ".venv-corpus", "bin", "python"))
    ap.add_argument("--work", default=os.path.join(corpus.ROOT, "out", "bench", "magika200"))
    ap.add_argument("--markdown", default=os.path.join(corpus.ROOT, "out", "bench", "sweep.md"))
    ap.add_argument("--json", default=os.path.join(corpus.ROOT, "out", "bench", "sweep.json"))
    a = ap.parse_args()
    entry = next(e for e in corpus.load_manifest()["models"] if e["id"] == "magika-v3-3")
    model = corpus.model_path(entry)
    if not os.path.exists(model):
        raise SystemExit(f"bench-sweep: {model} is missing (make corpus)")
    folder = make_inputs(a.python_corpus, a.work, a.count)
    parallel_report = os.path.join(a.work, f"report-{a.threads}t.json")
    one_report = os.path.join(a.work, "report-1t.json")
    seconds = sweep(a.shrinkwrap, model, folder, a.threads, parallel_report)
    seconds_one = sweep(a.shrinkwrap, model, folder, 1, one_report)
    identical = open(parallel_report, "rb").read() == open(one_report, "rb").read()
    variants = len(json.load(open(parallel_report))["variants"])
    result = {"model": "magika-v3-3", "inputs": a.count, "variants": variants, "threads": a.threads,
              "seconds": round(seconds, 2), "seconds_1_thread": round(seconds_one, 2), "target_seconds": TARGET_SECONDS,
              "meets_target": seconds <= TARGET_SECONDS, "report_identical_1_vs_n_threads": identical}
    lines = [f"A full default sweep of magika-v3-3 (3.0 MiB, {variants} variants) over {a.count} real inputs "
             f"(Scripts/bench_sweep.py; wall clock, process start included):", "",
             "| threads | seconds | target |", "|---:|---:|---|",
             f"| {a.threads} | {seconds:.1f} | ≤ {TARGET_SECONDS:.0f} s: {'met' if seconds <= TARGET_SECONDS else 'NOT MET'} |",
             f"| 1 | {seconds_one:.1f} | |", "",
             f"- report with {a.threads} threads and with 1 thread: {'byte-identical' if identical else 'DIFFERENT'}"]
    os.makedirs(os.path.dirname(a.markdown), exist_ok=True)
    open(a.markdown, "w").write("\n".join(lines) + "\n")
    json.dump(result, open(a.json, "w"), indent=1)
    print("\n".join(lines))
    if not identical:
        raise SystemExit("bench-sweep: the reports differ between thread counts")


if __name__ == "__main__":
    main()
