/// Decoders for the text of `<integer>`, `<real>`, `<date>` and `<data>`.
///
/// Each returns nil for text it does not accept; the parser turns that into an error
/// that names the element and its position. Surrounding whitespace is ignored, as
/// CoreFoundation does.
enum XMLPropertyListScalars {
    typealias Text = ArraySlice<UInt8>

    static func trimmed(_ text: [UInt8]) -> Text {
        var slice = text[...]
        while let first = slice.first, XMLByte.isWhitespace(first) { slice.removeFirst() }
        while let last = slice.last, XMLByte.isWhitespace(last) { slice.removeLast() }
        return slice
    }

    // MARK: Integer

    /// Decimal or `0x` hexadecimal with an optional sign, anywhere in Int128's range
    /// (which covers Int64.min...UInt64.max, what Apple's binary format can carry).
    static func integer(_ text: [UInt8]) -> Int128? {
        var digits = trimmed(text)
        var negative = false
        if let sign = digits.first, sign == XMLByte.plus || sign == XMLByte.minus {
            negative = sign == XMLByte.minus
            digits.removeFirst()
        }
        var radix: UInt32 = 10
        if digits.count > 2, digits.first == XMLByte.zero,
           XMLByte.lowercased(digits[digits.startIndex + 1]) == XMLByte.lowerX {
            radix = 16
            digits.removeFirst(2)
        }
        guard !digits.isEmpty else { return nil }

        var magnitude: UInt128 = 0
        for byte in digits {
            guard let digit = XMLByte.digitValue(byte, radix: radix) else { return nil }
            let (shifted, overflowA) = magnitude.multipliedReportingOverflow(by: UInt128(radix))
            let (sum, overflowB) = shifted.addingReportingOverflow(UInt128(digit))
            guard !overflowA, !overflowB else { return nil }
            magnitude = sum
        }
        let limit = UInt128(Int128.max)
        if negative {
            guard magnitude <= limit + 1 else { return nil }
            return magnitude == limit + 1 ? Int128.min : -Int128(magnitude)
        }
        guard magnitude <= limit else { return nil }
        return Int128(magnitude)
    }

    // MARK: Real

    /// Decimal with optional fraction and exponent, or nan / inf / infinity with an
    /// optional sign, case-insensitively.
    static func real(_ text: [UInt8]) -> Double? {
        let body = trimmed(text)
        guard !body.isEmpty, body.count <= 1024 else { return nil }
        if let special = specialReal(body) { return special }
        guard isDecimalReal(body) else { return nil }
        // The grammar is checked, so Double's own parser only sees a plain decimal.
        return Double(String(decoding: body, as: UTF8.self))
    }

    private static func specialReal(_ body: Text) -> Double? {
        var word = body
        var sign: Double = 1
        if let first = word.first, first == XMLByte.plus || first == XMLByte.minus {
            sign = first == XMLByte.minus ? -1 : 1
            word.removeFirst()
        }
        let lower = word.lazy.map(XMLByte.lowercased)
        if lower.elementsEqual("nan".utf8) { return .nan }
        if lower.elementsEqual("inf".utf8) || lower.elementsEqual("infinity".utf8) { return sign * .infinity }
        return nil
    }

    private static func isDecimalReal(_ body: Text) -> Bool {
        var index = body.startIndex
        func skipDigits() -> Int {
            let start = index
            while index < body.endIndex, (0x30...0x39).contains(body[index]) { index += 1 }
            return index - start
        }
        if body[index] == XMLByte.plus || body[index] == XMLByte.minus { index += 1 }
        var mantissaDigits = skipDigits()
        if index < body.endIndex, body[index] == XMLByte.dot {
            index += 1
            mantissaDigits += skipDigits()
        }
        guard mantissaDigits > 0 else { return false }
        if index < body.endIndex, body[index] == 0x65 || body[index] == 0x45 {  // e E
            index += 1
            if index < body.endIndex, body[index] == XMLByte.plus || body[index] == XMLByte.minus { index += 1 }
            guard skipDigits() > 0 else { return false }
        }
        return index == body.endIndex
    }

    // MARK: Date

    /// `YYYY-MM-DDTHH:MM:SSZ` (UTC), as seconds since 2001-01-01T00:00:00Z.
    static func date(_ text: [UInt8]) -> Double? {
        let body = Array(trimmed(text))
        guard body.count == 20,
              body[4] == XMLByte.minus, body[7] == XMLByte.minus, body[10] == 0x54,  // T
              body[13] == XMLByte.colon, body[16] == XMLByte.colon, body[19] == 0x5A,  // Z
              let year = decimal(body[0..<4]), let month = decimal(body[5..<7]),
              let day = decimal(body[8..<10]), let hour = decimal(body[11..<13]),
              let minute = decimal(body[14..<16]), let second = decimal(body[17..<19]),
              year >= 1, (1...12).contains(month), hour < 24, minute < 60, second < 60,
              day >= 1, day <= daysIn(month: month, year: year)
        else { return nil }
        let days = dayNumber(year: year, month: month, day: day) - dayNumber(year: 2001, month: 1, day: 1)
        return Double(days * 86_400 + hour * 3_600 + minute * 60 + second)
    }

    private static func decimal(_ digits: ArraySlice<UInt8>) -> Int? {
        var value = 0
        for byte in digits {
            guard (0x30...0x39).contains(byte) else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return value
    }

    private static func isLeap(_ year: Int) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 0001-01-01 in the proleptic Gregorian calendar (year >= 1).
    private static func dayNumber(year: Int, month: Int, day: Int) -> Int {
        let daysBeforeMonth = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334]
        let previousYears = year - 1
        var days = previousYears * 365 + previousYears / 4 - previousYears / 100 + previousYears / 400
        days += daysBeforeMonth[month - 1] + day - 1
        if month > 2 && isLeap(year) { days += 1 }
        return days
    }

    // MARK: Data

    /// Standard base64; whitespace anywhere is ignored and `=` padding is optional,
    /// but when present it must be correct and last.
    static func base64(_ text: [UInt8]) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count / 4 * 3 + 2)
        var accumulator: UInt32 = 0
        var pending = 0  // sextets in `accumulator`
        var padding = 0
        for byte in text {
            if XMLByte.isWhitespace(byte) { continue }
            if byte == XMLByte.equals {
                padding += 1
                continue
            }
            guard padding == 0, let sextet = base64Value(byte) else { return nil }
            accumulator = accumulator << 6 | sextet
            pending += 1
            if pending == 4 {
                bytes.append(UInt8(truncatingIfNeeded: accumulator >> 16))
                bytes.append(UInt8(truncatingIfNeeded: accumulator >> 8))
                bytes.append(UInt8(truncatingIfNeeded: accumulator))
                accumulator = 0
                pending = 0
            }
        }
        switch (pending, padding) {
        case (0, 0):
            break
        case (2, 0), (2, 2):
            bytes.append(UInt8(truncatingIfNeeded: accumulator >> 4))
        case (3, 0), (3, 1):
            bytes.append(UInt8(truncatingIfNeeded: accumulator >> 10))
            bytes.append(UInt8(truncatingIfNeeded: accumulator >> 2))
        default:
            return nil
        }
        return bytes
    }

    private static func base64Value(_ byte: UInt8) -> UInt32? {
        switch byte {
        case 0x41...0x5A: return UInt32(byte - 0x41)
        case 0x61...0x7A: return UInt32(byte - 0x61 + 26)
        case 0x30...0x39: return UInt32(byte - 0x30 + 52)
        case 0x2B: return 62  // +
        case 0x2F: return 63  // /
        default: return nil
        }
    }
}
