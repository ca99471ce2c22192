import Foundation
import ShrinkwrapTestSupport
import XCTest
import ZipArchive

// Helpers the ShrinkwrapData tests share (were private to InputDataTests.swift).

/// The committed numpy-made fixtures.
let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/InputData")

/// The project's venv python with numpy (see `TestPython.venv`); tests that
/// need it skip, loudly, when it is missing.
let venvPython = TestPython.venv

func requirePython() throws {
    if !FileManager.default.isExecutableFile(atPath: venvPython) {
        let message = "SKIPPED: \(venvPython) is missing, so numpy-generated cases are not tested"
        FileHandle.standardError.write(Data((message + "\n").utf8))
        throw XCTSkip(message)
    }
}

/// Runs a python script (with numpy available) in `dir`; a failing script fails the test.
func runPython(_ script: String, in dir: URL) throws {
    try TestPython.run(script, in: dir, python: venvPython)
}

func makeTempDir() throws -> URL { try ShrinkwrapTestSupport.makeTempDir("inputdata") }



/// Builds small stored ZIP archives by hand, optionally with ZIP64 records.
func makeZip(_ members: [(name: String, data: [UInt8])], zip64: Bool = false, comment: [UInt8] = []) -> [UInt8] {
    var out: [UInt8] = []
    func u16(_ v: Int) { out += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
    func u32(_ v: Int) { u16(v & 0xFFFF); u16(v >> 16 & 0xFFFF) }
    func u64(_ v: Int) { u32(v & 0xFFFF_FFFF); u32(v >> 32) }
    var offsets: [Int] = []
    for m in members {
        offsets.append(out.count)
        u32(0x0403_4B50); u16(45); u16(0); u16(0); u16(0); u16(0x21)
        u32(Int(CRC32.checksum(m.data))); u32(m.data.count); u32(m.data.count)
        u16(m.name.utf8.count); u16(0)
        out += Array(m.name.utf8)
        out += m.data
    }
    let cdStart = out.count
    for (m, off) in zip(members, offsets) {
        u32(0x0201_4B50); u16(45); u16(45); u16(0); u16(0); u16(0); u16(0x21)
        u32(Int(CRC32.checksum(m.data)))
        if zip64 { u32(0xFFFF_FFFF); u32(0xFFFF_FFFF) } else { u32(m.data.count); u32(m.data.count) }
        u16(m.name.utf8.count); u16(zip64 ? 28 : 0); u16(0); u16(0); u16(0); u32(0)
        u32(zip64 ? 0xFFFF_FFFF : off)
        out += Array(m.name.utf8)
        if zip64 { u16(1); u16(24); u64(m.data.count); u64(m.data.count); u64(off) }
    }
    let cdSize = out.count - cdStart
    if zip64 {
        let recordStart = out.count
        u32(0x0606_4B50); u64(44); u16(45); u16(45); u32(0); u32(0)
        u64(members.count); u64(members.count); u64(cdSize); u64(cdStart)
        u32(0x0706_4B50); u32(0); u64(recordStart); u32(1)
    }
    u32(0x0605_4B50); u16(0); u16(0)
    u16(zip64 ? 0xFFFF : members.count); u16(zip64 ? 0xFFFF : members.count)
    u32(zip64 ? 0xFFFF_FFFF : cdSize); u32(zip64 ? 0xFFFF_FFFF : cdStart)
    u16(comment.count)
    out += comment
    return out
}
