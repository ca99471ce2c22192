// Resize → MIL resize_bilinear / upsample_nearest_neighbor.
import ShrinkwrapIR

extension MILOpWriters {
    /// ONNX Resize of the last two axes (both MIL ops resize `[*D, H, W]`, rank ≥ 3).
    ///
    /// Linear: `resize_bilinear` with a target size. Its `sampling_mode`
    /// grids (coremltools mil/ops/defs/iOS15/image_resizing.py, 1-D, input
    /// size Xin, output Xout, point clamped to [0, Xin − 1]):
    ///   UNALIGN_CORNERS       i · Xin/Xout + 0.5 · Xin/Xout − 0.5  = ONNX half_pixel
    ///                         (and pytorch_half_pixel unless Xout = 1)
    ///   STRICT_ALIGN_CORNERS  i · (Xin − 1)/(Xout − 1)              = ONNX align_corners (Xout > 1)
    ///   DEFAULT               i · (Xin − Xin/Xout)/(Xout − 1) = i · Xin/Xout = ONNX asymmetric (Xout > 1)
    /// ONNX computes these with its scale; the grids use Xin/Xout, so a given
    /// scale must be Xout/Xin.
    ///
    /// Nearest: `upsample_nearest_neighbor` by whole factors s reads input
    /// ⌊i / s⌋ (what NeuralNetwork's upsample does too): ONNX asymmetric or
    /// tf_half_pixel_for_nn with floor rounding, or half-pixel coordinates with
    /// rounding (ties cannot occur for whole factors). Nearest resizes by other
    /// factors were rewritten into Gathers by `resizeNearestAsGather`.
    static let resize: Writer = { w, n in
        let x = try input(n, 0)
        let xs = try w.shape(x), ys = try w.shape(n.outputs[0])
        guard xs.count == ys.count, xs.count >= 3 else { throw MILWriterError("resizing a rank-\(xs.count) value (MIL resizes [*D, H, W], rank ≥ 3)") }
        guard xs.dropLast(2) == ys.dropLast(2) else { throw MILWriterError("resizing axes other than the last two (\(xs) → \(ys))") }
        guard xs.allSatisfy({ $0 > 0 }), ys.allSatisfy({ $0 > 0 }) else { throw MILWriterError("an empty value (\(xs) → \(ys))") }
        guard try [.float32, .float16].contains(w.computeType(x).dataType) else { throw MILWriterError("an integer input (MIL resizes floats)") }
        guard n.string("keep_aspect_ratio_policy", "stretch") == "stretch" else {
            throw MILWriterError("keep_aspect_ratio_policy '\(n.string("keep_aspect_ratio_policy", "stretch"))'")
        }
        let scales = try resizeScales(w, n, rank: xs.count)
        let rank = xs.count
        for a in 0..<rank {
            guard let s = scales?[a] else { continue }
            let exact = Double(ys[a]) / Double(xs[a])
            guard abs(s - exact) <= 1e-6 * exact else {
                throw MILWriterError("scale \(s) on axis \(a) is not \(ys[a])/\(xs[a]) (MIL samples with the size ratio)")
            }
        }
        if xs == ys {
            try w.emit(n, "identity", [("x", .value(try w.value(x)))])
            return
        }
        let ctm = n.string("coordinate_transformation_mode", "half_pixel")
        let xv = try w.value(x)
        switch n.string("mode", "nearest") {
        case "linear":
            let shrinks = zip(xs, ys).contains { $0.1 < $0.0 }
            if n.int("antialias", 0) != 0 && shrinks { throw MILWriterError("antialiased downsampling") }
            let mode = try bilinearSamplingMode(ctm, inSize: Array(xs.suffix(2)), outSize: Array(ys.suffix(2)))
            try w.emit(n, "resize_bilinear", [("x", .value(xv)),
                                              ("target_size_height", .value(w.int(n, "target_size_height", ys[rank - 2]))),
                                              ("target_size_width", .value(w.int(n, "target_size_width", ys[rank - 1]))),
                                              ("sampling_mode", .value(w.string(n, "sampling_mode", mode)))])
        case "nearest":
            let factors = zip(xs.suffix(2), ys.suffix(2)).map { $0.1 / $0.0 }
            guard zip(xs.suffix(2), ys.suffix(2)).allSatisfy({ $0.1 % $0.0 == 0 }) else {
                throw MILWriterError("nearest resizing by a non-integer factor (\(xs) → \(ys))")
            }
            guard n.nearestResizeFloorsQuotient else {
                let nm = n.string("nearest_mode", "round_prefer_floor")
                throw MILWriterError("nearest resizing with \(ctm) coordinates and \(nm) rounding (MIL's upsampling reads ⌊i / factor⌋)")
            }
            try w.emit(n, "upsample_nearest_neighbor", [("x", .value(xv)),
                                                        ("scale_factor_height", .value(w.int(n, "scale_factor_height", factors[0]))),
                                                        ("scale_factor_width", .value(w.int(n, "scale_factor_width", factors[1])))])
        case let m:
            throw MILWriterError("\(m) resizing (MIL has bilinear and nearest)")
        }
    }

    /// The scale of every axis when Resize is given scales (nil when it is
    /// given sizes); refused when they are computed at run time.
    static func resizeScales(_ w: MILWriter, _ n: Node, rank: Int) throws -> [Double]? {
        guard let s = n.input(2), !s.isEmpty else { return nil }
        guard let v = w.constFloats(s) else {
            if let c = w.graph.constant(named: s), c.encoding.shape.reduce(1, *) == 0 { return nil }
            throw MILWriterError("scales that are not constants")
        }
        if v.isEmpty { return nil }
        let axes = try (n.ints("axes") ?? Array(0..<rank)).map { try normalize($0, rank: rank) }
        guard v.count == axes.count else { throw MILWriterError("\(v.count) scales for \(axes.count) axes") }
        var out = [Double](repeating: 1, count: rank)
        for (k, a) in axes.enumerated() { out[a] = Double(v[k]) }
        return out
    }

    /// `resize_bilinear`'s sampling_mode for an ONNX coordinate transformation (see `resize`).
    static func bilinearSamplingMode(_ ctm: String, inSize: [Int], outSize: [Int]) throws -> String {
        let pairs = zip(inSize, outSize)
        switch ctm {
        case "half_pixel":
            return "UNALIGN_CORNERS"
        case "pytorch_half_pixel":
            // ONNX samples −0.5 (clamped to 0) for an output of size 1; UNALIGN_CORNERS samples (Xin − 1) / 2.
            guard pairs.allSatisfy({ $0.1 > 1 || $0.0 == 1 }) else { throw MILWriterError("pytorch_half_pixel to an axis of size 1") }
            return "UNALIGN_CORNERS"
        case "align_corners", "asymmetric":
            // Both grids divide by Xout − 1: an output axis of size 1 has no defined grid.
            guard pairs.allSatisfy({ $0.1 > 1 }) else { throw MILWriterError("\(ctm) coordinates with an axis of output size 1") }
            return ctm == "align_corners" ? "STRICT_ALIGN_CORNERS" : "DEFAULT"
        default:
            throw MILWriterError("bilinear resizing with \(ctm) coordinates")
        }
    }
}
