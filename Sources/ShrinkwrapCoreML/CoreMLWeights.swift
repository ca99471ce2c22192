import CoreMLSchema
import Foundation
import ShrinkwrapIR

/// `WeightParams` ↔ `WeightEncoding`: the one place that knows how Core ML
/// NeuralNetwork stores a weight.
///
/// - `floatValue`: float32 values;
/// - `float16Value`: little-endian binary16 bytes (specification version 2);
/// - `rawValue` + `quantization` (version 3): unsigned n-bit codes packed
///   most-significant bit first, with either `linearQuantization`
///   (`w = scale × q + bias`, one scale per tensor or per output channel —
///   axis 0 of the weight as Core ML lays it out — and no bias, or one per
///   scale) or `lookupTableQuantization` (`w = table[q]`, exactly 2^n entries,
///   one table per weight);
/// - `int8RawValue`: signed 8-bit codes with a linear quantization.
enum CoreMLWeights {
    static let format = "Core ML NeuralNetwork"

    /// The params for an IR weight already in Core ML's layout, output channels on `axis`
    /// (0; 1 for deconvolution weights [Cin, Cout / groups, kH, kW], as coremltools quantizes them).
    static func params(_ e: WeightEncoding, name: String, axis: Int = 0) throws(ExportError) -> CoreML_Specification_WeightParams {
        var p = CoreML_Specification_WeightParams()
        func refuse(_ why: String) -> ExportError { .unsupportedWeight(format: format, tensor: name, reason: why) }
        switch e {
        case .dense(let t):
            guard let f = t.floats, t.dtype == .float32 else { throw refuse("\(t.dtype.rawValue) weights; Core ML stores float weights") }
            p.floatValue = f
        case .float16(let h):
            var bytes = [UInt8](repeating: 0, count: h.bits.count * 2)
            for (i, b) in h.bits.enumerated() {
                bytes[2 * i] = UInt8(truncatingIfNeeded: b)
                bytes[2 * i + 1] = UInt8(truncatingIfNeeded: b >> 8)
            }
            p.float16Value = Data(bytes)
        case .affine(let a):
            let perChannel = axis < a.shape.count && a.blockShape[axis] == 1
                && a.shape.indices.allSatisfy { $0 == axis || a.blockShape[$0] >= a.shape[$0] }
            let perTensor = zip(a.shape, a.blockShape).allSatisfy { d, b in b >= d }
            guard perTensor || perChannel else {
                throw refuse("scales per block or along an axis other than the output channels (block shape \(a.blockShape), channel axis \(axis)); Core ML NeuralNetwork takes one scale per tensor or per output channel")
            }
            // Core ML codes are unsigned: shift signed codes by 2^(b−1) and fold the shift into the bias.
            let shift = a.signed ? 1 << (a.bits - 1) : 0
            let codes = a.q.map { UInt8(truncatingIfNeeded: Int($0) + shift) }
            var lq = CoreML_Specification_LinearQuantizationParams()
            lq.scale = a.scale
            lq.bias = zip(a.scale, a.bias).map { s, b in Float(Double(b) - Double(s) * Double(shift)) }
            // One scale per output channel even for a per-tensor weight: Core ML takes 1 or C,
            // but coremltools' own dequantizer only reads C, and it costs 8 bytes a channel.
            if perTensor, axis < a.shape.count, case let channels = a.shape[axis], channels > 1, lq.scale.count == 1 {
                lq.scale = Array(repeating: lq.scale[0], count: channels)
                lq.bias = Array(repeating: lq.bias[0], count: channels)
            }
            p.rawValue = Data(BitPacking.pack(codes, bits: a.bits, order: .coreMLNeuralNetwork))
            p.quantization.numberOfBits = UInt64(a.bits)
            p.quantization.linearQuantization = lq
        case .palette(let pw):
            guard pw.lut.count == 1 else {
                throw refuse("\(pw.lut.count) lookup tables (grouped channels); Core ML NeuralNetwork holds one table per weight — compress with per-tensor granularity")
            }
            var lut = CoreML_Specification_LookUpTableQuantizationParams()
            lut.floatValue = pw.lut[0]
            p.rawValue = Data(BitPacking.pack(pw.indices, bits: pw.bits, order: .coreMLNeuralNetwork))
            p.quantization.numberOfBits = UInt64(pw.bits)
            p.quantization.lookupTableQuantization = lut
        }
        return p
    }

