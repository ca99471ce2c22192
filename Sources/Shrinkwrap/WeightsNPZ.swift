import Foundation
import ShrinkwrapData
import ShrinkwrapIR

/// `inspect --weights-npz`: every constant of an imported graph as the values
/// it stands for, in one .npz keyed by constant name, so that other tools
/// (Scripts/mlprogram_crosscheck.py against coremltools' decompress_weights)
/// can compare them bit for bit.
///
/// Values come from `WeightEncoding.decoded()`, the single definition of a
/// compressed weight's value. Floating-point constants (float32, float16,
/// bfloat16, float64, compressed or not) are written as float32 arrays;
/// integer and bool constants in their own dtype. Constants of subgraphs
/// (If / Loop bodies) follow the main graph's, depth first; a name already
/// written is not written again.
public enum WeightsNPZ {
    public struct Summary: Sendable, Equatable {
        public var constants = 0
        public var compressed = 0
        public var nonFloat = 0
        public var duplicateNames = 0

        public var line: String {
            "\(constants) constants (\(compressed) compressed, decoded; \(nonFloat) integer / bool in their own dtype)"
                + (duplicateNames > 0 ? "; \(duplicateNames) subgraph constants skipped (name already written)" : "")
        }
    }

    /// The arrays, in graph order, and what they are.
    public static func arrays(of graph: Graph) -> (arrays: [(name: String, tensor: Tensor)], summary: Summary) {
        var out: [(name: String, tensor: Tensor)] = []
        var summary = Summary()
        var seen = Set<String>()
        for g in [graph] + graph.allSubgraphs {
            for c in g.constants {
                guard seen.insert(c.name).inserted else { summary.duplicateNames += 1; continue }
                let t = c.encoding.decoded()
                summary.constants += 1
                if c.encoding.isCompressed { summary.compressed += 1 }
                if t.dtype.isFloatingPoint, let values = t.floats {
                    out.append((c.name, Tensor(values, shape: t.shape, dtype: .float32)))
                } else {
                    if !t.dtype.isFloatingPoint { summary.nonFloat += 1 }
                    out.append((c.name, t))
                }
            }
        }
        return (out, summary)
    }

    /// Writes the .npz atomically; refuses to overwrite any of `inputs`.
    public static func write(_ graph: Graph, to url: URL, protecting inputs: [URL]) throws -> Summary {
        let (arrays, summary) = arrays(of: graph)
        let bytes = try NPZ.encode(arrays, file: url.path)
        try AtomicFile.write(Data(bytes), to: url, protecting: inputs)
        return summary
    }
}
