#!/usr/bin/env python3
"""Keras -> Core ML ML Program (.mlpackage) fixtures with independent reference data.

usage: python Scripts/make_keras_mlprogram.py OUT_DIR

Runs in .venv-tf (TensorFlow 2.12, coremltools 9.0, scikit-learn 1.5.1; the
pins and why: Scripts/make_keras_coreml.py, whose seeded-weight rules this
script imports). Builds tf.keras models with seeded random weights (never a TF
initializer's), converts each with ct.convert(convert_to="mlprogram") in
float32 and float16, compresses some with coremltools.optimize.coreml, and
writes for every package seeded inputs and Keras' outputs as .npy files, all
described in OUT_DIR/manifest.json.

Models (single input, single output "probs"; every Keras input has batch 1
except linear's batch of 4):
  digits       the digits sample's CNN (Samples/train/train_digits.py):
               image [1,32,32,1] NHWC -> Conv 8 -> pool -> Conv 16 -> pool -> Dense 10 softmax
  sentiment    the sentiment sample's network: int32 ids [1,16] -> Embedding(249,16) ->
               GlobalAveragePooling1D -> Dense 2 softmax
  linear       the linear sample's Dense(1): x [4,1] -> y [4,1] (no softmax)
  mobilenetv2  tf.keras.applications.MobileNetV2(weights=None, input_shape=(96,96,3),
               alpha=0.35, classes=10), then seeded weights and BatchNorm statistics
  text_lstm    int32 ids [1,12] -> Embedding(200,8) -> LSTM(16) -> Dense 3 softmax
               (coremltools keeps TF's loop: while_loop + make_list/list_* ops)
  text_lstm_unrolled  the same weights with LSTM(unroll=True): no loop
  text_gru     Embedding(200,8) -> GRU(16) (reset_after) -> Dense 3 softmax (while_loop)
  text_bilstm  Embedding(200,8) -> Bidirectional(LSTM(8)) -> Dense 3 softmax (two while_loops)
The trained weights of the samples are not in the repository as Keras models,
so their networks are rebuilt with seeded weights.

Variants (package MODEL.TAG.mlpackage):
  fp32      iOS15, compute_precision FLOAT32
  fp16      iOS15, FLOAT16: float32 inputs / outputs, cast ops inside
  fp16io    iOS16, FLOAT16: coremltools' iOS16 default makes float inputs and
            outputs float16 (int32 ids stay int32); inputs are written as float16
  pal2/4/6  palettize_weights kmeans per_tensor, 2/4/6 bits, on the iOS16 fp32 program
  pal{3,4}g{4,16}  palettize_weights kmeans per_grouped_channel, group_size 4 / 16, iOS18
  q8sym     linear_quantize_weights linear_symmetric int8 per_channel, iOS16
  q8asym    linear_quantize_weights linear (asymmetric) int8 per_tensor, iOS16
  q4b32/q8b32  linear_quantize_weights linear_symmetric int4 / int8 per_block block_size 32, iOS18
               (coremltools skips, with a warning, weights whose input axis is not a multiple of 32)
  pal4fp16  palettize_weights kmeans per_tensor 4 bits on the fp16io program
Compression uses weight_threshold=WEIGHT_THRESHOLD so the small models get compressed too.

References (the .output<i>.npy files, float32):
  fp32 packages: Keras' own outputs.
  every other package: Keras run on the weights coremltools decodes from the
    package (decompress_weights on the package as saved), mapped back onto
    the Keras layers by keras_weight_map.py (by value; folded BatchNorms
    become an add); fp16io inputs are the float16-rounded inputs. The same
    mapping applied to the fp32 package must reproduce Keras' outputs (checked
    here, max difference in the manifest as mapping_check).
  tolerance (max|ours - ref| <= rtol * max(1, max|ref|)): 1e-4 for packages
    that compute in float32 (fp32 and the compressed ones made from fp32
    programs), FP16_RTOL (chosen, not measured: Core ML / our interpreter in
    float16 activations vs Keras in float32) for fp16, fp16io and pal4fp16.

Determinism: numpy RandomState seeds, TF seeded and single-threaded,
scikit-learn's k-means on one thread; coremltools' conversion date is removed
from the user metadata (its version and source stay: they do not vary), the
model spec is serialized deterministically and Manifest.json's random item
identifiers are replaced by uuid5 of the item path. Two runs give identical
bytes (compare `find OUT -type f | sort | xargs sha256sum`).
"""
import json
import os
import platform
import sys
import time
import uuid

