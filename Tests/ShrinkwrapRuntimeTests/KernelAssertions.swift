import ShrinkwrapIR
import XCTest

extension XCTestCase {
    /// `got` has `shape` and, element by element, `want` within `tol` relative
    /// (absolute below 1); the first element off fails with all values shown.
    func assertTensorClose(_ got: Tensor, _ want: [Float], shape: [Int], tol: Float,
                           file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(got.shape, shape, "shape", file: file, line: line)
        guard let g = got.floats else { XCTFail("not float: \(got.dtype)", file: file, line: line); return }
        XCTAssertEqual(g.count, want.count, "count", file: file, line: line)
        for (i, (a, b)) in zip(g, want).enumerated() where !(abs(a - b) <= tol * max(1, abs(b))) {
            XCTFail("element \(i): got \(a), expected \(b) (all: \(g))", file: file, line: line)
            return
        }
    }
}
