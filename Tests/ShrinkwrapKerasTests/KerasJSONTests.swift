import ShrinkwrapIR
import ShrinkwrapTestSupport
import XCTest
@testable import ShrinkwrapKeras

final class KerasJSONTests: XCTestCase {
    func parse(_ s: String) throws -> KerasJSON { try KerasJSON.parse(Array(s.utf8), file: "f", place: "config") }

    func testValuesPythonWrites() throws {
        let v = try parse(#"{"a": [1, -2.5e3, null, true, false], "b": NaN, "c": -Infinity, "d": "x\"y\u00e9\ud83d\ude00\n"}"#)
        XCTAssertEqual(v["a"], .array([.number(1), .number(-2500), .null, .bool(true), .bool(false)]))
        XCTAssertTrue(v["b"]?.number?.isNaN ?? false)
        XCTAssertEqual(v["c"]?.number, -.infinity)
        XCTAssertEqual(v["d"]?.string, "x\"yé😀\n")
        XCTAssertEqual(v["a"]?.shape, nil)  // true is not a size
        XCTAssertEqual(try parse("[null, 3, 4]").shape, [nil, 3, 4])
        XCTAssertEqual(try parse("3").ints(count: 2), [3, 3])
        XCTAssertEqual(try parse("[1.5]").ints(), nil)
    }

    func testBadTextIsOneLineWithTheOffset() {
        for (text, fragment) in [("{\"a\": }", "expected a value"), ("[1, 2", "unexpected end"), ("\"abc", "unterminated"),
                                 ("{} {}", "text after"), (String(repeating: "[", count: 600), "nested deeper"), ("{\"a\" 1}", "expected ':'")] {
            let message = errorText { _ = try parse(text) }
            XCTAssertTrue(message.hasPrefix("f: config, byte "), message)
            XCTAssertTrue(message.contains(fragment), "\(fragment): \(message)")
        }
    }

    func testSnakeCaseMatchesKeras() {
        let cases = ["Conv2D": "conv2d", "BatchNormalization": "batch_normalization", "InputLayer": "input_layer",
                     "GlobalAveragePooling2D": "global_average_pooling2d", "LSTM": "lstm", "PReLU": "p_re_lu", "SimpleRNN": "simple_rnn"]
        for (k, v) in cases { XCTAssertEqual(KerasScope.snakeCase(k), v, k) }
    }
}
