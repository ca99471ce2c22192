/// Where in a file something went wrong, for error messages.
public struct SourceLocation: Sendable, Equatable, CustomStringConvertible {
    public var file: String
    /// A path inside the file: "graph.node[12] 'conv1' (Conv)", "initializer 'w'", "byte 1024".
    public var place: String

    public init(file: String, place: String = "") { self.file = file; self.place = place }

    public var description: String { place.isEmpty ? file : "\(file): \(place)" }
}

extension String {
    /// The string with control characters (newlines, tabs, NUL, …) escaped, so
    /// that names taken from a file cannot break an error message's single line.
    public var escapingControlCharacters: String {
        var out = ""
        for u in unicodeScalars {
            switch u {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 || u.value == 0x7F || (0x80..<0xA0).contains(u.value) || u.value == 0x2028 || u.value == 0x2029 {
                    out += "\\u{\(String(u.value, radix: 16))}"
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out
    }
}

/// An error meant for the user: its description is one complete line naming
/// the file and the place. The CLI prints any of these as `shrinkwrap: error: …`.
public protocol UserFacingError: Error, CustomStringConvertible {}

/// A model file could not be turned into a graph.
public enum ImportError: UserFacingError, Sendable, Equatable {
    /// The file could not be read at all.
    case unreadable(file: String, reason: String)
    /// The bytes are not a valid file of the expected format.
    case malformed(SourceLocation, reason: String)
    /// Ops the importer cannot translate, all of them at once.
    case unsupportedOps(file: String, ops: [String])
    /// A construct the importer refuses (subgraphs, sparse tensors, string tensors, …).
    case unsupported(SourceLocation, what: String)
    /// A tensor's declared size does not match its data, or is too large.
    case badTensor(SourceLocation, reason: String)
    /// An external-data reference that is missing, out of range or escapes the model's folder.
    case badExternalData(SourceLocation, reason: String)
    /// The format of the file is not one Shrinkwrap reads.
    /// `expected`: what is read, from the format registry (".onnx, .tflite, …").
    case unknownFormat(file: String, expected: String)

    public var description: String { text.escapingControlCharacters }

    private var text: String {
        switch self {
        case .unreadable(let f, let r): return "\(f): cannot read: \(r)"
        case .malformed(let l, let r): return "\(l): malformed: \(r)"
        case .unsupportedOps(let f, let ops): return "\(f): unsupported ops (\(ops.count)): \(ops.joined(separator: ", "))"
        case .unsupported(let l, let w): return "\(l): unsupported: \(w)"
        case .badTensor(let l, let r): return "\(l): bad tensor: \(r)"
        case .badExternalData(let l, let r): return "\(l): bad external data: \(r)"
        case .unknownFormat(let f, let e): return "\(f): unknown model format (expected \(e), or an ML Kit bundle folder / manifest.json)"
        }
    }
}

/// The graph is not well formed.
public enum GraphError: UserFacingError, Sendable, Equatable {
    /// A node reads a value that no input, constant or earlier node defines.
    case undefinedValue(node: String, value: String)
    /// The nodes form a cycle through these values.
    case cycle(nodes: [String])
    /// Two producers define the same value.
    case duplicateValue(value: String, node: String)
    /// A graph output is never produced.
    case undefinedOutput(String)
    /// A subgraph (attribute `attribute` of node `node`) is invalid: `reason` says how.
    case inSubgraph(node: String, attribute: String, String)

    public var description: String { text.escapingControlCharacters }

    private var text: String {
        switch self {
        case .undefinedValue(let n, let v): return "node '\(n)' reads undefined value '\(v)'"
        case .cycle(let nodes): return "graph has a cycle through nodes: \(nodes.prefix(8).joined(separator: ", "))\(nodes.count > 8 ? ", …" : "")"
        case .duplicateValue(let v, let n): return "value '\(v)' is defined twice (again by node '\(n)')"
        case .undefinedOutput(let o): return "graph output '\(o)' is never produced"
        case .inSubgraph(let n, let a, let r): return "in subgraph '\(a)' of node '\(n)': \(r)"
        }
    }
}

/// A kernel refused its inputs or attributes while executing.
public enum KernelError: UserFacingError, Sendable, Equatable {
    /// Input shapes or types the op does not accept.
    case invalidInput(node: String, op: String, reason: String)
    /// An attribute value the op does not accept.
    case invalidAttribute(node: String, op: String, attribute: String, reason: String)
    /// The op has no kernel.
    case noKernel(op: String)
    /// A result would be larger than the interpreter allows.
    case tooLarge(node: String, op: String, elements: String, limit: Int)
    /// A graph input was not given or does not fit its declared type/shape.
    case badGraphInput(name: String, reason: String)

    public var description: String { text.escapingControlCharacters }

    private var text: String {
        switch self {
        case .invalidInput(let n, let op, let r): return "node '\(n)' (\(op)): \(r)"
        case .invalidAttribute(let n, let op, let a, let r): return "node '\(n)' (\(op)): attribute '\(a)': \(r)"
        case .noKernel(let op): return "no kernel for op '\(op)'"
        case .tooLarge(let n, let op, let e, let limit): return "node '\(n)' (\(op)): result too large (\(e) elements; the interpreter's limit is \(limit))"
        case .badGraphInput(let name, let r): return "input '\(name)': \(r)"
        }
    }
}

/// A graph could not be written in the requested format.
public enum ExportError: UserFacingError, Sendable, Equatable {
    /// Ops the format has no equivalent for, all of them at once.
    case unsupportedOps(format: String, ops: [String])
    /// A weight's encoding cannot be stored in this format as it is.
    case unsupportedWeight(format: String, tensor: String, reason: String)
    /// Some other construct the format cannot express.
    case unsupported(format: String, what: String)

    public var description: String { text.escapingControlCharacters }

    private var text: String {
        switch self {
        case .unsupportedOps(let f, let ops): return "\(f) cannot express these ops (\(ops.count)): \(ops.joined(separator: ", "))"
        case .unsupportedWeight(let f, let t, let r): return "\(f): weight '\(t)': \(r)"
        case .unsupported(let f, let w): return "\(f): unsupported: \(w)"
        }
    }
}
