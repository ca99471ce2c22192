#!/usr/bin/env python3
"""TensorFlow Lite fixtures made by TensorFlow's own converter, with reference
outputs from tf.lite.Interpreter.

usage: python Scripts/make_tflite_fixtures.py OUT_DIR

Runs with the TensorFlow venv (tensorflow-cpu 2.12, Scripts/requirements-tf.txt,
`make venv-tf`); `make testdata` runs it into .testdata/tflite (about 40 s).
Scripts/tflite_crosscheck.py then runs every file through `shrinkwrap run` and
compares with the outputs written here.

Models
------
tf.keras models with seeded weights (BatchNormalization moving statistics
random and positive, so the folding matters), converted with
tf.lite.TFLiteConverter.from_keras_model, each in three variants:
  NAME.float32.tflite  plain conversion
  NAME.fp16.tflite     optimizations=[DEFAULT], supported_types=[float16]: every
                       float constant (weights and biases) is a FLOAT16 tensor
                       read by its own DEQUANTIZE op, whose FLOAT32 output
                       feeds the CONV_2D / FULLY_CONNECTED / GATHER / LSTM
  NAME.int8.tflite     dynamic-range quantization (optimizations=[DEFAULT], no
                       representative dataset): symmetric INT8 weights (zero
                       point 0), float activations. Depending on the op:
                       CONV_2D: per-channel, quantized_dimension 0, hybrid;
                       DEPTHWISE_CONV_2D: per-channel, quantized_dimension 3,
                       hybrid; FULLY_CONNECTED: per-tensor, hybrid with
                       asymmetric_quantize_inputs; TRANSPOSE_CONV: per-channel
                       (dim 0) INT8 constant -> DEQUANTIZE -> TRANSPOSE_CONV;
                       GATHER (Embedding): INT8 table, INT8 gathered rows,
                       then a DEQUANTIZE of that activation; LSTM: see below.
  cnn   image [1,32,32,3] -> Conv2D(128,3,s2,same,relu6) -> DepthwiseConv2D(3)
        -> BatchNormalization -> ReLU -> Conv2D(16,1) -> MaxPool2D ->
        AveragePooling2D -> Conv2DTranspose(8,3,s2,same) ->
        GlobalAveragePooling2D (MEAN) -> Dense(10) -> Softmax      [1,10]
        (the BatchNormalization and ReLU are folded into the depthwise conv)
  mlp   features [1,20] -> Dense(64,relu) -> Dense(32,tanh) -> Dense(5) ->
        Softmax                                                     [1,5]
  text  token ids [1,24] int32 -> Embedding(100,16) -> GlobalAveragePooling1D
        -> Dense(16,relu) -> Dense(2,softmax)                       [1,2]
        TFLite Model Maker's average-word-vec classifier shape.
        text.vocab.txt is Model Maker's "word id" vocabulary (<PAD> 0,
        <START> 1, <UNKNOWN> 2, then words), text.sentences.txt a few
        sentences; text.input.npy is the first sentence tokenized as Model
        Maker does (lowercase, split on [^\\w']+, <START> first, <UNKNOWN>
        for unknown words, <PAD> up to 24), so `shrinkwrap run --vocab
        text.vocab.txt --text "..."` should give the same ids.
  lstm  sequence [1,7,5] -> LSTM(32, return_sequences) -> LSTM(32) -> Dense(3)
        With a fixed batch size each Keras LSTM becomes one fused
        UNIDIRECTIONAL_SEQUENCE_LSTM (time_major false, TANH, cell_clip 10.0
        although Keras does not clip, zero-initialized variable state
        tensors); Keras' return_sequences=False shows as a STRIDED_SLICE of
        the last step. int8: the first LSTM keeps FLOAT32 input_to_* weights
        (< 1024 elements) and reads INT8 recurrent_to_* weights through
        DEQUANTIZE ops; the second is a hybrid LSTM with eight per-tensor INT8
        weights (asymmetric_quantize_inputs). This model differs from the
        others in how it is converted (see convert_keras): from_concrete_
        functions of the model's call instead of from_keras_model (whose Keras
        SavedModel export takes ~15 s per LSTM conversion), and fp16 / int8
        with the legacy quantizer (experimental_new_dynamic_range_quantizer =
        False), because TF 2.12's default MLIR quantizer runs out of memory on
        float16 (tensorflow/tensorflow#61370) and writes an LSTM that TFLite
        itself refuses to run for int8.
  The layers are wider than the smallest that would do: the dynamic-range
  quantizer leaves every weight with fewer than 1024 elements in float (a C++
  constant TF 2.12's Python API cannot change), and these widths make most
  weights of every model INT8 (the last Dense layers stay float).

Op models
---------
One small tf.function per builtin or per builtin option (seeded constants,
fixed-shape TensorSpecs, odd sizes and broadcasting), converted with
from_concrete_functions: op_<case>.float32.tflite; op_cases() lists them.
Special cases:
  op_dequantize.fp16.tflite  float16 conversion of fully connected + relu +
                             mul by a constant: FLOAT16 constants and DEQUANTIZE.
  op_softmax_beta            TF 2.12 always writes SOFTMAX with beta 1 (a
                             tf.nn.softmax(x * 0.5) stays MUL + SOFTMAX), so
                             this is the converter's file for tf.nn.softmax(x)
                             with SoftmaxOptions.beta overwritten in place (4
                             bytes) to 0.5; its reference outputs are TFLite's
                             for the patched file.
  op_squeeze, op_expand_dims a fully static SQUEEZE / EXPAND_DIMS becomes
                             RESHAPE, so these inputs have dynamic dimensions
                             (shape_signature -1); the interpreter is resized to
                             the .npy input's shape before it runs.
  op_shape_reshape           a free batch (shape_signature -1) keeps SHAPE ->
                             STRIDED_SLICE -> PACK -> RESHAPE at run time.
  op_compare_select,         comparisons pick between float values (SELECT /
  op_logical_not             SELECT_V2); the converter folds a LOGICAL_NOT of a
                             comparison away, so op_logical_not takes two BOOL
                             inputs and has a BOOL output.
  op_batch_matmul*           the converter unfolds a matmul of two activations
                             into per-batch FULLY_CONNECTED ops unless
                             _experimental_disable_batchmatmul_unfold is set;
                             these cases set it.

Files
-----
With NAME the model or op case and VARIANT float32 / fp16 / int8:
  NAME.input.npy or NAME.input_K.npy   seeded inputs, shared by the variants,
                                       in the interpreter's input order
  NAME.VARIANT.tflite
  NAME.VARIANT.output_K.npy            tf.lite.Interpreter's outputs
                                       (num_threads=1, built-in kernels
                                       without the default XNNPACK delegate),
                                       in the interpreter's output order
  manifest.json   a list of entries, sorted by file, keys sorted:
    {"file", "model", "variant",
     "inputs": [{"name", "file", "dtype", "shape"}],     interpreter order
     "outputs": [{"name", "file", "dtype", "shape"}],    interpreter order
     "ops": sorted builtin op names in the file (read from the flatbuffer,
            every subgraph),
     "float_reference": (int8 only) NAME.float32.output_K.npy, the float
                        model's outputs on the same inputs,
     "kernel_spread": per output, max |difference| between TFLite's kernel
                      sets (built-in, built-in reference when it has the op
                      version, XNNPACK): how much TFLite disagrees with itself}
  Names are TFLite tensor names (serving_default_x:0, PartitionedCall:1, ...);
  a multi-output graph's interpreter order need not follow the :K suffixes.

Then it prints a coverage table (builtin -> files) for REQUIRED_OPS and exits
1, writing no manifest.json, if a builtin is in no file and not listed in
NOT_PRODUCIBLE with a reason. manifest.json is written last (it is make's
stamp).

Deterministic: weights, constants and inputs come from numpy RandomState seeds
(never a TF initializer), and two runs write identical bytes, except that the
legacy quantizer (lstm.fp16 / lstm.int8) may swap the names of two of its
"arith.constantN_dequantize" tensors between runs.
"""
import json
import os
import re
import struct
import sys
import time
import zlib

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
os.environ["OMP_NUM_THREADS"] = "1"

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.lite.python import schema_py_generated as schema_fb  # noqa: E402

