// libFuzzer target for the TFLite importer (Sources/ShrinkwrapTFLite on top of
// Sources/FlatBuffers, Sources/ZipArchive and Sources/ShrinkwrapIR).
//
// Not a SwiftPM target: `make fuzz-tflite` copies those four modules' sources
// with their cross-module imports removed and compiles them with this file
// into one module (swiftc -sanitize=fuzzer,address), then runs it on seeds:
// TFLite models made by flatc from Fuzz/FlatBuffersFuzz/seeds/*.json, the
// converter-made fixtures in .testdata/tflite and the tflite-support files
// with metadata and appended label / vocabulary ZIPs in .testdata/tflite-metadata
// when they exist.
//
// Every input goes through the whole import (FlatBuffer decoding, constant
// decoding, op translation, transpose cancellation, the TFLITE_METADATA
// buffer and the ZIP appended after the model), then the metadata is
// encoded again as the exporter would. The importer may throw; any crash,
// trap, sanitizer report or hang is a bug.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    if let graph = try? TFLiteImporter.importModel(bytes: bytes, file: "fuzz.tflite") {
        // Touch what exporters and the interpreter read: every constant decoded.
        for c in graph.constants { _ = c.encoding.decoded().count }
        // What the TFLite exporter does with the metadata read.
        if let encoded = try? TFLiteMetadata.encode(graph.metadata, inputs: graph.runtimeInputs, outputs: graph.outputs) {
            _ = try? encoded.appendedZip(modelSize: bytes.count)
        }
    }
    return 0
}
