// libFuzzer target for the FlatBuffers reader (Sources/FlatBuffers).
//
// Not a SwiftPM target: `make fuzz-flatbuffers` compiles it together with
// Sources/FlatBuffers/*.swift into one module,
//   swiftc -O -sanitize=fuzzer,address -parse-as-library Sources/FlatBuffers/*.swift Fuzz/FlatBuffersFuzz/main.swift
// and runs it on seeds made by flatc from Fuzz/FlatBuffersFuzz/seeds/*.json
// (TFLite models) and Tests/FlatBuffersTests/Fixtures/root.json (the test schema).
//
// Every input is walked twice — as a TFLite Model (Schemas/tflite/tflite.fbs)
// and as the test schema's Root (every wire feature: structs, unions, string
// vectors, recursion) — through every accessor. The reader may throw; any
// crash, trap, sanitizer report or hang is a bug.

/// Field ids from Schemas/tflite/tflite.fbs.
private enum TFL {
    enum Model { static let version = 0, operatorCodes = 1, subgraphs = 2, description = 3, buffers = 4, metadataBuffer = 5, metadata = 6, signatureDefs = 7 }
    enum OperatorCode { static let deprecatedBuiltinCode = 0, customCode = 1, version = 2, builtinCode = 3 }
    enum SubGraph { static let tensors = 0, inputs = 1, outputs = 2, operators = 3, name = 4 }
    enum Tensor { static let shape = 0, type = 1, buffer = 2, name = 3, quantization = 4, isVariable = 5, sparsity = 6, shapeSignature = 7, hasRank = 8, variantTensors = 9 }
    enum Quantization { static let min = 0, max = 1, scale = 2, zeroPoint = 3, details = 5, quantizedDimension = 6 }
    enum Sparsity { static let traversalOrder = 0, blockMap = 1, dimMetadata = 2 }
    enum DimensionMetadata { static let format = 0, denseSize = 1, arraySegments = 3, arrayIndices = 5 }
    enum Operator { static let opcodeIndex = 0, inputs = 1, outputs = 2, builtinOptions = 4, customOptions = 5, customOptionsFormat = 6, mutatingVariableInputs = 7, intermediates = 8, largeCustomOptionsOffset = 9, largeCustomOptionsSize = 10 }
    enum Buffer { static let data = 0, offset = 1, size = 2 }
    enum Metadata { static let name = 0, buffer = 1 }
    enum SignatureDef { static let inputs = 0, outputs = 1, signatureKey = 2, subgraphIndex = 4 }
    enum TensorMap { static let name = 0, tensorIndex = 1 }
}

/// Reads any options table without knowing its type: every plausible field
/// as several scalar widths, a string and an int vector.
private func walkUnknownTable(_ t: Table, fields: Int = 12) {
    for id in 0..<fields {
        _ = try? t.scalar(id, default: Int8(0))
        _ = try? t.scalar(id, default: Int32(0))
        _ = try? t.scalar(id, default: Float(0))
        _ = try? t.scalar(id, default: UInt64(0))
        _ = try? t.string(id)
        _ = try? t.scalars(id, as: Int64.self)
    }
}

private func walkTensor(_ t: Table) throws {
    _ = try t.scalars(TFL.Tensor.shape, as: Int32.self)
    _ = try t.scalar(TFL.Tensor.type, default: Int8(0))
    _ = try t.scalar(TFL.Tensor.buffer, default: UInt32(0))
    _ = try t.string(TFL.Tensor.name)
    if let q = try t.table(TFL.Tensor.quantization) {
        _ = try q.scalars(TFL.Quantization.min, as: Float.self)
        _ = try q.scalars(TFL.Quantization.max, as: Float.self)
        _ = try q.vector(TFL.Quantization.scale, of: Float.self)?.reduce(0, +)
        _ = try q.scalars(TFL.Quantization.zeroPoint, as: Int64.self)
        if let d = try q.union(TFL.Quantization.details), let custom = d.table {
            _ = try custom.bytes(0)?.count
        }
        _ = try q.scalar(TFL.Quantization.quantizedDimension, default: Int32(0))
    }
    _ = try t.scalar(TFL.Tensor.isVariable, default: false)
    if let s = try t.table(TFL.Tensor.sparsity) {
        _ = try s.scalars(TFL.Sparsity.traversalOrder, as: Int32.self)
        _ = try s.scalars(TFL.Sparsity.blockMap, as: Int32.self)
        for dm in try s.tables(TFL.Sparsity.dimMetadata) ?? [] {
            _ = try dm.scalar(TFL.DimensionMetadata.format, default: Int8(0))
            _ = try dm.scalar(TFL.DimensionMetadata.denseSize, default: Int32(0))
            for id in [TFL.DimensionMetadata.arraySegments, TFL.DimensionMetadata.arrayIndices] {
                guard let u = try dm.union(id), let v = u.table else { continue }
                switch u.type {
                case 1: _ = try v.scalars(0, as: Int32.self)
                case 2: _ = try v.scalars(0, as: UInt16.self)
                default: _ = try v.bytes(0)
                }
            }
        }
    }
    _ = try t.scalars(TFL.Tensor.shapeSignature, as: Int32.self)
    _ = try t.scalar(TFL.Tensor.hasRank, default: false)
    for v in try t.tables(TFL.Tensor.variantTensors) ?? [] {
        _ = try v.scalars(0, as: Int32.self)
        _ = try v.scalar(1, default: Int8(0))
        _ = try v.scalar(2, default: false)
    }
}

