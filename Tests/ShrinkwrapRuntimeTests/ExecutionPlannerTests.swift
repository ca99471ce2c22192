import ShrinkwrapIR
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

final class ExecutionPlannerTests: XCTestCase {
    func convGraph(filters: Int, inChannels: Int, w: [Float], bias: [Float]?, bn: Bool) -> Graph {
        var nodes = [Node(name: "conv", opType: "Conv", inputs: ["x", "W"] + (bias == nil ? [] : ["B"]),
                          outputs: [bn ? "c" : "y"], attributes: ["pads": .ints([1, 1, 1, 1])])]
        var consts = [Constant(name: "W", tensor: Tensor(w, shape: [filters, inChannels, 3, 3]))]
        if let bias { consts.append(Constant(name: "B", tensor: Tensor(bias, shape: [filters]))) }
        if bn {
            nodes.append(Node(name: "bn", opType: "BatchNormalization", inputs: ["c", "s", "beta", "mu", "var"], outputs: ["y"],
                              attributes: ["epsilon": .float(1e-3)]))
            let f = Float(filters)
            consts += [Constant(name: "s", tensor: Tensor((0..<filters).map { 1 + Float($0) / f }, shape: [filters])),
                       Constant(name: "beta", tensor: Tensor((0..<filters).map { Float($0) / 10 }, shape: [filters])),
                       Constant(name: "mu", tensor: Tensor((0..<filters).map { -Float($0) / 7 }, shape: [filters])),
                       Constant(name: "var", tensor: Tensor((0..<filters).map { 0.5 + Float($0) / f }, shape: [filters]))]
        }
        return Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(inChannels), .fixed(13), .fixed(13)])],
                     outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)], nodes: nodes, constants: consts)
    }

    func input(_ c: Int, seed: UInt64) -> Tensor {
        var rng = SplitMix(seed: seed)
        return Tensor((0..<(c * 169)).map { _ in rng.nextFloat() * 1000 }, shape: [1, c, 13, 13])
    }

    /// Identical filters must give bit-identical channels on any GEMM backend
    /// (OpenBLAS's FMA kernels alone round identical rows differently).
    func testIdenticalFiltersGiveIdenticalChannels() throws {
        let m = 200, c = 64
        let g = convGraph(filters: m, inChannels: c, w: [Float](repeating: 0.02, count: m * c * 9),
                          bias: [Float](repeating: 0.5, count: m), bn: false)
        let y = try Interpreter(graph: g).run(["x": input(c, seed: 1)])["y"]
        let v = try XCTUnwrap(y?.floats)
        for p in 0..<169 {
            XCTAssertEqual(Set((0..<m).map { v[$0 * 169 + p].bitPattern }).count, 1, "position \(p) (GEMM \(GEMM.backendName))")
        }
    }

    func testDuplicateFiltersStillMatchUnoptimized() throws {
        var rng = SplitMix(seed: 2)
        let m = 6, c = 3
        let distinct = (0..<(2 * c * 9)).map { _ in rng.nextFloat() - 0.5 }
        // Filters 0, 2, 4 equal filter A; 1, 3, 5 filter B.
        var w: [Float] = []
        for o in 0..<m { w += distinct[((o % 2) * c * 9)..<((o % 2 + 1) * c * 9)] }
        let g = convGraph(filters: m, inChannels: c, w: w, bias: [1, 2, 1, 2, 1, 2], bn: false)
        let x = input(c, seed: 3)
        let fast = try Interpreter(graph: g).run(["x": x])["y"]
        let exact = try Interpreter(graph: g, options: .init(optimize: false)).run(["x": x])["y"]
        XCTAssertEqual(fast?.shape, [1, 6, 13, 13])
        for (a, b) in zip(fast?.floats ?? [], exact?.floats ?? []) { XCTAssertEqual(a, b, accuracy: 1e-3 * max(1, abs(b))) }
    }

    func testBatchNormFusedIntoConvGivesTheUnfusedBits() throws {
        var rng = SplitMix(seed: 4)
        let m = 8, c = 4
        let g = convGraph(filters: m, inChannels: c, w: (0..<(m * c * 9)).map { _ in rng.nextFloat() - 0.5 },
                          bias: (0..<m).map { Float($0) }, bn: true)
        let x = input(c, seed: 5)
        let fused = try Interpreter(graph: g).run(["x": x])["y"]?.floats ?? []
        let exact = try Interpreter(graph: g, options: .init(optimize: false)).run(["x": x])["y"]?.floats ?? []
        XCTAssertEqual(fused.count, m * 169)
        XCTAssertEqual(fused.map(\.bitPattern), exact.map(\.bitPattern))
    }

    /// Conv (+ B) → BatchNormalization → Relu, through every Conv path (im2col GEMM, banded
    /// 1×1 and 3×3, depthwise, no bias): the fused Conv gives exactly the three nodes' bits.
    func testFusedBatchNormAndReluKeepTheBitsOnEveryConvPath() throws {
        struct Case { let name: String; let c: Int; let m: Int; let k: Int; let group: Int; let hw: Int; let bias: Bool }
        let cases = [Case(name: "gemm 3x3", c: 5, m: 7, k: 3, group: 1, hw: 9, bias: true),
                     Case(name: "banded 1x1", c: 16, m: 24, k: 1, group: 1, hw: 96, bias: true),
                     Case(name: "banded 3x3", c: 8, m: 12, k: 3, group: 1, hw: 96, bias: false),
                     Case(name: "depthwise", c: 6, m: 6, k: 3, group: 6, hw: 11, bias: true),
                     Case(name: "depthwise no bias", c: 6, m: 6, k: 5, group: 6, hw: 11, bias: false),
                     Case(name: "depthwise, channels in lanes", c: 24, m: 24, k: 3, group: 24, hw: 11, bias: true),
                     Case(name: "depthwise, channels in lanes, no bias", c: 16, m: 16, k: 5, group: 16, hw: 7, bias: false)]
        for t in cases {
            var rng = SplitMix(seed: UInt64(t.c * 31 + t.k))
            let cg = t.c / t.group
            var consts = [Constant(name: "W", tensor: Tensor((0..<(t.m * cg * t.k * t.k)).map { _ in rng.nextFloat() - 0.5 },
                                                            shape: [t.m, cg, t.k, t.k]))]
            if t.bias { consts.append(Constant(name: "B", tensor: Tensor((0..<t.m).map { _ in rng.nextFloat() }, shape: [t.m]))) }
            for (name, lo) in [("s", Float(0.5)), ("beta", -1), ("mu", -1), ("var", 0.1)] {
                consts.append(Constant(name: name, tensor: Tensor((0..<t.m).map { _ in lo + 2 * rng.nextFloat() }, shape: [t.m])))
            }
            let pad = t.k / 2
            let nodes = [Node(name: "conv", opType: "Conv", inputs: ["x", "W"] + (t.bias ? ["B"] : []), outputs: ["c"],
                              attributes: ["pads": .ints([pad, pad, pad, pad]), "group": .int(t.group)]),
                         Node(name: "bn", opType: "BatchNormalization", inputs: ["c", "s", "beta", "mu", "var"], outputs: ["b"]),
                         Node(name: "relu", opType: "Relu", inputs: ["b"], outputs: ["y"])]
            let g = Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(t.c), .fixed(t.hw), .fixed(t.hw)])],
                          outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)], nodes: nodes, constants: consts)
            let x = Tensor((0..<(t.c * t.hw * t.hw)).map { _ in rng.nextFloat() * 4 - 2 }, shape: [1, t.c, t.hw, t.hw])
            let fused = try Interpreter(graph: g, options: .init(threads: 2)).run(["x": x])["y"]?.floats ?? []
            let exact = try Interpreter(graph: g, options: .init(threads: 2, optimize: false)).run(["x": x])["y"]?.floats ?? []
            XCTAssertEqual(fused.count, t.m * t.hw * t.hw, t.name)
            XCTAssertEqual(fused.map(\.bitPattern), exact.map(\.bitPattern), t.name)
            XCTAssertTrue(fused.contains { $0 == 0 } && fused.contains { $0 > 0 }, "\(t.name): the Relu has work to do")
        }
    }

    /// Conv → BatchNormalization (float32) → each activation `FusedActivation` knows, through every
    /// Conv path (im2col GEMM with its parallel epilogue, banded 1×1 and 3×3, depthwise): the planner
    /// runs the activation inside the Conv (one observed node) and the result keeps the separate
    /// nodes' bits, for float32 and for float16 values (whose activation must wait for the rounding).
    func testEveryFusedActivationKeepsTheBitsOnEveryConvPath() throws {
        let six = Constant(name: "six", tensor: Tensor([6], shape: []))
        let zero = Constant(name: "zero", tensor: Tensor([0], shape: []))
        let act = { (op: String, inputs: [String], attrs: [String: Attribute]) in [Node(name: "act", opType: op, inputs: inputs, outputs: ["y"], attributes: attrs)] }
        let activations: [(String, [Node])] = [
            ("Relu", act("Relu", ["b"], [:])),
            ("Clip 0…6", act("Clip", ["b", "zero", "six"], [:])),
            ("Clip max only", act("Clip", ["b", "", "six"], [:])),
            ("LeakyRelu", act("LeakyRelu", ["b"], ["alpha": .float(0.1)])),
            ("HardSwish", act("HardSwish", ["b"], [:])),
            ("HardSigmoid", act("HardSigmoid", ["b"], ["alpha": .float(0.3), "beta": .float(0.4)])),
            ("Sigmoid", act("Sigmoid", ["b"], [:])),
            ("Tanh", act("Tanh", ["b"], [:])),
            ("PRelu per channel", act("PRelu", ["b", "slopes"], [:])),
            ("PRelu [1, C, 1, 1]", act("PRelu", ["b", "slopes4"], [:])),
            ("PRelu one slope", act("PRelu", ["b", "slope"], [:])),
            ("Max scalar second", act("Max", ["b", "lim"], [:])),
            ("Min scalar first", act("Min", ["lim", "b"], [:])),
            ("SiLU", [Node(name: "sg", opType: "Sigmoid", inputs: ["b"], outputs: ["sg"]),
                      Node(name: "mul", opType: "Mul", inputs: ["b", "sg"], outputs: ["y"])]),
            ("SiLU (sigmoid first in the Mul) then Relu", [Node(name: "sg", opType: "Sigmoid", inputs: ["b"], outputs: ["sg"]),
                                                          Node(name: "mul", opType: "Mul", inputs: ["sg", "b"], outputs: ["si"]),
                                                          Node(name: "r", opType: "Relu", inputs: ["si"], outputs: ["y"])]),
            ("LeakyRelu then Max then Relu", [Node(name: "a1", opType: "LeakyRelu", inputs: ["b"], outputs: ["l"], attributes: ["alpha": .float(0.2)]),
                                              Node(name: "a2", opType: "Max", inputs: ["l", "lim"], outputs: ["m"]),
                                              Node(name: "a3", opType: "Relu", inputs: ["m"], outputs: ["y"])]),
        ]
        struct Case { let name: String; let c: Int; let m: Int; let k: Int; let group: Int; let hw: Int }
        let cases = [Case(name: "gemm 3x3", c: 5, m: 7, k: 3, group: 1, hw: 9),
                     Case(name: "gemm 1x1, parallel epilogue", c: 32, m: 96, k: 1, group: 1, hw: 14),
                     Case(name: "banded 1x1", c: 16, m: 24, k: 1, group: 1, hw: 96),
                     Case(name: "banded 3x3", c: 8, m: 12, k: 3, group: 1, hw: 96),
                     Case(name: "depthwise", c: 6, m: 6, k: 3, group: 6, hw: 11),
                     Case(name: "depthwise, channels in lanes", c: 19, m: 19, k: 3, group: 19, hw: 11),
                     Case(name: "depthwise, channels in lanes, 8-pixel blocks", c: 16, m: 16, k: 5, group: 16, hw: 7)]
        for dtype in [DType.float32, .float16] {
            for t in cases {
                var rng = SplitMix(seed: UInt64(t.c * 31 + t.k))
                let cg = t.c / t.group
                let slopes = (0..<t.m).map { _ in rng.nextFloat() - 0.25 }
                var consts = [six, zero, Constant(name: "slopes", tensor: Tensor(slopes, shape: [t.m, 1, 1])),
                              Constant(name: "slopes4", tensor: Tensor(slopes, shape: [1, t.m, 1, 1])),
                              Constant(name: "slope", tensor: Tensor([0.25], shape: [1])),
                              Constant(name: "lim", tensor: Tensor([-0.4], shape: [1, 1, 1, 1])),
                              Constant(name: "W", tensor: Tensor((0..<(t.m * cg * t.k * t.k)).map { _ in rng.nextFloat() - 0.5 },
                                                                 shape: [t.m, cg, t.k, t.k])),
                              Constant(name: "B", tensor: Tensor((0..<t.m).map { _ in rng.nextFloat() }, shape: [t.m]))]
                for (name, lo) in [("s", Float(0.5)), ("beta", -1), ("mu", -1), ("var", 0.1)] {
                    consts.append(Constant(name: name, tensor: Tensor((0..<t.m).map { _ in lo + 2 * rng.nextFloat() }, shape: [t.m])))
                }
                var xs = (0..<(t.c * t.hw * t.hw)).map { _ in rng.nextFloat() * 8 - 4 }
                dtype.round(&xs)
                let x = Tensor(dtype: dtype, shape: [1, t.c, t.hw, t.hw], storage: .float(xs))
                for (label, act) in activations {
                    let pad = t.k / 2
                    // A fused BatchNormalization skips float16's intermediate rounding, so only float32 has one.
                    let bn = dtype == .float32
                    let nodes = [Node(name: "conv", opType: "Conv", inputs: ["x", "W", "B"], outputs: [bn ? "c" : "b"],
                                      attributes: ["pads": .ints([pad, pad, pad, pad]), "group": .int(t.group)])]
                        + (bn ? [Node(name: "bn", opType: "BatchNormalization", inputs: ["c", "s", "beta", "mu", "var"], outputs: ["b"])] : [])
                        + act
                    let g = Graph(inputs: [ValueInfo(name: "x", dtype: dtype, shape: [.fixed(1), .fixed(t.c), .fixed(t.hw), .fixed(t.hw)])],
                                  outputs: [ValueInfo(name: "y", dtype: dtype, shape: nil)], nodes: nodes, constants: consts)
                    var observed = 0
                    let fused = try Interpreter(graph: g, options: .init(threads: 2)).run(["x": x]) { _, _ in observed += 1 }["y"]
                    let exact = try Interpreter(graph: g, options: .init(threads: 2, optimize: false)).run(["x": x])["y"]
                    let what = "\(label) on \(t.name), \(dtype)"
                    XCTAssertEqual(observed, 1, "\(what): Conv, BatchNormalization and activations run as one node")
                    // (A float32 scalar first in Max / Min makes the result float32, fused or not.)
                    XCTAssertEqual(fused?.dtype, exact?.dtype, what)
                    XCTAssertEqual(fused?.count, t.m * t.hw * t.hw, what)
                    XCTAssertEqual(fused?.floats?.map(\.bitPattern), exact?.floats?.map(\.bitPattern), what)
                }
            }
        }
    }

    /// A zero Pad of the spatial axes in front of a Conv becomes the Conv's padding (one node runs,
    /// equal values), added to the Conv's own; a Pad of the channels, with a non-zero fill or in reflect
    /// mode stays a Pad. Depthwise and ordinary Convs.
    func testZeroSpatialPadBecomesTheConvsPadding() throws {
        var rng = SplitMix(seed: 21)
        let c = 4
        let x = Tensor((0..<(c * 10 * 9)).map { _ in rng.nextFloat() * 2 - 1 }, shape: [1, c, 10, 9])
        func run(pads: [Int64], fill: Float?, mode: String, group: Int, optimize: Bool) throws -> (Tensor?, Int) {
            let inChannels = c + Int(pads[1] + pads[5]), perGroup = group == 1 ? inChannels : 1, filters = group == 1 ? 3 : c
            var r = SplitMix(seed: 5)
            let w = Tensor((0..<(filters * perGroup * 9)).map { _ in r.nextFloat() - 0.5 }, shape: [filters, perGroup, 3, 3])
            var consts = [Constant(name: "W", tensor: w), Constant(name: "p", tensor: Tensor(ints: pads, shape: [8]))]
            var padInputs = ["x", "p"]
            if let fill { consts.append(Constant(name: "v", tensor: Tensor([fill], shape: []))); padInputs.append("v") }
            let g = Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(c), .fixed(10), .fixed(9)])],
                          outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)],
                          nodes: [Node(name: "pad", opType: "Pad", inputs: padInputs, outputs: ["xp"], attributes: ["mode": .string(mode)]),
                                  Node(name: "conv", opType: "Conv", inputs: ["xp", "W"], outputs: ["y"],
                                       attributes: ["group": .int(group), "strides": .ints([2, 2]), "pads": .ints([1, 0, 0, 1])])],
                          constants: consts)
            var observed = 0
            let y = try Interpreter(graph: g, options: .init(threads: 2, optimize: optimize)).run(["x": x]) { _, _ in observed += 1 }["y"]
            return (y, observed)
        }
        let cases: [(String, [Int64], Float?, String, Int)] = [
            ("spatial zero pad", [0, 0, 1, 0, 0, 0, 2, 1], nil, "constant", 1),
            ("explicit zero fill", [0, 0, 0, 1, 0, 0, 1, 1], 0, "constant", 1),
            ("channel pad", [0, 1, 1, 1, 0, 2, 1, 1], nil, "constant", 2),
            ("non-zero fill", [0, 0, 1, 1, 0, 0, 1, 1], 0.5, "constant", 2),
            ("reflect", [0, 0, 1, 1, 0, 0, 1, 1], nil, "reflect", 2),
        ]
        for (name, pads, fill, mode, nodes) in cases {
            for group in pads[1] == 0 ? [1, c] : [1] {
                let (fast, observed) = try run(pads: pads, fill: fill, mode: mode, group: group, optimize: true)
                let (exact, _) = try run(pads: pads, fill: fill, mode: mode, group: group, optimize: false)
                XCTAssertEqual(observed, nodes, "\(name), group \(group)")
                XCTAssertNotNil(fast, name)
                XCTAssertEqual(fast?.shape, exact?.shape, "\(name), group \(group)")
                XCTAssertEqual(fast?.floats, exact?.floats, "\(name), group \(group)")
            }
        }
    }

    /// TFLite's shape of it: a zero Pad of the NHWC value, then the Transpose to NCHW the importer puts
    /// in front of the Conv. The Transpose reads the unpadded value and the Conv pads the permuted
    /// axes (two nodes run instead of three, equal values); a Pad of the channels stays.
    func testZeroPadBeforeATransposeBecomesTheConvsPadding() throws {
        var rng = SplitMix(seed: 23)
        let c = 3, h = 10, w = 9
        let x = Tensor((0..<(h * w * c)).map { _ in rng.nextFloat() * 2 - 1 }, shape: [1, h, w, c])
        func run(pads: [Int64], optimize: Bool) throws -> (Tensor?, Int) {
            let inChannels = c + Int(pads[3] + pads[7])
            var r = SplitMix(seed: 5)
            let wt = Tensor((0..<(4 * inChannels * 9)).map { _ in r.nextFloat() - 0.5 }, shape: [4, inChannels, 3, 3])
            let g = Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(h), .fixed(w), .fixed(c)])],
                          outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)],
                          nodes: [Node(name: "pad", opType: "Pad", inputs: ["x", "p"], outputs: ["xp"]),
                                  Node(name: "nchw", opType: "Transpose", inputs: ["xp"], outputs: ["xt"], attributes: ["perm": .ints([0, 3, 1, 2])]),
                                  Node(name: "conv", opType: "Conv", inputs: ["xt", "W"], outputs: ["y"],
                                       attributes: ["strides": .ints([2, 2]), "pads": .ints([1, 0, 0, 1])])],
                          constants: [Constant(name: "W", tensor: wt), Constant(name: "p", tensor: Tensor(ints: pads, shape: [8]))])
            var observed = 0
            let y = try Interpreter(graph: g, options: .init(threads: 2, optimize: optimize)).run(["x": x]) { _, _ in observed += 1 }["y"]
            return (y, observed)
        }
        for (name, pads, nodes) in [("H and W padded", [Int64]([0, 1, 0, 0, 0, 2, 1, 0]), 2), ("channels padded too", [0, 1, 1, 1, 0, 1, 1, 0], 3)] {
            let (fast, observed) = try run(pads: pads, optimize: true)
            let (exact, _) = try run(pads: pads, optimize: false)
            XCTAssertEqual(observed, nodes, name)
            XCTAssertNotNil(fast, name)
            XCTAssertEqual(fast?.shape, exact?.shape, name)
            XCTAssertEqual(fast?.floats, exact?.floats, name)
        }
    }

    /// Conv (+ BatchNormalization) → Add(residual) → activation runs as one Conv node on every Conv path,
    /// with the Conv on either side of the Add, with two Convs feeding the Add, with a residual that
    /// broadcasts (the Add kernel runs after the Conv) and for float16: the separate nodes' bits.
    func testResidualAddFusedIntoTheConvKeepsTheBits() throws {
        struct Case { let name: String; let c: Int; let m: Int; let k: Int; let group: Int; let hw: Int }
        let cases = [Case(name: "gemm 3x3", c: 5, m: 5, k: 3, group: 1, hw: 9),
                     Case(name: "gemm 1x1", c: 32, m: 32, k: 1, group: 1, hw: 14),
                     Case(name: "banded 3x3", c: 8, m: 8, k: 3, group: 1, hw: 96),
                     Case(name: "depthwise", c: 6, m: 6, k: 3, group: 6, hw: 11),
                     Case(name: "depthwise, channels in lanes", c: 19, m: 19, k: 3, group: 19, hw: 11)]
        for dtype in [DType.float32, .float16] {
            for t in cases {
                for variant in ["conv first", "conv second", "two convs", "broadcast"] {
                    var rng = SplitMix(seed: UInt64(t.c * 7 + t.k))
                    let cg = t.c / t.group, pad = t.k / 2
                    let w = (0..<(t.m * cg * t.k * t.k)).map { _ in rng.nextFloat() - 0.5 }
                    var consts = [Constant(name: "W", tensor: Tensor(w, shape: [t.m, cg, t.k, t.k])),
                                  Constant(name: "W2", tensor: Tensor(w.reversed(), shape: [t.m, cg, t.k, t.k])),
                                  Constant(name: "B", tensor: Tensor((0..<t.m).map { _ in rng.nextFloat() }, shape: [t.m])),
                                  Constant(name: "slopes", tensor: Tensor((0..<t.m).map { _ in rng.nextFloat() }, shape: [t.m, 1, 1])),
                                  Constant(name: "cb", tensor: Tensor(dtype: dtype, shape: [t.m, 1, 1],
                                                                      storage: .float((0..<t.m).map { Float($0) / 4 - 1 })))]
                    for (name, lo) in [("s", Float(0.5)), ("beta", -1), ("mu", -1), ("var", 0.1)] {
                        consts.append(Constant(name: name, tensor: Tensor((0..<t.m).map { _ in lo + 2 * rng.nextFloat() }, shape: [t.m])))
                    }
                    let attrs: [String: Attribute] = ["pads": .ints([pad, pad, pad, pad]), "group": .int(t.group)]
                    let bn = dtype == .float32
                    var nodes = [Node(name: "conv", opType: "Conv", inputs: ["x", "W", "B"], outputs: [bn ? "c" : "b"], attributes: attrs)]
                    if bn { nodes.append(Node(name: "bn", opType: "BatchNormalization", inputs: ["c", "s", "beta", "mu", "var"], outputs: ["b"])) }
                    switch variant {
                    case "conv first": nodes.append(Node(name: "add", opType: "Add", inputs: ["b", "x"], outputs: ["r"]))
                    case "conv second": nodes.append(Node(name: "add", opType: "Add", inputs: ["x", "b"], outputs: ["r"]))
                    case "two convs":
                        nodes.append(Node(name: "conv2", opType: "Conv", inputs: ["x", "W2"], outputs: ["d"], attributes: attrs))
                        nodes.append(Node(name: "add", opType: "Add", inputs: ["b", "d"], outputs: ["r"]))
                    default: nodes.append(Node(name: "add", opType: "Add", inputs: ["b", "cb"], outputs: ["r"]))
                    }
                    nodes.append(bn ? Node(name: "act", opType: "PRelu", inputs: ["r", "slopes"], outputs: ["y"])
                                    : Node(name: "act", opType: "HardSwish", inputs: ["r"], outputs: ["y"]))
                    let g = Graph(inputs: [ValueInfo(name: "x", dtype: dtype, shape: [.fixed(1), .fixed(t.c), .fixed(t.hw), .fixed(t.hw)])],
                                  outputs: [ValueInfo(name: "y", dtype: dtype, shape: nil)], nodes: nodes, constants: consts)
                    var xs = (0..<(t.c * t.hw * t.hw)).map { _ in rng.nextFloat() * 4 - 2 }
                    dtype.round(&xs)
                    let x = Tensor(dtype: dtype, shape: [1, t.c, t.hw, t.hw], storage: .float(xs))
                    var observed = 0
                    let fused = try Interpreter(graph: g, options: .init(threads: 2)).run(["x": x]) { _, _ in observed += 1 }["y"]
                    let exact = try Interpreter(graph: g, options: .init(threads: 2, optimize: false)).run(["x": x])["y"]
                    let what = "\(variant) on \(t.name), \(dtype)"
                    XCTAssertEqual(observed, variant == "two convs" ? 2 : 1, what)
                    XCTAssertEqual(fused?.shape, exact?.shape, what)
                    XCTAssertEqual(fused?.dtype, dtype, what)
                    XCTAssertEqual(fused?.floats?.map(\.bitPattern), exact?.floats?.map(\.bitPattern), what)
                }
            }
        }
    }

    /// Identical filters whose fused BatchNormalizations differ are different channels.
    func testIdenticalFiltersWithDifferentBatchNormsStayApart() throws {
        let m = 4, c = 2
        let g = convGraph(filters: m, inChannels: c, w: [Float](repeating: 0.25, count: m * c * 9), bias: nil, bn: true)
        let x = input(c, seed: 6)
        let fused = try Interpreter(graph: g).run(["x": x])["y"]?.floats ?? []
        let exact = try Interpreter(graph: g, options: .init(optimize: false)).run(["x": x])["y"]?.floats ?? []
        XCTAssertEqual(fused.map(\.bitPattern), exact.map(\.bitPattern))
        XCTAssertNotEqual(fused[0], fused[169], "channels 0 and 1 have different BatchNormalization parameters")
    }

    func testConstantSubgraphsAreFoldedAndObserveSeesTheRest() throws {
        // W = ConstantOfShape([2, 2]) of 3; y = x · W.
        let g = Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(2)])],
                      outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)],
                      nodes: [Node(name: "fill", opType: "ConstantOfShape", inputs: ["shape"], outputs: ["W"],
                                   attributes: ["value": .tensor(Tensor([3], shape: [1]))]),
                              Node(name: "mm", opType: "MatMul", inputs: ["x", "W"], outputs: ["y"])],
                      constants: [Constant(name: "shape", tensor: Tensor(ints: [2, 2], shape: [2]))])
        var ran: [String] = []
        let y = try Interpreter(graph: g).run(["x": Tensor([1, 2], shape: [1, 2])]) { n, _ in ran.append(n.name) }
        XCTAssertEqual(y["y"]?.floats, [9, 9])  // [1, 2] · [[3, 3], [3, 3]]
        XCTAssertEqual(ran, ["mm"])
    }
}
