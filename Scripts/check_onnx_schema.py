#!/usr/bin/env python3
"""Check Schemas/onnx/onnx.proto against the onnx wheel's own descriptors.

Compiles our subset with protoc into a descriptor set and compares every
message, field (name, number, type, label, type name, packed option) and
enum value with the same element of onnx's generated onnx_pb descriptors.
Our subset may omit elements; it may not differ. Exits 1 on any difference.

usage: check_onnx_schema.py PROTO
"""
import os
import subprocess
import sys
import tempfile

from google.protobuf import descriptor_pb2
import onnx.onnx_ml_pb2 as official


def main() -> int:
    proto = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "ours.pb")
        subprocess.run(["protoc", "-I", os.path.dirname(proto), "--descriptor_set_out=" + out, os.path.basename(proto)], check=True)
        fds = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as f:
            fds.ParseFromString(f.read())
    ours = fds.file[0]
    theirs = descriptor_pb2.FileDescriptorProto()
    official.DESCRIPTOR.CopyToProto(theirs)
    problems = []
    checked = 0

    def enums(ours_list, theirs_list, where):
        nonlocal checked
        tmap = {e.name: e for e in theirs_list}
        for e in ours_list:
            t = tmap.get(e.name)
            if t is None:
                problems.append("%s enum %s: not in onnx" % (where, e.name))
                continue
            tv = {v.name: v.number for v in t.value}
            for v in e.value:
                checked += 1
                if tv.get(v.name) != v.number:
                    problems.append("%s.%s.%s = %d, onnx has %s" % (where, e.name, v.name, v.number, tv.get(v.name)))

    def messages(ours_list, theirs_list, where):
        nonlocal checked
        tmap = {m.name: m for m in theirs_list}
        for m in ours_list:
            t = tmap.get(m.name)
            path = where + m.name
            if t is None:
                problems.append("message %s: not in onnx" % path)
                continue
            tf = {f.name: f for f in t.field}
            for f in m.field:
                checked += 1
                o = tf.get(f.name)
                if o is None:
                    problems.append("%s.%s: not in onnx" % (path, f.name))
                    continue
                for attr in ("number", "type", "label", "oneof_index"):
                    if getattr(f, attr) != getattr(o, attr) and not (attr == "oneof_index" and not f.HasField("oneof_index") and not o.HasField("oneof_index")):
                        problems.append("%s.%s: %s %s, onnx has %s" % (path, f.name, attr, getattr(f, attr), getattr(o, attr)))
                if f.type_name.split(".")[-1] != o.type_name.split(".")[-1]:
                    problems.append("%s.%s: type %s, onnx has %s" % (path, f.name, f.type_name, o.type_name))
                if f.options.packed != o.options.packed:
                    problems.append("%s.%s: packed=%s, onnx has %s" % (path, f.name, f.options.packed, o.options.packed))
            enums(m.enum_type, t.enum_type, path)
            messages(m.nested_type, t.nested_type, path + ".")

    if ours.package != theirs.package:
        problems.append("package %s, onnx has %s" % (ours.package, theirs.package))
    messages(ours.message_type, theirs.message_type, "")
    enums(ours.enum_type, theirs.enum_type, "")
    for p in problems:
        print("schema mismatch:", p)
    print("onnx schema: %d fields and enum values checked against onnx %s, %d mismatches" % (checked, onnx_version(), len(problems)))
    return 1 if problems else 0


def onnx_version() -> str:
    import onnx
    return onnx.__version__


if __name__ == "__main__":
    sys.exit(main())
