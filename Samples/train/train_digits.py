#!/usr/bin/env python3
"""Train the image sample: a small CNN that reads handwritten digits.

usage: train_digits.py OUT_DIR        (run with the TensorFlow venv, .venv-tf)

Data: scikit-learn's digits (1,797 8x8 images, 16 grey levels, shipped with the
package), scaled to 0-255 and enlarged 4x to 32x32 (each pixel a 4x4 block,
then a 3x3 box blur so strokes are smooth). 1,497 images train, the last 300
test. Model: [1, 32, 32, 1] float pixels / 255 -> Conv 8 3x3 relu -> MaxPool 2
-> Conv 16 3x3 relu -> MaxPool 2 -> Flatten -> Dense 10 softmax. Seeded,
single-threaded training.

Writes OUT_DIR/digits.tflite (float32, tflite-support image-classifier
metadata: name, description, labels, grayscale input normalized mean 0 / std 255), digits.onnx (tf2onnx,
labels in metadata_props; feed pixels / 255), digits.mlmodel
(coremltools, NeuralNetwork, grayscale image input scaled by 1/255),
labels.txt, images/digit_<label>_<k>.png (ten sample test images, 32x32 grey,
no Pillow needed), test/<index>_<label>.png (all 300 held-out test images: the
data `make demo` sweeps over), and an AutoML Vision Edge style bundle automl/
(manifest.json, dict.txt, model.tflite without metadata).
"""
import json
import os
import struct
import sys
import zlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["TF_DETERMINISTIC_OPS"] = "1"
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
# Not `tflite_support.metadata_writers` (its __init__ needs protobuf < 4; TF 2.12 pins 4.25).
from tensorflow_lite_support.metadata import metadata_schema_py_generated as metadata_fb  # noqa: E402
from tensorflow_lite_support.metadata.python.metadata_writers import image_classifier, metadata_info, writer_utils  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sample_common import fixed_zip_times, start, tflite_to_onnx, write_mlmodel  # noqa: E402

SIZE = 32
LABELS = [str(d) for d in range(10)]



def png_gray(pixels):
    """A PNG of an HxW uint8 array (8-bit greyscale, filter 0 rows)."""
    h, w = pixels.shape

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + bytes(row) for row in pixels.astype(np.uint8))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def images():
    d = load_digits()
    x = d.images.astype(np.float32) * (255.0 / 16.0)
    x = np.kron(x, np.ones((4, 4), dtype=np.float32))  # 8x8 -> 32x32
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1)), mode="edge")
    blurred = sum(padded[:, i:i + SIZE, j:j + SIZE] for i in range(3) for j in range(3)) / 9.0
    return np.round(blurred).clip(0, 255).astype(np.uint8), d.target.astype(np.int32)


def build_model():
    """The digits CNN (Samples/train/keras_sources.py builds it too)."""
    inp = tf.keras.Input(shape=(SIZE, SIZE, 1), batch_size=1, name="image")
    h = tf.keras.layers.Conv2D(8, 3, activation="relu", padding="same", name="conv1")(inp)
    h = tf.keras.layers.MaxPooling2D(2, name="pool1")(h)
    h = tf.keras.layers.Conv2D(16, 3, activation="relu", padding="same", name="conv2")(h)
    h = tf.keras.layers.MaxPooling2D(2, name="pool2")(h)
    h = tf.keras.layers.Flatten(name="flatten")(h)
    y = tf.keras.layers.Dense(10, activation="softmax", name="digit")(h)
    return tf.keras.Model(inp, y, name="digits")


def main():
    out = start(__doc__, 3, "images", "automl", "test")

    pixels, labels = images()
    x = pixels.astype(np.float32)[..., None] / 255.0
    xtr, ytr, xte, yte = x[:-300], labels[:-300], x[-300:], labels[-300:]
    model = build_model()
    # The Input's batch of 1 is for the exported files; train the same layers with a free batch.
    free = tf.keras.Sequential([tf.keras.Input(shape=(SIZE, SIZE, 1))] + model.layers[1:])
    free.compile(optimizer=tf.keras.optimizers.Adam(0.003), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    free.fit(xtr, ytr, epochs=15, batch_size=32, shuffle=True, verbose=0)
    _, acc = free.evaluate(xte, yte, batch_size=100, verbose=0)
    print(f"digits: {len(xtr)} training images, test accuracy {acc:.3f} on {len(xte)}")

    model.save(os.path.join(out, "digits.h5"))  # the Keras source (Keras 2 HDF5)
    with open(os.path.join(out, "labels.txt"), "w") as f:
        f.write("\n".join(LABELS) + "\n")
    plain = tf.lite.TFLiteConverter.from_keras_model(model).convert()
    # create_for_inference would write the writer's generic name, description and an RGB
    # color space; this model reads one grey channel, so the metadata is spelled out.
    writer = image_classifier.MetadataWriter.create_from_metadata_info(
        bytearray(plain),
        general_md=metadata_info.GeneralMd(
            name="Handwritten digits",
            description="Which digit (0-9) a 32x32 grey image of a handwritten digit shows "
                        "(a small CNN trained on scikit-learn's digits)",
            version="1"),
        input_md=metadata_info.InputImageTensorMd(
            name="image", description="32x32 grey pixels, 0-255 (white digit on black)",
            norm_mean=[0.0], norm_std=[255.0], color_space_type=metadata_fb.ColorSpaceType.GRAYSCALE,
            tensor_type=writer_utils.get_input_tensor_types(plain)[0]),
        output_md=metadata_info.ClassificationTensorMd(
            name="probability", description="Probability of each digit",
            label_files=[metadata_info.LabelFileMd(file_path=os.path.join(out, "labels.txt"))],
            tensor_type=writer_utils.get_output_tensor_types(plain)[0]))
    with open(os.path.join(out, "digits.tflite"), "wb") as f:
        f.write(fixed_zip_times(writer.populate()))
    tflite_to_onnx(os.path.join(out, "digits.tflite"), os.path.join(out, "digits.onnx"), LABELS,
                   "Handwritten digit; input [1, 32, 32, 1] grey pixels / 255")
    with open(os.path.join(out, "automl", "model.tflite"), "wb") as f:
        f.write(plain)
    with open(os.path.join(out, "automl", "dict.txt"), "w") as f:
        f.write("\n".join(LABELS) + "\n")
    with open(os.path.join(out, "automl", "manifest.json"), "w") as f:
        json.dump({"modelFile": "model.tflite", "labelsFile": "dict.txt", "modelType": "IMAGE_LABELING"}, f, indent=2)
        f.write("\n")
    # Two test images of each of five digits.
    for digit in (0, 3, 4, 7, 9):
        for k, i in enumerate(np.flatnonzero(yte == digit)[:2]):
            with open(os.path.join(out, "images", f"digit_{digit}_{k}.png"), "wb") as f:
                f.write(png_gray(pixels[-300:][i]))
    for i, (image, label) in enumerate(zip(pixels[-300:], yte)):
        with open(os.path.join(out, "test", f"{i:03d}_{label}.png"), "wb") as f:
            f.write(png_gray(image))
    write_mlmodel(os.path.join(out, "digits.mlmodel"), "Handwritten digit (scikit-learn digits, 32x32 grey)", lambda ct: ct.convert(
        model, convert_to="neuralnetwork",
        inputs=[ct.ImageType(name="image", shape=(1, SIZE, SIZE, 1), scale=1 / 255.0, color_layout=ct.colorlayout.GRAYSCALE)],
        classifier_config=ct.ClassifierConfig(LABELS)))


if __name__ == "__main__":
    main()
