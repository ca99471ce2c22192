#!/usr/bin/env python3
"""Check Schemas/coreml/*.proto against the coremltools wheel's own descriptors.

Compiles our subset with protoc into a descriptor set and compares each of
our files with the coremltools descriptor of the file of the same name
(Model.proto with coremltools.proto.Model_pb2, and so on): syntax, package,
imports, and every message, nested message, oneof, field (name, number,
type, label, type name, oneof name, proto3 optional, default, packed option
and effective packing), enum and enum value. Our subset may omit elements;
it may not differ. The files in COMPLETE (MIL.proto) may not omit anything
either: every message, oneof, field, enum and enum value coremltools
declares in them must be in ours, so an ML Program round-trips whole.
Exits 1 on any difference.

usage: check_coreml_schema.py [SCHEMA_DIR]   (default: Schemas/coreml)
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
# Types that proto3 packs when repeated (every scalar but string and bytes).
# Our files that must declare everything coremltools' file of the same name does.
COMPLETE = {"MIL.proto"}
PACKABLE = {FD.TYPE_DOUBLE, FD.TYPE_FLOAT, FD.TYPE_INT64, FD.TYPE_UINT64, FD.TYPE_INT32,
            FD.TYPE_FIXED64, FD.TYPE_FIXED32, FD.TYPE_BOOL, FD.TYPE_UINT32, FD.TYPE_ENUM,
            FD.TYPE_SFIXED32, FD.TYPE_SFIXED64, FD.TYPE_SINT32, FD.TYPE_SINT64}


def official_file(proto_name):
    """The coremltools FileDescriptorProto for e.g. "Model.proto", or None."""
    # Import coremltools.proto.* without running coremltools/__init__.py,
    # which loads the whole converter stack and prints warnings.
    if "coremltools" not in sys.modules:
        spec = importlib.util.find_spec("coremltools")
        if spec is None:
            sys.exit("coremltools is not installed (run `make venv`)")
        pkg = types.ModuleType("coremltools")
        pkg.__path__ = list(spec.submodule_search_locations)
        sys.modules["coremltools"] = pkg
    stem = os.path.splitext(proto_name)[0]
    try:
        module = importlib.import_module("coremltools.proto.%s_pb2" % stem)
    except ImportError:
        return None
    fdp = descriptor_pb2.FileDescriptorProto()
    module.DESCRIPTOR.CopyToProto(fdp)
    return fdp


def effectively_packed(f, syntax):
    if f.label != FD.LABEL_REPEATED or f.type not in PACKABLE:
        return False
    if f.options.HasField("packed"):
        return f.options.packed
    return syntax == "proto3"


class Checker:
    def __init__(self):
        self.problems = []
        self.complete = False  # set per file: report what coremltools has and we lack
        self.counts = {"files": 0, "messages": 0, "oneofs": 0, "fields": 0, "enums": 0, "enum values": 0}

    def problem(self, where, text):
        self.problems.append("%s: %s" % (where, text))

    def check_file(self, ours, theirs):
        self.counts["files"] += 1
        where = ours.name
        self.complete = ours.name in COMPLETE
        for attr in ("syntax", "package"):
            if getattr(ours, attr) != getattr(theirs, attr):
                self.problem(where, "%s %r, coremltools has %r" % (attr, getattr(ours, attr), getattr(theirs, attr)))
        if ours.options.optimize_for != theirs.options.optimize_for:
            self.problem(where, "optimize_for %s, coremltools has %s" % (ours.options.optimize_for, theirs.options.optimize_for))
        for dep in ours.dependency:
            if dep not in theirs.dependency:
                self.problem(where, "imports %s, coremltools does not" % dep)
        self.enums(ours.enum_type, theirs.enum_type, ours.package)
        self.messages(ours.message_type, theirs.message_type, ours.package, ours.syntax, theirs.syntax)

    def missing(self, where, kind, theirs, ours):
        """In a COMPLETE file: every name coremltools has must be in ours."""
        if not self.complete:
            return
        for name in theirs:
            if name not in ours:
                self.problem(where, "%s %s missing (coremltools has it; this file must be complete)" % (kind, name))

    def enums(self, ours_list, theirs_list, scope):
        tmap = {e.name: e for e in theirs_list}
        self.missing(scope, "enum", [e.name for e in theirs_list], [e.name for e in ours_list])
        for e in ours_list:
            self.counts["enums"] += 1
            path = scope + "." + e.name
            t = tmap.get(e.name)
            if t is None:
                self.problem(path, "enum not in coremltools")
                continue
            if e.options.SerializeToString(deterministic=True) != t.options.SerializeToString(deterministic=True):
                self.problem(path, "enum options %s, coremltools has %s" % (e.options, t.options))
            tv = {v.name: v.number for v in t.value}
            self.missing(path, "enum value", [v.name for v in t.value], [v.name for v in e.value])
            for v in e.value:
                self.counts["enum values"] += 1
                if v.name not in tv:
                    self.problem(path + "." + v.name, "enum value not in coremltools")
                elif tv[v.name] != v.number:
                    self.problem(path + "." + v.name, "= %d, coremltools has %d" % (v.number, tv[v.name]))

    def messages(self, ours_list, theirs_list, scope, our_syntax, their_syntax):
        tmap = {m.name: m for m in theirs_list}
        self.missing(scope, "message", [m.name for m in theirs_list], [m.name for m in ours_list])
        for m in ours_list:
            self.counts["messages"] += 1
            path = scope + "." + m.name
            t = tmap.get(m.name)
            if t is None:
                self.problem(path, "message not in coremltools")
                continue
            if m.options.map_entry != t.options.map_entry:
                self.problem(path, "map_entry %s, coremltools has %s" % (m.options.map_entry, t.options.map_entry))
            their_oneofs = [o.name for o in t.oneof_decl]
            self.missing(path, "oneof", their_oneofs, [o.name for o in m.oneof_decl])
            self.missing(path, "field", [f.name for f in t.field], [f.name for f in m.field])
            for o in m.oneof_decl:
                self.counts["oneofs"] += 1
                if o.name not in their_oneofs:
                    self.problem(path, "oneof %s not in coremltools" % o.name)
            self.fields(m, t, path, our_syntax, their_syntax)
            self.enums(m.enum_type, t.enum_type, path)
            self.messages(m.nested_type, t.nested_type, path, our_syntax, their_syntax)

    def fields(self, m, t, path, our_syntax, their_syntax):
        tf = {f.name: f for f in t.field}

        def oneof_name(msg, f):
            return msg.oneof_decl[f.oneof_index].name if f.HasField("oneof_index") else None

        for f in m.field:
            self.counts["fields"] += 1
            where = "%s.%s" % (path, f.name)
            o = tf.get(f.name)
            if o is None:
                self.problem(where, "field not in coremltools")
                continue
            if f.number != o.number:
                self.problem(where, "number %d, coremltools has %d" % (f.number, o.number))
            if f.type != o.type:
                self.problem(where, "type %s, coremltools has %s" % (FD.Type.Name(f.type), FD.Type.Name(o.type)))
            if f.label != o.label:
                self.problem(where, "label %s, coremltools has %s" % (FD.Label.Name(f.label), FD.Label.Name(o.label)))
            if f.type_name != o.type_name:
                self.problem(where, "type name %s, coremltools has %s" % (f.type_name, o.type_name))
            if oneof_name(m, f) != oneof_name(t, o):
                self.problem(where, "in oneof %s, coremltools has %s" % (oneof_name(m, f), oneof_name(t, o)))
            if f.proto3_optional != o.proto3_optional:
                self.problem(where, "proto3_optional %s, coremltools has %s" % (f.proto3_optional, o.proto3_optional))
            if f.default_value != o.default_value:
                self.problem(where, "default %r, coremltools has %r" % (f.default_value, o.default_value))
            ours_packed = f.options.packed if f.options.HasField("packed") else None
            theirs_packed = o.options.packed if o.options.HasField("packed") else None
            if ours_packed != theirs_packed:
                self.problem(where, "packed option %s, coremltools has %s" % (ours_packed, theirs_packed))
            if effectively_packed(f, our_syntax) != effectively_packed(o, their_syntax):
                self.problem(where, "packed on the wire: %s, coremltools: %s"
                             % (effectively_packed(f, our_syntax), effectively_packed(o, their_syntax)))


def main() -> int:
    schema_dir = sys.argv[1] if len(sys.argv) > 1 else "Schemas/coreml"
    protos = sorted(os.path.basename(p) for p in glob.glob(os.path.join(schema_dir, "*.proto")))
    if not protos:
        sys.exit("no .proto files in %s" % schema_dir)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "ours.pb")
        subprocess.run(["protoc", "-I", schema_dir, "--descriptor_set_out=" + out, "--include_imports"] + protos,
                       check=True)
        fds = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as f:
            fds.ParseFromString(f.read())

    checker = Checker()
    for ours in fds.file:
        theirs = official_file(ours.name)
        if theirs is None:
            checker.problem(ours.name, "no file of that name in coremltools.proto")
            continue
        checker.check_file(ours, theirs)

    for p in checker.problems:
        print("schema mismatch:", p)
    c = checker.counts
    print("coreml schema: %d files, %d messages, %d oneofs, %d fields, %d enums, %d enum values checked "
          "against coremltools %s, %d mismatches"
          % (c["files"], c["messages"], c["oneofs"], c["fields"], c["enums"], c["enum values"],
             importlib.metadata.version("coremltools"), len(checker.problems)))
    return 1 if checker.problems else 0


if __name__ == "__main__":
    sys.exit(main())
