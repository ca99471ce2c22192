import CoreMLSchema
import Foundation
import ShrinkwrapCompression
@testable import ShrinkwrapCoreML
import ShrinkwrapIR
import XCTest

final class CoreMLWeightsTests: XCTestCase {
    let here = SourceLocation(file: "m.mlmodel", place: "layer 'fc' weights")

    func roundTrip(_ e: WeightEncoding) throws -> WeightEncoding {
        let p = try CoreMLWeights.params(e, name: "w")
        // Through the wire format, as a file would carry it.
        let bytes: Data = try p.serializedData()
        let back = try CoreML_Specification_WeightParams(serializedBytes: bytes)
        return try CoreMLWeights.encoding(back, shape: e.shape, at: here)
    }

    func testEveryEncodingSurvivesTheRoundTrip() throws {
        var rng = SystemRandomNumberGenerator()
        let values = (0..<24).map { _ in Float.random(in: -1...1, using: &rng) }
        let dense = WeightEncoding.dense(Tensor(values, shape: [4, 6]))
        XCTAssertEqual(try roundTrip(dense), dense)
        let input = WeightInput(name: "w", values: values, shape: [4, 6])
        let fp16 = try WeightCodecs.encode(input, with: Float16Codec(), CodecOptions()).encoding
        XCTAssertEqual(try roundTrip(fp16), fp16)
        for bits in 1...8 {
            for g in [Granularity.perTensor, .perChannel] {
                let lin = try WeightCodecs.encode(input, with: LinearCodec(), CodecOptions(bits: bits, granularity: g)).encoding
                XCTAssertEqual(try roundTrip(lin), lin, "linear \(bits) \(g)")
                // Signed codes become unsigned with the shift folded into the bias.
                let sym = try WeightCodecs.encode(input, with: LinearCodec(), CodecOptions(bits: bits, granularity: g, symmetric: true)).encoding
                let back = try roundTrip(sym)
                let a = try XCTUnwrap(sym.decoded().floats), b = try XCTUnwrap(back.decoded().floats)
                for (x, y) in zip(a, b) { XCTAssertEqual(x, y, accuracy: 2 * max(x.ulp, y.ulp, 1e-7), "symmetric \(bits) \(g)") }
            }
            let pal = try WeightCodecs.encode(input, with: KMeansLUTCodec(), CodecOptions(bits: bits)).encoding
            XCTAssertEqual(try roundTrip(pal), pal, "palette \(bits)")
        }
    }

    func testRawValueIsPackedMostSignificantBitFirst() throws {
        let p = try PaletteWeights(shape: [3], bits: 2, indices: [1, 2, 3], lut: [[0, 1, 2, 3]], axis: 0, groupSize: 3)
        let w = try CoreMLWeights.params(.palette(p), name: "w")
        XCTAssertEqual([UInt8](w.rawValue), [0b0110_1100])
        XCTAssertEqual(w.quantization.numberOfBits, 2)
        XCTAssertEqual(w.quantization.lookupTableQuantization.floatValue, [0, 1, 2, 3])
    }

    func testLayoutsCoreMLCannotHoldAreRefused() throws {
        let input = WeightInput(name: "w", values: (0..<64).map { Float($0) }, shape: [4, 16])
        let blocked = try WeightCodecs.encode(input, with: LinearCodec(), CodecOptions(bits: 4, granularity: .perBlock(8))).encoding
        XCTAssertThrowsError(try CoreMLWeights.params(blocked, name: "fc.w")) { XCTAssertTrue("\($0)".contains("per block"), "\($0)") }
        let grouped = try WeightCodecs.encode(input, with: KMeansLUTCodec(), CodecOptions(bits: 2, granularity: .perGroupedChannel(2))).encoding
        XCTAssertThrowsError(try CoreMLWeights.params(grouped, name: "fc.w")) { XCTAssertTrue("\($0)".contains("one table per weight"), "\($0)") }
        XCTAssertThrowsError(try CoreMLWeights.params(.dense(Tensor(ints: [1], shape: [1])), name: "ids"))
    }

