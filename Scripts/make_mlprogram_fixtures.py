#!/usr/bin/env python3
"""Core ML ML Program fixtures for the MIL importer (MILImporterTests, MILBlobTests).

Runs in .venv (coremltools 9.0, numpy; no TensorFlow, no Core ML runtime):

    .venv/bin/python Scripts/make_mlprogram_fixtures.py .testdata/mlprogram

Small programs are built with coremltools' MIL builder and converted to
.mlpackage folders (fp32 and fp16 compute precision, iOS 16 / 17 / 18
opsets); some are compressed with coremltools.optimize.coreml. Core ML cannot
predict on Linux, so every reference output is computed here in numpy from
the op definitions coremltools documents (conv / pool / resize / lstm / gru /
rnn written out below), with the weights we generated — or, for compressed
models, the weights coremltools' own constexpr `decompress` gives back
(`materialized_val_inference`), which are saved too so the tests can check
our decoding against them.

A blob storage file written by coremltools' `_BlobStorageWriter` with known
values (blobs.bin + blobs.json) checks our reader and writer.

Everything is seeded: the same coremltools gives the same files.
"""
import json
import os
import shutil
import sys

import numpy as np

import coremltools as ct
import coremltools.optimize.coreml as oc
from coremltools.converters.mil import Builder as mb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mlprogram_reference as ref  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else ".testdata/mlprogram"
RNG = np.random.default_rng(20241126)


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def save_model(model, name):
    path = os.path.join(OUT, name + ".mlpackage")
    if os.path.exists(path):
        shutil.rmtree(path)
    # The conversion date would make the files differ from day to day.
    meta = model.user_defined_metadata
    if "com.github.apple.coremltools.conversion_date" in meta:
        del meta["com.github.apple.coremltools.conversion_date"]
    model.save(path)
    normalize_package(path)
    return name + ".mlpackage"


def normalize_package(path):
    """coremltools writes random item identifiers into Manifest.json and serializes protobuf maps in
    hash order: identifiers derived from the item path and a deterministic serialization make the
    same fixture the same bytes."""
    import uuid
    from coremltools.proto import Model_pb2
    model_file = os.path.join(path, "Data", "com.apple.CoreML", "model.mlmodel")
    spec = Model_pb2.Model()
    with open(model_file, "rb") as f:
        spec.ParseFromString(f.read())
    with open(model_file, "wb") as f:
        f.write(spec.SerializeToString(deterministic=True))
    manifest_file = os.path.join(path, "Manifest.json")
    with open(manifest_file) as f:
        manifest = json.load(f)
    rename = {k: str(uuid.uuid5(uuid.NAMESPACE_URL, v["path"])).upper() for k, v in manifest["itemInfoEntries"].items()}
    manifest["itemInfoEntries"] = {rename[k]: v for k, v in manifest["itemInfoEntries"].items()}
    manifest["rootModelIdentifier"] = rename[manifest["rootModelIdentifier"]]
    with open(manifest_file, "w") as f:
        json.dump(manifest, f, indent=4, sort_keys=True)


def convert(prog, target, fp16=False):
    return ct.convert(prog, convert_to="mlprogram", minimum_deployment_target=target,
                      compute_precision=ct.precision.FLOAT16 if fp16 else ct.precision.FLOAT32)


def npy(name, value):
    np.save(os.path.join(OUT, name + ".npy"), np.ascontiguousarray(value))
    return name + ".npy"


MANIFEST = {"models": [], "blobs": None}


def record(name, model, inputs, outputs, tolerance="fp32", compressed=None, ops=None, labels=None, image=None):
    entry = {"name": name, "file": save_model(model, name), "tolerance": tolerance,
             "inputs": {k: npy(f"{name}.in.{k}", v) for k, v in inputs.items()},
             "outputs": {k: npy(f"{name}.out.{k}", v) for k, v in outputs.items()},
             "compressed": compressed or [], "ops": sorted(ops or []), "labels": labels or [], "image": image}
    MANIFEST["models"].append(entry)


