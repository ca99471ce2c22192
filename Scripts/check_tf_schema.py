#!/usr/bin/env python3
"""Check Schemas/tensorflow/*.proto against the TensorFlow wheel's own descriptors.

Our files are flat (graph.proto, tensor_bundle.proto, ...); TensorFlow's are
tensorflow/core/{framework,protobuf}/<same name>. protoc compiles ours into a
descriptor set; each file is compared with the descriptor TensorFlow's
<stem>_pb2 module carries: syntax and package, imports (each of ours must be
one of theirs), and, recursively, every message (map-entry flag), oneof,
field (number, type, label, type name, oneof, default, proto3 optional, the
deprecated and packed options and the packing on the wire), enum and enum
value. Our subset may leave elements out; what it keeps may not differ.
The elements in WHOLE must be complete: every field, oneof member, nested
message or enum value TensorFlow declares in them must be in ours too.
Exits 1 on any difference.

usage: check_tf_schema.py [SCHEMA_DIR]   (default: Schemas/tensorflow; run with .venv-tf's python)
"""
import glob
import importlib
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import tempfile
import types

from google.protobuf import descriptor_pb2

FD = descriptor_pb2.FieldDescriptorProto
PACKAGES = ("tensorflow.core.framework", "tensorflow.core.protobuf")
# Elements the importer relies on seeing whole (full names).
WHOLE = {
    "tensorflow.DataType", "tensorflow.AttrValue", "tensorflow.AttrValue.ListValue", "tensorflow.NameAttrList",
    "tensorflow.TensorShapeProto", "tensorflow.TensorShapeProto.Dim", "tensorflow.VersionDef",
    "tensorflow.TensorSliceProto", "tensorflow.TensorSliceProto.Extent", "tensorflow.BundleHeaderProto",
    "tensorflow.BundleHeaderProto.Endianness", "tensorflow.BundleEntryProto", "tensorflow.SavedModel",
    "tensorflow.SignatureDef", "tensorflow.FunctionDef.ArgAttrs", "tensorflow.OpList",
}
# Scalar types a proto3 repeated field packs unless told otherwise.
UNPACKABLE = {FD.TYPE_STRING, FD.TYPE_BYTES, FD.TYPE_MESSAGE, FD.TYPE_GROUP}


def register_tensorflow_package():
    """Registers the tensorflow package by its path alone, so that importing one of its protobuf
    modules does not run tensorflow/__init__.py (which loads all of TensorFlow)."""
    spec = importlib.util.find_spec("tensorflow")
    if spec is None:
        sys.exit("tensorflow is not installed (run this with .venv-tf/bin/python; `make venv-tf`)")
    sys.modules.setdefault("tensorflow", types.ModuleType("tensorflow")).__path__ = list(spec.submodule_search_locations)


def tensorflow_module(stem):
    """TensorFlow's <stem>_pb2 module, or None."""
    for package in PACKAGES:
        try:
            return importlib.import_module("%s.%s_pb2" % (package, stem))
        except ModuleNotFoundError:
            continue
    return None


def packed_on_wire(f, syntax):
    if f.label != FD.LABEL_REPEATED or f.type in UNPACKABLE:
        return False
    return f.options.packed if f.options.HasField("packed") else syntax == "proto3"


def optional_attr(message, name):
    return getattr(message, name) if message.HasField(name) else None


