"""Map an ML Program's float constants back onto the Keras weights they came from.

Used by Scripts/make_keras_mlprogram.py to build the reference of an fp16 or
compressed .mlpackage: Keras run on the weights coremltools decodes from that
package (coremltools.optimize.coreml.decompress_weights), not on its own float
weights.

ct.convert renames and reshapes weights (a Conv2D kernel HWIO becomes the
conv's OIHW const called e.g. "transpose_3"; a Dense kernel a linear weight
[out, in] or a matmul operand [in, out]; a BatchNormalization after a
convolution is folded into the convolution's weight and bias). Names are not
a reliable key, so the constants of an uncompressed program (float32 or
float16) are matched by value: every float const of two or more elements is
compared with every candidate, a Keras weight in any axis order with the
const's shape, and the candidate with the smallest relative error
||const - candidate|| / ||candidate|| wins if that error is below MATCH_LIMIT
(float16 rounding is ~3e-4) and the runner-up's is RUNNER_UP times larger.
A compressed program made from it keeps the const names with a suffix
("transpose_3" -> "transpose_3_palettized", "..._to_fp16_quantized"), so its
decompressed consts inherit the match of the longest base name that is a
prefix followed by "_" (same shape), and the error of the inherited match
must stay below TRANSFER_LIMIT (2-bit per-tensor k-means of a normal weight
is ~0.34). Candidates are every Keras
weight as is (rows of 2-D biases too: GRU's [2, 3 * units] bias becomes two
consts) and, for a Conv2D / DepthwiseConv2D / Dense whose only consumer is a
BatchNormalization, the folded pair
    W' = W * s,  b' = (b - mean) * s + beta,  s = gamma / sqrt(var + eps)
per output channel (in float64).

Applying a match writes the const's values, axes put back in Keras order,
into a copy of the model. A folded pair is written as the convolution's kernel
(its bias, if any, set to 0) and a BatchNormalization that only adds b':
gamma 1, mean 0, beta b' and a variance v with float32(v + eps) == 1, so
Keras' inference formula x * rsqrt(v + eps) * gamma + beta - mean * ... is
x + b' exactly.
"""
import itertools

import numpy as np
import tensorflow as tf

MATCH_LIMIT = 1e-2
RUNNER_UP = 10.0
TRANSFER_LIMIT = 0.6

L = tf.keras.layers
FOLDABLE = (L.Conv2D, L.DepthwiseConv2D, L.Dense)


def _inbound(layer):
    nodes = layer._inbound_nodes  # noqa: SLF001 - Keras 2.12 has no public accessor
    if len(nodes) != 1:
        return []
    inb = nodes[0].inbound_layers
    return inb if isinstance(inb, list) else [inb]


def folded_pairs(model):
    """{conv layer name: BatchNormalization layer} for BNs that only follow one foldable layer."""
    pairs = {}
    for layer in model.layers:
        if not isinstance(layer, L.BatchNormalization):
            continue
        src = _inbound(layer)
        if len(src) == 1 and isinstance(src[0], FOLDABLE) and len(src[0]._outbound_nodes) == 1:  # noqa: SLF001
            pairs[src[0].name] = layer
    return pairs


def _bn_scale(bn):
    gamma, beta, mean, var = (np.asarray(w, np.float64) for w in bn.get_weights())
    return gamma / np.sqrt(var + bn.epsilon), beta, mean


def _fold(layer, bn):
    """(W', b') of `layer` followed by `bn`, in Keras layout, float64."""
    ws = layer.get_weights()
    w = np.asarray(ws[0], np.float64)
    b = np.asarray(ws[1], np.float64) if len(ws) > 1 else 0.0
    s, beta, mean = _bn_scale(bn)
    w_folded = (w.reshape(w.shape[:-2] + (-1,)) * s).reshape(w.shape) \
        if isinstance(layer, L.DepthwiseConv2D) else w * s
    return w_folded, (b - mean) * s + beta


def candidates(model):
    """[(key, array float64 in Keras layout)]; key = ("plain", layer, index, row) or ("fold_w"/"fold_b", layer)."""
    out = []
    pairs = folded_pairs(model)
    for layer in model.layers:
        for i, w in enumerate(layer.get_weights()):
            w = np.asarray(w, np.float64)
            if w.size < 2 or not np.issubdtype(w.dtype, np.floating):
                continue
            out.append((("plain", layer.name, i, None), w))
            if w.ndim == 2 and w.shape[0] <= 4:
                out += [(("plain", layer.name, i, r), w[r]) for r in range(w.shape[0])]
        if layer.name in pairs:
            w_f, b_f = _fold(layer, pairs[layer.name])
            out += [(("fold_w", layer.name), w_f), (("fold_b", layer.name), np.broadcast_to(b_f, w_f.shape[-1:]).copy()
                                                     if np.ndim(b_f) == 0 else b_f)]
    return out


