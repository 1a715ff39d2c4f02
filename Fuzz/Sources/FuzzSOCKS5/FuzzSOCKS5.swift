import NIOCore
import SimpleTunnelServices

/// What a local SOCKS5 client sends: the handshake, in pieces of varying size,
/// then the reply to its request; and the same bytes as a UDP datagram.
/// The first byte chooses the piece size and the outcome.
func fuzzSOCKS5(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let control = data[0]
    let input = ByteBuffer(bytes: UnsafeBufferPointer(start: data + 1, count: size - 1))
    handshake(input, pieceSize: Int(control & 0x0F) + 1, succeeds: control & 0x10 != 0, closes: control & 0x20 != 0)
    datagram(input)
    return 0
}

private func handshake(_ input: ByteBuffer, pieceSize: Int, succeeds: Bool, closes: Bool) {
    var machine = SOCKS5ServerStateMachine()
    var rest = input
    while rest.readableBytes > 0, machine.phase == .handshaking || machine.phase == .awaitingReply {
        let piece = rest.readSlice(length: min(pieceSize, rest.readableBytes))!
        for action in machine.receiveBytes(piece) {
            guard case .request = action else { continue }
            let outcome: SOCKS5Outcome = succeeds ? .succeeded(boundAddress: nil) : .failure(.connectionRefused)
            if case .establish = machine.reply(outcome) {
                return  // what follows belongs to the application
            }
        }
    }
    if closes { _ = machine.receiveEndOfInput() }
}

private func datagram(_ input: ByteBuffer) {
    guard let parsed = try? SOCKS5UDPDatagram(parsing: input) else { return }
    guard let encoded = try? parsed.encoded(), let again = try? SOCKS5UDPDatagram(parsing: encoded), again == parsed else {
        fatalError("\(parsed) does not survive encoding and parsing")
    }
}
