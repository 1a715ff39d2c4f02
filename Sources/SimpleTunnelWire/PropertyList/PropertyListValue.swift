import NIOCore

/// One value of a property list, as much of Apple's model as the tunnel needs to
/// read anything a peer may send and to write what we send.
///
/// `data` holds a `ByteBuffer` so that payloads decoded from a frame are slices
/// of it rather than copies.
public enum PropertyListValue: Sendable, Hashable {
    case dictionary([String: PropertyListValue])
    case array([PropertyListValue])
    case string(String)
    /// Binary property lists carry integers of up to 128 bits (a UInt64 above
    /// Int64.max is written as 16 bytes), so the model keeps all of them exactly.
    case integer(Int128)
    case real(Double)
    case boolean(Bool)
    case data(ByteBuffer)
    /// Seconds since 2001-01-01 00:00:00 UTC, as Apple stores dates.
    case date(Double)
    /// Keyed-archiver object references; never meaningful to the tunnel.
    case uid(UInt64)

    /// What kind of value this is, for error messages ("expected integer, got string").
    public var typeName: PropertyListTypeName {
        switch self {
        case .dictionary: return .dictionary
        case .array: return .array
        case .string: return .string
        case .integer: return .integer
        case .real: return .real
        case .boolean: return .boolean
        case .data: return .data
        case .date: return .date
        case .uid: return .uid
        }
    }
}

/// The name of a property-list type, for diagnostics.
public enum PropertyListTypeName: String, Sendable, Hashable, CustomStringConvertible {
    case dictionary, array, string, integer, real, boolean, data, date, uid

    public var description: String { rawValue }
}

extension PropertyListValue {
    public init(_ value: Int64) { self = .integer(Int128(value)) }
    public init(_ value: Int) { self = .integer(Int128(value)) }
    public init(_ bytes: [UInt8]) { self = .data(ByteBuffer(bytes: bytes)) }

    public var dictionaryValue: [String: PropertyListValue]? {
        if case .dictionary(let value) = self { return value }
        return nil
    }

    public var arrayValue: [PropertyListValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var integerValue: Int128? {
        if case .integer(let value) = self { return value }
        return nil
    }

    public var dataValue: ByteBuffer? {
        if case .data(let value) = self { return value }
        return nil
    }
}
