#!/usr/bin/env python3
"""Small Keras models saved by Keras itself, with inputs and Keras' own outputs.

Run with the TensorFlow venv (TF 2.12, tf.keras = Keras 2) to write Keras 2 `.h5`
files, and with the Keras 3 venv (KERAS_BACKEND=jax) to write `.keras` files:

    .venv-tf/bin/python Scripts/make_keras_fixtures.py OUT_DIR [--set=fixtures|crosscheck] [--only=FUNCTION]
    .venv-keras3/bin/python Scripts/make_keras_fixtures.py OUT_DIR [--set=fixtures|crosscheck] [--only=FUNCTION]

For every model NAME it writes NAME.h5 or NAME.keras and NAME.<ext>.json:
{"inputs": [{"name", "shape", "dtype", "data"}], "outputs": [{"shape", "data"}]}
with the outputs of `model(x)` (inference mode) in the model's output order.
Every weight is drawn from a seeded normal (variances from a positive range),
so that no layer is a no-op. The same architectures are written by both Keras
versions; the importer tests (Tests/ShrinkwrapKerasTests) compare Shrinkwrap's
interpreter with these outputs.
"""
import json
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

try:
    import keras  # noqa: E402
    KERAS3 = keras.__version__.startswith("3")
except ImportError:
    KERAS3 = False
if not KERAS3:
    import tensorflow as tf  # noqa: E402
    keras = tf.keras

L = keras.layers


def functional_branches():
    inp = L.Input((12, 12, 3), name="image")
    x = L.Conv2D(8, 3, padding="same", activation="relu", name="stem")(inp)
    x = L.BatchNormalization(name="stem_bn")(x)
    a = L.DepthwiseConv2D(3, padding="same", name="dw")(x)
    a = L.ReLU(max_value=6.0, name="relu6")(a)
    b = L.Conv2D(8, 1, name="pw")(x)
    x = L.Add(name="add")([a, b])
    x = L.ZeroPadding2D(((1, 0), (0, 1)), name="pad")(x)
    x = L.Conv2D(6, 3, strides=2, padding="same", name="strided")(x)  # 13 -> 7: odd padding
    c = L.MaxPooling2D(2, padding="same", name="maxpool")(x)
    d = L.AveragePooling2D(2, strides=1, padding="valid", name="avgpool")(x)
    d = L.Cropping2D(((0, 2), (1, 1)), name="crop")(d)
    d = L.UpSampling2D(1, name="up1")(d)
    c = L.UpSampling2D(2, name="up")(c)
    c = L.Cropping2D(((0, 4), (2, 2)), name="crop2")(c)
    x = L.Concatenate(name="concat")([c, d])
    x = L.SeparableConv2D(5, 3, padding="same", activation="swish", name="sep")(x)
    x = L.Conv2DTranspose(4, 3, strides=2, padding="same", name="deconv")(x)
    x = L.Conv2DTranspose(3, 2, strides=2, padding="valid", name="deconv_valid")(x)
    g = L.GlobalAveragePooling2D(name="gap")(x)
    m = L.GlobalMaxPooling2D(name="gmp")(x)
    f = L.Flatten(name="flatten")(L.MaxPooling2D(4, name="pool4")(x))
    x = L.Concatenate(name="features")([g, m, f])
    out = L.Dense(5, activation="softmax", name="probs")(x)
    aux = L.Dense(2, name="aux")(g)
    return keras.Model(inp, [out, aux], name="branches"), [("image", (2, 12, 12, 3), "float32")]


def sequential_activations():
    acts = ["relu", "sigmoid", "tanh", "softplus", "softsign", "selu", "elu", "exponential", "hard_sigmoid",
            "swish", "gelu", "linear", "softmax"]
    layers = [keras.Input((6,))]
    for i, a in enumerate(acts):
        layers.append(L.Dense(6, activation=a, name="dense_%s" % a))
        if i % 4 == 0:
            layers.append(L.Dropout(0.5, name="drop_%d" % i))
    layers += [L.LeakyReLU(name="leaky"), L.ELU(alpha=0.7, name="elu_layer"), L.PReLU(name="prelu"),
               L.Softmax(name="softmax_layer"), L.Rescaling(2.0, offset=-0.5, name="rescale")]
    return keras.Sequential(layers, name="activations"), [(None, (3, 6), "float32")]


