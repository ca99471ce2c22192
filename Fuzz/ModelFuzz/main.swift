// libFuzzer target for whole models: every input is offered to the ONNX
// importer (Sources/ShrinkwrapONNX), the Core ML importer
// (Sources/ShrinkwrapCoreML) and, split at its last "MILBLOB:" marker into a
// Model message and its weight.bin, the ML Program importer
// (Sources/ShrinkwrapCoreML/MIL); what imports goes through what the tool does
// with a graph — constant decoding, the interpreter (Sources/ShrinkwrapRuntime),
// export preparation and all four exporters (ONNX, Core ML NeuralNetwork and ML
// Program, TFLite), with the ONNX, ML Program and TFLite files written imported again.
//
// Not a SwiftPM target: `make fuzz-models` compiles SwiftProtobuf from the
// pinned checkout into a static library, then copies the IR, Runtime, both
// protobuf schemas, FlatBuffers, ZipArchive and the three formats' sources with
// their cross-module imports removed (all but `import SwiftProtobuf`) and
// compiles them with this file into one module (swiftc -sanitize=fuzzer,address).
// Seeds: the samples, the ONNX node suite and model suites in .testdata (when
// `make testdata` made them) and the .mlmodel files the Core ML suites wrote.
//
// Any step may throw; a crash, trap, sanitizer report, hang or runaway
// allocation is a bug.

import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    _ = smallTensors
    let bytes = data.map { Data(bytes: $0, count: size) } ?? Data()
    let onnx = bytes.withUnsafeBytes { try? ONNXImporter.importModel(bytes: $0, file: "fuzz.onnx", directory: nil, liftingFrom: nil) }
    // Initializers' raw_data read in place (ONNXRawDataScan, as large models are) must give the same graph, or fail alike.
    let lifted = bytes.withUnsafeBytes { try? ONNXImporter.importModel(bytes: $0, file: "fuzz.onnx", directory: nil, liftingFrom: 1) }
    if !sameImport(onnx, lifted) { fatalError("ONNX import with lifted raw_data differs from SwiftProtobuf's") }
    if let graph = onnx { exercise(graph) }
    if let graph = try? CoreMLImporter.importModel(data: bytes, file: "fuzz.mlmodel") { exercise(graph) }
    if let graph = importMLProgram(bytes) { exercise(graph) }
    return 0
}

/// An ML Program with its weights: the input is the Model message, the marker "MILBLOB:", then the
/// bytes of weight.bin (the last marker splits). The program's blob file is that part, in memory.
let milBlobMarker = Data("MILBLOB:".utf8)

private func importMLProgram(_ bytes: Data) -> Graph? {
    guard let marker = bytes.range(of: milBlobMarker, options: .backwards),
          let model = try? MILImporter.parse(bytes[bytes.startIndex..<marker.lowerBound], file: "fuzz.mlmodel") else { return nil }
    let weights = [UInt8](bytes[marker.upperBound...])
    return try? MILImporter.importProgram(model, file: "fuzz.mlmodel", blobFiles: [MLPackage.modelPathPrefix + "weights/weight.bin": weights])
}

/// Both failed, or both gave the same nodes and bit-identical constants (NaN weights compare equal).
private func sameImport(_ a: Graph?, _ b: Graph?) -> Bool {
    guard let a, let b else { return (a == nil) == (b == nil) }
    guard a.nodes.count == b.nodes.count, a.constants.count == b.constants.count else { return false }
    for (m, n) in zip(a.nodes, b.nodes) where m.opType != n.opType || m.inputs != n.inputs || m.outputs != n.outputs { return false }
    for (c, d) in zip(a.constants, b.constants) {
        let x = c.encoding.decoded(), y = d.encoding.decoded()
        guard c.name == d.name, x.dtype == y.dtype, x.shape == y.shape else { return false }
        switch (x.storage, y.storage) {
        case (.float(let p), .float(let q)): if p.map(\.bitPattern) != q.map(\.bitPattern) { return false }
        default: if x.storage != y.storage { return false }
        }
    }
    return true
}

