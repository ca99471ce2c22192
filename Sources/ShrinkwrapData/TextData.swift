import Foundation
import ShrinkwrapIR

/// A word → id table, as TFLite Model Maker text classifiers ship it
/// (vocab.txt, one "word id" line per entry).
public struct Vocabulary: Sendable, Equatable {
    public var ids: [String: Int64]
    /// The file the table came from (for messages).
    public var source: String
    /// Ids of the special tokens, when the table has them.
    public var start: Int64? { ids["<START>"] }
    public var pad: Int64? { ids["<PAD>"] }
    public var unknown: Int64? { ids["<UNKNOWN>"] }

    public init(ids: [String: Int64], source: String) { self.ids = ids; self.source = source }

    /// Parses "word id" lines (the word is everything before the last run of
    /// spaces or tabs). A file whose lines have no ids at all takes each
    /// line's position (from 0) as its id. Blank lines are skipped; a word
    /// given twice, a negative id, or a mix of lines with and without ids is
    /// an error naming the line.
    public static func parse(_ text: String, source: String) throws -> Vocabulary {
        var ids: [String: Int64] = [:]
        var withIds = 0, withoutIds = 0
        var position: Int64 = 0
        for (n, line) in TextData.lines(text).enumerated() {
            if line.trimmingCharacters(in: .whitespaces).isEmpty { continue }
            var word = String(line)
            var id = position
            if let sep = line.lastIndex(where: { $0 == " " || $0 == "\t" }),
               let value = Int64(line[line.index(after: sep)...]) {
                let w = line[..<sep].trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
                if !w.isEmpty {
                    word = w
                    id = value
                    withIds += 1
                } else {
                    withoutIds += 1
                }
            } else {
                withoutIds += 1
            }
            guard withIds == 0 || withoutIds == 0 else {
                throw InputData.Error("\(source):\(n + 1): mixes \"word id\" lines with lines that have no id")
            }
            guard id >= 0 else { throw InputData.Error("\(source):\(n + 1): negative id \(id)") }
            if ids[word] != nil { throw InputData.Error("\(source):\(n + 1): '\(word)' is listed twice") }
            ids[word] = id
            position += 1
        }
        guard !ids.isEmpty else { throw InputData.Error("\(source): the vocabulary is empty") }
        return Vocabulary(ids: ids, source: source)
    }

    /// Where a model's metadata keeps a vocabulary: the keys a format's
    /// importer stores it under. Data loading does not depend on formats, so
    /// the `Shrinkwrap` facade supplies them (`Vocabulary.MetadataKeys.tflite`:
    /// Model Maker's text classifiers, RegexTokenizerOptions' vocab_file).
    public struct MetadataKeys: Sendable, Equatable {
        /// The `Metadata.formatData` entry holding the vocabulary file's bytes.
        public var vocabulary: String
        /// The `Metadata.properties` entry naming that file (for messages).
        public var fileName: String
        /// The `Metadata.properties` entry holding the tokenizer's split pattern.
        public var tokenizerPattern: String
        /// The split pattern `words(_:)` implements; a vocabulary stored with another one is not used.
        public var wordsPattern: String

        public init(vocabulary: String, fileName: String, tokenizerPattern: String, wordsPattern: String) {
            self.vocabulary = vocabulary; self.fileName = fileName; self.tokenizerPattern = tokenizerPattern; self.wordsPattern = wordsPattern
        }
    }

    /// The vocabulary a model keeps in its metadata under `keys`, when its
    /// words are split the way `words(_:)` splits them (no tokenizer pattern,
    /// or `keys.wordsPattern`); nil otherwise, and nil without keys. A
    /// vocabulary that does not parse is an error.
    public static func fromMetadata(_ graph: Graph, keys: MetadataKeys?) throws -> Vocabulary? {
        guard let keys else { return nil }
        let m = graph.metadata
        guard let bytes = m.formatData(keys.vocabulary) else { return nil }
        if let pattern = m.property(keys.tokenizerPattern), pattern != keys.wordsPattern { return nil }
        let source = "\(m.property(keys.fileName) ?? "vocabulary") in the model's metadata"
        guard let text = String(bytes: bytes, encoding: .utf8) else { throw InputData.Error("\(source): the vocabulary is not UTF-8 text") }
        return try parse(text, source: source)
    }