tf.get_logger().setLevel("ERROR")
try:
    import absl.logging
    absl.logging.set_verbosity(absl.logging.ERROR)
except ImportError:  # pragma: no cover
    pass

SEED = 20240917

# Every builtin the fixtures must contain somewhere.
REQUIRED_OPS = [
    "CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV", "FULLY_CONNECTED",
    "ADD", "SUB", "MUL", "DIV", "AVERAGE_POOL_2D", "MAX_POOL_2D",
    "MEAN", "SUM", "REDUCE_MAX", "RESHAPE", "SQUEEZE", "EXPAND_DIMS",
    "TRANSPOSE", "CONCATENATION", "SPLIT", "SPLIT_V", "SLICE", "STRIDED_SLICE",
    "PAD", "PADV2", "GATHER", "SOFTMAX", "LOGISTIC", "TANH", "RELU", "RELU6",
    "RELU_N1_TO_1", "LEAKY_RELU", "PRELU", "HARD_SWISH", "RESIZE_BILINEAR",
    "RESIZE_NEAREST_NEIGHBOR", "SQUARED_DIFFERENCE", "RSQRT", "SQRT", "EXP",
    "LOG", "MINIMUM", "MAXIMUM", "BATCH_MATMUL", "DEQUANTIZE",
    "UNIDIRECTIONAL_SEQUENCE_LSTM", "MIRROR_PAD", "PACK", "UNPACK", "SHAPE", "SQUARE",
    "EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL", "SELECT", "SELECT_V2",
    "LOGICAL_AND", "LOGICAL_OR", "LOGICAL_NOT",
]
# builtin -> why TF 2.12's converter cannot write it (none so far).
NOT_PRODUCIBLE = {}

BUILTIN_NAMES = {v: k for k, v in vars(schema_fb.BuiltinOperator).items() if not k.startswith("_")}

L = tf.keras.layers
S = tf.TensorSpec


def case_rng(name, salt=0):
    return np.random.RandomState((SEED + zlib.crc32(name.encode()) + salt) % (2 ** 32))


# --------------------------------------------------------------------------
# flatbuffer inspection

def model_ops(buf):
    """Sorted builtin op names of every operator in every subgraph."""
    m = schema_fb.Model.GetRootAsModel(buf, 0)
    codes = []
    for i in range(m.OperatorCodesLength()):
        oc = m.OperatorCodes(i)
        code = max(oc.DeprecatedBuiltinCode(), oc.BuiltinCode())
        name = BUILTIN_NAMES.get(code, f"BUILTIN_{code}")
        if name == "CUSTOM":
            name = "CUSTOM:" + oc.CustomCode().decode()
        codes.append(name)
    ops = set()
    for s in range(m.SubgraphsLength()):
        sg = m.Subgraphs(s)
        for j in range(sg.OperatorsLength()):
            ops.add(codes[sg.Operators(j).OpcodeIndex()])
    return sorted(ops)