    func testMalformedParamsAreClearErrors() {
        func params(_ build: (inout CoreML_Specification_WeightParams) -> Void) -> CoreML_Specification_WeightParams {
            var p = CoreML_Specification_WeightParams()
            build(&p)
            return p
        }
        let cases: [(CoreML_Specification_WeightParams, [Int], String)] = [
            (params { $0.floatValue = [1, 2, 3] }, [2, 2], "3 float values for shape [2, 2]"),
            (params { $0.float16Value = Data([0, 0, 0]) }, [2], "3 bytes of fp16 values"),
            (params { $0.rawValue = Data([0xFF]) }, [4], "without quantization parameters"),
            (params { $0.rawValue = Data([0xFF]); $0.quantization.numberOfBits = 4; $0.quantization.lookupTableQuantization.floatValue = Array(repeating: 0, count: 16) }, [4], "rawValue has 1 bytes; 4 weights of 4 bits need 2"),
            (params { $0.rawValue = Data([0xFF]); $0.quantization.numberOfBits = 2; $0.quantization.lookupTableQuantization.floatValue = [0, 1, 2] }, [4], "lookup table has 3 entries; 2 bits need 4"),
            (params { $0.rawValue = Data([0xFF]); $0.quantization.numberOfBits = 9 }, [1], "numberOfBits 9 outside 1...8"),
            (params { $0.rawValue = Data([0xFF]); $0.quantization.numberOfBits = 0 }, [1], "numberOfBits 0 outside 1...8"),
            (params { $0.rawValue = Data([0xFF]); $0.quantization.numberOfBits = 8; $0.quantization.linearQuantization.scale = [1, 2, 3] }, [1], "3 scales; expected 1 or one per output channel (1)"),
            (params { $0.rawValue = Data([0xFF, 0]); $0.quantization.numberOfBits = 8; $0.quantization.linearQuantization.scale = [1]; $0.quantization.linearQuantization.bias = [1, 2] }, [2], "2 biases for 1 scales"),
            (params { $0.rawValue = Data([0xFF]); $0.quantization.numberOfBits = 8 }, [1], "neither linear nor lookup-table"),
            (params { $0.floatValue = [1]; $0.rawValue = Data([1]) }, [1], "more than one of"),
            (params { $0.floatValue = [1] }, [1 << 40, 1 << 40], "negative or too large"),
            (params { $0.rawValue = Data([1]); $0.quantization.numberOfBits = 1; $0.quantization.lookupTableQuantization.floatValue = [0, 1] }, [1 << 30], "rawValue has 1 bytes"),
            (params { $0.int8RawValue = Data([1, 2]); $0.quantization.numberOfBits = 8; $0.quantization.linearQuantization.scale = [1] }, [3], "2 int8 values for shape [3]"),
            (params { $0.rawValue = Data([0xFF]); $0.quantization.numberOfBits = 8; $0.quantization.linearQuantization.scale = [.nan] }, [1], "scale[0] is nan"),
        ]
        for (p, shape, expected) in cases {
            XCTAssertThrowsError(try CoreMLWeights.encoding(p, shape: shape, at: here), expected) { error in
                XCTAssertTrue("\(error)".contains(expected), "\(expected): \(error)")
                XCTAssertTrue("\(error)".contains("m.mlmodel: layer 'fc' weights"), "\(error)")
            }
        }
    }

    func testInt8RawValueIsSignedLinear() throws {
        var p = CoreML_Specification_WeightParams()
        p.int8RawValue = Data([0xFF, 0x02])  // −1, 2
        p.quantization.numberOfBits = 8
        p.quantization.linearQuantization.scale = [0.5]
        let e = try CoreMLWeights.encoding(p, shape: [2], at: here)
        XCTAssertEqual(e.decoded().floats, [-0.5, 1])
    }
}
