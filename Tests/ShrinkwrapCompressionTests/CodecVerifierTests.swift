@testable import ShrinkwrapCompression
import ShrinkwrapIR
import ShrinkwrapTestSupport
import XCTest

/// One verifier over every registered codec: every bit width, every
/// granularity, ordinary and edge tensors. Each encoding must decode within
/// its layout's error bound, be byte-identical when made twice, and reject
/// NaN / ±inf with an error naming the tensor.
final class CodecVerifierTests: XCTestCase {
    struct Case {
        var name: String
        var values: [Float]
        var shape: [Int]
        var outputAxis = 0
    }

    static func cases() -> [Case] {
        var rng = SplitMix(seed: 42)
        func normal(_ n: Int, _ s: Double = 0.1) -> [Float] { (0..<n).map { _ in Float(rng.normal() * s) } }
        let denormals: [Float] = (0..<24).map { (i: Int) -> Float in
            let v = Float(bitPattern: UInt32(i * 3 + 1))
            return i % 2 == 0 ? v : -v
        }
        let narrow: [Float] = (0..<24).map { (i: Int) -> Float in 1000 + Float(i) * 0.0001 }
        let huge: [Float] = (0..<24).map { (i: Int) -> Float in Float(i - 12) * 1e30 }
        return [
            Case(name: "conv", values: normal(4 * 3 * 3 * 3), shape: [4, 3, 3, 3]),
            Case(name: "dense", values: normal(6 * 10, 2), shape: [6, 10]),
            Case(name: "transposed", values: normal(5 * 7), shape: [5, 7], outputAxis: 1),
            Case(name: "vector", values: normal(17), shape: [17]),
            Case(name: "scalar", values: [0.75], shape: []),
            Case(name: "one-element", values: [-3.5], shape: [1, 1]),
            Case(name: "zeros", values: [Float](repeating: 0, count: 24), shape: [4, 6]),
            Case(name: "constant", values: [Float](repeating: -0.3, count: 24), shape: [4, 6]),
            Case(name: "denormals", values: denormals, shape: [4, 6]),
            Case(name: "offset-narrow", values: narrow, shape: [4, 6]),
            Case(name: "huge", values: huge, shape: [4, 6]),
            Case(name: "empty", values: [], shape: [0, 3]),
            Case(name: "wide", values: normal(3 * 300), shape: [3, 300]),
        ]
    }

    static func granularities(for codec: any WeightCodec) -> [Granularity] {
        codec.granularities.flatMap { kind -> [Granularity] in
            switch kind {
            case .perTensor: return [.perTensor]
            case .perChannel: return [.perChannel]
            case .perBlock: return [.perBlock(1), .perBlock(4), .perBlock(64)]
            case .perGroupedChannel: return [.perGroupedChannel(1), .perGroupedChannel(3), .perGroupedChannel(100)]
            }
        }
    }

    /// Every codec × bits × granularity × option set × case.
    func testEveryCodecWithinItsErrorBound() throws {
        var checked = 0
        for codec in WeightCodecs.all {
            for bits in codec.bitWidths.map(Array.init) ?? [8] {
                for g in Self.granularities(for: codec) {
                    for extra in Self.optionVariants(codec) {
                        for c in Self.cases() {
                            if codec.mode == "fp16" && c.name == "huge" { continue }  // tested below
                            var o = extra
                            o.bits = bits
                            o.granularity = g
                            if codec.mode == "custom-lut" { o.lut = Self.customTable(bits) }
                            let input = WeightInput(name: c.name, values: c.values, shape: c.shape, outputAxis: c.outputAxis)
                            let label = "\(codec.mode) \(bits)-bit \(g) \(extra) \(c.name)"
                            let r = try WeightCodecs.encode(input, with: codec, o)
                            let again = try WeightCodecs.encode(input, with: codec, o)
                            XCTAssertEqual(r, again, "not deterministic: \(label)")
                            XCTAssertEqual(r.encoding.shape, c.shape, label)
                            try Self.checkBound(r.encoding, input: input, options: o, label: label)
                            checked += 1
                        }
                    }
                }
            }
        }
        XCTAssertGreaterThan(checked, 1000)
    }

