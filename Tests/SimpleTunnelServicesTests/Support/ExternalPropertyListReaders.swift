import Foundation
import NIOCore
@testable import SimpleTunnelServices

/// Independent property-list implementations used as oracles: CoreFoundation
/// (through Foundation's PropertyListSerialization) and Python's plistlib.
/// Each reads our bytes and writes them back in its own binary form, which we
/// then read: a value that survives both trips was understood by the oracle.
enum ExternalPropertyListReaders {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func roundTripThroughCoreFoundation(_ bytes: ByteBuffer) throws -> PropertyListValue {
        let object = try PropertyListSerialization.propertyList(from: Data(bytes.readableBytesView), options: [], format: nil)
        let rewritten = try PropertyListSerialization.data(fromPropertyList: object, format: .binary, options: 0)
        return try BinaryPropertyListReader.read(ByteBuffer(bytes: rewritten))
    }

    static func roundTripThroughPlistlib(_ bytes: ByteBuffer) throws -> PropertyListValue {
        let script = "import plistlib,sys; sys.stdout.buffer.write(plistlib.dumps(plistlib.loads(sys.stdin.buffer.read()), fmt=plistlib.FMT_BINARY, sort_keys=False))"
        let output = try runPython(script, input: Data(bytes.readableBytesView))
        return try BinaryPropertyListReader.read(ByteBuffer(bytes: output))
    }

    /// Runs `python3 -c script`, feeding `input`; returns stdout or throws with stderr.
    static func runPython(_ script: String, input: Data) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        // Write and read concurrently so a large document cannot deadlock the pipes.
        let writer = Thread {
            stdin.fileHandleForWriting.write(input)
            try? stdin.fileHandleForWriting.close()
        }
        writer.start()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        let errors = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "python3 failed: \(String(decoding: errors, as: UTF8.self))")
        }
        return output
    }
}
