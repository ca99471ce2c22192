#!/usr/bin/env python3
"""Bit-packing vectors made by the peers' own helpers, for BitPackingTests.

  msbFirst  coremltools NeuralNetwork: quantization_utils._convert_array_to_nbit_quantized_bytes
  lsbFirst  coremltools ML Program:    coremltools.optimize._utils.pack_elements_into_bits
  lsbFirst  ONNX 4-bit (int4/uint4):   onnx.numpy_helper._pack_4bitx2

Writes a JSON list of {peer, order, bits, signed, codes, bytes} to the path given.
usage: packing_vectors.py OUT.json
"""
import json
import logging
import sys

import numpy as np
from onnx import numpy_helper

logging.disable(logging.WARNING)
from coremltools.models.neural_network import quantization_utils as qu  # noqa: E402
from coremltools.optimize import _utils as opt_utils  # noqa: E402


def main() -> int:
    rng = np.random.default_rng(7)
    out = []
    for bits in range(1, 9):
        for n in (1, 2, 3, 7, 8, 9, 16, 33, 100):
            codes = rng.integers(0, 1 << bits, size=n)
            nn = qu._convert_array_to_nbit_quantized_bytes(codes.astype(np.uint8), bits)
            out.append({"peer": "coremltools-nn", "order": "msbFirst", "bits": bits, "signed": False,
                        "codes": codes.tolist(), "bytes": [int(b) for b in nn]})
            ml = opt_utils.pack_elements_into_bits(codes.astype(np.uint8), bits)
            out.append({"peer": "coremltools-mlprogram", "order": "lsbFirst", "bits": bits, "signed": False,
                        "codes": codes.tolist(), "bytes": [int(b) for b in ml]})
            signed = rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), size=n) if bits > 1 else rng.integers(-1, 1, size=n)
            mls = opt_utils.pack_elements_into_bits(signed.astype(np.int8), bits)
            out.append({"peer": "coremltools-mlprogram", "order": "lsbFirst", "bits": bits, "signed": True,
                        "codes": signed.tolist(), "bytes": [int(b) for b in mls]})
            if bits == 4:
                ox = numpy_helper._pack_4bitx2(codes.astype(np.uint8))
                out.append({"peer": "onnx-uint4", "order": "lsbFirst", "bits": 4, "signed": False,
                            "codes": codes.tolist(), "bytes": [int(b) for b in ox]})
                oxs = numpy_helper._pack_4bitx2(signed.astype(np.int8))
                out.append({"peer": "onnx-int4", "order": "lsbFirst", "bits": 4, "signed": True,
                            "codes": signed.tolist(), "bytes": [int(b) for b in oxs]})
    with open(sys.argv[1], "w") as f:
        json.dump(out, f)
    print(f"{len(out)} packing vectors from coremltools and onnx → {sys.argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