    /// Reads params for a weight of `shape` (Core ML layout, output channels
    /// on `axis`). Every count is checked against the shape before anything
    /// is allocated from it.
    static func encoding(_ p: CoreML_Specification_WeightParams, shape: [Int], at place: SourceLocation,
                         axis: Int = 0) throws(ImportError) -> WeightEncoding {
        func bad(_ why: String) -> ImportError { .badTensor(place, reason: why) }
        guard let n = checkedElementCount(shape) else { throw bad("shape \(shape) is negative or too large") }
        let kinds = [!p.floatValue.isEmpty, !p.float16Value.isEmpty, !p.rawValue.isEmpty, !p.int8RawValue.isEmpty].filter { $0 }.count
        if kinds > 1 { throw bad("more than one of floatValue, float16Value, rawValue, int8RawValue is set") }
        if !p.floatValue.isEmpty || kinds == 0 {
            guard p.floatValue.count == n else { throw bad("\(p.floatValue.count) float values for shape \(shape) (\(n) elements)") }
            return .dense(Tensor(p.floatValue, shape: shape))
        }
        if !p.float16Value.isEmpty {
            guard p.float16Value.count == 2 * n else { throw bad("\(p.float16Value.count) bytes of fp16 values for shape \(shape) (\(n) elements need \(2 * n))") }
            let raw = [UInt8](p.float16Value)
            let bits = (0..<n).map { UInt16(raw[2 * $0]) | UInt16(raw[2 * $0 + 1]) << 8 }
            do throws(WeightLayoutError) { return .float16(try Float16Weights(shape: shape, bits: bits)) } catch { throw bad(error.reason) }
        }
        guard p.hasQuantization else { throw bad("quantized bytes without quantization parameters") }
        let q = p.quantization
        let channels = axis < shape.count ? shape[axis] : 1
        if !p.int8RawValue.isEmpty {
            guard q.numberOfBits == 8, case .linearQuantization(let lq)? = q.quantizationType else {
                throw bad("int8RawValue needs 8-bit linear quantization parameters")
            }
            guard p.int8RawValue.count == n else { throw bad("\(p.int8RawValue.count) int8 values for shape \(shape) (\(n) elements)") }
            let codes = p.int8RawValue.map { Int16(Int8(bitPattern: $0)) }
            return try affine(codes, bits: 8, signed: true, lq, shape: shape, axis: axis, channels: channels, bad: bad)
        }
        guard (1...8).contains(q.numberOfBits) else { throw bad("numberOfBits \(q.numberOfBits) outside 1...8") }
        let bits = Int(q.numberOfBits)
        let need = BitPacking.byteCount(count: n, bits: bits)
        guard p.rawValue.count >= need else {
            throw bad("rawValue has \(p.rawValue.count) bytes; \(n) weights of \(bits) bits need \(need)")
        }
        guard let codes = BitPacking.unpack([UInt8](p.rawValue.prefix(need)), bits: bits, count: n, order: .coreMLNeuralNetwork) else {
            throw bad("rawValue cannot be unpacked")
        }
        switch q.quantizationType {
        case .linearQuantization(let lq)?:
            return try affine(codes.map { Int16($0) }, bits: bits, signed: false, lq, shape: shape, axis: axis, channels: channels, bad: bad)
        case .lookupTableQuantization(let lut)?:
            guard lut.floatValue.count == 1 << bits else {
                throw bad("lookup table has \(lut.floatValue.count) entries; \(bits) bits need \(1 << bits)")
            }
            do throws(WeightLayoutError) {
                return .palette(try PaletteWeights(shape: shape, bits: bits, indices: codes, lut: [lut.floatValue], axis: 0,
                                                   groupSize: max(shape.first ?? 1, 1)))
            } catch { throw bad(error.reason) }
        case nil:
            throw bad("quantization parameters name neither linear nor lookup-table quantization")
        }
    }

    private static func affine(_ codes: [Int16], bits: Int, signed: Bool, _ lq: CoreML_Specification_LinearQuantizationParams,
                               shape: [Int], axis: Int, channels: Int, bad: (String) -> ImportError) throws(ImportError) -> WeightEncoding {
        let scales = lq.scale
        guard scales.count == 1 || (scales.count == channels && !shape.isEmpty) else {
            throw bad("\(scales.count) scales; expected 1 or one per output channel (\(channels))")
        }
        guard lq.bias.isEmpty || lq.bias.count == scales.count else {
            throw bad("\(lq.bias.count) biases for \(scales.count) scales")
        }
        var blockShape = shape.map { max($0, 1) }
        var scale = scales
        var bias = lq.bias.isEmpty ? [Float](repeating: 0, count: scales.count) : lq.bias
        // Equal scales and biases on every channel (how per-tensor weights are written) read back as per-tensor.
        if scale.count > 1, scale.allSatisfy({ $0.bitPattern == scale[0].bitPattern }), bias.allSatisfy({ $0.bitPattern == bias[0].bitPattern }) {
            scale = [scale[0]]; bias = [bias[0]]
        }
        if scale.count > 1 { blockShape[axis] = 1 }
        do throws(WeightLayoutError) {
            return .affine(try AffineWeights(shape: shape, bits: bits, signed: signed, q: codes, blockShape: blockShape,
                                             scale: scale, bias: bias))
        } catch { throw bad(error.reason) }
    }
}
