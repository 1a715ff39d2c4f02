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

    static func roundTripThroughPlistlib(_ bytes: ByteBuffer) async throws -> PropertyListValue {
        let script = "import plistlib,sys; sys.stdout.buffer.write(plistlib.dumps(plistlib.loads(sys.stdin.buffer.read()), fmt=plistlib.FMT_BINARY, sort_keys=False))"
        let output = try await runPython(script, input: Data(bytes.readableBytesView))
        return try BinaryPropertyListReader.read(ByteBuffer(bytes: output))
    }

    /// Runs `python3 -c script`, feeding `input`; returns stdout or throws with stderr.
    static func runPython(_ script: String, input: Data) async throws -> Data {
        let (status, output, errors) = try await ExternalProcess.run("/usr/bin/env", ["python3", "-c", script], input: Array(input))
        guard status == 0 else {
            throw Failure(description: "python3 failed: \(String(decoding: errors, as: UTF8.self))")
        }
        return Data(output)
    }
}
