#!/usr/bin/env python3
"""Writes the HDF5 reader's test fixtures (Tests/HDF5Tests/Fixtures) with h5py, and what h5py reads back.

    .venv-tf/bin/python Scripts/make_hdf5_fixtures.py [Tests/HDF5Tests/Fixtures]

Files (about 230 KB with expected.json; the same bytes on every run: no object times):
  earliest.h5     libver 'earliest': superblock 1 (B-tree K 4), v1 object headers with continuations, symbol-table
                  groups (1, 9 and 100 members, a soft link), layout v3 (compact, contiguous, chunked with
                  multi-level v1 B-trees), filter pipeline v1, attribute messages v1, a committed datatype
  latest.h5       libver 'latest': superblock 3, v2 object headers, link messages, dense links (fractal heap +
                  v2 B-tree), dense attributes, layout v4 / v5 chunk indexes (single chunk, implicit, fixed
                  array, extensible array with a secondary block, v2 B-tree records 10 and 11), soft and
                  external links, a committed datatype
  dense_attr.h5   libver 'latest', an attribute over 64 KiB (a huge object in the dense attribute heap), after
                  a 512-byte user block
  offsets4.h5     4-byte addresses and lengths (superblock 2, an "OCHK" continuation block)
  keras_tiny.h5   tf.keras Sequential (Dense 3->4 relu, Dense 4->2), model.save(..., save_format="h5"):
                  h5py's defaults (superblock 0, default B-tree K)

expected.json: for every file, every object (path -> group members and attributes, or dataset shape, value
and attributes) as h5py reads it. Values are tagged with the HDF5Value case the Swift reader returns:
floats (float16 / float32), doubles, ints (signed, bool, signed enums), uints, strings, bytes (opaque),
sequences (variable-length sequences), empty (a null dataspace). Arrays over 4096 values keep only their count.
"""
import ctypes
import json
import os
import sys

import h5py
import numpy as np

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "Tests", "HDF5Tests", "Fixtures")


# --- content shared by the 'earliest' and 'latest' files ----------------------------------------------------

def untimed_dcpl():
    """A dataset creation property list without object times (h5py's high-level API leaves them out too),
    so that the fixtures are the same bytes on every run."""
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_obj_track_times(False)
    return dcpl


def numeric_datasets(f, full):
    """Every number type in 'latest'; a few (datatype messages do not depend on the header version) in 'earliest'."""
    g = f.create_group("numbers")
    base = (np.arange(6, dtype=np.float64).reshape(2, 3) - 2.5) / 4
    for name, dt in [("f16le", "<f2"), ("f16be", ">f2"), ("f32le", "<f4"), ("f32be", ">f4"), ("f64le", "<f8"), ("f64be", ">f8")]:
        if full or name in ("f16be", "f32le", "f64le"):
            g.create_dataset(name, data=base.astype(dt))
    ints = {
        "i8": ("<i1", [-128, -1, 0, 127]), "i16be": (">i2", [-32768, -2, 1, 32767]),
        "i32": ("<i4", [-2147483648, -3, 2, 2147483647]), "i64be": (">i8", [-(2 ** 63), -4, 3, 2 ** 63 - 1]),
        "u8": ("<u1", [0, 1, 128, 255]), "u16": ("<u2", [0, 2, 32768, 65535]),
        "u32be": (">u4", [0, 3, 2 ** 31, 2 ** 32 - 1]), "u64": ("<u8", [0, 4, 2 ** 63, 2 ** 64 - 1]),
    }
    for name, (dt, values) in ints.items():
        if full or name in ("i16be", "u64"):
            g.create_dataset(name, data=np.array(values, dtype=dt))
    g.create_dataset("bools", data=np.array([True, False, True]))
    g.create_dataset("enum_u8", data=np.array([0, 2, 1], dtype="u1"), dtype=h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 2}, basetype="u1"))
    g.create_dataset("scalar_f32", data=np.float32(3.5))
    g.create_dataset("scalar_i64", data=np.int64(-7))
    g.create_dataset("empty", shape=(0,), dtype="f4")
    g.create_dataset("empty_2d", shape=(3, 0), dtype="i2")
    g.create_dataset("null", data=h5py.Empty("f4"))
    g.create_dataset("cube", data=np.arange(24, dtype="<i4").reshape(2, 3, 4))


