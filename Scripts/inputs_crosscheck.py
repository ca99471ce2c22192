#!/usr/bin/env python3
"""Check shrinkwrap's image and text inputs against Python's preprocessing.

Images: PNG / JPEG files of every colour type are made with Pillow; for each
preprocessing case, `shrinkwrap prepare` writes the tensors the model is fed,
and they must equal, bit for bit, what Pillow + NumPy give for the same steps
(Image.convert, Image.resize BILINEAR with torchvision's shorter-side rule,
torchvision's centre-crop rounding, (p * scale - mean) / std in float32,
NCHW / NHWC). 16-bit PNGs are checked against their high bytes.

Text: sentences tokenized as TFLite Model Maker's text classifiers do
(lowercase, split on [^\\w']+, <START>, <UNKNOWN>, <PAD> / truncate) must
equal shrinkwrap's token ids.

usage: inputs_crosscheck.py --shrinkwrap .build/release/shrinkwrap [--work DIR]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper
from PIL import Image


def identity_model(path, shape, elem=TensorProto.FLOAT):
    x = helper.make_tensor_value_info("x", elem, shape)
    y = helper.make_tensor_value_info("y", elem, shape)
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "id", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def make_images(folder, rng):
    """A small zoo: every PNG colour type, 16-bit, JPEG colour / gray / progressive."""
    os.makedirs(folder, exist_ok=True)
    h, w = 61, 97
    yy, xx = np.mgrid[0:h, 0:w]
    rgb = np.stack([(xx * 255 // (w - 1)), (yy * 255 // (h - 1)), ((xx + yy) * 3) % 256], axis=-1).astype(np.uint8)
    rgb = np.clip(rgb.astype(int) + rng.integers(-20, 21, rgb.shape), 0, 255).astype(np.uint8)
    Image.fromarray(rgb).save(os.path.join(folder, "a_rgb.png"))
    rgba = np.concatenate([rgb, rng.integers(0, 256, (h, w, 1), dtype=np.uint8)], axis=-1)
    Image.fromarray(rgba).save(os.path.join(folder, "b_rgba.png"))
    gray = rgb[..., 1]
    Image.fromarray(gray).save(os.path.join(folder, "c_gray.png"))
    Image.fromarray(rgb).quantize(colors=37).save(os.path.join(folder, "d_palette.png"))
    Image.fromarray(rgb).save(os.path.join(folder, "e_rgb.jpg"), quality=90)
    Image.fromarray(gray).save(os.path.join(folder, "f_gray.jpg"), quality=85)
    Image.fromarray(rgb).save(os.path.join(folder, "g_progressive.jpeg"), quality=80, progressive=True)
    big = np.asarray(Image.fromarray(rgb).resize((211, 150), Image.NEAREST))
    Image.fromarray(big).save(os.path.join(folder, "h_large.png"))
    Image.fromarray(rgb[..., 0].astype(np.uint16) * 256 + 3).save(os.path.join(folder, "i_gray16.png"))


def pil_pixels(path, mode):
    """The 8-bit pixels shrinkwrap should decode: Pillow's, except 16-bit PNGs (high byte)."""
    im = Image.open(path)
    if im.mode in ("I;16", "I;16B", "I"):
        high = (np.asarray(im).astype(np.uint32) >> 8).astype(np.uint8)
        im = Image.fromarray(high)
    return im.convert(mode)