private func walkOperator(_ o: Table) throws {
    _ = try o.scalar(TFL.Operator.opcodeIndex, default: UInt32(0))
    _ = try o.scalars(TFL.Operator.inputs, as: Int32.self)
    _ = try o.scalars(TFL.Operator.outputs, as: Int32.self)
    if let u = try o.union(TFL.Operator.builtinOptions), let options = u.table {
        walkUnknownTable(options)
    }
    _ = try o.bytes(TFL.Operator.customOptions)
    _ = try o.scalar(TFL.Operator.customOptionsFormat, default: Int8(0))
    _ = try o.scalars(TFL.Operator.mutatingVariableInputs, as: Bool.self)
    _ = try o.scalars(TFL.Operator.intermediates, as: Int32.self)
    _ = try o.scalar(TFL.Operator.largeCustomOptionsOffset, default: UInt64(0))
    _ = try o.scalar(TFL.Operator.largeCustomOptionsSize, default: UInt64(0))
}

private func walkTFLiteModel(_ fb: FlatBuffer) throws {
    let m = try fb.root()
    _ = try m.scalar(TFL.Model.version, default: UInt32(0))
    for c in try m.tables(TFL.Model.operatorCodes) ?? [] {
        _ = try c.scalar(TFL.OperatorCode.deprecatedBuiltinCode, default: Int8(0))
        _ = try c.string(TFL.OperatorCode.customCode)
        _ = try c.scalar(TFL.OperatorCode.version, default: Int32(1))
        _ = try c.scalar(TFL.OperatorCode.builtinCode, default: Int32(0))
    }
    for g in try m.tables(TFL.Model.subgraphs) ?? [] {
        for t in try g.tables(TFL.SubGraph.tensors) ?? [] { try walkTensor(t) }
        _ = try g.scalars(TFL.SubGraph.inputs, as: Int32.self)
        _ = try g.scalars(TFL.SubGraph.outputs, as: Int32.self)
        for o in try g.tables(TFL.SubGraph.operators) ?? [] { try walkOperator(o) }
        _ = try g.string(TFL.SubGraph.name)
    }
    _ = try m.string(TFL.Model.description)
    for b in try m.tables(TFL.Model.buffers) ?? [] {
        if let data = try b.bytes(TFL.Buffer.data) { _ = data.first; _ = data.last }
        _ = try b.scalar(TFL.Buffer.offset, default: UInt64(0))
        _ = try b.scalar(TFL.Buffer.size, default: UInt64(0))
    }
    _ = try m.scalars(TFL.Model.metadataBuffer, as: Int32.self)
    for md in try m.tables(TFL.Model.metadata) ?? [] {
        _ = try md.string(TFL.Metadata.name)
        _ = try md.scalar(TFL.Metadata.buffer, default: UInt32(0))
    }
    for s in try m.tables(TFL.Model.signatureDefs) ?? [] {
        for id in [TFL.SignatureDef.inputs, TFL.SignatureDef.outputs] {
            for tm in try s.tables(id) ?? [] {
                _ = try tm.string(TFL.TensorMap.name)
                _ = try tm.scalar(TFL.TensorMap.tensorIndex, default: UInt32(0))
            }
        }
        _ = try s.string(TFL.SignatureDef.signatureKey)
        _ = try s.scalar(TFL.SignatureDef.subgraphIndex, default: UInt32(0))
    }
}

/// Tests/FlatBuffersTests/Fixtures/test.fbs, table Root (recursive through `child`).
private func walkTestRoot(_ t: Table) throws {
    if let s = try t.table(0) {
        for id in 0...14 {
            _ = try? s.scalar(id, default: UInt64(0))
            _ = try? s.scalar(id, default: Double(0))
            _ = try? s.scalar(id, default: Int16(0))
            _ = try? s.scalar(id, default: false)
        }
    }
    for id in 1...3 { _ = try? t.string(id) }
    _ = try? t.scalars(4, as: Int32.self)
    _ = try? t.scalars(5, as: Double.self)
    _ = try? t.scalars(6, as: Bool.self)
    _ = try? t.bytes(7)
    _ = try? t.scalars(8, as: Int32.self)
    for leaf in (try? t.tables(9)) ?? [] {
        _ = try? leaf.string(0)
        _ = try? leaf.scalar(1, default: Int32(7))
    }
    _ = try? t.strings(10)
    if let pos = try? t.structure(11, size: 12) {
        for o in stride(from: 0, through: 12, by: 4) { _ = try? pos.scalar(at: o, as: Float.self) }
    }
    if let mixed = try? t.structure(12, size: 24) {
        _ = try? mixed.scalar(at: 0, as: Int8.self)
        _ = try? mixed.scalar(at: 4, as: Int32.self)
        _ = try? mixed.scalar(at: 8, as: Int16.self)
        _ = try? mixed.scalar(at: 16, as: Int64.self)
        _ = mixed.bytes.count
    }
    for p in (try? t.structs(13, size: 12)) ?? [] { _ = try? p.scalar(at: 8, as: Float.self) }
    if let u = try? t.union(15), let v = u.table {
        _ = try? v.string(0)
        _ = try? v.scalar(0, default: false)
        _ = try? v.scalars(1, as: UInt16.self)
    }
    if let child = try t.table(16) { try walkTestRoot(child) }
    if let tagged = try? t.structure(17, size: 16) {
        _ = try? tagged.scalar(at: 0, as: UInt8.self)
        _ = try? tagged.structure(at: 4, size: 12).scalar(at: 8, as: Float.self)
    }
    _ = try? t.vector(18, of: Int64.self)?.reduce(0, &+)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    let fb = FlatBuffer(bytes: bytes, limits: ReadLimits(maxDepth: 64, maxTableVisits: 100_000))
    _ = try? walkTFLiteModel(fb)
    _ = try? walkTestRoot(fb.root())
    return 0
}
