// Writes Fixtures/valid/cf-*.bin: the same kind of frames as generate.py, but
// with the payload written by CoreFoundation (swift-corelibs-foundation's
// PropertyListSerialization), for writer diversity.
//
//     python3 Fixtures/generate.py            # writes cf-source/*.plist and the cf-*.json meanings
//     swift Fixtures/generate-cf.swift        # this script: cf-source/NAME.plist -> valid/NAME.bin
//     python3 Fixtures/generate.py --verify   # checks the cf-*.bin frames too
//
// Each cf-source/NAME.plist is an XML property list written by plistlib, so
// the types (integer, real, boolean, data) are exact; this script reads it and
// writes it again as bplist00 with CoreFoundation, behind the 4-byte
// little-endian length prefix that counts itself.
//
// Determinism: on Linux, NSDictionary keeps its entries in a Swift Dictionary,
// whose order depends on a per-process random hash seed, and CF writes keys in
// that order. So the script runs itself again with SWIFT_DETERMINISTIC_HASHING=1
// when that variable is not set: the same toolchain then writes the same bytes.

import Foundation

let fixtures = URL(fileURLWithPath: #filePath).standardizedFileURL.deletingLastPathComponent()
let sources = fixtures.appendingPathComponent("cf-source")
let valid = fixtures.appendingPathComponent("valid")
let maximumFrame = 131_072

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("generate-cf: \(message)\n".utf8))
    exit(1)
}

if ProcessInfo.processInfo.environment["SWIFT_DETERMINISTIC_HASHING"] == nil {
    let again = Process()
    again.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    again.arguments = ["SWIFT_DETERMINISTIC_HASHING=1", "swift", URL(fileURLWithPath: #filePath).standardizedFileURL.path]
    do {
        try again.run()
    } catch {
        fail("cannot rerun with SWIFT_DETERMINISTIC_HASHING=1: \(error)")
    }
    again.waitUntilExit()
    exit(again.terminationStatus)
}

let names: [String]
do {
    names = try FileManager.default.contentsOfDirectory(atPath: sources.path)
        .filter { $0.hasSuffix(".plist") }
        .sorted()
} catch {
    fail("cannot list \(sources.path): \(error) (run python3 Fixtures/generate.py first)")
}

for name in names {
    let stem = String(name.dropLast(".plist".count))
    guard stem.hasPrefix("cf-") else { fail("\(name): cf-source files must be named cf-*") }
    let input = sources.appendingPathComponent(name)
    do {
        let xml = try Data(contentsOf: input)
        var format = PropertyListSerialization.PropertyListFormat.xml
        let value = try PropertyListSerialization.propertyList(from: xml, options: [], format: &format)
        let payload = try PropertyListSerialization.data(fromPropertyList: value, format: .binary, options: 0)
        let length = UInt32(4 + payload.count)
        guard length <= maximumFrame else { fail("\(stem): frame of \(length) bytes is too large") }
        var frame = Data()
        withUnsafeBytes(of: length.littleEndian) { frame.append(contentsOf: $0) }
        frame.append(payload)
        try frame.write(to: valid.appendingPathComponent(stem + ".bin"))
        print("wrote valid/\(stem).bin (\(frame.count) bytes)")
    } catch {
        fail("\(stem): \(error)")
    }
}
