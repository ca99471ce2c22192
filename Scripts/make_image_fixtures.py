#!/usr/bin/env python3
"""Writes the JPEG test fixtures in Tests/ShrinkwrapDataTests/Fixtures/Images:
small JPEGs made with Pillow and, beside each, the pixels Pillow decodes
(NAME.pixels.npy, uint8 [H, W, C]) that shrinkwrap's libjpeg decoding must equal.

usage: make_image_fixtures.py OUTDIR
"""
import os
import sys

import numpy as np
from PIL import Image


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    h, w = 12, 16
    yy, xx = np.mgrid[0:h, 0:w]
    rgb = np.stack([xx * 16, yy * 21, (xx * yy * 7) % 256], axis=-1).astype(np.uint8)
    cases = [
        ("rgb16x12.jpg", Image.fromarray(rgb), dict(quality=75)),
        ("gray9x7.jpg", Image.fromarray(rgb[:7, :9, 0]), dict(quality=90)),
        ("progressive16x12.jpg", Image.fromarray(rgb), dict(quality=60, progressive=True)),
        ("subsampled13x11.jpg", Image.fromarray(rgb[:11, :13]), dict(quality=85, subsampling=2)),
    ]
    for name, im, kw in cases:
        path = os.path.join(out, name)
        im.save(path, **kw)
        pixels = np.asarray(Image.open(path))
        if pixels.ndim == 2:
            pixels = pixels[..., None]
        np.save(os.path.join(out, name.rsplit(".", 1)[0] + ".pixels.npy"), pixels)
        print(f"{path}: {os.path.getsize(path)} bytes, {pixels.shape}")


if __name__ == "__main__":
    main()
