#!/usr/bin/env python3
"""Check Schemas/tflite/tflite.fbs against the TFLite schema TensorFlow ships.

TensorFlow's pip wheel carries the official schema as flatc-generated Python
(tensorflow/lite/python/schema_py_generated.py). This script reads that file as
text (no TensorFlow import) and our .fbs with regular expressions, and compares:

  - every enum value and every union member (name and wire value);
  - every table: its field count (StartObject), each field's id, name, scalar
    kind (PrependXxxSlot) and default, what an offset field points to (string,
    table, union, vector of scalars / strings / tables) and each vector's
    element size (StartVector; flatc's Python generator drops force_align, so
    our force_align values are listed, not checked);
  - the file identifier.

Every table, enum and union of the official schema must be in ours and agree.
Ours may go beyond it only by appending (enum values above the official
maximum, union members after the last one, fields with ids past the official
field count, whole new tables): those are listed as "newer than TF x.y" and
are not errors. Anything else is a mismatch. Exits 1 on any mismatch.

usage: check_tflite_schema.py [FBS] [--official schema_py_generated.py]

The metadata schema is checked the same way (`make check-tflite-schema`):
check_tflite_schema.py Schemas/tflite/metadata_schema.fbs --official
tensorflow_lite_support/metadata/metadata_schema_py_generated.py (tflite-support).
"""
import argparse
import importlib.util
import os
import re
import sys

SCALARS = {  # fbs type -> (python Prepend kind, number_types flags, size)
    "bool": ("Bool", "Bool", 1), "byte": ("Int8", "Int8", 1), "int8": ("Int8", "Int8", 1),
    "ubyte": ("Uint8", "Uint8", 1), "uint8": ("Uint8", "Uint8", 1),
    "short": ("Int16", "Int16", 2), "int16": ("Int16", "Int16", 2),
    "ushort": ("Uint16", "Uint16", 2), "uint16": ("Uint16", "Uint16", 2),
    "int": ("Int32", "Int32", 4), "int32": ("Int32", "Int32", 4),
    "uint": ("Uint32", "Uint32", 4), "uint32": ("Uint32", "Uint32", 4),
    "long": ("Int64", "Int64", 8), "int64": ("Int64", "Int64", 8),
    "ulong": ("Uint64", "Uint64", 8), "uint64": ("Uint64", "Uint64", 8),
    "float": ("Float32", "Float32", 4), "float32": ("Float32", "Float32", 4),
    "double": ("Float64", "Float64", 8), "float64": ("Float64", "Float64", 8),
}


def camel(snake):
    return "".join(p[:1].upper() + p[1:] for p in snake.split("_"))


# --------------------------------------------------------------------------
# Our .fbs

def parse_fbs(path):
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"//[^\n]*", "", text)
    schema = {"enums": {}, "unions": {}, "tables": {}, "file_identifier": None}
    m = re.search(r'file_identifier\s+"([^"]*)"\s*;', text)
    if m:
        schema["file_identifier"] = m.group(1)
    for m in re.finditer(r"\benum\s+(\w+)\s*:\s*(\w+)\s*\{([^}]*)\}", text):
        name, base, body = m.groups()
        values, nxt = {}, 0
        for item in [s.strip() for s in body.split(",") if s.strip()]:
            im = re.fullmatch(r"(\w+)(?:\s*=\s*(-?\d+))?(?:\s*\([^)]*\))?", item)
            if not im:
                raise SystemExit("cannot parse enum %s value %r" % (name, item))
            v = int(im.group(2)) if im.group(2) is not None else nxt
            values[im.group(1)] = v
            nxt = v + 1
        schema["enums"][name] = {"base": base, "values": values}
    for m in re.finditer(r"\bunion\s+(\w+)\s*\{([^}]*)\}", text):
        name, body = m.groups()
        members = [re.sub(r"\s*\(.*\)", "", s.strip()) for s in body.split(",") if s.strip()]
        schema["unions"][name] = {mem: i + 1 for i, mem in enumerate(members)}
    for m in re.finditer(r"\btable\s+(\w+)\s*(?:\([^)]*\))?\s*\{([^}]*)\}", text):
        name, body = m.groups()
        fields = []
        for decl in [s.strip() for s in body.split(";") if s.strip()]:
            fm = re.fullmatch(r"(\w+)\s*:\s*(\[\s*\w+\s*\]|\w+)\s*(?:=\s*([-\w.]+))?\s*(?:\(([^)]*)\))?", decl, re.S)
            if not fm:
                raise SystemExit("cannot parse field of %s: %r" % (name, decl))
            fname, ftype, default, attrs = fm.groups()
            attr = {}
            for a in (attrs or "").split(","):
                if a.strip():
                    k, _, v = a.partition(":")
                    attr[k.strip()] = v.strip()
            if "id" not in attr:
                raise SystemExit("%s.%s has no (id: N) attribute" % (name, fname))
            fields.append({"name": fname, "type": ftype.replace(" ", ""), "default": default,
                           "id": int(attr["id"]), "deprecated": "deprecated" in attr,
                           "force_align": int(attr["force_align"]) if "force_align" in attr else None})
        schema["tables"][name] = fields
    return schema


