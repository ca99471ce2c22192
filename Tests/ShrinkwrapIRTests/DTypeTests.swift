import ShrinkwrapIR
import XCTest

/// `DType.rounded(_:)` / `round(_:)`: the one rule for what a float value
/// becomes in a tensor of a given dtype. Results are compared bit for bit, so
/// -0, infinities and NaN payloads count.
final class DTypeTests: XCTestCase {
    /// (input bits, float16 result bits, bfloat16 result bits).
    static let narrowCases: [(name: String, input: UInt32, float16: UInt32, bfloat16: UInt32)] = [
        ("1", 0x3F80_0000, 0x3F80_0000, 0x3F80_0000),
        ("0.1", 0x3DCC_CCCD, 0x3DCC_C000, 0x3DCD_0000),
        // float16 ties go to the even neighbour: 1 + 2⁻¹¹ → 1, 1 + 3·2⁻¹¹ → 1 + 2⁻⁹; just above a tie rounds up.
        ("1 + 2^-11", 0x3F80_1000, 0x3F80_0000, 0x3F80_0000),
        ("1 + 3·2^-11", 0x3F80_3000, 0x3F80_4000, 0x3F80_0000),
        ("1 + 2^-11 + 2^-20", 0x3F80_1008, 0x3F80_2000, 0x3F80_0000),
        // bfloat16 ties: 1 + 2⁻⁸ → 1, 1 + 3·2⁻⁸ → 1 + 2⁻⁶; just above a tie rounds up.
        ("1 + 2^-8", 0x3F80_8000, 0x3F80_8000, 0x3F80_0000),
        ("1 + 3·2^-8", 0x3F81_8000, 0x3F81_8000, 0x3F82_0000),
        ("1 + 2^-8 + 2^-20", 0x3F80_8008, 0x3F80_8000, 0x3F81_0000),
        // float16's range: 65504 is its largest value, 65520 (the tie with 65536) and beyond become ±inf.
        ("65504", 0x477F_E000, 0x477F_E000, 0x4780_0000),
        ("65519", 0x477F_EF00, 0x477F_E000, 0x4780_0000),
        ("65520", 0x477F_F000, 0x7F80_0000, 0x4780_0000),
        ("-65520", 0xC77F_F000, 0xFF80_0000, 0xC780_0000),
        ("1e6", 0x4974_2400, 0x7F80_0000, 0x4974_0000),
        // bfloat16's range: its largest value stays, Float's largest rounds up to inf.
        ("bfloat16 max", 0x7F7F_0000, 0x7F80_0000, 0x7F7F_0000),
        ("Float max", 0x7F7F_FFFF, 0x7F80_0000, 0x7F80_0000),
        // float16 subnormals: 2⁻²⁴ is the smallest; 2⁻²⁵ is the tie with 0 (→ 0); underflow keeps the sign.
        ("2^-24", 0x3380_0000, 0x3380_0000, 0x3380_0000),
        ("2^-25", 0x3300_0000, 0x0000_0000, 0x3300_0000),
        ("1.5·2^-24", 0x33C0_0000, 0x3400_0000, 0x33C0_0000),
        ("1e-10", 0x2EDB_E6FF, 0x0000_0000, 0x2EDC_0000),
        ("-1e-10", 0xAEDB_E6FF, 0x8000_0000, 0xAEDC_0000),
        ("smallest Float subnormal", 0x0000_0001, 0x0000_0000, 0x0000_0000),
        ("-0", 0x8000_0000, 0x8000_0000, 0x8000_0000),
        ("inf", 0x7F80_0000, 0x7F80_0000, 0x7F80_0000),
        ("-inf", 0xFF80_0000, 0xFF80_0000, 0xFF80_0000),
        // NaN stays NaN, quiet, with its sign; payload bits the narrow type cannot hold are dropped.
        ("NaN", 0x7FC0_0000, 0x7FC0_0000, 0x7FC0_0000),
        ("-NaN", 0xFFC0_0000, 0xFFC0_0000, 0xFFC0_0000),
        ("signalling NaN", 0x7F80_0001, 0x7FC0_0000, 0x7FC0_0000),
        ("NaN with a low payload", 0x7FC0_0001, 0x7FC0_0000, 0x7FC0_0000),
    ]

    /// Values that every other dtype must leave exactly as they are.
    static let unchangedInputs: [UInt32] = [
        0x3F80_0000, 0x3F80_0001,  // 1, 1 + 2⁻²³
        0x3DCC_CCCD,  // 0.1
        0x4020_0000, 0xBFC0_0000, 0x406C_CCCD,  // 2.5, -1.5, 3.7: no rounding or truncation to integers
        0x4396_0000, 0xBF80_0000,  // 300, -1: no saturation or wrapping into int8 / unsigned ranges
        0x60AD_78EC,  // 1e20: beyond Int64
        0x477F_F000,  // 65520: beyond float16
        0x7F7F_FFFF, 0x0000_0001, 0x8000_0000, 0x7F80_0000, 0xFF80_0000,
        0x7FC0_0000, 0x7FC0_0001, 0xFFC0_0000,  // NaNs keep their payload
    ]

    func testFloat16AndBFloat16RoundToNearestEven() {
        for c in Self.narrowCases {
            let x = Float(bitPattern: c.input)
            XCTAssertEqual(DType.float16.rounded(x).bitPattern, c.float16, "float16 \(c.name)")
            XCTAssertEqual(DType.bfloat16.rounded(x).bitPattern, c.bfloat16, "bfloat16 \(c.name)")
        }
    }

    func testEveryOtherTypeLeavesValuesUnchanged() {
        let others = DType.allCases.filter { $0 != .float16 && $0 != .bfloat16 }
        XCTAssertEqual(Set(others), [.float32, .float64, .int8, .int16, .int32, .int64,
                                     .uint8, .uint16, .uint32, .uint64, .bool])
        for dtype in others {
            for bits in Self.unchangedInputs {
                XCTAssertEqual(dtype.rounded(Float(bitPattern: bits)).bitPattern, bits, "\(dtype) 0x\(String(bits, radix: 16))")
            }
        }
    }

    func testArrayFormsMatchTheScalarForm() {
        let values = (Self.narrowCases.map(\.input) + Self.unchangedInputs).map { Float(bitPattern: $0) }
        for dtype in DType.allCases {
            let expected = values.map { dtype.rounded($0).bitPattern }
            XCTAssertEqual(dtype.rounded(values).map(\.bitPattern), expected, "\(dtype) rounded([Float])")
            var inPlace = values
            dtype.round(&inPlace)
            XCTAssertEqual(inPlace.map(\.bitPattern), expected, "\(dtype) round(&)")
        }
        XCTAssertEqual(DType.float16.rounded([Float]()), [])
    }

    func testRoundedValuesAreFixedPoints() {
        // A rounded value is one the type holds, so rounding it again changes nothing.
        var rng: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<10_000 {
            rng = rng &* 6364136223846793005 &+ 1442695040888963407
            let x = Float(bitPattern: UInt32(truncatingIfNeeded: rng >> 32))
            for dtype in [DType.float16, .bfloat16] {
                let once = dtype.rounded(x)
                XCTAssertEqual(dtype.rounded(once).bitPattern, once.bitPattern, "\(dtype) 0x\(String(x.bitPattern, radix: 16))")
            }
        }
    }
}