import make_keras_coreml as nn_fixtures  # noqa: F401 - sets the quiet / deterministic environment first
import numpy as np
import tensorflow as tf
import coremltools as ct
import coremltools.optimize.coreml as cto
from coremltools.models import model as ct_model_module
from coremltools.proto import Model_pb2

import keras_weight_map

SEED = 20250224
NUM_CASES = 3
OUTPUT_NAME = "probs"
WEIGHT_THRESHOLD = 256
FP32_RTOL = 1e-4
FP16_RTOL = 2e-2
L = tf.keras.layers
C = cto.OptimizationConfig


# --------------------------------------------------------------------------
# models

def seeded(model, rng):
    """Seeded weights for every layer (make_keras_coreml's rules; embeddings N(0, 0.5²))."""
    for layer in model.layers:
        values = []
        for w in layer.weights:
            kind = w.name.split("/")[-1].split(":")[0]
            if kind == "embeddings":
                values.append((rng.standard_normal(tuple(w.shape)) * 0.5).astype(np.float32))
            else:
                values.append(nn_fixtures.random_weight(kind, tuple(w.shape), rng))
        if values:
            layer.set_weights(values)
    return model


def build_digits():
    inp = L.Input((32, 32, 1), batch_size=1, name="image")
    h = L.Conv2D(8, 3, activation="relu", padding="same", name="conv1")(inp)
    h = L.MaxPooling2D(2, name="pool1")(h)
    h = L.Conv2D(16, 3, activation="relu", padding="same", name="conv2")(h)
    h = L.MaxPooling2D(2, name="pool2")(h)
    h = L.Flatten(name="flatten")(h)
    return tf.keras.Model(inp, L.Dense(10, activation="softmax", name="digit")(h), name="digits")


def build_sentiment():
    inp = L.Input((16,), dtype=tf.int32, batch_size=1, name="input_ids")
    h = L.Embedding(249, 16, name="embedding")(inp)
    h = L.GlobalAveragePooling1D(name="average")(h)
    return tf.keras.Model(inp, L.Dense(2, activation="softmax", name="sentiment")(h), name="sentiment")


def build_linear():
    inp = L.Input((1,), batch_size=4, name="x")
    return tf.keras.Model(inp, L.Dense(1, name="y")(inp), name="linear")


def build_mobilenetv2():
    return tf.keras.applications.MobileNetV2(weights=None, input_shape=(96, 96, 3), alpha=0.35, classes=10)


def build_text(kind, unroll=False):
    inp = L.Input((12,), dtype=tf.int32, batch_size=1, name="tokens")
    h = L.Embedding(200, 8, name="embedding")(inp)
    if kind == "lstm":
        h = L.LSTM(16, unroll=unroll, name="lstm")(h)
    elif kind == "gru":
        h = L.GRU(16, name="gru")(h)
    else:
        h = L.Bidirectional(L.LSTM(8), name="bilstm")(h)
    return tf.keras.Model(inp, L.Dense(3, activation="softmax", name="fc")(h), name=f"text_{kind}")


def pal(nbits, granularity="per_tensor", group_size=None):
    extra = {"group_size": group_size} if group_size else {}
    cfg = cto.OpPalettizerConfig(mode="kmeans", nbits=nbits, granularity=granularity,
                                 weight_threshold=WEIGHT_THRESHOLD, **extra)
    return lambda m: cto.palettize_weights(m, C(global_config=cfg))


def lin(mode, dtype, granularity, block_size=None):
    extra = {"block_size": block_size} if block_size else {}
    cfg = cto.OpLinearQuantizerConfig(mode=mode, dtype=dtype, granularity=granularity,
                                      weight_threshold=WEIGHT_THRESHOLD, **extra)
    return lambda m: cto.linear_quantize_weights(m, C(global_config=cfg))