def patch_softmax_beta(buf, beta):
    """Overwrite SoftmaxOptions.beta of every SOFTMAX in place (the converter
    writes beta = 1.0 explicitly, so the field exists)."""
    buf = bytearray(buf)
    m = schema_fb.Model.GetRootAsModel(buf, 0)
    patched = 0
    for s in range(m.SubgraphsLength()):
        sg = m.Subgraphs(s)
        for j in range(sg.OperatorsLength()):
            op = sg.Operators(j)
            oc = m.OperatorCodes(op.OpcodeIndex())
            if max(oc.DeprecatedBuiltinCode(), oc.BuiltinCode()) != schema_fb.BuiltinOperator.SOFTMAX:
                continue
            table = op.BuiltinOptions()
            opts = schema_fb.SoftmaxOptions()
            opts.Init(table.Bytes, table.Pos)
            field = opts._tab.Offset(4)
            if not field:
                raise RuntimeError("SoftmaxOptions.beta is not stored; cannot patch in place")
            struct.pack_into("<f", buf, opts._tab.Pos + field, beta)
            assert abs(schema_fb.SoftmaxOptions.Beta(opts) - beta) < 1e-7
            patched += 1
    if not patched:
        raise RuntimeError("no SOFTMAX to patch")
    return bytes(buf)


# --------------------------------------------------------------------------
# interpreter

RESOLVERS = {
    "builtin": tf.lite.experimental.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
    "reference": tf.lite.experimental.OpResolverType.BUILTIN_REF,
    "xnnpack": tf.lite.experimental.OpResolverType.AUTO,
}


def interpreter(buf, resolver="builtin", input_shapes=None):
    it = tf.lite.Interpreter(model_content=buf, num_threads=1,
                             experimental_op_resolver_type=RESOLVERS[resolver])
    if input_shapes:
        for d, shape in zip(it.get_input_details(), input_shapes):
            if list(d["shape"]) != list(shape):
                it.resize_tensor_input(d["index"], list(shape), strict=True)
    it.allocate_tensors()
    return it


def run(buf, inputs, resolver="builtin"):
    it = interpreter(buf, resolver, [x.shape for x in inputs])
    details = it.get_input_details()
    assert len(details) == len(inputs)
    for d, x in zip(details, inputs):
        assert d["dtype"] == x.dtype, (d["name"], d["dtype"], x.dtype)
        it.set_tensor(d["index"], x)
    it.invoke()
    return [np.array(it.get_tensor(d["index"])) for d in it.get_output_details()]


# --------------------------------------------------------------------------
# seeded Keras weights

def fan_in(kind, shape):
    if kind == "depthwise_kernel":
        return shape[0] * shape[1]
    if len(shape) == 4 and kind == "kernel_t":  # Conv2DTranspose (kh, kw, out, in)
        return shape[0] * shape[1] * shape[3]
    return int(np.prod(shape[:-1]))


def random_weight(kind, shape, rng):
    if kind in ("kernel", "depthwise_kernel", "kernel_t"):
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in(kind, shape))).astype(np.float32)
    if kind == "recurrent_kernel":
        return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)
    if kind == "embeddings":
        return rng.standard_normal(shape).astype(np.float32)
    if kind == "bias":
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)
    if kind == "gamma":
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    if kind in ("beta", "moving_mean"):
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)
    if kind == "moving_variance":
        return rng.uniform(0.3, 2.0, shape).astype(np.float32)
    raise ValueError(f"no rule for weight kind {kind!r}")


# Kernel multipliers for the last layers, so that the class scores are peaked
# rather than nearly uniform (a flat softmax hides errors in front of it).
LOGIT_SCALE = {"logits": 8.0, "fc3": 3.0, "probs": 4.0}


def fill_weights(model, rng):
    """Give every weight of `model` a seeded value (never a TF initializer's)."""
    for layer in model.layers:
        if not layer.weights:
            continue
        values = []
        for w in layer.weights:
            kind = w.name.split("/")[-1].split(":")[0]
            if kind == "kernel" and isinstance(layer, L.Conv2DTranspose):
                kind = "kernel_t"
            value = random_weight(kind, tuple(w.shape), rng)
            if kind == "kernel":
                value *= np.float32(LOGIT_SCALE.get(layer.name, 1.0))
            values.append(value)
        layer.set_weights(values)


# --------------------------------------------------------------------------
# Keras models

def build_cnn():
    inp = L.Input((32, 32, 3), batch_size=1, name="image")
    x = L.Conv2D(128, 3, strides=2, padding="same", activation="relu6", name="conv1")(inp)
    x = L.DepthwiseConv2D(3, padding="same", name="dwconv")(x)
    x = L.BatchNormalization(name="bn")(x)
    x = L.ReLU(name="relu")(x)
    x = L.Conv2D(16, 1, name="conv2")(x)
    x = L.MaxPool2D(name="maxpool")(x)
    x = L.AveragePooling2D(name="avgpool")(x)
    x = L.Conv2DTranspose(8, 3, strides=2, padding="same", name="deconv")(x)
    x = L.GlobalAveragePooling2D(name="gap")(x)
    x = L.Dense(10, name="logits")(x)
    out = L.Softmax(name="probs")(x)
    return tf.keras.Model(inp, out, name="cnn")


def build_mlp():
    inp = L.Input((20,), batch_size=1, name="features")
    x = L.Dense(64, activation="relu", name="fc1")(inp)
    x = L.Dense(32, activation="tanh", name="fc2")(x)
    x = L.Dense(5, name="fc3")(x)
    out = L.Softmax(name="probs")(x)
    return tf.keras.Model(inp, out, name="mlp")


