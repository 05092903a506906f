import Foundation

/// A one-bit flag shared between tasks (a load loop's stop signal).
public final class ManagedAtomicFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false

    public init() {}

    public var isSet: Bool { self.lock.withLock { self.value } }
    public func set() { self.lock.withLock { self.value = true } }
}

/// A counter shared between tasks.
public final class ManagedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    public init() {}

    public var value: Int { self.lock.withLock { self.count } }
    public func increment() { self.lock.withLock { self.count += 1 } }
}