def program_ops(model):
    return {op.op_type for op in model._mil_program.functions["main"].operations}


# ---------------------------------------------------------------- MLP (+ compression)

MLP = {"w1": rand(64, 32, scale=0.2), "b1": rand(64, scale=0.1), "w2": rand(16, 64, scale=0.2), "b2": rand(16, scale=0.1)}


def mlp_program(target, batch=2):
    @mb.program(input_specs=[mb.TensorSpec(shape=(batch, 32))], opset_version=target)
    def prog(x):
        h = mb.linear(x=x, weight=mb.const(val=MLP["w1"], name="w1"), bias=mb.const(val=MLP["b1"], name="b1"), name="h")
        h = mb.relu(x=h, name="h_relu")
        y = mb.linear(x=h, weight=mb.const(val=MLP["w2"], name="w2"), bias=mb.const(val=MLP["b2"], name="b2"), name="logits")
        return mb.softmax(x=y, axis=-1, name="probs")
    return prog


def mlp_reference(x, w):
    h = np.maximum(x @ w["w1"].T + w["b1"], 0)
    return ref.softmax(h @ w["w2"].T + w["b2"], -1)


def decompressed(model):
    """Each compressed weight (a constexpr op's output read by a non-constexpr op) as coremltools'
    decompress_weights gives it back, by value name, with the constexpr op type."""
    finals = {}
    for op in model._mil_program.functions["main"].operations:
        if op.op_type.startswith("constexpr_") and any(not c.op_type.startswith("constexpr_") for c in op.outputs[0].child_ops):
            finals[op.outputs[0].name] = op.op_type
    dense = oc.decompress_weights(model)
    out = {}
    for op in dense._mil_program.functions["main"].operations:
        if op.op_type == "const" and op.outputs[0].name in finals:
            out[op.outputs[0].name] = np.asarray(op.outputs[0].val, dtype=np.float32)
    assert set(out) == set(finals), (sorted(out), sorted(finals))
    return out


