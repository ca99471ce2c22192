#!/usr/bin/env python3
"""Write the TensorFlow fixtures of Tests/ShrinkwrapTensorFlowTests (run with .venv-tf/bin/python, TF 2.12).

  module/             a SavedModel of a seeded tf.Module: a small dense layer behind a
                      `serving_default` signature (input "x" [None, 4] float32, output "y"), and
                      variables of every dtype the bundle reader decodes (float32, float16, bfloat16,
                      float64, int8 ... int64, uint8 ... uint64, bool; a scalar, an empty one)
  many/               a checkpoint of 300 small float32 variables (tf.train.Checkpoint) whose index
                      is rewritten in 4 KiB blocks: TensorFlow writes 256 KiB blocks, so its own
                      index of it is one block; ours has several, and TensorFlow's checkpoint reader
                      is made to read it back here, every tensor equal to the original
  frozen.pb           the serving function as a frozen GraphDef (variables folded into Const nodes)
  expected.json       every bundle entry: dtype, shape and values (as strings, exact), the signature's
                      inputs and outputs, the block counts of both indexes
  models/NAME/        for each small seeded model (cnn, mlp, shapes: Keras `model.save(dir)`; resize:
                      `tf.saved_model.save` of a tf.Module): the SavedModel (keras_metadata.pb and
                      fingerprint.pb left out: the importer does not read them)
  models/NAME.pb      the same function frozen (convert_variables_to_constants_v2)
  models/models.json  per model: the signature's input and output keys, the frozen graph's
                      placeholder and output node names, a seeded input and TensorFlow's outputs
  models/while.pb     a frozen graph with a While loop and a data-dependent tf.cond, both lowered to
                      TF1 control flow (the loop imports, the cond's Switch / Merge do not), and a
                      made-up op ("ShrinkwrapMadeUp"), for the unsupported-op list
  models/recurrent*   Keras LSTM / GRU / SimpleRNN layers: TF2 While loops over TensorLists, in
                      the SavedModel and in the frozen graph (frozen with lower_control_flow=False,
                      so the loops stay functional While ops); recurrent_tf1.pb: frozen the default
                      way, the loops lowered to TF1 frames (Enter / Merge / Switch / NextIteration / Exit)
  models/branchy*     a tf.Module with a tf.cond and a tf.while_loop whose condition and trip
                      count come from the input's shape (known at import)
  models/datawhile.pb a frozen loop whose trip count depends on the data (refused)
  models/tf1cond.pb   a TF1 graph (control flow v1) with conds as frozen TF1 Keras models have them:
                      one on a learning-phase PlaceholderWithDefault (False; its training branch has
                      a dropout, whose random ops the importer never reads), one on the input's width;
                      tf1cond.json: a seeded input and the Session's output

usage: make_tf_fixtures.py [--models] OUT_DIR   (default: Tests/ShrinkwrapTensorFlowTests/Fixtures;
       --models writes only models/)
"""
import json
import os
import shutil
import struct
import sys
import tempfile

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402
from tensorflow.core.protobuf import saved_model_pb2  # noqa: E402
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2  # noqa: E402

SEED = 20240611
MANY = 300
TABLE_MAGIC = 0xDB4775248B80FB57


# --- the model -----------------------------------------------------------------------------

