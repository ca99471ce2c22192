import Foundation
import ShrinkwrapIR

#if canImport(CImageCodecs)
import CImageCodecs
#endif
#if canImport(ImageIO)
import CoreGraphics
import ImageIO
#endif

/// A decoded 8-bit image: rows top to bottom, channels interleaved (1 = gray, 3 = RGB).
public struct Image8: Sendable, Equatable {
    public var width: Int
    public var height: Int
    public var channels: Int
    public var pixels: [UInt8]

    public init(width: Int, height: Int, channels: Int, pixels: [UInt8]) {
        self.width = width; self.height = height; self.channels = channels; self.pixels = pixels
    }
}

/// How images become model inputs: the preprocessing apps do before they call a model.
///
/// Order: decode → colour conversion → `resize` → `centerCrop` → (when the
/// result still differs from the model's fixed height × width, a plain
/// resize to it) → per channel `(pixel × scale − mean) / std` → the input's
/// layout (NCHW or NHWC, from its shape) and dtype. A float input whose
/// model metadata gives a normalization (TFLite's NormalizationOptions) takes
/// that mean / std by default; giving any of scale / mean / std replaces it.
public struct ImagePreprocessing: Sendable, Equatable {
    /// A size given on the command line: one number (the shorter side, or a square crop) or W×H.
    public enum Size: Sendable, Equatable, CustomStringConvertible {
        case side(Int)
        case exact(width: Int, height: Int)

        public var description: String {
            switch self {
            case .side(let s): return String(s)
            case .exact(let w, let h): return "\(w)x\(h)"
            }
        }

        /// "256" or "224x192" (width × height; 'x' or '×').
        public static func parse(_ text: String) -> Size? {
            let parts = text.lowercased().replacingOccurrences(of: "×", with: "x").split(separator: "x", omittingEmptySubsequences: false)
            let values = parts.compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard values.count == parts.count, values.allSatisfy({ $0 >= 1 && $0 <= 1 << 16 }) else { return nil }
            switch values.count {
            case 1: return .side(values[0])
            case 2: return .exact(width: values[0], height: values[1])
            default: return nil
            }
        }
    }

    /// Tensor layout of an image input.
    public enum Layout: String, Sendable, Equatable, CaseIterable {
        case nchw = "NCHW"
        case nhwc = "NHWC"
    }

    /// `.side(n)`: the shorter side becomes n, the longer keeps the aspect
    /// ratio (truncated, as torchvision does); `.exact`: stretched to W×H.
    /// Bilinear with PIL's antialiasing (the filter widens when shrinking),
    /// so the pixels equal PIL's `Image.resize(size, Image.BILINEAR)`.
    public var resize: Size?
    /// The centre W×H (or n×n) of the image, offsets rounded half to even as torchvision does.
    public var centerCrop: Size?
    /// Pixel multiplier, e.g. 1/255.
    public var scale: Float?
    /// Per channel (one value for all channels, or one per channel), subtracted after scaling.
    public var mean: [Float] = []
    /// Per channel (one value or one per channel), divided by after the mean.
    public var std: [Float] = []
    /// Channel order fed to the model; nil: the model's declared image colour, else RGB (GRAY for 1-channel inputs).
    public var color: ColorLayout?
    /// nil: from the input's shape (the axis of size 1 or 3 next to the batch or at the end).
    public var layout: Layout?

    public init() {}

    /// True when any option is set (used to refuse them for non-image data).
    public var isSet: Bool {
        resize != nil || centerCrop != nil || scale != nil || !mean.isEmpty || !std.isEmpty || color != nil || layout != nil
    }

    /// "1/255", "0.5", "-1e-3".
    public static func parseNumber(_ text: String) -> Float? {
        let t = text.trimmingCharacters(in: .whitespaces)
        if let slash = t.firstIndex(of: "/") {
            guard let a = Double(t[..<slash]), let b = Double(t[t.index(after: slash)...]), b != 0 else { return nil }
            let v = Float(a / b)
            return v.isFinite ? v : nil
        }
        guard let v = Float(t), v.isFinite else { return nil }
        return v
    }