def string_datasets(f, full):
    g = f.create_group("strings")
    g.create_dataset("fixed_ascii", data=np.array([b"ab", b"cde", b""], dtype="S5"))
    utf8 = g.create_dataset("fixed_utf8", shape=(2,), dtype=h5py.string_dtype("utf-8", 6))
    utf8.id.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array(["h\u00e9".encode(), b"x"], dtype="S6"), mtype=utf8.id.get_type())
    g.create_dataset("vlen_utf8", data=["h\u00e9llo", "w\u00f6rld", ""], dtype=h5py.string_dtype())
    g.create_dataset("vlen_ascii", data=[b"one", b"two"], dtype=h5py.string_dtype("ascii"))
    g.create_dataset("vlen_scalar", data="a scalar string", dtype=h5py.string_dtype())
    if not full:
        return
    seq = g.create_dataset("vlen_int_seq", shape=(3,), dtype=h5py.vlen_dtype(np.dtype("<i4")))
    seq[0], seq[1], seq[2] = [1, 2, 3], [4], []
    # Space-padded and null-terminated fixed strings: HDF5 converts h5py's null-padded bytes on write.
    for name, pad in [("space_padded", h5py.h5t.STR_SPACEPAD), ("null_terminated", h5py.h5t.STR_NULLTERM)]:
        tid = h5py.h5t.C_S1.copy()
        tid.set_size(6)
        tid.set_strpad(pad)
        space = h5py.h5s.create_simple((2,))
        dsid = h5py.h5d.create(g.id, name.encode(), tid, space, dcpl=untimed_dcpl())
        dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array([b"ab", b"abcdef"], dtype="S6"))
    g.create_dataset("opaque", data=np.array([b"\x01\x02", b"\xff\x00"], dtype="V2"))


def layout_datasets(f, latest):
    g = f.create_group("layouts")
    data = np.arange(70, dtype="<f4").reshape(10, 7) / 8
    g.create_dataset("contiguous", data=data)
    dcpl = untimed_dcpl()
    dcpl.set_layout(h5py.h5d.COMPACT)
    dsid = h5py.h5d.create(g.id, b"compact", h5py.h5t.STD_I16LE, h5py.h5s.create_simple((3, 2)), dcpl=dcpl)
    dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, np.arange(6, dtype="<i2").reshape(3, 2) - 3)
    g.create_dataset("gzip_shuffle", data=data, chunks=(4, 3), compression="gzip", shuffle=True)
    g.create_dataset("fletcher32", data=data, chunks=(4, 4), fletcher32=True)
    g.create_dataset("unwritten_fill", shape=(5,), dtype="<i4", fillvalue=7)
    g.create_dataset("unwritten_chunked", shape=(4, 4), dtype="<f4", chunks=(2, 2), fillvalue=-1.5)
    partial = g.create_dataset("partial_chunks", shape=(6,), dtype="<i8", chunks=(2,), fillvalue=9)
    partial[2:4] = [20, 30]
    # One-byte chunks: a two-level v1 B-tree (earliest, 100 chunks); an extensible array past the 6 data
    # blocks of its index block, into a secondary block (latest, 260 chunks)
    count = 260 if latest else 100
    many = g.create_dataset("unlimited_many", shape=(count,), maxshape=(None,), chunks=(1,), dtype="<i1")
    many[...] = (np.arange(count) * 3 % 256 - 128).astype("<i1")
    if not latest:
        return
    g.create_dataset("all_filters", data=data.astype(">f8"), chunks=(3, 7), compression="gzip", compression_opts=9, shuffle=True, fletcher32=True)
    g.create_dataset("chunked_plain", data=np.arange(12, dtype="<i4"), chunks=(5,))
    g.create_dataset("one_chunk", data=data, chunks=(10, 7), compression="gzip")
    g.create_dataset("unlimited_rows", data=data, maxshape=(None, 7), chunks=(2, 7), compression="gzip")
    g.create_dataset("unlimited_cols", data=data, maxshape=(10, None), chunks=(3, 2))
    g.create_dataset("unlimited_2d_gzip", data=data, maxshape=(None, None), chunks=(4, 4), compression="gzip")  # B-tree records type 11
    g.create_dataset("unlimited_2d", data=np.arange(6, dtype="<i1").reshape(3, 2), maxshape=(None, None), chunks=(2, 1))  # type 10
    g.create_dataset("fixed_max", data=data[:5], maxshape=(8, 7), chunks=(2, 3))
    dcpl = untimed_dcpl()
    dcpl.set_chunk((2, 4))
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    dsid = h5py.h5d.create(g.id, b"implicit", h5py.h5t.IEEE_F32LE, h5py.h5s.create_simple((5, 7)), dcpl=dcpl)
    dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, data[:5].copy())


