import TestSupport

/// FNV-1a, 64 bits (Fowler, Noll, Vo): a seed for `SplitMix64` taken from the input bytes.
public func fnv1a(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
    var h: UInt64 = 0xCBF2_9CE4_8422_2325
    for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01B3 }
    return h
}

/// Splits `bytes` into chunks of 1 to `maximumChunk` bytes, sizes drawn from a generator seeded by the input,
/// as a serial port or a socket would hand them over.
public func randomChunks(_ bytes: [UInt8], maximumChunk: Int = 64) -> [ArraySlice<UInt8>] {
    var rng = SplitMix64(seed: bytes.withUnsafeBufferPointer(fnv1a))
    var chunks: [ArraySlice<UInt8>] = []
    var start = 0
    while start < bytes.count {
        let size = Int.random(in: 1...max(1, maximumChunk), using: &rng)
        let end = min(bytes.count, start + size)
        chunks.append(bytes[start..<end])
        start = end
    }
    return chunks
}

/// Stops the fuzzer with a message when an invariant fails (libFuzzer records the input as a crash).
public func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
                    file: StaticString = #file, line: UInt = #line) {
    if !condition() { fatalError(message(), file: file, line: line) }
}
