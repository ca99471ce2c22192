import Foundation
import ShrinkwrapIR
import ShrinkwrapTestSupport
import XCTest

final class BitPackingTests: XCTestCase {
    /// Byte vectors worked out by hand from each format's definition.
    func testHandVectors() {
        // 2 bits, codes 1, 2, 3: MSB-first stream 01 10 11 00; LSB-first byte 00 11 10 01.
        XCTAssertEqual(BitPacking.pack([1, 2, 3] as [UInt8], bits: 2, order: .msbFirst), [0b0110_1100])
        XCTAssertEqual(BitPacking.pack([1, 2, 3] as [UInt8], bits: 2, order: .lsbFirst), [0b0011_1001])
        // 4 bits: ONNX puts the first element in the low nibble; Core ML NN in the high one.
        XCTAssertEqual(BitPacking.pack([1, 2, 3] as [UInt8], bits: 4, order: .onnx4Bit), [0x21, 0x03])
        XCTAssertEqual(BitPacking.pack([1, 2, 3] as [UInt8], bits: 4, order: .coreMLNeuralNetwork), [0x12, 0x30])
        // 3 bits cross byte boundaries: 101 011 111 → MSB-first 10101111 1·······.
        XCTAssertEqual(BitPacking.pack([5, 3, 7] as [UInt8], bits: 3, order: .msbFirst), [0xAF, 0x80])
        // LSB-first: 5 in bits 0–2, 3 in bits 3–5, 7 in bits 6–8 → 0b11_011_101, 0b1.
        XCTAssertEqual(BitPacking.pack([5, 3, 7] as [UInt8], bits: 3, order: .lsbFirst), [0xDD, 0x01])
        XCTAssertEqual(BitPacking.pack([1, 0, 1, 1, 0, 0, 0, 0, 1] as [UInt8], bits: 1, order: .msbFirst), [0xB0, 0x80])
        XCTAssertEqual(BitPacking.pack([1, 0, 1, 1, 0, 0, 0, 0, 1] as [UInt8], bits: 1, order: .lsbFirst), [0x0D, 0x01])
        // Signed 4-bit two's complement: −1 → F, −8 → 8, 7 → 7.
        XCTAssertEqual(BitPacking.pack([-1, -8, 7] as [Int16], bits: 4, order: .lsbFirst), [0x8F, 0x07])
        XCTAssertEqual(BitPacking.pack([200, 7] as [UInt8], bits: 8, order: .msbFirst), [200, 7])
        // 5 bits MSB-first: 10000 00001 → 10000000 01······.
        XCTAssertEqual(BitPacking.pack([16, 1] as [UInt8], bits: 5, order: .msbFirst), [0x80, 0x40])
    }

    func testRoundTripEveryWidthAndOrder() {
        var rng = SplitMix(seed: 3)
        for bits in 1...8 {
            for order in BitOrder.allCases {
                for n in [0, 1, 5, 8, 13, 64, 101] {
                    let codes = (0..<n).map { _ in UInt8(rng.next() % UInt64(1 << bits)) }
                    let packed = BitPacking.pack(codes, bits: bits, order: order)
                    XCTAssertEqual(packed.count, (n * bits + 7) / 8)
                    XCTAssertEqual(BitPacking.unpack(packed, bits: bits, count: n, order: order), codes, "\(bits) bits \(order) n=\(n)")
                    if n > 0 { XCTAssertNil(BitPacking.unpack(Array(packed.dropLast()), bits: bits, count: n, order: order)) }
                }
            }
            let signed = AffineRange.signed(bits)
            let packed = BitPacking.pack(signed, bits: bits, order: .lsbFirst)
            let back = BitPacking.unpack(packed, bits: bits, count: signed.count, order: .lsbFirst) ?? []
            XCTAssertEqual(BitPacking.signExtend(back, bits: bits), signed)
        }
        XCTAssertNil(BitPacking.unpack([0], bits: 0, count: 1, order: .lsbFirst))
        XCTAssertNil(BitPacking.unpack([0], bits: 9, count: 1, order: .lsbFirst))
    }

    /// Vectors packed by coremltools (NeuralNetwork and ML Program helpers) and
    /// onnx (4-bit), written by Scripts/packing_vectors.py into .testdata.
    func testMatchesPeerPackingHelpers() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".testdata/packing-vectors.json")
        guard let data = try? Data(contentsOf: url) else {
            throw XCTSkip("SKIPPED: peer packing vectors not found at \(url.path); run `make testdata` (needs the venv with coremltools and onnx)")
        }
        struct Vector: Decodable { var peer: String; var order: String; var bits: Int; var signed: Bool; var codes: [Int]; var bytes: [UInt8] }
        let vectors = try JSONDecoder().decode([Vector].self, from: data)
        XCTAssertGreaterThan(vectors.count, 100)
        var peers = Set<String>()
        for v in vectors {
            let order = try XCTUnwrap(BitOrder(rawValue: v.order))
            XCTAssertEqual(BitPacking.pack(v.codes, bits: v.bits, order: order), v.bytes, "\(v.peer) \(v.bits)-bit \(v.codes)")
            let back = try XCTUnwrap(BitPacking.unpack(v.bytes, bits: v.bits, count: v.codes.count, order: order))
            if v.signed {
                XCTAssertEqual(BitPacking.signExtend(back, bits: v.bits).map(Int.init), v.codes)
            } else {
                XCTAssertEqual(back.map(Int.init), v.codes)
            }
            peers.insert(v.peer)
        }
        XCTAssertEqual(peers, ["coremltools-nn", "coremltools-mlprogram", "onnx-uint4", "onnx-int4"])
    }
}

enum AffineRange {
    static func signed(_ bits: Int) -> [Int16] { Array(Int16(-(1 << (bits - 1)))...Int16((1 << (bits - 1)) - 1)) }
}