    /// "0.485,0.456,0.406" → three values; each may be a fraction.
    public static func parseList(_ text: String) -> [Float]? {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { parseNumber(String($0)) }
        guard !parts.isEmpty, parts.allSatisfy({ $0 != nil }) else { return nil }
        return parts.compactMap { $0 }
    }

    /// One line for reports: "resize 256, center-crop 224, scale 0.00392157, mean [0.485, …]".
    public var summary: String {
        var parts: [String] = []
        if let r = resize { parts.append("resize \(r)") }
        if let c = centerCrop { parts.append("center-crop \(c)") }
        if let s = scale { parts.append("scale \(s)") }
        if !mean.isEmpty { parts.append("mean \(mean)") }
        if !std.isEmpty { parts.append("std \(std)") }
        if let c = color { parts.append(c.rawValue) }
        if let l = layout { parts.append(l.rawValue) }
        return parts.joined(separator: ", ")
    }
}

/// PNG / JPEG decoding (libpng and libjpeg on Linux, ImageIO on Apple
/// platforms) and the preprocessing of `ImagePreprocessing`.
public enum ImageData {
    /// Larger images are refused before pixel memory is allocated.
    public static let maxPixels = 1 << 26

    /// File extensions read as images.
    public static let extensions: Set<String> = ["png", "jpg", "jpeg"]

    /// Decodes PNG or JPEG bytes (recognised by their signature, not the file name).
    public static func decode(_ bytes: [UInt8], file: String) throws -> Image8 {
        let isPNG = bytes.starts(with: [0x89, 0x50, 0x4E, 0x47])
        let isJPEG = bytes.starts(with: [0xFF, 0xD8])
        guard isPNG || isJPEG else {
            throw InputData.Error("\(file): not a PNG or JPEG image (\(bytes.count) bytes, unrecognised signature)")
        }
        #if canImport(CImageCodecs)
        var image = sw_image()
        let failed = bytes.withUnsafeBufferPointer { b -> Int32 in
            isPNG ? sw_decode_png(b.baseAddress, b.count, maxPixels, &image) : sw_decode_jpeg(b.baseAddress, b.count, maxPixels, &image)
        }
        defer { sw_image_free(&image) }
        let message = withUnsafeBytes(of: image.message) { raw -> String in
            let chars = raw.prefix { $0 != 0 }
            return String(decoding: chars, as: UTF8.self)
        }
        guard failed == 0, let base = image.pixels else {
            throw InputData.Error("\(file): \(isPNG ? "PNG" : "JPEG") decoding failed: \(message.isEmpty ? "unknown error" : message)")
        }
        let count = Int(image.width) * Int(image.height) * Int(image.channels)
        return Image8(width: Int(image.width), height: Int(image.height), channels: Int(image.channels),
                      pixels: Array(UnsafeBufferPointer(start: base, count: count)))
        #elseif canImport(ImageIO)
        return try decodeWithImageIO(bytes, file: file)
        #else
        throw InputData.Error("\(file): this build has no image decoder (Linux needs libpng-dev and libjpeg-dev: run `make deps`)")
        #endif
    }

