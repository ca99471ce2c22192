"""Shared by the sample trainers: the .onnx of a sample (tf2onnx from its float32
.tflite), and repeatable bytes for files tflite-support's metadata writer makes.

tf2onnx 1.16.1 declares protobuf~=3.20 while TensorFlow 2.12 pins 4.25, so the
Makefile installs it (and onnx) with --no-deps (Scripts/requirements-tf-nodeps.txt);
its tflite front end works with protobuf 4.
"""
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
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, onnx_path)


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
