import Testing
@testable import SimpleTunnelServices

@Test func packageBuilds() {
    #expect(Bool(true))
}