class Model(tf.Module):
    def __init__(self, rng):
        super().__init__(name="model")
        self.kernel = tf.Variable(rng.standard_normal((4, 3)).astype(np.float32), name="kernel")
        self.bias = tf.Variable(rng.standard_normal(3).astype(np.float32), name="bias")
        self.half = tf.Variable(rng.standard_normal((2, 3)).astype(np.float16), name="half")
        self.brain = tf.Variable(tf.constant([1.5, -2.25, 3.0e10], tf.bfloat16), name="brain")
        self.wide = tf.Variable(np.array([np.pi, -1e-300, 1e300], np.float64), name="wide")
        self.counts = tf.Variable(np.array([0, -1, 2**40 + 3, -(2**62) - 7, 2**63 - 1], np.int64), name="counts")
        self.i32 = tf.Variable(np.array([[-(2**31), 2**31 - 1], [5, -6]], np.int32), name="i32")
        self.i16 = tf.Variable(np.array([-32768, 32767, 12], np.int16), name="i16")
        self.i8 = tf.Variable(np.array([-128, 127, 0, -3], np.int8), name="i8")
        self.u8 = tf.Variable(np.array([0, 255, 128], np.uint8), name="u8")
        self.flags = tf.Variable(np.array([True, False, True]), name="flags")
        self.scalar = tf.Variable(np.float32(0.25), name="scalar")
        self.empty = tf.Variable(np.zeros((0, 3), np.float32), name="empty")
        self.u16 = tf.Variable(np.array([0, 1, 65535], np.uint16), name="u16")
        self.u32 = tf.Variable(np.array([0, 7, 4294967295], np.uint32), name="u32")
        self.u64 = tf.Variable(np.array([0, 9, 2**63 + 5], np.uint64), name="u64")

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
    def __call__(self, x):
        return {"y": tf.nn.relu(tf.matmul(x, self.kernel) + self.bias)}


# --- values as exact strings ---------------------------------------------------------------

def value_strings(array):
    if array.dtype == np.bool_:
        return ["true" if v else "false" for v in array.reshape(-1)]
    if array.dtype.kind in "iu":
        return [str(int(v)) for v in array.reshape(-1)]
    return [repr(float(v)) for v in array.astype(np.float64).reshape(-1)]


def expected_entries(prefix):
    reader = tf.train.load_checkpoint(prefix)
    dtypes = reader.get_variable_to_dtype_map()
    entries = {}
    for key, shape in sorted(reader.get_variable_to_shape_map().items()):
        dtype = dtypes[key]
        if dtype == tf.string:
            entries[key] = {"dtype": "string", "shape": list(shape)}
            continue
        value = reader.get_tensor(key)
        if dtype == tf.bfloat16:
            value = np.asarray(value).astype(np.float32)
        entries[key] = {"dtype": dtype.name, "shape": list(shape), "values": value_strings(np.asarray(value))}
    return entries


# --- an SSTable writer (LevelDB's table format, as TensorFlow's table builder writes it) ----

CRC_TABLE = []
for n in range(256):
    c = n
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    CRC_TABLE.append(c)


def masked_crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def block(entries, restart_interval):
    out, restarts, previous = bytearray(), [], b""
    for i, (key, value) in enumerate(entries):
        shared = 0
        if i % restart_interval == 0:
            restarts.append(len(out))
        else:
            while shared < min(len(key), len(previous)) and key[shared] == previous[shared]:
                shared += 1
        out += varint(shared) + varint(len(key) - shared) + varint(len(value)) + key[shared:] + value
        previous = key
    for r in restarts or [0]:
        out += struct.pack("<I", r)
    out += struct.pack("<I", len(restarts or [0]))
    return bytes(out)


def write_table(path, entries, block_size):
    """entries: sorted (key, value) byte pairs. Returns how many data blocks were written."""
    data, index, pending = bytearray(), [], []

    def flush(contents_entries, restart_interval):
        contents = block(contents_entries, restart_interval)
        handle = varint(len(data)) + varint(len(contents))
        data.extend(contents + b"\x00" + struct.pack("<I", masked_crc32c(contents + b"\x00")))
        return handle

    size = 0
    for key, value in entries:
        pending.append((key, value))
        size += len(key) + len(value) + 8
        if size >= block_size:
            index.append((key, flush(pending, 16)))
            pending, size = [], 0
    if pending:
        index.append((pending[-1][0], flush(pending, 16)))
    metaindex = flush([], 16)
    index_handle = flush(index, 1)
    footer = (metaindex + index_handle).ljust(40, b"\x00") + struct.pack("<Q", TABLE_MAGIC)
    with open(path, "wb") as f:
        f.write(bytes(data) + footer)
    return len(index)


