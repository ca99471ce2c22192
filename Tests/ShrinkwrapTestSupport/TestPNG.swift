import ZipArchive

/// A PNG written here byte by byte (stored deflate blocks), so every colour
/// type and bit depth is tested with known pixels and no encoder.
public enum TestPNG {
    public static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typeBytes = Array(type.utf8)
        var out = be32(UInt32(data.count)) + typeBytes + data
        out += be32(CRC32.checksum(typeBytes + data))
        return out
    }

    public static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }

    public static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var i = 0
        repeat {
            let n = min(65535, data.count - i)
            let last: UInt8 = i + n == data.count ? 1 : 0
            out += [last, UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8((~n >> 8) & 0xFF)]
            out += data[i..<(i + n)]
            i += n
        } while i < data.count
        var a: UInt32 = 1, b: UInt32 = 0
        for x in data { a = (a + UInt32(x)) % 65521; b = (b + a) % 65521 }
        return out + be32(b << 16 | a)
    }

    /// `rows`: each row's bytes as the PNG stores them (packed samples), filter 0 prepended here.
    public static func make(width: Int, height: Int, depth: UInt8, color: UInt8, rows: [[UInt8]], interlaced: Bool = false,
                     extra: [[UInt8]] = []) -> [UInt8] {
        var raw: [UInt8] = []
        for r in rows { raw += [0] + r }
        let ihdr = be32(UInt32(width)) + be32(UInt32(height)) + [depth, color, 0, 0, interlaced ? 1 : 0]
        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", ihdr)
        for e in extra { png += e }
        return png + chunk("IDAT", zlibStored(raw)) + chunk("IEND", [])
    }

    /// Adam7 rows of an 8-bit image with `c` bytes per pixel: the seven passes' rows in order.
    public static func adam7Rows(_ pixels: [UInt8], width: Int, height: Int, c: Int) -> [[UInt8]] {
        let passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
        var rows: [[UInt8]] = []
        for (x0, y0, dx, dy) in passes {
            guard x0 < width, y0 < height else { continue }
            for y in stride(from: y0, to: height, by: dy) {
                var row: [UInt8] = []
                for x in stride(from: x0, to: width, by: dx) { row += pixels[((y * width + x) * c)..<((y * width + x + 1) * c)] }
                rows.append(row)
            }
        }
        return rows
    }
}
