import FuzzDriver
import NIOCore
import SimpleTunnelServices

/// XML property lists: configuration files, and frames a peer sends as XML.
/// What reads must be written as binary and read back unchanged (or refused as
/// too complex: the binary writer shares repeated strings, so a document can be
/// far shorter in binary than its keys, and the binary reader's limits smaller).
func fuzzXMLPropertyList(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    guard let value = try? XMLPropertyListReader.read(bytes) else { return 0 }
    let binary = BinaryPropertyListWriter.bytes(value)
    do {
        let again = try BinaryPropertyListReader.read(binary)
        guard again == value || value.containsNaN else {
            fatalError("\(value) reads back as \(again) after the binary writer")
        }
    } catch PropertyListError.tooComplex {
        return 0
    } catch {
        fatalError("\(value) written as binary is refused: \(error)")
    }
    return 0
}
