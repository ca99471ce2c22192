import XCTest
import ShrinkwrapIR
@testable import ShrinkwrapRuntime
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// RNN, GRU and LSTM kernels (Kernels/Recurrent.swift).
///
/// Tiny cases are worked out by hand with σ(x) = 1/(1+e^-x) and tanh; larger
/// random cases are compared with a direct per-element reference written
/// below from the ONNX equations (double precision, no GEMM).
final class RecurrentKernelTests: XCTestCase {
    private func run(_ op: String, _ inputs: [Tensor?], _ attrs: [String: Attribute] = [:], threads: Int = 1) throws -> [Tensor] {
        let node = Node(name: "n", opType: op, inputs: inputs.indices.map { inputs[$0] == nil ? "" : "i\($0)" },
                        outputs: ["Y", "Y_h", "Y_c"], attributes: attrs)
        guard let k = KernelRegistry.kernels[op] else { throw KernelError.noKernel(op: op) }
        return try k(KernelContext(node: node, inputs: inputs, threads: threads))
    }

    private func f(_ v: [Float], _ s: [Int]) -> Tensor { Tensor(v, shape: s) }

    private func assertClose(_ a: [Float]?, _ b: [Double], tol: Double = 1e-5, _ msg: String = "",
                             file: StaticString = #filePath, line: UInt = #line) {
        guard let a else { return XCTFail("no values \(msg)", file: file, line: line) }
        XCTAssertEqual(a.count, b.count, "count \(msg)", file: file, line: line)
        for (i, (x, y)) in zip(a, b).enumerated() where abs(Double(x) - y) > tol * max(1, abs(y)) {
            XCTFail("element \(i): \(x) vs \(y) \(msg)", file: file, line: line)
            return
        }
    }

    // MARK: hand-computed cases

    func testRNNBidirectionalWithSequenceLengths() throws {
        // T=3, B=2, I=H=1. Forward W=0.5 R=1, backward W=0.25 R=-1, no bias, lens [3, 1].
        // Batch 0 forward: tanh(0.5)=0.4621172, tanh(1+0.4621172)=0.8980630, tanh(-0.5+0.8980630)=0.3782904.
        // Batch 0 backward from t=2: tanh(-0.25)=-0.2449187, tanh(0.5+0.2449187)=0.6321077, tanh(0.25-0.6321077)=-0.3645365.
        // Batch 1 (length 1): forward tanh(0.25)=0.2449187; backward tanh(0.125)=0.1243530; later steps 0.
        // (Same numbers as onnxruntime 1.x for this model.)
        let x = f([1, 0.5, 2, 9, -1, 9], [3, 2, 1])
        let w = f([0.5, 0.25], [2, 1, 1]), r = f([1, -1], [2, 1, 1])
        let lens = Tensor(ints: [3, 1], shape: [2], dtype: .int32)
        let out = try run("RNN", [x, w, r, nil, lens], ["direction": .string("bidirectional"), "hidden_size": .int(1)])
        XCTAssertEqual(out[0].shape, [3, 2, 2, 1]); XCTAssertEqual(out[1].shape, [2, 2, 1])
        assertClose(out[0].floats, [0.4621172, 0.2449187, -0.3645365, 0.1243530,
                                    0.8980630, 0, 0.6321077, 0,
                                    0.3782904, 0, -0.2449187, 0])
        assertClose(out[1].floats, [0.3782904, 0.2449187, -0.3645365, 0.1243530])
    }

