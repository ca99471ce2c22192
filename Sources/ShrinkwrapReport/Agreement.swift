import Foundation
import ShrinkwrapIR
import ShrinkwrapRuntime

/// Runs a reference model once over the inputs and any number of candidates
/// against it: output agreement (`OutputMetrics`) and, on the first few
/// inputs, per-layer error (`LayerMetrics`): how far each weight moved
/// (weight SQNR) and how far each layer's output drifted (output SQNR, from
/// the interpreter's intermediate values), so the first layer that breaks
/// stands out.
///
/// The reference's outputs are kept for every input (they are small); its
/// intermediate values only for the first `layerSamples` inputs.
/// Its state is set once, by `init`; `compare` only reads it, so candidates may be compared concurrently.
public final class AgreementRunner: @unchecked Sendable {
    public let reference: Graph
    public let labels: [String]
    public let layerSamples: Int
    let inputs: [[String: Tensor]]
    let threads: Int?
    /// Reference outputs per input.
    var outputs: [[String: Tensor]] = []
    /// Reference intermediate values (node name → first float output) for the first inputs.
    var activations: [[String: [Float]]] = []

    public struct Error: UserFacingError {
        public let description: String
    }

    /// Inputs per candidate run past the layer samples: > 1 when the samples stack along a free
    /// batch axis and a probe on the reference, stacking that many, gave every sample's outputs bit
    /// for bit. Then every group of exactly this many runs stacked; the inputs left run one at a time.
    public private(set) var batch = 1

    /// How many inputs each comparison runs.
    public var inputCount: Int { inputs.count }

    /// Runs the reference over `inputs`. `batch`: most inputs per candidate run (nil: 16; 1: one
    /// at a time); batching is used only where the probe (`batchProbe`) shows it changes no bit.
    public init(reference: Graph, inputs: [[String: Tensor]], labels: [String] = [], layerSamples: Int = 4, threads: Int? = nil,
                batch: Int? = nil, progress: ((Int) -> Void)? = nil) throws {
        guard !inputs.isEmpty else { throw Error(description: "no inputs to compare on") }
        self.reference = reference
        self.inputs = inputs
        self.labels = labels
        self.layerSamples = max(0, min(layerSamples, inputs.count))
        self.threads = threads
        let interpreter = try Interpreter(graph: reference, options: .init(threads: threads))
        for (k, sample) in inputs.enumerated() {
            if k < self.layerSamples {
                var seen: [String: [Float]] = [:]
                outputs.append(try interpreter.run(sample) { node, outs in
                    if let f = outs.first?.floats, !node.name.isEmpty { seen[node.name] = f }
                })
                activations.append(seen)
            } else {
                outputs.append(try interpreter.run(sample))
            }
            progress?(k + 1)
        }
        // The probe runs exactly the group size the candidates will run: kernels may split work by shape.
        let most = max(1, batch ?? 16)
        if most > 1, inputs.count - self.layerSamples >= most, try batchProbe(interpreter, count: most) { self.batch = most }
    }

    /// Compares `candidate` (same inputs and outputs; for per-layer numbers, the same node names) with the reference.
    /// `threads` overrides the runner's own thread count for this candidate.
    public func compare(_ candidate: Graph, threads: Int? = nil,
                        progress: ((Int) -> Void)? = nil) throws -> (outputs: [OutputMetrics], layers: [LayerMetrics]) {
        let names = reference.outputs.map(\.name)
        for n in names where !candidate.outputs.contains(where: { $0.name == n }) {
            throw Error(description: "the candidate has no output '\(n)' (it has \(candidate.outputs.map(\.name)))")
        }
        let interpreter = try Interpreter(graph: candidate, options: .init(threads: threads ?? self.threads))
        var acc = names.map { MetricsAccumulator(name: $0, labels: labels) }
        // Per node: Σ ref², Σ err² over the layer samples.
        var signal: [String: Double] = [:], noise: [String: Double] = [:]
        // Nodes of the candidate whose output lines up with the reference's (same name, same size).
        var matched = Set<String>()
        var k = 0
        while k < inputs.count {
            // Past the layer samples, groups of exactly `batch` inputs (the size the probe ran) per run,
            // split back into one result per input; the rest one at a time.
            if k >= layerSamples && batch > 1 && k + batch <= inputs.count {
                let group = Array(inputs[k..<(k + batch)]).map { Self.adapt($0, to: candidate) }
                let results = try Self.runStacked(interpreter, group, outputs: Array(outputs[k..<(k + group.count)]))
                for got in results {
                    for (i, n) in names.enumerated() {
                        guard let r = outputs[k][n], let c = got[n] else { throw Error(description: "output '\(n)' missing for input \(k)") }
                        try acc[i].add(reference: r, candidate: c)
                    }
                    k += 1
                    progress?(k)
                }
                continue
            }
            let sample = Self.adapt(inputs[k], to: candidate)
            let got: [String: Tensor]
            if k < layerSamples {
                let ref = activations[k]
                got = try interpreter.run(sample) { node, outs in
                    guard let r = ref[node.name], let c = outs.first?.floats, c.count == r.count else { return }
                    matched.insert(node.name)
                    var s = 0.0, e = 0.0
                    for i in 0..<r.count {
                        let a = Double(r[i]), d = a - Double(c[i])
                        s += a * a; e += d * d
                    }
                    signal[node.name, default: 0] += s
                    noise[node.name, default: 0] += e
                }
            } else {
                got = try interpreter.run(sample)
            }
            for (i, n) in names.enumerated() {
                guard let r = outputs[k][n], let c = got[n] else { throw Error(description: "output '\(n)' missing for input \(k)") }
                try acc[i].add(reference: r, candidate: c)
            }
            k += 1
            progress?(k)
        }
        // Layers with a weight, in graph order — only those the candidate has too (same node and
        // weight names: a compressed copy of the reference), so that no number is claimed unmeasured.
        var layers: [LayerMetrics] = []
        for node in reference.nodes where matched.contains(node.name) {
            let weight = node.inputs.first { name in
                guard let c = reference.constant(named: name), c.encoding.dtype.isFloatingPoint else { return false }
                return c.encoding.count > 1
            }
            guard let weight, let ref = reference.constant(named: weight), let cand = candidate.constant(named: weight),
                  cand.encoding.shape == ref.encoding.shape else { continue }
            var wSQNR: Double? = nil
            if cand.encoding != ref.encoding, let a = ref.encoding.decoded().floats, let b = cand.encoding.decoded().floats {
                wSQNR = sqnrDB(reference: a, approximation: b)
            }
            var oSQNR: Double? = nil
            if let s = signal[node.name], let e = noise[node.name], e > 0 { oSQNR = 10 * log10(s / e) }
            layers.append(LayerMetrics(node: node.name, op: node.opType, weight: weight, weightSQNR: wSQNR, outputSQNR: oSQNR))
        }
        return (acc.map { $0.result() }, layers)
    }

    /// The sample with integer inputs in the integer type the candidate declares (Core ML
    /// declares int32 where ONNX has int64); everything else as is.
    static func adapt(_ sample: [String: Tensor], to g: Graph) -> [String: Tensor] {
        var out = sample
        for i in g.runtimeInputs {
            guard let want = i.dtype, let t = sample[i.name], t.dtype != want, !want.isFloatingPoint, !t.dtype.isFloatingPoint,
                  case .int(let v) = t.storage else { continue }
            out[i.name] = Tensor(dtype: want, shape: t.shape, storage: .int(v))
        }
        return out
    }
}
