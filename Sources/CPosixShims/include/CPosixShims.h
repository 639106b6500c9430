// Thin C shims for POSIX calls Swift cannot import directly (variadic ioctl, struct ucred and
// posix_openpt behind _GNU_SOURCE/_XOPEN_SOURCE). Each is one call with no logic; the Swift side
// (LocationPosix) owns the error handling. The header includes no system header, so that it does not
// disagree with the Glibc module about feature macros.
#ifndef LOCATIOND_CPOSIXSHIMS_H
#define LOCATIOND_CPOSIXSHIMS_H

#include <stddef.h>
#include <stdint.h>

/// ioctl(fd, TIOCEXCL): no further open(2) of this tty, except by root. -1 with errno on failure.
int locationd_tty_set_exclusive(int fd);

/// ioctl(fd, TIOCNXCL): undo TIOCEXCL.
int locationd_tty_clear_exclusive(int fd);

/// getsockopt(fd, SOL_SOCKET, SO_PEERCRED): the peer's pid, uid and gid. 0, or -1 with errno.
int locationd_peer_credentials(int fd, int32_t *pid, uint32_t *uid, uint32_t *gid);

/// getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD) (Linux 6.5+): a pidfd, or -1 with errno (ENOPROTOOPT
/// where the kernel does not have it).
int locationd_peer_pidfd(int fd);

/// The termios speed constant (B4800 ...) for a line speed in bit/s; 0 when there is none.
uint32_t locationd_speed_constant(uint32_t bits_per_second);

/// accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC) (a GNU extension).
int locationd_accept(int fd);

/// ioctl(fd, SIOCOUTQ): bytes written to a socket that its peer has not read yet; -1 with errno.
int locationd_socket_unread_bytes(int fd);

/// posix_openpt(O_RDWR|O_NOCTTY|O_CLOEXEC) + grantpt + unlockpt + ptsname_r: the master fd, the slave
/// path in `name`. -1 with errno on failure.
int locationd_open_pty(char *name, size_t name_size);

/// pipe2(ends, O_CLOEXEC | O_NONBLOCK) (a GNU extension): ends[0] reads, ends[1] writes. -1 with errno.
int locationd_pipe_cloexec_nonblock(int ends[2]);

/// stat(2), following links: the device and inode of the file at `path`. 0, or -1 with errno. (Swift
/// imports `stat` as the struct only.)
int locationd_file_identity(const char *path, uint64_t *device, uint64_t *inode);

#endif