TEXT_LEN = 24
TEXT_WORDS = (
    "the a and is was it this that movie film story acting plot great good bad "
    "terrible boring fun loved hated not very really best worst of to in funny "
    "characters director music scenes ending beautiful awful i you we they "
    "enjoyed waste time watch again performance script slow brilliant dull "
    "masterpiece mess"
).split()
TEXT_VOCAB = 100  # embedding rows; the vocabulary file lists the first len(...) + 3
TEXT_SENTENCES = [
    "This movie was really great, I loved the acting and the music!",
    "A boring, slow film; the plot is a mess and the ending was awful.",
    "Not the worst movie of the year, but I wouldn't watch it again.",
    "Brilliant script, funny characters: a masterpiece.",
]


def text_vocab():
    vocab = {"<PAD>": 0, "<START>": 1, "<UNKNOWN>": 2}
    for w in TEXT_WORDS:
        vocab.setdefault(w, len(vocab))
    assert len(vocab) <= TEXT_VOCAB
    return vocab


def text_tokens(sentence, vocab, length=TEXT_LEN):
    """TFLite Model Maker's AverageWordVecSpec preprocessing."""
    words = [w for w in re.split(r"[^\w']+", sentence.strip().lower()) if w]
    ids = [vocab["<START>"]] + [vocab.get(w, vocab["<UNKNOWN>"]) for w in words]
    ids = ids[:length] + [vocab["<PAD>"]] * max(0, length - len(ids))
    return np.array([ids], dtype=np.int32)


def build_text():
    inp = L.Input((TEXT_LEN,), batch_size=1, dtype="int32", name="ids")
    x = L.Embedding(TEXT_VOCAB, 16, name="embedding")(inp)
    x = L.GlobalAveragePooling1D(name="average")(x)
    x = L.Dense(16, activation="relu", name="fc")(x)
    out = L.Dense(2, activation="softmax", name="probs")(x)
    return tf.keras.Model(inp, out, name="text")


def build_lstm():
    inp = L.Input((7, 5), batch_size=1, name="sequence")
    x = L.LSTM(32, return_sequences=True, name="lstm1")(inp)
    x = L.LSTM(32, name="lstm2")(x)
    out = L.Dense(3, name="fc")(x)
    return tf.keras.Model(inp, out, name="lstm")


def keras_inputs(name, rng):
    if name == "cnn":
        return [rng.uniform(-1.0, 1.0, (1, 32, 32, 3)).astype(np.float32)]
    if name == "mlp":
        return [rng.standard_normal((1, 20)).astype(np.float32)]
    if name == "text":
        return [text_tokens(TEXT_SENTENCES[0], text_vocab())]
    if name == "lstm":
        return [rng.standard_normal((1, 7, 5)).astype(np.float32)]
    raise KeyError(name)


KERAS_MODELS = [("cnn", build_cnn), ("mlp", build_mlp), ("text", build_text), ("lstm", build_lstm)]


def convert_keras(model, variant):
    if any(isinstance(layer, L.LSTM) for layer in model.layers):
        # from_keras_model first exports a Keras SavedModel, which re-traces
        # every layer call with gradient functions for the LSTM's two backend
        # defuns: ~15 s per conversion here, and memory grew past 7 GB over
        # repeated conversions. The model's own call as one tf.function, with
        # a plain tf.Module to carry the variables, converts in ~2 s and still
        # keeps the "api_implements: lstm_*" defun the converter fuses into
        # UNIDIRECTIONAL_SEQUENCE_LSTM.
        holder = tf.Module()
        holder.variables_ = list(model.variables)
        spec = [S(inp.shape, inp.dtype, name=inp.name.split(":")[0]) for inp in model.inputs]
        holder.f = tf.function(lambda x: model(x, training=False), input_signature=spec)
        conv = tf.lite.TFLiteConverter.from_concrete_functions([holder.f.get_concrete_function()], holder)
    else:
        conv = tf.lite.TFLiteConverter.from_keras_model(model)
    if variant in ("fp16", "int8"):
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        if variant == "fp16":
            conv.target_spec.supported_types = [tf.float16]
        if any(isinstance(layer, L.LSTM) for layer in model.layers):
            # TF 2.12's default (MLIR) quantizer fails both ways on a fused
            # LSTM: float16 never finishes (memory grows until the process
            # is killed, tensorflow/tensorflow#61370), and dynamic range
            # writes INT8 recurrent_to_* weights next to FLOAT32 input_to_*
            # weights (those have < 1024 elements), which TFLite's own
            # UNIDIRECTIONAL_SEQUENCE_LSTM kernel rejects at prepare. The
            # legacy quantizer does both in about a second.
            conv.experimental_new_dynamic_range_quantizer = False
    return conv.convert()


# --------------------------------------------------------------------------
# op cases: name -> (function, [TensorSpec...], input kinds, converter options)

class Case:
    def __init__(self, name, fn, specs, kinds=None, shapes=None, variant="float32",
                 unfold_batchmatmul=True, softmax_beta=None):
        self.name, self.fn, self.specs = name, fn, specs
        self.kinds = kinds or ["normal"] * len(specs)     # per input, in spec order
        self.shapes = shapes                              # concrete shapes for dynamic specs
        self.variant = variant
        self.unfold_batchmatmul = unfold_batchmatmul
        self.softmax_beta = softmax_beta


def const(rng, shape, scale=1.0, low=None):
    if low is not None:
        return tf.constant(rng.uniform(low, scale, shape).astype(np.float32))
    return tf.constant((rng.standard_normal(shape) * scale).astype(np.float32))


