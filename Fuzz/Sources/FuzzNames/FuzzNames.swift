import NIOCore
import SimpleTunnelServices

/// Hosts and logins as a peer sends them: whatever the validators accept
/// must mean the same to the policy, the C library and the log, and must
/// decode from an `open` exactly when the validator accepts it.
func fuzzNames(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let text = String(decoding: bytes, as: UTF8.self)
    checkHost(text)
    checkLogin(text)
    checkQuoting(text)
    return 0
}

private func checkHost(_ host: String) {
    let accepted = TunnelHostSyntax.problem(with: host) == nil
    let decoded = try? TunnelMessage(propertyList: .dictionary([
        "command": .integer(6), "identifier": .integer(1), "tunnel-type": .integer(0), "app-proxy-flow-type": .integer(1),
        "host": .string(host), "port": .integer(443),
    ]))
    guard accepted == (decoded != nil) else {
        fatalError("the validator says \(accepted) but the decoder \(decoded != nil) for \(host.debugDescription)")
    }
    guard accepted else { return }
    // What the C library would read (up to a NUL) is the whole host, and nothing in it is space, control or formatting.
    let unsafe: (Unicode.Scalar) -> Bool = { scalar in
        scalar.value <= 0x20 || scalar.value == 0x7F || scalar.properties.isWhitespace
            || [.control, .format, .lineSeparator, .paragraphSeparator, .privateUse, .unassigned, .surrogate].contains(scalar.properties.generalCategory)
    }
    guard !host.unicodeScalars.contains(where: unsafe) else {
        fatalError("accepted a host with a byte the resolver or a log reads differently: \(host.debugDescription)")
    }
    // A name rule and the decision by name agree with what was accepted: no refusal for its form.
    if case .refused(let reason) = DestinationPolicy.allowAll.decision(forHost: host, port: 443), reason.contains("not a DNS name") {
        fatalError("the policy refuses the form of an accepted host \(host.debugDescription): \(reason)")
    }
}

private func checkLogin(_ login: String) {
    guard TunnelLoginSyntax.problem(with: login) == nil else { return }
    guard !login.unicodeScalars.contains(where: { $0 == ":" || $0.value < 0x20 || $0.value == 0x7F || $0.properties.isWhitespace }),
        login.count <= TunnelLoginSyntax.maximumLength
    else {
        fatalError("accepted a login passwd could not have written: \(login.debugDescription)")
    }
}

private func checkQuoting(_ text: String) {
    let quoted = PeerText.quoted(text)
    guard !quoted.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F || $0 == "\u{2028}" || $0 == "\u{2029}" }) else {
        fatalError("the quoted form keeps a line-breaking or control character: \(quoted.debugDescription)")
    }
}
