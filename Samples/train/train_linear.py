#!/usr/bin/env python3
"""Train the linear sample: y = 2x - 1, one float in, one out (a Dense layer of one unit).

usage: train_linear.py OUT_DIR        (run with the TensorFlow venv, .venv-tf)

The data: x = -4, -3.5, ..., 4 and y = 2x - 1 exactly; seeded, single-threaded
training with SGD until the weight and bias are within 1e-3 of 2 and -1.
Writes OUT_DIR/linear.tflite (float32), linear.onnx (tf2onnx), linear.mlmodel (coremltools,
NeuralNetwork) and inputs.npy (a few x values, shape [5, 1]).
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["TF_DETERMINISTIC_OPS"] = "1"
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sample_common import start, tflite_to_onnx, write_mlmodel  # noqa: E402


def build_model():
    """One Dense unit (Samples/train/keras_sources.py builds it too)."""
    inp = tf.keras.Input(shape=(1,), name="x")  # free batch: run takes any number of rows
    out_t = tf.keras.layers.Dense(1, name="y")(inp)
    return tf.keras.Model(inp, out_t, name="linear")


def main():
    out = start(__doc__, 1)

    x = np.arange(-4, 4.01, 0.5, dtype=np.float32).reshape(-1, 1)
    y = 2 * x - 1
    model = build_model()
    model.compile(optimizer=tf.keras.optimizers.SGD(0.02), loss="mse")
    for _ in range(40):
        model.fit(x, y, epochs=25, batch_size=len(x), verbose=0)
        w, b = (float(v.numpy().ravel()[0]) for v in model.layers[-1].weights)
        if abs(w - 2) < 1e-3 and abs(b + 1) < 1e-3:
            break
    print(f"linear: y = {w:.5f} x + {b:.5f}")
    if abs(w - 2) >= 1e-3 or abs(b + 1) >= 1e-3:
        sys.exit("linear: did not converge to y = 2x - 1")

    model.save(os.path.join(out, "linear.h5"))  # the Keras source (Keras 2 HDF5)
    with open(os.path.join(out, "linear.tflite"), "wb") as f:
        f.write(tf.lite.TFLiteConverter.from_keras_model(model).convert())
    tflite_to_onnx(os.path.join(out, "linear.tflite"), os.path.join(out, "linear.onnx"), doc="y = 2x - 1")
    np.save(os.path.join(out, "inputs.npy"), np.array([[-1], [0], [0.5], [1], [10]], dtype=np.float32))
    write_mlmodel(os.path.join(out, "linear.mlmodel"), "y = 2x - 1", lambda ct: ct.convert(
        model, convert_to="neuralnetwork", inputs=[ct.TensorType(shape=(ct.RangeDim(1, 1024, 1), 1), name="x")]))


if __name__ == "__main__":
    main()
