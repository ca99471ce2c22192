import Foundation
import ShrinkwrapIR
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import TensorFlowSchema
import XCTest
@testable import ShrinkwrapTensorFlow

/// TF1 loop frames built by hand: `i = 0; while i < 3 { i += 1; y *= 2 }`, then its damaged forms.
final class TF1LoopsTests: XCTestCase {
    func scalar(_ name: String, int v: Int32) -> Tensorflow_NodeDef {
        node(name, "Const", [], ["dtype": .type(.dtInt32), "value": .tensor(Tensorflow_TensorProto.with { $0.dtype = .dtInt32; $0.intVal = [v] })])
    }

    func enter(_ name: String, _ input: String, frame: String = "loop", type: Tensorflow_DataType) -> Tensorflow_NodeDef {
        node(name, "Enter", [input], ["frame_name": .s(Data(frame.utf8)), "T": .type(type)])
    }

    /// The loop's nodes; `drop` leaves nodes out, `extra` adds some.
    func loopGraph(drop: Set<String> = [], extra: [Tensorflow_NodeDef] = []) -> Tensorflow_GraphDef {
        let nodes = [
            placeholder("x", [2]),
            scalar("zero", int: 0), scalar("one", int: 1), scalar("three", int: 3),
            node("two", "Const", [], ["dtype": .type(.dtFloat), "value": .tensor(Tensorflow_TensorProto.with { $0.dtype = .dtFloat; $0.floatVal = [2] })]),
            enter("enter_i", "zero", type: .dtInt32), enter("enter_y", "x", type: .dtFloat),
            node("merge_i", "Merge", ["enter_i", "next_i"]), node("merge_y", "Merge", ["enter_y", "next_y"]),
            node("less", "Less", ["merge_i", "three"]), node("cond", "LoopCond", ["less"]),
            node("switch_i", "Switch", ["merge_i", "cond"]), node("switch_y", "Switch", ["merge_y", "cond"]),
            node("body_i", "Identity", ["switch_i:1"]), node("body_y", "Identity", ["switch_y:1"]),
            node("add", "AddV2", ["body_i", "one"]), node("double", "Mul", ["body_y", "two"]),
            node("next_i", "NextIteration", ["add"]), node("next_y", "NextIteration", ["double"]),
            node("exit_i", "Exit", ["switch_i"]), node("exit_y", "Exit", ["switch_y"]),
            node("y", "Identity", ["exit_y"]),
        ]
        return Tensorflow_GraphDef.with { $0.node = nodes.filter { !drop.contains($0.name) } + extra }
    }

    func importing(_ g: Tensorflow_GraphDef) throws -> Graph {
        try TensorFlowImporter.importGraphDef(bytes: try g.serializedBytes(), file: "loop.pb", outputs: ["y"])
    }

    func testTheFrameIsUnrolled() throws {
        let graph = try importing(loopGraph())
        XCTAssertEqual(graph.nodes.filter { $0.opType == "Mul" }.count, 3)
        let y = try XCTUnwrap(try Interpreter(graph: graph).run(["x": Tensor([1, -0.5], shape: [2])])["y"])
        XCTAssertEqual(y.floats, [8, -4])
    }

    func testDamagedFramesAreRefusedByPlace() {
        let cases: [(Tensorflow_GraphDef, String)] = [
            (loopGraph(drop: ["cond"]), "loop.pb: loop frame 'loop': unsupported: 0 LoopCond ops (one expected)"),
            (loopGraph(drop: ["next_y"], extra: [node("next_y", "Identity", ["double"])]),
             "loop.pb: loop frame 'loop': unsupported: Merge 'merge_y' does not join an Enter and a NextIteration"),
            (loopGraph(extra: [enter("inner", "body_y", frame: "inner", type: .dtFloat)]),
             "loop.pb: loop frame 'loop': unsupported: a loop inside a loop (frame 'inner')"),
            (loopGraph(extra: [node("peek", "Identity", ["switch_y:0"]), node("peek2", "Mul", ["peek", "double"])]),
             "loop.pb: loop frame 'loop': unsupported: op 'peek' reads a Switch's false output inside the loop"),
        ]
        for (g, want) in cases {
            XCTAssertEqual(errorText { _ = try self.importing(g) }, want)
        }
    }

    /// A condition that never turns false: stopped at the iteration cap, not run forever.
    func testALoopThatNeverEndsStopsAtTheCap() {
        var g = loopGraph(drop: ["less"])
        g.node.append(node("less", "GreaterEqual", ["merge_i", "zero"]))  // i >= 0: always true
        let text = errorText { _ = try self.importing(g) }
        XCTAssertTrue(text.hasPrefix("loop.pb: loop frame 'loop': unsupported: "), text)
        XCTAssertTrue(text.contains("more than"), text)
    }
}
