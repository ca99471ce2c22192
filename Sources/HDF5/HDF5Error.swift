/// A damaged or unsupported HDF5 file: one line naming the file, the byte
/// offset, the structure being read there (with the object's path when it is
/// known) and what is wrong, e.g.
/// `model.h5: offset 4096 (object header of 'model_weights/dense'): continuation block runs past the end of the file (size 3000)`.
public struct HDF5Error: Error, CustomStringConvertible, Equatable, Sendable {
    /// The file name the reader was given (for messages only).
    public let file: String
    /// Where in the file (absolute byte offset) the problem is.
    public let offset: Int
    /// What was being read there, e.g. "object header of 'a/b'"; nil when nothing more specific is known.
    public let context: String?
    /// What is wrong.
    public let reason: String

    public init(file: String, offset: Int, context: String?, reason: String) {
        self.file = file
        self.offset = offset
        self.context = context
        self.reason = reason
    }

    public var description: String {
        let place = context.map { " (\($0))" } ?? ""
        return HDF5Error.oneLine("\(file): offset \(offset)\(place): \(reason)")
    }

    /// `text` with line breaks and other control characters escaped, so a name
    /// read from a file cannot split the message over lines.
    static func oneLine(_ text: String) -> String {
        let short: [Unicode.Scalar: String] = ["\n": "\\n", "\r": "\\r", "\t": "\\t"]
        var out = String.UnicodeScalarView()
        for u in text.unicodeScalars {
            if let s = short[u] {
                out.append(contentsOf: s.unicodeScalars)
            } else if u.properties.generalCategory == .control || u.value == 0x2028 || u.value == 0x2029 {
                out.append(contentsOf: "\\u{\(String(u.value, radix: 16))}".unicodeScalars)
            } else {
                out.append(u)
            }
        }
        return String(out)
    }
}

/// "object header of 'a/b'", "object header of the root group", or just `what` when there is no path.
func describe(_ what: String, _ path: String?) -> String {
    guard let path else { return what }
    return path.isEmpty ? "\(what) of the root group" : "\(what) of '\(path)'"
}
