#!/usr/bin/env python3
"""Inference speed on the real-model corpus: shrinkwrap vs the peer runtime, same inputs, same run.

For each corpus model with real inputs cached (make corpus corpus-inputs), --rounds times
alternately:
  ours:  `shrinkwrap bench MODEL --data NAME=FOLDER … --threads T --runs N` (warm-up, then N timed
         runs taking the real samples in turn; median ms; process start and model load excluded);
  peer:  onnxruntime's CPU provider for .onnx, tf.lite.Interpreter with its default XNNPACK
         delegate for .tflite, T threads, the same samples in turn (warm-up, then N timed runs,
         median ms).
The table shows the median over rounds of each, the ratio ours / peer, and per peer the geometric
mean and the worst ratio. Models without real inputs, and sources neither peer runs (.mlpackage),
are listed as SKIPPED.

usage: bench_corpus.py --shrinkwrap BIN [--runs 20] [--rounds 3] [--threads 2] [--only ID …]
                       [--json OUT.json] [--markdown OUT.md]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402
import corpus_baseline as baseline  # noqa: E402
import corpus_coverage as coverage  # noqa: E402

PEERS = {".onnx": "onnxruntime", ".tflite": "tf.lite + XNNPACK"}
# tf.lite.Interpreter cannot run MediaPipe's custom Convolution2DTransposeBias: it times a copy with the
# op replaced by its builtin twin (TRANSPOSE_CONV with a bias input; corpus_coverage.builtin_twin).


def peer_time(model, samples_json, runs, threads):
    """Median ms of the peer on the samples in turn (run inside the peer's venv)."""
    import numpy as np
    samples = [[(n, np.load(p)) for n, p in s] for s in json.load(open(samples_json))]
    if model.endswith(".onnx"):
        import onnxruntime as ort
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        s = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
        names = [i.name for i in s.get_inputs()]
        feeds = [{n: a for n, a in sample if n in names} if {n for n, _ in sample} >= set(names)
                 else {n: a for n, (_, a) in zip(names, sample)} for sample in samples]
        step = lambda k: s.run(None, feeds[k % len(feeds)])  # noqa: E731
    else:
        import tensorflow as tf
        # MediaPipe's CUSTOM Convolution2DTransposeBias: tf.lite runs its builtin twin (as coverage does).
        twin = coverage.builtin_twin(model, os.path.dirname(os.path.abspath(samples_json)))
        it = tf.lite.Interpreter(model_path=twin, num_threads=threads)
        details = it.get_input_details()
        by_name = {d["name"]: d for d in details}
        first = [(by_name.get(n) or details[j], a) for j, (n, a) in enumerate(samples[0])]
        for d, a in first:
            if list(d["shape"]) != list(a.shape):
                it.resize_tensor_input(d["index"], list(a.shape))
        it.allocate_tensors()
        arranged = [[(by_name.get(n) or details[j], a) for j, (n, a) in enumerate(sample)] for sample in samples]

        def step(k):
            it.reset_all_variables()
            for d, a in arranged[k % len(arranged)]:
                it.set_tensor(d["index"], a)
            it.invoke()
    for k in range(3):
        step(k)
    times = []
    for k in range(runs):
        t0 = time.perf_counter()
        step(k)
        times.append((time.perf_counter() - t0) * 1000)
    print(json.dumps({"median_ms": float(np.median(times))}))


def data_args(samples):
    """--data NAME=FOLDER (every sample's file of an input in one folder) or NAME=FILE (one file for all)."""
    args = []
    for j, (name, _) in enumerate(samples[0]):
        paths = sorted({s[j][1] for s in samples})
        args += ["--data", f"{name}={os.path.dirname(paths[0]) if len(paths) > 1 else paths[0]}"]
    return args


def run_json(cmd, timeout):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        lines = [l for l in r.stderr.strip().splitlines() if l.strip() and "Warning" not in l]
        raise RuntimeError((lines[-1] if lines else f"exit {r.returncode}")[:300])
    return json.loads(r.stdout.strip().splitlines()[-1])


def bench(entry, a, work):
    model = corpus.model_path(entry)
    ext = os.path.splitext(model)[1]
    if ext not in PEERS:
        return {"id": entry["id"], "skipped": f"a {ext} source: no peer runtime times it here"}
    real = coverage.real_inputs(entry, limit=1 << 30)  # every sample: both sides cycle through the same ones
    if real is None:
        return {"id": entry["id"], "skipped": "no real inputs cached (make corpus-inputs)"}
    samples, _, described = real
    listing = os.path.join(work, f"{entry['id']}.samples.json")
    json.dump([[[n, p] for n, p in s] for s in samples], open(listing, "w"))
    python = baseline.VENV_PY if ext == ".onnx" else baseline.VENV_TF_PY
    ours_cmd = [a.shrinkwrap, "bench", model, "--runs", str(a.runs), "--threads", str(a.threads), "--json"] + data_args(samples)
    peer_cmd = [python, os.path.abspath(__file__), "peer-time", model, listing, str(a.runs), str(a.threads)]
    ours, peer = [], []
    try:
        for _ in range(a.rounds):
            ours.append(run_json(ours_cmd, a.timeout)["median_ms"])
            peer.append(run_json(peer_cmd, a.timeout)["median_ms"])
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        return {"id": entry["id"], "failed": str(e)}
    o, p = sorted(ours)[len(ours) // 2], sorted(peer)[len(peer) // 2]
    return {"id": entry["id"], "format": ext, "peer": PEERS[ext], "inputs": described, "ours_ms": o, "peer_ms": p,
            "ratio": o / p if p > 0 else float("inf"), "rounds": {"ours": ours, "peer": peer}}


def summary(results):
    lines = []
    for ext, name in PEERS.items():
        ratios = [r["ratio"] for r in results if r.get("format") == ext]
        if ratios:
            gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
            worst = max((r for r in results if r.get("format") == ext), key=lambda r: r["ratio"])
            lines.append(f"- vs {name}: {len(ratios)} models, geometric mean ratio {gm:.2f}, worst {worst['ratio']:.2f} ({worst['id']})")
    return lines


def markdown(results, a):
    out = [f"Shrinkwrap vs the peer runtime on the real-model corpus: median ms per run, {a.threads} threads each, "
           f"{a.runs} timed runs over the real samples in turn, median of {a.rounds} alternating rounds "
           "(Scripts/bench_corpus.py).", "",
           "| model | source | peer | inputs | shrinkwrap ms | peer ms | ratio |", "|---|---|---|---|---:|---:|---:|"]
    for r in results:
        if "ratio" in r:
            out.append(f"| {r['id']} | {r['format']} | {r['peer']} | {r['inputs']} | {r['ours_ms']:.2f} | {r['peer_ms']:.2f} | {r['ratio']:.2f} |")
    out.append("")
    out += summary(results)
    for r in results:
        if "skipped" in r:
            out.append(f"- SKIPPED {r['id']}: {r['skipped']}")
        if "failed" in r:
            out.append(f"- FAILED {r['id']}: {r['failed']}")
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "peer-time":
        return peer_time(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shrinkwrap", required=True)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--json", help="write the results as JSON")
    ap.add_argument("--markdown", help="write the table as Markdown")
    ap.add_argument("--work", default=os.path.join(corpus.ROOT, "out", "bench-corpus"))
    a = ap.parse_args()
    a.shrinkwrap = os.path.abspath(a.shrinkwrap)
    os.makedirs(a.work, exist_ok=True)
    entries = corpus.load_manifest()["models"]
    if a.only:
        unknown = set(a.only) - {e["id"] for e in entries}
        if unknown:
            sys.exit(f"bench_corpus: unknown model ids: {', '.join(sorted(unknown))}")
        entries = [e for e in entries if e["id"] in a.only]
    results = []
    for e in entries:
        r = bench(e, a, a.work)
        results.append(r)
        if "ratio" in r:
            print(f"{r['id']}: ours {r['ours_ms']:.2f} ms, {r['peer']} {r['peer_ms']:.2f} ms, ratio {r['ratio']:.2f}", flush=True)
        else:
            print(f"{r['id']}: {'SKIPPED ' + r['skipped'] if 'skipped' in r else 'FAILED ' + r['failed']}", flush=True)
    text = markdown(results, a)
    print(text)
    if a.markdown:
        open(a.markdown, "w").write(text)
    if a.json:
        json.dump({"threads": a.threads, "runs": a.runs, "rounds": a.rounds, "models": results}, open(a.json, "w"), indent=1)
    return 1 if any("failed" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
