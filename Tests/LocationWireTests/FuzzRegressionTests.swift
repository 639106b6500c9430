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
}