def op_cases():
    cases = []

    def add(name, specs, kinds=None, **kw):
        def deco(make):
            rng = case_rng(name, 1)
            cases.append(Case(name, make(rng), specs, kinds, **kw))
            return make
        return deco

    # --- convolutions
    @add("conv2d_valid_relu", [S([1, 9, 11, 3], name="x")])
    def _(rng):
        w, b = const(rng, (3, 3, 3, 4), 0.4), const(rng, (4,), 0.3)
        return lambda x: tf.nn.relu(tf.nn.conv2d(x, w, 1, "VALID") + b)

    @add("conv2d_same_s2", [S([1, 9, 11, 3], name="x")])
    def _(rng):
        w, b = const(rng, (3, 3, 3, 5), 0.4), const(rng, (5,), 0.3)
        return lambda x: tf.nn.conv2d(x, w, 2, "SAME") + b

    @add("conv2d_dilated", [S([1, 10, 9, 2], name="x")])
    def _(rng):
        w, b = const(rng, (3, 2, 2, 5), 0.4), const(rng, (5,), 0.3)
        return lambda x: tf.nn.relu6(tf.nn.conv2d(x, w, 1, "SAME", dilations=2) + b)

    @add("conv2d_valid_s2_dilated", [S([1, 12, 11, 3], name="x")])
    def _(rng):
        w = const(rng, (2, 3, 3, 4), 0.4)
        return lambda x: tf.nn.conv2d(x, w, [1, 2, 1, 1], "VALID", dilations=[1, 2])

    @add("depthwise_mult2", [S([1, 8, 7, 3], name="x")])
    def _(rng):
        w, b = const(rng, (3, 3, 3, 2), 0.5), const(rng, (6,), 0.3)
        return lambda x: tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME") + b

    @add("depthwise_s2_valid_relu", [S([1, 9, 8, 4], name="x")])
    def _(rng):
        w, b = const(rng, (3, 3, 4, 1), 0.5), const(rng, (4,), 0.3)
        return lambda x: tf.nn.relu(tf.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "VALID") + b)

    @add("transpose_conv_same", [S([1, 5, 4, 3], name="x")])
    def _(rng):
        w, b = const(rng, (3, 3, 6, 3), 0.4), const(rng, (6,), 0.3)
        return lambda x: tf.nn.conv2d_transpose(x, w, [1, 10, 8, 6], 2, "SAME") + b

    @add("transpose_conv_valid", [S([1, 4, 5, 2], name="x")])
    def _(rng):
        w = const(rng, (3, 2, 3, 2), 0.4)
        return lambda x: tf.nn.conv2d_transpose(x, w, [1, 9, 10, 3], 2, "VALID")

    # --- fully connected
    @add("fully_connected_relu", [S([1, 12], name="x")])
    def _(rng):
        w, b = const(rng, (12, 7), 0.4), const(rng, (7,), 0.3)
        return lambda x: tf.nn.relu(tf.matmul(x, w) + b)

    @add("fully_connected_batch", [S([3, 12], name="x")])
    def _(rng):
        w, b = const(rng, (12, 5), 0.4), const(rng, (5,), 0.3)
        return lambda x: tf.matmul(x, w) + b

    @add("fully_connected_rank3", [S([2, 5, 12], name="x")])
    def _(rng):
        w, b = const(rng, (12, 7), 0.4), const(rng, (7,), 0.3)
        return lambda x: tf.tensordot(x, w, 1) + b

    # --- elementwise binary with broadcasting and fused activations
    binary = [S([2, 3, 4, 5], name="a"), S([3, 1, 5], name="b")]

    @add("add_relu", binary)
    def _(rng):
        c = const(rng, (5,))
        return lambda a, b: (tf.nn.relu(a + b), a + c)

    @add("sub", binary)
    def _(rng):
        return lambda a, b: a - b

    @add("sub_relu6_scalar", [S([2, 7], name="a")])
    def _(rng):
        return lambda a: tf.nn.relu6(3.0 - a * 2.0)

    @add("mul_relu6", binary)
    def _(rng):
        return lambda a, b: tf.nn.relu6(a * b * 2.5)

    @add("div", [S([2, 3, 4, 5], name="a"), S([4, 1], name="b")], ["normal", "positive"])
    def _(rng):
        return lambda a, b: (a / b, tf.nn.relu(b / a))

    @add("squared_difference", [S([2, 3, 4], name="a"), S([3, 1], name="b")])
    def _(rng):
        return lambda a, b: tf.math.squared_difference(a, b)

    @add("minimum_maximum", [S([2, 3, 4], name="a"), S([4], name="b")])
    def _(rng):
        return lambda a, b: (tf.minimum(a, b), tf.maximum(a, b))

    # --- pooling (odd sizes; TF's SAME average pool divides by the valid count)
    pool_in = [S([1, 7, 9, 3], name="x")]
    add("avg_pool_same", pool_in)(lambda rng: lambda x: tf.nn.avg_pool2d(x, 3, 2, "SAME"))
    add("avg_pool_valid", pool_in)(lambda rng: lambda x: tf.nn.avg_pool2d(x, [2, 3], [2, 1], "VALID"))
    add("max_pool_same", pool_in)(lambda rng: lambda x: tf.nn.max_pool2d(x, 3, 2, "SAME"))
    add("max_pool_valid", pool_in)(lambda rng: lambda x: tf.nn.max_pool2d(x, [3, 2], [1, 2], "VALID"))

    # --- reductions
    red_in = [S([2, 3, 4, 5], name="x")]
    add("mean", red_in)(lambda rng: lambda x: (tf.reduce_mean(x, [1, 2], keepdims=True),
                                               tf.reduce_mean(x, [-1], keepdims=False)))
    add("sum", red_in)(lambda rng: lambda x: (tf.reduce_sum(x, [0, 3], keepdims=False),
                                              tf.reduce_sum(x, [2], keepdims=True)))
    add("reduce_max", red_in)(lambda rng: lambda x: (tf.reduce_max(x, [-1], keepdims=True),
                                                     tf.reduce_max(x, [1, 3], keepdims=False)))

    # --- shape ops
    add("reshape", [S([2, 3, 4], name="x")])(lambda rng: lambda x: tf.reshape(x, [4, -1]))
    # a fully static SQUEEZE / EXPAND_DIMS becomes RESHAPE: dynamic dimensions keep them
    add("squeeze", [S([None, None, 1, 4], name="x")], shapes=[[2, 3, 1, 4]])(
        lambda rng: lambda x: tf.squeeze(x, 2))
    add("expand_dims", [S([None, 4], name="x")], shapes=[[3, 4]])(
        lambda rng: lambda x: tf.expand_dims(x, 1))
    add("transpose", [S([2, 3, 4, 5], name="x")])(lambda rng: lambda x: tf.transpose(x, [0, 3, 1, 2]))
    add("concat_last", [S([2, 3, 4], name="a"), S([2, 3, 2], name="b")])(
        lambda rng: lambda a, b: tf.concat([a, b, a], -1))
    add("concat_axis1", [S([2, 3, 4], name="a"), S([2, 1, 4], name="b")])(
        lambda rng: lambda a, b: tf.concat([a, b], 1))
    add("split", [S([2, 6, 3], name="x")])(lambda rng: lambda x: tuple(tf.split(x, 3, axis=1)))
    add("split_v", [S([2, 6, 3], name="x")])(lambda rng: lambda x: tuple(tf.split(x, [1, -1, 2], axis=1)))
    add("slice", [S([3, 5, 4], name="x")])(lambda rng: lambda x: tf.slice(x, [1, 0, 1], [2, -1, 2]))
    add("strided_slice", [S([4, 6, 5], name="x")])(
        lambda rng: lambda x: (x[1:, ::-1, 2], x[:, 1:5:2, :], x[..., 3], x[-3:-1, 4:0:-2, ::2]))
    add("pad", [S([2, 3, 4], name="x")])(
        lambda rng: lambda x: tf.pad(x, [[0, 1], [2, 0], [1, 1]]))
    add("padv2", [S([1, 3, 4, 2], name="x")])(
        lambda rng: lambda x: tf.pad(x, [[0, 0], [1, 2], [0, 1], [0, 0]], constant_values=1.5))

    @add("gather_axis0", [S([5, 4, 3], name="params")])
    def _(rng):
        idx = tf.constant([[4, 0], [2, 2], [1, 3]], dtype=tf.int32)
        return lambda p: tf.gather(p, idx, axis=0)

    add("gather_axis1", [S([3, 5, 2], name="params"), S([4], dtype=tf.int32, name="indices")],
        ["normal", "int:5"])(lambda rng: lambda p, i: tf.gather(p, i, axis=1))

    # --- activations
    act_in = [S([2, 3, 4, 5], name="x")]
    add("softmax", [S([2, 3, 7], name="x")])(lambda rng: lambda x: tf.nn.softmax(x))
    add("softmax_beta", [S([2, 7], name="x")], softmax_beta=0.5)(lambda rng: lambda x: tf.nn.softmax(x))
    add("logistic", act_in)(lambda rng: lambda x: tf.sigmoid(x))
    add("tanh", act_in)(lambda rng: lambda x: tf.tanh(x))
    add("relu", act_in)(lambda rng: lambda x: tf.nn.relu(x))
    add("relu6", act_in)(lambda rng: lambda x: tf.nn.relu6(x))
    add("relu_n1_to_1", act_in)(lambda rng: lambda x: tf.maximum(tf.minimum(x, 1.0), -1.0))
    add("leaky_relu", act_in)(lambda rng: lambda x: tf.nn.leaky_relu(x, alpha=0.15))

    @add("prelu", [S([1, 4, 5, 3], name="x")])
    def _(rng):
        alpha = const(rng, (1, 1, 3), 0.5, low=0.05)
        # Keras PReLU's formula; the converter matches it to PRELU
        return lambda x: tf.nn.relu(x) + (-alpha) * tf.nn.relu(-x)

    add("hard_swish", act_in)(lambda rng: lambda x: x * tf.nn.relu6(x + 3.0) * (1.0 / 6.0))

    # --- resize (upsampling to odd sizes, and a downsample)
    rs_in = [S([1, 4, 5, 2], name="x")]
    v1 = tf.compat.v1.image
    add("resize_bilinear", rs_in)(lambda rng: lambda x: (
        v1.resize_bilinear(x, [7, 9], align_corners=False, half_pixel_centers=False),
        v1.resize_bilinear(x, [3, 3], align_corners=False, half_pixel_centers=False)))
    add("resize_bilinear_align_corners", rs_in)(lambda rng: lambda x: (
        v1.resize_bilinear(x, [7, 9], align_corners=True),
        v1.resize_bilinear(x, [3, 3], align_corners=True)))
    add("resize_bilinear_half_pixel", rs_in)(lambda rng: lambda x: (
        tf.image.resize(x, [7, 9], method="bilinear"),
        tf.image.resize(x, [3, 3], method="bilinear")))
    add("resize_nearest", rs_in)(lambda rng: lambda x: (
        v1.resize_nearest_neighbor(x, [7, 9], align_corners=False, half_pixel_centers=False),
        v1.resize_nearest_neighbor(x, [3, 3], align_corners=False, half_pixel_centers=False)))
    add("resize_nearest_align_corners", rs_in)(lambda rng: lambda x: (
        v1.resize_nearest_neighbor(x, [7, 9], align_corners=True),
        v1.resize_nearest_neighbor(x, [3, 3], align_corners=True)))
    add("resize_nearest_half_pixel", rs_in)(lambda rng: lambda x: (
        tf.image.resize(x, [7, 9], method="nearest"),
        tf.image.resize(x, [3, 3], method="nearest")))

    # --- unary math (positive inputs where needed)
    pos = [S([2, 3, 5], name="x")]
    add("rsqrt", pos, ["positive"])(lambda rng: lambda x: tf.math.rsqrt(x))
    add("sqrt", pos, ["positive"])(lambda rng: lambda x: tf.sqrt(x))
    add("log", pos, ["positive"])(lambda rng: lambda x: tf.math.log(x))
    add("exp", pos)(lambda rng: lambda x: tf.exp(x))

    # --- batch matmul (kept as BATCH_MATMUL: unfolding disabled)
    add("batch_matmul", [S([2, 3, 4], name="a"), S([1, 4, 5], name="b")], unfold_batchmatmul=False)(
        lambda rng: lambda a, b: tf.linalg.matmul(a, b))
    add("batch_matmul_adj_x", [S([2, 4, 3], name="a"), S([2, 4, 5], name="b")], unfold_batchmatmul=False)(
        lambda rng: lambda a, b: tf.linalg.matmul(a, b, adjoint_a=True))
    add("batch_matmul_adj_y", [S([2, 2, 3, 4], name="a"), S([2, 5, 4], name="b")], unfold_batchmatmul=False)(
        lambda rng: lambda a, b: tf.linalg.matmul(a, b, adjoint_b=True))

    # --- comparisons and selection (float outputs: each comparison picks between values)
    cmp_in = [S([2, 3, 4], name="a"), S([3, 1], name="b")]
    add("compare_select", cmp_in)(lambda rng: lambda a, b: (
        tf.where(a < b, a, b), tf.where(a >= b, a * 2.0, b), tf.where(tf.logical_and(a > b, a <= 1.0), a, 0.0),
        tf.where(tf.logical_or(tf.equal(tf.floor(a), 0.0), tf.not_equal(tf.floor(b), 1.0)), a, -a),
        tf.where(tf.logical_not(tf.logical_and(a > 0.0, b > 0.0)), a, b)))
    add("logical_not", [S([3, 4], tf.bool, name="c"), S([3, 4], tf.bool, name="d")], ["int:2", "int:2"])(
        lambda rng: lambda c, d: tf.logical_not(tf.logical_or(c, d)))
    add("select_v1_rows", [S([4, 3], name="x"), S([4, 3], name="y")])(lambda rng: lambda x, y: (
        tf.raw_ops.Select(condition=x[:, 0] > 0.0, x=x, y=y)))
    add("square", [S([2, 3, 5], name="x")])(lambda rng: lambda x: tf.square(x))

    # --- stacking, run-time shapes, mirror padding
    add("pack_unpack", [S([3, 4, 2], name="x")])(lambda rng: lambda x: (
        tf.stack([x, x * 2.0], axis=-2), tf.unstack(x, axis=2)[0] - tf.unstack(x, axis=2)[1]))
    add("shape_reshape", [S([None, 4, 3], name="x")], shapes=[[2, 4, 3]])(
        lambda rng: lambda x: tf.reshape(x, tf.stack([tf.shape(x)[0], 12])) * 3.0)
    mirror_in = [S([1, 5, 6, 2], name="x")]
    for mode in ("REFLECT", "SYMMETRIC"):
        add("mirror_pad_" + mode.lower(), mirror_in)(
            lambda rng, mode=mode: lambda x: tf.pad(x, [[0, 0], [2, 1], [1, 3], [0, 0]], mode=mode))

    # --- float16 constants + DEQUANTIZE
    @add("dequantize", [S([2, 12], name="x")], variant="fp16")
    def _(rng):
        w, b, c = const(rng, (12, 7), 0.4), const(rng, (7,), 0.3), const(rng, (2, 7))
        return lambda x: tf.nn.relu(tf.matmul(x, w) + b) * c

    return cases


