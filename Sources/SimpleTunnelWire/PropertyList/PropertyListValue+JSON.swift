import NIOCore

extension PropertyListValue {
    /// JSON text for people and scripts (`tunnel-client config`): dictionaries
    /// with sorted keys, data as base64 strings, dates as seconds since 2001.
    public func jsonText(indent: String = "  ") -> String {
        var output = ""
        writeJSON(into: &output, level: 0, indent: indent)
        return output
    }

    private func writeJSON(into output: inout String, level: Int, indent: String) {
        let inner = String(repeating: indent, count: level + 1)
        let outer = String(repeating: indent, count: level)
        switch self {
        case .dictionary(let entries):
            guard !entries.isEmpty else { return output += "{}" }
            output += "{\n"
            for (position, key) in entries.keys.sorted().enumerated() {
                output += inner + Self.quoted(key) + ": "
                entries[key]?.writeJSON(into: &output, level: level + 1, indent: indent)
                output += position == entries.count - 1 ? "\n" : ",\n"
            }
            output += outer + "}"
        case .array(let elements):
            guard !elements.isEmpty else { return output += "[]" }
            output += "[\n"
            for (position, element) in elements.enumerated() {
                output += inner
                element.writeJSON(into: &output, level: level + 1, indent: indent)
                output += position == elements.count - 1 ? "\n" : ",\n"
            }
            output += outer + "]"
        case .string(let text):
            output += Self.quoted(text)
        case .integer(let number):
            output += String(number)
        case .real(let number), .date(let number):
            output += number.isFinite ? String(number) : "null"
        case .boolean(let flag):
            output += flag ? "true" : "false"
        case .data(let bytes):
            output += Self.quoted(Base64.encode(Array(bytes.readableBytesView)))
        case .uid(let number):
            output += String(number)
        }
    }

    private static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20:
                result += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count) + String(scalar.value, radix: 16)
            default:
                result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}

/// Standard base64 with padding.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            let value = chunk.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (16 - 8 * UInt32($1.offset)) }
            for position in 0..<4 {
                output.append(position <= chunk.count ? alphabet[Int(value >> (18 - 6 * UInt32(position)) & 0x3F)] : UInt8(ascii: "="))
            }
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }
}