def describe_ours(schema, table):
    """Field id -> description comparable with the official side."""
    out = {}
    for f in schema["tables"][table]:
        t = f["type"]
        vec = t.startswith("[")
        base = t.strip("[]")
        enum = schema["enums"].get(base)
        scalar = SCALARS.get(enum["base"] if enum else base)
        if vec:
            if base == "string":
                kind, elem, size = "vector", "string", 4
            elif scalar:
                kind, elem, size = "vector", scalar[1], scalar[2]
            else:
                kind, elem, size = "vector", "table:" + base, 4
            align = f["force_align"] or size
            out[f["id"]] = dict(name=camel(f["name"]), kind=kind, elem=elem, size=size, align=align,
                                deprecated=f["deprecated"], decl=f)
        elif base in schema["unions"]:
            out[f["id"] - 1] = dict(name=camel(f["name"]) + "Type", kind="scalar", prepend="Uint8", default=0,
                                    deprecated=False, decl=f)
            out[f["id"]] = dict(name=camel(f["name"]), kind="union", deprecated=f["deprecated"], decl=f)
        elif scalar:
            d = f["default"]
            if d is None:
                dv = 0
            elif enum:
                dv = enum["values"].get(d, d) if not re.fullmatch(r"-?\d+", d) else int(d)
            elif d in ("true", "false"):
                dv = 1 if d == "true" else 0
            else:
                dv = float(d) if scalar[0].startswith("Float") else int(d)
            out[f["id"]] = dict(name=camel(f["name"]), kind="scalar", prepend=scalar[0], default=dv,
                                deprecated=f["deprecated"], decl=f)
        elif base == "string":
            out[f["id"]] = dict(name=camel(f["name"]), kind="string", deprecated=f["deprecated"], decl=f)
        else:
            out[f["id"]] = dict(name=camel(f["name"]), kind="table:" + base, deprecated=f["deprecated"], decl=f)
    return out


# --------------------------------------------------------------------------
# The official flatc-generated Python

