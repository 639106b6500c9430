import LocationCore
import LocationWire
import Testing

/// Inputs the fuzz targets (Fuzz/, docs/FUZZING.md) found breaking something; each stays a test.
@Suite("Fuzz regressions: requests")
struct FuzzRegressionTests {
    /// FuzzServer, artifact FuzzServer-crash-0ed8c278…: a WATCH whose minInterval the server turned into a
    /// `Duration` trapped on Int128 overflow ("Overflow in multiplication"), crashing the daemon for any
    /// client allowed to watch. The line as the fuzzer sent it (its first byte picked the client).
    @Test("a WATCH with an astronomical minInterval is refused with an ERROR, not trapped on")
    func hugeMinInterval() {
        let line = Array(#"{"class":"WATCH","enable":true,"minInterval":188888888888888888888.0,"distanceFilter":10}"#.utf8)
        #expect(throws: RequestError(request: "WATCH", message: "minInterval must be a number of seconds in [0, 86400]")) {
            _ = try RequestParser.parse(line)
        }
    }

    @Test("minInterval is accepted up to one day, and a day's Duration is exact", arguments: [0.0, 0.5, 86_400.0])
    func boundedMinInterval(seconds: Double) throws {
        let request = try RequestParser.parse(Array(#"{"class":"WATCH","minInterval":\#(seconds)}"#.utf8))
        #expect(request == .watch(enable: true, minInterval: seconds, distanceFilter: 0))
        #expect(Duration.seconds(seconds) <= .seconds(86_400))
    }

    /// FuzzWire, artifact FuzzWire-crash-771167be…: a server line whose TPV time had a 100-digit fraction
    /// overflowed `UTCTime(iso8601:)` ("arithmetic overflow"), crashing any client that decoded it.
    @Test("a TPV time with a 100-digit fraction decodes, truncated to the millisecond")
    func longFraction() throws {
        let fraction = "801" + String(repeating: "0", count: 97)
        let time = try #require(UTCTime(iso8601: "2007-02-08T09:53:08.\(fraction)Z"))
        #expect(time.iso8601 == "2007-02-08T09:53:08.801Z")
        let line = #"{"class":"TPV","mode":3,"time":"2007-02-08T09:53:08.\#(fraction)Z","lat":-27.210781667,"lon":153.05213,"accuracy":"full"}"#
        _ = try? ServerMessage.decode(Array(line.utf8))
        #expect(UTCTime(iso8601: "2007-02-08T09:53:08.8x1Z") == nil)
        #expect(UTCTime(iso8601: "2007-02-08T09:53:08.80123456789012345678901234x") == nil)
        #expect(UTCTime(iso8601: "2007-02-08T09:53:08.8Z")?.millisecond == 800)
    }
}