def convert_case(case):
    class Holder(tf.Module):
        pass
    holder = Holder()
    holder.f = tf.function(case.fn, input_signature=case.specs)
    conv = tf.lite.TFLiteConverter.from_concrete_functions([holder.f.get_concrete_function()], holder)
    if not case.unfold_batchmatmul:
        conv._experimental_disable_batchmatmul_unfold = True
    if case.variant == "fp16":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.target_spec.supported_types = [tf.float16]
    buf = conv.convert()
    if case.softmax_beta is not None:
        buf = patch_softmax_beta(buf, case.softmax_beta)
    return buf


def case_inputs(case, buf):
    """Seeded inputs in the interpreter's input order."""
    rng = case_rng(case.name, 2)
    by_name = {}
    for i, spec in enumerate(case.specs):
        shape = case.shapes[i] if case.shapes else spec.shape.as_list()
        kind = case.kinds[i]
        if kind == "normal":
            x = rng.standard_normal(shape).astype(np.float32) * 2.0
        elif kind == "positive":
            x = rng.uniform(0.1, 3.0, shape).astype(np.float32)
        elif kind.startswith("int:"):
            x = rng.randint(0, int(kind[4:]), shape).astype(spec.dtype.as_numpy_dtype)
        else:
            raise ValueError(kind)
        by_name[spec.name] = x
    it = tf.lite.Interpreter(model_content=buf, experimental_op_resolver_type=RESOLVERS["builtin"])
    ordered = []
    for d in it.get_input_details():
        name = d["name"]
        key = re.sub(r"^serving_default_|:\d+$", "", name)
        ordered.append(by_name[key])
    return ordered