def read_table(path):
    """(key, value) pairs and the data block count of an uncompressed table (to re-block it)."""
    raw = open(path, "rb").read()
    assert struct.unpack("<Q", raw[-8:])[0] == TABLE_MAGIC

    def uvarint(buf, pos):
        shift = result = 0
        while True:
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return result, pos

    def entries_of(offset, size):
        contents = raw[offset:offset + size]
        assert raw[offset + size] == 0, "compressed block"
        restarts = struct.unpack("<I", contents[-4:])[0]
        end, pos, key, out = len(contents) - 4 - 4 * restarts, 0, b"", []
        while pos < end:
            shared, pos = uvarint(contents, pos)
            unshared, pos = uvarint(contents, pos)
            length, pos = uvarint(contents, pos)
            key = key[:shared] + contents[pos:pos + unshared]
            pos += unshared
            out.append((key, contents[pos:pos + length]))
            pos += length
        return out

    footer = raw[-48:]
    _, pos = uvarint(footer, 0)
    _, pos = uvarint(footer, pos)
    index_offset, pos = uvarint(footer, pos)
    index_size, _ = uvarint(footer, pos)
    pairs, blocks = [], entries_of(index_offset, index_size)
    for _, handle in blocks:
        offset, p = uvarint(handle, 0)
        size, _ = uvarint(handle, p)
        pairs += entries_of(offset, size)
    return pairs, len(blocks)


# --- main ----------------------------------------------------------------------------------

def write_many(rng, out, tmp):
    """A plain checkpoint of MANY small variables, its index re-blocked; TensorFlow must read it back."""
    many = [tf.Variable(rng.standard_normal(i % 3 + 1).astype(np.float32), name="many_%d" % i) for i in range(MANY)]
    tf_prefix = tf.train.Checkpoint(many=many).write(os.path.join(tmp, "many"))
    pairs, tf_blocks = read_table(tf_prefix + ".index")
    folder = os.path.join(out, "many")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    prefix = os.path.join(folder, "variables")
    blocks = write_table(prefix + ".index", pairs, 4096)
    shutil.copyfile(tf_prefix + ".data-00000-of-00001", prefix + ".data-00000-of-00001")
    entries = expected_entries(prefix)
    if entries != expected_entries(tf_prefix):
        sys.exit("TensorFlow reads the re-blocked index differently")
    if tf_blocks != 1 or blocks < 3:
        sys.exit("index blocks: TensorFlow's %d, re-blocked %d; the tests want 1 and several" % (tf_blocks, blocks))
    return entries, blocks


def main():
    args = [a for a in sys.argv[1:] if a != "--models"]
    out = args[0] if args else "Tests/ShrinkwrapTensorFlowTests/Fixtures"
    write_models(os.path.join(out, "models"))
    if "--models" in sys.argv:
        return
    rng = np.random.default_rng(SEED)
    model = Model(rng)
    function = model.__call__.get_concrete_function()
    saved = os.path.join(out, "module")
    shutil.rmtree(saved, ignore_errors=True)
    tf.saved_model.save(model, saved, signatures={"serving_default": function})
    _, module_blocks = read_table(os.path.join(saved, "variables", "variables.index"))
    with tempfile.TemporaryDirectory() as tmp:
        many, many_blocks = write_many(rng, out, tmp)

    frozen = convert_variables_to_constants_v2(function).graph.as_graph_def()
    with open(os.path.join(out, "frozen.pb"), "wb") as f:
        f.write(frozen.SerializeToString(deterministic=True))

    signature = tf.saved_model.load(saved).signatures["serving_default"]
    expected = {
        "seed": SEED,
        "tensorflow": tf.__version__,
        "module": expected_entries(os.path.join(saved, "variables", "variables")),
        "many": many,
        "signature": {
            "inputs": {k: v.name for k, v in signature.structured_input_signature[1].items()},
            "outputs": sorted(signature.structured_outputs),
        },
        "kernel": value_strings(model.kernel.numpy()),
        "index_blocks": {"module": module_blocks, "many": many_blocks},
    }
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote %s: %d + %d entries; index blocks %d and %d" % (out, len(expected["module"]), len(many), module_blocks, many_blocks))

# --- models for the importer ---------------------------------------------------------------

