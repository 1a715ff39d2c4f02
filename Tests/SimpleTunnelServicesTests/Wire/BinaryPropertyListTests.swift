import Foundation
import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("Binary property lists", .timeLimit(.minutes(2)))
struct BinaryPropertyListTests {
    /// Every type and every size boundary the format has.
    static let everyShape: PropertyListValue = .dictionary([
        "integers": .array([
            0, 1, 255, 256, 65535, 65536, 4_294_967_295, 4_294_967_296,
            Int64.max, Int64.min, -1, -256,
        ].map { PropertyListValue(Int64($0)) } + [.integer(Int128(UInt64.max))]),
        "strings": .array([
            .string(""), .string("a"), .string("exactly15chars!"), .string(String(repeating: "x", count: 300)),
            .string("bücher.example"), .string("emoji 🚀 login"),
        ]),
        "data": .array([0, 1, 14, 15, 16, 300, 70_000].map { .data(ByteBuffer(counter: $0)) }),
        "reals": .array([.real(0), .real(1.5), .real(-2.25e100)]),
        "booleans": .array([.boolean(true), .boolean(false)]),
        "empty array": .array([]),
        "empty dictionary": .dictionary([:]),
        "long array": .array((0..<40).map { PropertyListValue($0) }),
        "nested": .dictionary(["a": .dictionary(["b": .array([.dictionary(["c": .string("deep")])])])]),
    ])

    @Test func roundTripsEveryShape() throws {
        let bytes = BinaryPropertyListWriter.bytes(Self.everyShape)
        #expect(try BinaryPropertyListReader.read(bytes) == Self.everyShape)
    }

    @Test func roundTripsValuesOnlyBinaryListsCarry() throws {
        let value: PropertyListValue = .array([
            .date(-978_307_200), .date(1.5), .uid(0), .uid(70_000),
            .integer(Int128(Int64.min) - 1), .integer(Int128(UInt64.max) * 4),
        ])
        #expect(try BinaryPropertyListReader.read(BinaryPropertyListWriter.bytes(value)) == value)
    }

    @Test func coreFoundationReadsWhatWeWrite() throws {
        let bytes = BinaryPropertyListWriter.bytes(Self.everyShape)
        #expect(try ExternalPropertyListReaders.roundTripThroughCoreFoundation(bytes) == Self.everyShape)
    }

    @Test func plistlibReadsWhatWeWrite() async throws {
        let bytes = BinaryPropertyListWriter.bytes(Self.everyShape)
        #expect(try await ExternalPropertyListReaders.roundTripThroughPlistlib(bytes) == Self.everyShape)
    }

    @Test func usesTwoByteReferencesBeyond256Objects() throws {
        let value = PropertyListValue.array((0..<300).map { PropertyListValue($0) })
        let bytes = BinaryPropertyListWriter.bytes(value)
        let trailer = bytes.readableBytes - 32
        #expect(bytes.getInteger(at: trailer + 7, as: UInt8.self) == 2)
        #expect(try BinaryPropertyListReader.read(bytes) == value)
        #expect(try ExternalPropertyListReaders.roundTripThroughCoreFoundation(bytes) == value)
    }

    @Test(arguments: [1, 2, 4, 8])
    func readsAnyOffsetAndReferenceWidth(width: Int) throws {
        var builder = BinaryPropertyListBuilder()
        builder.offsetSize = width
        builder.referenceSize = width
        builder.objects = [
            [0xD1] + builder.reference(1) + builder.reference(2),  // { key: [int] }
            [0x53] + Array("key".utf8),
            [0xA1] + builder.reference(3),
            [0x14] + [UInt8](repeating: 0, count: 8) + [0x80, 0, 0, 0, 0, 0, 0, 0],  // 16-byte 2^63
        ]
        let expected: PropertyListValue = .dictionary(["key": .array([.integer(Int128(1) << 63)])])
        #expect(try BinaryPropertyListReader.read(builder.build()) == expected)
    }

    @Test func readsSetsAsArraysAndSinglePrecisionReals() throws {
        var builder = BinaryPropertyListBuilder()
        builder.objects = [[0xC2, 1, 2], [0x22, 0x3F, 0xC0, 0, 0], [0x10, 7]]
        #expect(try BinaryPropertyListReader.read(builder.build()) == .array([.real(1.5), .integer(7)]))
    }