    func testRNNActivationsAndLayout() throws {
        // Relu, W=1, R=-1, X=[2, 1] (B=1): h1 = relu(2) = 2, h2 = relu(1 - 2) = 0.
        let x = f([2, 1], [2, 1, 1]), w = f([1], [1, 1, 1]), r = f([-1], [1, 1, 1])
        let out = try run("RNN", [x, w, r], ["activations": .strings(["Relu"])])
        assertClose(out[0].floats, [2, 0]); assertClose(out[1].floats, [0])
        // Affine(alpha 2, beta 1) with initial_h 3 and bias Wb=0.5 Rb=0.5: h1 = 2·(2 - 3 + 1) + 1 = 1.
        let b = f([0.5, 0.5], [1, 2]), h0 = f([3], [1, 1, 1])
        let a = try run("RNN", [f([2], [1, 1, 1]), w, r, b, nil, h0],
                        ["activations": .strings(["Affine"]), "activation_alpha": .floats([2]), "activation_beta": .floats([1])])
        assertClose(a[0].floats, [1])
        // layout = 1: X is [batch, seq, input], Y is [batch, seq, dirs, hidden].
        let xb = f([2, 1], [1, 2, 1])
        let l1 = try run("RNN", [xb, w, r], ["activations": .strings(["Relu"]), "layout": .int(1)])
        XCTAssertEqual(l1[0].shape, [1, 2, 1, 1]); XCTAssertEqual(l1[1].shape, [1, 1, 1])
        assertClose(l1[0].floats, [2, 0])
    }

    func testActivationFunctions() throws {
        // RNN with W=1, R=0, one step: Y = act(x). Expected values from the ONNX formulas.
        let w = f([1], [1, 1, 1]), r = f([0], [1, 1, 1])
        func act(_ name: String, _ x: Float, alpha: [Float]? = nil, beta: [Float]? = nil) throws -> Float {
            var attrs: [String: Attribute] = ["activations": .strings([name])]
            if let alpha { attrs["activation_alpha"] = .floats(alpha) }
            if let beta { attrs["activation_beta"] = .floats(beta) }
            return try run("RNN", [f([x], [1, 1, 1]), w, r], attrs)[0].floats?.first ?? .nan
        }
        XCTAssertEqual(try act("Sigmoid", 0), 0.5, accuracy: 1e-7)
        XCTAssertEqual(try act("Tanh", 1), tanhf(1), accuracy: 1e-7)
        XCTAssertEqual(try act("HardSigmoid", 1), 0.7, accuracy: 1e-6)                  // default 0.2·1 + 0.5
        XCTAssertEqual(try act("HardSigmoid", 1, alpha: [1], beta: [0.25]), 1, accuracy: 1e-7)   // clamped to 1
        XCTAssertEqual(try act("LeakyRelu", -2), -0.02, accuracy: 1e-7)                  // default alpha 0.01
        XCTAssertEqual(try act("LeakyRelu", -2, alpha: [0.5]), -1, accuracy: 1e-7)
        XCTAssertEqual(try act("ThresholdedRelu", 0.5), 0)                                // default alpha 1
        XCTAssertEqual(try act("ThresholdedRelu", 2), 2)
        XCTAssertEqual(try act("ScaledTanh", 1, alpha: [2], beta: [0.5]), 2 * tanhf(0.5), accuracy: 1e-6)
        XCTAssertEqual(try act("Elu", -1), expf(-1) - 1, accuracy: 1e-6)
        XCTAssertEqual(try act("Softsign", 1), 0.5, accuracy: 1e-7)
        XCTAssertEqual(try act("Softplus", 0), logf(2), accuracy: 1e-6)
        XCTAssertEqual(try act("softplus", 30), 30, accuracy: 1e-5)                       // names are case-insensitive
        XCTAssertEqual(try act("Affine", 3, alpha: [2], beta: [-1]), 5, accuracy: 1e-7)
        // alphas are consumed in order by the functions that take one: LSTM (f, g, h) =
        // (Affine α=1 β=0.5, Sigmoid, LeakyRelu α=2). W=0, R=0, X=0: every gate input is 0,
        // so i = o = f = 0.5 (affine 1·0 + 0.5), c~ = σ(0) = 0.5, C = 0.25, H = 0.5 · 0.25 = 0.125.
        let lw = f([0, 0, 0, 0], [1, 4, 1])
        let out = try run("LSTM", [f([0], [1, 1, 1]), lw, lw],
                          ["activations": .strings(["Affine", "Sigmoid", "LeakyRelu"]),
                           "activation_alpha": .floats([1, 2]), "activation_beta": .floats([0.5])])
        XCTAssertEqual(out[2].floats, [0.25]); XCTAssertEqual(out[1].floats, [0.125])
    }

