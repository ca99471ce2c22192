#!/usr/bin/env python3
"""Write N seeded uniform [0, 1) float32 arrays as input_000.npy … into a folder.

usage: make_npy_inputs.py DIR --count N --shape 1,3,224,224 --seed S
"""
import argparse
import os

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--shape", required=True)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    shape = tuple(int(s) for s in a.shape.split(","))
    os.makedirs(a.dir, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    for i in range(a.count):
        np.save(os.path.join(a.dir, f"input_{i:03d}.npy"), rng.random(shape, dtype=np.float32))


if __name__ == "__main__":
    main()