    #if !canImport(CImageCodecs) && canImport(ImageIO)
    /// ImageIO decode into an 8-bit gray or RGB buffer (alpha dropped, colour not managed beyond ImageIO's defaults).
    static func decodeWithImageIO(_ bytes: [UInt8], file: String) throws -> Image8 {
        let data = Data(bytes) as CFData
        guard let source = CGImageSourceCreateWithData(data, nil), let cg = CGImageSourceCreateImageAtIndex(source, 0, nil) else {
            throw InputData.Error("\(file): ImageIO cannot decode the image")
        }
        let width = cg.width, height = cg.height
        guard width > 0, height > 0, width <= maxPixels / height else {
            throw InputData.Error("\(file): \(width)x\(height) pixels is more than the \(maxPixels)-pixel limit")
        }
        let gray = cg.colorSpace?.model == .monochrome
        let channels = gray ? 1 : 3
        let stride = gray ? width : width * 4
        var buffer = [UInt8](repeating: 0, count: stride * height)
        let drawn = buffer.withUnsafeMutableBytes { raw -> Bool in
            let space = gray ? CGColorSpaceCreateDeviceGray() : CGColorSpaceCreateDeviceRGB()
            let info = gray ? CGImageAlphaInfo.none.rawValue : CGImageAlphaInfo.noneSkipLast.rawValue
            guard let ctx = CGContext(data: raw.baseAddress, width: width, height: height, bitsPerComponent: 8,
                                      bytesPerRow: stride, space: space, bitmapInfo: info) else { return false }
            ctx.draw(cg, in: CGRect(x: 0, y: 0, width: width, height: height))
            return true
        }
        guard drawn else { throw InputData.Error("\(file): ImageIO cannot render the image") }
        if gray { return Image8(width: width, height: height, channels: 1, pixels: buffer) }
        var rgb = [UInt8](repeating: 0, count: width * height * 3)
        for p in 0..<(width * height) {
            rgb[3 * p] = buffer[4 * p]; rgb[3 * p + 1] = buffer[4 * p + 1]; rgb[3 * p + 2] = buffer[4 * p + 2]
        }
        return Image8(width: width, height: height, channels: channels, pixels: rgb)
    }
    #endif

    // MARK: - Colour

