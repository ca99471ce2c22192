// libFuzzer target for the TFLite importer (Sources/ShrinkwrapTFLite on top of
// Sources/FlatBuffers and Sources/ShrinkwrapIR).
//
// Not a SwiftPM target: `make fuzz-tflite` copies those three modules' sources
// with their cross-module imports removed and compiles them with this file
// into one module (swiftc -sanitize=fuzzer,address), then runs it on seeds:
// TFLite models made by flatc from Fuzz/FlatBuffersFuzz/seeds/*.json and the
// converter-made fixtures in .testdata/tflite when they exist.
//
// Every input goes through the whole import (FlatBuffer decoding, constant
// decoding, op translation, transpose cancellation). The importer may throw;
// any crash, trap, sanitizer report or hang is a bug.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    if let graph = try? TFLiteImporter.importModel(bytes: bytes, file: "fuzz.tflite") {
        // Touch what exporters and the interpreter read: every constant decoded.
        for c in graph.constants { _ = c.encoding.decoded().count }
    }
    return 0
}
