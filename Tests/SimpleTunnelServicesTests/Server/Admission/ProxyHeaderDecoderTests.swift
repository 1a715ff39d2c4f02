import Testing
@testable import SimpleTunnelServices

/// The PROXY v2 header by value: what a balancer sends is read whole, the
/// client's bytes after it are left alone, and nothing else passes.
@Suite("Admission: PROXY v2 header decoder")
struct ProxyHeaderDecoderTests {
    let v4 = ProxyHeaderBytes.proxied(
        source: IPAddress("198.51.100.7")!, sourcePort: 40001, destination: IPAddress("10.0.0.1")!, destinationPort: 4433)
    let v6 = ProxyHeaderBytes.proxied(
        source: IPAddress("2001:db8::7")!, sourcePort: 40002, destination: IPAddress("2001:db8::1")!, destinationPort: 4433)

    @Test func anIPv4HeaderNamesTheClientAndLeavesWhatFollows() {
        let clientHello: [UInt8] = [0x16, 0x03, 0x01, 0x00, 0x05]
        #expect(v4.count == 28)
        #expect(
            ProxyHeaderDecoder.decode(v4 + clientHello)
                == .header(.proxied(source: IPAddress("198.51.100.7")!, sourcePort: 40001, destination: IPAddress("10.0.0.1")!, destinationPort: 4433), length: 28))
    }

    @Test func anIPv6HeaderNamesTheClient() {
        #expect(v6.count == 52)
        #expect(
            ProxyHeaderDecoder.decode(v6)
                == .header(.proxied(source: IPAddress("2001:db8::7")!, sourcePort: 40002, destination: IPAddress("2001:db8::1")!, destinationPort: 4433), length: 52))
    }

    @Test func localKeepsTheBalancersAddressWhateverItsBody() {
        #expect(ProxyHeaderDecoder.decode(ProxyHeaderBytes.local()) == .header(.local, length: 16))
        let withBody = ProxyHeaderBytes.local(body: Array(repeating: 0xAB, count: 20))
        #expect(ProxyHeaderDecoder.decode(withBody) == .header(.local, length: 36))
        // PROXY with an unspecified family: the balancer could not say, so it is as LOCAL.
        #expect(ProxyHeaderDecoder.decode(ProxyHeaderBytes.header(command: 0x21, family: 0x00, body: [])) == .header(.local, length: 16))
    }

    @Test func tlvsAreSkippedWithinTheLength() {
        // PP2_TYPE_AUTHORITY "example.com", then a NOOP.
        let tlvs: [UInt8] = [0x02, 0x00, 0x0B] + Array("example.com".utf8) + [0x04, 0x00, 0x02, 0x00, 0x00]
        let header = ProxyHeaderBytes.proxied(
            source: IPAddress("198.51.100.7")!, sourcePort: 1, destination: IPAddress("10.0.0.1")!, destinationPort: 2, tlvs: tlvs)
        guard case .header(.proxied(let source, 1, _, 2), let length) = ProxyHeaderDecoder.decode(header + [0x16]) else {
            Issue.record("not read: \(ProxyHeaderDecoder.decode(header))")
            return
        }
        #expect(source == IPAddress("198.51.100.7")! && length == header.count)
    }

    @Test func everyTruncationAsksForMore() {
        for header in [v4, v6, ProxyHeaderBytes.local(body: [1, 2, 3])] {
            for count in 0..<header.count {
                #expect(ProxyHeaderDecoder.decode(header.prefix(count)) == .needMoreData, "\(count) of \(header.count) bytes")
            }
        }
    }

    @Test func aStrangerIsRefusedAtItsFirstWrongByte() {
        #expect(ProxyHeaderDecoder.decode([0x16, 0x03, 0x01]) == .invalid(.signature))
        #expect(ProxyHeaderDecoder.decode(Array("PROXY TCP4 1.2.3.4".utf8)) == .invalid(.signature))
        var bent = v4
        bent[11] = 0x0B
        #expect(ProxyHeaderDecoder.decode(bent) == .invalid(.signature))
        #expect(ProxyHeaderDecoder.decode([0x0D, 0x0A, 0x0D, 0x0A, 0x01]) == .invalid(.signature))
    }

    @Test func otherVersionsCommandsAndFamiliesAreRefused() {
        var header = v4
        header[12] = 0x11
        #expect(ProxyHeaderDecoder.decode(header) == .invalid(.version(1)))
        header[12] = 0x22
        #expect(ProxyHeaderDecoder.decode(header) == .invalid(.command(2)))
        // UDP over IPv4, and a Unix socket: no TCP client to name.
        #expect(ProxyHeaderDecoder.decode(ProxyHeaderBytes.header(command: 0x21, family: 0x12, body: Array(v4.dropFirst(16)))) == .invalid(.unsupportedFamily(0x12)))
        #expect(ProxyHeaderDecoder.decode(ProxyHeaderBytes.header(command: 0x21, family: 0x31, body: Array(repeating: 0, count: 216))) == .invalid(.unsupportedFamily(0x31)))
        // An IPv6 family with an IPv4-sized block.
        #expect(ProxyHeaderDecoder.decode(ProxyHeaderBytes.header(command: 0x21, family: 0x21, body: Array(v4.dropFirst(16)))) == .invalid(.shortAddresses(12)))
    }

    @Test func aHeaderLongerThanTheCapIsRefusedBeforeItsBodyArrives() {
        let largest = ProxyHeaderBytes.local(body: Array(repeating: 0, count: ProxyHeaderDecoder.maximumLength - 16))
        #expect(ProxyHeaderDecoder.decode(largest) == .header(.local, length: ProxyHeaderDecoder.maximumLength))
        let over = ProxyHeaderBytes.header(command: 0x20, family: 0, body: Array(repeating: 0, count: ProxyHeaderDecoder.maximumLength - 15))
        #expect(ProxyHeaderDecoder.decode(over.prefix(16)) == .invalid(.oversized(ProxyHeaderDecoder.maximumLength + 1)))
        #expect(ProxyHeaderDecoder.decode(ProxyHeaderDecoder.signature + [0x21, 0x11, 0xFF, 0xFF]) == .invalid(.oversized(16 + 0xFFFF)))
    }
}