def parse_official(path):
    src = open(path, encoding="utf-8").read()
    off = {"enums": {}, "unions": {}, "tables": {}, "file_identifier": None}
    m = re.search(r'BufferHasIdentifier\(buf, offset, b"((?:\\x[0-9A-Fa-f]{2})+)"', src)
    if m:
        off["file_identifier"] = bytes(int(h, 16) for h in re.findall(r"\\x([0-9A-Fa-f]{2})", m.group(1))).decode()
    creators = set(re.findall(r"^def (\w+)Creator\(unionType, table\):", src, re.M))
    for m in re.finditer(r"^class (\w+)\(object\):\n((?:    \w+ = -?\d+\n)+)", src, re.M):
        name, body = m.groups()
        values = {k: int(v) for k, v in re.findall(r"    (\w+) = (-?\d+)", body)}
        if name in creators:
            values.pop("NONE", None)
            off["unions"][name] = values
        else:
            off["enums"][name] = values
    starts = {n: int(c) for n, c in re.findall(r"^def (\w+)Start\(builder\):\s*(?:return )?builder\.StartObject\((\d+)\)", src, re.M)}
    # Class bodies (reader side), to see what each accessor reads.
    bodies = {}
    for m in re.finditer(r"^class (\w+)\(object\):\n(.*?)(?=^\S)", src, re.M | re.S):
        bodies[m.group(1)] = m.group(2)
    for table, count in starts.items():
        fields = {}
        prefix = table + "Add"
        for fm in re.finditer(r"^def %s(\w+)\(builder, \w+\):\s*(?:return )?builder\.Prepend(\w+)Slot\((\d+), (.*)\)\s*$" % re.escape(prefix), src, re.M):
            fname, kind, fid, rest = fm.groups()
            default = rest.rsplit(",", 1)[-1].strip()
            f = dict(name=fname, id=int(fid))
            if kind == "UOffsetTRelative":
                f["kind"] = "offset"
            else:
                f["kind"] = "scalar"
                f["prepend"] = kind
                f["default"] = {"True": 1, "False": 0}.get(default, None)
                if f["default"] is None:
                    f["default"] = float(default) if "." in default or "e" in default.lower() else int(default)
            fields[int(fid)] = f
        # Vectors: element size and alignment.
        for vm in re.finditer(r"^def %sStart(\w+)Vector\(builder, numElems\):\s*(?:return )?builder\.StartVector\((\d+), numElems, (\d+)\)" % re.escape(table), src, re.M):
            fname, size, align = vm.groups()
            for f in fields.values():
                if f["name"] == fname:
                    f["vector"] = (int(size), int(align))
        body = bodies.get(table, "")
        for f in fields.values():
            if f["kind"] != "offset":
                continue
            am = re.search(r"    def %s\(self(, j)?\):\n(.*?)(?=\n    # |\n    def |\Z)" % re.escape(f["name"]), body, re.S)
            if not am:
                f["offset_kind"] = "unknown"
                continue
            is_elem, code = am.group(1) is not None, am.group(2)
            tm = re.search(r"obj = (\w+)\(\)", code)
            nm = re.search(r"number_types\.(\w+)Flags, a \+", code)
            if "Union(" in code:
                f["offset_kind"] = "union"
            elif is_elem and ".String(" in code:
                f["offset_kind"], f["elem"] = "vector", "string"
            elif is_elem and tm:
                f["offset_kind"], f["elem"] = "vector", "table:" + tm.group(1)
            elif is_elem and nm:
                f["offset_kind"], f["elem"] = "vector", nm.group(1)
            elif ".String(" in code:
                f["offset_kind"] = "string"
            elif tm:
                f["offset_kind"] = "table:" + tm.group(1)
            else:
                f["offset_kind"] = "unknown"
        off["tables"][table] = {"count": count, "fields": fields}
    return off


# --------------------------------------------------------------------------

