import FuzzMain
import FuzzSupport
import LocationCore
import LocationWire

/// libFuzzer entry point: arbitrary bytes on the native protocol's socket, in either direction.
///
/// The bytes are framed into lines as the server frames a client's reads (random chunks, the server's
/// request-size cap); each line is parsed as a request, and a request that parses must encode to a line that
/// parses back to the same request (docs/PROTOCOL.md: one encoder and one decoder for both ends). Each line is
/// also decoded as the client library decodes the server's lines, and a decoded message re-decodes the same.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWire(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var framer = LineFramer(maximumLineLength: ProtocolVersion.maximumRequestLength)
    var lines: [[UInt8]] = []
    for chunk in randomChunks(bytes, maximumChunk: 96) {
        framer.feed(chunk) { event in
            if case .line(let line) = event { lines.append(line) }
        }
    }
    // The whole input as one line too: a client that never sends a newline still reaches the parser's size check.
    lines.append(bytes)
    for line in lines {
        if let request = try? RequestParser.parse(line) {
            var encoded = request.encoded()
            require(encoded.last == 10, "an encoded request ends in a newline")
            encoded.removeLast()
            let again: Request
            do {
                again = try RequestParser.parse(encoded)
            } catch {
                fatalError("\(request) encodes to \(String(decoding: encoded, as: UTF8.self)), which does not parse: \(error)")
            }
            require(again == request, "\(request) round-trips to \(again)")
        }
        _ = try? ServerMessage.decode(line)
        _ = try? JSONReader.read(line)
    }
    return 0
}
