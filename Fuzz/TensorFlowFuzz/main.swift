// libFuzzer target for the TensorFlow importer (Sources/ShrinkwrapTensorFlow on top of
// Sources/TensorFlowSchema, SwiftProtobuf and Sources/ShrinkwrapIR): frozen GraphDefs,
// SavedModels and the tensor bundles under them.
//
// Not a SwiftPM target: `make fuzz-tensorflow` compiles SwiftProtobuf from the pinned
// checkout into a static library (as `make fuzz-models` does), then copies the IR, the
// TensorFlow schema and the importer's sources with their cross-module imports removed
// (all but `import SwiftProtobuf`) and compiles them with this file into one module
// (swiftc -sanitize=fuzzer,address).
//
// The input's first byte m picks the reader; the rest is its input:
//   m % 3 == 0  a frozen GraphDef .pb: the whole import, every constant decoded.
//   m % 3 == 1  a SavedModel's saved_model.pb, imported as if it lay in SavedModel folder
//               (m / 3) % n of the n in $TENSORFLOW_FUZZ_SAVEDMODELS (default
//               .build/fuzz/tensorflow-savedmodels): folders 0, 1, … each holding a valid
//               variables/variables.{index,data-00000-of-00001}, which the import reads when
//               the graph has variables. The make target copies the fixture SavedModels'
//               variables there, numbered in the order it writes their seeds, so each
//               saved_model.pb seed meets its own variables. Only the .pb is fuzzed; without
//               those folders the variables are "missing" (an error, still a valid run).
//   m % 3 == 2  a tensor bundle: [4-byte little-endian length L][L bytes of .index (L clamped
//               to what follows)][the data file]. The data is written to one scratch file per
//               process (<tmp>/shrinkwrap-tffuzz-<pid>/bundle.data-00000-of-00001, the one shard
//               of a bundle whose header says num_shards 1); the index is read from memory, then
//               every entry is read as numbers and as strings, and the object graph decoded.
//
// Seeds (`make fuzz-tensorflow`): the fixtures in Tests/ShrinkwrapTensorFlowTests/Fixtures
// with their mode byte prepended: the frozen .pb files (mode 0), the SavedModels'
// saved_model.pb (mode 1 + 3k, k the SavedModel's folder) and their variables and the
// "many" bundle as index + data (mode 2).
//
// The imports run without an ImportEvaluator (the facade's runs the interpreter, which is not
// compiled in), so graphs that need values computed from input shapes are refused, not imported.
// Constants are limited to 2^22 elements (TFTensorProto.elementLimit), as the model fuzzer limits
// the interpreter's results: a Const's value fields repeat their last value, and a 2^28-element
// one (the importer's own limit) is a 2 GiB allocation from a few bytes, past libFuzzer's malloc limit.
//
// Any reader may throw; a crash, trap, sanitizer report, hang or runaway allocation is a bug.

import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    _ = smallConstants
    guard let data, size > 0 else { return 0 }
    let mode = Int(data[0])
    let rest = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch mode % 3 {
    case 0:
        if let graph = try? TensorFlowImporter.importGraphDef(bytes: rest, file: "fuzz.pb") { decodeConstants(graph) }
    case 1:
        let folder = savedModelFolders.isEmpty ? scratch.appendingPathComponent("no-variables")
                                               : savedModelFolders[(mode / 3) % savedModelFolders.count]
        let pb = folder.appendingPathComponent("saved_model.pb")
        if let graph = try? TFSavedModel.importModel(pb: pb, bytes: rest, inputs: nil, outputs: nil, signature: "serving_default") {
            decodeConstants(graph)
        }
    default:
        readBundle(rest)
    }
    return 0
}

private let smallConstants: Void = { TFTensorProto.elementLimit = 1 << 22 }()

private func decodeConstants(_ graph: Graph) {
    for c in graph.constants { _ = c.encoding.decoded().count }
}

/// The SavedModel folders (0, 1, … while they have a variables index) mode 1 imports in.
private let savedModelFolders: [URL] = {
    let root = URL(fileURLWithPath: ProcessInfo.processInfo.environment["TENSORFLOW_FUZZ_SAVEDMODELS"] ?? ".build/fuzz/tensorflow-savedmodels")
    var folders: [URL] = []
    while true {
        let folder = root.appendingPathComponent("\(folders.count)")
        guard FileManager.default.fileExists(atPath: folder.appendingPathComponent("variables/variables.index").path) else { break }
        folders.append(folder)
    }
    FileHandle.standardError.write(Data("TensorFlowFuzz: \(folders.count) SavedModel variables folders in \(root.path)\n".utf8))
    return folders
}()

/// This process's scratch folder (removed at exit): the bundle of mode 2 lives there.
private let scratch: URL = {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("shrinkwrap-tffuzz-\(ProcessInfo.processInfo.processIdentifier)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    atexit { removeScratch() }
    return url
}()

private func removeScratch() { try? FileManager.default.removeItem(at: scratch) }

private let bundlePrefix = scratch.appendingPathComponent("bundle")
private let bundleData = URL(fileURLWithPath: bundlePrefix.path + ".data-00000-of-00001")

/// Mode 2: a bundle's index and data file, every entry read.
private func readBundle(_ bytes: [UInt8]) {
    guard bytes.count >= 4 else { return }
    let declared = Int(bytes[0]) | Int(bytes[1]) << 8 | Int(bytes[2]) << 16 | Int(bytes[3]) << 24
    let length = min(declared, bytes.count - 4)
    let index = Array(bytes[4..<(4 + length)])
    guard let bundle = try? TensorBundle(index: index, prefix: bundlePrefix) else { return }
    guard (try? Data(bytes[(4 + length)...]).write(to: bundleData)) != nil else { fatalError("cannot write \(bundleData.path)") }
    for name in bundle.names {
        _ = try? bundle.tensor(name)
        _ = try? bundle.strings(name)
    }
    _ = try? bundle.objectGraph()
}
