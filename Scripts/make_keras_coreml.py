#!/usr/bin/env python3
"""Keras -> Core ML NeuralNetwork fixtures with independent reference data.

usage: python Scripts/make_keras_coreml.py OUT_DIR

Builds small tf.keras models with seeded random weights, converts each with
coremltools to a NeuralNetwork (not ML Program) .mlmodel, writes seeded
inputs and Keras' own outputs as .npy files, quantizes every model with
coremltools' NeuralNetwork quantization utilities, writes a float
"dequantized twin" of every quantized file, and describes it all in
OUT_DIR/manifest.json. Everything is deterministic: weights and inputs come
from numpy RandomState seeds, the conversion-date metadata that coremltools
stamps into each file is removed, and files are serialized with
deterministic protobuf output (two runs on one machine give identical bytes).

Environment: a separate venv, because TensorFlow pins its own numpy range:

    python3 -m venv .venv-tf
    .venv-tf/bin/pip install -r Scripts/requirements-tf.txt
    .venv-tf/bin/python Scripts/make_keras_coreml.py /tmp/keras-fixtures

Versions (pinned exactly in Scripts/requirements-tf.txt) and why:
  tensorflow-cpu 2.12.0  coremltools 9.0 declares TF 2.12.0 as the newest
                         TensorFlow 2 it was tested with (_TF_2_MAX_VERSION in
                         coremltools/_deps), so it converts without the
                         "untested version" warning. It ships Keras 2.12
                         (tf.keras is Keras 2, not Keras 3), which coremltools'
                         TF2 frontend reads as a tf.function graph. It has
                         cp311 wheels. (2.12.1 also converts, with a warning.)
  keras 2.12.0           what tensorflow-cpu 2.12.0 requires.
  numpy 1.23.5           TF 2.12.0 requires numpy >=1.22,<1.24.
  coremltools 9.0        the version the main venv uses.
  scikit-learn 1.5.1     kmeans_lut quantization imports sklearn.cluster.KMeans
                         (coremltools only falls back to the kmeans1d package
                         for float16 tensors of >= 10k weights); 1.5.1 is the
                         newest scikit-learn coremltools 9.0 declares as
                         supported, and it accepts numpy 1.23.
  protobuf 4.25.9        TF 2.12 needs protobuf < 5.
  The rest of the file is the transitive set pip resolved for these pins.

Models (input layout is what coremltools declares: the Keras NHWC image stays
an NHWC multiarray [1,32,32,3] and the converter inserts a transpose layer;
all Keras inputs are declared with batch_size=1):
  cnn            image [1,32,32,3] -> probs [1,10]
  mlp            features [1,20]   -> probs [1,5]
  lstm           sequence [1,8,6]  -> probs [1,3]   tf.keras LSTM as is
                 (coremltools turns TF's while loop into loop/branch layers)
  lstm_unrolled  same weights, LSTM(unroll=True): plain batchedMatmul,
                 splitND, activation... layers, no loop
  lstm_block     same weights through tf.raw_ops.BlockLSTM in a Keras layer,
                 which coremltools maps to one uniDirectionalLSTM layer
  lstm_seq_block the same with return_sequences=True -> probs [1,8,3]
The four LSTM variants share weights and inputs; the script asserts that
their Keras outputs agree (for lstm_seq_block, its last step).

Files per model NAME (i = 0..3):
  NAME.mlmodel, NAME.input<i>.npy (float32, the Core ML input's declared
  shape), NAME.output<i>.npy (float32, Keras' output; coremltools declares
  NeuralNetwork outputs without a shape, the manifest gives the Keras shape),
  NAME.<tag>.mlmodel and NAME.<tag>.dequant.mlmodel for tag in fp16, linear8,
  linear4, linear_lut4, kmeans_lut4, kmeans_lut2, linear_symmetric8.

Quantization uses coremltools.models.neural_network.quantization_utils
.quantize_weights (which, for nbits < 16, first runs coremltools'
_optimize_nn fusions). The dequantized twin is a copy of the quantized spec
in which every quantized WeightParams is replaced by floatValue as
coremltools decodes it: float16Value through
optimization_utils._proto_float_to_np_array, rawValue + quantization through
quantization_utils._dequantize_nn_spec (its _dequantize_wp, _unpack_to_bytes,
_dequantize_linear, _dequantize_lut, with the same per-layer shapes and axes
that quantization used). A decoder written here (numpy.unpackbits, MSB-first)
re-decodes every quantized tensor and must agree with coremltools' result.

Found while writing this (coremltools 9.0):
  * quantize_weights(..., "kmeans_lut") writes EMPTY lookup tables (protobuf
    4.25) or raises TypeError (protobuf >= 5): _get_kmeans_lookup_table_and_weight
    returns a (2^nbits, 1) table. The kmeans variants therefore go through
    quantization_mode="custom_lut" with that same k-means, table flattened;
    the manifest's made_by/workaround fields say so.
  * quantize_weights quantizes every loadConstantND, including the integer
    index/shape constants of the loop-based `lstm` graph; the manifest lists
    the ones whose decoded values changed (integer_constants_changed) and
    gives no vs-Keras tolerance for those files.
  * conversion folds BatchNormalization into a preceding convolution (the
    standalone bn_pool stays a batchnorm layer), writes ReLU6 as four layers
    (ReLU, linear, unary THRESHOLD, linear), and gives uniDirectionalLSTM
    cellClipThreshold 500 although BlockLSTM runs unclipped.

On Linux coremltools cannot run Core ML models; nothing here calls predict.
"""
import contextlib
import hashlib
import io
import json
import logging
import os
import platform
import sys
import warnings

