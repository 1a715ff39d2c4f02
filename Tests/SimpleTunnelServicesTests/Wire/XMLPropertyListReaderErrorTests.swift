import NIOCore
import Testing

@testable import SimpleTunnelServices

@Suite("XMLPropertyListReader: malformed input")
struct XMLPropertyListReaderErrorTests {
    /// Each case: what is wrong, and a document with exactly that fault.
    static let malformedTextDocuments: [(String, String)] = [
        ("empty input", ""),
        ("only whitespace", "  \n"),
        ("no plist root", "<?xml version=\"1.0\"?>\n<dict/>"),
        ("truncated document", String(plistDocument("<dict><key>a</key><string>b</string></dict>").dropLast(12))),
        ("missing </plist>", "<plist><dict/>\n"),
        ("truncated after a key", "<plist><dict><key>a</key>"),
        ("truncated inside text", "<plist><string>abc"),
        ("truncated inside a tag", "<plist><string"),
        ("unterminated comment", "<plist><!-- <string/></plist>"),
        ("unterminated CDATA", "<plist><string><![CDATA[x</string></plist>"),
        ("empty plist", "<plist></plist>"),
        ("self-closing plist", "<plist/>"),
        ("mismatched tags", plistDocument("<array><string>a</array></string>")),
        ("mismatched container end", plistDocument("<dict></array>")),
        ("wrong leaf end tag", plistDocument("<string>a</integer>")),
        ("key without value", plistDocument("<dict><key>a</key></dict>")),
        ("two keys in a row", plistDocument("<dict><key>a</key><key>b</key><true/></dict>")),
        ("value without key", plistDocument("<dict><string>a</string></dict>")),
        ("key outside dict", plistDocument("<array><key>a</key></array>")),
        ("key as root value", plistDocument("<key>a</key>")),
        ("duplicate key", plistDocument("<dict><key>a</key><true/><key>a</key><false/></dict>")),
        ("bad base64 character", plistDocument("<data>AA*A</data>")),
        ("base64 with a lone sextet", plistDocument("<data>AAAAA</data>")),
        ("base64 data after padding", plistDocument("<data>AA==AA</data>")),
        ("base64 with too much padding", plistDocument("<data>AA===</data>")),
        ("bad integer", plistDocument("<integer>12a</integer>")),
        ("empty integer", plistDocument("<integer/>")),
        ("bare sign", plistDocument("<integer>-</integer>")),
        ("bare hex prefix", plistDocument("<integer>0x</integer>")),
        ("integer with inner space", plistDocument("<integer>1 2</integer>")),
        ("integer overflow 2^128", plistDocument("<integer>340282366920938463463374607431768211456</integer>")),
        ("integer above Int128.max", plistDocument("<integer>170141183460469231731687303715884105728</integer>")),
        ("integer below Int128.min", plistDocument("<integer>-170141183460469231731687303715884105729</integer>")),
        ("bad real", plistDocument("<real>1.2.3</real>")),
        ("real without digits", plistDocument("<real>.</real>")),
        ("real with empty exponent", plistDocument("<real>1e</real>")),
        ("hex real", plistDocument("<real>0x1p3</real>")),
        ("bad date", plistDocument("<date>2024-02-30T00:00:00Z</date>")),
        ("date without Z", plistDocument("<date>2024-01-01T00:00:00</date>")),
        ("date with bad hour", plistDocument("<date>2024-01-01T24:00:00Z</date>")),
        ("text in true", plistDocument("<true>yes</true>")),
        ("unknown element", plistDocument("<dict><key>a</key><float>1</float></dict>")),
        ("unknown root value", plistDocument("<uid>1</uid>")),
        ("nested plist", plistDocument("<array><plist/></array>")),
        ("element inside string", plistDocument("<string>a<b/>c</string>")),
        ("text outside elements", plistDocument("<array>loose<string>a</string></array>")),
        ("text after root value", plistDocument("<string>a</string> loose")),
        ("two root values", plistDocument("<string>a</string><string>b</string>")),
        ("trailing garbage", plistDocument("<true/>") + "garbage"),
        ("second root element", plistDocument("<true/>") + "<plist><true/></plist>"),
        ("unknown entity", plistDocument("<string>&nbsp;</string>")),
        ("unterminated entity", plistDocument("<string>&amp</string>")),
        ("NUL character reference", plistDocument("<string>&#0;</string>")),
        ("surrogate character reference", plistDocument("<string>&#xD800;</string>")),
        ("character reference too large", plistDocument("<string>&#x110000;</string>")),
        ("uppercase X character reference", plistDocument("<string>&#X41;</string>")),
        ("bad attribute", plistDocument("<string version>a</string>")),
        ("unquoted attribute", plistDocument("<string a=b>a</string>")),
    ]

    static let malformedDocuments: [(String, [UInt8])] =
        malformedTextDocuments.map { ($0.0, Array($0.1.utf8)) } + [
            ("invalid UTF-8 in a string", Array("<plist><string>".utf8) + [0xC3, 0x28] + Array("</string></plist>".utf8)),
            ("invalid UTF-8 in a key", Array("<plist><dict><key>".utf8) + [0xFF] + Array("</key><true/></dict></plist>".utf8)),
            ("UTF-16 document", [0xFF, 0xFE] + Array("<plist/>".utf8).flatMap { [$0, 0] }),
        ]

    @Test(arguments: malformedDocuments)
    func malformedDocumentThrows(fault: String, document: [UInt8]) {
        #expect(throws: PropertyListError.self, "\(fault)") { try XMLPropertyListReader.read(document) }
    }

    @Test func depthBeyondLimitIsTooComplex() {
        let depth = XMLPropertyListReader.maximumDepth + 1
        let body = String(repeating: "<array>", count: depth) + String(repeating: "</array>", count: depth)
        #expect {
            try readBody(body)
        } throws: { error in
            guard case .tooComplex = error as? PropertyListError else { return false }
            return true
        }
    }

    @Test func hugeNestingFailsFastWithoutRecursion() {
        let body = String(repeating: "<dict><key>k</key>", count: 100_000)
        #expect(throws: PropertyListError.self) { try readBody(body) }
    }

    @Test func messagesSayWhatAndWhere() throws {
        let document = "<plist>\n<dict>\n<key>a</key>\n<string>b</integer>\n</dict>\n</plist>\n"
        let error = try #require(throws: PropertyListError.self) { try readXML(document) }
        #expect(error == .malformedXML("expected </string>, found </integer> at line 4, column 10"))
        #expect(error.description == "XML property list: expected </string>, found </integer> at line 4, column 10")

        let duplicate = "<plist><dict>\n<key>a</key><true/>\n<key>a</key><true/></dict></plist>"
        let duplicateError = try #require(throws: PropertyListError.self) { try readXML(duplicate) }
        #expect(duplicateError.description.contains("duplicate key \"a\" at line 3"))

        let truncated = try #require(throws: PropertyListError.self) { try readXML("<plist>\n  <array>\n<true/>") }
        #expect(truncated == .malformedXML("document ended inside <array> (opened at line 2, column 3) at line 3, column 8"))

        let longKey = String(repeating: "k", count: 10_000)
        let longError = try #require(throws: PropertyListError.self) {
            try readBody("<dict><key>\(longKey)</key></dict>")
        }
        #expect(longError.description.count < 200)

        let badInteger = try #require(throws: PropertyListError.self) { try readBody("<integer>12a</integer>") }
        #expect(badInteger.description.contains("invalid <integer> \"12a\""))
    }
}
