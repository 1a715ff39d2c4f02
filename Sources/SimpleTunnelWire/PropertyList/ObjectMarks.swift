/// Two marks per object number `0..<count` for the binary reader: read before
/// (its content is charged once) and open (a container being read, to refuse
/// cycles). Documents of up to 64 objects (every message but configuration
/// replies) keep them in two words and allocate nothing; larger ones use
/// `count / 4` bytes, at most 32 KiB for a 128 KiB frame.
struct ObjectMarks {
    private var seenSmall: UInt64 = 0
    private var openSmall: UInt64 = 0
    /// Seen and open words, interleaved, for documents of more than 64 objects.
    private var large: [UInt64]?

    init(count: Int) {
        large = count <= 64 ? nil : Array(repeating: 0, count: 2 * ((count + 63) / 64))
    }

    /// Marks `object` as read; true when it was not read before.
    @inline(__always)
    mutating func markSeen(_ object: Int) -> Bool {
        let bit = UInt64(1) << UInt64(object & 63)
        guard large != nil else {
            defer { seenSmall |= bit }
            return seenSmall & bit == 0
        }
        let word = 2 * (object >> 6)
        defer { large![word] |= bit }
        return large![word] & bit == 0
    }

    /// Marks `object` as open or closed; returns whether it was open before.
    @inline(__always)
    mutating func setOpen(_ object: Int, _ isOpen: Bool) -> Bool {
        let bit = UInt64(1) << UInt64(object & 63)
        guard large != nil else {
            defer { openSmall = isOpen ? openSmall | bit : openSmall & ~bit }
            return openSmall & bit != 0
        }
        let word = 2 * (object >> 6) + 1
        defer { large![word] = isOpen ? large![word] | bit : large![word] & ~bit }
        return large![word] & bit != 0
    }
}
