import CKernels
import ShrinkwrapIR

/// Winograd (Toom–Cook) minimal filtering along one axis, F(m, r): m outputs of an r-tap correlation
/// from α = m + r − 1 inputs with α multiplications instead of m · r:
///
///     y = Aᵀ · [(G · g) ⊙ (Bᵀ · d)]
///
/// built from α − 1 finite interpolation points and the point at infinity. With the products
/// Pⱼ(x) = ∏_{l ≠ j} (x − pₗ) over the finite points and Nⱼ = Pⱼ(pⱼ):
/// Bᵀ[j][l] = coefficient of xˡ in Pⱼ (the ∞ row: in ∏ₗ (x − pₗ)); G[j][k] = pⱼᵏ / Nⱼ (the ∞ row
/// picks g's last tap); Aᵀ[i][j] = pⱼⁱ (the ∞ column: 1 in the last row). The division by Nⱼ sits in
/// G, which is applied to the weights once, in double precision, so the input and output transforms
/// (float, every run) have small exact coefficients.
struct WinogradAxis: Equatable {
    let r: Int, m: Int, alpha: Int
    /// α × α, row ξ: the input transform.
    let bt: [Float]
    /// m × α: the output transform.
    let at: [Float]
    /// α × r: the filter transform.
    let g: [Double]

    /// The transform a convolution with `r` taps along an axis uses: F(4, 3) (α 6), F(4, 5) and
    /// F(2, 7) (α 8), and the identity for one tap; nil for other sizes. The points are 0, ±1, ±2
    /// (and ±½ for α 8), the usual well-conditioned choice.
    static func forKernel(_ r: Int) -> WinogradAxis? {
        switch r {
        case 1: return identity
        case 3: return f43
        case 5: return f45
        case 7: return f27
        default: return nil
        }
    }

    private static let identity = WinogradAxis(r: 1, m: 1, alpha: 1, bt: [1], at: [1], g: [1])
    private static let f43 = WinogradAxis(points: [0, 1, -1, 2, -2], r: 3)
    private static let f45 = WinogradAxis(points: [0, 1, -1, 2, -2, 0.5, -0.5], r: 5)
    private static let f27 = WinogradAxis(points: [0, 1, -1, 2, -2, 0.5, -0.5], r: 7)

    private init(r: Int, m: Int, alpha: Int, bt: [Float], at: [Float], g: [Double]) {
        self.r = r; self.m = m; self.alpha = alpha; self.bt = bt; self.at = at; self.g = g
    }

    /// F(m, r) with α = points.count + 1 (the last point is ∞) and m = α − r + 1.
    init(points p: [Double], r: Int) {
        let alpha = p.count + 1, m = alpha - r + 1
        /// Coefficients (lowest first) of ∏ (x − pₗ) over `roots`.
        func product(_ roots: [Double]) -> [Double] {
            var c = [1.0]
            for q in roots {
                var next = [Double](repeating: 0, count: c.count + 1)
                for (i, v) in c.enumerated() { next[i + 1] += v; next[i] -= q * v }
                c = next
            }
            return c
        }
        var bt = [Float](repeating: 0, count: alpha * alpha)
        var g = [Double](repeating: 0, count: alpha * r)
        var at = [Float](repeating: 0, count: m * alpha)
        for j in 0..<alpha {
            let finite = j < p.count
            let others = finite ? p.enumerated().filter { $0.offset != j }.map(\.element) : p
            for (l, v) in product(others).enumerated() { bt[j * alpha + l] = Float(v) }
            if finite {
                let norm = others.reduce(1.0) { $0 * (p[j] - $1) }
                var power = 1.0
                for k in 0..<r { g[j * r + k] = power / norm; power *= p[j] }
                power = 1.0
                for i in 0..<m { at[i * alpha + j] = Float(power); power *= p[j] }
            } else {
                g[j * r + r - 1] = 1
                at[(m - 1) * alpha + j] = 1
            }
        }
        self.init(r: r, m: m, alpha: alpha, bt: bt, at: at, g: g)
    }
}

extension NNKernels {
    /// Planner-internal attribute of a Conv whose input 4 holds its filters in the Winograd domain
    /// (`winogradFilters`): the spatial kernel [kh, kw] they were made for.
    public static let winogradAttribute = "__shrinkwrap_winograd"

    /// The Winograd axes for a kernel of `kh` × `kw` taps: one axis with 3, 5 or 7 taps (a 1-D
    /// convolution), or 3 × 3 (F(4×4, 3×3)); nil otherwise.
    static func winogradAxes(kh: Int, kw: Int) -> (h: WinogradAxis, w: WinogradAxis)? {
        guard kh * kw > 1, kh == 1 || kw == 1 || (kh == 3 && kw == 3),
              let h = WinogradAxis.forKernel(kh), let w = WinogradAxis.forKernel(kw) else { return nil }
        return (h, w)
    }

    /// U[ξh·αw + ξw][o][c] = (G_h · w[o][c] · G_wᵀ)[ξh][ξw], in double precision, rounded once; `w` is
    /// `filters` × `channels` × kh × kw. Shape [αh·αw, filters, channels].
    static func winogradFilters(_ w: [Float], filters: Int, channels: Int, kh: Int, kw: Int) -> Tensor? {
        guard let (ah, aw) = winogradAxes(kh: kh, kw: kw), w.count == filters * channels * kh * kw else { return nil }
        let alpha = ah.alpha * aw.alpha, plane = filters * channels
        let u = makeFloats(alpha * plane) { up in
            var rows = [Double](repeating: 0, count: kh * aw.alpha)
            for f in 0..<plane {
                let tap = f * kh * kw
                // Along w first (kh × αw), then along h.
                for i in 0..<kh {
                    for xw in 0..<aw.alpha {
                        var s = 0.0
                        for k in 0..<kw { s += aw.g[xw * kw + k] * Double(w[tap + i * kw + k]) }
                        rows[i * aw.alpha + xw] = s
                    }
                }
                for xh in 0..<ah.alpha {
                    for xw in 0..<aw.alpha {
                        var s = 0.0
                        for i in 0..<kh { s += ah.g[xh * kh + i] * rows[i * aw.alpha + xw] }
                        up[(xh * aw.alpha + xw) * plane + f] = Float(s)
                    }
                }
            }
        }
        return Tensor(u, shape: [alpha, filters, channels])
    }
}