    static func optionVariants(_ codec: any WeightCodec) -> [CodecOptions] {
        if codec.mode == "linear" {
            return [CodecOptions(), CodecOptions(symmetric: true), CodecOptions(exactZero: true)]
        }
        return [CodecOptions()]
    }

    static func customTable(_ bits: Int) -> [Float] {
        (0..<min(1 << bits, 5)).map { Float($0) * 0.1 - 0.2 }
    }

    /// The layout's error bound.
    static func checkBound(_ e: WeightEncoding, input: WeightInput, options o: CodecOptions, label: String) throws {
        let decoded = try XCTUnwrap(e.decoded().floats, label)
        XCTAssertEqual(decoded.count, input.values.count, label)
        switch e {
        case .float16:
            for (x, y) in zip(input.values, decoded) { XCTAssertEqual(y, Half.round(x), label) }
        case .affine(let a):
            let map = Self.scaleIndexOfEachElement(shape: a.shape, blockShape: a.blockShape, scaleShape: a.scaleShape)
            var runs: [Int] = []
            BlockRuns(shape: a.shape, blockShape: a.blockShape).forEach { r, s in runs += r.map { _ in s } }
            if !a.shape.isEmpty { XCTAssertEqual(runs, map, "\(label): BlockRuns disagrees with the layout") }
            for (i, (x, y)) in zip(input.values, decoded).enumerated() {
                let s = map[i]
                let step = abs(a.scale[s])
                let bound = step / 2 * 1.0001 + 4 * max(x.ulp, y.ulp, Float.leastNonzeroMagnitude)
                XCTAssertLessThanOrEqual(abs(x - y), bound, "\(label) element \(i): \(x) → \(y), scale \(a.scale[s])")
                if x == 0 && ((o.symmetric && o.bits > 1) || o.exactZero) { XCTAssertEqual(y, 0, "\(label): zero must be exact") }
            }
            if o.exactZero { XCTAssertNotNil(a.integerZeroPoints, "\(label): zero points must be integers") }
            if o.symmetric && o.bits > 1 { XCTAssertTrue(a.isSymmetric, label) }
        case .palette(let p):
            let groups = ChannelGroups(shape: p.shape, axis: p.axis, groupSize: p.groupSize)
            for g in 0..<groups.count {
                let table = p.lut[g]
                for r in groups.runs(g) {
                    for i in r {
                        let x = input.values[i]
                        let best = table.map { abs($0 - x) }.min() ?? 0
                        XCTAssertLessThanOrEqual(abs(decoded[i] - x), best * 1.000001 + x.ulp, "\(label) element \(i): not the nearest entry")
                    }
                }
            }
        case .dense:
            XCTFail("\(label): codec returned a dense tensor")
        }
    }

    /// The layout's definition, element by element: scale index (i_k / block_k) in row-major scale order.
    static func scaleIndexOfEachElement(shape: [Int], blockShape: [Int], scaleShape: [Int]) -> [Int] {
        let n = shape.reduce(1, *)
        let strides = stridesOf(shape), sStrides = stridesOf(scaleShape)
        return (0..<n).map { i in
            var s = 0
            for k in shape.indices { s += ((i / strides[k]) % shape[k] / blockShape[k]) * sStrides[k] }
            return s
        }
    }

    func testNonFiniteValuesAreRejectedByEveryCodec() {
        for codec in WeightCodecs.all {
            for bad in [Float.nan, .infinity, -.infinity] {
                var o = CodecOptions(bits: 4)
                if codec.mode == "custom-lut" { o.lut = [0, 1] }
                let input = WeightInput(name: "w.bad", values: [0, 1, bad, 2], shape: [2, 2])
                XCTAssertThrowsError(try WeightCodecs.encode(input, with: codec, o)) { error in
                    guard case CompressionError.nonFinite(let t, let i, _) = error else { return XCTFail("\(codec.mode): \(error)") }
                    XCTAssertEqual(t, "w.bad"); XCTAssertEqual(i, 2)
                    XCTAssertTrue("\(error)".contains("w.bad"))
                }
            }
        }
    }