# tag -> (base program, compression, description)
COMPRESSED = {
    "pal2": ("ios16", pal(2), "palettize kmeans per_tensor 2-bit (iOS16)"),
    "pal4": ("ios16", pal(4), "palettize kmeans per_tensor 4-bit (iOS16)"),
    "pal6": ("ios16", pal(6), "palettize kmeans per_tensor 6-bit (iOS16)"),
    "pal3g4": ("ios18", pal(3, "per_grouped_channel", 4), "palettize kmeans per_grouped_channel group 4, 3-bit (iOS18)"),
    "pal4g4": ("ios18", pal(4, "per_grouped_channel", 4), "palettize kmeans per_grouped_channel group 4, 4-bit (iOS18)"),
    "pal3g16": ("ios18", pal(3, "per_grouped_channel", 16), "palettize kmeans per_grouped_channel group 16, 3-bit (iOS18)"),
    "pal4g16": ("ios18", pal(4, "per_grouped_channel", 16), "palettize kmeans per_grouped_channel group 16, 4-bit (iOS18)"),
    "q8sym": ("ios16", lin("linear_symmetric", "int8", "per_channel"), "linear_symmetric int8 per_channel (iOS16)"),
    "q8asym": ("ios16", lin("linear", "int8", "per_tensor"), "linear (asymmetric) int8 per_tensor (iOS16)"),
    "q4b32": ("ios18", lin("linear_symmetric", "int4", "per_block", 32), "linear_symmetric int4 per_block 32 (iOS18)"),
    "q8b32": ("ios18", lin("linear_symmetric", "int8", "per_block", 32), "linear_symmetric int8 per_block 32 (iOS18)"),
    "pal4fp16": ("fp16io", pal(4), "palettize kmeans per_tensor 4-bit on the float16 program (iOS16)"),
}
ALL = list(COMPRESSED)
# name -> (builder, input kind, description, compressed tags, with fp16io)
MODELS = {
    "digits": (build_digits, "image", "the digits sample's CNN, seeded", ALL, True),
    "sentiment": (build_sentiment, "ids249", "the sentiment sample's network, seeded",
                  ["pal2", "pal4", "q8sym", "q8asym", "pal4fp16"], True),
    "linear": (build_linear, "normal", "the linear sample's Dense(1), seeded", [], False),
    "mobilenetv2": (build_mobilenetv2, "image", "MobileNetV2 alpha 0.35, 96x96, 10 classes, seeded",
                    ["pal4", "pal4g16", "q8sym", "q4b32", "pal4fp16"], True),
    "text_lstm": (lambda: build_text("lstm"), "ids200", "Embedding + LSTM(16) + Dense, while_loop",
                  ["pal4", "pal3g4", "q8sym"], False),
    "text_lstm_unrolled": (lambda: build_text("lstm", unroll=True), "ids200",
                           "text_lstm with unroll=True (same weights)", ["pal6"], False),
    "text_gru": (lambda: build_text("gru"), "ids200", "Embedding + GRU(16) + Dense, while_loop", ["q8asym"], False),
    "text_bilstm": (lambda: build_text("bilstm"), "ids200", "Embedding + Bidirectional(LSTM(8)) + Dense", [], False),
}


# --------------------------------------------------------------------------
# packages

