import NIOCore

extension ByteBuffer {
    /// A buffer from hex digits, ignoring spaces; for readable test vectors.
    init(hex: String) {
        var bytes: [UInt8] = []
        var pending: UInt8?
        for character in hex where !character.isWhitespace {
            guard let nibble = character.hexDigitValue.map(UInt8.init) else {
                preconditionFailure("bad hex digit \(character) in a test vector")
            }
            if let high = pending {
                bytes.append(high << 4 | nibble)
                pending = nil
            } else {
                pending = nibble
            }
        }
        precondition(pending == nil, "odd number of hex digits in a test vector")
        self.init(bytes: bytes)
    }

    /// `count` bytes whose i-th byte is i % 256, the fixtures' "counter" payload.
    init(counter count: Int) {
        self.init(bytes: (0..<count).map { UInt8(truncatingIfNeeded: $0) })
    }
}