    func testGRULinearBeforeReset() throws {
        // I=H=1, W=[1,1,1] (z,r,h), R=[0.5,0.5,0.5], h0=0, X=[1].
        // z = r = σ(1) = 0.7310586; without bias h~ = tanh(1) → H = (1-z)·h~ = 0.2048242.
        let x = f([1], [1, 1, 1]), w = f([1, 1, 1], [1, 3, 1]), r = f([0.5, 0.5, 0.5], [1, 3, 1])
        let plain = try run("GRU", [x, w, r])
        assertClose(plain[0].floats, [0.2048242]); assertClose(plain[1].floats, [0.2048242])
        // With Rbh = 1: lbr=0 → h~ = tanh(1 + 1) → H = 0.2592669;
        //               lbr=1 → h~ = tanh(1 + r·(0 + 1)) → H = 0.2525846.
        let b = f([0, 0, 0, 0, 0, 1], [1, 6])
        assertClose(try run("GRU", [x, w, r, b])[0].floats, [0.2592669])
        assertClose(try run("GRU", [x, w, r, b], ["linear_before_reset": .int(1)])[0].floats, [0.2525846])
        XCTAssertEqual(try run("GRU", [x, w, r]).count, 2)
    }

    func testLSTMHandCases() throws {
        // I=H=1, W all 1 (i,o,f,c), R=0, X=[1], h0=c0=0:
        // i=o=f=σ(1), c~=tanh(1): C = i·c~ = 0.5567699, H = o·tanh(C) = 0.3696064.
        let x = f([1], [1, 1, 1]), w = f([1, 1, 1, 1], [1, 4, 1]), r = f([0, 0, 0, 0], [1, 4, 1])
        let out = try run("LSTM", [x, w, r])
        XCTAssertEqual(out.count, 3)
        assertClose(out[0].floats, [0.3696064]); assertClose(out[1].floats, [0.3696064]); assertClose(out[2].floats, [0.5567699])
        // input_forget with c0 = 1: f = 1 - i → C = (1-i)·1 + i·c~ = 0.8257114, H = 0.4957794.
        let c0 = f([1], [1, 1, 1])
        let inf = try run("LSTM", [x, w, r, nil, nil, nil, c0], ["input_forget": .int(1)])
        assertClose(inf[2].floats, [0.8257114]); assertClose(inf[1].floats, [0.4957794])
        // clip 0.5 bounds every gate input to 0.5: C = σ(.5)·tanh(.5) = 0.2876491, H = 0.1742697.
        let cl = try run("LSTM", [x, w, r], ["clip": .float(0.5)])
        assertClose(cl[2].floats, [0.2876491]); assertClose(cl[1].floats, [0.1742697])
        // Peepholes P = [1,1,1] with c0 = 1: i = f = σ(2), C = f + i·tanh(1) = 1.5516070,
        // o = σ(1 + C) (uses the new C), H = o·tanh(C) = 0.8479474.
        let p = f([1, 1, 1], [1, 3])
        let pp = try run("LSTM", [x, w, r, nil, nil, nil, c0, p])
        assertClose(pp[2].floats, [1.5516070]); assertClose(pp[1].floats, [0.8479474])
    }

    // MARK: errors