# Before TensorFlow / scikit-learn load: quiet logs, reproducible kernels.
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
os.environ["OMP_NUM_THREADS"] = "1"      # scikit-learn k-means: one thread, one order
os.environ.setdefault("TQDM_DISABLE", "1")  # coremltools' pass progress bars
logging.getLogger("coremltools").setLevel(logging.ERROR)
# k-means on a constant tensor (e.g. an all-zero state) finds fewer clusters than asked
warnings.filterwarnings("ignore", message="Number of distinct clusters")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import coremltools as ct  # noqa: E402
from coremltools.models import model as ct_model_module  # noqa: E402
from coremltools.models.neural_network import quantization_utils as qu  # noqa: E402
from coremltools.models.neural_network.optimization_utils import (  # noqa: E402
    _proto_float_to_np_array,
)
from coremltools.proto import Model_pb2, NeuralNetwork_pb2  # noqa: E402

logging.getLogger("coremltools").setLevel(logging.ERROR)

SEED = 20240611
NUM_CASES = 4
OUTPUT_NAME = "probs"
# (tag, quantize_weights quantization_mode, nbits)
VARIANTS = [
    ("fp16", "linear", 16),
    ("linear8", "linear", 8),
    ("linear4", "linear", 4),
    ("linear_lut4", "linear_lut", 4),
    ("kmeans_lut4", "kmeans_lut", 4),
    ("kmeans_lut2", "kmeans_lut", 2),
    ("linear_symmetric8", "linear_symmetric", 8),
]
# Tolerance hints for a Core ML evaluator on the CPU in float32.
TOL_FLOAT_VS_KERAS = {"atol": 1e-4, "rtol": 1e-3}
TOL_QUANT_VS_TWIN = {"atol": 1e-5, "rtol": 1e-4}
# Rough expectations of quantized output vs Keras' float output (probabilities);
# None: no meaningful bound, compare against the dequantized twin only.
TOL_QUANT_VS_KERAS = {16: {"atol": 5e-3}, 8: {"atol": 5e-2}, 4: None, 2: None}

WEIGHT_PARAMS = "CoreML.Specification.WeightParams"


# --------------------------------------------------------------------------
# seeded weights

def _fan_in(kind, shape):
    if kind == "depthwise_kernel":  # (kh, kw, cin, multiplier)
        return shape[0] * shape[1]
    return int(np.prod(shape[:-1]))


def random_weight(kind, shape, rng):
    """A float32 array for a Keras weight called `kind` (the variable's last name part)."""
    if kind in ("kernel", "depthwise_kernel", "pointwise_kernel"):
        std = np.sqrt(2.0 / _fan_in(kind, shape))
        return (rng.standard_normal(shape) * std).astype(np.float32)
    if kind == "recurrent_kernel":
        return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)
    if kind == "bias":
        return (rng.standard_normal(shape) * 0.1).astype(np.float32)
    if kind == "gamma":
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    if kind in ("beta", "moving_mean"):
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)
    if kind == "moving_variance":
        return rng.uniform(0.4, 1.6, shape).astype(np.float32)
    raise ValueError(f"no rule for weight kind {kind!r}")


def fill_weights(model, rng):
    """Give every weight of `model` a seeded value (never a TF initializer's)."""
    for layer in model.layers:
        if not layer.weights:
            continue
        values = []
        for w in layer.weights:
            kind = w.name.split("/")[-1].split(":")[0]
            values.append(random_weight(kind, tuple(w.shape), rng))
        layer.set_weights(values)


# --------------------------------------------------------------------------
# Keras models

L = tf.keras.layers


def build_cnn(rng):
    inp = L.Input((32, 32, 3), batch_size=1, name="image")
    x = L.Conv2D(8, 3, padding="same", use_bias=False, name="conv1")(inp)
    x = L.BatchNormalization(name="bn1")(x)
    x = L.ReLU(name="relu1")(x)
    x = L.DepthwiseConv2D(3, padding="same", use_bias=False, name="dwconv2")(x)
    x = L.BatchNormalization(name="bn2")(x)
    x = L.ReLU(max_value=6.0, name="relu6_2")(x)
    x = L.SeparableConv2D(16, 3, padding="same", activation="relu", name="sepconv3")(x)
    x = L.MaxPooling2D(2, name="maxpool")(x)                      # 16x16
    # a BatchNormalization with no convolution in front: stays a batchnorm layer
    x = L.BatchNormalization(name="bn_pool")(x)
    x = L.Conv2D(24, 3, strides=2, padding="same", activation="relu", name="conv_s2")(x)  # 8x8
    x = L.AveragePooling2D(2, name="avgpool")(x)                  # 4x4
    x = L.GlobalAveragePooling2D(name="gap")(x)
    x = L.Dense(10, name="fc")(x)
    out = L.Softmax(name="softmax")(x)
    model = tf.keras.Model(inp, out, name="cnn")
    fill_weights(model, rng)
    return model


