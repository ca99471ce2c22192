import Foundation
import ShrinkwrapData

/// Deterministic randomness for every test target: the library's one seeded
/// generator (SplitMix64), so that test data is the same on every run and
/// every machine.
public typealias SplitMix = SeededGenerator

extension SeededGenerator {
    /// Uniform in [0, 1) with 24 bits.
    public mutating func nextFloat() -> Float { Float(next() >> 40) / Float(1 << 24) }

    /// Uniform in [0, 1) with 53 bits.
    public mutating func uniform() -> Double { Double(next() >> 11) / Double(1 << 53) }

    /// Standard normal (Box–Muller).
    public mutating func normal() -> Double {
        let u = max(uniform(), 1e-300), v = uniform()
        return (-2 * log(u)).squareRoot() * cos(2 * .pi * v)
    }
}