def keras_cnn():
    L = tf.keras.layers
    x = tf.keras.Input((12, 12, 3), name="image")
    y = L.Conv2D(8, 3, strides=2, padding="same")(x)
    y = L.BatchNormalization()(y)
    y = L.ReLU()(y)
    y = L.DepthwiseConv2D(3, padding="same", depth_multiplier=2)(y)
    y = L.ReLU(max_value=6.0)(y)
    y = L.MaxPooling2D(2, padding="same")(y)
    y = L.Conv2D(6, 2, padding="valid", activation="elu", dilation_rate=1)(y)
    y = L.AveragePooling2D(2, strides=1, padding="same")(y)
    y = L.GlobalAveragePooling2D()(y)
    y = L.Dense(5, activation="softmax")(y)
    return tf.keras.Model(x, y, name="cnn"), (2, 12, 12, 3)


def keras_mlp():
    L = tf.keras.layers
    x = tf.keras.Input((20,), name="features")
    y = L.Dense(16, activation="relu")(x)
    y = L.LeakyReLU(0.2)(L.Dense(12)(y))
    y = L.Dense(8, activation="tanh")(y)
    a = L.Dense(4, activation="sigmoid")(y)
    b = L.Dense(3, activation="selu")(y)
    return tf.keras.Model(x, [a, b], name="mlp"), (3, 20)


def keras_shapes():
    L = tf.keras.layers
    x = tf.keras.Input((6, 6, 4), name="grid")
    c = L.Conv2D(4, 3, padding="same", activation="softplus")(x)
    y = L.Concatenate()([x, c])
    y = L.ZeroPadding2D(((1, 0), (0, 1)))(y)
    y = L.UpSampling2D(2)(y)
    y = L.Conv2DTranspose(4, 3, strides=2, padding="same")(y)
    y = L.Conv2DTranspose(3, 2, strides=2, padding="valid", activation="sigmoid")(y)
    y = L.MaxPooling2D(8)(y)
    y = L.Reshape((7 * 7, 3))(y)
    y = L.Permute((2, 1))(y)
    s = L.Lambda(lambda t: t[:, 1:, ::2])(y)
    m = L.Lambda(lambda t: tf.reduce_mean(t, axis=-1, keepdims=True))(y)
    y = L.Multiply()([L.Flatten()(s), L.Flatten()(L.Subtract()([s, m[:, 1:, :25]]))])
    y = L.Dense(5)(y)
    return tf.keras.Model(x, y, name="shapes"), (2, 6, 6, 4)


def keras_recurrent():
    L = tf.keras.layers
    x = tf.keras.Input((5, 3), name="sequence")
    y = L.LSTM(4, return_sequences=True)(x)
    y = L.GRU(3, return_sequences=True, go_backwards=True)(y)
    y = L.SimpleRNN(2)(y)
    return tf.keras.Model(x, y, name="recurrent"), (2, 5, 3)


class Branchy(tf.Module):
    """A tf.cond and a tf.while_loop decided by the input's shape: the importer takes the
    branch and unrolls the loop (its trip count, the input's width, computed at import)."""

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
    def __call__(self, x):
        width = tf.shape(x)[1]
        y = tf.cond(width > 2, lambda: x * 2.0, lambda: x - 1.0)
        _, total = tf.while_loop(lambda i, a: i < width, lambda i, a: (i + 1, a * 0.5 + y), [tf.constant(0), tf.zeros_like(x)])
        return {"total": total}


class Resizer(tf.Module):
    def __init__(self, rng):
        super().__init__(name="resizer")
        self.scale = tf.Variable(rng.standard_normal((1, 1, 1, 3)).astype(np.float32), name="scale")

    @tf.function(input_signature=[tf.TensorSpec([None, 10, 12, 3], tf.float32, name="pixels")])
    def __call__(self, x):
        x = x * self.scale
        a = tf.image.resize(x, (15, 20))
        b = tf.image.resize(x, (5, 8), method="nearest")
        c = tf.compat.v1.image.resize_bilinear(x, (7, 9), align_corners=True)
        d = tf.compat.v1.image.resize_nearest_neighbor(x, (20, 24))
        e = tf.image.resize(x, (8, 9), method="bilinear")
        flat = tf.concat([tf.reshape(t, [tf.shape(t)[0], -1]) for t in (a, b, c, d, e)], axis=1)
        return {"resized": flat, "small": tf.math.rsqrt(tf.square(e) + 1.0)}