    func testUnsupportedBitsAndGranularitiesAreRejected() {
        let input = WeightInput(name: "w", values: [1, 2, 3, 4], shape: [2, 2])
        for codec in WeightCodecs.all {
            var o = CodecOptions(bits: 9)
            o.lut = [0, 1]
            if codec.bitWidths != nil { XCTAssertThrowsError(try WeightCodecs.encode(input, with: codec, o), codec.mode) }
            for g in [Granularity.perChannel, .perBlock(2), .perGroupedChannel(2)] where !codec.granularities.contains(g.kind) {
                XCTAssertThrowsError(try WeightCodecs.encode(input, with: codec, CodecOptions(bits: 2, granularity: g, lut: [0, 1])), "\(codec.mode) \(g)")
            }
        }
    }

    func testFP16OverflowFailsUnlessClamped() throws {
        let input = WeightInput(name: "big", values: [1, 70000, -1e6, 65504, 65519], shape: [5])
        XCTAssertThrowsError(try WeightCodecs.encode(input, with: Float16Codec(), CodecOptions())) { error in
            XCTAssertEqual(error as? CompressionError, .fp16Overflow(tensor: "big", count: 2, largest: 1e6))
            XCTAssertTrue("\(error)".contains("--clamp-fp16"))
        }
        let r = try WeightCodecs.encode(input, with: Float16Codec(), CodecOptions(clampFP16: true))
        XCTAssertEqual(r.encoding.decoded().floats, [1, 65504, -65504, 65504, 65504])
        XCTAssertEqual(r.notes.count, 1)
        XCTAssertTrue(r.notes[0].contains("clamped 2"))
    }

    func testLinearMatchesCoremltoolsFormula() throws {
        // Asymmetric 2-bit over [−1, 2]: scale 1, bias −1: codes round(w + 1).
        let input = WeightInput(name: "w", values: [-1, 0.4, 0.6, 2], shape: [4])
        let r = try WeightCodecs.encode(input, with: LinearCodec(), CodecOptions(bits: 2))
        guard case .affine(let a) = r.encoding else { return XCTFail() }
        XCTAssertEqual(a.q, [0, 1, 2, 3])
        XCTAssertEqual(a.scale, [1]); XCTAssertEqual(a.bias, [-1])
        // Symmetric 4-bit: scale max|w| / 7, signed codes.
        let s = try WeightCodecs.encode(WeightInput(name: "w", values: [-7, 3.4, 7], shape: [3]), with: LinearCodec(), CodecOptions(bits: 4, symmetric: true))
        guard case .affine(let sa) = s.encoding else { return XCTFail() }
        XCTAssertEqual(sa.q, [-7, 3, 7]); XCTAssertEqual(sa.scale, [1]); XCTAssertTrue(sa.signed)
        // Per-channel on axis 1 (a [K, N] MatMul weight): one scale per column.
        let m = try WeightCodecs.encode(WeightInput(name: "w", values: [0, 10, 1, 20], shape: [2, 2], outputAxis: 1), with: LinearCodec(), CodecOptions(bits: 8, granularity: .perChannel))
        guard case .affine(let ma) = m.encoding else { return XCTFail() }
        XCTAssertEqual(ma.blockShape, [2, 1])
        XCTAssertEqual(ma.scaleShape, [1, 2])
        // Per-block of 2 along the input axis of a [2, 5] weight: 3 blocks per row.
        let b = try WeightCodecs.encode(WeightInput(name: "w", values: (0..<10).map(Float.init), shape: [2, 5]), with: LinearCodec(), CodecOptions(bits: 8, granularity: .perBlock(2)))
        guard case .affine(let ba) = b.encoding else { return XCTFail() }
        XCTAssertEqual(ba.scaleShape, [2, 3])
        XCTAssertEqual(b.encoding.decoded().floats ?? [], (0..<10).map(Float.init), accuracy: 1e-5)
    }

