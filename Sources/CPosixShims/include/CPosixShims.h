// Thin C shims for POSIX calls Swift cannot import directly (variadic ioctl, struct ucred and
// posix_openpt behind _GNU_SOURCE/_XOPEN_SOURCE). Each is one call with no logic; the Swift side
// (LocationPosix) owns the error handling. The header includes no system header, so that it does not
// disagree with the Glibc module about feature macros.
#ifndef LOCATIOND_CPOSIXSHIMS_H
#define LOCATIOND_CPOSIXSHIMS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>

/// mallopt(M_ARENA_MAX, arenas): how many malloc arenas glibc may make (one per allocating thread by
/// default, up to 8 per core). Returns mallopt's result (1 on success).
int locationd_set_malloc_arenas(int arenas);

/// Installs one handler (sigaction, SA_RESTART) for each of `signals[0..<count]` that writes the signal's
/// number, one byte, to `write_fd` (a non-blocking pipe): the self-pipe that LocationPosix.SignalPipe reads.
/// Async-signal-safe: write(2) only, errno kept. 0, or -1 with errno from sigaction.
int locationd_signal_pipe_install(int write_fd, const int *signals, int count);

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

/// epoll_create1(EPOLL_CLOEXEC).
int locationd_epoll_create(void);
/// epoll_ctl(2) with an event of `events` (EPOLLIN, EPOLLOUT, ...) carrying `tag` (epoll_data.u64).
int locationd_epoll_control(int epfd, int operation, int fd, uint32_t events, uint64_t tag);
/// epoll_wait(2) for at most `capacity` (≤ 64) events: their tags and event bits, in order; the count, or
/// -1 with errno.
int locationd_epoll_wait(int epfd, uint64_t *tags, uint32_t *events, int capacity, int timeout);
/// eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK).
int locationd_eventfd(void);
/// timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC | TFD_NONBLOCK): the clock `ContinuousClock` reads on Linux.
int locationd_timerfd(void);
/// timerfd_settime(fd, 0, ...): expires once, `seconds` + `nanoseconds` from now (all zero disarms it).
/// 0, or -1 with errno.
int locationd_timerfd_set(int fd, int64_t seconds, long nanoseconds);

/// posix_openpt(O_RDWR|O_NOCTTY|O_CLOEXEC) + grantpt + unlockpt + ptsname_r: the master fd, the slave
/// path in `name`. -1 with errno on failure.
int locationd_open_pty(char *name, size_t name_size);

/// pipe2(ends, O_CLOEXEC | O_NONBLOCK) (a GNU extension): ends[0] reads, ends[1] writes. -1 with errno.
int locationd_pipe_cloexec_nonblock(int ends[2]);

/// stat(2), following links: the device and inode of the file at `path`. 0, or -1 with errno. (Swift
/// imports `stat` as the struct only.)
int locationd_file_identity(const char *path, uint64_t *device, uint64_t *inode);

/// sock_diag (NETLINK_SOCK_DIAG, as ss(8) asks): the owning uid and inode of the TCP socket on this host
/// whose local end is `source`:`source_port` and remote end `destination`:`destination_port`
/// (`family` AF_INET: 4-byte addresses, AF_INET6: 16; network byte order; ports in host order).
/// 0, or -1 with errno (ENOENT: no such socket). `unread`: the bytes in that socket's receive queue its
/// owner has not read (inet_diag `idiag_rqueue`).
int locationd_tcp_socket_owner(int family, const uint8_t *source, uint16_t source_port,
                               const uint8_t *destination, uint16_t destination_port,
                               uint32_t *uid, uint64_t *inode, uint32_t *unread);

/// sock_diag for AF_UNIX: the inode of the socket connected to the Unix socket with inode `inode` (its
/// peer's end; fstat(2) of our end gives `inode`). 0, or -1 with errno.
int locationd_unix_peer_inode(uint64_t inode, uint64_t *peer_inode);

/// pidfd_open(pid, 0) (Linux 5.3+): a descriptor that pins the process; -1 with errno.
int locationd_pidfd_open(int32_t pid);

/// getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS) (Linux 4.13+): the peer's supplementary group ids, as the
/// kernel saw them when it connected. Returns how many (at most `capacity`), or -1 with errno (ERANGE:
/// more than `capacity`).
int locationd_peer_groups(int fd, uint32_t *gids, int capacity);

/// setsockopt(fd, SOL_SOCKET, SO_PASSCRED, 1): the kernel attaches the writer's credentials to what is
/// written to this Unix socket from now on (on a listening socket: to its connections from the start).
int locationd_pass_credentials(int fd);

/// recvmsg(2) on a Unix stream socket with SO_PASSCRED, without blocking: the bytes, and in `pid` the
/// process that wrote them (the kernel never joins two writers' bytes in one read); -1 when none was
/// attached. Returns the count, or -1 with errno.
long locationd_receive_with_sender(int fd, void *buffer, size_t length, int32_t *pid);

/// stat(2), following links: the owner uid of the file at `path`. 0, or -1 with errno.
int locationd_file_owner(const char *path, uint32_t *uid);
/* kcmp(2) with KCMP_FILES: 0 when tasks `pid` and `other` share one descriptor table, 1 or 2 when not, -1 with
   errno when the kernel cannot say (no kcmp, or no ptrace read access). */
long locationd_same_file_table(int pid, int other);
/* process_vm_readv(2) of one range of another process's memory (needs ptrace attach access). */
long locationd_read_process_memory(int pid, uint64_t address, void *buffer, size_t length);
/* stat(2), following links: device, inode, owner uid and mode (type and permission bits). */
int locationd_path_status(const char *path, uint64_t *device, uint64_t *inode, uint32_t *uid, uint32_t *mode);

/// Under ThreadSanitizer, `__tsan_acquire(address)` / `__tsan_release(address)`: tell it that the
/// critical section of the lock at `address` begins / ends, so that two of them are ordered even when
/// the lock's own wait and wake happened in code it cannot see (a futex system call). No-ops in any
/// other build (the runtime's functions are weak references, null without it).
void locationd_tsan_acquire(void *address);
void locationd_tsan_release(void *address);

/// getsockopt(fd, SOL_SOCKET, SO_PEERSEC): the security label of the peer of a Unix socket as its LSM
/// writes it (AppArmor: `snap.firefox.firefox (enforce)`, `unconfined`), into `buffer`. Returns its
/// length in bytes (a trailing NUL may be counted), or -1 with errno (ENOPROTOOPT: no LSM gives labels;
/// ERANGE: `capacity` is too small).
int locationd_peer_security_label(int fd, char *buffer, size_t capacity);

/// openat(directory, name, flags | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW): a name looked up beneath an open
/// directory, never through a symbolic link at its last component (ELOOP). -1 with errno.
int locationd_open_beneath(int directory, const char *name, int flags);

/// fstat(2) and fstatvfs(3) of an open file: its device, inode, mode (type and permission bits), size in
/// bytes, and whether the mount it is on is read-only (ST_RDONLY). 0, or -1 with errno.
int locationd_file_status(int fd, uint64_t *device, uint64_t *inode, uint32_t *mode, int64_t *size, int *read_only_mount);

#endif
