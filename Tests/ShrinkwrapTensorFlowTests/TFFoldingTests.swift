import ShrinkwrapIR
import XCTest
@testable import ShrinkwrapTensorFlow

/// The integer / boolean arithmetic the importer does at import (loop counters, trip counts).
final class TFFoldingTests: XCTestCase {
    let three = Tensor.scalar(int: 3, dtype: .int32)

    func testCountersAndComparisons() {
        XCTAssertEqual(TFFolding.fold("Add", [three, .scalar(int: 1, dtype: .int32)], [:]), .scalar(int: 4, dtype: .int32))
        XCTAssertEqual(TFFolding.fold("Less", [three, .scalar(int: 5, dtype: .int32)], [:]), Tensor(bools: [true], shape: []))
        XCTAssertEqual(TFFolding.fold("And", [Tensor(bools: [true, false], shape: [2]), Tensor(bools: [true], shape: [])], [:]),
                       Tensor(bools: [true, false], shape: [2]))
        XCTAssertEqual(TFFolding.fold("Max", [Tensor(ints: [1, 9], shape: [2]), three], [:]), Tensor(ints: [3, 9], shape: [2]))
        XCTAssertEqual(TFFolding.fold("Identity", [three], [:]), three)
    }

    func testInt32WrapsAsTensorFlowDoes() {
        let big = Tensor.scalar(int: Int64(Int32.max), dtype: .int32)
        XCTAssertEqual(TFFolding.fold("Add", [big, .scalar(int: 1, dtype: .int32)], [:]), .scalar(int: Int64(Int32.min), dtype: .int32))
        XCTAssertEqual(TFFolding.fold("Cast", [.scalar(int: 1 << 40)], ["to": .int(DType.int32.onnxDataType)]), .scalar(int: 0, dtype: .int32))
        XCTAssertEqual(TFFolding.fold("Cast", [three], ["to": .int(DType.bool.onnxDataType)]), Tensor(bools: [true], shape: []))
    }

    func testFloatsLargeTensorsAndUnequalShapesAreLeftToTheGraph() {
        XCTAssertNil(TFFolding.fold("Add", [.scalar(1), .scalar(2)], [:]))
        XCTAssertNil(TFFolding.fold("Cast", [three], ["to": .int(DType.float32.onnxDataType)]))
        let long = Tensor(ints: Array(repeating: 1, count: TFFolding.limit + 1), shape: [TFFolding.limit + 1])
        XCTAssertNil(TFFolding.fold("Neg", [long], [:]))
        XCTAssertNil(TFFolding.fold("Add", [Tensor(ints: [1, 2], shape: [2]), Tensor(ints: [1, 2, 3], shape: [3])], [:]))
        XCTAssertNil(TFFolding.fold("Conv", [three, three], [:]))
    }
}
