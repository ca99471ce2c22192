import FlatBuffers
import ShrinkwrapIR
import ZipArchive

/// TensorFlow Lite model metadata ↔ graph metadata.
///
/// A .tflite file may carry tflite-support's metadata: a FlatBuffer with file
/// identifier "M001" (Schemas/tflite/metadata_schema.fbs, field ids from
/// there) in the model buffer that `Model.metadata` names "TFLITE_METADATA",
/// plus the files it refers to (labels, vocabularies) as members of a ZIP
/// archive appended after the model (what Model Maker and tflite-support's
/// `MetadataPopulator` write).
///
/// ## Import (`read`, called once by the importer)
///
/// | metadata                                               | graph                                              |
/// |--------------------------------------------------------|----------------------------------------------------|
/// | ModelMetadata.name                                     | `metadata.properties` "name"                       |
/// | ModelMetadata.description (wins over Model.description) | `metadata.docString`                              |
/// | author, license                                        | `metadata.author`, `metadata.license`              |
/// | version                                                | `metadata.modelVersion` when an integer, else property "version" |
/// | input / output TensorMetadata.description              | that input's / output's `docString`                |
/// | input NormalizationOptions mean / std                  | `metadata.inputNormalization` (float input = (raw − mean) / std) |
/// | the first output's first TENSOR_AXIS_LABELS file       | `metadata.labels` (one per line, see `labels(fromText:)`) |
/// | an input's RegexTokenizerOptions vocab_file, else an input's VOCABULARY file | `metadata.formatData` "tflite.vocabulary" (the bytes), properties "tflite.vocabulary_file" (its name) and "tflite.tokenizer_regex" (delim_regex_pattern, when given) |
///
/// Other fields (score calibration, bounding boxes, tensor groups, custom
/// metadata, BERT / SentencePiece tokenizers) are not read; a union member
/// newer than this schema is skipped, as tflite-support's own readers do.
///
/// A damaged metadata buffer, or a label / vocabulary file it names that the
/// appended archive does not hold (or holds damaged), is an *error*
/// (`ImportError.malformed`, place "metadata: …"), not a warning: the
/// metadata says how inputs are normalized and what the outputs mean, so
/// importing without it would run the model on wrongly scaled inputs or drop
/// its labels without anyone noticing — and the Task Library and ML Kit
/// refuse such files too. Files the importer does not read are not checked.
///
/// ## Export (for the TFLite exporter)
///
/// ```swift
/// let meta = try TFLiteMetadata.encode(graph.metadata, inputs: graph.runtimeInputs, outputs: graph.outputs)
/// // 1. a model buffer holding meta.metadataBuffer, and Model.metadata entry
/// //    (name: TFLiteMetadata.bufferName, buffer: that buffer's index);
/// // 2. the file = model FlatBuffer bytes + (try meta.appendedZip(modelSize: model.count)).
/// ```
///
/// `inputs` / `outputs` must be in the order the exporter writes the
/// subgraph's inputs / outputs (metadata describes them by position).
/// `TFLiteMetadata.worthWriting(graph.metadata)` tells whether there is
/// anything to write. The buffer holds name, description, version, author,
/// license; per input its name, description and, with a normalization, the
/// NormalizationOptions plus ImageProperties (RGB / GRAYSCALE from a rank-4
/// NHWC shape's last dimension) and the normalized range as Stats; the
/// labels as "labels.txt" (TENSOR_AXIS_LABELS) on output 0; a kept
/// vocabulary as RegexTokenizerOptions on input 0. Same input, same bytes.
public enum TFLiteMetadata {
    /// The `Model.metadata` name of the metadata buffer.
    public static let bufferName = "TFLITE_METADATA"
    /// The metadata FlatBuffer's file identifier.
    public static let fileIdentifier = "M001"
    /// Associated files larger than this are refused (labels and vocabularies are far smaller).
    public static let fileLimit = 1 << 28

