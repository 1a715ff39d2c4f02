import Foundation
import NIOCore
import Testing

@testable import SimpleTunnelServices

/// Round trips through writers we did not write: Python's plistlib and Foundation's
/// PropertyListSerialization produce the XML, our reader must give back the value.
@Suite("XMLPropertyListReader: independent writers", .timeLimit(.minutes(2)))
struct XMLPropertyListReaderOracleTests {
    static let handWrittenValues: [PropertyListValue] = [
        .dictionary([
            "name": .string("tunnel <&> \"q\" 'a' ]]> grüße 😀"),
            "integers": .array([.integer(0), .integer(-1), .integer(Int128(Int64.max)), .integer(Int128(Int64.min)),
                                .integer(Int128(UInt64.max))]),
            "reals": .array([.real(1.5), .real(-0.25), .real(1e100), .real(.leastNonzeroMagnitude), .real(.infinity), .real(-.infinity)]),
            "flags": .array([.boolean(true), .boolean(false)]),
            "bytes": .data(ByteBuffer(bytes: (0..<200).map { UInt8($0 % 256) })),
            "when": .date(730_989_296),
            "nested": .dictionary(["a": .array([.dictionary(["b": .array([])]), .dictionary([:])]), "empty": .string("")]),
            "": .data(ByteBuffer()),
        ]),
        .string("root string"),
        .array([]),
    ]

    @Test func pythonPlistlibOutputReadsBack() async throws {
        var generator = SplitMix64(seed: 0x5EED)
        let randomValues = (0..<40).map { _ in RandomPropertyList.value(depth: 0, using: &generator) }
        let values = Self.handWrittenValues + randomValues

        let documents = try await Python.xmlDocuments(for: values)
        try #require(documents.count == values.count, "plistlib produced \(documents.count) documents for \(values.count) values")
        for (document, expected) in zip(documents, values) {
            let value = try XMLPropertyListReader.read(document)
            #expect(value == expected, "document:\n\(String(decoding: document, as: UTF8.self))")
        }
    }

    @Test func foundationPropertyListSerializationOutputReadsBack() throws {
        let date = Date(timeIntervalSinceReferenceDate: 730_989_296)
        let object: [String: Any] = [
            "string": "a <b> & \"c\" 😀",
            "integers": [0, -1, Int.max, Int.min] as [Any],
            "real": 2.5,
            "flag": true,
            "off": false,
            "bytes": Data([0, 1, 2, 0xFE, 0xFF]),
            "when": date,
            "nested": ["inner": [[String: Any](), [Any]()] as [Any], "s": ""] as [String: Any],
        ]
        let xml = try PropertyListSerialization.data(fromPropertyList: object, format: .xml, options: 0)
        let expected: PropertyListValue = .dictionary([
            "string": .string("a <b> & \"c\" 😀"),
            "integers": .array([.integer(0), .integer(-1), .integer(Int128(Int.max)), .integer(Int128(Int.min))]),
            "real": .real(2.5),
            "flag": .boolean(true),
            "off": .boolean(false),
            "bytes": .data(ByteBuffer(bytes: [0, 1, 2, 0xFE, 0xFF])),
            "when": .date(730_989_296),
            "nested": .dictionary(["inner": .array([.dictionary([:]), .array([])]), "s": .string("")]),
        ])
        #expect(try XMLPropertyListReader.read(Array(xml)) == expected, "document:\n\(String(decoding: xml, as: UTF8.self))")
    }

    @Test func largeInputsAreReadWhole() throws {
        // Far beyond the 128 KiB we expect, in each shape that could go quadratic.
        let count = 50_000
        let integers = String(repeating: "<integer>123456789</integer>\n", count: count)
        #expect(try readBody("<array>\(integers)</array>").arrayValue?.count == count)

        let entities = String(repeating: "&amp;&#x1F600;<![CDATA[x]]><!-- c -->", count: count)
        #expect(try readBody("<string>\(entities)</string>").stringValue?.utf8.count == count * 6)

        let entries = (0..<count).map { "<key>k\($0)</key><true/>" }.joined()
        #expect(try readBody("<dict>\(entries)</dict>").dictionaryValue?.count == count)

        let comments = String(repeating: "<!-- - -- ->   -->\n", count: count)
        #expect(try readXML(comments + plistDocument("<true/>") + comments) == .boolean(true))
    }
}