def finalize(path):
    """Removes the conversion date, names the output, writes the spec and Manifest.json deterministically."""
    spec_path = os.path.join(path, "Data", "com.apple.CoreML", "model.mlmodel")
    spec = Model_pb2.Model()
    with open(spec_path, "rb") as f:
        spec.ParseFromString(f.read())
    meta = spec.description.metadata.userDefined
    if ct_model_module._METADATA_CONVERSION_DATE in meta:  # noqa: SLF001
        del meta[ct_model_module._METADATA_CONVERSION_DATE]  # noqa: SLF001
    outs = [o.name for o in spec.description.output]
    if len(outs) != 1:
        raise SystemExit(f"{path}: outputs {outs}")
    if outs[0] != OUTPUT_NAME:
        ct.utils.rename_feature(spec, outs[0], OUTPUT_NAME)
    with open(spec_path, "wb") as f:
        f.write(spec.SerializeToString(deterministic=True))
    manifest_path = os.path.join(path, "Manifest.json")
    with open(manifest_path) as f:
        manifest = json.load(f)
    ids = {old: str(uuid.uuid5(uuid.NAMESPACE_URL, "shrinkwrap-fixture:" + item["path"]))
           for old, item in manifest["itemInfoEntries"].items()}
    manifest["itemInfoEntries"] = {ids[k]: v for k, v in manifest["itemInfoEntries"].items()}
    manifest["rootModelIdentifier"] = ids[manifest["rootModelIdentifier"]]
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=4, sort_keys=True)
        f.write("\n")
    return spec


def iter_ops(block):
    for op in block.operations:
        yield op
        for b in op.blocks:
            yield from iter_ops(b)


def program_facts(mlmodel):
    prog = mlmodel._mil_program  # noqa: SLF001
    counts = {}
    for op in iter_ops(prog.functions["main"]):
        counts[op.op_type] = counts.get(op.op_type, 0) + 1
    return dict(sorted(counts.items()))


def float_consts(mlmodel):
    """{name: value} of every float const of the program (nested blocks included)."""
    out = {}
    for op in iter_ops(mlmodel._mil_program.functions["main"]):  # noqa: SLF001
        if op.op_type == "const":
            v = op.outputs[0].val
            if isinstance(v, np.ndarray) and np.issubdtype(v.dtype, np.floating):
                out[op.outputs[0].name] = v
    return out


def io_desc(features):
    out = []
    for f in features:
        t = f.type.multiArrayType
        dtype = {65568: "float32", 65552: "float16", 131104: "int32"}.get(t.dataType, str(t.dataType))
        out.append({"name": f.name, "shape": [int(d) for d in t.shape], "dtype": dtype})
    return out


def make_inputs(kind, shape):
    rng = np.random.RandomState(SEED + sum(map(ord, kind)))
    if kind == "image":
        return [rng.uniform(0.0, 1.0, shape).astype(np.float32) for _ in range(NUM_CASES)]
    if kind.startswith("ids"):
        return [rng.randint(0, int(kind[3:]), shape).astype(np.int32) for _ in range(NUM_CASES)]
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(NUM_CASES)]


def keras_outputs(model, inputs):
    return [np.asarray(model(x, training=False), dtype=np.float32) for x in inputs]


def max_rel(outs, refs):
    return max(float(np.max(np.abs(a.astype(np.float64) - b)) / max(1.0, float(np.max(np.abs(b)))))
               for a, b in zip(outs, refs))


# --------------------------------------------------------------------------
# conversion and references

TARGETS = {"fp32": (ct.target.iOS15, ct.precision.FLOAT32), "fp16": (ct.target.iOS15, ct.precision.FLOAT16),
           "fp16io": (ct.target.iOS16, ct.precision.FLOAT16), "ios16": (ct.target.iOS16, ct.precision.FLOAT32),
           "ios18": (ct.target.iOS18, ct.precision.FLOAT32)}


def convert(kmodel, base, input_name, shape):
    target, precision = TARGETS[base]
    return ct.convert(kmodel, source="tensorflow", convert_to="mlprogram", minimum_deployment_target=target,
                      compute_precision=precision, inputs=[ct.TensorType(name=input_name, shape=shape)])


def load_program(path):
    """(MLModel, program rebuilt from the saved spec by coremltools' milproto loader)."""
    from coremltools.converters.mil.frontend.milproto import load as milproto_load
    ml = ct.models.MLModel(path, skip_model_load=True)
    spec = ml.get_spec()
    return ml, milproto_load.load(spec, spec.specificationVersion, ml.weights_dir)


