import Foundation
import Testing
@testable import SimpleTunnelServices

@Suite("resolv.conf")
struct ResolverConfigurationTests {
    @Test func readsServersAndSearchDomains() {
        let text = """
            # This file is managed by a tool
            ; another comment style
            nameserver 192.0.2.1
            nameserver\t2001:db8::53   # inline comment
            search example.com lab.example.com
            options ndots:2
            """
        let settings = ResolverConfiguration.dnsSettings(fromResolvConf: text)
        #expect(settings?.servers == [IPAddress("192.0.2.1")!, IPAddress("2001:db8::53")!])
        #expect(settings?.searchDomains == ["example.com", "lab.example.com"])
    }

    @Test func theLastSearchOrDomainLineWins() {
        let searchThenDomain = "nameserver 192.0.2.1\nsearch a.example b.example\ndomain c.example\n"
        #expect(ResolverConfiguration.dnsSettings(fromResolvConf: searchThenDomain)?.searchDomains == ["c.example"])
        let domainThenSearch = "domain c.example\nnameserver 192.0.2.1\nsearch a.example b.example\n"
        #expect(ResolverConfiguration.dnsSettings(fromResolvConf: domainThenSearch)?.searchDomains == ["a.example", "b.example"])
    }

    @Test func skipsCommentedLoopbackAndUnparsableServers() {
        let text = """
            #nameserver 192.0.2.9
            ;nameserver 192.0.2.8
            nameserver 127.0.0.53
            nameserver ::1
            nameserver 0.0.0.0
            nameserver fe80::1%eth0
            nameserver not-an-address
            nameserver
            nameservers 192.0.2.7
            nameserver 198.51.100.1
            """
        #expect(ResolverConfiguration.dnsSettings(fromResolvConf: text)?.servers == [IPAddress("198.51.100.1")!])
    }

    @Test func yieldsNothingWithoutAUsableServer() {
        #expect(ResolverConfiguration.dnsSettings(fromResolvConf: "") == nil)
        #expect(ResolverConfiguration.dnsSettings(fromResolvConf: "search example.com\n") == nil)
        #expect(ResolverConfiguration.dnsSettings(fromResolvConf: "nameserver 127.0.0.53\nsearch example.com\n") == nil)
    }

    @Test func handlesWindowsLineEndings() {
        let settings = ResolverConfiguration.dnsSettings(fromResolvConf: "nameserver 192.0.2.1\r\nsearch example.com\r\n")
        #expect(settings?.servers == [IPAddress("192.0.2.1")!])
        #expect(settings?.searchDomains == ["example.com"])
    }

    @Test func readsTheFileWhenThereIsOneAndNothingWhenThereIsNone() throws {
        let path = NSTemporaryDirectory() + "resolv-\(UUID().uuidString.prefix(8)).conf"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let text = "# written by a test\nnameserver 192.0.2.53\nsearch corp.example\n"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        let read = try #require(ResolverConfiguration.readSystemResolvConf(path: path))
        #expect(read == text)
        #expect(ResolverConfiguration.dnsSettings(fromResolvConf: read)?.servers == [IPAddress("192.0.2.53")!])
        #expect(ResolverConfiguration.readSystemResolvConf(path: "/nonexistent/resolv.conf") == nil)
    }
}
