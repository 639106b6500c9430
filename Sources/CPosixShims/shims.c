#define _GNU_SOURCE 1
#include "CPosixShims.h"
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/sockios.h>

int locationd_tty_set_exclusive(int fd) { return ioctl(fd, TIOCEXCL); }

int locationd_tty_clear_exclusive(int fd) { return ioctl(fd, TIOCNXCL); }

int locationd_peer_credentials(int fd, int32_t *pid, uint32_t *uid, uint32_t *gid) {
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
    *pid = cred.pid;
    *uid = cred.uid;
    *gid = cred.gid;
    return 0;
}

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

int locationd_peer_pidfd(int fd) {
    int pidfd = -1;
    socklen_t len = sizeof(pidfd);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) != 0) return -1;
    return pidfd;
}

uint32_t locationd_speed_constant(uint32_t bps) {
    switch (bps) {
    case 1200: return B1200;
    case 2400: return B2400;
    case 4800: return B4800;
    case 9600: return B9600;
    case 19200: return B19200;
    case 38400: return B38400;
    case 57600: return B57600;
    case 115200: return B115200;
    case 230400: return B230400;
    case 460800: return B460800;
    case 921600: return B921600;
    default: return 0;
    }
}

int locationd_open_pty(char *name, size_t name_size) {
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (m < 0) return -1;
    if (grantpt(m) != 0 || unlockpt(m) != 0 || ptsname_r(m, name, name_size) != 0) {
        int saved = errno;
        close(m);
        errno = saved;
        return -1;
    }
    return m;
}

int locationd_accept(int fd) { return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC); }

int locationd_socket_unread_bytes(int fd) {
    int n = 0;
    if (ioctl(fd, SIOCOUTQ, &n) != 0) return -1;
    return n;
}

int locationd_pipe_cloexec_nonblock(int ends[2]) { return pipe2(ends, O_CLOEXEC | O_NONBLOCK); }

int locationd_file_identity(const char *path, uint64_t *device, uint64_t *inode) {
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    *device = st.st_dev;
    *inode = st.st_ino;
    return 0;
}

// LeakSanitizer's built-in suppressions, read by its runtime when the program is built with
// `--sanitize=address` (sanitizer_common's `__lsan_default_suppressions` hook); unused otherwise.
// Neither is a leak of locationd's (docs/FUZZING.md "Sanitizers"):
// - formWeakReference: a Swift object's weak-reference side table is pointed to only from the object's
//   refcount word, shifted and tagged (swift/RefCount.h), which LeakSanitizer cannot read as a pointer; every
//   object still alive at exit that was ever weakly referenced (`[weak self]`) is reported.
// - readBytesFromFile: swift-foundation's FileManager.contents(atPath:) loses 4 KB a call in this toolchain;
//   only the tests call it (locationd links no Foundation).
const char *__lsan_default_suppressions(void);
__attribute__((used, visibility("default")))
const char *__lsan_default_suppressions(void) {
    return "leak:formWeakReference\nleak:readBytesFromFile\n";
}

int locationd_set_malloc_arenas(int arenas) {
    return mallopt(M_ARENA_MAX, arenas);
}
