import NIOCore
import Testing
@testable import SimpleTunnelServices

/// A hostile document may be refused, but decoding it never holds more than
/// 1 MiB, and every limit of `PropertyListBudget` is reached by some document.
@Suite("Property-list reader: memory and time bounds")
struct PropertyListBudgetTests {
    static let oneMebibyte = 1 << 20

    /// What reading `bytes` yields: the footprint of the value, or the error.
    static func outcome(_ bytes: ByteBuffer) -> Result<Int, PropertyListError> {
        do {
            return .success(PropertyListFootprint.of(try BinaryPropertyListReader.read(bytes)))
        } catch let error as PropertyListError {
            return .failure(error)
        } catch {
            Issue.record("not a PropertyListError: \(error)")
            return .failure(.unrecognizedFormat)
        }
    }

    static func expectTooComplex(_ bytes: ByteBuffer, mentioning phrase: String) {
        switch outcome(bytes) {
        case .success(let footprint):
            Issue.record("read, holding \(footprint) bytes; expected a refusal mentioning \"\(phrase)\"")
        case .failure(.tooComplex(let detail)):
            #expect(detail.contains(phrase), "\(detail)")
        case .failure(let error):
            Issue.record("refused for another reason: \(error)")
        }
    }

    @Test(arguments: [1_024, 10_000, 40_000, HostilePropertyLists.maximumLength])
    func noShapeHoldsMoreThanOneMebibyte(length: Int) {
        for (name, bytes) in HostilePropertyLists.all(length: length) {
            #expect(bytes.readableBytes <= HostilePropertyLists.maximumLength, "\(name)")
            if case .success(let footprint) = Self.outcome(bytes) {
                #expect(footprint <= Self.oneMebibyte - 128 * 1024, "\(name) at \(length) bytes holds \(footprint) bytes")
            }
        }
    }

    @Test func aStringReferencedManyTimesIsStoredOnce() throws {
        // 400 references to a 5000-byte string: two megabytes if each were a copy.
        let bytes = HostilePropertyLists.nestedArraysSharingOneString(arrays: 4, count: 100, stringLength: 5_000)
        let value = try BinaryPropertyListReader.read(bytes)
        let strings = (value.arrayValue ?? []).flatMap { $0.arrayValue ?? [] }
        #expect(strings.count == 400)
        #expect(strings.allSatisfy { $0.stringValue?.utf8.count == 5_000 })
        // The first reference and the second read are two copies; every later one shares the second.
        let storages = Set(strings.compactMap { value -> UnsafeRawPointer? in
            guard var string = value.stringValue else { return nil }
            return string.withUTF8 { UnsafeRawPointer($0.baseAddress) }
        })
        #expect(storages.count == 2)
    }

    @Test func aShortUTF16StringReferencedManyTimesIsChargedOnce() throws {
        // Charged as if each unit took 3 bytes (a heap string) though it takes 7: still shared.
        let name = Array("bücher".utf16).flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        let bytes = HostilePropertyLists.document([
            HostilePropertyLists.header(0xA, count: 20_000) + [UInt8](repeating: 1, count: 20_000),
            [0x66] + name,
        ])
        let value = try BinaryPropertyListReader.read(bytes)
        #expect(value.arrayValue?.count == 20_000)
        #expect(value.arrayValue?.last?.stringValue == "bücher")
    }

    @Test func sharedDataIsReadOnceAndNotCharged() throws {
        // 32 references to one 1400-byte packet, as CoreFoundation writes 32 equal packets.
        let packet = HostilePropertyLists.header(0x4, count: 1_400) + [UInt8](repeating: 0x45, count: 1_400)
        let bytes = HostilePropertyLists.document([[0xAF, 0x10, 32] + [UInt8](repeating: 1, count: 32), packet])
        let value = try BinaryPropertyListReader.read(bytes)
        #expect(value.arrayValue?.count == 32)
        #expect(value.arrayValue?.allSatisfy { $0.dataValue?.readableBytes == 1_400 } == true)
    }

    @Test func aliasedOffsetsExceedTheContentLimit() {
        HostilePropertyLists.expectTooComplexEverywhere(HostilePropertyLists.aliasedOffsets, mentioning: "strings and data add up")
    }

    @Test func overlappingStringsExceedTheContentLimit() {
        HostilePropertyLists.expectTooComplexEverywhere(HostilePropertyLists.overlappingStrings, mentioning: "strings and data add up")
    }

    @Test func exponentialSharingExceedsTheValueLimit() {
        Self.expectTooComplex(HostilePropertyLists.exponentialSharing(depth: 40), mentioning: "more values than")
    }

    @Test func aWideArrayOfOneObjectExceedsTheHeapLimit() {
        Self.expectTooComplex(HostilePropertyLists.wideArrayOfOneObject(length: HostilePropertyLists.maximumLength), mentioning: "would take more than")
    }

    @Test func aLongKeyUsedByManyEntriesExceedsTheKeyLimit() {
        Self.expectTooComplex(HostilePropertyLists.dictionaryWithOneLongKey(entries: 200, keyLength: 60_000), mentioning: "dictionary keys add up")
    }

