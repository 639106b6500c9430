import FuzzMain
import FuzzSupport
import LocationCore
import LocationWire

/// The receivers a gpsd client is told about: one serial receiver and one without a speed.
private let devices = [
    GpsdDevice(path: "/dev/ttyUSB0", bitsPerSecond: 9600),
    GpsdDevice(path: "/var/lib/replay.nmea", bitsPerSecond: nil, cycleSeconds: nil),
]

/// libFuzzer entry point: arbitrary bytes from a gpsd client (`?WATCH={...};`, `?POLL;`, ...) in random reads.
///
/// Each read goes through `GpsdConversation.receive` as the gpsd front hands it over; checks, beyond "no crash, no
/// hang": every reply is whole CR LF-terminated lines, poll offsets lie inside the reply and in order, and the
/// watch state never says both started and stopped for one read.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGpsd(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = GpsdRequestParser.parse(bytes)
    var conversation = GpsdConversation()
    for chunk in randomChunks(bytes, maximumChunk: 128) {
        let reply = conversation.receive(Array(chunk), devices: devices)
        if !reply.bytes.isEmpty {
            require(reply.bytes.suffix(2) == [13, 10], "a reply ends in CR LF")
        }
        var last = 0
        for offset in reply.pollOffsets {
            require(offset >= last && offset <= reply.bytes.count, "poll offset \(offset) outside the reply")
            last = offset
        }
        require(!(reply.startedWatching && reply.stoppedWatching), "one read both started and stopped watching")
    }
    return 0
}