def make_mlp():
    x = rand(2, 32)
    for target, tag in [(ct.target.iOS16, "ios16"), (ct.target.iOS18, "ios18")]:
        base = convert(mlp_program(target), target)
        record(f"mlp_{tag}", base, {"x": x}, {"probs": mlp_reference(x, MLP)}, ops=program_ops(base))
        if tag == "ios16":
            record("mlp_fp16", convert(mlp_program(target), target, fp16=True), {"x": x}, {"probs": mlp_reference(x, MLP)}, tolerance="fp16")
        configs = {
            "ios16": [("pal4_tensor", "palettize", oc.OpPalettizerConfig(nbits=4, weight_threshold=100), "palette", 4, "per_tensor"),
                      ("q8_channel_asym", "quantize", oc.OpLinearQuantizerConfig(mode="linear", dtype="int8", granularity="per_channel", weight_threshold=100), "affine", 8, "per_channel"),
                      ("q8_tensor_sym", "quantize", oc.OpLinearQuantizerConfig(mode="linear_symmetric", dtype="uint8", granularity="per_tensor", weight_threshold=100), "affine", 8, "per_tensor")],
            "ios18": [("pal2_grouped", "palettize", oc.OpPalettizerConfig(nbits=2, granularity="per_grouped_channel", group_size=16, weight_threshold=100), "palette", 2, "per_grouped_channel"),
                      ("pal3_tensor", "palettize", oc.OpPalettizerConfig(nbits=3, weight_threshold=100), "palette", 3, "per_tensor"),
                      ("q4_block", "quantize", oc.OpLinearQuantizerConfig(mode="linear_symmetric", dtype="int4", granularity="per_block", block_size=8, weight_threshold=100), "affine", 4, "per_block"),
                      ("q8_channel_asym", "quantize", oc.OpLinearQuantizerConfig(mode="linear", dtype="uint8", granularity="per_channel", weight_threshold=100), "affine", 8, "per_channel")],
        }[tag]
        for suffix, how, op_config, kind, bits, granularity in configs:
            config = oc.OptimizationConfig(global_config=op_config)
            model = (oc.palettize_weights if how == "palettize" else oc.linear_quantize_weights)(base, config)
            decoded = decompressed(model)
            weights = dict(MLP)
            compressed = []
            for value_name, value in sorted(decoded.items()):
                original = value_name.split("_")[0]
                weights[original] = value
                compressed.append({"value": value_name, "weight": original, "kind": kind, "bits": bits, "granularity": granularity,
                                   "decoded": npy(f"mlp_{tag}_{suffix}.decoded.{value_name}", value)})
            name = f"mlp_{tag}_{suffix}"
            record(name, model, {"x": x}, {"probs": mlp_reference(x, weights)}, compressed=compressed, ops=program_ops(model))
    # A classifier: coremltools appends a classify op; the labels go into the metadata.
    labels = [f"class_{k}" for k in range(16)]
    classifier = ct.convert(mlp_program(ct.target.iOS16, batch=1), convert_to="mlprogram", minimum_deployment_target=ct.target.iOS16,
                            compute_precision=ct.precision.FLOAT32, classifier_config=ct.ClassifierConfig(labels))
    record("mlp_classifier", classifier, {"x": x[:1]}, {"classLabel_probs": mlp_reference(x[:1], MLP)}, ops=program_ops(classifier), labels=labels)
    # A palettized table that is itself quantized (iOS 18 joint compression): the table decodes to floats.
    base = convert(mlp_program(ct.target.iOS18), ct.target.iOS18)
    pal = oc.palettize_weights(base, oc.OptimizationConfig(global_config=oc.OpPalettizerConfig(nbits=4, weight_threshold=100)))
    joint = oc.linear_quantize_weights(pal, oc.OptimizationConfig(global_config=oc.OpLinearQuantizerConfig(mode="linear_symmetric", dtype="int8", granularity="per_tensor", weight_threshold=1)), joint_compression=True)
    decoded = decompressed(joint)
    weights = dict(MLP)
    for value_name, value in decoded.items():
        weights[value_name.split("_")[0]] = value
    record("mlp_ios18_quantized_lut", joint, {"x": x}, {"probs": mlp_reference(x, weights)}, ops=program_ops(joint),
           compressed=[{"value": k, "weight": k.split("_")[0], "kind": "palette", "bits": 4, "granularity": "per_tensor",
                        "decoded": npy(f"mlp_ios18_quantized_lut.decoded.{k}", v)} for k, v in sorted(decoded.items())])


# ---------------------------------------------------------------- CNN

CNN = {"c1": rand(8, 3, 3, 3, scale=0.3), "c1b": rand(8, scale=0.1), "c2": rand(8, 4, 3, 3, scale=0.3),
       "mean": rand(8, scale=0.1), "var": np.abs(rand(8)) + 0.5, "gamma": rand(8, scale=0.2) + 1, "beta": rand(8, scale=0.1),
       "fc": rand(5, 8, scale=0.3), "fcb": rand(5, scale=0.1), "slope": np.abs(rand(8, scale=0.2))}


