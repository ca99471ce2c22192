import ShrinkwrapIR

/// Neural-network kernels: convolution, pooling, linear algebra, normalization,
/// resizing and depth/space rearrangement. The functions live in extensions
/// spread over `Conv.swift`, `Pool.swift`, `Linear.swift`,
/// `Normalization.swift` and `Resize.swift`; this file holds shared helpers.
public enum NNKernels {}

extension NNKernels {
    /// Largest value accepted for a stride, dilation, pad or kernel size
    /// attribute (keeps every index computation far from overflow).
    static let attributeLimit = 1 << 24

    /// Whether kernels may take their specialised loops (Resize per plane,
    /// whole-plane pools, DepthToSpace row copies). Tests turn it off to
    /// compare them bit for bit with the general loops.
    @TaskLocal static var fastPaths = true

    /// Wraps computed float values in a tensor of `dtype`, rounding them to
    /// the dtype's precision (float16 / bfloat16 results must hold values the
    /// type can represent).
    static func floatTensor(_ values: [Float], shape: [Int], dtype: DType) -> Tensor {
        var v = values
        dtype.round(&v)
        return Tensor(dtype: dtype, shape: shape, storage: .float(v))
    }

    /// An uninitialized-then-filled float array: `body` must write all `count` elements.
    @inline(__always)
    static func makeFloats(_ count: Int, _ body: (UnsafeMutablePointer<Float>) -> Void) -> [Float] {
        if count == 0 { return [] }
        return [Float](unsafeUninitializedCapacity: count) { buf, n in
            if let base = buf.baseAddress { body(base) }
            n = count
        }
    }

    /// A scratch buffer whose contents are unspecified until written
    /// (`Float` is trivial, so no initialization is needed).
    static func uninitializedFloats(_ count: Int) -> [Float] {
        [Float](unsafeUninitializedCapacity: count) { _, n in n = count }
    }

    /// Product of `dims` (callers have checked it through `checkedCount`).
    @inline(__always)
    static func product(_ dims: ArraySlice<Int>) -> Int { dims.reduce(1, *) }

    @inline(__always)
    static func ceilDiv(_ a: Int, _ b: Int) -> Int { a >= 0 ? (a + b - 1) / b : -((-a) / b) }

    /// Python-style floor division by 2 (rounds toward −∞ for negatives).
    @inline(__always)
    static func floorHalf(_ a: Int) -> Int { a >= 0 ? a / 2 : -((-a + 1) / 2) }

    /// The run `[lo, hi)` of `i in 0..<n` for which `i * step + offset` lies
    /// in `0..<limit` (`step` ≥ 1). Used by im2col, col2im, pooling windows
    /// and depthwise convolution to avoid per-element bounds checks.
    @inline(__always)
    static func validRun(offset: Int, step: Int, limit: Int, n: Int) -> (lo: Int, hi: Int) {
        var lo = offset >= 0 ? 0 : ceilDiv(-offset, step)
        var hi = limit - offset <= 0 ? 0 : ceilDiv(limit - offset, step)
        lo = min(lo, n)
        hi = min(max(hi, lo), n)
        return (lo, hi)
    }

    /// True when output `i` of the node is requested (present and named).
    static func wantsOutput(_ c: KernelContext, _ i: Int) -> Bool {
        i < c.node.outputs.count && !c.node.outputs[i].isEmpty
    }

    /// A float input that must have at least `minRank` dimensions.
    static func floatInput(_ c: KernelContext, _ i: Int, name: String, minRank: Int = 0) throws -> (Tensor, [Float]) {
        let t = try c.input(i)
        guard let f = t.floats else { throw c.fail("\(name) (input \(i)) must be floating point, got \(t.dtype)") }
        guard t.rank >= minRank else { throw c.fail("\(name) (input \(i)) must have rank ≥ \(minRank), has shape \(t.shape)") }
        return (t, f)
    }

    /// An optional float vector input of exactly `count` elements.
    static func optionalVector(_ c: KernelContext, _ i: Int, name: String, count: Int) throws -> [Float]? {
        guard let t = c.optionalInput(i) else { return nil }
        if t.count == 0 && count != 0 && t.shape == [0] { return nil }
        guard let f = t.floats else { throw c.fail("\(name) (input \(i)) must be floating point, got \(t.dtype)") }
        guard f.count == count else { throw c.fail("\(name) (input \(i)) must have \(count) elements, has shape \(t.shape)") }
        return f
    }

    /// A required float vector input of exactly `count` elements.
    static func vector(_ c: KernelContext, _ i: Int, name: String, count: Int) throws -> [Float] {
        let t = try c.input(i)
        guard let f = t.floats else { throw c.fail("\(name) (input \(i)) must be floating point, got \(t.dtype)") }
        guard f.count == count else { throw c.fail("\(name) (input \(i)) must have \(count) elements, has shape \(t.shape)") }
        return f
    }
}

// MARK: - Sliding-window geometry (Conv, ConvTranspose, pooling)