    /// Gray ↔ RGB: gray is replicated; RGB → gray is ITU-R 601 luma in
    /// PIL's fixed point (R × 19595 + G × 38470 + B × 7471 + 2¹⁵) >> 16.
    public static func converted(_ image: Image8, channels: Int) -> Image8 {
        guard image.channels != channels else { return image }
        let n = image.width * image.height
        var out = [UInt8](repeating: 0, count: n * channels)
        if channels == 3 {
            for p in 0..<n { let g = image.pixels[p]; out[3 * p] = g; out[3 * p + 1] = g; out[3 * p + 2] = g }
        } else {
            for p in 0..<n {
                let r = UInt32(image.pixels[3 * p]), g = UInt32(image.pixels[3 * p + 1]), b = UInt32(image.pixels[3 * p + 2])
                out[p] = UInt8((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16)
            }
        }
        return Image8(width: image.width, height: image.height, channels: channels, pixels: out)
    }

    // MARK: - Geometry

    /// Bilinear resampling equal to PIL's `Image.resize((width, height), BILINEAR)`:
    /// a triangle filter whose support widens by the shrink factor, 22-bit
    /// fixed-point weights, a horizontal pass then a vertical pass, each rounded to 8 bits.
    public static func resized(_ image: Image8, width: Int, height: Int) -> Image8 {
        var out = image
        if width != image.width { out = horizontalPass(out, to: width) }
        if height != image.height { out = verticalPass(out, to: height) }
        return out
    }

    static let precisionBits = 22

    /// For each output position: the first input index, and the fixed-point weights from there.
    static func coefficients(inSize: Int, outSize: Int) -> [(start: Int, weights: [Int32])] {
        let scale = Double(inSize) / Double(outSize)
        let filterScale = max(scale, 1)
        let support = filterScale  // the triangle's support is 1
        var result: [(start: Int, weights: [Int32])] = []
        result.reserveCapacity(outSize)
        for xx in 0..<outSize {
            let center = (Double(xx) + 0.5) * scale
            let inverse = 1 / filterScale
            let xmin = max(Int(center - support + 0.5), 0)
            let xmax = min(Int(center + support + 0.5), inSize)
            var weights: [Double] = []
            var total = 0.0
            if xmax > xmin {
                for x in xmin..<xmax {
                    let t = abs((Double(x) - center + 0.5) * inverse)
                    let w = t < 1 ? 1 - t : 0
                    weights.append(w)
                    total += w
                }
            }
            let one = Double(1 << precisionBits)
            let fixed = weights.map { w -> Int32 in
                let k = total != 0 ? w / total : w
                return Int32(k < 0 ? k * one - 0.5 : k * one + 0.5)
            }
            result.append((xmin, fixed))
        }
        return result
    }

    static func clip8(_ sum: Int32) -> UInt8 {
        let v = sum >> Int32(precisionBits)
        return v < 0 ? 0 : v > 255 ? 255 : UInt8(v)
    }

    static func horizontalPass(_ image: Image8, to width: Int) -> Image8 {
        let c = image.channels
        let coeffs = coefficients(inSize: image.width, outSize: width)
        var out = [UInt8](repeating: 0, count: width * image.height * c)
        let half = Int32(1) << Int32(precisionBits - 1)
        image.pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for y in 0..<image.height {
                    let row = y * image.width * c
                    for (xx, k) in coeffs.enumerated() {
                        for ch in 0..<c {
                            var sum = half
                            for (i, w) in k.weights.enumerated() { sum &+= Int32(src[row + (k.start + i) * c + ch]) &* w }
                            dst[(y * width + xx) * c + ch] = clip8(sum)
                        }
                    }
                }
            }
        }
        return Image8(width: width, height: image.height, channels: c, pixels: out)
    }

    static func verticalPass(_ image: Image8, to height: Int) -> Image8 {
        let c = image.channels
        let rowLength = image.width * c
        let coeffs = coefficients(inSize: image.height, outSize: height)
        var out = [UInt8](repeating: 0, count: rowLength * height)
        let half = Int32(1) << Int32(precisionBits - 1)
        image.pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for (yy, k) in coeffs.enumerated() {
                    for x in 0..<rowLength {
                        var sum = half
                        for (i, w) in k.weights.enumerated() { sum &+= Int32(src[(k.start + i) * rowLength + x]) &* w }
                        dst[yy * rowLength + x] = clip8(sum)
                    }
                }
            }
        }
        return Image8(width: image.width, height: height, channels: c, pixels: out)
    }

    /// The centre width × height; offsets round((W − w) / 2) half to even, as torchvision's CenterCrop.
    public static func centerCropped(_ image: Image8, width: Int, height: Int) -> Image8 {
        let left = Int(((Double(image.width - width)) / 2).rounded(.toNearestOrEven))
        let top = Int(((Double(image.height - height)) / 2).rounded(.toNearestOrEven))
        let c = image.channels
        var out = [UInt8](repeating: 0, count: width * height * c)
        for y in 0..<height {
            let from = ((top + y) * image.width + left) * c
            for i in 0..<(width * c) { out[y * width * c + i] = image.pixels[from + i] }
        }
        return Image8(width: width, height: height, channels: c, pixels: out)
    }

    /// "256" on a 640×480 image → 341×256 (the shorter side 256, the longer truncated as torchvision does).
    static func target(of size: ImagePreprocessing.Size, for image: Image8) -> (width: Int, height: Int) {
        switch size {
        case .exact(let w, let h): return (w, h)
        case .side(let s):
            if image.width <= image.height {
                return (s, max(1, Int(Double(s) * Double(image.height) / Double(image.width))))
            }
            return (max(1, Int(Double(s) * Double(image.width) / Double(image.height))), s)
        }
    }

    // MARK: - Into a tensor

    /// Where the channel axis of an image input is, and its fixed sizes.
    struct InputGeometry {
        var layout: ImagePreprocessing.Layout
        var channels: Int
        var height: Int?
        var width: Int?
        /// The tensor shape for an image of `height` × `width`.
        var shape: (Int, Int) -> [Int]
    }

    static func geometry(of info: ValueInfo, imageInput: Bool, forced: ImagePreprocessing.Layout?) throws -> InputGeometry {
        guard let dims = info.shape, dims.count == 3 || dims.count == 4 else {
            throw InputData.Error("input '\(info.name)' \(info.shapeDescription) is not an image input (images need a rank-3 or rank-4 input, [1, C, H, W] or [1, H, W, C])")
        }
        let lead = dims.count == 4 ? 1 : 0
        if dims.count == 4, let b = dims[0].value, b != 1 {
            throw InputData.Error("input '\(info.name)' \(info.shapeDescription) has batch size \(b); images are fed one at a time (batch 1)")
        }
        func isChannel(_ d: Dim) -> Bool { d.value == 1 || d.value == 3 }
        let first = dims[lead], last = dims[dims.count - 1]
        let layout: ImagePreprocessing.Layout
        if let forced {
            layout = forced
        } else if imageInput {
            layout = .nchw
        } else if isChannel(first) && !isChannel(last) {
            layout = .nchw
        } else if isChannel(last) && !isChannel(first) {
            layout = .nhwc
        } else {
            throw InputData.Error("input '\(info.name)' \(info.shapeDescription): cannot tell whether it is NCHW or NHWC; give --layout NCHW or --layout NHWC")
        }
        let cDim = layout == .nchw ? first : last
        guard let channels = cDim.value, channels == 1 || channels == 3 else {
            throw InputData.Error("input '\(info.name)' \(info.shapeDescription) as \(layout.rawValue) has \(cDim) channels; images give 1 (gray) or 3 (colour)")
        }
        let hDim = layout == .nchw ? dims[lead + 1] : dims[lead]
        let wDim = layout == .nchw ? dims[lead + 2] : dims[lead + 1]
        let batch = dims.count == 4
        return InputGeometry(layout: layout, channels: channels, height: hDim.value, width: wDim.value) { h, w in
            let core = layout == .nchw ? [channels, h, w] : [h, w, channels]
            return batch ? [1] + core : core
        }
    }

    /// The normalization from the model's metadata (TFLite NormalizationOptions)
    /// that applies to `info`: when the input is float, is not a declared
    /// image input, and none of --scale / --mean / --std is given (any of
    /// them replaces it whole).
    public static func metadataNormalization(for info: ValueInfo, graph: Graph, options: ImagePreprocessing) -> InputNormalization? {
        guard options.scale == nil, options.mean.isEmpty, options.std.isEmpty, (info.dtype ?? .float32).isFloatingPoint,
              !graph.metadata.imageInputs.contains(where: { $0.name == info.name }) else { return nil }
        return graph.metadata.normalization(of: info.name)
    }

    /// One image file as the input `info` takes it.
    public static func tensor(fromFile url: URL, display: String, for info: ValueInfo, graph: Graph, options: ImagePreprocessing) throws -> Tensor {
        let bytes: [UInt8]
        do { bytes = Array(try Data(contentsOf: url)) } catch {
            throw InputData.Error("\(display): cannot read: \((error as NSError).localizedDescription)")
        }
        return try tensor(from: try decode(bytes, file: display), file: display, for: info, graph: graph, options: options)
    }

    /// A decoded image through `options` into the input's layout and dtype.
    public static func tensor(from decoded: Image8, file: String, for info: ValueInfo, graph: Graph, options: ImagePreprocessing) throws -> Tensor {
        let declared = graph.metadata.imageInputs.first { $0.name == info.name }
        let geo = try geometry(of: info, imageInput: declared != nil, forced: options.layout)
        let color = options.color ?? declared?.color ?? (geo.channels == 1 ? .gray : .rgb)
        guard color.channels == geo.channels else {
            throw InputData.Error("\(file): --color \(color.rawValue) gives \(color.channels) channel\(color.channels == 1 ? "" : "s") but input '\(info.name)' \(info.shapeDescription) takes \(geo.channels)")
        }
        if declared != nil, options.scale != nil || !options.mean.isEmpty || !options.std.isEmpty {
            throw InputData.Error("input '\(info.name)' is an image input: the model scales its 0…255 pixels itself, so --scale / --mean / --std do not apply")
        }
        // Without --scale / --mean / --std, the normalization the model's metadata gives (TFLite).
        let fromMetadata = metadataNormalization(for: info, graph: graph, options: options)
        var image = converted(decoded, channels: geo.channels)
        if let r = options.resize {
            let t = target(of: r, for: image)
            image = resized(image, width: t.width, height: t.height)
        }
        if let c = options.centerCrop {
            let (w, h): (Int, Int)
            switch c {
            case .side(let s): (w, h) = (s, s)
            case .exact(let cw, let ch): (w, h) = (cw, ch)
            }
            guard w <= image.width, h <= image.height else {
                throw InputData.Error("\(file): center crop \(w)x\(h) is larger than the \(image.width)x\(image.height) image\(options.resize == nil ? "" : " after resizing")")
            }
            image = centerCropped(image, width: w, height: h)
        }
        let wantW = geo.width ?? image.width, wantH = geo.height ?? image.height
        if wantW != image.width || wantH != image.height {
            image = resized(image, width: wantW, height: wantH)
        }
        let c = geo.channels
        func perChannel(_ values: [Float], _ name: String, _ fallback: Float) throws -> [Float] {
            if values.isEmpty { return Array(repeating: fallback, count: c) }
            if values.count == 1 { return Array(repeating: values[0], count: c) }
            guard values.count == c else {
                let what = fromMetadata == nil ? "--\(name)" : "the model's metadata normalization (\(name))"
                throw InputData.Error("\(what) has \(values.count) values but input '\(info.name)' has \(c) channel\(c == 1 ? "" : "s")")
            }
            return values
        }
        let mean = try perChannel(fromMetadata?.mean ?? options.mean, "mean", 0)
        let std = try perChannel(fromMetadata?.std ?? options.std, "std", 1)
        if let zero = std.firstIndex(of: 0) { throw InputData.Error("--std value \(zero) is 0") }
        let scale = options.scale ?? 1
        // Channel order: the decoded image is RGB; BGR swaps.
        let order = color == .bgr ? [2, 1, 0] : Array(0..<c)
        let h = image.height, w = image.width
        let shape = geo.shape(h, w)
        let dtype = info.dtype ?? .float32
        var floats: [Float] = []
        var ints: [Int64] = []
        let isFloat = dtype.isFloatingPoint
        switch dtype {
        case .float32, .float16, .float64, .bfloat16: floats = [Float](repeating: 0, count: h * w * c)
        case .uint8, .int32, .int64:
            guard options.scale == nil, options.mean.isEmpty, options.std.isEmpty else {
                throw InputData.Error("input '\(info.name)' takes \(dtype) pixels; --scale / --mean / --std need a float input")
            }
            ints = [Int64](repeating: 0, count: h * w * c)
        default:
            throw InputData.Error("input '\(info.name)' is \(dtype); images feed float or uint8 inputs")
        }
        for y in 0..<h {
            for x in 0..<w {
                let p = (y * w + x) * c
                for k in 0..<c {
                    let pixel = image.pixels[p + order[k]]
                    let index = geo.layout == .nchw ? (k * h + y) * w + x : p + k
                    if isFloat {
                        floats[index] = (Float(pixel) * scale - mean[k]) / std[k]
                    } else {
                        ints[index] = Int64(pixel)
                    }
                }
            }
        }
        if isFloat {
            return Tensor(dtype.rounded(floats), shape: shape, dtype: dtype)
        }
        return Tensor(ints: ints, shape: shape, dtype: dtype)
    }
}
