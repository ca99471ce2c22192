import Foundation
import ShrinkwrapIR

/// What `convert` changes besides the weights: image inputs, labels, metadata.
public struct ConversionOptions: Sendable {
    /// An input apps feed as an image, with Core ML-style preprocessing
    /// `scale × pixel + bias` (bias per channel, or one for all).
    public struct ImageInputOption: Sendable {
        public var name: String
        public var color: ColorLayout
        public var scale: Float
        public var bias: [Float]
        public init(name: String, color: ColorLayout = .rgb, scale: Float = 1, bias: [Float] = []) {
            self.name = name; self.color = color; self.scale = scale; self.bias = bias
        }
    }

    public var imageInputs: [ImageInputOption] = []
    /// Class labels (replacing the source model's).
    public var labels: [String]?
    public var author: String?
    public var license: String?
    public var shortDescription: String?
    public var version: String?
    /// User-defined metadata, in order.
    public var userDefined: [(key: String, value: String)] = []

    public init() {}
}

extension Models {
    /// Reads a labels file: one label per line (blank lines and surrounding spaces dropped).
    public static func loadLabels(_ path: String) throws -> [String] {
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw AtomicFile.Error(description: "\(path): cannot read labels: \((error as NSError).localizedDescription)")
        }
        let labels = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        if labels.isEmpty { throw AtomicFile.Error(description: "\(path): no labels in the file") }
        return labels
    }

    /// Applies the conversion options to a graph (before compression and export).
    public static func apply(_ options: ConversionOptions, to graph: inout Graph) throws {
        for image in options.imageInputs { try makeImageInput(&graph, image) }
        if let labels = options.labels {
            let outs = graph.outputs.filter { o in o.staticShape.map { $0.filter { $0 != 1 } == [labels.count] } ?? true }
            if outs.isEmpty {
                let shapes = graph.outputs.map { "\($0.name) \($0.shapeDescription)" }.joined(separator: ", ")
                throw AtomicFile.Error(description: "--labels: \(labels.count) labels, but no output has \(labels.count) classes (outputs: \(shapes))")
            }
            graph.metadata.labels = labels
        }
        if let a = options.author { graph.metadata.author = a }
        if let l = options.license { graph.metadata.license = l }
        if let d = options.shortDescription { graph.metadata.docString = d }
        if let v = options.version {
            if let n = Int(v) { graph.metadata.modelVersion = n } else {
                graph.metadata.properties.removeAll { $0.key == "version" }
                graph.metadata.properties.append(("version", v))
            }
        }
        for (k, v) in options.userDefined {
            graph.metadata.properties.removeAll { $0.key == k }
            graph.metadata.properties.append((k, v))
        }
    }

    /// Turns input `name` into an image input: the graph now takes raw pixel
    /// values and computes `scale × x + bias` first (exporters that have
    /// image preprocessing fold these nodes back into it).
    static func makeImageInput(_ graph: inout Graph, _ o: ConversionOptions.ImageInputOption) throws {
        guard let k = graph.inputs.firstIndex(where: { $0.name == o.name }), !graph.isConstant(o.name) else {
            let names = graph.runtimeInputs.map(\.name).joined(separator: ", ")
            throw AtomicFile.Error(description: "--image-input \(o.name): no such input (inputs: \(names))")
        }
        let input = graph.inputs[k]
        let c = o.color.channels
        guard let s = input.shape, s.count == 4, s[1].value == c else {
            throw AtomicFile.Error(description: "--image-input \(o.name): shape \(input.shapeDescription) is not [N, \(c), H, W] for \(o.color.rawValue)")
        }
        guard o.bias.count <= 1 || o.bias.count == c else {
            throw AtomicFile.Error(description: "--bias: \(o.bias.count) values; give 1 or \(c) (one per \(o.color.rawValue) channel)")
        }
        if graph.metadata.imageInputs.contains(where: { $0.name == o.name }) {
            throw AtomicFile.Error(description: "--image-input \(o.name): already an image input")
        }
        var names = NameAllocator(taken: graph.nodes.flatMap { $0.inputs + $0.outputs } + graph.constants.map(\.name)
                                      + graph.inputs.map(\.name))
        func fresh(_ base: String) -> String { names.fresh(base) }
        var current = o.name
        var newNodes: [Node] = []
        if o.scale != 1 {
            let sc = fresh("\(o.name)_image_scale"), out = fresh("\(o.name)_scaled")
            graph.setConstant(Constant(name: sc, tensor: Tensor([o.scale], shape: [])))
            newNodes.append(Node(name: fresh("\(o.name)_preprocess_scale"), opType: "Mul", inputs: [current, sc], outputs: [out]))
            current = out
        }
        let bias = o.bias.count == 1 ? Array(repeating: o.bias[0], count: c) : o.bias
        if bias.contains(where: { $0 != 0 }) {
            let bc = fresh("\(o.name)_image_bias"), out = fresh("\(o.name)_biased")
            graph.setConstant(Constant(name: bc, tensor: Tensor(bias, shape: [1, c, 1, 1])))
            newNodes.append(Node(name: fresh("\(o.name)_preprocess_bias"), opType: "Add", inputs: [current, bc], outputs: [out]))
            current = out
        }
        if current != o.name {
            for i in graph.nodes.indices {
                for j in graph.nodes[i].inputs.indices where graph.nodes[i].inputs[j] == o.name { graph.nodes[i].inputs[j] = current }
            }
            for j in graph.outputs.indices where graph.outputs[j].name == o.name {
                throw AtomicFile.Error(description: "--image-input \(o.name): the input is also an output")
            }
            graph.nodes.insert(contentsOf: newNodes, at: 0)
        }
        graph.metadata.imageInputs.append(ImageInput(name: o.name, color: o.color))
        // The input now takes raw pixels: a normalization from the source file no longer describes it.
        graph.metadata.inputNormalization.removeAll { $0.name == o.name }
    }
}