    /// `Metadata.formatData` key of a kept vocabulary file's bytes.
    public static let vocabularyKey = "tflite.vocabulary"
    /// `Metadata.properties` key of the vocabulary file's name.
    public static let vocabularyFileKey = "tflite.vocabulary_file"
    /// `Metadata.properties` key of the tokenizer's delim_regex_pattern.
    public static let tokenizerRegexKey = "tflite.tokenizer_regex"
    /// The pattern Model Maker's text classifiers write (Python's r"[^\w\']+").
    public static let modelMakerRegex = "[^\\w\\']+"

    // Field ids (Schemas/tflite/metadata_schema.fbs).
    enum ModelField { static let name = 0, description = 1, version = 2, subgraphs = 3, author = 4, license = 5, files = 6, minParser = 7 }
    enum SubgraphField { static let inputs = 2, outputs = 3, files = 4, inputUnits = 5, outputUnits = 6 }
    enum TensorField { static let name = 0, description = 1, content = 3, units = 4, stats = 5, files = 6 }
    enum FileField { static let name = 0, description = 1, type = 2, locale = 3 }
    /// AssociatedFileType values.
    enum FileType { static let axisLabels: Int8 = 2, vocabulary: Int8 = 5 }
    /// ProcessUnitOptions union members (1-based).
    enum UnitType { static let normalization: UInt8 = 1, bert: UInt8 = 4, sentencePiece: UInt8 = 5, regex: UInt8 = 6 }
    /// ContentProperties union members.
    enum ContentType { static let feature: UInt8 = 1, image: UInt8 = 2 }

    // MARK: - Labels text

