#!/usr/bin/env python3
"""TFLite files with model metadata written by tflite-support's own writers,
and an ML Kit / AutoML Vision Edge bundle, with tf.lite.Interpreter outputs.

usage: python Scripts/make_tflite_metadata_fixtures.py OUT_DIR

Runs with the TensorFlow venv (`make venv-tf`: TF 2.12 plus tflite-support
0.4.4 installed without its dependencies, see Scripts/requirements-tf-nodeps.txt);
`make testdata` runs it into .testdata/tflite-metadata (about 15 s). The models
are Scripts/make_tflite_fixtures.py's `cnn` and `text` (same seeded weights).

Files
-----
image_classifier.tflite   cnn [1,32,32,3] -> [1,10] + metadata from
                          image_classifier.MetadataWriter.create_from_metadata_info:
                          name, version "v2", description, author, license;
                          input "image": ImageNet mean / std per channel, RGB;
                          output "probability": labels.txt (locale en) and
                          labels_fr.txt (locale fr), both TENSOR_AXIS_LABELS,
                          zipped after the model by MetadataPopulator
image_classifier.json     the writer's get_metadata_json() (for reading)
image_classifier.png      a 32x32 RGB test image (written here, no Pillow)
image_classifier.output_0.npy
                          the interpreter's output for that image normalized
                          as the metadata says: (pixel - mean) / std in float32
image_classifier.labels.txt  the English labels, as written into the model
text_classifier.tflite    text [1,24] int32 -> [1,2] + metadata from
                          nl_classifier.MetadataWriter.create_for_inference:
                          RegexTokenizer (Model Maker's [^\\w\\']+) with
                          vocab.txt ("word id" lines), labels negative/positive
text_classifier.sentence.txt, text_classifier.output_0.npy
                          a sentence and the interpreter's output for its
                          Model Maker tokenization
bundle/                   manifest.json {"modelFile": "model.tflite",
                          "labelsFile": "dict.txt", "modelType":
                          "IMAGE_LABELING"}, model.tflite (the cnn without
                          metadata), dict.txt (10 labels, CRLF line ends and a
                          trailing blank line, as Windows tools leave them)
fixtures.json             what is here (written last: the Makefile's stamp)
"""
import json
import os
import struct
import sys
import tempfile
import zipfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import make_tflite_fixtures as base  # noqa: E402  (imports TensorFlow)

# Not `tflite_support.metadata_writers`: the tflite_support package's __init__
# imports the Task Library's protos, which need protobuf < 4 (TF 2.12 pins 4.25).
from tensorflow_lite_support.metadata import metadata_schema_py_generated as meta_fb  # noqa: E402
from tensorflow_lite_support.metadata.python.metadata_writers import (  # noqa: E402
    image_classifier, metadata_info, nl_classifier)
from tensorflow_lite_support.metadata.python import metadata as tfls_metadata  # noqa: E402

tf = base.tf
schema_fb = base.schema_fb

LABELS_EN = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
LABELS_FR = ["avion", "automobile", "oiseau", "chat", "cerf", "chien", "grenouille", "cheval", "bateau", "camion"]
MEAN = [123.675, 116.28, 103.53]
STD = [58.395, 57.12, 57.375]
TEXT_LABELS = ["negative", "positive"]


