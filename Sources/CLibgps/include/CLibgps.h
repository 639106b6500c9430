// The libgps API (gps.h) for Swift, plus the few helpers Swift cannot import as they stand.
// Written against gpsd 3.22 (GPSD_API_MAJOR_VERSION 11, Debian 12's libgps-dev).
//
// libgps is loaded when a gpsd receiver is configured (loader.c), not linked: a daemon reading a serial
// port or a replay maps neither it nor what it brings (libstdc++ 1.0 MiB resident, libdbus).
#ifndef CLIBGPS_H
#define CLIBGPS_H

#include <gps.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#if GPSD_API_MAJOR_VERSION < 9
#error "locationd needs libgps API 9 or later (gpsd >= 3.19: timespec fix times, altHAE/altMSL)"
#endif

/// The library's file name: its soname for the API version of the gps.h compiled against. gps_data_t's
/// layout is fixed by that version, so no other soname may be loaded in its place.
#if GPSD_API_MAJOR_VERSION == 11
#define LOCATIOND_LIBGPS_LIBRARY "libgps.so.28"
#else
#error "the libgps soname for this GPSD_API_MAJOR_VERSION is not known: add it here (objdump -p libgps.so | grep SONAME)"
#endif

/// Loads libgps and resolves the functions the gpsd receiver calls, once (thread-safe; later calls return
/// the first outcome). Returns NULL when loaded, else why not (dlerror(3)'s text, kept for the process).
/// The `gps_*` functions below load it themselves on first use; a caller that wants the reason calls this.
const char *locationd_libgps_load(void);

// Swift imports gps.h's constants (WATCH_*, *_SET, MODE_*) as they are; only calls need helpers here.

/// gps_stream(3) with SIGPIPE blocked on the calling thread: if gpsd has already closed the connection,
/// the write fails with EPIPE instead of killing the process. A SIGPIPE this call raised is consumed;
/// one that was pending before stays pending. Returns gps_stream's result, errno preserved.
static inline int clibgps_stream(struct gps_data_t *data, unsigned int flags, const char *device) {
    sigset_t pipe_only, previous, pending;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &previous);
    sigpending(&pending);
    int was_pending = sigismember(&pending, SIGPIPE);
    int status = gps_stream(data, flags, (void *)device);
    int saved = errno;
    if (status != 0 && !was_pending) {
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE)) {
            struct timespec zero = {0, 0};
            while (sigtimedwait(&pipe_only, NULL, &zero) < 0 && errno == EINTR) {}
        }
    }
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    errno = saved;
    return status;
}

/// One TCP connection attempt to host:port that waits at most `timeout_ms` per address, then closes
/// the socket. gps_open(3) connects with a blocking connect(2) (minutes for a host that does not answer)
/// and reports every failure as NL_NOCONNECT; this says why, within a bound.
/// Returns 0 when a connection succeeded, the errno of the last attempt otherwise (ECONNREFUSED,
/// ETIMEDOUT, ENETUNREACH, ...), or -1 when the host does not resolve.
static inline int clibgps_probe_connect(const char *host, const char *port, int timeout_ms) {
    struct addrinfo hints, *list = NULL, *ai;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &list) != 0 || list == NULL) {
        return -1;
    }
    int result = ECONNREFUSED;
    for (ai = list; ai != NULL; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            result = errno;
            continue;
        }
        int status = connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (status == 0) {
            result = 0;
        } else if (errno == EINPROGRESS) {
            struct pollfd p = {fd, POLLOUT, 0};
            int ready;
            do { ready = poll(&p, 1, timeout_ms); } while (ready < 0 && errno == EINTR);
            if (ready == 0) {
                result = ETIMEDOUT;
            } else {
                int error = 0;
                socklen_t length = sizeof error;
                result = getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 ? error : errno;
            }
        } else {
            result = errno;
        }
        close(fd);
        if (result == 0) {
            break;
        }
    }
    freeaddrinfo(list);
    return result;
}

#endif
