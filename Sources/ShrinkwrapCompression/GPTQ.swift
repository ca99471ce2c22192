import ShrinkwrapIR

/// GPTQ (Frantar et al. 2022, after Optimal Brain Quantization): the codes of a weight matrix
/// chosen one input column at a time, each column's rounding error spread over the columns not
/// yet rounded so that the layer's output on the calibration inputs moves as little as possible.
/// With H = E[x xᵀ] (damped) and U the upper Cholesky factor of H⁻¹, column i's error
/// e = (w − q) / U[i][i] updates w[j] −= e · U[i][j] for every later column j. Columns go in
/// decreasing order of H's diagonal ("act order": the inputs that matter most are rounded first,
/// while the most columns are left to absorb their error). The grid is the codec's, fixed before;
/// `nearest` rounds onto it. Every row is independent given U, so the result does not depend on
/// how rows are visited; here they go in blocks of 16, in order, on one thread.
enum GPTQ {
    /// Damping: this fraction of H's mean diagonal is added to the diagonal.
    static let damping = 0.01

    /// The weight's values moved onto the grid (`nearest(i, x)`: the grid value nearest x for
    /// element i); a note for the log; and the groups that fell back to plain rounding.
    static func run(_ w: WeightInput, _ stats: WeightStatistics, nearest: (Int, Double) -> Double) -> (values: [Float], note: String) {
        guard let m = WeightMatrix(shape: w.shape, outputAxis: w.outputAxis), let moment = stats.secondMoment,
              stats.misfit(w) == nil else {
            return (w.values.indices.map { Float(nearest($0, Double(w.values[$0]))) }, "gptq: no second moment; rounded to nearest")
        }
        let n = m.columns, groups = stats.groups, perGroup = m.rows / groups
        var out = w.values
        var fallbacks = 0, dead = 0
        for g in 0..<groups {
            var h = Array(moment[(g * n * n)..<((g + 1) * n * n)])
            // Inputs never seen: decoupled (unit diagonal, no correlations), rounded plainly.
            var diagSum = 0.0
            for k in 0..<n {
                if !(h[k * n + k] > 0) {
                    dead += 1
                    for j in 0..<n { h[k * n + j] = 0; h[j * n + k] = 0 }
                    h[k * n + k] = 1
                }
                diagSum += h[k * n + k]
            }
            let perm = (0..<n).sorted { h[$0 * n + $0] > h[$1 * n + $1] || (h[$0 * n + $0] == h[$1 * n + $1] && $0 < $1) }
            var u: [Double]? = nil
            var damp = damping * diagSum / Double(n)
            for _ in 0..<6 where u == nil {
                u = inverseUpperFactor(h, perm: perm, n: n, damp: damp)
                damp *= 10
            }
            let rows = (g * perGroup)..<((g + 1) * perGroup)
            guard let u else {
                fallbacks += 1
                for r in rows { for k in 0..<n { let i = m.index(r, k); out[i] = Float(nearest(i, Double(w.values[i]))) } }
                continue
            }
            compensate(w.values, into: &out, m: m, rows: rows, perm: perm, u: u, nearest: nearest)
        }
        var note = "gptq: \(n) input columns, \(stats.count) calibration vectors, damping \(Int(damping * 100))%, columns by decreasing input energy"
        if groups > 1 { note += ", \(groups) input groups" }
        if dead > 0 { note += "; \(dead) column(s) never reached by the calibration data rounded plainly" }
        if fallbacks > 0 { note += "; \(fallbacks) group(s) not positive definite, rounded to nearest" }
        return (out, note)
    }

