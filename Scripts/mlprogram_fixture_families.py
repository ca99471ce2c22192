"""Op-family ML Program fixtures and the blob storage fixture (see make_mlprogram_fixtures.py)."""
import json
import os

import numpy as np
from scipy.special import erf

import coremltools as ct
from coremltools.converters.mil import Builder as mb

import mlprogram_reference as ref

T16, T17, T18 = ct.target.iOS16, ct.target.iOS17, ct.target.iOS18


def make_elementwise(record, program_ops, convert, rand):
    x = (np.abs(rand(2, 3, 4)) + 0.5).astype(np.float32)
    y = (rand(2, 3, 4) * 0.5 + 1.5).astype(np.float32)

    @mb.program(input_specs=[mb.TensorSpec(shape=(2, 3, 4)), mb.TensorSpec(shape=(2, 3, 4))], opset_version=T17)
    def prog(x, y):
        return (mb.add(x=x, y=y, name="add"), mb.sub(x=x, y=y, name="sub"), mb.mul(x=x, y=y, name="mul"),
                mb.real_div(x=x, y=y, name="div"), mb.pow(x=x, y=y, name="pow"), mb.maximum(x=x, y=y, name="max"),
                mb.minimum(x=x, y=y, name="min"), mb.floor_div(x=x, y=mb.const(val=np.float32(0.3)), name="floordiv"),
                mb.mod(x=x, y=mb.const(val=np.float32(0.3)), name="mod"),
                mb.exp(x=x, name="exp"), mb.log(x=x, name="log"), mb.sqrt(x=x, name="sqrt"), mb.rsqrt(x=x, name="rsqrt"),
                mb.inverse(x=x, name="inverse"), mb.abs(x=mb.sub(x=x, y=y), name="abs"), mb.floor(x=y, name="floor"),
                mb.ceil(x=y, name="ceil"), mb.round(x=mb.mul(x=y, y=np.float32(3)), name="round"),
                mb.sign(x=mb.sub(x=x, y=y), name="sign"), mb.erf(x=x, name="erf"), mb.sin(x=x, name="sin"), mb.cos(x=x, name="cos"),
                mb.square(x=x, name="square"), mb.tanh(x=x, name="tanh"), mb.silu(x=mb.sub(x=x, y=y), name="silu"),
                mb.gelu(x=mb.sub(x=x, y=y), mode="EXACT", name="gelu_exact"),
                mb.gelu(x=mb.sub(x=x, y=y), mode="TANH_APPROXIMATION", name="gelu_tanh"),
                mb.gelu(x=mb.sub(x=x, y=y), mode="SIGMOID_APPROXIMATION", name="gelu_sigmoid"),
                mb.leaky_relu(x=mb.sub(x=x, y=y), alpha=0.1, name="leaky"), mb.elu(x=mb.sub(x=x, y=y), alpha=0.7, name="elu"),
                mb.softplus(x=mb.sub(x=x, y=y), name="softplus"), mb.softsign(x=mb.sub(x=x, y=y), name="softsign"),
                mb.clip(x=x, alpha=0.8, beta=1.2, name="clip"), mb.sigmoid_hard(x=mb.sub(x=x, y=y), alpha=0.3, beta=0.4, name="hsig"),
                mb.select(cond=mb.greater(x=x, y=y), a=x, b=y, name="select"),
                mb.cast(x=mb.logical_and(x=mb.less_equal(x=x, y=y), y=mb.not_equal(x=x, y=y)), dtype="fp32", name="logic"),
                mb.cast(x=mb.logical_xor(x=mb.greater_equal(x=x, y=np.float32(1)), y=mb.less(x=y, y=np.float32(1.5))), dtype="fp32", name="xor"),
                mb.reduce_sum(x=x, axes=[1], keep_dims=True, name="rsum"), mb.reduce_mean(x=x, axes=[0, 2], name="rmean"),
                mb.reduce_max(x=x, axes=[-1], name="rmax"), mb.reduce_min(x=x, name="rmin"), mb.reduce_prod(x=x, axes=[2], name="rprod"),
                mb.reduce_l2_norm(x=x, axes=[1], name="rl2"), mb.reduce_log_sum_exp(x=x, axes=[2], name="rlse"),
                mb.cast(x=mb.reduce_argmax(x=x, axis=1), dtype="fp32", name="argmax"),
                mb.cumsum(x=x, axis=2, exclusive=True, reverse=True, name="cumsum"),
                mb.tan(x=mb.sub(x=x, y=np.float32(1)), name="tan"), mb.asin(x=mb.sub(x=x, y=np.float32(1.2)), name="asin"),
                mb.acos(x=mb.sub(x=x, y=np.float32(1.2)), name="acos"), mb.atan(x=x, name="atan"), mb.sinh(x=x, name="sinh"),
                mb.cosh(x=x, name="cosh"),
                mb.atanh(x=mb.sub(x=x, y=np.float32(1.2)), name="atanh"),
                mb.cast(x=mb.logical_not(x=mb.logical_or(x=mb.greater(x=x, y=y), y=mb.less(x=x, y=np.float32(0.8)))), dtype="fp32", name="not_or"),
                mb.reduce_l1_norm(x=x, axes=[1], name="rl1"), mb.reduce_log_sum(x=x, axes=[0], name="rlogsum"),
                mb.reduce_sum_square(x=x, axes=[2], keep_dims=True, name="rsumsq"),
                mb.cast(x=mb.reduce_argmin(x=x, axis=-1, keep_dims=True), dtype="fp32", name="argmin"),
                mb.linear_activation(x=x, alpha=-0.5, beta=0.25, name="linact"))
    d = x - y
    sig = ref.sigmoid
    gelu_tanh = 0.5 * d * (1 + np.tanh(np.sqrt(2 / np.pi) * (d + 0.044715 * d ** 3)))
    cums = np.flip(np.cumsum(np.flip(x, 2), 2), 2) - x
    outs = {"add": x + y, "sub": d, "mul": x * y, "div": x / y, "pow": x ** y, "max": np.maximum(x, y), "min": np.minimum(x, y),
            "floordiv": np.floor(x / np.float32(0.3)), "mod": np.mod(x, np.float32(0.3)), "exp": np.exp(x), "log": np.log(x),
            "sqrt": np.sqrt(x), "rsqrt": 1 / np.sqrt(x + 1e-12), "inverse": 1 / (x + 1e-4), "abs": np.abs(d), "floor": np.floor(y),
            "ceil": np.ceil(y), "round": np.round(y * 3), "sign": np.sign(d), "erf": erf(x), "sin": np.sin(x), "cos": np.cos(x),
            "square": x * x, "tanh": np.tanh(x), "silu": d * sig(d), "gelu_exact": 0.5 * d * (1 + erf(d / np.sqrt(2))),
            "gelu_tanh": gelu_tanh, "gelu_sigmoid": d * sig(1.702 * d), "leaky": np.where(d > 0, d, 0.1 * d),
            "elu": np.where(d > 0, d, 0.7 * (np.exp(d) - 1)), "softplus": np.log1p(np.exp(d)), "softsign": d / (1 + np.abs(d)),
            "clip": np.clip(x, 0.8, 1.2), "hsig": np.clip(0.3 * d + 0.4, 0, 1), "select": np.where(x > y, x, y),
            "logic": ((x <= y) & (x != y)).astype(np.float32), "xor": ((x >= 1) ^ (y < 1.5)).astype(np.float32),
            "rsum": x.sum(1, keepdims=True), "rmean": x.mean((0, 2)), "rmax": x.max(-1), "rmin": np.array(x.min()),
            "rprod": x.prod(2), "rl2": np.sqrt((x * x).sum(1)), "rlse": np.log(np.exp(x).sum(2)),
            "argmax": x.argmax(1).astype(np.float32), "cumsum": cums,
            "tan": np.tan(x - 1), "asin": np.arcsin(x - 1.2), "acos": np.arccos(x - 1.2), "atan": np.arctan(x), "sinh": np.sinh(x),
            "cosh": np.cosh(x), "atanh": np.arctanh(x - 1.2),
            "not_or": (~((x > y) | (x < 0.8))).astype(np.float32), "rl1": np.abs(x).sum(1), "rlogsum": np.log(x.sum(0)),
            "rsumsq": (x * x).sum(2, keepdims=True), "argmin": x.argmin(-1)[..., None].astype(np.float32), "linact": -0.5 * x + 0.25}
    model = convert(prog, T17)
    record("elementwise", model, {"x": x, "y": y}, {k: np.asarray(v, np.float32) for k, v in outs.items()}, ops=program_ops(model))