    func testBadInputsThrow() {
        let x = f([1, 2], [2, 1, 1]), w = f([1, 1, 1, 1], [1, 4, 1]), r = f([0, 0, 0, 0], [1, 4, 1])
        let cases: [(String, [Tensor?], [String: Attribute])] = [
            ("LSTM", [x, f([1, 1, 1], [1, 3, 1]), r], [:]),                         // W rows not 4·H
            ("LSTM", [x, w, f([0, 0], [1, 2, 1])], [:]),                            // R shape
            ("LSTM", [x, w, r], ["direction": .string("sideways")]),
            ("LSTM", [x, w, r], ["direction": .string("bidirectional")]),           // W has one direction
            ("LSTM", [x, w, r], ["activations": .strings(["Sigmoid", "Tanh", "Gelu"])]),
            ("LSTM", [x, w, r], ["activations": .strings(["Sigmoid"])]),
            ("LSTM", [x, w, r], ["hidden_size": .int(2)]),
            ("LSTM", [x, w, r], ["layout": .int(2)]),
            ("LSTM", [x, w, r], ["clip": .float(-1)]),
            ("LSTM", [x, w, r, nil, Tensor(ints: [3], shape: [1])], [:]),          // length > seq
            ("LSTM", [x, w, r, nil, Tensor(ints: [-1], shape: [1])], [:]),
            ("LSTM", [x, w, r, f([0, 0], [1, 2])], [:]),                            // B shape
            ("LSTM", [x, w, r, nil, nil, f([0, 0], [1, 2, 1])], [:]),               // initial_h shape
            ("LSTM", [x, w, r, nil, nil, nil, nil, f([0], [1, 1])], [:]),           // P shape
            ("LSTM", [f([1, 2], [2, 1]), w, r], [:]),                               // X rank
            ("LSTM", [Tensor(ints: [1, 2], shape: [2, 1, 1]), w, r], [:]),          // X not float
            ("GRU", [x, w, r], [:]),                                                // 4 gates for GRU
        ]
        for (op, ins, attrs) in cases {
            XCTAssertThrowsError(try run(op, ins, attrs), "\(op) \(attrs)") { e in
                XCTAssertTrue(e is KernelError, "\(e)")
            }
        }
    }

    // MARK: random cases against a direct reference