def reference(kmodel, path, base, inputs, keras_refs):
    """(outputs, facts) of Keras run on the weights coremltools decodes from the package at path;
    base = (match, consts) of the uncompressed program the package was made from."""
    ml, prog = load_program(path)
    compressed = {op.outputs[0].name for op in iter_ops(prog.functions["main"])
                  if op.op_type.startswith("constexpr_")}
    consts = float_consts(cto.decompress_weights(ml))
    try:
        found, worst = keras_weight_map.transfer(base[0], base[1], consts, kmodel)
    except AssertionError as e:
        return keras_refs, {"compressed_consts": len(compressed), "mapped_consts": 0, "unmatched_consts": [],
                            "reference": f"keras_float: {e}"}
    unmatched = sorted(n for n, v in consts.items() if n not in found and np.size(v) >= 2)
    facts = {"compressed_consts": len(compressed), "mapped_consts": len(found),
             "worst_mapped_error": worst, "unmatched_consts": unmatched}
    lost = sorted(compressed - set(found))
    if lost:
        facts["reference"] = f"keras_float: compressed consts not mapped to Keras weights: {lost[:5]}"
        return keras_refs, facts
    ref_model = keras_weight_map.apply(kmodel, consts, found)
    facts["reference"] = "keras_on_decompressed_weights"
    return keras_outputs(ref_model, inputs), facts


def save_package(mlmodel, out_dir, pkg):
    path = os.path.join(out_dir, pkg + ".mlpackage")
    mlmodel.save(path)
    spec = finalize(path)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
    return path, spec, size


def write_cases(out_dir, pkg, input_name, in_files, outputs):
    cases = []
    for i, y in enumerate(outputs):
        yi = f"{pkg}.output{i}.npy"
        np.save(os.path.join(out_dir, yi), y)
        cases.append({"inputs": {input_name: in_files[i]}, "outputs": {OUTPUT_NAME: yi}})
    return cases