    /// Labels from a label file: one per line ("\n" or "\r\n"), trailing
    /// blank lines dropped; other lines are kept as they are (so line k is
    /// label k, blank or not). Nil when the bytes are not UTF-8.
    public static func labels(fromText bytes: [UInt8]) -> [String]? {
        guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
        var lines = text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            var s = String(line)
            if s.unicodeScalars.last == "\r" { s.unicodeScalars.removeLast() }
            return s
        }
        while let last = lines.last, last.unicodeScalars.allSatisfy({ $0 == " " || $0 == "\t" }) { lines.removeLast() }
        return lines
    }

    // MARK: - Import

    /// Reads the model's metadata buffer (if any) into `graph`. `inputs[i]` /
    /// `outputs[i]` are the graph value names of the subgraph's input / output
    /// i (nil for an input the importer made a constant).
    static func read(_ model: TFLiteModel, into graph: inout Graph, inputs: [String?], outputs: [String]) throws {
        guard let entry = model.metadata.first(where: { $0.name == bufferName }) else { return }
        var r = MetadataReader(model: model)
        let root = try readRoot(buffer: entry.buffer, r)
        var md = graph.metadata
        try readModelFields(root, r, into: &md)

        let subgraphs = try r.wrap("ModelMetadata.subgraph_metadata") { try root.tables(ModelField.subgraphs) ?? [] }
        guard let sg = subgraphs.first else { graph.metadata = md; return }
        let (inputMeta, outputMeta) = try readTensorMetadata(sg, r, inputs: inputs.count, outputs: outputs.count)
        var vocabulary = try readInputs(inputMeta, r, inputs: inputs, graph: &graph, into: &md)
        if vocabulary == nil { vocabulary = try readSubgraphTokenizer(sg, r) }
        if let foundLabels = try readOutputs(outputMeta, &r, outputs: outputs, graph: &graph) { md.labels = foundLabels }
        if let v = vocabulary { try readVocabulary(v, &r, into: &md) }
        graph.metadata = md
    }

    /// The place of the (only) subgraph's metadata in error messages.
    private static let subgraphPlace = "subgraph_metadata[0]"
    /// A vocabulary file an input names, with its tokenizer's pattern when a regex tokenizer names it.
    private typealias Vocabulary = (file: MetadataReader.FileRef, pattern: String?)

    /// The root table of the metadata FlatBuffer in model buffer `index`,
    /// after checking the index, the size and the file identifier.
    private static func readRoot(buffer index: Int, _ r: MetadataReader) throws -> Table {
        let model = r.model
        guard index >= 0, index < model.buffers.count else {
            throw r.fail("Model.metadata '\(bufferName)'", "buffer index \(index) is past the \(model.buffers.count) buffers")
        }
        let bytes = Array(model.buffers[index])
        let place0 = "buffer \(index)"
        guard bytes.count >= 8 else { throw r.fail(place0, "\(bytes.count) bytes is too short for a metadata FlatBuffer") }
        let fb = FlatBuffer(bytes: bytes)
        guard fb.hasFileIdentifier(fileIdentifier) else {
            let id = fb.fileIdentifierBytes.map { String(decoding: $0, as: UTF8.self) } ?? "?"
            throw r.fail(place0, "file identifier is '\(id)', not '\(fileIdentifier)' (not TFLite model metadata)")
        }
        return try r.wrap("ModelMetadata") { try fb.root() }
    }

    /// ModelMetadata's name, description, version, author and license into `md`.
    private static func readModelFields(_ root: Table, _ r: MetadataReader, into md: inout Metadata) throws {
        let name = try r.string(root, ModelField.name, "ModelMetadata.name")
        let description = try r.string(root, ModelField.description, "ModelMetadata.description")
        let version = try r.string(root, ModelField.version, "ModelMetadata.version")
        let author = try r.string(root, ModelField.author, "ModelMetadata.author")
        let license = try r.string(root, ModelField.license, "ModelMetadata.license")
        if !name.isEmpty { md.properties.append(("name", name)) }
        if !description.isEmpty { md.docString = description }
        if !author.isEmpty { md.author = author }
        if !license.isEmpty { md.license = license }
        if let v = Int(version), v != 0 { md.modelVersion = v } else if !version.isEmpty { md.properties.append(("version", version)) }
    }

    /// The subgraph's input and output TensorMetadata, each list empty or one per
    /// subgraph input / output (`inputs` / `outputs` of them).
    private static func readTensorMetadata(_ sg: Table, _ r: MetadataReader, inputs: Int, outputs: Int) throws -> (inputs: [Table], outputs: [Table]) {
        let inputMeta = try r.wrap("\(subgraphPlace).input_tensor_metadata") { try sg.tables(SubgraphField.inputs) ?? [] }
        let outputMeta = try r.wrap("\(subgraphPlace).output_tensor_metadata") { try sg.tables(SubgraphField.outputs) ?? [] }
        // MetadataPopulator writes exactly one TensorMetadata per subgraph input and output.
        guard inputMeta.isEmpty || inputMeta.count == inputs else {
            throw r.fail("\(subgraphPlace).input_tensor_metadata", "describes \(inputMeta.count) inputs, but the model has \(inputs)")
        }
        guard outputMeta.isEmpty || outputMeta.count == outputs else {
            throw r.fail("\(subgraphPlace).output_tensor_metadata", "describes \(outputMeta.count) outputs, but the model has \(outputs)")
        }
        return (inputMeta, outputMeta)
    }

    /// Each input's description (into `graph`) and normalization (into `md`);
    /// returns the first vocabulary an input names, through a regex tokenizer
    /// among its process units or else as a VOCABULARY associated file.
    private static func readInputs(_ inputMeta: [Table], _ r: MetadataReader, inputs: [String?], graph: inout Graph,
                                   into md: inout Metadata) throws -> Vocabulary? {
        var vocabulary: Vocabulary?
        for (i, t) in inputMeta.enumerated() {
            let place = "\(subgraphPlace).input_tensor_metadata[\(i)]"
            let desc = try r.string(t, TensorField.description, place + ".description")
            let valueName = inputs[i]
            if let valueName, !desc.isEmpty, let k = graph.inputs.firstIndex(where: { $0.name == valueName }) { graph.inputs[k].docString = desc }
            let units = try r.wrap(place + ".process_units") { try t.tables(TensorField.units) ?? [] }
            try readNormalizations(units, r, place: place + ".process_units", input: valueName, into: &md)
            if vocabulary == nil, let tokenizer = try r.regexTokenizer(units, place + ".process_units"), let f = tokenizer.file {
                vocabulary = (f, tokenizer.pattern)
            }
            if vocabulary == nil, let f = try r.files(t, TensorField.files, place + ".associated_files").first(where: { $0.type == FileType.vocabulary }) {
                vocabulary = (f, nil)
            }
        }
        return vocabulary
    }

    /// The NormalizationOptions among one input's process `units` into `md`
    /// (checked; the first one for an input is kept).
    private static func readNormalizations(_ units: [Table], _ r: MetadataReader, place: String, input valueName: String?,
                                           into md: inout Metadata) throws {
        for (k, u) in units.enumerated() {
            let p = "\(place)[\(k)]"
            guard let option = try r.wrap(p + ".options", { try u.union(1) }), option.type == UnitType.normalization else { continue }
            guard let n = option.table else { throw r.fail(p + ".options", "NormalizationOptions has no value") }
            let mean = try r.wrap(p + ".options.mean") { try n.scalars(0, as: Float.self) ?? [] }
            let std = try r.wrap(p + ".options.std") { try n.scalars(1, as: Float.self) ?? [] }
            guard !mean.isEmpty, !std.isEmpty else { throw r.fail(p + ".options", "NormalizationOptions needs mean and std (has \(mean.count) and \(std.count) values)") }
            guard mean.count <= 4096, std.count <= 4096 else { throw r.fail(p + ".options", "\(max(mean.count, std.count)) normalization values is more than any input has channels") }
            guard mean.allSatisfy(\.isFinite), std.allSatisfy({ $0.isFinite && $0 != 0 }) else {
                throw r.fail(p + ".options", "mean \(mean.prefix(4)) / std \(std.prefix(4)) must be finite, and std not 0")
            }
            if let valueName, md.normalization(of: valueName) == nil {
                md.inputNormalization.append(InputNormalization(name: valueName, mean: mean, std: std))
            }
        }
    }

    /// The vocabulary of a regex tokenizer among the subgraph's input_process_units, if any.
    private static func readSubgraphTokenizer(_ sg: Table, _ r: MetadataReader) throws -> Vocabulary? {
        let units = try r.wrap("\(subgraphPlace).input_process_units") { try sg.tables(SubgraphField.inputUnits) ?? [] }
        if let tokenizer = try r.regexTokenizer(units, "\(subgraphPlace).input_process_units"), let f = tokenizer.file { return (f, tokenizer.pattern) }
        return nil
    }

    /// Each output's description (into `graph`); returns the labels of the
    /// first TENSOR_AXIS_LABELS file an output names, read from the archive.
    private static func readOutputs(_ outputMeta: [Table], _ r: inout MetadataReader, outputs: [String], graph: inout Graph) throws -> [String]? {
        var foundLabels: [String]?
        for (i, t) in outputMeta.enumerated() {
            let place = "\(subgraphPlace).output_tensor_metadata[\(i)]"
            let desc = try r.string(t, TensorField.description, place + ".description")
            if !desc.isEmpty, let k = graph.outputs.firstIndex(where: { $0.name == outputs[i] }) { graph.outputs[k].docString = desc }
            if foundLabels == nil, let f = try r.files(t, TensorField.files, place + ".associated_files").first(where: { $0.type == FileType.axisLabels }) {
                let data = try r.contents(of: f.name, f.place)
                guard let l = labels(fromText: data) else { throw r.fail("\(f.place) '\(f.name)'", "the label file is not UTF-8 text") }
                foundLabels = l
            }
        }
        return foundLabels
    }

    /// The vocabulary file's bytes (from the archive), its name and the tokenizer's pattern into `md`.
    private static func readVocabulary(_ v: Vocabulary, _ r: inout MetadataReader, into md: inout Metadata) throws {
        let data = try r.contents(of: v.file.name, v.file.place)
        md.formatData.append((vocabularyKey, data))
        md.properties.append((vocabularyFileKey, v.file.name))
        if let p = v.pattern, !p.isEmpty { md.properties.append((tokenizerRegexKey, p)) }
    }

    /// What the steps of `read` share: the model (its file name is in every
    /// error's place) and the appended ZIP of associated files, opened once
    /// when first needed.
    private struct MetadataReader {
        let model: TFLiteModel
        var archive: ZipArchive?

        struct FileRef { var name: String; var type: Int8; var place: String }

        func fail(_ place: String, _ reason: String) -> ImportError {
            ImportError.malformed(SourceLocation(file: model.file, place: "metadata: \(place)"), reason: reason)
        }

        func wrap<T>(_ place: String, _ body: () throws -> T) throws -> T {
            do { return try body() } catch let e as FlatBufferError { throw fail(place, e.description) }
        }

        func string(_ t: Table, _ id: Int, _ place: String) throws -> String { try wrap(place) { try t.string(id) ?? "" } }

        /// An associated file's bytes, from the ZIP appended after the model.
        mutating func contents(of fileName: String, _ place: String) throws -> [UInt8] {
            let where_ = "\(place) '\(fileName)'"
            if archive == nil {
                guard ZipArchive.hasEndRecord(model.bytes) else {
                    throw fail(where_, "the file has no ZIP archive of associated files appended after the model, so '\(fileName)' is missing")
                }
                do { archive = try ZipArchive(bytes: model.bytes, file: model.file, memberLimit: fileLimit) } catch let e as ZipArchive.Error {
                    throw fail(where_, "the appended ZIP archive is damaged: \(e.reason)")
                }
            }
            guard let archive else { throw fail(where_, "internal: no archive") }
            do { return try archive.contents(ofMember: fileName) } catch let e as ZipArchive.Error {
                throw fail(where_, "in the appended ZIP archive: \(e.reason)")
            }
        }

        /// The AssociatedFiles in field `id` of `t`, each with a name.
        func files(_ t: Table, _ id: Int, _ place: String) throws -> [FileRef] {
            let tables = try wrap(place) { try t.tables(id) ?? [] }
            return try tables.enumerated().map { k, f in
                let p = "\(place)[\(k)]"
                let fileName = try string(f, FileField.name, p + ".name")
                let type = try wrap(p + ".type") { try f.scalar(FileField.type, default: Int8(0)) }
                guard !fileName.isEmpty else { throw fail(p, "associated file has no name") }
                return FileRef(name: fileName, type: type, place: p)
            }
        }

        /// The regex tokenizer's vocabulary and pattern among `units`, if any.
        func regexTokenizer(_ units: [Table], _ place: String) throws -> (file: FileRef?, pattern: String)? {
            for (k, u) in units.enumerated() {
                let p = "\(place)[\(k)]"
                guard let option = try wrap(p + ".options", { try u.union(1) }), option.type == UnitType.regex else { continue }
                guard let t = option.table else { throw fail(p + ".options", "RegexTokenizerOptions has no value") }
                let pattern = try string(t, 0, p + ".options.delim_regex_pattern")
                return (try files(t, 1, p + ".options.vocab_file").first, pattern)
            }
            return nil
        }
    }

    // MARK: - Export

    /// What the exporter writes: the metadata FlatBuffer and the files it names.
    public struct Encoded: Sendable, Equatable {
        /// The "M001" FlatBuffer: the data of the buffer `Model.metadata` names `TFLiteMetadata.bufferName`.
        public var metadataBuffer: [UInt8]
        /// The associated files, in the order they go into the archive.
        public var files: [AssociatedFile]

        public struct AssociatedFile: Sendable, Equatable {
            public var name: String
            public var data: [UInt8]
            public init(name: String, data: [UInt8]) { self.name = name; self.data = data }
        }

        /// The stored ZIP to append right after a model FlatBuffer of
        /// `modelSize` bytes, offsets counted from the model's first byte as
        /// MetadataPopulator writes them; empty when there are no files.
        public func appendedZip(modelSize: Int) throws -> [UInt8] {
            if files.isEmpty { return [] }
            do {
                return try ZipWriter.stored(files.map { ($0.name, $0.data) }, offsetBase: modelSize, file: "TFLite associated files")
            } catch let e as ZipArchive.Error {
                throw ExportError.unsupported(format: "tflite", what: e.description)
            }
        }
    }

    /// True when `metadata` has anything the metadata buffer would carry.
    public static func worthWriting(_ m: Metadata) -> Bool {
        !m.docString.isEmpty || !m.author.isEmpty || !m.license.isEmpty || m.modelVersion != 0 || !m.labels.isEmpty
            || !m.inputNormalization.isEmpty || m.property("name") != nil || m.property("version") != nil || m.formatData(vocabularyKey) != nil
    }

    /// The metadata buffer and associated files for a model whose subgraph
    /// inputs / outputs are `inputs` / `outputs`, in that order.
    public static func encode(_ m: Metadata, inputs: [ValueInfo], outputs: [ValueInfo]) throws -> Encoded {
        func refuse(_ what: String) -> ExportError { ExportError.unsupported(format: "tflite", what: "metadata: \(what)") }
        var files: [Encoded.AssociatedFile] = []
        func fileName(_ wanted: String) -> String {
            var n = wanted, k = 1
            while files.contains(where: { $0.name == n }) { n = "\(k)_\(wanted)"; k += 1 }
            return n
        }
        if let bad = m.labels.firstIndex(where: { $0.contains("\n") || $0.contains("\r") }) {
            throw refuse("label \(bad) contains a line break, which a label file cannot hold")
        }
        if !m.labels.isEmpty && outputs.isEmpty { throw refuse("labels, but the model has no output to attach them to") }
        for n in m.inputNormalization where !inputs.contains(where: { $0.name == n.name }) {
            throw refuse("normalization of '\(n.name)', which is not an input")
        }

        let b = FlatBufferBuilder()
        func optionalString(_ s: String?) -> FlatBufferOffset? { s.flatMap { $0.isEmpty ? nil : b.createString($0) } }
        func associatedFile(_ name: String, _ description: String, _ type: Int8) -> FlatBufferOffset {
            let n = b.createString(name), d = b.createString(description)
            return b.table { t in t.add(FileField.name, n); t.add(FileField.description, d); t.add(FileField.type, type, default: 0) }
        }
        var minParser = "1.0.0"
        var inputTables: [FlatBufferOffset] = []
        for (i, info) in inputs.enumerated() {
            let name = b.createString(info.name), desc = optionalString(info.docString)
            var units: [FlatBufferOffset] = []
            var content: FlatBufferOffset?
            var stats: FlatBufferOffset?
            if let n = m.normalization(of: info.name) {
                let mean = b.createVector(n.mean), std = b.createVector(n.std)
                let options = b.table { t in t.add(0, mean); t.add(1, std) }
                units.append(b.table { t in t.addUnion(1, type: UnitType.normalization, value: options) })
                // An image: ImageProperties with the colour space the channel count gives; the range of
                // (pixel − mean) / std over 0…255 as Stats, as tflite-support's image MetadataWriter does.
                let dims = info.shape ?? []
                let channels = dims.count == 4 ? dims[3].value : nil
                if channels == 1 || channels == 3 {
                    let image = b.table { t in t.add(0, Int8(channels == 1 ? 2 : 1), default: 0) }
                    content = b.table { t in t.addUnion(1, type: ContentType.image, value: image) }
                }
                let c = max(n.mean.count, n.std.count)
                func at(_ v: [Float], _ k: Int) -> Float { v.count == 1 ? v[0] : v[k] }
                if n.mean.count == n.std.count || n.mean.count == 1 || n.std.count == 1 {
                    let lo = (0..<c).map { (0 - at(n.mean, $0)) / at(n.std, $0) }, hi = (0..<c).map { (255 - at(n.mean, $0)) / at(n.std, $0) }
                    let maxV = b.createVector(zip(lo, hi).map { Swift.max($0, $1) }), minV = b.createVector(zip(lo, hi).map { Swift.min($0, $1) })
                    stats = b.table { t in t.add(0, maxV); t.add(1, minV) }
                }
            }
            if i == 0, let vocab = m.formatData(vocabularyKey) {
                let vName = fileName(m.property(vocabularyFileKey).map { String($0.split(separator: "/").last ?? "vocab.txt") } ?? "vocab.txt")
                files.append(.init(name: vName, data: vocab))
                let fileTable = associatedFile(vName, "Vocabulary file to convert natural language words to embedding vectors.", FileType.vocabulary)
                let fv = b.createVector(offsets: [fileTable])
                let pattern = b.createString(m.property(tokenizerRegexKey) ?? modelMakerRegex)
                let options = b.table { t in t.add(0, pattern); t.add(1, fv) }
                units.append(b.table { t in t.addUnion(1, type: UnitType.regex, value: options) })
                minParser = "1.2.1"
            }
            let unitVector = units.isEmpty ? nil : b.createVector(offsets: units)
            inputTables.append(b.table { t in
                t.add(TensorField.name, name); t.add(TensorField.description, desc); t.add(TensorField.content, content)
                t.add(TensorField.units, unitVector); t.add(TensorField.stats, stats)
            })
        }
        var outputTables: [FlatBufferOffset] = []
        for (i, info) in outputs.enumerated() {
            let name = b.createString(info.name), desc = optionalString(info.docString)
            var fileVector: FlatBufferOffset?
            if i == 0, !m.labels.isEmpty {
                let lName = fileName("labels.txt")
                files.append(.init(name: lName, data: Array((m.labels.joined(separator: "\n") + "\n").utf8)))
                fileVector = b.createVector(offsets: [associatedFile(lName, "Labels for categories that the model can recognize.", FileType.axisLabels)])
            }
            outputTables.append(b.table { t in t.add(TensorField.name, name); t.add(TensorField.description, desc); t.add(TensorField.files, fileVector) })
        }
        let inputVector = b.createVector(offsets: inputTables), outputVector = b.createVector(offsets: outputTables)
        let subgraph = b.table { t in t.add(SubgraphField.inputs, inputVector); t.add(SubgraphField.outputs, outputVector) }
        let subgraphs = b.createVector(offsets: [subgraph])
        let version = m.modelVersion != 0 ? String(m.modelVersion) : m.property("version")
        let name = optionalString(m.property("name")), description = optionalString(m.docString), versionOffset = optionalString(version)
        let author = optionalString(m.author), license = optionalString(m.license), parser = b.createString(minParser)
        let root = b.table { t in
            t.add(ModelField.name, name); t.add(ModelField.description, description); t.add(ModelField.version, versionOffset)
            t.add(ModelField.subgraphs, subgraphs); t.add(ModelField.author, author); t.add(ModelField.license, license)
            t.add(ModelField.minParser, parser)
        }
        let buffer: [UInt8]
        do { buffer = try b.finish(root: root, fileIdentifier: fileIdentifier) } catch {
            throw refuse("cannot build the metadata FlatBuffer: \(error)")
        }
        return Encoded(metadataBuffer: buffer, files: files)
    }
}