def reference(path, case, size):
    mode = "L" if case.get("gray") else "RGB"
    im = pil_pixels(path, mode)
    if "resize" in case:
        r = case["resize"]
        if isinstance(r, int):
            w, h = im.size
            if w <= h:
                size_wh = (r, int(r * h / w))
            else:
                size_wh = (int(r * w / h), r)
        else:
            size_wh = r
        im = im.resize(size_wh, Image.BILINEAR)
    if "crop" in case:
        cw, ch = (case["crop"], case["crop"]) if isinstance(case["crop"], int) else case["crop"]
        w, h = im.size
        left = int(round((w - cw) / 2.0))
        top = int(round((h - ch) / 2.0))
        im = im.crop((left, top, left + cw, top + ch))
    if im.size != (size[1], size[0]):
        im = im.resize((size[1], size[0]), Image.BILINEAR)
    a = np.asarray(im)
    if a.ndim == 2:
        a = a[..., None]
    if case.get("bgr"):
        a = a[..., ::-1]
    if case.get("dtype") == "uint8":
        out = a.astype(np.uint8)
    else:
        scale = np.float32(case.get("scale", 1.0))
        mean = np.array(case.get("mean", [0.0]), dtype=np.float32)
        std = np.array(case.get("std", [1.0]), dtype=np.float32)
        out = (a.astype(np.float32) * scale - mean) / std
        out = out.astype(np.float32)
    if case["layout"] == "NCHW":
        out = out.transpose(2, 0, 1)
    return out[None]


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)}\n{p.stderr}")
    return p.stdout