def frozen(function, lower_control_flow=True):
    graph = convert_variables_to_constants_v2(function, lower_control_flow=lower_control_flow).graph
    return graph.as_graph_def(), [t.name for t in graph.inputs], [t.name for t in graph.outputs]


def floats(array):
    """float32 values to 9 significant digits (exact), written as JSON numbers."""
    return [json.loads("%.9g" % v) for v in np.asarray(array, np.float32).reshape(-1)]


def prune(saved):
    """Drops the files the importer does not read and the library functions the serving signature
    never calls (Keras saves every layer's traces; TensorFlow's own loader then refuses the folder,
    which is why the outputs are computed before this)."""
    for extra in ("keras_metadata.pb", "fingerprint.pb"):
        if os.path.exists(os.path.join(saved, extra)):
            os.remove(os.path.join(saved, extra))
    path = os.path.join(saved, "saved_model.pb")
    model = saved_model_pb2.SavedModel()
    model.ParseFromString(open(path, "rb").read())
    graph = model.meta_graphs[0].graph_def
    functions = {f.signature.name: f for f in graph.library.function}
    def called(nodes):  # every function a node names: call ops' f, While's cond / body, If's branches
        return [v.func.name for n in nodes for v in n.attr.values() if v.func.name]

    keep, stack = set(), called(n for n in graph.node if n.op in ("StatefulPartitionedCall", "PartitionedCall"))
    while stack:
        name = stack.pop()
        if name in keep or name not in functions:
            continue
        keep.add(name)
        stack += called(functions[name].node_def)
    kept = [functions[k] for k in sorted(keep)]
    del graph.library.function[:]
    graph.library.function.extend(kept)
    del graph.library.gradient[:]
    for node in model.meta_graphs[0].object_graph_def.nodes:
        if node.WhichOneof("kind") == "user_object":
            node.user_object.metadata = ""
    with open(path, "wb") as f:
        f.write(model.SerializeToString(deterministic=True))


def write_model(folder, name, saved, function, serving, x):
    """The frozen graph of `function` (its While loops kept as While ops) and what `serving`
    (the loaded signature) answers for `x`."""
    graph_def, inputs, outputs = frozen(function, lower_control_flow=False)
    tf.io.write_graph(graph_def, folder, name + ".pb", as_text=False)
    input_key = list(serving.structured_input_signature[1])[0]
    answer = serving(**{input_key: tf.constant(x)})
    direct = tf.nest.flatten(function(tf.constant(x)))
    keys = sorted(answer)
    if len(direct) != len(keys) or any(not np.allclose(d, answer[k], rtol=1e-5, atol=1e-6) for d, k in zip(direct, keys)):
        sys.exit("%s: the frozen function and the signature disagree (or are not in key order)" % name)
    return {
        "input": input_key, "frozen_inputs": inputs, "frozen_outputs": outputs,
        "shape": list(x.shape), "x": floats(x),
        "outputs": {k: {"shape": list(v.shape), "values": floats(v)} for k, v in sorted(answer.items())},
        "output_order": keys,
    }


def write_control_flow(folder):
    @tf.function(input_signature=[tf.TensorSpec([3], tf.float32, name="x")])
    def loop(x):
        i = tf.constant(0)
        _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * 2.0), [i, x])
        return tf.cond(tf.reduce_sum(y) > 0.0, lambda: y + 1.0, lambda: y - 1.0)

    graph_def, _, _ = frozen(loop.get_concrete_function())
    made_up = graph_def.node.add()
    made_up.op, made_up.name = "ShrinkwrapMadeUp", "mystery"
    made_up.input.append("x")
    tf.io.write_graph(graph_def, folder, "while.pb", as_text=False)

    @tf.function(input_signature=[tf.TensorSpec([3], tf.float32, name="x")])
    def data_loop(x):
        _, y = tf.while_loop(lambda i, y: tf.reduce_sum(y) < 100.0, lambda i, y: (i + 1, y * 2.0 + 1.0), [tf.constant(0), x])
        return y

    graph_def, _, _ = frozen(data_loop.get_concrete_function(), lower_control_flow=False)
    tf.io.write_graph(graph_def, folder, "datawhile.pb", as_text=False)


