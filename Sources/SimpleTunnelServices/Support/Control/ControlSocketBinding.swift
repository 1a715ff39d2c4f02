import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The effects of putting a control socket in place: the folder opened once
/// it is checked (`ControlSocketFolder`), the socket bound with its final
/// mode and handed over through descriptors, never by a path someone could
/// swap for a symbolic link in between.
enum ControlSocketBinding {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The folder, opened (O_NOFOLLOW) after its check; created 0700 (for
    /// `owner`, when given) when missing.
    static func openFolder(_ folder: String, owner: (uid: uid_t, gid: gid_t)?) throws(ControlSocketFolderError) -> CInt {
        var created = false
        if try ControlSocketFolder.examine(folder) == nil {
            created = try create(folder)
        }
        guard let checked = try ControlSocketFolder.examine(folder) else { throw .changed(folder) }
        if let refusal = checked.refusal(effectiveUser: geteuid(), serviceUser: owner?.uid) { throw refusal }
        let descriptor = open(folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { throw .unreadable(folder, reason: String(cString: strerror(errno))) }
        // The folder opened must be the folder checked.
        var status = stat()
        var examined = stat()
        guard fstat(descriptor, &status) == 0, lstat(folder, &examined) == 0,
            status.st_dev == examined.st_dev, status.st_ino == examined.st_ino,
            ControlSocketFolder(status, path: folder).refusal(effectiveUser: geteuid(), serviceUser: owner?.uid) == nil
        else {
            close(descriptor)
            throw .changed(folder)
        }
        if created, let owner, fchown(descriptor, owner.uid, owner.gid) != 0 {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw .cannotCreate(folder, reason: "cannot give it to uid \(owner.uid): \(reason)")
        }
        return descriptor
    }

    /// Makes the folder (0700); the folders above it as usual. False when another process made it first.
    private static func create(_ folder: String) throws(ControlSocketFolderError) -> Bool {
        if mkdir(folder, 0o700) == 0 { return true }
        if errno == EEXIST { return false }
        guard errno == ENOENT else { throw .cannotCreate(folder, reason: String(cString: strerror(errno))) }
        do {
            try FileManager.default.createDirectory(
                atPath: (folder as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        } catch {
            throw .cannotCreate(folder, reason: error.localizedDescription)
        }
        if mkdir(folder, 0o700) == 0 { return true }
        if errno == EEXIST { return false }
        throw .cannotCreate(folder, reason: String(cString: strerror(errno)))
    }

    /// A listening Unix socket at `path`, created mode 0600 and, when `owner`
    /// is given, handed to them through the checked folder's descriptor.
    static func listen(at path: String, in folder: CInt, owner: (uid: uid_t, gid: gid_t)?) throws(Failure) -> CInt {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else {
            throw Failure(description: "the control socket path \(path) is \(bytes.count) bytes, over the \(capacity - 1) a Unix socket may have: give a shorter --control PATH")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "cannot make a Unix socket: \(String(cString: strerror(errno)))") }
        // The socket file is created 0600 by bind itself, so it is never open
        // to others nor chmodded by path afterwards. umask is process-wide:
        // this runs at startup (or when a waiting client takes the socket
        // over), and the mask stays set for the one bind call on this thread,
        // so a file another thread creates in that instant is at worst more
        // private than it asked.
        let previous = umask(0o177)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        let bindError = errno
        umask(previous)
        guard bound == 0 else {
            close(descriptor)
            throw Failure(description: "cannot bind the control socket \(path): \(String(cString: strerror(bindError)))")
        }
        let name = (path as NSString).lastPathComponent
        if let owner, fchownat(folder, name, owner.uid, owner.gid, AT_SYMLINK_NOFOLLOW) != 0 {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            unlinkat(folder, name, 0)
            throw Failure(description: "cannot give the control socket \(path) to uid \(owner.uid): \(reason)")
        }
        guard Glibc.listen(descriptor, 128) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            unlinkat(folder, name, 0)
            throw Failure(description: "cannot listen on the control socket \(path): \(reason)")
        }
        return descriptor
    }
}