/// Geometry of a sliding window over up to three spatial dimensions. Lower
/// spatial ranks are promoted to three by prepending unit dimensions (size
/// 1, kernel 1, stride 1, no padding), so every loop is a fixed 3-deep nest.
struct WindowGeometry {
    /// Spatial rank of the original tensor (1…3).
    var rank: Int
    var input: [Int]       // 3
    var kernel: [Int]      // 3
    var strides: [Int]     // 3
    var dilations: [Int]   // 3
    var padBegin: [Int]    // 3
    var padEnd: [Int]      // 3
    var output: [Int]      // 3

    var inputCount: Int { input[0] * input[1] * input[2] }
    var outputCount: Int { output[0] * output[1] * output[2] }
    var kernelCount: Int { kernel[0] * kernel[1] * kernel[2] }
    /// The output's spatial shape at the original rank.
    var outputSpatial: [Int] { Array(output[(3 - rank)...]) }

    /// Promotes per-dimension values of the original rank to three dims.
    static func promote(_ v: [Int], fill: Int) -> [Int] {
        [Int](repeating: fill, count: 3 - v.count) + v
    }

    /// Reads `strides`, `dilations`, `pads` and `auto_pad` and derives the
    /// output size of a forward window (Conv, pools).
    static func forward(_ c: KernelContext, inputSpatial: [Int], kernel: [Int], ceilMode: Bool,
                        useDilations: Bool = true) throws -> WindowGeometry {
        let r = inputSpatial.count
        guard r >= 1 else { throw c.fail("input must have at least one spatial dimension (shape N×C×D1×…)") }
        guard r <= 3 else { throw c.fail("\(r) spatial dimensions are not supported (at most 3)") }
        guard kernel.count == r else {
            throw c.badAttribute("kernel_shape", "has \(kernel.count) values for \(r) spatial dimensions")
        }
        let lim = NNKernels.attributeLimit
        for k in kernel where k < 1 || k > lim {
            throw c.badAttribute("kernel_shape", "kernel size \(k) out of range")
        }
        let strides = try c.ints("strides") ?? [Int](repeating: 1, count: r)
        guard strides.count == r else { throw c.badAttribute("strides", "has \(strides.count) values for \(r) spatial dimensions") }
        for s in strides where s < 1 || s > lim { throw c.badAttribute("strides", "stride \(s) out of range") }
        var dilations = [Int](repeating: 1, count: r)
        if useDilations, let d = try c.ints("dilations") {
            guard d.count == r else { throw c.badAttribute("dilations", "has \(d.count) values for \(r) spatial dimensions") }
            for v in d where v < 1 || v > lim { throw c.badAttribute("dilations", "dilation \(v) out of range") }
            dilations = d
        }
        let autoPad = try c.string("auto_pad", default: "NOTSET")
        var pb = [Int](repeating: 0, count: r), pe = pb, out = pb
        switch autoPad {
        case "NOTSET", "":
            if let p = try c.ints("pads") {
                guard p.count == 2 * r else { throw c.badAttribute("pads", "has \(p.count) values, expected \(2 * r)") }
                for v in p where v < 0 || v > lim { throw c.badAttribute("pads", "pad \(v) out of range") }
                pb = Array(p[0..<r]); pe = Array(p[r...])
            }
            for i in 0..<r {
                let ek = (kernel[i] - 1) * dilations[i] + 1
                let span = inputSpatial[i] + pb[i] + pe[i] - ek
                guard span >= 0 else {
                    throw c.fail("window \(ek) (kernel \(kernel[i]), dilation \(dilations[i])) is larger than padded input \(inputSpatial[i] + pb[i] + pe[i]) along spatial axis \(i)")
                }
                if ceilMode {
                    var o = NNKernels.ceilDiv(span, strides[i]) + 1
                    // The last window must start inside the input or the left padding.
                    if (o - 1) * strides[i] >= inputSpatial[i] + pb[i] { o -= 1 }
                    out[i] = o
                } else {
                    out[i] = span / strides[i] + 1
                }
            }
        case "VALID":
            for i in 0..<r {
                let ek = (kernel[i] - 1) * dilations[i] + 1
                let span = inputSpatial[i] - ek
                guard span >= 0 else {
                    throw c.fail("window \(ek) is larger than the input \(inputSpatial[i]) along spatial axis \(i) (auto_pad VALID)")
                }
                out[i] = span / strides[i] + 1  // = ceil((in − window + 1) / stride)
            }
        case "SAME_UPPER", "SAME_LOWER":
            for i in 0..<r {
                let ek = (kernel[i] - 1) * dilations[i] + 1
                out[i] = NNKernels.ceilDiv(inputSpatial[i], strides[i])
                let total = max(0, (out[i] - 1) * strides[i] + ek - inputSpatial[i])
                if autoPad == "SAME_UPPER" {
                    pb[i] = total / 2; pe[i] = total - pb[i]
                } else {
                    pe[i] = total / 2; pb[i] = total - pe[i]
                }
            }
        default:
            throw c.badAttribute("auto_pad", "unknown value '\(autoPad)' (expected NOTSET, SAME_UPPER, SAME_LOWER or VALID)")
        }
        return WindowGeometry(rank: r,
                              input: promote(inputSpatial, fill: 1), kernel: promote(kernel, fill: 1),
                              strides: promote(strides, fill: 1), dilations: promote(dilations, fill: 1),
                              padBegin: promote(pb, fill: 0), padEnd: promote(pe, fill: 0),
                              output: promote(out, fill: 1))
    }
}