/// Results of at most 2^22 elements (16 MiB of float32) instead of the CLI's 2^31: a mutant that
/// asks for more gets the interpreter's "too large" error quickly, within the fuzzer's memory limit.
/// (The light model seeds declare their weights by ConstantOfShape, up to 10^8 elements each.)
private let smallTensors: Void = { KernelContext.elementLimit = 1 << 22 }()

/// Inputs of at most this many elements each are run; larger graphs are imported and
/// exported but not run (a legitimately big model is slow, not a bug).
private let inputElementLimit = 1 << 16

/// Export preparation runs the graph once on zeros to annotate shapes, so it is skipped when
/// the inputs hold more than this many elements in all: 3×224×224 seeds pass, but a mutant
/// with a 1000×1000 input and an 80×60 dilated pooling window legitimately spends 0.6 s in a
/// release build and 14 s under ASan (found as a timeout; not a bug).
private let preparedInputLimit = 1 << 18

private func exercise(_ graph: Graph) {
    for c in graph.constants { _ = c.encoding.decoded().count }
    if let inputs = smallInputs(graph), let interpreter = try? Interpreter(graph: graph, options: .init(threads: 1)) {
        _ = try? interpreter.run(inputs)
    }
    if let onnx = try? ONNXExporter.export(graph) {
        _ = try? ONNXImporter.importModel(data: onnx, file: "fuzz-reexported.onnx")
    }
    guard preparedInputsAreSmall(graph) else { return }
    // Loops kept: every fixed-shape exporter writes them (and reads its own back).
    if let prepared = try? ExportPreparation.prepare(graph, keepingLoops: true) {
        _ = try? CoreMLExporter.export(prepared.graph)
        if let package = try? MILExporter.export(prepared.graph), let model = try? MILImporter.parse(package.model, file: "fuzz-reexported.mlmodel") {
            _ = try? MILImporter.importProgram(model, file: "fuzz-reexported.mlmodel",
                                               blobFiles: [MLPackage.modelPathPrefix + "weights/weight.bin": package.weights])
        }
        if let tflite = try? TFLiteExporter.export(prepared.graph) {
            _ = try? TFLiteImporter.importModel(bytes: [UInt8](tflite), file: "fuzz-reexported.tflite")
        }
    }
}

/// A runtime input's shape with its free dimensions as 1 (what preparation fixes the batch to).
private func concreteShape(_ input: ValueInfo) -> [Int] { (input.shape ?? []).map { $0.value ?? 1 } }

private func preparedInputsAreSmall(_ graph: Graph) -> Bool {
    var total = 0
    for input in graph.runtimeInputs {
        guard let n = checkedElementCount(concreteShape(input), limit: preparedInputLimit) else { return false }
        total += n
        if total > preparedInputLimit { return false }
    }
    return true
}

/// Deterministic inputs for every runtime input (free dimensions as 1), or nil when one is too large.
private func smallInputs(_ graph: Graph) -> [String: Tensor]? {
    var out: [String: Tensor] = [:]
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    func next() -> UInt64 {
        state ^= state >> 12; state ^= state << 25; state ^= state >> 27
        return state &* 2_685_821_657_736_338_717
    }
    for input in graph.runtimeInputs {
        let shape = concreteShape(input)
        guard let n = checkedElementCount(shape, limit: inputElementLimit) else { return nil }
        let dtype = input.dtype ?? .float32
        if dtype.isFloatingPoint {
            out[input.name] = Tensor((0..<n).map { _ in Float(next() >> 40) / Float(1 << 24) - 0.5 }, shape: shape, dtype: dtype)
        } else if dtype == .bool {
            out[input.name] = Tensor(bools: (0..<n).map { _ in next() & 1 == 1 }, shape: shape)
        } else {
            out[input.name] = Tensor(ints: (0..<n).map { _ in Int64(next() % 4) }, shape: shape, dtype: dtype)
        }
    }
    return out
}