    func testLinearLUTIsEvenlySpaced() throws {
        let r = try WeightCodecs.encode(WeightInput(name: "w", values: [-1, 0.2, 0.9, 2], shape: [4]), with: LinearLUTCodec(), CodecOptions(bits: 2))
        guard case .palette(let p) = r.encoding else { return XCTFail() }
        XCTAssertEqual(p.lut, [[-1, 0, 1, 2]])
        XCTAssertEqual(p.indices, [0, 1, 2, 3])
    }

    /// k-means is optimal, so it can never lose to the evenly spaced table of the same size.
    func testKMeansNeverWorseThanLinearLUT() throws {
        var rng = SplitMix(seed: 9)
        let values = (0..<5000).map { _ in Float(rng.normal() * 0.02) }
        for bits in 1...8 {
            for g in [Granularity.perTensor, .perGroupedChannel(4)] {
                let input = WeightInput(name: "w", values: values, shape: [20, 250])
                let km = try WeightCodecs.encode(input, with: KMeansLUTCodec(), CodecOptions(bits: bits, granularity: g))
                let ll = try WeightCodecs.encode(input, with: LinearLUTCodec(), CodecOptions(bits: bits, granularity: g))
                let e1 = ErrorStats(original: values, decoded: km.encoding.decoded().floats ?? [])
                let e2 = ErrorStats(original: values, decoded: ll.encoding.decoded().floats ?? [])
                XCTAssertLessThanOrEqual(e1.sse, e2.sse, "\(bits) bits \(g)")
            }
        }
    }

    func testCustomLUTKeepsTheUsersOrder() throws {
        let r = try WeightCodecs.encode(WeightInput(name: "w", values: [0.9, -0.9, 0.1], shape: [3]), with: CustomLUTCodec(),
                                        CodecOptions(bits: 2, lut: [1, -1, 0]))
        guard case .palette(let p) = r.encoding else { return XCTFail() }
        XCTAssertEqual(p.lut, [[1, -1, 0, 0]])
        XCTAssertEqual(p.indices, [0, 1, 2])
        XCTAssertThrowsError(try WeightCodecs.encode(WeightInput(name: "w", values: [1], shape: [1]), with: CustomLUTCodec(), CodecOptions(bits: 1, lut: [1, 2, 3])))
    }

    func testRegistryAndHelpAgree() {
        XCTAssertEqual(WeightCodecs.modes, ["fp16", "linear", "linear-lut", "kmeans-lut", "custom-lut"])
        XCTAssertEqual(Set(WeightCodecs.modes).count, WeightCodecs.modes.count)
        for c in WeightCodecs.all {
            XCTAssertTrue(WeightCodecs.help.contains(c.mode + ": " + c.summary))
            XCTAssertFalse(c.granularities.isEmpty)
            XCTAssertEqual(try WeightCodecs.codec(named: c.mode).mode, c.mode)
        }
        XCTAssertThrowsError(try WeightCodecs.codec(named: "kmeans")) { XCTAssertTrue("\($0)".contains("kmeans-lut")) }
    }

    func testGranularityParsing() throws {
        XCTAssertEqual(try Granularity(parsing: "per-block:32"), .perBlock(32))
        XCTAssertEqual(try Granularity(parsing: "per-grouped-channel:4"), .perGroupedChannel(4))
        XCTAssertEqual(try Granularity(parsing: "per-channel"), .perChannel)
        for bad in ["per-block", "per-block:0", "per-block:x", "per-tensor:3", "channel", ""] {
            XCTAssertThrowsError(try Granularity(parsing: bad), bad)
        }
    }
}

func XCTAssertEqual(_ a: [Float], _ b: [Float], accuracy: Float, file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(a.count, b.count, file: file, line: line)
    for (x, y) in zip(a, b) where abs(x - y) > accuracy { XCTFail("\(x) != \(y)", file: file, line: line); return }
}
