import Foundation
import NIOCore
import Testing

@testable import SimpleTunnelServices

/// Wraps `body` in the prolog and root element Apple's writer emits.
func plistDocument(_ body: String) -> String {
    """
    <?xml version="1.0" encoding="UTF-8"?>
    <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
    <plist version="1.0">
    \(body)
    </plist>

    """
}

func readXML(_ document: String) throws -> PropertyListValue {
    try XMLPropertyListReader.read(Array(document.utf8))
}

func readBody(_ body: String) throws -> PropertyListValue {
    try readXML(plistDocument(body))
}

@Suite("XMLPropertyListReader: values")
struct XMLPropertyListReaderValueTests {
    @Test func scalars() throws {
        #expect(try readBody("<string>hello</string>") == .string("hello"))
        #expect(try readBody("<integer>42</integer>") == .integer(42))
        #expect(try readBody("<real>1.5</real>") == .real(1.5))
        #expect(try readBody("<true/>") == .boolean(true))
        #expect(try readBody("<false/>") == .boolean(false))
        #expect(try readBody("<true></true>") == .boolean(true))
        #expect(try readBody("<data>AAEC/w==</data>") == .data(ByteBuffer(bytes: [0, 1, 2, 255])))
        #expect(try readBody("<date>2001-01-01T00:00:00Z</date>") == .date(0))
    }

    @Test func emptyForms() throws {
        #expect(try readBody("<string/>") == .string(""))
        #expect(try readBody("<string></string>") == .string(""))
        #expect(try readBody("<dict/>") == .dictionary([:]))
        #expect(try readBody("<dict></dict>") == .dictionary([:]))
        #expect(try readBody("<array/>") == .array([]))
        #expect(try readBody("<array>\n</array>") == .array([]))
        #expect(try readBody("<data/>") == .data(ByteBuffer()))
        #expect(try readBody("<dict><key/><string/></dict>") == .dictionary(["": .string("")]))
    }

    @Test func stringTextIsKeptExactly() throws {
        #expect(try readBody("<string>  two\n lines\t</string>") == .string("  two\n lines\t"))
        #expect(try readBody("<string>grüße 😀</string>") == .string("grüße 😀"))
        // XML line-end normalisation; a character reference keeps a literal CR.
        #expect(try readBody("<string>a\r\nb\rc&#13;</string>") == .string("a\nb\nc\r"))
    }

    @Test func entitiesAndCharacterReferences() throws {
        #expect(try readBody("<string>&amp;&lt;&gt;&quot;&apos;</string>") == .string("&<>\"'"))
        #expect(try readBody("<string>&#65;&#x42;&#x1F600;&#233;</string>") == .string("AB😀é"))
        #expect(try readBody("<dict><key>a&amp;b</key><integer>1</integer></dict>") == .dictionary(["a&b": .integer(1)]))
    }

    @Test func cdataSections() throws {
        #expect(try readBody("<string><![CDATA[<tag> & ]] >]]></string>") == .string("<tag> & ]] >"))
        #expect(try readBody("<string>a<![CDATA[]]>b<![CDATA[&amp;]]></string>") == .string("ab&amp;"))
    }