def model_packages(name, kmodel, kind, compressed_tags, with_fp16io, out_dir):
    """Converts, compresses and saves one model's packages; returns their manifest entries."""
    input_name = kmodel.input_names[0]
    shape = tuple(d if d is not None else 1 for d in kmodel.input.shape)
    inputs = make_inputs(kind, shape)
    def save_inputs(suffix, xs):
        files = [f"{name}{suffix}.input{i}.npy" for i in range(len(xs))]
        for f, x in zip(files, xs):
            np.save(os.path.join(out_dir, f), x)
        return files
    in_files = {"": save_inputs("", inputs)}
    if with_fp16io and inputs[0].dtype == np.float32:
        in_files["fp16"] = save_inputs(".fp16io", [x.astype(np.float16) for x in inputs])
    keras_refs = keras_outputs(kmodel, inputs)
    fp16_inputs = [x.astype(np.float16).astype(np.float32) if x.dtype == np.float32 else x for x in inputs]
    bases = {"fp32", "fp16"} | {COMPRESSED[t][0] for t in compressed_tags} | ({"fp16io"} if with_fp16io else set())
    programs = {b: convert(kmodel, b, input_name, shape) for b in sorted(bases)}
    base_maps = {}
    for b, mlmodel in programs.items():
        consts = float_consts(mlmodel)
        found, _ = keras_weight_map.match(consts, kmodel)
        base_maps[b] = (found, consts)
    jobs = [("fp32", "fp32", programs["fp32"], "float32, iOS15", ["float", "fp32", "ios15"]),
            ("fp16", "fp16", programs["fp16"], "float16 compute, float32 I/O with casts, iOS15",
             ["float", "fp16", "cast", "ios15"])]
    if with_fp16io:
        jobs.append(("fp16io", "fp16io", programs["fp16io"], "float16 compute and float16 I/O, iOS16",
                     ["float", "fp16", "fp16io", "ios16"]))
    for tag in compressed_tags:
        base, fn, desc = COMPRESSED[tag]
        target = "ios18" if base == "ios18" else "ios16"
        jobs.append((tag, base, fn(programs[base]), desc,
                     ["compressed", "palettized" if tag.startswith("pal") else "quantized", target]
                     + (["fp16"] if base == "fp16io" else [])))
    entries = []
    for tag, base, mlmodel, desc, tags in jobs:
        pkg = f"{name}.{tag}"
        path, spec, size = save_package(mlmodel, out_dir, pkg)
        ins, outs = io_desc(spec.description.input), io_desc(spec.description.output)
        fp16_in = ins[0]["dtype"] == "float16"
        run_inputs = fp16_inputs if fp16_in else inputs
        refs, facts = reference(kmodel, path, base_maps[base], run_inputs, keras_refs)
        fp16_compute = "fp16" in tags
        if tag == "fp32":
            facts["mapping_check"] = max_rel(refs, keras_refs)
            if facts["mapping_check"] > FP32_RTOL:  # folded BatchNorms reorder float32 arithmetic
                raise SystemExit(f"{pkg}: Keras on the package's own weights differs from Keras by "
                                 f"{facts['mapping_check']:.3g}: the const -> Keras mapping is wrong")
            refs, facts["reference"] = keras_refs, "keras"
        elif facts["reference"].startswith("keras_float"):
            print(f"   {pkg}: {facts['reference']}; reference is Keras' float output", file=sys.stderr)
        ops = program_facts(mlmodel)
        if "compressed" in tags and not any(k.startswith("constexpr_") for k in ops):
            raise SystemExit(f"{pkg}: coremltools compressed no weight (weight_threshold / block or group size)")
        entries.append({
            "name": pkg, "model": name, "tag": tag, "tags": tags, "description": desc,
            "file": pkg + ".mlpackage", "bytes": size, "specification_version": spec.specificationVersion,
            "inputs": ins, "outputs": outs, "keras_output_shape": list(keras_refs[0].shape),
            "ops": ops, "constexpr_ops": {k: v for k, v in ops.items() if k.startswith("constexpr_")},
            "cases": write_cases(out_dir, pkg, input_name, in_files["fp16" if fp16_in else ""], refs),
            "tolerance": {"rtol": FP16_RTOL if fp16_compute else FP32_RTOL,
                          "rule": "max|ours - ref| <= rtol * max(1, max|ref|)"},
            "vs_keras_float": max_rel(refs, keras_refs),
            **facts,
        })
        print(f"   {pkg:<32} {size:>9} B  v{spec.specificationVersion} {entries[-1]['constexpr_ops'] or ''} "
              f"ref={facts['reference']} mapped={facts['mapped_consts']} unmatched={len(facts['unmatched_consts'])} "
              f"vs keras float {entries[-1]['vs_keras_float']:.2e}")
    return entries


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    tf.keras.utils.set_random_seed(SEED)
    tf.config.experimental.enable_op_determinism()
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    versions = {"python": platform.python_version(), "tensorflow": tf.__version__,
                "coremltools": ct.__version__, "numpy": np.__version__}
    manifest = {
        "generator": "Scripts/make_keras_mlprogram.py", "seed": SEED, "versions": versions,
        "reference": {
            "keras": "Keras' outputs (float32 packages)",
            "keras_on_decompressed_weights": "Keras run on the weights coremltools.optimize.coreml."
                                             "decompress_weights decodes from the package, mapped back onto the "
                                             "Keras layers (Scripts/keras_weight_map.py); float16 inputs rounded",
            "keras_float": "mapping failed: Keras' float outputs (see the entry's reference text)"},
        "packages": [],
    }
    started = time.time()
    text_lstm = None
    for index, (name, (build, kind, desc, tags, fp16io)) in enumerate(MODELS.items()):
        print(f"######## {name}: {desc}")
        kmodel = build()
        if name == "text_lstm_unrolled":
            kmodel.set_weights(text_lstm.get_weights())
        else:
            seeded(kmodel, np.random.RandomState(SEED + index))
        if name == "text_lstm":
            text_lstm = kmodel
        for entry in model_packages(name, kmodel, kind, tags, fp16io, out_dir):
            entry["model_description"] = desc
            manifest["packages"].append(entry)
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    total = sum(e["bytes"] for e in manifest["packages"])
    print(f"wrote {len(manifest['packages'])} packages ({total} bytes) to {out_dir} in {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