    @Test func dataValuesAreSlicesOfTheInput() throws {
        let bytes = BinaryPropertyListWriter.bytes(.data(ByteBuffer(counter: 1000)))
        let value = try BinaryPropertyListReader.read(bytes)
        let data = try #require(value.dataValue)
        #expect(data == ByteBuffer(counter: 1000))
        bytes.withUnsafeReadableBytes { whole in
            data.withUnsafeReadableBytes { slice in
                #expect(slice.baseAddress.map { whole.baseAddress! < $0 && $0 < whole.baseAddress! + whole.count } == true)
            }
        }
    }

    // MARK: Malformed documents

    static func malformed() -> [(String, ByteBuffer)] {
        func document(_ edit: (inout BinaryPropertyListBuilder) -> Void) -> ByteBuffer {
            var builder = BinaryPropertyListBuilder()
            builder.objects = [[0xA1, 1], [0x10, 5]]
            edit(&builder)
            return builder.build()
        }
        var cases: [(String, ByteBuffer)] = [
            ("empty", ByteBuffer()),
            ("magic only", ByteBuffer(string: "bplist00")),
            ("wrong version", ByteBuffer(string: "bplist01" + String(repeating: "\0", count: 40))),
            ("offset width 0", document { $0.offsetSize = 0 }),
            ("reference width 9", document { $0.referenceSize = 9 }),
            ("no objects", document { $0.objectCountOverride = 0 }),
            ("billions of objects", document { $0.objectCountOverride = UInt64.max }),
            ("top object out of range", document { $0.topObject = 2 }),
            ("table inside the header", document { $0.offsetTableStartOverride = 3 }),
            ("table past the end", document { $0.offsetTableStartOverride = 1 << 40 }),
            ("offset into the table", document { $0.offsetOverrides[1] = 12 }),
            ("offset into the magic", document { $0.offsetOverrides[0] = 2 }),
            ("reference out of range", document { $0.objects[0] = [0xA1, 9] }),
            ("array that contains itself", document { $0.objects[0] = [0xA1, 0] }),
            ("dictionary key not a string", document { $0.objects = [[0xD1, 1, 1], [0x10, 5]] }),
            ("array count overruns", document { $0.objects[0] = [0xAE, 1] }),
            ("extended count is negative", document { $0.objects[1] = [0x4F, 0x13] + [UInt8](repeating: 0xFF, count: 8) }),
            ("data overruns", document { $0.objects[1] = [0x4F, 0x12, 0, 1, 0, 0] }),
            ("ascii string with a high byte", document { $0.objects[1] = [0x52, 0x41, 0xC3] }),
            ("integer of 32 bytes", document { $0.objects[1] = [0x15] + [UInt8](repeating: 0, count: 32) }),
            ("truncated integer", document { $0.objects[1] = [0x13, 1] }),
            ("unknown marker", document { $0.objects[1] = [0x70] }),
            ("null singleton", document { $0.objects[1] = [0x00] }),
            ("real of 16 bytes", document { $0.objects[1] = [0x24] + [UInt8](repeating: 0, count: 16) }),
            ("uid of 9 bytes", document { $0.objects[1] = [0x88] + [UInt8](repeating: 0, count: 9) }),
        ]
        // 65 nested arrays.
        cases.append(("nested too deep", document { builder in
            builder.objects = (0..<65).map { [0xA1, UInt8($0 + 1)] } + [[0x10, 1]]
        }))
        // Each array refers to the next one twice: 2^40 values from 40 objects.
        cases.append(("shared references that expand exponentially", document { builder in
            builder.objects = (0..<40).map { [0xA2, UInt8($0 + 1), UInt8($0 + 1)] } + [[0x10, 1]]
        }))
        return cases
    }

    @Test func refusesEveryMalformedDocument() {
        for (name, bytes) in Self.malformed() {
            #expect(throws: PropertyListError.self, "\(name)") {
                try BinaryPropertyListReader.read(bytes)
            }
        }
    }

    @Test func malformedDocumentsAreReportedByReason() throws {
        var builder = BinaryPropertyListBuilder()
        builder.objects = [[0xA1, 0]]
        #expect(throws: PropertyListError.malformedBinary("object 0 contains itself")) {
            try BinaryPropertyListReader.read(builder.build())
        }
    }
}
