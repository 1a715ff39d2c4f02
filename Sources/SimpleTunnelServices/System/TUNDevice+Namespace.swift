import CTUNShims
import Foundation
import Logging

extension TUNDevice {
    /// Creates a TUN interface inside the named network namespace
    /// (`/var/run/netns/NAME`, as `ip netns add` makes) without moving this
    /// process there.
    ///
    /// `setns()` changes the namespace of the calling thread only, so the
    /// work runs on a short-lived thread of its own: it enters the namespace,
    /// opens the device and a control socket, returns, and ends. Descriptors
    /// keep the namespace they were created in, so the device is read and
    /// written from any thread afterwards, and nothing else ever runs in the
    /// switched thread, even if switching back were to fail.
    public static func open(
        name: String = "stun%d", inNamespace namespace: String, offloads: TUNOffloadRequest = .fromEnvironment,
        logger: Logger = Logger(label: "simpletunnel.tun")
    ) throws(TUNDeviceError) -> TUNDevice {
        guard !namespace.isEmpty, !namespace.contains("/"), namespace != ".", namespace != ".." else {
            throw .namespaceUnavailable(namespace: namespace, errno: EINVAL)
        }
        let outcome = NamespaceOpenOutcome()
        let finished = DispatchSemaphore(value: 0)
        let thread = Thread {
            outcome.open(name: name, netnsPath: "/var/run/netns/\(namespace)", virtioHeader: offloads == .automatic)
            finished.signal()
        }
        thread.name = "TUN open in \(namespace)"
        thread.start()
        finished.wait()
        let result = outcome.result
        switch Int(result.failedStep) {
        case Int(ST_STEP_ENTER):
            throw .namespaceUnavailable(namespace: namespace, errno: result.errno)
        case Int(ST_STEP_OPEN):
            throw .openFailed(name: name, errno: result.errno)
        case Int(ST_STEP_RETURN):
            // Harmless: that thread has ended. Worth knowing, though.
            logger.warning("the thread that opened the TUN device could not leave the namespace", metadata: ["namespace": "\(namespace)", "error": "\(errnoText(result.errno))"])
        default:
            break
        }
        return try TUNDevice(deviceFD: result.deviceFD, controlFD: result.controlFD, name: result.name, virtioHeader: result.virtioHeader, logger: logger)
    }
}

/// Written once by the opening thread before it signals, read after: the
/// semaphore orders the accesses.
private final class NamespaceOpenOutcome: @unchecked Sendable {
    var result: (deviceFD: CInt, controlFD: CInt, name: String, virtioHeader: Bool, errno: CInt, failedStep: CInt) = (-1, -1, "", false, 0, CInt(ST_STEP_ENTER))

    func open(name: String, netnsPath: String, virtioHeader: Bool) {
        var error: CInt = 0
        var controlFD: CInt = -1
        var failedStep: CInt = 0
        var vnetHeader: CInt = 0
        var actualName = [CChar](repeating: 0, count: Int(st_interface_name_capacity()))
        let fd = st_tun_open_in_namespace(netnsPath, name, virtioHeader ? 1 : 0, &actualName, actualName.count, &vnetHeader, &controlFD, &failedStep, &error)
        result = (fd, controlFD, TUNDevice.interfaceName(actualName), vnetHeader != 0, error, failedStep)
    }
}
