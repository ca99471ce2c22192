"""numpy references for ML Program fixtures (make_mlprogram_fixtures.py), written from
coremltools 9.0's op documentation (converters/mil/mil/ops/defs). Channel-first tensors."""
import itertools

import numpy as np


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def same_pads(size, kernel, strides, dilations):
    """pad_type "same": total = max((ceil(n / s) − 1)·s + (k − 1)·d + 1 − n, 0), the extra one at the end."""
    pads = []
    for n, k, s, d in zip(size, kernel, strides, dilations):
        total = max((-(-n // s) - 1) * s + (k - 1) * d + 1 - n, 0)
        pads.append((total // 2, total - total // 2))
    return pads


def conv(x, w, b, strides=None, pads=None, dilations=None, groups=1):
    """N-d convolution: x [N, C, *S], w [O, C / groups, *K]."""
    nd = w.ndim - 2
    strides = strides or [1] * nd
    dilations = dilations or [1] * nd
    pads = pads or [(0, 0)] * nd
    xp = np.pad(x, [(0, 0), (0, 0)] + list(pads))
    k = w.shape[2:]
    out_size = [(xp.shape[2 + i] - (k[i] - 1) * dilations[i] - 1) // strides[i] + 1 for i in range(nd)]
    o, cg = w.shape[0], w.shape[1]
    og = o // groups
    y = np.zeros((x.shape[0], o, *out_size), np.float64)
    for off in itertools.product(*[range(n) for n in k]):
        sl = tuple(slice(off[i] * dilations[i], off[i] * dilations[i] + (out_size[i] - 1) * strides[i] + 1, strides[i]) for i in range(nd))
        patch = xp[(slice(None), slice(None)) + sl]
        for g in range(groups):
            wg = w[(slice(g * og, (g + 1) * og), slice(None)) + off]
            y[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", patch[:, g * cg:(g + 1) * cg], wg)
    if b is not None:
        y += b.reshape((1, -1) + (1,) * nd)
    return y.astype(np.float32)


def conv_transpose(x, w, b, strides, pads, output_size):
    """x [N, Cin, *S], w [Cin, Cout, *K] (groups 1): scatter each input into the output, then crop the padding."""
    nd = w.ndim - 2
    k = w.shape[2:]
    full = [(x.shape[2 + i] - 1) * strides[i] + k[i] for i in range(nd)]
    y = np.zeros((x.shape[0], w.shape[1], *[max(f, pads[i][0] + output_size[i]) for i, f in enumerate(full)]), np.float64)
    for off in itertools.product(*[range(n) for n in k]):
        sl = tuple(slice(off[i], off[i] + (x.shape[2 + i] - 1) * strides[i] + 1, strides[i]) for i in range(nd))
        y[(slice(None), slice(None)) + sl] += np.einsum("nc...,co->no...", x, w[(slice(None), slice(None)) + off])
    crop = tuple(slice(pads[i][0], pads[i][0] + output_size[i]) for i in range(nd))
    y = y[(slice(None), slice(None)) + crop]
    if b is not None:
        y += b.reshape((1, -1) + (1,) * nd)
    return y.astype(np.float32)


def _windows(x, kernel, strides, pads, fill):
    nd = len(kernel)
    xp = np.pad(x, [(0, 0), (0, 0)] + list(pads), constant_values=fill)
    valid = np.pad(np.ones(x.shape[2:]), list(pads))
    out_size = [(xp.shape[2 + i] - kernel[i]) // strides[i] + 1 for i in range(nd)]
    for off in itertools.product(*[range(n) for n in kernel]):
        sl = tuple(slice(off[i], off[i] + (out_size[i] - 1) * strides[i] + 1, strides[i]) for i in range(nd))
        yield xp[(slice(None), slice(None)) + sl], valid[sl]


def max_pool(x, kernel, strides, pads):
    return np.max(np.stack([p for p, _ in _windows(x, kernel, strides, pads, -np.inf)]), axis=0)


def avg_pool(x, kernel, strides, pads, exclude_padding):
    parts = list(_windows(x, kernel, strides, pads, 0))
    total = np.sum([p for p, _ in parts], axis=0)
    count = np.sum([v for _, v in parts], axis=0) if exclude_padding else np.prod(kernel)
    return (total / count).astype(np.float32)


def l2_pool(x, kernel, strides, pads):
    return np.sqrt(np.sum([p * p for p, _ in _windows(x, kernel, strides, pads, 0)], axis=0)).astype(np.float32)


def bilinear(x, out_h, out_w, coordinate):
    """Resize the last two axes; coordinate(dst, n_in, n_out) gives the source coordinate (clamped here)."""
    def axis_weights(n_in, n_out):
        src = np.clip(np.array([coordinate(d, n_in, n_out) for d in range(n_out)], np.float64), 0, n_in - 1)
        lo = np.floor(src).astype(int)
        hi = np.minimum(lo + 1, n_in - 1)
        return lo, hi, src - lo
    lo_h, hi_h, fh = axis_weights(x.shape[-2], out_h)
    lo_w, hi_w, fw = axis_weights(x.shape[-1], out_w)
    top = x[..., lo_h, :] * (1 - fh)[:, None] + x[..., hi_h, :] * fh[:, None]
    return (top[..., lo_w] * (1 - fw) + top[..., hi_w] * fw).astype(np.float32)


def align_corners(d, n_in, n_out):
    return d * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0


def half_pixel(d, n_in, n_out):
    return (d + 0.5) * n_in / n_out - 0.5


def asymmetric(d, n_in, n_out):
    return d * n_in / n_out


def lstm(x, h0, c0, w_ih, w_hh, b, reverse=False):
    """MIL lstm, one direction: gates [input, forget, output, cell]; returns (outputs [s, b, H], h, c)."""
    hidden = w_hh.shape[1]
    h, c = h0.astype(np.float64), c0.astype(np.float64)
    out = np.zeros((x.shape[0], x.shape[1], hidden))
    steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    for t in steps:
        g = x[t] @ w_ih.T + h @ w_hh.T + b
        i, f, o, z = (g[:, k * hidden:(k + 1) * hidden] for k in range(4))
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(z)
        h = sigmoid(o) * np.tanh(c)
        out[t] = h
    return out.astype(np.float32), h.astype(np.float32), c.astype(np.float32)


def gru(x, h0, w_ih, w_hh, b):
    """MIL gru (iOS 15 form): weights [reset, output, update]; bias [b_r | b_o | b_z];
    o = tanh(W_io x + b_o + r · (W_ho h)); h = (1 − z) · o + z · h."""
    hidden = w_hh.shape[1]
    h = h0.astype(np.float64)
    out = np.zeros((x.shape[0], x.shape[1], hidden))
    blocks = lambda m: [m[..., k * hidden:(k + 1) * hidden] for k in range(3)]  # noqa: E731
    for t in range(x.shape[0]):
        xi = blocks(x[t] @ w_ih.T)
        hh = blocks(h @ w_hh.T)
        bb = blocks(b)
        r = sigmoid(xi[0] + hh[0] + bb[0])
        z = sigmoid(xi[2] + hh[2] + bb[2])
        o = np.tanh(xi[1] + bb[1] + r * hh[1])
        h = (1 - z) * o + z * h
        out[t] = h
    return out.astype(np.float32), h.astype(np.float32)


def rnn(x, h0, w_ih, w_hh, b):
    h = h0.astype(np.float64)
    out = np.zeros((x.shape[0], x.shape[1], w_hh.shape[0]))
    for t in range(x.shape[0]):
        h = np.tanh(x[t] @ w_ih.T + h @ w_hh.T + b)
        out[t] = h
    return out.astype(np.float32), h.astype(np.float32)


def layer_norm(x, axes, gamma, beta, eps):
    mean = x.mean(axis=tuple(axes), keepdims=True)
    var = ((x - mean) ** 2).mean(axis=tuple(axes), keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    return (y * gamma + beta if gamma is not None else y).astype(np.float32)