class Comparison:
    def __init__(self):
        self.problems = []
        self.counts = dict.fromkeys(("files", "messages", "oneofs", "fields", "enums", "enum values"), 0)

    def differ(self, where, what, ours, theirs):
        if ours != theirs:
            self.problems.append("%s: %s %r, TensorFlow has %r" % (where, what, ours, theirs))

    def absent(self, where, text):
        self.problems.append("%s: %s" % (where, text))

    def require_whole(self, where, kind, ours, theirs):
        if where in WHOLE:
            for name in theirs:
                if name not in ours:
                    self.absent(where, "%s %s is left out, but this element must be whole" % (kind, name))

    def file(self, ours, theirs, official_name):
        self.counts["files"] += 1
        self.differ(ours.name, "syntax", ours.syntax, theirs.syntax)
        self.differ(ours.name, "package", ours.package, theirs.package)
        their_imports = {os.path.basename(d): d for d in theirs.dependency}
        for dep in ours.dependency:
            if dep not in their_imports:
                self.absent(ours.name, "imports %s, %s does not" % (dep, official_name))
        self.enums(ours.enum_type, theirs.enum_type, ours.package)
        self.messages(ours.message_type, theirs.message_type, ours.package, ours.syntax, theirs.syntax)

    def matched(self, kind, ours, theirs, scope):
        """Each of our elements with TensorFlow's of the same name (counted; the ones TensorFlow lacks reported)."""
        by_name = {t.name: t for t in theirs}
        self.require_whole(scope, kind, [o.name for o in ours], by_name)
        for o in ours:
            self.counts[kind + "s"] += 1
            where = scope + "." + o.name
            if o.name in by_name:
                yield o, by_name[o.name], where
            else:
                self.absent(where, "%s not in TensorFlow" % kind)

    def enums(self, ours, theirs, scope):
        for e, t, where in self.matched("enum", ours, theirs, scope):
            for v, tv, value_where in self.matched("enum value", e.value, t.value, where):
                self.differ(value_where, "number", v.number, tv.number)

    def messages(self, ours, theirs, scope, our_syntax, their_syntax):
        for m, t, where in self.matched("message", ours, theirs, scope):
            self.differ(where, "map_entry", m.options.map_entry, t.options.map_entry)
            list(self.matched("oneof", m.oneof_decl, t.oneof_decl, where))
            for f, o, field_where in self.matched("field", m.field, t.field, where):
                self.field(f, m, o, t, field_where, our_syntax, their_syntax)
            self.enums(m.enum_type, t.enum_type, where)
            self.messages(m.nested_type, t.nested_type, where, our_syntax, their_syntax)

    def field(self, f, m, o, t, where, our_syntax, their_syntax):
        def oneof(msg, fld):
            return msg.oneof_decl[fld.oneof_index].name if fld.HasField("oneof_index") else None

        self.differ(where, "number", f.number, o.number)
        self.differ(where, "type", FD.Type.Name(f.type), FD.Type.Name(o.type))
        self.differ(where, "label", FD.Label.Name(f.label), FD.Label.Name(o.label))
        self.differ(where, "type name", f.type_name, o.type_name)
        self.differ(where, "oneof", oneof(m, f), oneof(t, o))
        self.differ(where, "default", optional_attr(f, "default_value"), optional_attr(o, "default_value"))
        self.differ(where, "proto3_optional", f.proto3_optional, o.proto3_optional)
        self.differ(where, "deprecated option", f.options.deprecated, o.options.deprecated)
        self.differ(where, "packed option", optional_attr(f.options, "packed"), optional_attr(o.options, "packed"))
        self.differ(where, "packed on the wire", packed_on_wire(f, our_syntax), packed_on_wire(o, their_syntax))


def compile_ours(schema_dir):
    protos = sorted(os.path.basename(p) for p in glob.glob(os.path.join(schema_dir, "*.proto")))
    if not protos:
        sys.exit("no .proto files in %s" % schema_dir)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "ours.pb")
        if subprocess.run(["protoc", "-I", schema_dir, "--descriptor_set_out=" + out] + protos).returncode != 0:
            sys.exit("protoc rejects the schemas in %s" % schema_dir)
        fds = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as f:
            fds.ParseFromString(f.read())
    return fds.file


def tensorflow_version():
    for dist in ("tensorflow", "tensorflow-cpu"):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "(unknown version)"


def main() -> int:
    schema_dir = sys.argv[1] if len(sys.argv) > 1 else "Schemas/tensorflow"
    comparison = Comparison()
    register_tensorflow_package()
    for ours in compile_ours(schema_dir):
        module = tensorflow_module(os.path.splitext(ours.name)[0])
        if module is None:
            comparison.absent(ours.name, "TensorFlow has no %s in %s" % (ours.name, " or ".join(PACKAGES)))
            continue
        theirs = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(theirs)
        comparison.file(ours, theirs, theirs.name)
    for p in comparison.problems:
        print("schema mismatch:", p)
    counted = ", ".join("%d %s" % (n, kind) for kind, n in comparison.counts.items())
    print("tensorflow schema: %s checked against tensorflow %s, %d mismatches" % (counted, tensorflow_version(), len(comparison.problems)))
    return 1 if comparison.problems else 0


if __name__ == "__main__":
    sys.exit(main())
