#!/usr/bin/env python3
"""Checks written ML Programs with coremltools: loads each .mlpackage's
program (which runs MIL type inference on every op) and compares every op's
inferred output shape and dtype with the type the package declares for it.

    .venv/bin/python Scripts/mil_typecheck.py PKG.mlpackage [...]

Prints one line per package ("ok N ops" or the first mismatches); exits 1
when any package fails to load or disagrees.
"""
import logging
import os
import sys
import warnings

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)


def declared_types(spec):
    """{value name: (dtype name, shape)} from the spec's op outputs."""
    from coremltools.proto import MIL_pb2
    out = {}
    for f in spec.mlProgram.functions.values():
        for block in f.block_specializations.values():
            for op in block.operations:
                for o in op.outputs:
                    t = o.type.tensorType
                    dt = MIL_pb2.DataType.Name(t.dataType)
                    out[o.name] = (dt, tuple(d.constant.size for d in t.dimensions))
    return out


DTYPES = {"fp32": "FLOAT32", "fp16": "FLOAT16", "int32": "INT32", "bool": "BOOL", "int8": "INT8", "uint8": "UINT8",
          "str": "STRING", "string": "STRING", "uint32": "UINT32", "int4": "INT4", "uint4": "UINT4", "uint1": "UINT1", "uint2": "UINT2",
          "uint3": "UINT3", "uint6": "UINT6", "int16": "INT16", "uint16": "UINT16"}


def check(path):
    import coremltools as ct
    from coremltools.converters.mil.frontend.milproto.load import load
    from coremltools.converters.mil.mil import types
    model = ct.models.MLModel(path, skip_model_load=True)
    spec = model.get_spec()
    weights = os.path.join(path, "Data", "com.apple.CoreML", "weights")
    prog = load(spec, spec.specificationVersion, weights)
    declared = declared_types(spec)
    problems, count = [], 0
    for f in prog.functions.values():
        for op in f.operations:
            count += 1
            for v in op.outputs:
                if v.name not in declared:
                    continue
                dt, shape = declared[v.name]
                got_dt = DTYPES.get(types.builtin_to_string(v.dtype), types.builtin_to_string(v.dtype))
                got_shape = tuple(int(d) for d in v.shape) if v.shape is not None else ()
                if dt != got_dt or shape != got_shape:
                    problems.append(f"{op.op_type} '{v.name}': declared {dt}{list(shape)}, inferred {got_dt}{list(got_shape)}")
    return count, problems


def main():
    failed = False
    for path in sys.argv[1:]:
        try:
            count, problems = check(path)
        except Exception as e:  # noqa: BLE001 - report any loader failure as one line
            print(f"{path}: LOAD FAILED: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            failed = True
            continue
        if problems:
            failed = True
            print(f"{path}: {len(problems)} mismatches: " + "; ".join(problems[:5]))
        else:
            print(f"{path}: ok {count} ops")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
