import NIOCore
import PropertyBased
import Testing

@testable import SimpleTunnelServices

/// Hostile input must end in a `PropertyListError`, never a crash or another error.
@Suite("XMLPropertyListReader: random input")
struct XMLPropertyListReaderFuzzTests {
    static let validDocument = Array(plistDocument("""
        <dict>
            <key>name</key><string>a &amp; b <![CDATA[<c>]]></string>
            <key>list</key><array><integer>-12</integer><real>1.5e3</real><true/><false/><data>AAEC/w==</data></array>
            <key>when</key><date>2024-02-29T12:34:56Z</date><!-- comment -->
            <key>empty</key><dict/>
        </dict>
        """).utf8)

    /// Fragments that steer random documents into the parser's interesting states.
    static let fragments = [
        "<plist>", "</plist>", "<dict>", "</dict>", "<dict/>", "<array>", "</array>", "<key>", "</key>",
        "<string>", "</string>", "<string/>", "<integer>", "</integer>", "<real>", "</real>", "<data>", "</data>",
        "<date>", "</date>", "<true/>", "<false/>", "<!--", "-->", "<![CDATA[", "]]>", "&amp;", "&#x1F600;",
        "&", ";", "<", ">", "/>", "=", "\"", "a", "12", "-", "0x", "AA==", "2024-01-01T00:00:00Z", " ", "\n",
        "<?xml version=\"1.0\"?>", "<!DOCTYPE plist [", "]>", "\u{FEFF}", "é",
    ]

    static func expectOnlyPropertyListErrors(_ bytes: [UInt8]) {
        do {
            _ = try XMLPropertyListReader.read(bytes)
        } catch is PropertyListError {
            // Rejecting is fine; crashing or throwing anything else is not.
        } catch {
            Issue.record("unexpected error \(error) for \(bytes)")
        }
    }

    @Test func randomBytes() async {
        await propertyCheck(count: 500, input: Gen<UInt8>.uint8().array(of: 0...400)) { bytes in
            Self.expectOnlyPropertyListErrors(bytes)
        }
    }

    @Test func randomFragments() async {
        await propertyCheck(count: 1000, input: Gen<String?>.element(of: Self.fragments).array(of: 0...80)) { pieces in
            Self.expectOnlyPropertyListErrors(Array(pieces.compactMap { $0 }.joined().utf8))
        }
    }

    /// Each UInt64 encodes one edit: its low bits pick the kind, the rest a position and a byte.
    @Test func mutationsOfAValidDocument() async {
        #expect(throws: Never.self) { try XMLPropertyListReader.read(Self.validDocument) }
        await propertyCheck(count: 1000, input: Gen<UInt64>.uint64().array(of: 1...6)) { edits in
            var bytes = Self.validDocument
            for edit in edits where !bytes.isEmpty {
                let position = Int((edit >> 8) % UInt64(bytes.count))
                let byte = UInt8(truncatingIfNeeded: edit >> 40)
                switch edit % 6 {
                case 0: bytes[position] = byte
                case 1: bytes.remove(at: position)
                case 2: bytes.insert(byte, at: position)
                case 3: bytes.removeSubrange(position...)
                case 4:
                    let fragment = Self.fragments[Int(byte) % Self.fragments.count]
                    bytes.insert(contentsOf: fragment.utf8, at: position)
                default:
                    // Duplicate a slice, which repeats tags and keys.
                    let end = min(bytes.count, position + Int(byte))
                    bytes.insert(contentsOf: bytes[position..<end], at: end)
                }
            }
            Self.expectOnlyPropertyListErrors(bytes)
        }
    }
}
