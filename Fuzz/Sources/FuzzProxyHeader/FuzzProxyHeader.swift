import SimpleTunnelServices

/// A balancer's first bytes, as a connection from `--proxy-protocol-from`
/// brings them: the decoder's answer must not depend on how the bytes were
/// split, a header never claims more than it was given or than the cap, and
/// what follows it is never read as part of it.
func fuzzProxyHeader(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let whole = ProxyHeaderDecoder.decode(bytes)
    switch whole {
    case .header(let header, let length):
        guard length >= 16, length <= min(size, ProxyHeaderDecoder.maximumLength) else {
            fatalError("a header of \(length) bytes from \(size)")
        }
        // The header alone is the same header; one byte less is not yet one.
        guard ProxyHeaderDecoder.decode(bytes.prefix(length)) == whole, ProxyHeaderDecoder.decode(bytes.prefix(length - 1)) == .needMoreData else {
            fatalError("the header's own bytes decode differently")
        }
        if case .proxied(let source, _, let destination, _) = header {
            let sameFamily = if case .v4 = source, case .v4 = destination { true } else if case .v6 = source, case .v6 = destination { true } else { false }
            guard sameFamily else { fatalError("a header with addresses of two families") }
        }
    case .needMoreData:
        guard size < ProxyHeaderDecoder.maximumLength else { fatalError("asked for more after \(size) bytes") }
        // Every shorter prefix asks for more too: nothing is decided and then taken back.
        for count in stride(from: 0, to: size, by: max(1, size / 8)) where ProxyHeaderDecoder.decode(bytes.prefix(count)) != .needMoreData {
            fatalError("\(count) bytes decided what \(size) did not")
        }
    case .invalid:
        // More bytes never make it valid.
        guard ProxyHeaderDecoder.decode(bytes + [0, 0, 0, 0]) == whole || size < 16 else { fatalError("more bytes changed a refusal") }
    }
    return 0
}
