"""``python3 -m locationd``: get, watch, status — the Python counterpart of ``locationctl``'s client
commands, with its exit codes (sysexits.h)."""

import argparse
import json
import math
import sys

from . import (DaemonError, DaemonUnavailable, LocationManager, NoFix, NotAuthorized, Paced,
               ProtocolMismatch, Timeout)

EXIT_OK = 0
EXIT_USAGE = 64          # EX_USAGE
EXIT_UNAVAILABLE = 69    # EX_UNAVAILABLE: the daemon cannot be reached, or refused otherwise
EXIT_SOFTWARE = 70       # EX_SOFTWARE
EXIT_TEMPFAIL = 75       # EX_TEMPFAIL: no fix in time, or a timeout
EXIT_PROTOCOL = 76       # EX_PROTOCOL: the daemon speaks another protocol
EXIT_NOPERM = 77         # EX_NOPERM: not authorized
EXIT_PACED = 79          # reduced accuracy: the next report is not due within the timeout

EPILOG = """exit status: 0, 64 usage, 69 daemon unreachable or refused, 75 no fix or timeout,
76 protocol mismatch, 77 not authorized, 79 reduced accuracy and the next report not due in time."""


class _Parser(argparse.ArgumentParser):
    """argparse, exiting 64 (EX_USAGE) on a usage error as locationctl does, not 2."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, "%s: error: %s\n" % (self.prog, message))


def _fixed(value, decimals):
    return "%.*f" % (decimals, value)


def human_line(location):
    """One line for a location, in ``locationctl watch``'s form:
    ``2007-04-08 09:53:05.802Z  -27.2109117  153.0522500  ±247.2 m  3.6 km/h  track 133.96°  [gnss0]``."""
    if location.time is not None:
        stamp = location.time.strftime("%Y-%m-%d %H:%M:%S.") + "%03dZ" % (location.time.microsecond // 1000)
    else:
        stamp = "-"
    fields = [stamp, _fixed(location.lat, 7), _fixed(location.lon, 7)]
    if location.horizontal_accuracy is not None:
        fields.append("±%s m" % _fixed(location.horizontal_accuracy, 1))
    if location.speed is not None:
        fields.append("%s km/h" % _fixed(location.speed * 3.6, 1))
    if location.track is not None:
        fields.append("track %s°" % _fixed(location.track, 2))
    if location.heading is not None:
        fields.append("heading %s°" % _fixed(location.heading, 2))
    if location.accuracy == "reduced":
        fields.append("(reduced accuracy)")
    if location.device:
        fields.append("[%s]" % location.device)
    return "  ".join(fields)


def _authorization_options(parser):
    parser.add_argument("--authorization", choices=["once", "when-in-use", "always", "persistent"], default="once",
                        help="ask for 'once' (this connection only; the default), 'when-in-use' or 'always'")
    parser.add_argument("--accuracy", choices=["full", "reduced"], default="full",
                        help="the most precise this program wants (the daemon's rule may allow less)")
    parser.add_argument("--purpose", metavar="KEY",
                        help="then ask for temporary full accuracy, citing this purpose key")


def _authorize(manager, options):
    authorization = manager.request_authorization(options.authorization, options.accuracy)
    if options.purpose and authorization.accuracy != "full":
        authorization = manager.request_temporary_full_accuracy(options.purpose)
        if authorization.accuracy != "full":
            sys.stderr.write("locationd: temporary full accuracy for %r was not granted; continuing with %s accuracy\n"
                             % (options.purpose, authorization.accuracy))
    return authorization


def _get(manager, options):
    _authorize(manager, options)
    location = manager.request_location(timeout=options.timeout)
    print(json.dumps(location.raw, separators=(",", ":")) if options.json else human_line(location), flush=True)
    return EXIT_OK


def waiting_line(state):
    """A waiting ``FixState`` in plain words, with until when (as ``locationctl watch`` prints it)."""
    if state.waiting == "accuracyLimited" and state.next_report_in is not None:
        seconds = int(math.ceil(state.next_report_in))
        if seconds <= 0:
            return "waiting: reduced accuracy, next location with the next fix"
        hours, minutes, rest = seconds // 3600, seconds // 60 % 60, seconds % 60
        text = "%d h %d min %d s" % (hours, minutes, rest) if hours else ("%d min %d s" % (minutes, rest) if minutes else "%d s" % rest)
        return "waiting: reduced accuracy, next location in " + text
    if state.waiting == "insufficientlyInUse":
        return "waiting: When In Use, and you have no active login session; nothing until one is active"
    return "waiting: %s" % (state.reason or state.waiting)


def _watch(manager, options):
    _authorize(manager, options)
    printed = 0
    for item in manager.watch(min_interval=options.min_interval, distance_filter=options.distance_filter,
                              states=True):
        if options.json:
            print(json.dumps(item.raw, separators=(",", ":")), flush=True)
        elif hasattr(item, "fix") and item.waiting is not None:
            print(waiting_line(item), flush=True)
        elif hasattr(item, "fix"):
            print("fix acquired" if item.fix else "fix lost: %s" % (item.reason or "no fix"), flush=True)
        else:
            print(human_line(item), flush=True)
        if not hasattr(item, "fix"):
            printed += 1
            if options.count is not None and printed >= options.count:
                return EXIT_OK
    return EXIT_OK


def _status(manager, options):
    status = manager.status()
    authorization = manager.refresh_authorization()
    if options.json:
        print(json.dumps(status, separators=(",", ":")))
        print(json.dumps(authorization.raw, separators=(",", ":")))
        return EXIT_OK
    mode = {1: "no fix", 2: "2D", 3: "3D"}.get(status.get("mode"), "- (not shown to this client)")
    print("fix: %s   clients: %s   locationd %s" % (mode, status.get("clients", "?"), manager.version.get("release", "?")))
    line = "authorization: %s" % authorization.status
    if authorization.accuracy:
        line += ", %s accuracy" % authorization.accuracy
    if authorization.reason:
        line += " (%s)" % authorization.reason
    print(line)
    for receiver in status.get("receivers") or []:
        print("receiver %s: %s, %s, %s" % (receiver.get("name"), receiver.get("type"),
                                          receiver.get("state", "-"), receiver.get("path", "-")))
    return EXIT_OK


def _parser():
    parser = _Parser(prog="python3 -m locationd", description="A client of locationd.", epilog=EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--socket", metavar="PATH",
                        help="the daemon's socket (default: $LOCATIOND_SOCKET, else /run/locationd/locationd.sock)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True
    get = commands.add_parser("get", help="one fresh location", epilog=EPILOG)
    get.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for a fix, 0 < S <= 300 (10)")
    get.add_argument("--json", action="store_true", help="print the TPV object as received")
    _authorization_options(get)
    watch = commands.add_parser("watch", help="locations as they come", epilog=EPILOG)
    watch.add_argument("--count", type=int, help="exit after N locations")
    watch.add_argument("--json", action="store_true", help="print the TPV (and STATE) objects as received")
    watch.add_argument("--min-interval", type=float, default=0.0, metavar="S", help="at most one location every S seconds")
    watch.add_argument("--distance-filter", type=float, default=0.0, metavar="M",
                       help="only locations at least M metres from the last one")
    _authorization_options(watch)
    status = commands.add_parser("status", help="the daemon's state and this program's authorization", epilog=EPILOG)
    status.add_argument("--json", action="store_true", help="print the STATUS and AUTHORIZATION objects as received")
    for sub in (get, watch, status):
        sub.add_argument("--socket", metavar="PATH", default=argparse.SUPPRESS, help="the daemon's socket")
    return parser


def main(argv=None):
    options = _parser().parse_args(argv)
    if options.command == "get" and not 0 < options.timeout <= 300:
        sys.stderr.write("python3 -m locationd get: --timeout must be more than 0 and at most 300 seconds\n")
        return EXIT_USAGE
    if options.command == "watch" and options.count is not None and options.count < 1:
        sys.stderr.write("python3 -m locationd watch: --count must be at least 1\n")
        return EXIT_USAGE
    prefix = "locationd %s: " % options.command
    try:
        with LocationManager(options.socket, name="python3 -m locationd %s" % options.command) as manager:
            return {"get": _get, "watch": _watch, "status": _status}[options.command](manager, options)
    except NotAuthorized as error:
        sys.stderr.write(prefix + str(error) + "\n")
        return EXIT_NOPERM
    except Paced as error:
        sys.stderr.write(prefix + str(error) + "\n")
        return EXIT_PACED
    except (NoFix, Timeout) as error:
        sys.stderr.write(prefix + str(error) + "\n")
        return EXIT_TEMPFAIL
    except ProtocolMismatch as error:
        sys.stderr.write(prefix + str(error) + "\n")
        return EXIT_PROTOCOL
    except DaemonUnavailable as error:
        sys.stderr.write(prefix + str(error) + "\nIs locationd running? Name its socket with --socket PATH or LOCATIOND_SOCKET.\n")
        return EXIT_UNAVAILABLE
    except DaemonError as error:
        sys.stderr.write(prefix + str(error) + "\n")
        return EXIT_UNAVAILABLE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 74


if __name__ == "__main__":
    sys.exit(main())
