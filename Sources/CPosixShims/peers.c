// Peer identity beyond SO_PEERCRED: the owner of a TCP peer socket on this host (sock_diag, as ss(8)
// asks the kernel), pidfd_open(2), the peer's supplementary groups (SO_PEERGROUPS), and the writer of
// each read (SCM_CREDENTIALS). One kernel request each; the Swift side (LocationPosix) owns the error
// handling.
#define _GNU_SOURCE
#include "CPosixShims.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

/// Sends `request` (a netlink header and its sock_diag request, `length` bytes) to the kernel's
/// NETLINK_SOCK_DIAG and receives the reply into `reply`: the first answer, or NULL with errno (the
/// kernel's error; ENOENT when it has no such socket).
static struct nlmsghdr *sock_diag_ask(void *request, size_t length, struct nlmsghdr *reply, size_t capacity) {
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0) return NULL;
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (sendto(fd, request, length, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0) {
        int saved = errno; close(fd); errno = saved; return NULL;
    }
    ssize_t n;
    do { n = recv(fd, reply, capacity, 0); } while (n < 0 && errno == EINTR);
    int saved = errno;
    close(fd);
    if (n < 0) { errno = saved; return NULL; }
    for (struct nlmsghdr *h = reply; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
        if (h->nlmsg_type == NLMSG_ERROR) {
            struct nlmsgerr *error = NLMSG_DATA(h);
            errno = error->error ? -error->error : ENOENT;
            return NULL;
        }
        if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY) return h;
    }
    errno = ENOENT;
    return NULL;
}

int locationd_tcp_socket_owner(int family, const uint8_t *source, uint16_t source_port,
                               const uint8_t *destination, uint16_t destination_port,
                               uint32_t *uid, uint64_t *inode, uint32_t *unread) {
    if (family != AF_INET && family != AF_INET6) { errno = EAFNOSUPPORT; return -1; }
    struct {
        struct nlmsghdr header;
        struct inet_diag_req_v2 request;
    } message;
    memset(&message, 0, sizeof message);
    message.header.nlmsg_len = sizeof message;
    message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    message.header.nlmsg_flags = NLM_F_REQUEST;
    message.request.sdiag_family = (uint8_t)family;
    message.request.sdiag_protocol = IPPROTO_TCP;
    message.request.idiag_states = ~0U;
    message.request.id.idiag_sport = htons(source_port);
    message.request.id.idiag_dport = htons(destination_port);
    size_t length = family == AF_INET ? 4 : 16;
    memcpy(message.request.id.idiag_src, source, length);
    memcpy(message.request.id.idiag_dst, destination, length);
    message.request.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
    message.request.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    union { struct nlmsghdr header; char bytes[8192]; } reply;
    struct nlmsghdr *answer = sock_diag_ask(&message, sizeof message, &reply.header, sizeof reply);
    if (answer == NULL) return -1;
    struct inet_diag_msg *found = NLMSG_DATA(answer);
    *uid = found->idiag_uid;
    *inode = found->idiag_inode;
    *unread = found->idiag_rqueue;
    return 0;
}

int locationd_unix_peer_inode(uint64_t inode, uint64_t *peer_inode) {
    struct {
        struct nlmsghdr header;
        struct unix_diag_req request;
    } message;
    memset(&message, 0, sizeof message);
    message.header.nlmsg_len = sizeof message;
    message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    message.header.nlmsg_flags = NLM_F_REQUEST;
    message.request.sdiag_family = AF_UNIX;
    message.request.udiag_states = ~0U;
    message.request.udiag_ino = (uint32_t)inode;
    message.request.udiag_show = UDIAG_SHOW_PEER;
    message.request.udiag_cookie[0] = INET_DIAG_NOCOOKIE;
    message.request.udiag_cookie[1] = INET_DIAG_NOCOOKIE;
    union { struct nlmsghdr header; char bytes[8192]; } reply;
    struct nlmsghdr *answer = sock_diag_ask(&message, sizeof message, &reply.header, sizeof reply);
    if (answer == NULL) return -1;
    struct unix_diag_msg *found = NLMSG_DATA(answer);
    int remaining = (int)(answer->nlmsg_len - NLMSG_LENGTH(sizeof *found));
    for (struct rtattr *a = (struct rtattr *)(found + 1); RTA_OK(a, remaining); a = RTA_NEXT(a, remaining)) {
        if (a->rta_type == UNIX_DIAG_PEER) {
            *peer_inode = *(uint32_t *)RTA_DATA(a);
            return 0;
        }
    }
    errno = ENOENT;
    return -1;
}

int locationd_pidfd_open(int32_t pid) {
    return (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
}

int locationd_peer_groups(int fd, uint32_t *gids, int capacity) {
    socklen_t length = (socklen_t)(capacity * (int)sizeof(uint32_t));
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, gids, &length) != 0) return -1;
    return (int)(length / sizeof(uint32_t));
}

int locationd_file_owner(const char *path, uint32_t *uid) {
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    *uid = st.st_uid;
    return 0;
}

int locationd_path_status(const char *path, uint64_t *device, uint64_t *inode, uint32_t *uid, uint32_t *mode) {
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    *device = st.st_dev;
    *inode = st.st_ino;
    *uid = st.st_uid;
    *mode = st.st_mode;
    return 0;
}

int locationd_pass_credentials(int fd) {
    int on = 1;
    return setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
}

long locationd_receive_with_sender(int fd, void *buffer, size_t length, int32_t *pid) {
    struct iovec io = {.iov_base = buffer, .iov_len = length};
    union { struct cmsghdr align; char bytes[CMSG_SPACE(sizeof(struct ucred))]; } control;
    struct msghdr message = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = &control, .msg_controllen = sizeof control};
    ssize_t n = recvmsg(fd, &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0) return -1;
    *pid = -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS && c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
            struct ucred credentials;
            memcpy(&credentials, CMSG_DATA(c), sizeof credentials);
            *pid = credentials.pid;
        }
    }
    return n;
}

long locationd_read_process_memory(int pid, uint64_t address, void *buffer, size_t length) {
    struct iovec local = { buffer, length };
    struct iovec remote = { (void *)(uintptr_t)address, length };
    return process_vm_readv(pid, &local, 1, &remote, 1, 0);
}

#include <sys/statvfs.h>

int locationd_peer_security_label(int fd, char *buffer, size_t capacity) {
    socklen_t length = (socklen_t)capacity;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERSEC, buffer, &length) != 0) return -1;
    return (int)length;
}

int locationd_open_beneath(int directory, const char *name, int flags) {
    return openat(directory, name, flags | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
}

int locationd_file_status(int fd, uint64_t *device, uint64_t *inode, uint32_t *mode, int64_t *size, int *read_only_mount) {
    struct stat st;
    if (fstat(fd, &st) != 0) return -1;
    struct statvfs vfs;
    if (fstatvfs(fd, &vfs) != 0) return -1;
    *device = (uint64_t)st.st_dev;
    *inode = (uint64_t)st.st_ino;
    *mode = (uint32_t)st.st_mode;
    *size = (int64_t)st.st_size;
    *read_only_mount = (vfs.f_flag & ST_RDONLY) != 0;
    return 0;
}

long locationd_same_file_table(int pid, int other) {
    /* kcmp(2) KCMP_FILES: 0 when the two tasks share one descriptor table. */
    return syscall(SYS_kcmp, pid, other, 2 /* KCMP_FILES */, 0, 0);
}