def cnn_program(target):
    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 3, 12, 12))], opset_version=target)
    def prog(x):
        h = mb.conv(x=x, weight=mb.const(val=CNN["c1"], name="c1"), bias=CNN["c1b"], strides=[2, 2], pad_type="custom", pad=[1, 0, 1, 1], name="conv1")
        h = mb.prelu(x=h, alpha=CNN["slope"], name="prelu")
        h = mb.max_pool(x=h, kernel_sizes=[2, 2], strides=[1, 1], pad_type="same", name="maxpool")
        h = mb.conv(x=h, weight=mb.const(val=CNN["c2"], name="c2"), groups=2, dilations=[2, 2], pad_type="same", name="conv2")
        h = mb.batch_norm(x=h, mean=CNN["mean"], variance=CNN["var"], gamma=CNN["gamma"], beta=CNN["beta"], epsilon=1e-3, name="bn")
        h = mb.relu6(x=h, name="relu6")
        h = mb.avg_pool(x=h, kernel_sizes=[3, 3], strides=[2, 2], pad_type="custom", pad=[1, 1, 1, 1], exclude_padding_from_average=True, ceil_mode=False, name="avgpool")
        g = mb.reduce_mean(x=h, axes=[2, 3], keep_dims=False, name="gap")
        y = mb.linear(x=g, weight=mb.const(val=CNN["fc"], name="fc"), bias=CNN["fcb"], name="fc_out")
        return mb.softmax(x=y, axis=1, name="probs"), mb.sigmoid(x=h, name="features")
    return prog


def cnn_reference(x, w):
    h = ref.conv(x, w["c1"], w["c1b"], strides=[2, 2], pads=[(1, 0), (1, 1)])
    h = np.where(h >= 0, h, h * w["slope"].reshape(1, -1, 1, 1))
    h = ref.max_pool(h, [2, 2], [1, 1], ref.same_pads(h.shape[2:], [2, 2], [1, 1], [1, 1]))
    h = ref.conv(h, w["c2"], None, groups=2, dilations=[2, 2], pads=ref.same_pads(h.shape[2:], [3, 3], [1, 1], [2, 2]))
    c = lambda v: v.reshape(1, -1, 1, 1)  # noqa: E731
    h = (h - c(w["mean"])) / np.sqrt(c(w["var"]) + 1e-3) * c(w["gamma"]) + c(w["beta"])
    h = np.clip(h, 0, 6)
    h = ref.avg_pool(h, [3, 3], [2, 2], [(1, 1), (1, 1)], exclude_padding=True)
    g = h.mean(axis=(2, 3))
    return {"probs": ref.softmax(g @ w["fc"].T + w["fcb"], 1), "features": ref.sigmoid(h)}


def make_cnn():
    x = rand(1, 3, 12, 12)
    out = cnn_reference(x, CNN)
    model = convert(cnn_program(ct.target.iOS16), ct.target.iOS16)
    record("cnn", model, {"x": x}, out, ops=program_ops(model))
    record("cnn_fp16", convert(cnn_program(ct.target.iOS17), ct.target.iOS17, fp16=True), {"x": x}, out, tolerance="fp16")
    base = convert(cnn_program(ct.target.iOS18), ct.target.iOS18)
    pal = oc.palettize_weights(base, oc.OptimizationConfig(op_name_configs={
        "conv1": oc.OpPalettizerConfig(nbits=4, granularity="per_grouped_channel", group_size=4, weight_threshold=1),
        "conv2": oc.OpPalettizerConfig(nbits=6, weight_threshold=1)}))
    decoded = decompressed(pal)
    weights = dict(CNN)
    compressed = []
    for k, v in sorted(decoded.items()):
        weights[k.split("_")[0]] = v
        compressed.append({"value": k, "weight": k.split("_")[0], "kind": "palette", "bits": 4 if k.startswith("c1") else 6,
                           "granularity": "per_grouped_channel" if k.startswith("c1") else "per_tensor",
                           "decoded": npy(f"cnn_ios18_palettized.decoded.{k}", v)})
    record("cnn_ios18_palettized", pal, {"x": x}, cnn_reference(x, weights), compressed=compressed)


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    import mlprogram_fixture_families as families  # noqa: E402
    make_mlp()
    make_cnn()
    families.make_all(record, program_ops, convert, rand)
    MANIFEST["blobs"] = families.make_blobs(OUT)
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(MANIFEST, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {len(MANIFEST['models'])} ML Program fixtures to {OUT}")