def make_shapes(record, program_ops, convert, rand):
    x = rand(2, 3, 4, 5)
    table = rand(10, 6)
    idx = np.array([[3, 0], [9, 2]], np.int32)

    @mb.program(input_specs=[mb.TensorSpec(shape=(2, 3, 4, 5)), mb.TensorSpec(shape=(2, 2), dtype=ct.converters.mil.mil.types.int32)],
                opset_version=T17)
    def prog(x, idx):
        parts = mb.split(x=x, split_sizes=[1, 2], axis=1, name="split")
        halves = mb.split(x=x, num_splits=2, axis=0, name="halves")
        return (mb.reshape(x=x, shape=[6, -1], name="reshape"), mb.transpose(x=x, perm=[0, 2, 3, 1], name="transpose"),
                mb.concat(values=[parts[1], parts[0]], axis=1, name="concat"), mb.identity(x=halves[1], name="half"),
                mb.slice_by_index(x=x, begin=[0, 1, 0, 4], end=[2, 3, 4, 0], stride=[1, 1, 2, -2],
                                  begin_mask=[False, False, True, False], end_mask=[False, False, False, True],
                                  squeeze_mask=[False, False, False, False], name="slice"),
                mb.slice_by_index(x=x, begin=[1, 0, 0, 0], end=[2, 3, 4, 5], squeeze_mask=[True, False, False, False], name="slice_squeeze"),
                mb.slice_by_size(x=x, begin=[0, 1, 1, 0], size=[-1, 2, 2, 3], name="slice_size"),
                mb.expand_dims(x=mb.squeeze(x=mb.expand_dims(x=x, axes=[0]), axes=[0]), axes=[-1], name="expand_squeeze"),
                mb.pad(x=x, pad=[1, 2, 0, 1], mode="constant", constant_val=0.5, name="pad_constant"),
                mb.pad(x=x, pad=[2, 1, 1, 2], mode="reflect", name="pad_reflect"),
                mb.pad(x=x, pad=[1, 1, 0, 0, 2, 1], mode="replicate", name="pad_replicate"),
                mb.tile(x=x, reps=[1, 2, 1, 2], name="tile"),
                mb.stack(values=[x, x], axis=2, name="stack"),
                mb.gather(x=mb.const(val=table), indices=idx, axis=0, name="gather"),
                mb.gather_along_axis(x=x, indices=mb.const(val=np.tile(np.array([[[[3], [0], [1], [2]]]], np.int32), (2, 3, 1, 1))), axis=3, name="gather_axis"),
                mb.gather_nd(x=mb.const(val=table), indices=mb.const(val=np.array([[1, 2], [7, 5]], np.int32)), name="gather_nd"),
                mb.cast(x=mb.shape(x=x), dtype="fp32", name="shape"),
                mb.fill(shape=[2, 3], value=1.5, name="fill"),
                mb.cast(x=mb.range_1d(end=np.int32(7), start=np.int32(1), step=np.int32(2)), dtype="fp32", name="range"),
                mb.identity(x=mb.topk(x=x, k=2, axis=-1, ascending=False)[0], name="topk"),
                mb.band_part(x=x, lower=1, upper=0, name="band"),
                mb.depth_to_space(x=mb.tile(x=x, reps=[1, 3, 1, 1]), block_size=3, name="d2s"),
                mb.space_to_depth(x=mb.slice_by_size(x=x, begin=[0, 0, 0, 0], size=[-1, -1, 4, 4]), block_size=2, name="s2d"),
                mb.pixel_shuffle(x=mb.tile(x=x, reps=[1, 4, 1, 1]), upscale_factor=2, name="pshuffle"),
                mb.reverse(x=x, axes=[1, -1], name="reverse"),
                mb.cast(x=mb.argsort(x=x, axis=2, ascending=True), dtype="fp32", name="argsort"),
                mb.one_hot(indices=idx, one_hot_vector_size=4, axis=1, on_value=2.0, off_value=-1.0, name="one_hot"),
                mb.flatten2d(x=x, axis=2, name="flatten"),
                mb.exp2(x=x, name="exp2"), mb.threshold(x=x, alpha=0.2, name="threshold"),
                mb.thresholded_relu(x=x, alpha=0.3, name="trelu"), mb.scaled_tanh(x=x, alpha=1.5, beta=0.7, name="stanh"))

    def pad(a, p, **kw):
        return np.pad(a, [(0, 0)] * (a.ndim - len(p) // 2) + [(p[2 * i], p[2 * i + 1]) for i in range(len(p) // 2)], **kw)

    def d2s_dcr(a, b):
        n, c, h, w = a.shape
        return a.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2).reshape(n, c // (b * b), h * b, w * b)

    def d2s_crd(a, b):
        n, c, h, w = a.shape
        return a.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3).reshape(n, c // (b * b), h * b, w * b)

    def s2d(a, b):
        n, c, h, w = a.shape
        return a.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4).reshape(n, c * b * b, h // b, w // b)

    band = x * (np.tril(np.ones((4, 5))) * np.triu(np.ones((4, 5)), -1))
    outs = {"reshape": x.reshape(6, -1), "transpose": x.transpose(0, 2, 3, 1), "concat": np.concatenate([x[:, 1:], x[:, :1]], 1),
            "half": x[1:], "slice": x[0:2, 1:3, ::2, 4::-2], "slice_squeeze": x[1], "slice_size": x[:, 1:3, 1:3, 0:3],
            "expand_squeeze": x[..., None], "pad_constant": pad(x, [1, 2, 0, 1], constant_values=0.5),
            "pad_reflect": pad(x, [2, 1, 1, 2], mode="reflect"), "pad_replicate": pad(x, [1, 1, 0, 0, 2, 1], mode="edge"),
            "tile": np.tile(x, (1, 2, 1, 2)), "stack": np.stack([x, x], 2), "gather": table[idx],
            "gather_axis": np.take_along_axis(x, np.tile(np.array([[[[3], [0], [1], [2]]]]), (2, 3, 1, 1)), 3),
            "gather_nd": table[[1, 7], [2, 5]], "shape": np.array(x.shape, np.float32), "fill": np.full((2, 3), 1.5),
            "range": np.arange(1, 7, 2).astype(np.float32), "topk": -np.sort(-x, -1)[..., :2], "band": band,
            "d2s": d2s_dcr(np.tile(x, (1, 3, 1, 1)), 3), "s2d": s2d(x[:, :, :4, :4], 2), "pshuffle": d2s_crd(np.tile(x, (1, 4, 1, 1)), 2),
            "reverse": x[:, ::-1, :, ::-1], "argsort": np.argsort(x, axis=2, kind="stable").astype(np.float32),
            "one_hot": np.where(np.arange(4).reshape(1, 4, 1) == np.clip(idx, 0, 9)[:, None, :], 2.0, -1.0),
            "flatten": x.reshape(6, 20), "exp2": 2.0 ** x, "threshold": np.maximum(x, 0.2), "trelu": np.where(x > 0.3, x, 0),
            "stanh": 1.5 * np.tanh(0.7 * x)}
    model = convert(prog, T17)
    record("shapes", model, {"x": x, "idx": idx}, {k: np.asarray(v, np.float32) for k, v in outs.items()}, ops=program_ops(model))


def make_transformer(record, program_ops, convert, rand):
    d, heads = 16, 2
    w = {k: rand(d, d, scale=0.25) for k in ["wq", "wk", "wv", "wo"]}
    g, b = rand(d, scale=0.1) + 1, rand(d, scale=0.1)
    x = rand(1, 6, d)

    def build(target):
        @mb.program(input_specs=[mb.TensorSpec(shape=(1, 6, d))], opset_version=target)
        def prog(x):
            h = mb.layer_norm(x=x, axes=[-1], gamma=g, beta=b, epsilon=1e-5, name="ln")
            q, k, v = (mb.linear(x=h, weight=mb.const(val=w[n], name=n), name=n + "_out") for n in ["wq", "wk", "wv"])
            split = lambda t, n: mb.transpose(x=mb.reshape(x=t, shape=[1, 6, heads, d // heads]), perm=[0, 2, 1, 3], name=n)  # noqa: E731
            qh, kh, vh = split(q, "qh"), split(k, "kh"), split(v, "vh")
            s = mb.mul(x=mb.matmul(x=qh, y=kh, transpose_y=True), y=np.float32(1 / np.sqrt(d // heads)), name="scores")
            a = mb.matmul(x=mb.softmax(x=s, axis=-1), y=vh, name="attn")
            a = mb.reshape(x=mb.transpose(x=a, perm=[0, 2, 1, 3]), shape=[1, 6, d], name="merged")
            o = mb.add(x=x, y=mb.matmul(x=a, y=mb.const(val=w["wo"].T.copy(), name="wo_t")), name="residual")
            ln2 = mb.layer_norm(x=o, axes=[1, 2], epsilon=1e-5, name="ln_all")
            return mb.gelu(x=o, mode="TANH_APPROXIMATION", name="out"), ln2
        return prog

    h = ref.layer_norm(x, [-1], g, b, 1e-5)
    q, k, v = (h @ w[n].T for n in ["wq", "wk", "wv"])
    sp = lambda t: t.reshape(1, 6, heads, d // heads).transpose(0, 2, 1, 3)  # noqa: E731
    s = sp(q) @ sp(k).transpose(0, 1, 3, 2) / np.sqrt(d // heads)
    a = (ref.softmax(s, -1) @ sp(v)).transpose(0, 2, 1, 3).reshape(1, 6, d)
    o = x + a @ w["wo"].T
    gelu = 0.5 * o * (1 + np.tanh(np.sqrt(2 / np.pi) * (o + 0.044715 * o ** 3)))
    outs = {"out": gelu.astype(np.float32), "ln_all": ref.layer_norm(o, [1, 2], None, None, 1e-5)}
    model = convert(build(T17), T17)
    record("transformer", model, {"x": x}, outs, ops=program_ops(model))
    # iOS 18's fused attention, with a bool (causal) mask and a float mask.
    causal = np.tril(np.ones((6, 6), bool))
    bias = rand(6, 6, scale=0.5)

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 2, 6, 8)) for _ in range(3)], opset_version=T18)
    def sdpa(q, k, v):
        return (mb.scaled_dot_product_attention(query=q, key=k, value=v, attn_mask=causal, name="causal"),
                mb.scaled_dot_product_attention(query=q, key=k, value=v, attn_mask=bias, name="biased"),
                mb.scaled_dot_product_attention(query=q, key=k, value=v, name="plain"))
    qkv = {n: rand(1, 2, 6, 8) for n in ["q", "k", "v"]}
    logits = qkv["q"] @ qkv["k"].transpose(0, 1, 3, 2) / np.sqrt(8)
    attend = lambda m: ref.softmax(logits + m, -1) @ qkv["v"]  # noqa: E731
    model = convert(sdpa, T18)
    record("attention", model, qkv, {"causal": attend(np.where(causal, 0, -np.inf)), "biased": attend(bias), "plain": attend(0)},
           ops=program_ops(model))
    record("transformer_fp16", convert(build(T18), T18, fp16=True), {"x": x}, outs, tolerance="fp16")


def make_recurrent(record, program_ops, convert, rand):
    s, b, i, h = 5, 2, 4, 3
    x = rand(s, b, i)
    h0, c0 = rand(b, h, scale=0.5), rand(b, h, scale=0.5)
    lw = {k: rand(*shape, scale=0.4) for k, shape in [("ih", (4 * h, i)), ("hh", (4 * h, h)), ("b", (4 * h,)),
                                                       ("ih_b", (4 * h, i)), ("hh_b", (4 * h, h)), ("b_b", (4 * h,))]}
    gw = {k: rand(*shape, scale=0.4) for k, shape in [("ih", (3 * h, i)), ("hh", (3 * h, h)), ("b", (3 * h,))]}
    rw = {k: rand(*shape, scale=0.4) for k, shape in [("ih", (h, i)), ("hh", (h, h)), ("b", (h,))]}

    @mb.program(input_specs=[mb.TensorSpec(shape=(s, b, i)), mb.TensorSpec(shape=(b, h)), mb.TensorSpec(shape=(b, h))], opset_version=T16)
    def prog(x, h0, c0):
        fwd = mb.lstm(x=x, initial_h=h0, initial_c=c0, weight_ih=lw["ih"], weight_hh=lw["hh"], bias=lw["b"],
                      direction="forward", output_sequence=True, name="lstm")
        rev = mb.lstm(x=x, initial_h=h0, initial_c=c0, weight_ih=lw["ih"], weight_hh=lw["hh"], bias=lw["b"],
                      direction="reverse", output_sequence=False, name="lstm_rev")
        h2, c2 = mb.concat(values=[h0, h0], axis=1), mb.concat(values=[c0, c0], axis=1)
        bi = mb.lstm(x=x, initial_h=h2, initial_c=c2, weight_ih=lw["ih"], weight_hh=lw["hh"], bias=lw["b"],
                     weight_ih_back=lw["ih_b"], weight_hh_back=lw["hh_b"], bias_back=lw["b_b"],
                     direction="bidirectional", output_sequence=True, name="lstm_bi")
        g = mb.gru(x=x, initial_h=h0, weight_ih=gw["ih"], weight_hh=gw["hh"], bias=gw["b"], output_sequence=True, name="gru")
        r = mb.rnn(x=x, initial_h=h0, weight_ih=rw["ih"], weight_hh=rw["hh"], bias=rw["b"], output_sequence=True, name="rnn")
        return (mb.identity(x=fwd[0], name="lstm_y"), mb.identity(x=fwd[1], name="lstm_h"), mb.identity(x=fwd[2], name="lstm_c"),
                mb.identity(x=rev[0], name="lstm_rev_y"), mb.identity(x=bi[0], name="lstm_bi_y"), mb.identity(x=bi[1], name="lstm_bi_h"),
                mb.identity(x=g[0], name="gru_y"), mb.identity(x=r[0], name="rnn_y"))

    y, hf, cf = ref.lstm(x, h0, c0, lw["ih"], lw["hh"], lw["b"])
    _, hr, _ = ref.lstm(x, h0, c0, lw["ih"], lw["hh"], lw["b"], reverse=True)
    yb, hb, _ = ref.lstm(x, h0, c0, lw["ih_b"], lw["hh_b"], lw["b_b"], reverse=True)
    outs = {"lstm_y": y, "lstm_h": hf, "lstm_c": cf, "lstm_rev_y": hr[None], "lstm_bi_y": np.concatenate([y, yb], -1),
            "lstm_bi_h": np.concatenate([hf, hb], -1), "gru_y": ref.gru(x, h0, gw["ih"], gw["hh"], gw["b"])[0],
            "rnn_y": ref.rnn(x, h0, rw["ih"], rw["hh"], rw["b"])[0]}
    model = convert(prog, T16)
    record("recurrent", model, {"x": x, "h0": h0, "c0": c0}, outs, ops=program_ops(model))


def make_spatial(record, program_ops, convert, rand):
    x = rand(1, 2, 4, 5)
    w1, b1 = rand(3, 2, 3, scale=0.4), rand(3, scale=0.1)
    w3 = rand(2, 2, 2, 2, 2, scale=0.4)
    wt, bt = rand(2, 3, 3, 3, scale=0.4), rand(3, scale=0.1)
    x1, x3 = rand(1, 2, 9), rand(1, 2, 3, 4, 4)

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 2, 4, 5)), mb.TensorSpec(shape=(1, 2, 9)), mb.TensorSpec(shape=(1, 2, 3, 4, 4))],
                opset_version=T16)
    def prog(x, x1, x3):
        return (mb.upsample_nearest_neighbor(x=x, scale_factor_height=2, scale_factor_width=3, name="up_nearest"),
                mb.upsample_bilinear(x=x, scale_factor_height=2, scale_factor_width=2, align_corners=True, name="up_align"),
                mb.upsample_bilinear(x=x, scale_factor_height=2.0, scale_factor_width=1.5, align_corners=False, name="up_half"),
                mb.resize_bilinear(x=x, target_size_height=7, target_size_width=3, sampling_mode="DEFAULT", name="resize_default"),
                mb.resize_bilinear(x=x, target_size_height=7, target_size_width=9, sampling_mode="STRICT_ALIGN_CORNERS", name="resize_align"),
                mb.resize_bilinear(x=x, target_size_height=6, target_size_width=8, sampling_mode="UNALIGN_CORNERS", name="resize_half"),
                mb.resize_nearest_neighbor(x=x, target_size_height=8, target_size_width=10, name="resize_nearest"),
                mb.conv(x=x1, weight=w1, bias=b1, strides=[2], pad_type="same_lower", name="conv1d"),
                mb.conv(x=x3, weight=w3, pad_type="valid", strides=[1, 2, 1], name="conv3d"),
                mb.conv_transpose(x=x, weight=wt, bias=bt, strides=[2, 2], pad_type="custom", pad=[1, 1, 0, 1], name="deconv"),
                mb.l2_pool(x=x, kernel_sizes=[2, 2], strides=[2, 2], pad_type="valid", name="l2pool"),
                mb.avg_pool(x=x, kernel_sizes=[3, 3], strides=[2, 2], pad_type="valid", ceil_mode=True,
                            exclude_padding_from_average=True, name="avg_ceil"),
                mb.instance_norm(x=x, gamma=np.array([1.5, 0.5], np.float32), beta=np.array([0.1, -0.2], np.float32), name="inorm"),
                mb.l2_norm(x=x, name="l2norm"),
                mb.local_response_norm(x=mb.tile(x=x, reps=[1, 3, 1, 1]), size=3, alpha=0.5, beta=0.6, k=1.5, name="lrn"))

    nearest = x.repeat(2, 2).repeat(3, 3)
    same_lower = [(t - t // 2, t // 2) for t in [max((5 - 1) * 2 + 3 - 9, 0)]]
    n_h = np.floor(np.arange(8) * 4 / 8).astype(int)
    n_w = np.floor(np.arange(10) * 5 / 10).astype(int)
    xt = np.tile(x, (1, 3, 1, 1))
    sq = np.pad(xt * xt, [(0, 0), (1, 1), (0, 0), (0, 0)])
    lrn = xt / (1.5 + 0.5 / 3 * (sq[:, :-2] + sq[:, 1:-1] + sq[:, 2:])) ** 0.6
    m = x.mean((2, 3), keepdims=True)
    v = ((x - m) ** 2).mean((2, 3), keepdims=True)
    inorm = (x - m) / np.sqrt(v + 1e-5) * np.array([1.5, 0.5]).reshape(1, 2, 1, 1) + np.array([0.1, -0.2]).reshape(1, 2, 1, 1)
    outs = {"up_nearest": nearest, "up_align": ref.bilinear(x, 8, 10, ref.align_corners), "up_half": ref.bilinear(x, 8, 7, ref.half_pixel),
            "resize_default": ref.bilinear(x, 7, 3, ref.asymmetric), "resize_align": ref.bilinear(x, 7, 9, ref.align_corners),
            "resize_half": ref.bilinear(x, 6, 8, ref.half_pixel), "resize_nearest": x[:, :, n_h][:, :, :, n_w],
            "conv1d": ref.conv(x1, w1, b1, strides=[2], pads=same_lower), "conv3d": ref.conv(x3, w3, None, strides=[1, 2, 1]),
            "deconv": ref.conv_transpose(x, wt, bt, [2, 2], [(1, 1), (0, 1)], [(4 - 1) * 2 + 3 - 2, (5 - 1) * 2 + 3 - 1]),
            "l2pool": ref.l2_pool(x, [2, 2], [2, 2], [(0, 0), (0, 0)]),
            "avg_ceil": ref.avg_pool(x, [3, 3], [2, 2], [(0, 1), (0, 0)], exclude_padding=True),
            "inorm": inorm, "l2norm": x / np.sqrt((x * x).sum() + 1e-6), "lrn": lrn}
    model = convert(prog, T16)
    record("spatial", model, {"x": x, "x1": x1, "x3": x3}, {k: np.asarray(o, np.float32) for k, o in outs.items()}, ops=program_ops(model))


def make_image_input(record, program_ops, convert, rand):
    """A BGR image input: coremltools puts the scale and per-channel bias into the program; the input is raw pixels."""
    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 3, 4, 4))], opset_version=T16)
    def prog(x):
        return mb.reduce_mean(x=x, axes=[2, 3], name="y")
    bias = [-0.5, -0.25, 0.0]
    model = ct.convert(prog, convert_to="mlprogram", minimum_deployment_target=T16,
                       inputs=[ct.ImageType(name="x", shape=(1, 3, 4, 4), scale=1 / 255.0, bias=bias, color_layout=ct.colorlayout.BGR)])
    x = np.floor(np.abs(rand(1, 3, 4, 4)) * 80).astype(np.float32)
    y = (x * np.float32(1 / 255.0) + np.array(bias, np.float32).reshape(1, 3, 1, 1)).mean(axis=(2, 3))
    record("image_input", model, {"x": x}, {"y": y}, ops=program_ops(model), image="BGR")


