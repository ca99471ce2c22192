#!/usr/bin/env python3
"""Checks the .mlmodel files Shrinkwrap writes with coremltools itself.

For every DIR/<name>.mlmodel (written by the Swift test
CoreMLCrossCheckFilesTests) this script

  * loads it with coremltools.utils.load_spec and builds
    coremltools.models.MLModel(spec) (on Linux coremltools cannot run
    predictions; building the model object still parses and checks it);
  * checks the spec is a NeuralNetwork of the declared kind;
  * for every weight listed in DIR/<name>.weights/manifest.json, decodes the
    stored WeightParams with coremltools' own helpers
    (quantization_utils._dequantize_wp for rawValue + linear / lookup-table
    quantization, numpy float16 for float16Value) and requires the result to
    be bit-identical to Shrinkwrap's decoding (the .npy next to it).

Exit status 1 on any mismatch or load failure; 2 when there is nothing to
check (the Swift test did not run).
"""
import copy
import json
import os
import sys
import warnings

import numpy as np


def main():
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} DIR", file=sys.stderr)
        return 2
    root = sys.argv[1]
    warnings.simplefilter("ignore")
    import coremltools as ct
    from coremltools.models.neural_network import quantization_utils as qu

    models = sorted(f for f in os.listdir(root) if f.endswith(".mlmodel")) if os.path.isdir(root) else []
    if not models:
        print(f"coreml cross-check: no .mlmodel files in {root} (run the Swift suites first)", file=sys.stderr)
        return 2
    failures = 0
    checked = 0
    for name in models:
        path = os.path.join(root, name)
        try:
            spec = ct.utils.load_spec(path)
            ct.models.MLModel(spec)
        except Exception as e:  # noqa: BLE001 - report any load failure
            print(f"FAIL {name}: coremltools cannot load it: {e}")
            failures += 1
            continue
        kind = spec.WhichOneof("Type")
        if kind not in ("neuralNetwork", "neuralNetworkClassifier", "neuralNetworkRegressor"):
            print(f"FAIL {name}: model type {kind}, expected a neural network")
            failures += 1
            continue
        nn = getattr(spec, kind)
        layers = {l.name: l for l in nn.layers}
        manifest_path = os.path.join(root, name[: -len(".mlmodel")] + ".weights", "manifest.json")
        with open(manifest_path) as f:
            manifest = json.load(f)
        bad = 0
        for entry in manifest:
            layer = layers.get(entry["layer"])
            if layer is None or layer.WhichOneof("layer") != entry["kind"]:
                print(f"FAIL {name}: layer {entry['layer']} ({entry['kind']}) not found")
                bad += 1
                continue
            params = getattr(layer, entry["kind"])
            if "index" in entry:  # a repeated weight set (bidirectional LSTM)
                params = params.weightParams[entry["index"]]
            elif entry["kind"] in ("uniDirectionalLSTM",):
                params = params.weightParams
            wp = getattr(params, entry["field"])
            shape = tuple(entry["shape"])
            if len(wp.float16Value):
                theirs = np.frombuffer(wp.float16Value, dtype="<f2").astype(np.float32).reshape(shape)
                form = "fp16"
            elif len(wp.rawValue):
                copy_wp = copy.deepcopy(wp)
                qu._dequantize_wp(copy_wp, shape, axis=entry.get("axis", 0))
                theirs = np.array(copy_wp.floatValue, dtype=np.float32).reshape(shape)
                form = f"{wp.quantization.WhichOneof('QuantizationType')} {wp.quantization.numberOfBits}-bit"
            else:
                print(f"FAIL {name}: {entry['layer']}.{entry['field']} is not stored compressed")
                bad += 1
                continue
            ours = np.load(os.path.join(root, name[: -len(".mlmodel")] + ".weights", entry["file"])).astype(np.float32).reshape(shape)
            if ours.tobytes() != theirs.tobytes():
                diff = np.abs(ours.astype(np.float64) - theirs.astype(np.float64))
                print(f"FAIL {name}: {entry['layer']}.{entry['field']} ({form}): {np.count_nonzero(ours != theirs)} of {ours.size} "
                      f"values differ (max |diff| {diff.max():.3g})")
                bad += 1
            checked += 1
        failures += bad
        status = "ok  " if bad == 0 else "FAIL"
        print(f"{status} {name}: spec {spec.specificationVersion}, {kind}, {len(nn.layers)} layers, "
              f"{len(manifest)} compressed weights bit-identical" if bad == 0 else f"{status} {name}: {bad} mismatches")
    print(f"coreml cross-check: {len(models)} files, {checked} weights compared with coremltools {ct.__version__}, "
          f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