def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("fbs", nargs="?", default=os.path.join(here, "..", "Schemas", "tflite", "tflite.fbs"))
    ap.add_argument("--official", help="schema_py_generated.py (default: the installed tensorflow's)")
    args = ap.parse_args()
    version = "?"
    if args.official:
        official_path = args.official
    else:
        spec = importlib.util.find_spec("tensorflow")
        if spec is None or not spec.submodule_search_locations:
            print("tensorflow is not installed in this Python (%s); run `make venv-tf`" % sys.executable)
            return 2
        official_path = os.path.join(list(spec.submodule_search_locations)[0], "lite", "python", "schema_py_generated.py")
        from importlib.metadata import PackageNotFoundError, version as dist_version
        for dist in ("tensorflow", "tensorflow-cpu", "tensorflow-macos", "tf-nightly"):
            try:
                version = dist_version(dist)
                break
            except PackageNotFoundError:
                pass
    tf = "TF " + ".".join(version.split(".")[:2]) if version != "?" else "the official schema"

    ours = parse_fbs(args.fbs)
    off = parse_official(official_path)
    problems, newer, unverifiable = [], [], []
    checked = {"enum values": 0, "union members": 0, "tables": 0, "fields": 0}

    if ours["file_identifier"] != off["file_identifier"]:
        problems.append("file_identifier %r, official %r" % (ours["file_identifier"], off["file_identifier"]))

    def compare_values(kind, name, mine, theirs):
        top = max(theirs.values()) if theirs else -1
        for k, v in theirs.items():
            checked[kind] += 1
            if k not in mine:
                problems.append("%s %s: %s = %d is missing" % (kind[:-1], name, k, v))
            elif mine[k] != v:
                problems.append("%s %s: %s = %d, official %d" % (kind[:-1], name, k, mine[k], v))
        for k, v in mine.items():
            if k not in theirs:
                if v > top:
                    newer.append("%s.%s = %d" % (name, k, v))
                else:
                    problems.append("%s %s: %s = %d is not in %s (and not appended after its last value %d)" % (kind[:-1], name, k, v, tf, top))

    for name, values in off["enums"].items():
        if name not in ours["enums"]:
            problems.append("enum %s: missing (%d values)" % (name, len(values)))
            continue
        compare_values("enum values", name, ours["enums"][name]["values"], values)
    for name, members in off["unions"].items():
        if name not in ours["unions"]:
            problems.append("union %s: missing (%d members)" % (name, len(members)))
            continue
        compare_values("union members", name, ours["unions"][name], members)
    for name in ours["enums"]:
        if name not in off["enums"]:
            newer.append("enum " + name)
    for name in ours["unions"]:
        if name not in off["unions"]:
            newer.append("union " + name)

    for table, info in sorted(off["tables"].items()):
        if table not in ours["tables"]:
            problems.append("table %s: missing (%d fields)" % (table, info["count"]))
            continue
        checked["tables"] += 1
        mine = describe_ours(ours, table)
        count = info["count"]
        for fid in range(count):
            theirs = info["fields"].get(fid)
            m = mine.get(fid)
            where = "%s field id %d" % (table, fid)
            if theirs is None:  # deprecated upstream: no adder
                if m is not None and not m["deprecated"]:
                    problems.append("%s (%s): official field is deprecated, ours is not" % (where, m["name"]))
                elif m is None:
                    problems.append("%s: missing (deprecated upstream; declare it deprecated to keep the ids)" % where)
                continue
            checked["fields"] += 1
            if m is None:
                problems.append("%s: official %s is missing" % (where, theirs["name"]))
                continue
            if m["deprecated"]:
                problems.append("%s (%s): ours is deprecated, the official one is not" % (where, m["name"]))
            if m["name"] != theirs["name"]:
                problems.append("%s: name %s, official %s" % (where, m["name"], theirs["name"]))
            if theirs["kind"] == "scalar":
                if m["kind"] != "scalar":
                    problems.append("%s (%s): ours is %s, official is a %s scalar" % (where, m["name"], m["kind"], theirs["prepend"]))
                    continue
                if m["prepend"] != theirs["prepend"]:
                    problems.append("%s (%s): scalar %s, official %s" % (where, m["name"], m["prepend"], theirs["prepend"]))
                if m["default"] != theirs["default"]:
                    problems.append("%s (%s): default %r, official %r" % (where, m["name"], m["default"], theirs["default"]))
                continue
            ok = theirs.get("offset_kind")
            if ok == "vector":
                if m["kind"] != "vector":
                    problems.append("%s (%s): ours is %s, official is a vector of %s" % (where, m["name"], m["kind"], theirs["elem"]))
                    continue
                if m["elem"] != theirs["elem"]:
                    problems.append("%s (%s): vector of %s, official of %s" % (where, m["name"], m["elem"], theirs["elem"]))
                if "vector" in theirs and m["size"] != theirs["vector"][0]:
                    problems.append("%s (%s): element size %d, official %d" % (where, m["name"], m["size"], theirs["vector"][0]))
                if m["decl"]["force_align"]:
                    # flatc's Python generator ignores force_align (StartVector gets the element size).
                    unverifiable.append("%s.%s force_align: %d" % (table, m["decl"]["name"], m["decl"]["force_align"]))
            elif ok in ("string", "union") or (ok or "").startswith("table:"):
                if m["kind"] != ok:
                    problems.append("%s (%s): ours is %s, official %s" % (where, m["name"], m["kind"], ok))
            else:
                problems.append("%s (%s): cannot tell what the official field holds" % (where, m["name"]))
        for fid, m in sorted(mine.items()):
            if fid >= count:
                newer.append("%s.%s (id %d)" % (table, m["decl"]["name"], fid))
    for table in ours["tables"]:
        if table not in off["tables"]:
            newer.append("table " + table)

    for p in problems:
        print("MISMATCH:", p)
    print("checked %s against %s (%s): %d enum values, %d union members, %d tables, %d fields" % (
        os.path.relpath(args.fbs), tf, official_path, checked["enum values"], checked["union members"],
        checked["tables"], checked["fields"]))
    if newer:
        print("newer than %s (appended, not checked here): %d" % (tf, len(newer)))
        for n in newer:
            print("  " + n)
    if unverifiable:
        print("not visible in the generated Python (from upstream schema.fbs): " + "; ".join(unverifiable))
    if problems:
        print("%d mismatch(es)" % len(problems))
        return 1
    print("tflite schema: no mismatches")
    return 0


if __name__ == "__main__":
    sys.exit(main())