def _perms(cand_shape, const_shape):
    if len(cand_shape) != len(const_shape):
        if int(np.prod(cand_shape)) == int(np.prod(const_shape)) and 1 in const_shape + cand_shape:
            yield None  # a reshape that only adds or drops unit axes
        return
    for p in itertools.permutations(range(len(cand_shape))):
        if tuple(cand_shape[a] for a in p) == tuple(const_shape):
            yield p


def _error(const, cand):
    scale = np.linalg.norm(cand)
    return np.linalg.norm(const - cand) / scale if scale > 0 else np.inf


def match(consts, model):
    """({const name: (key, perm)}, [unmatched const names]) for consts = {name: array}."""
    cands = candidates(model)
    found, unmatched = {}, []
    for name, value in consts.items():
        c = np.asarray(value, np.float64)
        if c.size < 2:
            continue
        scored = []
        for key, arr in cands:
            if arr.size != c.size:
                continue
            for p in _perms(arr.shape, c.shape):
                moved = arr.reshape(c.shape) if p is None else np.transpose(arr, p)
                scored.append((_error(c, moved), key, p))
        scored.sort(key=lambda t: t[0])
        if scored and scored[0][0] < MATCH_LIMIT and (len(scored) == 1 or scored[1][0] > RUNNER_UP * scored[0][0]
                                                      or scored[1][1] == scored[0][1]):
            found[name] = (scored[0][1], scored[0][2])
        else:
            unmatched.append(name)
    used = {}
    for name, (key, perm) in found.items():  # an unrolled loop repeats a weight: same values only
        prev = used.get(key)
        if prev is not None and not (prev[1] == perm and np.array_equal(consts[prev[0]], consts[name])):
            raise AssertionError(f"consts {used[key][0]} and {name} both match Keras weight {key}")
        used.setdefault(key, (name, perm))
    return found, unmatched


def transfer(base_found, base_consts, consts, model):
    """({name: (key, perm)}, worst error) for a compressed program's decompressed consts,
    inherited by name from the match of the program it was made from."""
    cands = dict(candidates(model))
    found, worst = {}, 0.0
    for name, value in consts.items():
        if name in base_found:
            base = name
        else:
            prefixes = [b for b in base_found if name.startswith(b + "_")
                        and np.shape(base_consts[b]) == np.shape(value)]
            if not prefixes:
                continue
            base = max(prefixes, key=len)
        key, perm = base_found[base]
        arr = cands[key]
        moved = arr.reshape(np.shape(value)) if perm is None else np.transpose(arr, perm)
        err = _error(np.asarray(value, np.float64), moved)
        if err >= TRANSFER_LIMIT:
            raise AssertionError(f"{name}: inherited match {key} of {base} has error {err:.3g}")
        for other, (k2, p2) in found.items():
            if k2 == key and not (p2 == perm and np.array_equal(consts[other], value)):
                raise AssertionError(f"{other} and {name} hold different values of Keras weight {key}")
        found[name] = (key, perm)
        worst = max(worst, err)
    return found, worst


def _to_keras(value, perm, shape):
    v = np.asarray(value, np.float32)
    if perm is None:
        return v.reshape(shape)
    return np.transpose(v, np.argsort(perm))


def _identity_variance(eps):
    v = np.float32(1) - np.float32(eps)
    while np.float32(v + np.float32(eps)) > 1:
        v = np.nextafter(v, np.float32(0))
    while np.float32(v + np.float32(eps)) < 1:
        v = np.nextafter(v, np.float32(2))
    return v


def apply(model, consts, found):
    """A copy of `model` whose matched weights are the consts' values."""
    ref = tf.keras.models.clone_model(model)
    ref.set_weights(model.get_weights())
    weights = {layer.name: [np.array(w) for w in layer.get_weights()] for layer in ref.layers}
    pairs = folded_pairs(model)
    folded_w = {key[1] for key, _ in found.values() if key[0] == "fold_w"}
    folded_b = {key[1] for key, _ in found.values() if key[0] == "fold_b"}
    if folded_w != folded_b:
        raise AssertionError(f"folded kernels without bias or the reverse: {sorted(folded_w ^ folded_b)}")
    for name, (key, perm) in found.items():
        kind, lname = key[0], key[1]
        if kind == "plain":
            idx, row = key[2], key[3]
            target = weights[lname][idx]
            if row is None:
                weights[lname][idx] = _to_keras(consts[name], perm, target.shape)
            else:
                target[row] = _to_keras(consts[name], perm, target[row].shape)
        elif kind == "fold_w":
            weights[lname][0] = _to_keras(consts[name], perm, weights[lname][0].shape)
            if len(weights[lname]) > 1:
                weights[lname][1] = np.zeros_like(weights[lname][1])
        else:  # fold_b
            bn = pairs[lname]
            n = weights[bn.name][0].shape
            weights[bn.name] = [np.ones(n, np.float32), _to_keras(consts[name], perm, n),
                                np.zeros(n, np.float32), np.full(n, _identity_variance(bn.epsilon), np.float32)]
    for layer in ref.layers:
        if layer.get_weights():
            layer.set_weights(weights[layer.name])
    return ref
