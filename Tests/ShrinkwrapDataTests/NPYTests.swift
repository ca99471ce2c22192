import Foundation
@testable import ShrinkwrapData
import ShrinkwrapIR
import XCTest

final class NPYTests: XCTestCase {
    /// A version 1.0 file written by numpy: np.save of np.array([[1, 2, 3]], dtype='<f4').
    func numpyV1() -> Data {
        var header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), }"
        header += String(repeating: " ", count: 128 - 10 - header.count - 1) + "\n"
        var d = Data([0x93, 0x4E, 0x55, 0x4D, 0x50, 0x59, 1, 0, UInt8(header.count), 0])
        d.append(contentsOf: Array(header.utf8))
        for v: Float in [1, 2, 3] { withUnsafeBytes(of: v.bitPattern.littleEndian) { d.append(contentsOf: $0) } }
        return d
    }

    func testReadsVersion1() throws {
        XCTAssertEqual(try NPY.decode(numpyV1(), file: "a.npy"), Tensor([1, 2, 3], shape: [1, 3]))
    }

    func testReadsVersions2And3() throws {
        for major: UInt8 in [2, 3] {
            var header = "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }"
            header += String(repeating: " ", count: 128 - 12 - header.count - 1) + "\n"
            var d = Data([0x93, 0x4E, 0x55, 0x4D, 0x50, 0x59, major, 0, UInt8(header.count), 0, 0, 0])
            d.append(contentsOf: Array(header.utf8))
            for v: Int64 in [-5, 7] { withUnsafeBytes(of: v.littleEndian) { d.append(contentsOf: $0) } }
            XCTAssertEqual(try NPY.decode(d, file: "b.npy"), Tensor(ints: [-5, 7], shape: [2]))
        }
    }

    func testRoundTripsEveryDtype() throws {
        let tensors = [
            Tensor([1.5, -2, 0], shape: [3]), Tensor([0.5, 65504], shape: [2], dtype: .float16),
            Tensor([1e-3], shape: [], dtype: .float64), Tensor(ints: [-128, 127], shape: [2], dtype: .int8),
            Tensor(ints: [255, 0], shape: [1, 2], dtype: .uint8), Tensor(ints: [-70000], shape: [1], dtype: .int32),
            Tensor(ints: [Int64.min, Int64.max], shape: [2], dtype: .int64), Tensor(bools: [true, false], shape: [2]),
            Tensor([], shape: [0, 3]),
        ]
        for t in tensors {
            let d = NPY.encode(t)
            // numpy aligns the data to 64 bytes.
            let headerLength = Int(d[8]) | Int(d[9]) << 8
            XCTAssertEqual((10 + headerLength) % 64, 0)
            let back = try NPY.decode(d, file: "t.npy")
            XCTAssertEqual(back.shape, t.shape)
            XCTAssertEqual(back.dtype, t.dtype == .float64 ? .float64 : t.dtype)
            XCTAssertEqual(back.doubles.map { Float($0) }, t.doubles.map { Float($0) })
        }
    }

    func testRejectsBadFiles() {
        func reason(_ d: Data) -> String {
            do { _ = try NPY.decode(d, file: "bad.npy"); return "no error" } catch { return "\(error)" }
        }
        XCTAssertTrue(reason(Data()).contains("bad magic"))
        XCTAssertTrue(reason(Data("hello world, not numpy".utf8)).contains("bad magic"))
        var big = numpyV1()
        big.replaceSubrange(8..<10, with: [0xFF, 0xFF])
        XCTAssertTrue(reason(big).contains("runs past the end"))
        let be = Data(String(decoding: numpyV1(), as: UTF8.self).replacingOccurrences(of: "<f4", with: ">f4").utf8)
        XCTAssertTrue(reason(be).contains("unsupported dtype") || reason(be).contains("bad magic"))
        var fortran = numpyV1()
        let r = fortran.range(of: Data("False".utf8))!
        fortran.replaceSubrange(r, with: Data("True ".utf8))
        XCTAssertTrue(reason(fortran).contains("Fortran"))
        XCTAssertTrue(reason(numpyV1().dropLast(2)).contains("needs 12"))
        var v9 = numpyV1()
        v9[6] = 9
        XCTAssertTrue(reason(v9).contains("version 9"))
    }
}
