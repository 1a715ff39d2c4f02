@testable import SimpleTunnelServices
@testable import SimpleTunnelWire

/// The heap bytes a decoded value holds, each piece of storage counted once
/// however many values share it: what the test of the reader's memory bound
/// measures. Arrays and dictionaries count their capacity, not their count.
struct PropertyListFootprint {
    private var seen: Set<UnsafeRawPointer> = []
    private(set) var bytes = 0

    static func of(_ value: PropertyListValue) -> Int {
        var footprint = PropertyListFootprint()
        footprint.add(value)
        return footprint.bytes
    }

    private mutating func add(_ value: PropertyListValue) {
        switch value {
        case .array(let elements):
            guard elements.capacity > 0,
                  let address = elements.withUnsafeBufferPointer({ $0.baseAddress.map(UnsafeRawPointer.init) }),
                  seen.insert(address).inserted
            else { return }
            bytes += PropertyListHeapCost.bufferHeader + elements.capacity * PropertyListHeapCost.valueStride
            elements.forEach { add($0) }
        case .dictionary(let entries):
            guard entries.capacity > 0, seen.insert(unsafeBitCast(entries, to: UnsafeRawPointer.self)).inserted else { return }
            var buckets = 1
            while buckets * 3 < entries.capacity * 4 { buckets *= 2 }
            bytes += PropertyListHeapCost.bufferHeader + 32 + buckets * (MemoryLayout<String>.stride + PropertyListHeapCost.valueStride) + buckets / 8
            for (key, entry) in entries {
                add(key)
                add(entry)
            }
        case .string(let string):
            add(string)
        case .integer, .real, .boolean, .date, .uid, .data:
            // Data values are slices of the document, which the caller holds anyway.
            return
        }
    }

    private mutating func add(_ string: String) {
        guard string.utf8.count > 15 else { return }  // stored in the String itself
        var copy = string
        let address = copy.withUTF8 { UnsafeRawPointer($0.baseAddress!) }
        if seen.insert(address).inserted {
            bytes += PropertyListHeapCost.bufferHeader + string.utf8.count + 1
        }
    }
}