    @Test func justUnderEachLimitIsRead() throws {
        // 24 Ki references to one object: 768 KiB of values, within the heap limit.
        let wide = HostilePropertyLists.document([HostilePropertyLists.header(0xA, count: 24_000) + [UInt8](repeating: 1, count: 24_000), [0x09]])
        #expect(try BinaryPropertyListReader.read(wide).arrayValue?.count == 24_000)
        // Eight entries with one 8000-byte key: 64 000 key bytes, under 8n + 64 KiB.
        let keyed = HostilePropertyLists.dictionaryWithOneLongKey(entries: 8, keyLength: 8_000)
        #expect(try BinaryPropertyListReader.read(keyed).dictionaryValue?.count == 1)
        // A string filling the document: content exactly the document's size at most.
        #expect(try BinaryPropertyListReader.read(HostilePropertyLists.wideCharacterString(length: 100_000)).stringValue?.count == 49_968)
    }

    /// Documents of more than 64 objects keep their marks in memory rather than a word.
    @Test(arguments: [10, 100])
    func aContainerReadTwiceIsNotACycleButOneInsideItselfIs(objects: Int) throws {
        // Object 0 refers to 1 twice; 1 is an array of the integers after it.
        let integers = (2..<objects).map { _ in [UInt8]([0x10, 7]) }
        let inner = HostilePropertyLists.header(0xA, count: objects - 2) + Array((2..<objects).map(UInt8.init))
        let shared = HostilePropertyLists.document([[0xA2, 1, 1], inner] + integers)
        let value = try BinaryPropertyListReader.read(shared)
        #expect(value.arrayValue?.map { $0.arrayValue?.count } == [objects - 2, objects - 2])

        // The same, but 1 also refers back to 0.
        let innerWithCycle = HostilePropertyLists.header(0xA, count: objects - 1) + Array((2..<objects).map(UInt8.init)) + [0]
        let cyclic = HostilePropertyLists.document([[0xA2, 1, 1], innerWithCycle] + integers)
        #expect(throws: PropertyListError.malformedBinary("object 0 contains itself")) { _ = try BinaryPropertyListReader.read(cyclic) }
    }

    @Test func aRefusedFrameEndsTheTunnel() throws {
        var frame = ByteBuffer()
        let payload = HostilePropertyLists.aliasedOffsets(length: 10_000)
        frame.writeInteger(UInt32(payload.readableBytes + 4), endianness: .little)
        frame.writeImmutableBuffer(payload)
        let (inbound, error) = try FixtureTests.decode(frame)
        #expect(inbound.isEmpty)
        guard case .propertyList(.tooComplex) = error as? TunnelWireError else {
            Issue.record("expected plist.invalid (too complex), got \(String(describing: error))")
            return
        }
    }
}

extension HostilePropertyLists {
    /// The shape is refused at every size from a kilobyte to the largest frame.
    static func expectTooComplexEverywhere(_ shape: (Int) -> ByteBuffer, mentioning phrase: String) {
        for length in [1_024, 10_000, maximumLength] {
            PropertyListBudgetTests.expectTooComplex(shape(length), mentioning: phrase)
        }
    }
}

/// The XML reader (configuration files, and frames a peer sends as XML) has no
/// sharing, but a dense document builds many values per byte; it is bounded too.
@Suite("XML property-list reader: memory bounds")
struct XMLPropertyListBudgetTests {
    static func document(_ body: String) -> ByteBuffer {
        ByteBuffer(string: "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\">\(body)</plist>")
    }

    @Test func entityDeclarationsAreNotExpanded() {
        let laughs = """
            <?xml version="1.0"?>
            <!DOCTYPE plist [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>
            <plist version="1.0"><string>&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;</string></plist>
            """
        #expect(throws: PropertyListError.self) { _ = try XMLPropertyListReader.read(ByteBuffer(string: laughs)) }
    }

    @Test func theDensestArrayOfAFrameIsRefused() {
        let count = HostilePropertyLists.maximumLength / 7 - 20
        let bytes = Self.document("<array>" + String(repeating: "<true/>", count: count) + "</array>")
        Self.expectOverTheHeapLimit(bytes)
    }

    /// A frame-sized document the XML reader refuses for what it would build.
    static func expectOverTheHeapLimit(_ bytes: ByteBuffer) {
        #expect(bytes.readableBytes <= HostilePropertyLists.maximumLength)
        do {
            _ = try XMLPropertyListReader.read(bytes)
            Issue.record("a document of \(bytes.readableBytes) bytes was read")
        } catch {
            #expect(error as? PropertyListError == .tooComplex("its arrays, dictionaries and strings would take more than the 786432 bytes allowed"))
        }
    }

    @Test func aDenseArrayWithinTheLimitHoldsLessThanOneMebibyte() throws {
        let bytes = Self.document("<array>" + String(repeating: "<true/>", count: 12_000) + "</array>")
        let value = try XMLPropertyListReader.read(bytes)
        #expect(value.arrayValue?.count == 12_000)
        #expect(PropertyListFootprint.of(value) <= PropertyListBudgetTests.oneMebibyte - 128 * 1024)
    }

    @Test func aDenseDictionaryIsBounded() throws {
        func dictionary(_ count: Int) -> ByteBuffer {
            let entries = (0..<count).map { "<key>\(String($0 + 36 * 36, radix: 36))</key><true/>" }.joined()
            return Self.document("<dict>" + entries + "</dict>")
        }
        let value = try XMLPropertyListReader.read(dictionary(5_000))
        #expect(value.dictionaryValue?.count == 5_000)
        #expect(PropertyListFootprint.of(value) <= PropertyListBudgetTests.oneMebibyte - 128 * 1024)
        // A frame's worth of three-letter keys is more than the limit allows.
        Self.expectOverTheHeapLimit(dictionary(6_200))
    }
}