def make_all(record, program_ops, convert, rand):
    for make in [make_elementwise, make_shapes, make_transformer, make_recurrent, make_spatial, make_image_input]:
        make(record, program_ops, convert, rand)


def make_blobs(out):
    """blobs.bin written by coremltools' own _BlobStorageWriter, with blobs.json: each blob's offset, type and values."""
    from coremltools import libmilstoragepython as storage
    rng = np.random.default_rng(7)
    blobs = [("float32", "write_float_data", rng.standard_normal(7).astype(np.float32)),
             ("float16", "write_fp16_data", rng.standard_normal(5).astype(np.float16)),
             ("int8", "write_int8_data", rng.integers(-128, 128, 9).astype(np.int8)),
             ("uint8", "write_uint8_data", rng.integers(0, 256, 3).astype(np.uint8)),
             ("int4", "write_int4_data", rng.integers(-8, 8, 11).astype(np.int8)),
             ("uint1", "write_uint1_data", rng.integers(0, 2, 13).astype(np.uint8)),
             ("uint2", "write_uint2_data", rng.integers(0, 4, 6).astype(np.uint8)),
             ("uint3", "write_uint3_data", rng.integers(0, 8, 7).astype(np.uint8)),
             ("uint4", "write_uint4_data", rng.integers(0, 16, 5).astype(np.uint8)),
             ("uint6", "write_uint6_data", rng.integers(0, 64, 9).astype(np.uint8)),
             ("int32", "write_int32_data", rng.integers(-1000, 1000, 4).astype(np.int32))]
    path = os.path.join(out, "blobs.bin")
    if os.path.exists(path):
        os.remove(path)
    writer = storage._BlobStorageWriter(path)
    entries = []
    for dtype, method, values in blobs:
        data = values.view(np.uint16) if dtype == "float16" else values
        offset = getattr(writer, method)(data)
        shown = [float(v) for v in values] if dtype.startswith("float") else [int(v) for v in values]
        entries.append({"type": dtype, "offset": int(offset), "values": shown})
    del writer
    with open(os.path.join(out, "blobs.json"), "w") as f:
        json.dump({"file": "blobs.bin", "blobs": entries}, f, indent=1)
        f.write("\n")
    return "blobs.json"