def build_mlp(rng):
    inp = L.Input((20,), batch_size=1, name="features")
    x = L.Dense(64, activation="relu", name="fc1")(inp)
    x = L.Dense(32, activation="tanh", name="fc2")(x)
    x = L.Dense(5, name="fc3")(x)
    out = L.Softmax(name="softmax")(x)
    model = tf.keras.Model(inp, out, name="mlp")
    fill_weights(model, rng)
    return model


SEQ_T, SEQ_F, LSTM_UNITS, SEQ_CLASSES = 8, 6, 16, 3


def build_lstm(rng, unroll=False, name="lstm"):
    inp = L.Input((SEQ_T, SEQ_F), batch_size=1, name="sequence")
    x = L.LSTM(LSTM_UNITS, return_sequences=False, unroll=unroll, name="lstm")(inp)
    x = L.Dense(SEQ_CLASSES, name="fc")(x)
    out = L.Softmax(name="softmax")(x)
    model = tf.keras.Model(inp, out, name=name)
    if rng is not None:
        fill_weights(model, rng)
    return model


class BlockLSTM(L.Layer):
    """An LSTM layer computed by tf.raw_ops.BlockLSTM (no peepholes, no clip).

    Weights: w [features + units, 4 * units] with gate blocks in BlockLSTM's
    order (input, cell input, forget, output), and b [4 * units]. The gate
    activations are Keras' LSTM defaults (sigmoid, tanh), so the layer equals
    tf.keras.layers.LSTM with the same weights reordered (see build_lstm_block).
    """

    def __init__(self, units, return_sequences=False, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.return_sequences = return_sequences

    def build(self, input_shape):
        feat = int(input_shape[-1])
        self.w = self.add_weight(name="w", shape=(feat + self.units, 4 * self.units),
                                 initializer="zeros")
        self.b = self.add_weight(name="b", shape=(4 * self.units,), initializer="zeros")

    def call(self, x):
        steps, batch = x.shape[1], x.shape[0]
        time_major = tf.transpose(x, [1, 0, 2])
        zeros_state = tf.zeros((batch, self.units), x.dtype)
        zeros_peep = tf.zeros((self.units,), x.dtype)
        outs = tf.raw_ops.BlockLSTM(
            seq_len_max=tf.constant(steps, tf.int64), x=time_major,
            cs_prev=zeros_state, h_prev=zeros_state, w=self.w,
            wci=zeros_peep, wcf=zeros_peep, wco=zeros_peep, b=self.b,
            forget_bias=0.0, cell_clip=-1.0, use_peephole=False)
        h = outs[6]  # [T, B, units]
        if self.return_sequences:
            return tf.transpose(h, [1, 0, 2])
        return h[-1]


def _ifco_to_icfo(m):
    i, f, c, o = np.split(m, 4, axis=-1)
    return np.concatenate([i, c, f, o], axis=-1)


def build_lstm_block(keras_lstm_model, return_sequences, name):
    inp = L.Input((SEQ_T, SEQ_F), batch_size=1, name="sequence")
    x = BlockLSTM(LSTM_UNITS, return_sequences=return_sequences, name="lstm")(inp)
    x = L.Dense(SEQ_CLASSES, name="fc")(x)
    out = L.Softmax(name="softmax")(x)
    model = tf.keras.Model(inp, out, name=name)
    kernel, recurrent, bias = keras_lstm_model.get_layer("lstm").get_weights()
    w = _ifco_to_icfo(np.concatenate([kernel, recurrent], axis=0))
    model.get_layer("lstm").set_weights([w, _ifco_to_icfo(bias)])
    model.get_layer("fc").set_weights(keras_lstm_model.get_layer("fc").get_weights())
    return model


# --------------------------------------------------------------------------
# spec helpers

def iter_layers(layers, depth=0):
    """(depth, layer) for every layer, descending into loop and branch bodies."""
    for layer in layers:
        yield depth, layer
        kind = layer.WhichOneof("layer")
        if kind == "loop":
            yield from iter_layers(layer.loop.conditionNetwork.layers, depth + 1)
            yield from iter_layers(layer.loop.bodyNetwork.layers, depth + 1)
        elif kind == "branch":
            yield from iter_layers(layer.branch.ifBranch.layers, depth + 1)
            yield from iter_layers(layer.branch.elseBranch.layers, depth + 1)


def layer_kind_counts(spec):
    counts = {}
    for _, layer in iter_layers(spec.neuralNetwork.layers):
        kind = layer.WhichOneof("layer")
        counts[kind] = counts.get(kind, 0) + 1
    return dict(sorted(counts.items()))


def _is_repeated(fd):
    # protobuf >= 6 has FieldDescriptor.is_repeated (and 7 drops .label)
    if hasattr(fd, "is_repeated"):
        return fd.is_repeated
    return fd.label == fd.LABEL_REPEATED


def iter_weight_params(msg, path=""):
    """(path, WeightParams) for every WeightParams message anywhere inside msg."""
    for fd, value in msg.ListFields():
        if fd.type != fd.TYPE_MESSAGE:
            continue
        if fd.message_type.GetOptions().map_entry:
            continue
        repeated = _is_repeated(fd)
        items = value if repeated else [value]
        for i, sub in enumerate(items):
            p = f"{path}/{fd.name}[{i}]" if repeated else f"{path}/{fd.name}"
            if sub.DESCRIPTOR.full_name == WEIGHT_PARAMS:
                yield p, sub
            else:
                yield from iter_weight_params(sub, p)


def weight_encoding(wp):
    if wp.HasField("quantization") and wp.quantization.numberOfBits:
        q = wp.quantization
        kind = "linear" if q.WhichOneof("QuantizationType") == "linearQuantization" else "lut"
        return f"{kind}{q.numberOfBits}"
    if len(wp.float16Value):
        return "float16"
    if len(wp.floatValue):
        return "float32"
    if len(wp.rawValue) or len(wp.int8RawValue):
        return "raw"
    return "empty"


def weight_encoding_counts(spec):
    counts = {}
    for _, wp in iter_weight_params(spec):
        enc = weight_encoding(wp)
        if enc != "empty":
            counts[enc] = counts.get(enc, 0) + 1
    return dict(sorted(counts.items()))


def feature_shape(feature):
    kind = feature.type.WhichOneof("Type")
    if kind != "multiArrayType":
        return kind, None
    return kind, [int(d) for d in feature.type.multiArrayType.shape]


def layer_detail(layer):
    """A short description of the parameters that matter for an importer."""
    kind = layer.WhichOneof("layer")
    if kind == "convolution":
        c = layer.convolution
        pad = c.WhichOneof("ConvolutionPaddingType")
        if pad == "same":
            pad = "same/" + NeuralNetwork_pb2.SamePadding.SamePaddingMode.Name(
                c.same.asymmetryMode)
        elif pad == "valid":
            pad = "valid" + str([(b.startEdgeSize, b.endEdgeSize)
                                 for b in c.valid.paddingAmounts.borderAmounts])
        return (f"out={c.outputChannels} kc={c.kernelChannels} groups={c.nGroups} "
                f"k={list(c.kernelSize)} s={list(c.stride)} pad={pad} bias={c.hasBias}")
    if kind == "pooling":
        p = layer.pooling
        ptype = NeuralNetwork_pb2.PoolingLayerParams.PoolingType.Name(p.type)
        pad = p.WhichOneof("PoolingPaddingType")
        return (f"{ptype} k={list(p.kernelSize)} s={list(p.stride)} pad={pad} "
                f"global={p.globalPooling} excludePad={p.avgPoolExcludePadding}")
    if kind == "activation":
        return layer.activation.WhichOneof("NonlinearityType")
    if kind == "unary":
        u = layer.unary
        t = NeuralNetwork_pb2.UnaryFunctionLayerParams.Operation.Name(u.type)
        return f"{t} alpha={u.alpha} epsilon={u.epsilon} shift={u.shift} scale={u.scale}"
    if kind == "batchnorm":
        b = layer.batchnorm
        return f"channels={b.channels} eps={b.epsilon} instanceNorm={b.instanceNormalization}"
    if kind == "batchedMatmul":
        m = layer.batchedMatmul
        return (f"weights={m.weightMatrixFirstDimension}x{m.weightMatrixSecondDimension} "
                f"bias={m.hasBias} transA={m.transposeA} transB={m.transposeB}")
    if kind == "innerProduct":
        m = layer.innerProduct
        return f"{m.inputChannels}->{m.outputChannels} bias={m.hasBias}"
    if kind == "uniDirectionalLSTM":
        u = layer.uniDirectionalLSTM
        acts = [a.WhichOneof("NonlinearityType") for a in u.activations]
        p = u.params
        return (f"in={u.inputVectorSize} out={u.outputVectorSize} acts={acts} "
                f"sequenceOutput={p.sequenceOutput} bias={p.hasBiasVectors} "
                f"forgetBias={p.forgetBias} peephole={p.hasPeepholeVectors} "
                f"coupled={p.coupledInputAndForgetGate} clip={p.cellClipThreshold} "
                f"reverse={u.reverseInput}")
    if kind == "transpose":
        return f"axes={list(layer.transpose.axes)}"
    if kind in ("reduceMean", "reduceMax"):
        r = getattr(layer, kind)
        return f"axes={list(r.axes)} keepDims={r.keepDims} reduceAll={r.reduceAll}"
    if kind == "softmaxND":
        return f"axis={layer.softmaxND.axis}"
    if kind == "loadConstantND":
        return f"shape={list(layer.loadConstantND.shape)}"
    return ""


def describe_spec(spec, title):
    print(f"== {title}: specificationVersion {spec.specificationVersion}, "
          f"type {spec.WhichOneof('Type')}")
    for f in spec.description.input:
        print(f"   input  {f.name}: {feature_shape(f)}")
    for f in spec.description.output:
        print(f"   output {f.name}: {feature_shape(f)} (declared)")
    for depth, layer in iter_layers(spec.neuralNetwork.layers):
        kind = layer.WhichOneof("layer")
        print(f"   {'  ' * depth}{kind:<20} {layer.name:<48} {layer_detail(layer)}")
    print(f"   layer kinds: {layer_kind_counts(spec)}")
    print(f"   weights: {weight_encoding_counts(spec)}")


def save_spec(spec, path):
    """Serialize like ct.utils.save_spec does for .mlmodel, with deterministic map order."""
    with open(path, "wb") as f:
        f.write(spec.SerializeToString(deterministic=True))


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# --------------------------------------------------------------------------
# conversion, quantization, dequantized twins

def convert(keras_model, input_name, input_shape):
    mlmodel = ct.convert(
        keras_model,
        source="tensorflow",
        convert_to="neuralnetwork",
        inputs=[ct.TensorType(name=input_name, shape=input_shape, dtype=np.float32)],
    )
    spec = mlmodel.get_spec()
    if spec.WhichOneof("Type") != "neuralNetwork":
        raise SystemExit(f"{keras_model.name}: converted to {spec.WhichOneof('Type')}")
    outs = [o.name for o in spec.description.output]
    if len(outs) != 1:
        raise SystemExit(f"{keras_model.name}: expected one output, got {outs}")
    if outs[0] != OUTPUT_NAME:
        ct.utils.rename_feature(spec, outs[0], OUTPUT_NAME)
    # no clock in the fixtures
    meta = spec.description.metadata.userDefined
    if ct_model_module._METADATA_CONVERSION_DATE in meta:
        del meta[ct_model_module._METADATA_CONVERSION_DATE]
    return spec


def _quantize_weights(spec, nbits, mode, **kwargs):
    """quantize_weights on an MLModel of spec; returns the quantized spec.

    coremltools 9.0 returns an MLModel; older versions returned a bare spec on
    platforms where Core ML can't run, so both are accepted.
    """
    with contextlib.redirect_stdout(io.StringIO()):
        model = ct.models.MLModel(spec)
        result = qu.quantize_weights(model, nbits, quantization_mode=mode, **kwargs)
    qspec = result.get_spec() if hasattr(result, "get_spec") else result
    out = Model_pb2.Model()
    out.CopyFrom(qspec)
    return out


def _flat_kmeans_table(nbits, weights):
    """coremltools' own k-means palettization, with its table made 1-D."""
    lut, indices = qu._get_kmeans_lookup_table_and_weight(nbits, weights)
    return np.asarray(lut, dtype=np.float64).reshape(-1), indices


def lut_problems(qspec):
    """Paths of LUT-quantized weights whose table doesn't have 2^nbits entries."""
    bad = []
    for path, wp in iter_weight_params(qspec):
        enc = weight_encoding(wp)
        if enc.startswith("lut"):
            n = len(wp.quantization.lookupTableQuantization.floatValue)
            if n != 1 << wp.quantization.numberOfBits:
                bad.append(f"{path} ({n} entries)")
    return bad


def quantize(spec, mode, nbits):
    """(quantized spec, how it was made).

    kmeans_lut through quantize_weights is broken in coremltools 9.0:
    _get_kmeans_lookup_table_and_weight returns the table with shape
    (2^nbits, 1) (it also serves vector palettization), and _quantize_wp_field
    extend()s the repeated float field with those rows. Under protobuf 4.25
    (upb) that silently stores an EMPTY table; protobuf >= 5 raises TypeError.
    Then the same coremltools k-means (same call, same random_state) goes
    through quantization_mode="custom_lut" with the table flattened, which
    writes what kmeans_lut means to write.
    """
    how = f"quantize_weights(nbits={nbits}, quantization_mode={mode!r})"
    try:
        qspec = _quantize_weights(spec, nbits, mode)
        bad = lut_problems(qspec)
        failure = f"{len(bad)} empty/short lookup tables, e.g. {bad[0]}" if bad else None
    except TypeError as exc:
        qspec, failure = None, f"TypeError: {exc}"
    if failure is None:
        return qspec, how, None
    if mode != "kmeans_lut":
        raise SystemExit(f"{how} failed: {failure}")
    qspec = _quantize_weights(spec, nbits, "custom_lut", lut_function=_flat_kmeans_table)
    bad = lut_problems(qspec)
    if bad:
        raise SystemExit(f"custom_lut k-means still has bad tables: {bad[:3]}")
    return (qspec,
            f"quantize_weights(nbits={nbits}, quantization_mode='custom_lut', "
            "lut_function=coremltools' _get_kmeans_lookup_table_and_weight, table flattened)",
            f"{how} is broken in coremltools {ct.__version__}: {failure}")


def own_decode(wp, count):
    """This script's own decoding of a quantized WeightParams into `count` float32 values.

    rawValue holds the indices as a big-endian bit stream (the first weight in
    the most significant bits of the first byte), numberOfBits per weight.
    Linear: per channel c (equal contiguous slices of the C-order weights),
    value = q * scale[c] + bias[c]. LUT: value = table[q].
    """
    q = wp.quantization
    nb = q.numberOfBits
    raw = np.frombuffer(wp.rawValue, dtype=np.uint8)
    if len(raw) != (count * nb + 7) // 8:
        raise AssertionError(f"rawValue has {len(raw)} bytes for {count} x {nb} bits")
    bits = np.unpackbits(raw)[: count * nb].reshape(count, nb).astype(np.int64)
    idx = bits @ (1 << np.arange(nb - 1, -1, -1, dtype=np.int64))
    if q.WhichOneof("QuantizationType") == "linearQuantization":
        scale = np.asarray(q.linearQuantization.scale, dtype=np.float64)
        bias = np.asarray(q.linearQuantization.bias, dtype=np.float64)
        per = idx.reshape(len(scale), -1).astype(np.float64)
        vals = per * scale[:, None] + bias[:, None]
        return vals.reshape(-1).astype(np.float32)
    table = np.asarray(q.lookupTableQuantization.floatValue, dtype=np.float32)
    return table[idx]


def _copy_spec(spec):
    out = Model_pb2.Model()
    out.CopyFrom(spec)
    return out


def dequantized_twin(qspec):
    """(copy of qspec with every weight as floatValue decoded by coremltools, count).

    float16Value is read with optimization_utils._proto_float_to_np_array;
    rawValue + quantization with quantization_utils._dequantize_nn_spec, which
    walks the quantizable layers with the same shapes and axes quantization
    used (_dequantize_wp -> _unpack_to_bytes, _dequantize_linear/_lut). That
    walk also creates WeightParams that were absent (e.g. the weights of a
    batchedMatmul whose two operands are inputs) and leaves an emptied but
    present quantization message, so it runs on a scratch copy and only the
    decoded values are moved into the twin: apart from the weight encodings
    the twin is byte-for-byte the quantized spec.
    """
    nn_kind = qspec.WhichOneof("Type")
    if nn_kind not in ("neuralNetwork", "neuralNetworkClassifier", "neuralNetworkRegressor"):
        raise AssertionError(f"unexpected model type {nn_kind}")
    scratch = _copy_spec(qspec)
    for _, wp in list(iter_weight_params(scratch)):
        if weight_encoding(wp) == "float16":  # _dequantize_wp can't read these
            values = _proto_float_to_np_array(wp).astype(np.float32)
            wp.ClearField("float16Value")
            wp.floatValue.extend(values.tolist())
    if any(weight_encoding(wp).startswith(("linear", "lut"))
           for _, wp in iter_weight_params(scratch)):
        with contextlib.redirect_stdout(io.StringIO()):
            qu._dequantize_nn_spec(getattr(scratch, nn_kind))
    decoded = dict(iter_weight_params(scratch))

    twin = _copy_spec(qspec)
    checked = 0
    for path, wp in list(iter_weight_params(twin)):
        enc = weight_encoding(wp)
        src = decoded.get(path)
        if enc not in ("float16",) and not enc.startswith(("linear", "lut")):
            continue
        if src is None or weight_encoding(src) != "float32":
            raise AssertionError(f"{path}: coremltools left it {src and weight_encoding(src)}")
        values = np.asarray(src.floatValue, dtype=np.float32)
        # this script's own reading must agree bit for bit
        if enc == "float16":
            mine = np.frombuffer(wp.float16Value, dtype="<f2").astype(np.float32)
        else:
            mine = own_decode(wp, len(values))
        if mine.shape != values.shape or not np.array_equal(mine, values):
            diff = np.max(np.abs(mine - values)) if mine.shape == values.shape else "shape"
            raise AssertionError(f"{path}: own decode differs from coremltools' ({diff})")
        wp.ClearField("float16Value")
        wp.ClearField("rawValue")
        wp.ClearField("quantization")
        wp.floatValue.extend(values.tolist())
        checked += 1
    left = {weight_encoding(wp) for _, wp in iter_weight_params(twin)} - {"float32", "empty"}
    if left:
        raise AssertionError(f"twin still has {left}")
    return twin, checked


def changed_integer_constants(float_spec, twin):
    """loadConstantND layers holding only integers (indices, shapes, counters in
    the converted graph) whose decoded values in `twin` are no longer the same."""
    def constants(spec):
        return {layer.name: np.asarray(layer.loadConstantND.data.floatValue, dtype=np.float32)
                for _, layer in iter_layers(spec.neuralNetwork.layers)
                if layer.WhichOneof("layer") == "loadConstantND"}
    before, after = constants(float_spec), constants(twin)
    changed = []
    for name, vals in before.items():
        if vals.size and np.array_equal(vals, np.round(vals)) and name in after:
            if not np.array_equal(vals, after[name]):
                changed.append(name)
    return changed


# --------------------------------------------------------------------------
# main

def keras_outputs(model, inputs):
    outs = []
    for x in inputs:
        y = model(x, training=False)
        outs.append(np.asarray(y, dtype=np.float32))
    return outs


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)

    tf.keras.utils.set_random_seed(SEED)  # python, numpy and TF global seeds
    tf.config.experimental.enable_op_determinism()

    versions = {
        "python": platform.python_version(),
        "tensorflow": tf.__version__,
        "keras": tf.keras.__version__,
        "coremltools": ct.__version__,
        "numpy": np.__version__,
    }
    try:
        import sklearn
        versions["scikit-learn"] = sklearn.__version__
    except ImportError:
        versions["scikit-learn"] = None
    print("versions:", json.dumps(versions))
    if not tf.__version__.startswith("2.12.") or ct.__version__ != "9.0":
        print("warning: not the versions pinned in Scripts/requirements-tf.txt "
              "(tensorflow-cpu 2.12.0, coremltools 9.0); the files may differ", file=sys.stderr)

    # seeded inputs, one family per input signature
    def inputs_for(seed_offset, shape, kind):
        rng = np.random.RandomState(SEED + seed_offset)
        if kind == "image":
            return [rng.uniform(-1.0, 1.0, shape).astype(np.float32) for _ in range(NUM_CASES)]
        return [rng.standard_normal(shape).astype(np.float32) for _ in range(NUM_CASES)]

    cnn_in = inputs_for(100, (1, 32, 32, 3), "image")
    mlp_in = inputs_for(200, (1, 20), "normal")
    seq_in = inputs_for(300, (1, SEQ_T, SEQ_F), "normal")

    lstm = build_lstm(np.random.RandomState(SEED + 3), name="lstm")
    lstm_unrolled = build_lstm(None, unroll=True, name="lstm_unrolled")
    lstm_unrolled.set_weights(lstm.get_weights())
    models = [
        ("cnn", build_cnn(np.random.RandomState(SEED + 1)), "image", cnn_in,
         "Conv2D+BN+ReLU, DepthwiseConv2D+BN+ReLU6, SeparableConv2D+ReLU, MaxPool, "
         "BN (standalone), Conv2D stride 2 'same'+ReLU, AvgPool, GlobalAvgPool, Dense, softmax"),
        ("mlp", build_mlp(np.random.RandomState(SEED + 2)), "features", mlp_in,
         "Dense(64, relu), Dense(32, tanh), Dense(5), softmax"),
        ("lstm", lstm, "sequence", seq_in,
         "tf.keras LSTM(16) (last step), Dense(3), softmax; TF while loop"),
        ("lstm_unrolled", lstm_unrolled, "sequence", seq_in,
         "LSTM(16, unroll=True), same weights as lstm"),
        ("lstm_block", build_lstm_block(lstm, False, "lstm_block"), "sequence", seq_in,
         "tf.raw_ops.BlockLSTM(16) (last step), same weights as lstm"),
        ("lstm_seq_block", build_lstm_block(lstm, True, "lstm_seq_block"), "sequence", seq_in,
         "tf.raw_ops.BlockLSTM(16) return_sequences=True, Dense(3) per step, softmax; "
         "same weights as lstm"),
    ]

    manifest = {
        "generator": "Scripts/make_keras_coreml.py",
        "seed": SEED,
        "versions": versions,
        "notes": [
            "Inputs/outputs are float32 .npy in the shape of the Core ML input; "
            "output .npy files hold Keras' outputs in Keras' shape (coremltools declares "
            "NeuralNetwork outputs without a shape).",
            "tolerance.float_vs_keras: the float .mlmodel vs the .output npy files.",
            "quantized[].tolerance.vs_dequant_twin: a quantized file vs its .dequant twin "
            "on the same inputs; vs_keras is a rough hint (null: no meaningful bound).",
        ],
        "models": [],
    }

    keras_refs = {}
    for name, kmodel, input_name, inputs, desc in models:
        print(f"\n######## {name}: {desc}")
        outputs = keras_outputs(kmodel, inputs)
        keras_refs[name] = outputs
        spec = convert(kmodel, input_name, tuple(inputs[0].shape))
        in_feat = [f for f in spec.description.input if f.name == input_name]
        if len(spec.description.input) != 1 or not in_feat:
            raise SystemExit(f"{name}: inputs {[f.name for f in spec.description.input]}")
        _, in_shape = feature_shape(in_feat[0])
        if tuple(in_shape) != inputs[0].shape:
            raise SystemExit(f"{name}: Core ML input shape {in_shape} != {inputs[0].shape}")
        _, out_declared = feature_shape(spec.description.output[0])

        path = os.path.join(out_dir, f"{name}.mlmodel")
        save_spec(spec, path)
        files = [os.path.basename(path)]
        describe_spec(spec, f"{name}.mlmodel")

        cases = []
        for i, (x, y) in enumerate(zip(inputs, outputs)):
            xi = f"{name}.input{i}.npy"
            yi = f"{name}.output{i}.npy"
            np.save(os.path.join(out_dir, xi), x)
            np.save(os.path.join(out_dir, yi), y)
            cases.append({"inputs": {input_name: xi}, "outputs": {OUTPUT_NAME: yi}})
            files += [xi, yi]

        entry = {
            "name": name,
            "description": desc,
            "file": os.path.basename(path),
            "files": files,
            "sha256": sha256(path),
            "bytes": os.path.getsize(path),
            "model_type": spec.WhichOneof("Type"),
            "specification_version": spec.specificationVersion,
            "keras_params": int(kmodel.count_params()),
            "inputs": [{"name": input_name, "shape": in_shape, "dtype": "float32",
                        "keras_shape": list(inputs[0].shape),
                        "layout": "NHWC, as Keras (the spec's first layer transposes "
                                  "it to NCHW)" if name == "cnn" else "as Keras"}],
            "outputs": [{"name": OUTPUT_NAME, "declared_shape": out_declared,
                         "shape": list(outputs[0].shape), "dtype": "float32"}],
            "layer_kinds": layer_kind_counts(spec),
            "weight_encodings": weight_encoding_counts(spec),
            "cases": cases,
            "tolerance": {"float_vs_keras": TOL_FLOAT_VS_KERAS},
            "quantized": [],
        }

        for tag, mode, nbits in VARIANTS:
            qspec, how, workaround = quantize(spec, mode, nbits)
            if workaround:
                print(f"   {tag}: {workaround}; used {how}")
            qname = f"{name}.{tag}.mlmodel"
            dname = f"{name}.{tag}.dequant.mlmodel"
            save_spec(qspec, os.path.join(out_dir, qname))
            twin, checked = dequantized_twin(qspec)
            save_spec(twin, os.path.join(out_dir, dname))
            files += [qname, dname]
            int_changed = changed_integer_constants(spec, twin)
            qkinds = layer_kind_counts(qspec)
            qenc = weight_encoding_counts(qspec)
            print(f"   {tag:<18} v{qspec.specificationVersion} weights {qenc}"
                  f"{'' if qkinds == entry['layer_kinds'] else ' layer kinds ' + str(qkinds)}"
                  f"; twin v{twin.specificationVersion} {weight_encoding_counts(twin)}, "
                  f"{checked} tensors re-decoded"
                  + (f"; integer constants changed: {len(int_changed)}" if int_changed else ""))
            entry["quantized"].append({
                "tag": tag,
                "mode": "fp16" if nbits == 16 else mode,
                "bits": nbits,
                "made_by": how,
                "workaround": workaround,
                "file": qname,
                "sha256": sha256(os.path.join(out_dir, qname)),
                "dequant_file": dname,
                "dequant_sha256": sha256(os.path.join(out_dir, dname)),
                "specification_version": qspec.specificationVersion,
                "dequant_specification_version": twin.specificationVersion,
                "weight_encodings": qenc,
                "layer_kinds": qkinds,
                "integer_constants_changed": int_changed,
                "tolerance": {"vs_dequant_twin": TOL_QUANT_VS_TWIN,
                              "vs_keras": None if int_changed else TOL_QUANT_VS_KERAS[nbits]},
            })
        manifest["models"].append(entry)

    # the LSTM variants compute the same function
    cross = {}
    for other in ("lstm_unrolled", "lstm_block", "lstm_seq_block"):
        worst = 0.0
        for a, b in zip(keras_refs["lstm"], keras_refs[other]):
            if b.ndim == 3:
                b = b[:, -1, :]
            worst = max(worst, float(np.max(np.abs(a - b))))
        cross[other] = worst
        if worst > 1e-5:
            raise SystemExit(f"Keras {other} differs from lstm by {worst}")
    print(f"\nLSTM variants vs lstm (Keras, max |diff|; lstm_seq_block: last step): {cross}")
    manifest["lstm_cross_check_max_abs_diff"] = cross

    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=False)
        f.write("\n")

    biggest = max((os.path.getsize(os.path.join(out_dir, n)), n)
                  for n in os.listdir(out_dir) if n.endswith(".mlmodel"))
    count = sum(1 for n in os.listdir(out_dir) if n.endswith(".mlmodel"))
    print(f"wrote {count} .mlmodel files to {out_dir}; largest {biggest[1]} ({biggest[0]} bytes)")


if __name__ == "__main__":
    main()