    public static func load(_ path: String) throws -> Vocabulary {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw InputData.Error("\(path): cannot read the vocabulary: \((error as NSError).localizedDescription)")
        }
        guard let text = String(data: data, encoding: .utf8) else { throw InputData.Error("\(path): the vocabulary is not UTF-8 text") }
        return try parse(text, source: path)
    }

    /// Words as Model Maker's text classifiers split them: lowercased, then
    /// split at every run of characters that are neither word characters
    /// (Unicode letters, numbers, '_') nor an apostrophe — Python's
    /// `re.split(r"[^\w']+", text.lower().strip())` with empty pieces dropped.
    public static func words(_ sentence: String) -> [String] {
        var words: [String] = []
        var current = String.UnicodeScalarView()
        for s in sentence.lowercased().unicodeScalars {
            if isWordScalar(s) || s == "'" {
                current.append(s)
            } else if !current.isEmpty {
                words.append(String(current))
                current = String.UnicodeScalarView()
            }
        }
        if !current.isEmpty { words.append(String(current)) }
        return words
    }

    /// Python's `\w` for str patterns: alphanumeric (a letter category or any numeric type) or '_'.
    static func isWordScalar(_ s: Unicode.Scalar) -> Bool {
        if s == "_" { return true }
        if s.properties.numericType != nil { return true }
        switch s.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter: return true
        default: return false
        }
    }

    /// The ids Model Maker feeds for `sentence`: <START> (when the table has
    /// it), then each word's id (<UNKNOWN>'s for words not in the table),
    /// padded with <PAD>'s id (0 when the table has none) or truncated to `length`.
    public func encode(_ sentence: String, length: Int, place: String) throws -> [Int64] {
        var out: [Int64] = []
        out.reserveCapacity(length)
        if let s = start { out.append(s) }
        for w in Vocabulary.words(sentence) {
            if out.count >= length { break }
            if let id = ids[w] {
                out.append(id)
            } else if let u = unknown {
                out.append(u)
            } else {
                throw InputData.Error("\(place): '\(w)' is not in \(source), which has no <UNKNOWN> entry")
            }
        }
        if out.count > length { out.removeLast(out.count - length) }
        let padding = pad ?? 0
        while out.count < length { out.append(padding) }
        return out
    }
}

/// Text files as model inputs: one sentence per line.
public enum TextData {
    /// File extensions read as text.
    public static let extensions: Set<String> = ["txt"]

    /// Lines ended by "\n", "\r\n" or "\r" (Python's universal newlines).
    /// ("\r\n" is one Character in Swift, so splitting at "\n" alone would miss it.)
    static func lines(_ text: String) -> [Substring] {
        text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" })
    }

    /// The sequence length of `info`: `given`, else the input's fixed last dimension.
    static func sequenceLength(_ given: Int?, for info: ValueInfo) throws -> Int {
        guard let dims = info.shape, dims.count == 1 || dims.count == 2 else {
            throw InputData.Error("input '\(info.name)' \(info.shapeDescription) does not take token ids (text needs a [N] or [1, N] input)")
        }
        if dims.count == 2, let b = dims[0].value, b != 1 {
            throw InputData.Error("input '\(info.name)' \(info.shapeDescription) has batch size \(b); sentences are fed one at a time (batch 1)")
        }
        let fixed = dims[dims.count - 1].value
        if let given {
            guard given >= 1 else { throw InputData.Error("--sequence-length must be at least 1") }
            if let fixed, fixed != given {
                throw InputData.Error("--sequence-length \(given) does not match input '\(info.name)' \(info.shapeDescription)")
            }
            return given
        }
        guard let fixed else {
            throw InputData.Error("input '\(info.name)' \(info.shapeDescription) has no fixed length; give --sequence-length N")
        }
        return fixed
    }

    /// One tensor per non-blank line of `text`.
    public static func tensors(fromText text: String, display: String, for info: ValueInfo, vocabulary: Vocabulary?,
                        sequenceLength: Int?) throws -> [(tensor: Tensor, source: String)] {
        guard let vocabulary else {
            throw InputData.Error("\(display): text input needs --vocab FILE (the model's \"word id\" vocabulary; its metadata has none Shrinkwrap can use)")
        }
        let length = try self.sequenceLength(sequenceLength, for: info)
        let dtype = info.dtype ?? .int32
        guard dtype == .int32 || dtype == .int64 || dtype.isFloatingPoint else {
            throw InputData.Error("input '\(info.name)' is \(dtype); token ids feed int32, int64 or float inputs")
        }
        let shape = info.shape?.count == 2 ? [1, length] : [length]
        var out: [(tensor: Tensor, source: String)] = []
        for (n, raw) in lines(text).enumerated() {
            let line = String(raw)
            if line.trimmingCharacters(in: .whitespaces).isEmpty { continue }
            let place = "\(display):\(n + 1)"
            let ids = try vocabulary.encode(line, length: length, place: place)
            let t = dtype.isFloatingPoint ? Tensor(ids.map { Float($0) }, shape: shape, dtype: dtype) : Tensor(ints: ids, shape: shape, dtype: dtype)
            out.append((t, place))
        }
        guard !out.isEmpty else { throw InputData.Error("\(display): no sentences (the file has no non-blank lines)") }
        return out
    }

    static func tensors(fromFile url: URL, display: String, for info: ValueInfo, vocabulary: Vocabulary?,
                        sequenceLength: Int?) throws -> [(tensor: Tensor, source: String)] {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw InputData.Error("\(display): cannot read: \((error as NSError).localizedDescription)")
        }
        guard let text = String(data: data, encoding: .utf8) else { throw InputData.Error("\(display): not UTF-8 text") }
        return try tensors(fromText: text, display: display, for: info, vocabulary: vocabulary, sequenceLength: sequenceLength)
    }
}