// MARK: - Python's plistlib

enum Python {
    /// Has Python's plistlib write each value as an XML plist; returns the documents.
    static func xmlDocuments(for values: [PropertyListValue]) async throws -> [[UInt8]] {
        let script = """
            import base64, datetime, plistlib, sys
            def s(b): return base64.b64decode(b).decode('utf-8')
            def b(b): return base64.b64decode(b)
            def d(seconds): return datetime.datetime(2001, 1, 1) + datetime.timedelta(seconds=seconds)
            values = [\(values.map(literal).joined(separator: ",\n"))]
            sys.stdout.buffer.write(b'\\0'.join(plistlib.dumps(v, fmt=plistlib.FMT_XML, sort_keys=True) for v in values))
            """
        let output = Array(try await ExternalPropertyListReaders.runPython(script, input: Data()))
        return output.split(separator: 0, omittingEmptySubsequences: false).map(Array.init)
    }

    /// A Python expression for `value`; strings and bytes travel as base64 so no
    /// quoting rule of ours can mask a reader bug.
    static func literal(_ value: PropertyListValue) -> String {
        switch value {
        case .dictionary(let entries):
            return "{" + entries.map { "s('\(base64($0.key.utf8))'): \(literal($0.value))" }.joined(separator: ", ") + "}"
        case .array(let items):
            return "[" + items.map(literal).joined(separator: ", ") + "]"
        case .string(let string):
            return "s('\(base64(string.utf8))')"
        case .integer(let integer):
            return "\(integer)"
        case .real(let real):
            return "float('\(real)')"
        case .boolean(let flag):
            return flag ? "True" : "False"
        case .data(let buffer):
            return "b('\(base64(buffer.readableBytesView))')"
        case .date(let seconds):
            return "d(\(Int(seconds)))"
        case .uid:
            preconditionFailure("XML property lists have no UID")
        }
    }

    private static func base64(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString()
    }
}

// MARK: - Random values

/// Reproducible randomness for generated values (seeded, so a failure can be replayed).
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}

/// Random property lists limited to what every XML writer can express exactly:
/// no NaN (it never equals itself), no UIDs, whole-second dates, no control characters.
enum RandomPropertyList {
    static let alphabet: [Character] = Array("ab<>&\"' ]]>\t\nü€😀-=/;#x0")

    static func value(depth: Int, using generator: inout SplitMix64) -> PropertyListValue {
        let kinds = depth >= 4 ? 7 : 9
        switch Int.random(in: 0..<kinds, using: &generator) {
        case 0: return .string(string(using: &generator))
        case 1: return .integer(Int128(Int64.random(in: .min ... .max, using: &generator)))
        case 2: return .integer(Int128(UInt64.random(in: UInt64(Int64.max) ... .max, using: &generator)))
        case 3:
            let real = Double(bitPattern: generator.next())
            return .real(real.isNaN ? Double.random(in: -1e6 ... 1e6, using: &generator) : real)
        case 4: return .boolean(Bool.random(using: &generator))
        case 5: return .data(ByteBuffer(bytes: (0..<Int.random(in: 0..<80, using: &generator)).map { _ in UInt8.random(in: 0 ... 255, using: &generator) }))
        case 6: return .date(Double(Int64.random(in: -3_000_000_000 ... 3_000_000_000, using: &generator)))
        case 7:
            return .array((0..<Int.random(in: 0..<5, using: &generator)).map { _ in value(depth: depth + 1, using: &generator) })
        default:
            var entries: [String: PropertyListValue] = [:]
            for _ in 0..<Int.random(in: 0..<5, using: &generator) {
                entries[string(using: &generator)] = value(depth: depth + 1, using: &generator)
            }
            return .dictionary(entries)
        }
    }

    static func string(using generator: inout SplitMix64) -> String {
        String((0..<Int.random(in: 0..<12, using: &generator)).map { _ in alphabet.randomElement(using: &generator) ?? "a" })
    }
}