def png_rgb(pixels):
    """A PNG of an HxWx3 uint8 array (filter 0 rows, zlib level 9)."""
    h, w, _ = pixels.shape
    raw = b"".join(b"\x00" + pixels[y].tobytes() for y in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def test_image():
    y, x = np.mgrid[0:32, 0:32]
    r = (x * 8) % 256
    g = (y * 8) % 256
    b = ((x + y) * 5 + 40) % 256
    return np.stack([r, g, b], axis=-1).astype(np.uint8)


def cnn_buffer():
    model = base.build_cnn()
    base.fill_weights(model, base.case_rng("cnn"))
    return base.convert_keras(model, "float32")


def text_buffer():
    model = base.build_text()
    base.fill_weights(model, base.case_rng("text"))
    return base.convert_keras(model, "float32")


def write(path, data, mode="wb"):
    with open(path, mode) as f:
        f.write(data)


def check_packed(buf, expected):
    """The populated model has a TFLITE_METADATA buffer and its files zipped at the end."""
    assert tfls_metadata.get_metadata_buffer(buf) is not None
    names = tfls_metadata.MetadataDisplayer.with_model_buffer(buf).get_packed_associated_file_list()
    assert sorted(names) == sorted(expected), names
    with zipfile.ZipFile(__import__("io").BytesIO(buf)) as z:
        assert all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist())


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "bundle"), exist_ok=True)
    tf.keras.utils.set_random_seed(base.SEED)
    tf.config.experimental.enable_op_determinism()
    listing = {}

    with tempfile.TemporaryDirectory() as tmp:
        # Image classifier with normalization and two label files.
        plain = cnn_buffer()
        en, fr = os.path.join(tmp, "labels.txt"), os.path.join(tmp, "labels_fr.txt")
        write(en, "\n".join(LABELS_EN) + "\n", "w")
        write(fr, "\n".join(LABELS_FR) + "\n", "w")
        writer = image_classifier.MetadataWriter.create_from_metadata_info(
            bytearray(plain),
            general_md=metadata_info.GeneralMd(
                name="Shrinkwrap fixture image classifier", version="v2",
                description="A seeded 10-class CNN on 32x32 RGB images (CIFAR-10 class names).",
                author="Shrinkwrap fixtures", licenses="Apache License. Version 2.0"),
            input_md=metadata_info.InputImageTensorMd(
                name="image", description="Input image to be classified.", norm_mean=MEAN, norm_std=STD,
                color_space_type=meta_fb.ColorSpaceType.RGB, tensor_type=schema_fb.TensorType.FLOAT32),
            output_md=metadata_info.ClassificationTensorMd(
                name="probability", description="Probabilities of the 10 labels respectively.",
                label_files=[metadata_info.LabelFileMd(en, locale="en"), metadata_info.LabelFileMd(fr, locale="fr")],
                tensor_type=schema_fb.TensorType.FLOAT32))
        buf = bytes(writer.populate())
        check_packed(buf, ["labels.txt", "labels_fr.txt"])
        write(os.path.join(out, "image_classifier.tflite"), buf)
        write(os.path.join(out, "image_classifier.json"), writer.get_populated_metadata_json(), "w")
        write(os.path.join(out, "image_classifier.labels.txt"), "\n".join(LABELS_EN) + "\n", "w")
        pixels = test_image()
        write(os.path.join(out, "image_classifier.png"), png_rgb(pixels))
        x = ((pixels.astype(np.float32) - np.array(MEAN, np.float32)) / np.array(STD, np.float32))[None]
        y = base.run(buf, [x.astype(np.float32)])[0]
        # The metadata and the zip do not change what the interpreter computes.
        assert np.array_equal(y, base.run(plain, [x.astype(np.float32)])[0])
        base.save_npy(os.path.join(out, "image_classifier.output_0.npy"), y)
        listing["image_classifier.tflite"] = {"labels": len(LABELS_EN), "mean": MEAN, "std": STD,
                                              "top1": LABELS_EN[int(np.argmax(y))]}

        # Bundle: the same model without metadata, labels beside it.
        write(os.path.join(out, "bundle", "model.tflite"), plain)
        write(os.path.join(out, "bundle", "dict.txt"), ("\r\n".join(LABELS_EN) + "\r\n\r\n").encode())
        write(os.path.join(out, "bundle", "manifest.json"),
              json.dumps({"modelFile": "model.tflite", "labelsFile": "dict.txt", "modelType": "IMAGE_LABELING"}, indent=2) + "\n", "w")
        listing["bundle"] = {"labels": len(LABELS_EN)}

        # Text classifier with Model Maker's regex tokenizer and vocabulary.
        vocab = base.text_vocab()
        vocab_path, text_labels = os.path.join(tmp, "vocab.txt"), os.path.join(tmp, "text_labels.txt")
        write(vocab_path, "".join(f"{w} {i}\n" for w, i in vocab.items()), "w")
        write(text_labels, "\n".join(TEXT_LABELS) + "\n", "w")
        writer = nl_classifier.MetadataWriter.create_for_inference(
            bytearray(text_buffer()), metadata_info.RegexTokenizerMd(r"[^\w\']+", vocab_path), [text_labels])
        buf = bytes(writer.populate())
        check_packed(buf, ["vocab.txt", "text_labels.txt"])
        write(os.path.join(out, "text_classifier.tflite"), buf)
        write(os.path.join(out, "text_classifier.json"), writer.get_populated_metadata_json(), "w")
        sentence = base.TEXT_SENTENCES[0]
        write(os.path.join(out, "text_classifier.sentence.txt"), sentence + "\n", "w")
        y = base.run(buf, [base.text_tokens(sentence, vocab)])[0]
        base.save_npy(os.path.join(out, "text_classifier.output_0.npy"), y)
        listing["text_classifier.tflite"] = {"labels": len(TEXT_LABELS), "vocabulary": len(vocab)}

    # last, so that the Makefile's stamp exists only after a complete run
    write(os.path.join(out, "fixtures.json"), json.dumps(listing, indent=1, sort_keys=True) + "\n", "w")
    print(f"{len(listing)} fixtures in {out}")


if __name__ == "__main__":
    main()