def shapes_and_merges():
    a_in = L.Input((4, 6), name="a")
    b_in = L.Input((4, 6), name="b")
    x = L.Subtract(name="sub")([a_in, b_in])
    y = L.Multiply(name="mul")([a_in, b_in, x])
    z = L.Average(name="avg")([a_in, b_in])
    w = L.Maximum(name="max")([x, y])
    v = L.Minimum(name="min")([z, w])
    s = L.Add(name="sum3")([v, w, z])
    t = L.Permute((2, 1), name="permute")(s)
    t = L.Reshape((3, -1), name="reshape")(t)
    t = L.LayerNormalization(name="ln")(t)
    t = L.Flatten(name="flat")(t)
    r = L.RepeatVector(2, name="repeat")(t)
    r = L.Normalization(mean=0.5, variance=2.0, name="norm")(r)
    u = L.Conv1D(5, 3, padding="causal", dilation_rate=2, activation="tanh", name="causal")(a_in)
    u = L.SeparableConv1D(4, 2, padding="same", name="sep1d")(u)
    u = L.MaxPooling1D(2, name="pool1d")(u)
    u = L.UpSampling1D(3, name="up1d")(u)
    u = L.ZeroPadding1D((1, 2), name="pad1d")(u)
    u = L.Cropping1D((2, 1), name="crop1d")(u)
    u = L.Conv1DTranspose(3, 3, strides=2, name="deconv1d")(u)
    u = L.GlobalAveragePooling1D(name="gap1d")(u)
    return keras.Model([a_in, b_in], [r, u], name="shapes"), [("a", (2, 4, 6), "float32"), ("b", (2, 4, 6), "float32")]


def recurrent_text():
    inp = L.Input((7,), name="tokens", dtype="int32")
    x = L.Embedding(20, 8, name="embed")(inp)
    x = L.Bidirectional(L.LSTM(5, return_sequences=True), name="bilstm")(x)
    x = L.GRU(6, return_sequences=True, name="gru")(x)
    x = L.GRU(4, return_sequences=True, reset_after=False, go_backwards=True, name="gru_v1")(x)
    x = L.SimpleRNN(4, return_sequences=True, name="rnn")(x)
    x = L.TimeDistributed(L.Dense(3), name="td")(x)
    seq, h, c = L.LSTM(4, return_state=True, name="lstm_state")(x)
    last = L.Bidirectional(L.GRU(3), merge_mode="sum", name="bigru")(x)
    out = L.Concatenate(name="joined")([seq, h, c, last])
    return keras.Model(inp, out, name="recurrent"), [("tokens", (2, 7), "int32")]


def nested():
    inner_in = L.Input((5,), name="inner_in")
    h = L.Dense(4, activation="relu", name="inner_dense")(inner_in)
    h = L.BatchNormalization(name="inner_bn")(h)
    inner = keras.Model(inner_in, h, name="block")
    model = keras.Sequential([keras.Input((5,)), L.Dense(5, name="pre"), inner, L.Dense(3, name="head")], name="nested")
    return model, [(None, (2, 5), "float32")]


def keras3_activations():
    """Keras 3's activations that Keras 2 does not have (written by the Keras 3 venv only). Not glu:
    an Activation layer declares its output shape as its input's, so Keras cannot build a model
    around one that halves the last axis."""
    acts = ["relu6", "leaky_relu", "celu", "squareplus", "soft_shrink", "sparse_plus", "silu", "tanh_shrink",
            "sparse_sigmoid", "hard_silu", "hard_tanh", "hard_shrink", "mish", "log_softmax", "log_sigmoid", "hard_sigmoid"]
    inp = keras.Input((8,), name="x")
    x = inp
    for a in acts:
        x = L.Dense(8, name="dense_%s" % a)(x)
        x = L.Activation(a, name="act_%s" % a)(x)
    return keras.Model(inp, x, name="activations3"), [("x", (3, 8), "float32")]


MODELS = [functional_branches, sequential_activations, shapes_and_merges, recurrent_text, nested] + ([keras3_activations] if KERAS3 else [])


# The cross-check's larger set (`make crosscheck-keras`; not committed): the samples' networks,
# two keras.applications models (weights=None: seeded and randomized here), a stacked
# LSTM / GRU text model and the branching model above.
def digits_cnn():
    inp = L.Input((32, 32, 1), name="image")
    h = L.Conv2D(8, 3, activation="relu", padding="same", name="conv1")(inp)
    h = L.MaxPooling2D(2, name="pool1")(h)
    h = L.Conv2D(16, 3, activation="relu", padding="same", name="conv2")(h)
    h = L.MaxPooling2D(2, name="pool2")(h)
    h = L.Flatten(name="flatten")(h)
    return keras.Model(inp, L.Dense(10, activation="softmax", name="digit")(h), name="digits"), [("image", (2, 32, 32, 1), "float32")]


def sentiment_text():
    inp = L.Input((16,), name="tokens", dtype="int32")
    h = L.Embedding(20, 12, name="embedding")(inp)
    h = L.GlobalAveragePooling1D(name="average")(h)
    return keras.Model(inp, L.Dense(2, activation="softmax", name="sentiment")(h), name="sentiment"), [("tokens", (2, 16), "int32")]


def mobilenet_v2():
    m = keras.applications.MobileNetV2(input_shape=(96, 96, 3), weights=None, classes=10)
    return m, [(None, (1, 96, 96, 3), "float32")]