def write_tf1_cond(folder, rng):
    tf.compat.v1.disable_control_flow_v2()
    try:
        graph = tf.Graph()
        with graph.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
            training = tf.compat.v1.placeholder_with_default(False, [], name="keras_learning_phase")
            h = tf.matmul(x, tf.constant(rng.standard_normal((4, 3)).astype(np.float32)))
            h = tf.compat.v1.cond(training, lambda: tf.nn.dropout(h, rate=0.5), lambda: tf.identity(h))
            width = tf.shape(x)[1]
            y = tf.identity(tf.compat.v1.cond(width > 2, lambda: tf.nn.relu(h), lambda: -h), name="y")
        value = rng.standard_normal((2, 4)).astype(np.float32)
        with tf.compat.v1.Session(graph=graph) as session:
            answer = session.run(y, {x: value})
        tf.io.write_graph(graph.as_graph_def(), folder, "tf1cond.pb", as_text=False)
    finally:
        tf.compat.v1.enable_control_flow_v2()
    with open(os.path.join(folder, "tf1cond.json"), "w") as f:
        json.dump({"shape": list(value.shape), "x": floats(value), "y_shape": list(answer.shape), "y": floats(answer)}, f)
        f.write("\n")


def write_models(folder):
    rng = np.random.default_rng(SEED + 1)
    tf.keras.utils.set_random_seed(SEED)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    record = {}
    for build in (keras_cnn, keras_mlp, keras_shapes):
        model, shape = build()
        for layer in model.layers:  # BatchNormalization statistics away from 0 / 1
            if isinstance(layer, tf.keras.layers.BatchNormalization):
                layer.set_weights([rng.uniform(0.5, 1.5, w.shape).astype(np.float32) for w in layer.get_weights()])
        saved = os.path.join(folder, model.name)
        model.save(saved)
        spec = tf.TensorSpec((None,) + shape[1:], tf.float32, name="input")
        function = tf.function(lambda t, m=model: m(t, training=False)).get_concrete_function(spec)
        serving = tf.saved_model.load(saved).signatures["serving_default"]
        x = rng.standard_normal(shape).astype(np.float32)
        record[model.name] = write_model(folder, model.name, saved, function, serving, x)
    module = Resizer(rng)
    saved = os.path.join(folder, "resize")
    tf.saved_model.save(module, saved, signatures={"serving_default": module.__call__.get_concrete_function()})
    serving = tf.saved_model.load(saved).signatures["serving_default"]
    x = rng.standard_normal((1, 10, 12, 3)).astype(np.float32)
    function = tf.function(lambda t: module(t)).get_concrete_function(tf.TensorSpec([None, 10, 12, 3], tf.float32, name="input"))
    record["resize"] = write_model(folder, "resize", saved, function, serving, x)
    model, shape = keras_recurrent()
    saved = os.path.join(folder, model.name)
    model.save(saved)
    spec = tf.TensorSpec((None,) + shape[1:], tf.float32, name="input")
    function = tf.function(lambda t, m=model: m(t, training=False)).get_concrete_function(spec)
    serving = tf.saved_model.load(saved).signatures["serving_default"]
    record[model.name] = write_model(folder, model.name, saved, function, serving, rng.standard_normal(shape).astype(np.float32))
    tf.io.write_graph(frozen(function)[0], folder, "recurrent_tf1.pb", as_text=False)
    module = Branchy()
    saved = os.path.join(folder, "branchy")
    tf.saved_model.save(module, saved, signatures={"serving_default": module.__call__.get_concrete_function()})
    serving = tf.saved_model.load(saved).signatures["serving_default"]
    function = tf.function(lambda t: module(t)).get_concrete_function(tf.TensorSpec([None, 4], tf.float32, name="input"))
    record["branchy"] = write_model(folder, "branchy", saved, function, serving, rng.standard_normal((3, 4)).astype(np.float32))
    write_control_flow(folder)
    write_tf1_cond(folder, rng)
    for name in record:
        prune(os.path.join(folder, name))
    with open(os.path.join(folder, "models.json"), "w") as f:
        json.dump(record, f, indent=None, sort_keys=True)
        f.write("\n")
    print("wrote %s: %s" % (folder, ", ".join(sorted(record))))


if __name__ == "__main__":
    main()