def attributes(f):
    f.attrs["an_int"] = np.int32(42)
    f.attrs["a_float"] = np.float64(-0.25)
    f.attrs["floats"] = np.array([1.5, 2.5], dtype="<f4")
    f.attrs["a_bool"] = np.bool_(True)
    f.attrs["vlen_str"] = "variable length \u2713"
    f.attrs["vlen_strs"] = np.array(["a", "bc"], dtype=h5py.string_dtype())
    f.attrs["fixed_str"] = np.bytes_(b"fixed")
    f.attrs["weight_names"] = np.array([b"dense/kernel:0", b"dense/bias:0"])
    f.attrs["empty"] = h5py.Empty("f4")
    f.attrs["matrix"] = np.arange(6, dtype=">i2").reshape(2, 3)
    f["numbers/f32le"].attrs["unit"] = "metres"
    f["strings"].attrs["count"] = np.uint16(9)
    # A committed (named) datatype: the dataset's and the attribute's datatype messages are shared.
    f["committed_type"] = np.dtype("<i2")
    f.create_dataset("typed", data=np.array([1, -2, 3], dtype="<i2"), dtype=f["committed_type"])
    f["typed"].attrs.create("typed_attr", np.array([7, 8], dtype="<i2"), dtype=f["committed_type"])


def groups(f):
    f.create_group("one").create_dataset("only", data=np.int8(1))
    target = f.create_dataset("target", data=np.int16(0))
    nine = f.create_group("nine")
    nine.create_group("g0")
    for i in range(1, 9):
        nine["m%d" % i] = target  # hard links to one dataset
    hundred = f.create_group("hundred")
    for i in range(100):
        if i % 25 == 0:
            hundred.create_dataset("m%03d" % i, data=np.int16(i))
        else:
            hundred["m%03d" % i] = target
    f.create_group("nested/a/b/c").create_dataset("deep", data=np.arange(3, dtype="<u4"))
    f["nested/soft"] = h5py.SoftLink("/nested/a/b/c/deep")  # listed, not followed


def hdf5_library():
    """The libhdf5 h5py itself loaded (the wheel's h5py.libs copy), through ctypes."""
    import glob
    libs = glob.glob(os.path.join(os.path.dirname(h5py.__file__), os.pardir, "h5py.libs", "libhdf5-*.so*"))
    return ctypes.CDLL(libs[0] if libs else "libhdf5.so")


def write_earliest(path):
    # Small B-tree 'K' values keep the file small and make the B-trees deep: symbol table nodes of 8 entries and
    # group nodes of 8 children (100 links: a two-level tree), chunk nodes of 8 entries (100 chunks: three levels).
    # A non-default chunk K is what makes libhdf5 write superblock version 1.
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    fcpl.set_obj_track_times(False)
    libhdf5 = hdf5_library()  # h5py does not wrap H5Pset_sym_k / H5Pset_istore_k
    if libhdf5.H5Pset_sym_k(ctypes.c_int64(fcpl.id), 4, 4) < 0 or libhdf5.H5Pset_istore_k(ctypes.c_int64(fcpl.id), 4) < 0:
        raise RuntimeError("H5Pset_sym_k / H5Pset_istore_k failed")
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_libver_bounds(h5py.h5f.LIBVER_EARLIEST, h5py.h5f.LIBVER_LATEST)
    with h5py.File(h5py.h5f.create(path.encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl, fapl=fapl)) as f:
        numeric_datasets(f, full=False)
        string_datasets(f, full=False)
        layout_datasets(f, latest=False)
        attributes(f)
        groups(f)


def write_latest(path):
    with h5py.File(path, "w", libver="latest") as f:
        numeric_datasets(f, full=True)
        string_datasets(f, full=True)
        layout_datasets(f, latest=True)
        attributes(f)
        groups(f)
        many = f.create_group("many_attrs")  # more than 8 attributes: dense attribute storage
        for i in range(12):
            many.attrs["attr_%02d" % i] = np.float32(i) / 4
        tracked = f.create_group("tracked", track_order=True)
        for name in ["zeta", "alpha", "mid"]:
            tracked.create_group(name)
        f["nested/external"] = h5py.ExternalLink("other.h5", "/x")  # listed, not followed


def write_dense_attr(path):
    with h5py.File(path, "w", libver="latest", userblock_size=512) as f:
        g = f.create_group("layer")
        g.attrs["big"] = (np.arange(16500, dtype="<f4") - 8000) / 16  # 66 000 bytes > 64 KiB
        g.attrs["small"] = np.int32(5)
        g.create_dataset("w", data=np.arange(4, dtype="<f4"))
    with open(path, "r+b") as raw:
        raw.write(b"user block text".ljust(512, b"."))


