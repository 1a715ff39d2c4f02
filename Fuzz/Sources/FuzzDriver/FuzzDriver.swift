import SimpleTunnelServices

/// libFuzzer's entry for programs that have their own `main`: SwiftPM names an
/// executable's entry point after its target, so libFuzzer's `main` is not
/// used; each target's main.swift hands its harness to this instead.
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt

/// Runs libFuzzer with this process's arguments and exits with its status.
public func runFuzzer(_ harness: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt) -> Never {
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, harness))
}

@_silgen_name("exit")
private func exit(_ status: CInt) -> Never

extension PropertyListValue {
    /// NaN is not equal to itself, so a value holding one never compares equal.
    public var containsNaN: Bool {
        switch self {
        case .real(let number), .date(let number): return number.isNaN
        case .array(let elements): return elements.contains { $0.containsNaN }
        case .dictionary(let entries): return entries.values.contains { $0.containsNaN }
        default: return false
        }
    }
}
