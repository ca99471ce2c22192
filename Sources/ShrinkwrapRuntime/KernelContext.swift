import ShrinkwrapIR

/// What a kernel sees: its node (attributes, names for errors) and its input
/// tensors (nil for an omitted optional input). Kernels are pure functions of
/// this context and return one tensor per node output.
public struct KernelContext {
    /// The node, held by reference: a context is made for every node the
    /// interpreter runs, and copying a `Node` (strings, arrays, attributes)
    /// into each would retain and release every field (measured: ~20 % of a
    /// graph of small integer ops).
    let nodeRef: NodeRef
    public var node: Node { nodeRef.node }
    public let inputs: [Tensor?]
    /// Worker threads a kernel may use (≥ 1).
    public let threads: Int

    /// Set when the caller observes the nodes of subgraphs too (profiles): If / Loop
    /// hand it to the runs of their bodies.
    public let observe: ((Node, [Tensor]) -> Void)?

    public init(node: Node, inputs: [Tensor?], threads: Int = 1, observe: ((Node, [Tensor]) -> Void)? = nil) {
        self.init(NodeRef(node), inputs: inputs, threads: threads, observe: observe)
    }

    init(_ nodeRef: NodeRef, inputs: [Tensor?], threads: Int, observe: ((Node, [Tensor]) -> Void)? = nil) {
        self.nodeRef = nodeRef; self.inputs = inputs; self.threads = max(1, threads); self.observe = observe
    }

    /// The most elements one result may have: 2^31 (8 GiB of float32), far
    /// beyond any real model's tensor. A result's size can come from values in
    /// the file (ConstantOfShape's shape, Expand, Tile, Range, Resize…), and
    /// Swift cannot recover from a failed allocation, so `checkedCount` refuses
    /// anything larger with an error instead of letting the process die. The
    /// fuzzers lower it to keep their memory small; nothing else should change it.
    nonisolated(unsafe) public static var elementLimit = 1 << 31

    // MARK: errors

    public func fail(_ reason: String) -> KernelError {
        .invalidInput(node: node.label, op: node.opType, reason: reason)
    }

    public func badAttribute(_ name: String, _ reason: String) -> KernelError {
        .invalidAttribute(node: node.label, op: node.opType, attribute: name, reason: reason)
    }

    // MARK: inputs

    public var inputCount: Int { inputs.count }

    /// Required input `i`.
    public func input(_ i: Int) throws -> Tensor {
        guard i < inputs.count, let t = inputs[i] else { throw fail("missing required input \(i)") }
        return t
    }

    /// Optional input `i` (nil when omitted or beyond the list).
    public func optionalInput(_ i: Int) -> Tensor? { i < inputs.count ? inputs[i] : nil }

    /// Required floating-point input `i` and its elements.
    public func floatInput(_ i: Int) throws -> (Tensor, [Float]) {
        let t = try input(i)
        guard let f = t.floats else { throw fail("input \(i) must be floating point, got \(t.dtype)") }
        return (t, f)
    }

    /// Integer values of input `i` (int storage), e.g. shapes and axes.
    public func intValues(_ i: Int) throws -> [Int] {
        let t = try input(i)
        guard let v = t.ints else { throw fail("input \(i) must be an integer tensor, got \(t.dtype)") }
        return v.map { Int(clamping: $0) }
    }

    public func optionalIntValues(_ i: Int) throws -> [Int]? {
        guard optionalInput(i) != nil else { return nil }
        return try intValues(i)
    }

    /// A scalar float from optional input `i` (e.g. Clip's min), nil when omitted.
    public func optionalScalar(_ i: Int) throws -> Float? {
        guard let t = optionalInput(i) else { return nil }
        guard t.count == 1 else { throw fail("input \(i) must be a scalar, has shape \(t.shape)") }
        return Float(t.doubles[0])
    }

    // MARK: attributes