    @Test func commentsAnywhereBetweenElements() throws {
        let document = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!-- before the doctype -->
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <!-- before the root -->
            <plist version="1.0"><!-- before the value -->
            <dict>
              <!-- before a key --><key>a</key><!-- between key and value --><array><!-- in an array -->
                <integer>1</integer><!-- --><integer>2</integer>
              </array>
              <key>s</key><string>x<!-- inside text -->y</string>
            </dict><!-- after the value -->
            </plist>
            <!-- after the root -->

            """
        #expect(try readXML(document) == .dictionary(["a": .array([.integer(1), .integer(2)]), "s": .string("xy")]))
    }

    @Test func byteOrderMarkAndMinimalProlog() throws {
        let withBOM: [UInt8] = [0xEF, 0xBB, 0xBF] + Array(plistDocument("<string>x</string>").utf8)
        #expect(try XMLPropertyListReader.read(withBOM) == .string("x"))
        #expect(try readXML("<plist><integer>1</integer></plist>") == .integer(1))
        #expect(try readXML("<plist version='1.0' ><string>x</string></plist >") == .string("x"))
    }

    @Test func nesting() throws {
        let body = """
            <dict>
                <key>list</key>
                <array>
                    <dict><key>k</key><array><array/><dict/></array></dict>
                    <string>s</string>
                </array>
                <key>n</key><integer>-3</integer>
            </dict>
            """
        let expected: PropertyListValue = .dictionary([
            "list": .array([
                .dictionary(["k": .array([.array([]), .dictionary([:])])]),
                .string("s"),
            ]),
            "n": .integer(-3),
        ])
        #expect(try readBody(body) == expected)
    }

    @Test func depthLimitIsInclusive() throws {
        let limit = XMLPropertyListReader.maximumDepth
        let deepest = String(repeating: "<array>", count: limit) + String(repeating: "</array>", count: limit)
        var expected = PropertyListValue.array([])
        for _ in 1..<limit { expected = .array([expected]) }
        #expect(try readBody(deepest) == expected)
    }

    @Test(arguments: [
        ("0", Int128(0)),
        ("-0", Int128(0)),
        ("+17", Int128(17)),
        ("  42\n", Int128(42)),
        ("007", Int128(7)),
        ("-9223372036854775808", Int128(Int64.min)),
        ("9223372036854775807", Int128(Int64.max)),
        ("18446744073709551615", Int128(UInt64.max)),
        ("0x7f", Int128(127)),
        ("0XFF", Int128(255)),
        ("-0x10", Int128(-16)),
        ("0xFFFFFFFFFFFFFFFF", Int128(UInt64.max)),
        ("170141183460469231731687303715884105727", Int128.max),
        ("-170141183460469231731687303715884105728", Int128.min),
    ])
    func integers(text: String, expected: Int128) throws {
        #expect(try readBody("<integer>\(text)</integer>") == .integer(expected))
    }

    @Test(arguments: [
        ("1.5", 1.5), ("-2.5e3", -2500), ("1E+100", 1e100), (".5", 0.5), ("5.", 5), ("7", 7),
        ("inf", .infinity), ("-inf", -.infinity), ("+infinity", .infinity), ("-INFINITY", -.infinity),
        ("Inf", .infinity), (" 0.1 ", 0.1), ("-0.0", -0.0),
    ] as [(String, Double)])
    func reals(text: String, expected: Double) throws {
        #expect(try readBody("<real>\(text)</real>") == .real(expected))
    }

    @Test func notANumber() throws {
        for text in ["nan", "NaN", "NAN"] {
            guard case .real(let value) = try readBody("<real>\(text)</real>") else {
                Issue.record("<real>\(text)</real> did not read as a real")
                continue
            }
            #expect(value.isNaN)
        }
    }

    @Test(arguments: [
        "2001-01-01T00:00:00Z", "1970-01-01T00:00:00Z", "2024-02-29T12:34:56Z",
        "1999-12-31T23:59:59Z", "1600-03-01T00:00:00Z", "9999-12-31T23:59:59Z", "2100-03-01T00:00:00Z",
    ])
    func datesAgreeWithFoundation(text: String) throws {
        let formatter = ISO8601DateFormatter()
        let oracle = try #require(formatter.date(from: text)).timeIntervalSinceReferenceDate
        #expect(try readBody("<date>\(text)</date>") == .date(oracle))
    }

    /// Foundation switches to the Julian calendar before 1582; plists (CF, Python) use the
    /// proleptic Gregorian calendar throughout, so year 1 is checked by hand.
    @Test func earliestDateIsProlepticGregorian() throws {
        let daysFromYearOneTo2001 = 730_485
        #expect(try readBody("<date>0001-01-01T00:00:00Z</date>") == .date(Double(-daysFromYearOneTo2001 * 86_400)))
    }

    @Test func base64WithWhitespaceAndOptionalPadding() throws {
        let bytes = Array(0...255).map { UInt8($0) }
        let encoded = Data(bytes).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        #expect(try readBody("<data>\n\t\(encoded)\n\t</data>") == .data(ByteBuffer(bytes: bytes)))
        #expect(try readBody("<data>AQ</data>") == .data(ByteBuffer(bytes: [1])))
        #expect(try readBody("<data>AQI</data>") == .data(ByteBuffer(bytes: [1, 2])))
        #expect(try readBody("<data>A Q\r\nI =</data>") == .data(ByteBuffer(bytes: [1, 2])))
    }

    @Test func duplicateKeysInDifferentDictionariesAreFine() throws {
        let body = "<array><dict><key>a</key><true/></dict><dict><key>a</key><false/></dict></array>"
        #expect(try readBody(body) == .array([.dictionary(["a": .boolean(true)]), .dictionary(["a": .boolean(false)])]))
    }

    @Test func conveniencesAgree() throws {
        let document = plistDocument("<array><integer>1</integer><string>two</string></array>")
        let fromArray = try XMLPropertyListReader.read(Array(document.utf8))
        let fromBuffer = try XMLPropertyListReader.read(ByteBuffer(string: document))
        let fromPointer = try Array(document.utf8).withUnsafeBytes { try XMLPropertyListReader.read($0) }
        #expect(fromArray == .array([.integer(1), .string("two")]))
        #expect(fromBuffer == fromArray)
        #expect(fromPointer == fromArray)
    }

    @Test func appleSampleConfiguration() throws {
        let path = RepositoryPaths.appleSampleConfiguration.path
        guard let contents = FileManager.default.contents(atPath: path) else {
            Issue.record("Apple's sample configuration is missing: expected it at \(path)")
            return
        }
        let expected: PropertyListValue = .dictionary([
            "IPv4": .dictionary([
                "Pool": .dictionary([
                    "EndAddress": .string("192.168.2.10"),
                    "StartAddress": .string("192.168.2.2"),
                ])
            ])
        ])
        #expect(try XMLPropertyListReader.read(Array(contents)) == expected)
    }
}