def resnet50():
    m = keras.applications.ResNet50(input_shape=(64, 64, 3), weights=None, classes=10)
    return m, [(None, (1, 64, 64, 3), "float32")]


def stacked_text():
    inp = L.Input((12,), name="tokens", dtype="int32")
    x = L.Embedding(20, 16, name="embed")(inp)
    x = L.LSTM(16, return_sequences=True, name="lstm1")(x)
    x = L.LSTM(12, return_sequences=True, name="lstm2")(x)
    x = L.GRU(8, name="gru")(x)
    return keras.Model(inp, L.Dense(3, activation="softmax", name="probs")(x), name="stacked_text"), [("tokens", (2, 12), "int32")]


SETS = {"fixtures": MODELS, "crosscheck": [digits_cnn, sentiment_text, mobilenet_v2, resnet50, stacked_text, functional_branches]}


def randomize(model, rng):
    for w in model.weights:
        shape = tuple(w.shape)
        if "variance" in w.name:
            value = rng.uniform(0.5, 1.5, shape)
        elif "count" in w.name:
            value = np.full(shape, 10)
        else:
            value = rng.normal(0, 0.4, shape)
        w.assign(value.astype(np.dtype(w.dtype if isinstance(w.dtype, str) else w.dtype.name)))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--set=")]
    which = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--set=")), "fixtures")
    out = args[0]
    os.makedirs(out, exist_ok=True)
    ext = "keras" if KERAS3 else "h5"
    only = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--only=")), None)
    args = [a for a in args if not a.startswith("--only=")]
    for make in SETS[which]:
        if only and make.__name__ != only:
            continue
        rng = np.random.default_rng(7)
        model, specs = make()
        randomize(model, rng)
        inputs = []
        for name, shape, dtype in specs:
            if which == "crosscheck":
                shape = (1,) + tuple(shape[1:])  # the Core ML and TFLite files pin the batch to 1
            data = rng.integers(0, 20, shape).astype(dtype) if dtype == "int32" else rng.normal(0, 1, shape).astype(dtype)
            inputs.append((name or model.inputs[0].name.split(":")[0], data))
        feed = [d for _, d in inputs]
        ys = model(feed if len(feed) > 1 else feed[0], training=False)
        ys = ys if isinstance(ys, (list, tuple)) else [ys]
        path = os.path.join(out, "%s.%s" % (model.name, ext))
        model.save(path)
        record = {"keras": keras.__version__,
                  "inputs": [{"name": n, "shape": list(d.shape), "dtype": str(d.dtype), "data": d.ravel().tolist()} for n, d in inputs],
                  "outputs": [{"name": o, "shape": list(np.shape(y)), "data": np.asarray(y, np.float32).ravel().tolist()}
                              for o, y in zip(output_names(model), ys)]}
        paths = [path]
        if which == "crosscheck" and not KERAS3:
            paths += save_tensorflow_forms(model, out, inputs)
        for p in paths:
            with open(p + ".json", "w") as f:
                json.dump(record, f)
            print(p, os.path.getsize(p) if os.path.isfile(p) else "(folder)")


def output_names(model):
    """The output layers' names, in the order model(x) returns them."""
    return [t.name.split("/")[0].split(":")[0] for t in model.outputs] if KERAS3 else list(model.output_names)


def save_tensorflow_forms(model, out, inputs):
    """TF 2.12 only: the model as a SavedModel folder (model.save) and as a frozen GraphDef
    (the concrete function of model(x), variables made constants, its While loops kept as
    functional While ops, as tf.function traced them) — and, for a model with loops, frozen
    with them lowered to TF1 control flow (NAME.tf1.pb). The frozen graphs' placeholders are
    named after the Keras inputs."""
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2
    folder = os.path.join(out, model.name + ".savedmodel")
    model.save(folder)
    specs = [tf.TensorSpec((None,) + tuple(d.shape[1:]), d.dtype, name=n) for n, d in inputs]
    fn = tf.function(lambda *xs: model(list(xs) if len(xs) > 1 else xs[0], training=False))
    concrete = fn.get_concrete_function(*specs)
    graph_def = convert_variables_to_constants_v2(concrete, lower_control_flow=False).graph.as_graph_def()
    pb = os.path.join(out, model.name + ".pb")
    with open(pb, "wb") as f:
        f.write(graph_def.SerializeToString())
    paths = [folder, pb]
    if any(n.op in ("While", "StatelessWhile") for n in graph_def.node):
        # Frozen the default way too: the loops lowered to TF1 control flow (Enter / Merge / Switch / Exit frames).
        lowered = os.path.join(out, model.name + ".tf1.pb")
        with open(lowered, "wb") as f:
            f.write(convert_variables_to_constants_v2(concrete).graph.as_graph_def().SerializeToString())
        paths.append(lowered)
    return paths

if __name__ == "__main__":
    main()
