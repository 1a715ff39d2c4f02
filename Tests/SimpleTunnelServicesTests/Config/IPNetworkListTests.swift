import Testing
@testable import SimpleTunnelServices

@Suite("Network lists (--plaintext-clients)")
struct IPNetworkListTests {
    @Test func readsBothFamiliesAndJudgesMappedPeersAsIPv4() throws {
        let list = try IPNetworkList(parsing: "192.168.1.0/24, 10.0.0.7,fd00:1::/64,::ffff:172.16.0.0/108")
        #expect(list.description == "192.168.1.0/24,10.0.0.7/32,172.16.0.0/12,fd00:1::/64")
        for inside in ["192.168.1.1", "192.168.1.255", "10.0.0.7", "fd00:1::abcd", "::ffff:192.168.1.9", "172.31.255.255"] {
            #expect(list.contains(try #require(IPAddress(inside))), "\(inside)")
        }
        for outside in ["192.168.2.1", "10.0.0.8", "fd00:2::1", "127.0.0.1", "::1", "::ffff:10.0.0.8"] {
            #expect(!list.contains(try #require(IPAddress(outside))), "\(outside)")
        }
    }

    @Test(arguments: [
        ("", "empty entry"), ("192.168.1.0/24,", "empty entry"), ("192.168.1.1/24", "did you mean 192.168.1.0/24"),
        ("10.0.0.0/33", "prefix length"), ("lan", "not an IPv4 address"), ("fd00::1/129", "prefix length"), ("fd00::/8;10.0.0.0/8", "prefix length"),
    ])
    func refusesWhatIsNotAList(text: String, says: String) {
        #expect {
            try IPNetworkList(parsing: text)
        } throws: { error in
            "\(error)".contains(says) && "\(error)".contains("expected networks such as")
        }
    }
}
