import XCTest
import Foundation
import Dispatch
@testable import ShrinkwrapRuntime
import ShrinkwrapIR
import ShrinkwrapONNX

final class NNKernelTests: XCTestCase {
    func testProfile() throws {
        guard let path = ProcessInfo.processInfo.environment["NN_PROFILE"] else { return }
        let g = try ONNXImporter.importModel(at: URL(fileURLWithPath: path))
        var feeds: [String: Tensor] = [:]
        for i in g.runtimeInputs {
            let shape = (i.shape ?? []).map { $0.value ?? 1 }
            feeds[i.name] = Tensor([Float](repeating: 0.5, count: shape.reduce(1, *)), shape: shape)
        }
        let interp = try Interpreter(graph: g, options: .init(threads: 2))
        for _ in 0..<2 { _ = try interp.run(feeds) }
        var perOp: [String: Double] = [:]
        var perNode: [(String, Double)] = []
        var last = DispatchTime.now().uptimeNanoseconds
        let t0 = last
        let runs = 5
        for _ in 0..<runs {
            last = DispatchTime.now().uptimeNanoseconds
            _ = try interp.run(feeds) { node, outs in
                let now = DispatchTime.now().uptimeNanoseconds
                let ms = Double(now - last) / 1e6
                perOp[node.opType, default: 0] += ms / Double(runs)
                perNode.append(("\(node.opType) \(node.outputs[0]) \(outs.first?.shape ?? [])", ms / Double(runs)))
                last = now
            }
        }
        print("PROF total per run ms", Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6 / Double(runs))
        for (k, v) in perOp.sorted(by: { $0.value > $1.value }) { print("PROF", k, v) }
        var agg: [String: Double] = [:]
        for (k, v) in perNode { agg[k, default: 0] += v }
        for (k, v) in agg.sorted(by: { $0.value > $1.value }).prefix(25) { print("PROFN", k, v) }
    }

    func testGemmBench() throws {
        guard ProcessInfo.processInfo.environment["NN_GEMM"] != nil else { return }
        let shapes = [(64, 3136, 576), (64, 3136, 64), (256, 3136, 64), (128, 784, 1152), (512, 784, 128),
                      (256, 196, 2304), (1024, 196, 256), (512, 49, 4608), (2048, 49, 512), (64, 12544, 147)]
        for (m, n, k) in shapes {
            let a = [Float](repeating: 0.01, count: m * k), b = [Float](repeating: 0.02, count: k * n)
            var c = [Float](repeating: 0, count: m * n)
            var best = 1e9
            for _ in 0..<15 {
                let t0 = DispatchTime.now().uptimeNanoseconds
                a.withUnsafeBufferPointer { ap in b.withUnsafeBufferPointer { bp in c.withUnsafeMutableBufferPointer { cp in
                    GEMM.sgemm(transA: false, transB: false, m: m, n: n, k: k, a: ap.baseAddress!, lda: k, b: bp.baseAddress!, ldb: n, c: cp.baseAddress!, ldc: n, threads: 2)
                } } }
                best = min(best, Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
            }
            let ms = best
            print("GEMM", m, n, k, ms, "ms", 2.0 * Double(m * n * k) / ms / 1e6, "GFLOP/s")
        }
    }

    func testConvBench() throws {
        guard let env = ProcessInfo.processInfo.environment["NN_CONV"] else { return }
        let th = Int(env) ?? 2
        // (C, H, M, k, stride, pad)
        let cfgs = [(3, 224, 64, 7, 2, 3), (64, 56, 64, 3, 1, 1), (64, 56, 256, 1, 1, 0), (512, 7, 512, 3, 1, 1), (256, 56, 512, 1, 2, 0)]
        for (ch, h, m, k, s, p) in cfgs {
            let x = Tensor([Float](repeating: 0.5, count: ch * h * h), shape: [1, ch, h, h])
            let w = Tensor([Float](repeating: 0.01, count: m * ch * k * k), shape: [m, ch, k, k])
            let b = Tensor([Float](repeating: 0.1, count: m), shape: [m])
            let node = Node(name: "c", opType: "Conv", inputs: ["x", "w", "b"], outputs: ["y"],
                            attributes: ["strides": .ints([s, s]), "pads": .ints([p, p, p, p])])
            let ctx = KernelContext(node: node, inputs: [x, w, b], threads: th)
            _ = try NNKernels.conv(ctx)
            var best = 1e9
            for _ in 0..<15 {
                let t0 = DispatchTime.now().uptimeNanoseconds
                _ = try NNKernels.conv(ctx)
                best = min(best, Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
            }
            // im2col alone
            let geo = WindowGeometry(rank: 2, input: [1, h, h], kernel: [1, k, k], strides: [1, s, s], dilations: [1, 1, 1],
                                     padBegin: [0, p, p], padEnd: [0, p, p], output: [1, (h + 2 * p - k) / s + 1, (h + 2 * p - k) / s + 1])
            var col = [Float](repeating: 0, count: ch * k * k * geo.outputCount)
            var bestCol = 1e9
            for _ in 0..<15 {
                let t0 = DispatchTime.now().uptimeNanoseconds
                x.floats!.withUnsafeBufferPointer { xp in col.withUnsafeMutableBufferPointer { cp in
                    NNKernels.im2col(x: xp.baseAddress!, channels: ch, geo: geo, col: cp.baseAddress!, threads: th)
                } }
                bestCol = min(bestCol, Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
            }
            print("CONV", ch, h, m, k, s, p, "total", best, "ms; im2col", bestCol, "ms")
        }
    }

    func testPoolBench() throws {
        guard ProcessInfo.processInfo.environment["NN_POOL"] != nil else { return }
        let x = Tensor([Float](repeating: 0.5, count: 64 * 112 * 112), shape: [1, 64, 112, 112])
        let node = Node(name: "p", opType: "MaxPool", inputs: ["x"], outputs: ["y"],
                        attributes: ["kernel_shape": .ints([3, 3]), "strides": .ints([2, 2]), "pads": .ints([1, 1, 1, 1])])
        for th in [1, 2] {
            let ctx = KernelContext(node: node, inputs: [x], threads: th)
            _ = try NNKernels.maxPool(ctx)
            var best = 1e9
            for _ in 0..<20 {
                let t0 = DispatchTime.now().uptimeNanoseconds
                _ = try NNKernels.maxPool(ctx)
                best = min(best, Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
            }
            print("POOL threads", th, best, "ms")
        }
    }
}