    private struct Rand {
        var s: UInt64
        mutating func next() -> Float {
            s = s &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int((s >> 40) & 0xFFFF) - 32768) / 32768   // [-1, 1)
        }
        mutating func array(_ n: Int) -> [Float] { (0..<n).map { _ in next() } }
    }

    private func sig(_ x: Double) -> Double { 1 / (1 + exp(-x)) }

    /// Direct per-element reference, time-major layout, default activations.
    private func reference(cell: String, x: [Float], w: [Float], r: [Float], b: [Float], h0: [Float], c0: [Float],
                           p: [Float], lens: [Int], T: Int, B: Int, I: Int, H: Int, reverse: [Bool], lbr: Bool)
        -> (y: [Double], yh: [Double], yc: [Double]) {
        let G = cell == "LSTM" ? 4 : (cell == "GRU" ? 3 : 1)
        let D = reverse.count
        var y = [Double](repeating: 0, count: T * D * B * H)
        var yh = [Double](repeating: 0, count: D * B * H), yc = yh
        for d in 0..<D {
            for bb in 0..<B {
                var h = (0..<H).map { Double(h0[(d * B + bb) * H + $0]) }
                var c = (0..<H).map { Double(c0[(d * B + bb) * H + $0]) }
                for s in 0..<lens[bb] {
                    let t = reverse[d] ? lens[bb] - 1 - s : s
                    func xw(_ row: Int) -> Double {
                        var a = 0.0
                        for k in 0..<I { a += Double(x[(t * B + bb) * I + k]) * Double(w[(d * G * H + row) * I + k]) }
                        return a + Double(b[d * 2 * G * H + row])
                    }
                    func hr(_ row: Int, _ v: [Double]) -> Double {
                        var a = 0.0
                        for k in 0..<H { a += v[k] * Double(r[(d * G * H + row) * H + k]) }
                        return a + Double(b[d * 2 * G * H + G * H + row])
                    }
                    var nh = [Double](repeating: 0, count: H), nc = nh
                    switch cell {
                    case "RNN":
                        for j in 0..<H { nh[j] = tanh(xw(j) + hr(j, h)) }
                    case "GRU":
                        var z = [Double](repeating: 0, count: H), rr = z
                        for j in 0..<H { z[j] = sig(xw(j) + hr(j, h)); rr[j] = sig(xw(H + j) + hr(H + j, h)) }
                        let rh = (0..<H).map { rr[$0] * h[$0] }
                        for j in 0..<H {
                            let cand = lbr ? tanh(xw(2 * H + j) + rr[j] * hr(2 * H + j, h)) : tanh(xw(2 * H + j) + hr(2 * H + j, rh))
                            nh[j] = (1 - z[j]) * cand + z[j] * h[j]
                        }
                    default:
                        for j in 0..<H {
                            let pi = p.isEmpty ? 0 : Double(p[d * 3 * H + j]), po = p.isEmpty ? 0 : Double(p[d * 3 * H + H + j])
                            let pf = p.isEmpty ? 0 : Double(p[d * 3 * H + 2 * H + j])
                            let ig = sig(xw(j) + hr(j, h) + pi * c[j])
                            let fg = sig(xw(2 * H + j) + hr(2 * H + j, h) + pf * c[j])
                            let cg = tanh(xw(3 * H + j) + hr(3 * H + j, h))
                            nc[j] = fg * c[j] + ig * cg
                            let og = sig(xw(H + j) + hr(H + j, h) + po * nc[j])
                            nh[j] = og * tanh(nc[j])
                        }
                        c = nc
                    }
                    h = nh
                    for j in 0..<H { y[((t * D + d) * B + bb) * H + j] = h[j] }
                }
                for j in 0..<H { yh[(d * B + bb) * H + j] = h[j]; yc[(d * B + bb) * H + j] = c[j] }
            }
        }
        return (y, yh, yc)
    }

    func testRandomAgainstReference() throws {
        var rng = Rand(s: 42)
        let T = 5, B = 3, I = 4, H = 3
        for cell in ["RNN", "GRU", "LSTM"] {
            let G = cell == "LSTM" ? 4 : (cell == "GRU" ? 3 : 1)
            for (direction, reverse) in [("forward", [false]), ("reverse", [true]), ("bidirectional", [false, true])] {
                for lbr in cell == "GRU" ? [false, true] : [false] {
                    let D = reverse.count
                    let x = rng.array(T * B * I), w = rng.array(D * G * H * I), r = rng.array(D * G * H * H)
                    let b = rng.array(D * 2 * G * H), h0 = rng.array(D * B * H), c0 = rng.array(D * B * H)
                    let p = cell == "LSTM" ? rng.array(D * 3 * H) : []
                    let lens = [5, 2, 0]
                    let ref = reference(cell: cell, x: x, w: w, r: r, b: b, h0: h0, c0: c0, p: p, lens: lens,
                                        T: T, B: B, I: I, H: H, reverse: reverse, lbr: lbr)
                    var ins: [Tensor?] = [f(x, [T, B, I]), f(w, [D, G * H, I]), f(r, [D, G * H, H]), f(b, [D, 2 * G * H]),
                                          Tensor(ints: lens.map(Int64.init), shape: [B], dtype: .int32), f(h0, [D, B, H])]
                    if cell == "LSTM" { ins += [f(c0, [D, B, H]), f(p, [D, 3 * H])] }
                    var attrs: [String: Attribute] = ["direction": .string(direction), "hidden_size": .int(H)]
                    if lbr { attrs["linear_before_reset"] = .int(1) }
                    let label = "\(cell) \(direction) lbr=\(lbr)"
                    let out = try run(cell, ins, attrs)
                    // Batch entry 2 has length 0: its Y rows are 0 and Y_h / Y_c keep the initial state.
                    assertClose(out[0].floats, ref.y, tol: 1e-5, label)
                    assertClose(out[1].floats, ref.yh, tol: 1e-5, label)
                    if cell == "LSTM" { assertClose(out[2].floats, ref.yc, tol: 1e-5, label) }
                    // layout = 1 gives the same numbers, transposed.
                    func toBatchMajor(_ v: [Float], _ a: Int, _ bDim: Int, _ rest: Int) -> [Float] {
                        var o = [Float](repeating: 0, count: v.count)
                        for i in 0..<a { for j in 0..<bDim { for k in 0..<rest { o[(j * a + i) * rest + k] = v[(i * bDim + j) * rest + k] } } }
                        return o
                    }
                    var ins1 = ins
                    ins1[0] = f(toBatchMajor(x, T, B, I), [B, T, I])
                    ins1[5] = f(toBatchMajor(h0, D, B, H), [B, D, H])
                    if cell == "LSTM" { ins1[6] = f(toBatchMajor(c0, D, B, H), [B, D, H]) }
                    attrs["layout"] = .int(1)
                    let out1 = try run(cell, ins1, attrs, threads: 2)
                    XCTAssertEqual(out1[0].shape, [B, T, D, H], label)
                    // Y [T, D, B, H] → [B, T, D, H]
                    var yT = [Float](repeating: 0, count: T * D * B * H)
                    let y0 = out[0].floats ?? []
                    for t in 0..<T { for d in 0..<D { for bb in 0..<B { for j in 0..<H {
                        yT[((bb * T + t) * D + d) * H + j] = y0[((t * D + d) * B + bb) * H + j]
                    } } } }
                    XCTAssertEqual(out1[0].floats, yT, label)
                    XCTAssertEqual(out1[1].floats, toBatchMajor(out[1].floats ?? [], D, B, H), label)
                }
            }
        }
    }

    func testFloat16OutputIsRounded() throws {
        // tanh(0.5) = 0.46211716 rounds to the binary16 value 0.4621582 (= 1893 / 4096).
        let x = Tensor([1], shape: [1, 1, 1], dtype: .float16)
        let out = try run("RNN", [x, Tensor([0.5], shape: [1, 1, 1], dtype: .float16), Tensor([0], shape: [1, 1, 1], dtype: .float16)])
        XCTAssertEqual(out[0].dtype, .float16)
        XCTAssertEqual(out[0].floats, [Half.round(tanhf(0.5))])
        XCTAssertEqual(out[0].floats, [Float(1893) / 4096])
    }

    /// The planner transposes a constant R once (input 8); the steps then give the bits of the kernel
    /// transposing it itself, for every cell, both directions, 1 and 2 threads.
    func testPlannerTransposedRGivesTheSameBits() throws {
        var rand = Rand(s: 77)
        let T = 5, B = 2, I = 7, H = 24
        for (op, g) in [("RNN", 1), ("GRU", 3), ("LSTM", 4)] {
            let consts = [Constant(name: "W", tensor: f(rand.array(2 * g * H * I), [2, g * H, I])),
                          Constant(name: "R", tensor: f(rand.array(2 * g * H * H), [2, g * H, H])),
                          Constant(name: "B", tensor: f(rand.array(2 * 2 * g * H), [2, 2 * g * H]))]
            let node = Node(name: "n", opType: op, inputs: ["x", "W", "R", "B"], outputs: ["Y"],
                            attributes: ["hidden_size": .int(H), "direction": .string("bidirectional")])
            let graph = Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: [T, B, I].map(Dim.fixed))],
                              outputs: [ValueInfo(name: "Y", dtype: .float32, shape: nil)], nodes: [node], constants: consts)
            var planner = ExecutionPlanner(graph: graph, threads: 1)
            try planner.run(optimize: true)
            let planned = try XCTUnwrap(planner.graph.nodes.first)
            XCTAssertEqual(planned.attributes[RecurrentKernels.transposedRAttribute], .int(1), op)
            XCTAssertEqual(planned.inputs.count, 9, op)
            XCTAssertEqual(planner.graph.constant(named: planned.inputs[8])?.encoding.shape, [2, H, g * H], op)
            let x = f(rand.array(T * B * I), [T, B, I])
            let unplanned = try XCTUnwrap(Interpreter(graph: graph, options: .init(optimize: false)).run(["x": x])["Y"]?.floats)
            for threads in [1, 2] {
                let y = try XCTUnwrap(Interpreter(graph: graph, options: .init(threads: threads)).run(["x": x])["Y"]?.floats)
                XCTAssertEqual(y.map(\.bitPattern), unplanned.map(\.bitPattern), "\(op) threads \(threads)")
            }
        }
    }
}