def check_images(sw, work, rng):
    images = os.path.join(work, "images")
    make_images(images, rng)
    files = sorted(f for f in os.listdir(images) if not f.startswith("."))
    cases = [
        dict(name="nchw-stretch", layout="NCHW", shape=[1, 3, 48, 40]),
        dict(name="nchw-resize-crop-norm", layout="NCHW", shape=[1, 3, 40, 40], resize=44, crop=40, scale="1/255",
             mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
        dict(name="nhwc-scale-bgr", layout="NHWC", shape=[1, 32, 50, 3], scale="1/127.5", mean=[1.0], bgr=True),
        dict(name="nhwc-upscale", layout="NHWC", shape=[1, 128, 160, 3], resize=[160, 128]),
        dict(name="nchw-gray", layout="NCHW", shape=[1, 1, 30, 30], resize=30, crop=30, gray=True),
        dict(name="nhwc-uint8-crop", layout="NHWC", shape=[1, 24, 24, 3], crop=[24, 24], dtype="uint8"),
        dict(name="chw-rank3", layout="NCHW", shape=[3, 17, 23]),
    ]
    checked = 0
    for case in cases:
        model = os.path.join(work, case["name"] + ".onnx")
        elem = TensorProto.UINT8 if case.get("dtype") == "uint8" else TensorProto.FLOAT
        identity_model(model, case["shape"], elem)
        out = os.path.join(work, "prep-" + case["name"])
        cmd = [sw, "prepare", model, "--data", images, "-o", out]
        if "resize" in case:
            r = case["resize"]
            cmd += ["--resize", str(r) if isinstance(r, int) else f"{r[0]}x{r[1]}"]
        if "crop" in case:
            c = case["crop"]
            cmd += ["--center-crop", str(c) if isinstance(c, int) else f"{c[0]}x{c[1]}"]
        if "scale" in case:
            cmd += ["--scale", case["scale"]]
            num, den = case["scale"].split("/")
            case["scale"] = float(np.float32(float(num) / float(den)))
        if "mean" in case:
            cmd += ["--mean", ",".join(repr(v) for v in case["mean"])]
        if "std" in case:
            cmd += ["--std", ",".join(repr(v) for v in case["std"])]
        if case.get("bgr"):
            cmd += ["--color", "BGR"]
        run(cmd)
        manifest = json.load(open(os.path.join(out, "manifest.json")))
        if len(manifest["samples"]) != len(files):
            sys.exit(f"FAIL {case['name']}: {len(manifest['samples'])} samples for {len(files)} images")
        shape = case["shape"]
        hw = (shape[2], shape[3]) if case["layout"] == "NCHW" and len(shape) == 4 else \
             (shape[1], shape[2]) if len(shape) == 4 else (shape[1], shape[2])
        for s, f in zip(manifest["samples"], files):
            got = np.load(os.path.join(out, s["files"]["x"]))
            want = reference(os.path.join(images, f), case, hw)
            if len(shape) == 3:
                want = want[0]
            if got.shape != want.shape or got.dtype != want.dtype:
                sys.exit(f"FAIL {case['name']} {f}: shrinkwrap {got.dtype}{list(got.shape)} vs Pillow {want.dtype}{list(want.shape)}")
            if not np.array_equal(got, want):
                diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
                sys.exit(f"FAIL {case['name']} {f}: {int((diff > 0).sum())} of {diff.size} values differ, max {diff.max():.6g}")
            checked += 1
        print(f"  {case['name']}: {len(files)} images equal to Pillow")
    return checked


def model_maker_ids(sentence, vocab, length):
    """TFLite Model Maker's text classifier preprocessing, restated."""
    tokens = [t for t in re.compile(r"[^\w']+").split(sentence.lower().strip()) if t]
    ids = [vocab["<START>"]] if "<START>" in vocab else []
    ids += [vocab.get(t, vocab["<UNKNOWN>"]) for t in tokens]
    if len(ids) < length:
        ids += [vocab.get("<PAD>", 0)] * (length - len(ids))
    return ids[:length]


def check_text(sw, work):
    words = ["<PAD>", "<START>", "<UNKNOWN>", "the", "movie", "was", "great", "don't", "bad", "i", "feel", "fun",
             "day", "is", "a", "really", "today", "café", "naïve", "42", "snake_case", "straße", "ǆemal"]
    vocab = {w: i for i, w in enumerate(words)}
    vocab_path = os.path.join(work, "vocab.txt")
    with open(vocab_path, "w", encoding="utf-8") as f:
        for w, i in vocab.items():
            f.write(f"{w} {i}\n")
    sentences = [
        "Today is a really fun day! I feel great! :)",
        "The movie was BAD... don't watch it",
        "  Café — NAÏVE; 42 snake_case/straße\tǅemal   ",
        "unknown words only zzz qqq",
        "the " * 30,
        "ŉ ǈ İstanbul ß ﬁ ⅷ ½ ٣",
        "'quoted' it's o'clock -- a\u00a0b",
    ]
    text_path = os.path.join(work, "sentences.txt")
    with open(text_path, "w", encoding="utf-8", newline="") as f:
        for s in sentences:
            f.write(s + "\r\n")
        f.write("\n   \n")
    length = 12
    total = 0
    for elem, dtype in ((TensorProto.INT32, np.int32), (TensorProto.INT64, np.int64)):
        model = os.path.join(work, f"text-{dtype.__name__}.onnx")
        identity_model(model, [1, length], elem)
        out = os.path.join(work, f"prep-text-{dtype.__name__}")
        run([sw, "prepare", model, "--data", text_path, "--vocab", vocab_path, "-o", out])
        manifest = json.load(open(os.path.join(out, "manifest.json")))
        if len(manifest["samples"]) != len(sentences):
            sys.exit(f"FAIL text: {len(manifest['samples'])} samples for {len(sentences)} sentences")
        for s, sentence in zip(manifest["samples"], sentences):
            got = np.load(os.path.join(out, s["files"]["x"]))
            want = np.array([model_maker_ids(sentence, vocab, length)], dtype=dtype)
            if got.dtype != want.dtype or not np.array_equal(got, want):
                sys.exit(f"FAIL text {sentence!r}: shrinkwrap {got.tolist()} ({got.dtype}) vs Model Maker {want.tolist()}")
            total += 1
    print(f"  text: {total} sentences tokenized as Model Maker does (int32 and int64 inputs)")
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shrinkwrap", required=True)
    ap.add_argument("--work")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="sw-inputs-")
    if os.path.isdir(work):
        shutil.rmtree(work)
    os.makedirs(work)
    rng = np.random.default_rng(7)
    n = check_images(a.shrinkwrap, work, rng)
    t = check_text(a.shrinkwrap, work)
    print(f"inputs cross-check: {n} image tensors equal to Pillow, {t} token-id rows equal to Model Maker")
    if not a.work:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