    public func int(_ name: String, default d: Int) throws -> Int {
        switch node.attributes[name] {
        case nil: return d
        case .int(let v)?: return v
        default: throw badAttribute(name, "expected an integer")
        }
    }

    public func float(_ name: String, default d: Float) throws -> Float {
        switch node.attributes[name] {
        case nil: return d
        case .float(let v)?: return v
        case .int(let v)?: return Float(v)
        default: throw badAttribute(name, "expected a float")
        }
    }

    public func string(_ name: String, default d: String) throws -> String {
        switch node.attributes[name] {
        case nil: return d
        case .string(let v)?: return v
        default: throw badAttribute(name, "expected a string")
        }
    }

    public func ints(_ name: String) throws -> [Int]? {
        switch node.attributes[name] {
        case nil: return nil
        case .ints(let v)?: return v
        case .int(let v)?: return [v]
        default: throw badAttribute(name, "expected a list of integers")
        }
    }

    public func floats(_ name: String) throws -> [Float]? {
        switch node.attributes[name] {
        case nil: return nil
        case .floats(let v)?: return v
        case .float(let v)?: return [v]
        default: throw badAttribute(name, "expected a list of floats")
        }
    }

    public func strings(_ name: String) throws -> [String]? {
        switch node.attributes[name] {
        case nil: return nil
        case .strings(let v)?: return v
        case .string(let v)?: return [v]
        default: throw badAttribute(name, "expected a list of strings")
        }
    }

    public func tensorAttribute(_ name: String) throws -> Tensor? {
        switch node.attributes[name] {
        case nil: return nil
        case .tensor(let t)?: return t
        default: throw badAttribute(name, "expected a tensor")
        }
    }

    // MARK: shape helpers

    /// Normalizes a possibly negative axis against `rank`, or throws.
    public func axis(_ a: Int, rank: Int, name: String = "axis") throws -> Int {
        let v = a < 0 ? a + rank : a
        guard v >= 0 && v < max(rank, 1) else { throw badAttribute(name, "axis \(a) out of range for rank \(rank)") }
        return v
    }

    /// Checks that a result of `shape` is allocatable (at most `elementLimit` elements) and returns its element count.
    public func checkedCount(_ shape: [Int]) throws -> Int {
        guard let n = checkedElementCount(shape, limit: Self.elementLimit) else {
            throw KernelError.tooLarge(node: node.label, op: node.opType, elements: shape.map(String.init).joined(separator: "×"),
                                       limit: Self.elementLimit)
        }
        return n
    }
}

/// A node behind a reference, shared by every context made for it; it also keeps what a kernel worked
/// out from the node's attributes on an earlier run (`KernelContext.memo`), under a lock: one
/// interpreter may run on several threads at once.
final class NodeRef: @unchecked Sendable {
    let node: Node
    private var memo: AnyObject?
    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init(_ node: Node) {
        self.node = node
        lock.initialize(to: pthread_mutex_t())
        pthread_mutex_init(lock, nil)
    }

    deinit {
        pthread_mutex_destroy(lock)
        lock.deallocate()
    }

    func memo<T: AnyObject>(_ type: T.Type) -> T? {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return memo as? T
    }

    func remember(_ value: AnyObject) {
        pthread_mutex_lock(lock)
        memo = value
        pthread_mutex_unlock(lock)
    }
}

extension KernelContext {
    /// What this node's kernel remembered on an earlier run (`remember`), if it is a `T`. The kernel
    /// checks that it still applies (the shapes it was worked out for): the inputs may change between runs.
    func memo<T: AnyObject>(_ type: T.Type) -> T? { nodeRef.memo(type) }

    /// Keeps `value` for this node's later runs (attribute parsing, geometry: ~1 µs of a small Conv).
    func remember(_ value: AnyObject) { nodeRef.remember(value) }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A kernel: executes one node.
public typealias Kernel = (KernelContext) throws -> [Tensor]
