import Foundation
import ShrinkwrapIR

/// BatchNormalization, LayerNormalization and the Normalization preprocessing layer.
extension KerasLayers {
    static let normalization: [String: Translator] = [
        "BatchNormalization": batchNorm,
        "LayerNormalization": layerNorm,
        "Normalization": { c, call in
            let x = try call.input(c.file)
            let (mean, variance) = try normalizationStatistics(&c, call, x)
            // Keras: (x − mean) / max(√variance, ε) with the backend's ε = 1e-7; `invert` undoes it.
            let std = variance.map { max(Float(Foundation.sqrt(Double($0))), 1e-7) }
            let axis = try KerasLayers.axis(c, call, call.config["axis"], default: -1, rank: x.rank)
            let bshape = (0..<x.rank).map { $0 == axis ? mean.count : 1 }.dropFirst()
            let m = c.constant(call.outputName + "/mean", Tensor(mean, shape: Array(bshape)))
            let s = c.constant(call.outputName + "/std", Tensor(std, shape: Array(bshape)))
            if call.config["invert"]?.bool == true {
                let scaled = c.emit("Mul", [x.name, s], out: call.outputName + "/scaled")
                return [KValue(name: c.emit("Add", [scaled, m], out: call.outputName), shape: x.shape)]
            }
            let centred = c.emit("Sub", [x.name, m], out: call.outputName + "/centred")
            return [KValue(name: c.emit("Div", [centred, s], out: call.outputName), shape: x.shape)]
        },
    ]

    /// BatchNormalization: weights gamma (if scale), beta (if center), moving mean, moving variance.
    /// On the channel axis 1 directly; on the last axis of a rank ≥ 3 value through Transposes
    /// (which cancel against a convolution's), of a rank-2 value it is axis 1 already.
    static func batchNorm(_ c: inout KerasContext, _ call: KerasCall) throws -> [KValue] {
        let x = try call.input(c.file)
        let axis = try KerasLayers.axis(c, call, call.config["axis"], default: -1, rank: x.rank)
        let scale = call.config["scale"]?.bool ?? true, center = call.config["center"]?.bool ?? true
        let w = try c.layerWeights(call, counts: [2 + (scale ? 1 : 0) + (center ? 1 : 0)])
        let n = w[w.count - 1].count
        guard w.allSatisfy({ $0.shape == [n] }), x.shape[axis] == nil || x.shape[axis] == n else {
            throw c.malformed(call, "statistics \(w.map(\.shape)) for axis \(axis) of an input of shape \(describe(x.shape))")
        }
        let eps = Float(call.config["epsilon"]?.number ?? 1e-3)
        var k = 0
        let gamma = scale ? c.weightConstant(call, "gamma") { w[0] } : c.constant(call.outputName + "/gamma", Tensor([Float](repeating: 1, count: n), shape: [n]))
        if scale { k += 1 }
        let betaIndex = k
        let beta = center ? c.weightConstant(call, "beta") { w[betaIndex] } : c.constant(call.outputName + "/beta", Tensor([Float](repeating: 0, count: n), shape: [n]))
        if center { k += 1 }
        let meanIndex = k
        let mean = c.weightConstant(call, "moving_mean") { w[meanIndex] }
        let variance = c.weightConstant(call, "moving_variance") { w[meanIndex + 1] }
        let attrs: [String: Attribute] = ["epsilon": .float(eps)]
        if axis == 1 {
            return [KValue(name: c.emit("BatchNormalization", [x.name, gamma, beta, mean, variance], attrs, out: call.outputName), shape: x.shape)]
        }
        guard axis == x.rank - 1 else { throw c.unsupported(call, "BatchNormalization on axis \(axis) of a rank-\(x.rank) input") }
        let y = c.emit("BatchNormalization", [c.toChannelsFirst(x), gamma, beta, mean, variance], attrs, out: call.outputName + "/nchw")
        return [KValue(name: c.toChannelsLast(y, rank: x.rank, out: call.outputName), shape: x.shape)]
    }

    /// LayerNormalization over trailing axes: weights gamma (if scale), beta (if center), shaped like those axes.
    static func layerNorm(_ c: inout KerasContext, _ call: KerasCall) throws -> [KValue] {
        let x = try call.input(c.file)
        let raw = call.config["axis"]?.ints() ?? [-1]
        let axes = try raw.map { a -> Int in
            guard a >= -x.rank, a < x.rank else { throw c.malformed(call, "axis \(a) for rank \(x.rank)") }
            return a < 0 ? a + x.rank : a
        }.sorted()
        guard let first = axes.first, axes == Array(first..<x.rank) else {
            throw c.unsupported(call, "LayerNormalization over axes \(raw) (only trailing axes)")
        }
        let dims = axes.map { x.shape[$0] }
        guard dims.allSatisfy({ $0 != nil }) else { throw c.unsupported(call, "LayerNormalization over axes of unknown size") }
        let shape = dims.compactMap { $0 }
        let scale = call.config["scale"]?.bool ?? true, center = call.config["center"]?.bool ?? true
        let w = try c.layerWeights(call, counts: [(scale ? 1 : 0) + (center ? 1 : 0)])
        let count = shape.reduce(1, *)
        guard w.allSatisfy({ $0.count == count }) else { throw c.malformed(call, "weights \(w.map(\.shape)) for normalized shape \(shape)") }
        let gamma = scale ? c.weightConstant(call, "gamma") { w[0].reshaped(shape) }
                          : c.constant(call.outputName + "/gamma", Tensor([Float](repeating: 1, count: count), shape: shape))
        let beta = center ? c.weightConstant(call, "beta") { w[w.count - 1].reshaped(shape) }
                          : c.constant(call.outputName + "/beta", Tensor([Float](repeating: 0, count: count), shape: shape))
        let eps = Float(call.config["epsilon"]?.number ?? 1e-3)
        return [KValue(name: c.emit("LayerNormalization", [x.name, gamma, beta], ["axis": .int(first), "epsilon": .float(eps)], out: call.outputName),
                       shape: x.shape)]
    }

    /// The Normalization layer's mean and variance: given in the configuration, or adapted and saved as weights (mean, variance, count).
    static func normalizationStatistics(_ c: inout KerasContext, _ call: KerasCall, _ x: KValue) throws -> ([Float], [Float]) {
        if let m = call.config["mean"], !m.isNull, let v = call.config["variance"], !v.isNull {
            guard let mean = m.numbers, let variance = v.numbers, mean.count == variance.count, !mean.isEmpty else {
                throw c.malformed(call, "mean and variance are not lists of numbers of one length")
            }
            return (mean.map(Float.init), variance.map(Float.init))
        }
        let w = try c.layerWeights(call, counts: [3])
        guard w[0].count == w[1].count, let mean = w[0].floats, let variance = w[1].floats else {
            throw c.malformed(call, "adapted statistics \(w.map(\.shape))")
        }
        return (mean, variance)
    }
}