# --------------------------------------------------------------------------
# writing

def save_npy(path, x):
    np.save(path, np.ascontiguousarray(x), allow_pickle=False)


def input_files(model, n):
    return [f"{model}.input.npy"] if n == 1 else [f"{model}.input_{k}.npy" for k in range(n)]


def write_entry(out_dir, model, variant, buf, inputs, manifest, float_outputs=None):
    fname = f"{model}.{variant}.tflite"
    with open(os.path.join(out_dir, fname), "wb") as f:
        f.write(buf)
    in_files = input_files(model, len(inputs))
    for path, x in zip(in_files, inputs):
        save_npy(os.path.join(out_dir, path), x)
    outputs = run(buf, inputs, "builtin")
    spread = [0.0] * len(outputs)
    for resolver in ("reference", "xnnpack"):
        try:
            other = run(buf, inputs, resolver)
        except (ValueError, RuntimeError):
            # BUILTIN_REF registers older op versions only (e.g. no DEQUANTIZE v5 for FLOAT16)
            continue
        for k, (a, b) in enumerate(zip(outputs, other)):
            d = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0
            spread[k] = max(spread[k], d)
    it = interpreter(buf, "builtin", [x.shape for x in inputs])
    in_details, out_details = it.get_input_details(), it.get_output_details()
    entry = {
        "file": fname,
        "model": model,
        "variant": variant,
        "inputs": [{"name": d["name"], "file": p, "dtype": str(x.dtype), "shape": list(x.shape)}
                   for d, p, x in zip(in_details, in_files, inputs)],
        "outputs": [],
        "ops": model_ops(buf),
        "kernel_spread": spread,
    }
    for k, (d, y) in enumerate(zip(out_details, outputs)):
        if not np.all(np.isfinite(y)):
            raise RuntimeError(f"{fname}: output {k} is not finite")
        path = f"{model}.{variant}.output_{k}.npy"
        save_npy(os.path.join(out_dir, path), y)
        entry["outputs"].append({"name": d["name"], "file": path, "dtype": str(y.dtype), "shape": list(y.shape)})
    if float_outputs is not None:
        entry["float_reference"] = [f"{model}.float32.output_{k}.npy" for k in range(len(float_outputs))]
        assert [o.shape for o in float_outputs] == [o.shape for o in outputs]
    manifest.append(entry)
    return outputs


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    if not tf.__version__.startswith("2.12."):
        print(f"warning: TensorFlow {tf.__version__}, not 2.12: the files and ops may differ", file=sys.stderr)
    tf.keras.utils.set_random_seed(SEED)
    tf.config.experimental.enable_op_determinism()
    t_start = time.time()
    manifest = []

    # Keras models
    t0 = time.time()
    for name, build in KERAS_MODELS:
        model = build()
        fill_weights(model, case_rng(name))
        inputs = keras_inputs(name, case_rng(name, 3))
        keras_out = model(inputs[0], training=False).numpy()
        float_out = None
        for variant in ("float32", "fp16", "int8"):
            buf = convert_keras(model, variant)
            out = write_entry(out_dir, name, variant, buf, inputs, manifest,
                              float_outputs=float_out if variant == "int8" else None)
            if variant == "float32":
                float_out = out
                err = float(np.max(np.abs(out[0] - keras_out)))
                if err > 1e-4 * max(1.0, float(np.max(np.abs(keras_out)))):
                    raise RuntimeError(f"{name}: TFLite float32 differs from Keras by {err}")
    vocab = text_vocab()
    with open(os.path.join(out_dir, "text.vocab.txt"), "w") as f:
        f.writelines(f"{w} {i}\n" for w, i in vocab.items())
    with open(os.path.join(out_dir, "text.sentences.txt"), "w") as f:
        f.writelines(s + "\n" for s in TEXT_SENTENCES)
    t_keras = time.time() - t0

    # op models
    t0 = time.time()
    for case in op_cases():
        buf = convert_case(case)
        inputs = case_inputs(case, buf)
        write_entry(out_dir, "op_" + case.name, case.variant, buf, inputs, manifest)
    t_ops = time.time() - t0

    manifest.sort(key=lambda e: e["file"])

    # coverage
    print(f"{len(manifest)} files in {out_dir} (Keras models {t_keras:.1f} s, op models {t_ops:.1f} s, "
          f"total {time.time() - t_start:.1f} s)")
    print("coverage (builtin: files):")
    missing = []
    for op in REQUIRED_OPS:
        files = [e["file"] for e in manifest if op in e["ops"]]
        if files:
            shown = ", ".join(files[:6]) + (f", ... ({len(files)} files)" if len(files) > 6 else "")
            print(f"  {op:29s} {shown}")
        elif op in NOT_PRODUCIBLE:
            print(f"  {op:29s} not producible: {NOT_PRODUCIBLE[op]}")
        else:
            print(f"  {op:29s} MISSING")
            missing.append(op)
    extra = sorted({op for e in manifest for op in e["ops"]} - set(REQUIRED_OPS))
    print("  also present:", ", ".join(extra) if extra else "-")
    if missing:
        print("error: no file contains " + ", ".join(missing) + " (manifest.json not written)", file=sys.stderr)
        sys.exit(1)
    # last, so that the Makefile's stamp exists only after a complete run
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
