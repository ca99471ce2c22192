"""Shared by the sample trainers: the .onnx of a sample (tf2onnx from its float32
.tflite), and repeatable bytes for the files tflite-support's metadata writer and
coremltools make.

tf2onnx 1.16.1 declares protobuf~=3.20 while TensorFlow 2.12 pins 4.25, so the
Makefile installs it (and onnx) with --no-deps (Scripts/requirements-tf-nodeps.txt);
its tflite front end works with protobuf 4.
"""
import os
import sys

import onnx
import tf2onnx

OPSET = 17


def tflite_to_onnx(tflite_path, onnx_path, labels=None, doc=""):
    """Converts with tf2onnx; labels (one per line) and a description go into metadata_props / doc_string."""
    model, _ = tf2onnx.convert.from_tflite(tflite_path, opset=OPSET)
    if labels:
        entry = model.metadata_props.add()
        entry.key, entry.value = "labels", "\n".join(labels)
    if doc:
        model.doc_string = doc
    canonical_constants(model.graph)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, onnx_path)


def canonical_constants(graph):
    """tf2onnx numbers the initializers its constant folding makes (const_fold_opt__N) and
    orders the initializers differently from run to run; renumber them and sort the
    initializers by their first use, so that the same model gives the same bytes."""
    first_use = {}
    for k, node in enumerate(graph.node):
        for name in node.input:
            first_use.setdefault(name, k)
    ordered = sorted(graph.initializer, key=lambda t: (first_use.get(t.name, len(graph.node)), t.name))
    rename = {t.name: f"const_fold_opt__{k}" for k, t in enumerate(ordered) if t.name.startswith("const_fold_opt__")}
    copies = [onnx.TensorProto() for _ in ordered]
    for copy, t in zip(copies, ordered):
        copy.CopyFrom(t)
        copy.name = rename.get(t.name, t.name)
    del graph.initializer[:]
    graph.initializer.extend(copies)
    for node in graph.node:
        for k, name in enumerate(node.input):
            if name in rename:
                node.input[k] = rename[name]


def fixed_zip_times(model):
    """The .tflite with the ZIP of associated files that tflite-support appends given a
    fixed date (2020-01-01): the writer stamps the current time, so the bytes would
    change on every run. Only the DOS date / time fields of the local and central
    headers change; sizes and offsets stay."""
    buf = bytearray(model)
    dos_time, dos_date = 0, ((2020 - 1980) << 9) | (1 << 5) | 1
    stamp = dos_time.to_bytes(2, "little") + dos_date.to_bytes(2, "little")
    i = buf.find(b"PK\x03\x04")
    while i >= 0:
        buf[i + 10:i + 14] = stamp
        i = buf.find(b"PK\x03\x04", i + 4)
    i = buf.find(b"PK\x01\x02")
    while i >= 0:
        buf[i + 12:i + 16] = stamp
        i = buf.find(b"PK\x01\x02", i + 4)
    return bytes(buf)


def start(doc, seed, *subdirs):
    """The output folder from the command line (usage from the script's docstring
    otherwise), created with its subfolders; TensorFlow seeded and single-threaded."""
    import tensorflow as tf
    if len(sys.argv) != 2:
        sys.exit(doc.strip().splitlines()[2])
    out = sys.argv[1]
    for sub in ("",) + subdirs:
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    tf.keras.utils.set_random_seed(seed)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    return out


def write_mlmodel(path, description, convert):
    """convert(coremltools) -> MLModel, saved to path with its description. coremltools'
    Keras path is best effort across TF versions: a failure is reported, loudly, and
    the file skipped."""
    try:
        import coremltools as ct
        ml = convert(ct)
    except Exception as err:
        print(f"SKIPPED {os.path.basename(path)}: coremltools could not convert the model ({type(err).__name__}: {err})")
        return
    ml.short_description = description
    save_mlmodel(ml, path)


def save_mlmodel(ml, path):
    """Saves a coremltools model without the conversion date coremltools stamps into its
    metadata, so that a retrain on another day gives the same bytes."""
    ml.user_defined_metadata.pop("com.github.apple.coremltools.conversion_date", None)
    ml.save(path)