def write_offsets4(path):
    """4-byte addresses and lengths (h5py's set_sizes), libver 'earliest'."""
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    fcpl.set_obj_track_times(False)
    fcpl.set_sizes(4, 4)
    with h5py.File(h5py.h5f.create(path.encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl)) as f:
        g = f.create_group("g")
        g.create_dataset("d", data=np.arange(6, dtype="<f4").reshape(2, 3) / 2)
        g.create_dataset("z", data=np.arange(20, dtype="<i2"), chunks=(8,), compression="gzip")
        g.attrs["names"] = np.array(["x", "yz"], dtype=h5py.string_dtype())
        f.attrs["n"] = np.int64(3)


def write_keras(path):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    tf.keras.utils.set_random_seed(7)
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(3,)),
        tf.keras.layers.Dense(4, activation="relu", name="dense"),
        tf.keras.layers.Dense(2, name="dense_1"),
    ])
    model.save(path, save_format="h5")


# --- expected values: what h5py reads --------------------------------------------------------------------------

def tagged(value, dtype):
    """The HDF5Value case (kind) and the flat list of values for `value` of numpy dtype `dtype`."""
    if isinstance(value, h5py.Empty):
        return {"kind": "empty", "values": []}
    arr = np.asarray(value)
    flat = arr.reshape(-1)
    vlen = h5py.check_vlen_dtype(dtype)
    string_info = h5py.check_string_dtype(dtype)
    if string_info is not None:
        out = []
        for v in flat:
            if isinstance(v, bytes):
                out.append(v.decode("utf-8"))
            else:
                out.append(str(v))
        return {"kind": "strings", "values": out}
    if vlen is not None:
        return {"kind": "sequences", "values": [tagged(np.asarray(v, dtype=vlen), vlen) for v in flat]}
    enum = h5py.check_enum_dtype(dtype)
    kind = np.dtype(dtype).kind
    if kind == "b":
        return {"kind": "ints", "values": [int(v) for v in flat]}
    if kind == "f":
        k = "doubles" if np.dtype(dtype).itemsize == 8 else "floats"
        return {"kind": k, "values": [float(v) for v in flat]}
    if kind in "iu":
        # Integers past 2**53 as strings, so that no JSON reader rounds them through a double.
        return {"kind": "ints" if kind == "i" else "uints", "values": [int(v) if abs(int(v)) < 2 ** 53 else str(int(v)) for v in flat]}
    if kind == "V":
        return {"kind": "bytes", "values": [list(bytes(v)) for v in flat]}
    raise ValueError("no expected form for dtype %r (enum %r)" % (dtype, enum))


LARGE = 4096  # values of longer arrays are left out (the Swift test computes dense_attr.h5's 'big' itself)


def attrs_of(obj):
    out = {}
    for name in obj.attrs:
        aid = obj.attrs.get_id(name)
        value = obj.attrs[name]
        shape = None if aid.shape is None else list(aid.shape)
        value = tagged(value, aid.dtype)
        if len(value["values"]) > LARGE:
            value = {"kind": value["kind"], "count": len(value["values"])}
        out[name] = {"shape": shape, "value": value}
    return out


def describe(path):
    objects = {}

    def visit(name, obj):
        key = name
        if isinstance(obj, h5py.Datatype):
            return  # committed datatypes are not groups or datasets: the reader lists them and refuses to open them
        if isinstance(obj, h5py.Group):
            objects[key] = {"kind": "group", "members": sorted(obj.keys()), "attrs": attrs_of(obj)}
        else:
            shape = None if obj.shape is None else list(obj.shape)
            value = obj[()] if obj.shape is not None else h5py.Empty(obj.dtype)
            objects[key] = {"kind": "dataset", "shape": shape, "value": tagged(value, obj.dtype), "attrs": attrs_of(obj)}

    with h5py.File(path, "r") as f:
        visit("", f)
        f.visititems(visit)
        # visititems visits each object once: list the hard-link aliases too
        for group in ["nine", "hundred"]:
            for name in f[group] if group in f else []:
                key = group + "/" + name
                if key not in objects:
                    visit(key, f[key])
    return objects


def main():
    os.makedirs(OUT, exist_ok=True)
    writers = [("earliest.h5", write_earliest), ("latest.h5", write_latest), ("dense_attr.h5", write_dense_attr),
               ("offsets4.h5", write_offsets4), ("keras_tiny.h5", write_keras)]
    expected = {}
    for name, write in writers:
        path = os.path.join(OUT, name)
        if os.path.exists(path):
            os.remove(path)
        write(path)
        expected[name] = describe(path)
        print("%-14s %7d bytes" % (name, os.path.getsize(path)))
    with open(os.path.join(OUT, "expected.json"), "w") as out:
        json.dump({"h5py": h5py.version.version, "hdf5": h5py.version.hdf5_version, "files": expected}, out, sort_keys=True,
                  separators=(",", ":"))
        out.write("\n")


if __name__ == "__main__":
    main()
