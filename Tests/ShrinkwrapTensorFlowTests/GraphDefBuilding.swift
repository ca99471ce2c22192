import Foundation
import TensorFlowSchema
import XCTest

/// GraphDef nodes built by hand, for tests of single ops and hand-made graphs.
extension XCTestCase {
    func node(_ name: String, _ op: String, _ inputs: [String] = [], _ attrs: [String: Tensorflow_AttrValue.OneOf_Value] = [:]) -> Tensorflow_NodeDef {
        Tensorflow_NodeDef.with { n in
            n.name = name; n.op = op; n.input = inputs
            for (k, v) in attrs { n.attr[k] = Tensorflow_AttrValue.with { $0.value = v } }
        }
    }

    /// A float32 Placeholder of a fixed shape.
    func placeholder(_ name: String, _ dims: [Int64]) -> Tensorflow_NodeDef {
        let shape = Tensorflow_TensorShapeProto.with { $0.dim = dims.map { d in Tensorflow_TensorShapeProto.Dim.with { $0.size = d } } }
        return node(name, "Placeholder", [], ["dtype": .type(.dtFloat), "shape": .shape(shape)])
    }
}