    /// The rounding of `rows`, blocks of 16 rows at a time against each row of U.
    static func compensate(_ values: [Float], into out: inout [Float], m: WeightMatrix, rows: Range<Int>, perm: [Int], u: [Double],
                           nearest: (Int, Double) -> Double) {
        let n = perm.count
        let block = 16
        var work = [Double](repeating: 0, count: block * n)
        var err = [Double](repeating: 0, count: block)
        var start = rows.lowerBound
        while start < rows.upperBound {
            let count = min(block, rows.upperBound - start)
            for b in 0..<count { for i in 0..<n { work[b * n + i] = Double(values[m.index(start + b, perm[i])]) } }
            work.withUnsafeMutableBufferPointer { wb in
                u.withUnsafeBufferPointer { ub in
                    guard let wp = wb.baseAddress, let up = ub.baseAddress else { return }
                    for i in 0..<n {
                        let d = up[i * n + i]
                        for b in 0..<count {
                            let at = m.index(start + b, perm[i])
                            let x = wp[b * n + i]
                            let q = nearest(at, x)
                            out[at] = Float(q)
                            err[b] = (x - q) / d
                        }
                        guard i + 1 < n else { continue }
                        for b in 0..<count {
                            let e = err[b]
                            guard e != 0 else { continue }
                            let row = wp + b * n
                            let urow = up + i * n
                            for j in (i + 1)..<n { row[j] -= e * urow[j] }
                        }
                    }
                }
            }
            start += count
        }
    }

    /// U, upper triangular with H_p⁻¹ = Uᵀ U, for H_p = H permuted by `perm` plus `damp` on the
    /// diagonal; nil when that is not positive definite. With J the reversal, chol(J H_p J) = L
    /// gives H_p⁻¹ = (J L⁻¹ J)ᵀ (J L⁻¹ J) and J L⁻¹ J is upper triangular: one Cholesky factor
    /// and one triangular inverse.
    static func inverseUpperFactor(_ h: [Double], perm: [Int], n: Int, damp: Double) -> [Double]? {
        // a = J H_p J (+ damp I), row-major.
        var a = [Double](repeating: 0, count: n * n)
        for i in 0..<n {
            let pi = perm[n - 1 - i]
            for j in 0...i { a[i * n + j] = h[pi * n + perm[n - 1 - j]] }
            a[i * n + i] += damp
        }
        guard cholesky(&a, n) else { return nil }
        let inv = lowerInverse(a, n)
        var u = [Double](repeating: 0, count: n * n)
        for i in 0..<n { for j in i..<n { u[i * n + j] = inv[(n - 1 - i) * n + (n - 1 - j)] } }
        return u
    }

    /// In place: the lower triangle of `a` becomes L with a = L Lᵀ (the upper triangle is not read).
    static func cholesky(_ a: inout [Double], _ n: Int) -> Bool {
        a.withUnsafeMutableBufferPointer { p in
            guard let base = p.baseAddress else { return n == 0 }
            for j in 0..<n {
                let rj = base + j * n
                var s = rj[j]
                for k in 0..<j { s -= rj[k] * rj[k] }
                guard s > 0, s.isFinite else { return false }
                let d = s.squareRoot()
                rj[j] = d
                for i in (j + 1)..<max(j + 1, n) {
                    let ri = base + i * n
                    var t = ri[j]
                    for k in 0..<j { t -= ri[k] * rj[k] }
                    ri[j] = t / d
                }
            }
            return true
        }
    }

    /// L⁻¹ of the lower-triangular L stored in `l`, row by row (X row i = (e_i − Σ_{k<i} L[i][k] X[k]) / L[i][i]).
    static func lowerInverse(_ l: [Double], _ n: Int) -> [Double] {
        var x = [Double](repeating: 0, count: n * n)
        x.withUnsafeMutableBufferPointer { xp in
            l.withUnsafeBufferPointer { lp in
                guard let xb = xp.baseAddress, let lb = lp.baseAddress else { return }
                for i in 0..<n {
                    let xi = xb + i * n
                    xi[i] = 1
                    for k in 0..<i {
                        let c = lb[i * n + k]
                        guard c != 0 else { continue }
                        let xk = xb + k * n
                        for j in 0...k { xi[j] -= c * xk[j] }
                    }
                    let d = 1 / lb[i * n + i]
                    for j in 0...i { xi[j] *= d }
                }
            }
        }
        return x
    }
}
