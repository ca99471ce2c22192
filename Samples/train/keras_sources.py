#!/usr/bin/env python3
"""Write each sample's Keras source (SAMPLES/<name>/<name>.h5) from its shipped .tflite.

usage: keras_sources.py SAMPLES_DIR        (run with the TensorFlow venv, .venv-tf)

The training scripts save the Keras model they train as <name>.h5 next to the
.tflite they convert it to. Training is repeatable on one machine but not across
CPUs, so retraining here would change every sample file; this script instead
builds each model with the training script's own build_model() and gives it the
trained weights the shipped .tflite holds (a Keras kernel [kh, kw, in, out] is
TFLite's [out, kh, kw, in]; a Dense kernel [in, out] is [out, in]; embeddings and
biases as they are), matching each weight to the one TFLite constant of its
shape. It then checks that Keras and tf.lite.Interpreter give the same outputs
(max difference <= 1e-5) on the sample's inputs and saves the model as Keras 2
HDF5. `make samples` (which retrains) writes the .h5 files itself.
"""
import os
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tensorflow as tf  # noqa: E402

import train_digits  # noqa: E402
import train_linear  # noqa: E402
import train_sentiment  # noqa: E402


def tflite_constants(path):
    """Every float tensor the model stores (a buffer with data): {shape: [arrays]}."""
    from tensorflow.lite.python import schema_py_generated as schema
    with open(path, "rb") as f:
        model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(f.read(), 0))
    out = {}
    for t in model.subgraphs[0].tensors:
        data = model.buffers[t.buffer].data
        if t.type == schema.TensorType.FLOAT32 and data is not None and len(data) > 0:
            v = np.frombuffer(bytes(bytearray(data)), dtype="<f4").reshape(t.shape)
            out.setdefault(tuple(t.shape), []).append(v)
    return tf.lite.Interpreter(model_path=path), out


def to_tflite_layout(weight):
    """The TFLite layout of a Keras weight and how to bring it back."""
    shape = tuple(weight.shape)
    if len(shape) == 4:
        return (shape[3],) + shape[:3], lambda t: np.transpose(t, (1, 2, 3, 0))
    if len(shape) == 2 and "embedding" not in weight.name:
        return (shape[1], shape[0]), np.transpose
    return shape, lambda t: t


def restore(model, tflite_path):
    it, constants = tflite_constants(tflite_path)
    for w in model.weights:
        shape, back = to_tflite_layout(w)
        found = constants.get(tuple(shape), [])
        if len(found) != 1:
            sys.exit(f"{tflite_path}: {len(found)} constants of shape {shape} for {w.name}")
        w.assign(back(found[0]))
    return it


def check(model, it, x, path):
    want = model(x, training=False).numpy()
    inp = it.get_input_details()[0]
    it.resize_tensor_input(inp["index"], x.shape)
    it.allocate_tensors()
    it.set_tensor(inp["index"], x.astype(inp["dtype"]))
    it.invoke()
    got = it.get_tensor(it.get_output_details()[0]["index"])
    diff = float(np.max(np.abs(got - want)))
    if diff > 1e-5:
        sys.exit(f"{path}: Keras and TFLite differ by {diff}")
    return diff


def main():
    root = sys.argv[1]
    vocab = os.path.join(root, "sentiment", "vocab.txt")
    with open(vocab) as f:
        vocab_size = sum(1 for line in f if line.strip())
    rng = np.random.default_rng(0)
    samples = [
        ("linear", train_linear.build_model(), np.load(os.path.join(root, "linear", "inputs.npy"))),
        ("digits", train_digits.build_model(), rng.uniform(0, 1, (1, train_digits.SIZE, train_digits.SIZE, 1)).astype(np.float32)),
        ("sentiment", train_sentiment.build_model(vocab_size),
         rng.integers(0, vocab_size, (1, train_sentiment.SEQ_LEN)).astype(np.int32)),
    ]
    for name, model, x in samples:
        tflite = os.path.join(root, name, name + ".tflite")
        it = restore(model, tflite)
        diff = check(model, it, x, tflite)
        path = os.path.join(root, name, name + ".h5")
        model.save(path)
        print(f"{path}: {os.path.getsize(path)} bytes, Keras vs TFLite max difference {diff:.2g}")


if __name__ == "__main__":
    main()
