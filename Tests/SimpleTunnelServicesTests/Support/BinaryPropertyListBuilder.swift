import NIOCore

/// Assembles a `bplist00` document by hand from raw object bytes, with any
/// offset and reference widths: for layouts our writer never produces and for
/// deliberately broken documents.
struct BinaryPropertyListBuilder {
    var objects: [[UInt8]] = []
    var offsetSize = 1
    var referenceSize = 1
    var topObject: UInt64 = 0
    /// Overrides for trailer fields, to corrupt them.
    var objectCountOverride: UInt64?
    var offsetTableStartOverride: UInt64?
    var offsetOverrides: [Int: UInt64] = [:]

    /// The bytes of a reference to `object` at this builder's width.
    func reference(_ object: Int) -> [UInt8] {
        bigEndian(UInt64(object), width: referenceSize)
    }

    func build() -> ByteBuffer {
        var bytes = Array("bplist00".utf8)
        var offsets: [UInt64] = []
        for object in objects {
            offsets.append(UInt64(bytes.count))
            bytes += object
        }
        let tableStart = UInt64(bytes.count)
        for (index, offset) in offsets.enumerated() {
            bytes += bigEndian(offsetOverrides[index] ?? offset, width: offsetSize)
        }
        bytes += [0, 0, 0, 0, 0, 0, UInt8(truncatingIfNeeded: offsetSize), UInt8(truncatingIfNeeded: referenceSize)]
        bytes += bigEndian(objectCountOverride ?? UInt64(objects.count), width: 8)
        bytes += bigEndian(topObject, width: 8)
        bytes += bigEndian(offsetTableStartOverride ?? tableStart, width: 8)
        return ByteBuffer(bytes: bytes)
    }

    func bigEndian(_ value: UInt64, width: Int) -> [UInt8] {
        (0..<width).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }
}
