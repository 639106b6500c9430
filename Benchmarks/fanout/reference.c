/*
 * Reference fan-out server for Benchmarks/fanout-latency.sh: the least a daemon can do, to calibrate the
 * harness. Not a GNSS daemon: it reads the pty, and each time a read ends on a line boundary after a
 * timed sentence (GGA/RMC/GLL/GNS/ZDA) of a new epoch, it send()s one fixed ~230-byte TPV line carrying
 * that time to every client, in accept order, from one single-threaded epoll loop. It answers any request
 * line containing WATCH with a WATCH line. Its delays are the floor of what the harness can measure on
 * the machine (pty wake-up, one send() per client, the harness reading N sockets in one process).
 *
 * Built with -DURING (and -luring, Debian's liburing-dev), it queues the epoch's sends on an io_uring
 * instead — one IORING_OP_SEND per client on registered descriptors, all submitted by one
 * io_uring_enter — to see whether per-call overhead (the system call, the descriptor look-up) is what
 * bounds a fan-out; Benchmarks/README.md has the answer on our machine (it is not).
 *
 * usage: reference SOCKET-PATH PTY-PATH
 * Build: gcc -O2 -Wall -o reference reference.c     (io_uring: add -DURING ... -luring)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>
#ifdef URING
#include <liburing.h>
#endif

static int timed_sentence_time(const char *line, size_t length, char out[16]) {
    if (length < 8 || line[0] != '$') return 0;
    const char *type = line + 3;
    int field;
    if (!memcmp(type, "GGA,", 4) || !memcmp(type, "RMC,", 4) || !memcmp(type, "GNS,", 4) || !memcmp(type, "ZDA,", 4))
        field = 1;
    else if (!memcmp(type, "GLL,", 4))
        field = 5;
    else
        return 0;
    const char *p = line, *end = line + length;
    for (int f = 0; f < field; f++) {
        p = memchr(p, ',', (size_t)(end - p));
        if (!p) return 0;
        p++;
    }
    size_t k = 0;
    while (p < end && *p != ',' && *p != '*' && k < 15) out[k++] = *p++;
    out[k] = 0;
    return k >= 6;
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: reference SOCKET-PATH PTY-PATH\n"); return 64; }
    int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    snprintf(a.sun_path, sizeof a.sun_path, "%s", argv[1]);
    unlink(argv[1]);
    if (bind(listener, (struct sockaddr *)&a, sizeof a) != 0 || listen(listener, 128) != 0) { perror("bind/listen"); return 1; }
    int pty = open(argv[2], O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (pty < 0) { perror(argv[2]); return 1; }
    struct termios tio;
    tcgetattr(pty, &tio);
    cfmakeraw(&tio);
    tcsetattr(pty, TCSANOW, &tio);

    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = listener };
    epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev);
    ev.data.fd = pty;
    epoll_ctl(ep, EPOLL_CTL_ADD, pty, &ev);

#ifdef URING
    /* A sparse table of registered files indexed by descriptor number; completions only for failures. */
    struct io_uring ring;
    struct io_uring_params params = { .flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQSIZE,
                                      .cq_entries = 4096 };
    int ur = io_uring_queue_init_params(2048, &ring, &params);
    if (ur == 0) ur = io_uring_register_files_sparse(&ring, 4096);
    if (ur < 0) { fprintf(stderr, "io_uring: %s\n", strerror(-ur)); return 1; }
#endif
    int capacity = 1024, count = 0;
    int *clients = malloc((size_t)capacity * sizeof *clients);
    static char buf[65536], pending[65536];
    size_t have = 0;
    char current[16] = "", reported[16] = "";
    struct epoll_event events[256];
    for (;;) {
        int n = epoll_wait(ep, events, 256, -1);
        if (n < 0 && errno != EINTR) { perror("epoll_wait"); return 1; }
        for (int i = 0; i < n; i++) {
            int fd = events[i].data.fd;
            if (fd == listener) {
                int c;
                while ((c = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    if (count == capacity) clients = realloc(clients, (size_t)(capacity *= 2) * sizeof *clients);
                    clients[count++] = c;
                    ev.data.fd = c;
                    epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
#ifdef URING
                    if (c < 4096) io_uring_register_files_update(&ring, (unsigned)c, &c, 1);
#endif
                    (void)!write(c, "{\"class\":\"VERSION\",\"release\":\"reference\"}\n", 43);
                }
            } else if (fd == pty) {
                ssize_t r = read(pty, buf, sizeof buf);
                if (r <= 0) continue;
                if (have + (size_t)r > sizeof pending) have = 0;
                memcpy(pending + have, buf, (size_t)r);
                have += (size_t)r;
                size_t start = 0;
                for (size_t k = 0; k < have; k++) {
                    if (pending[k] != '\n') continue;
                    char t[16];
                    if (timed_sentence_time(pending + start, k - start, t)) strcpy(current, t);
                    start = k + 1;
                }
                memmove(pending, pending + start, have - start);
                have -= start;
                if (have == 0 && current[0] && strcmp(current, reported) != 0) {
                    strcpy(reported, current);
                    static char line[512];  /* static: an io_uring send may outlive this block */
                    int length = snprintf(line, sizeof line,
                        "{\"class\":\"TPV\",\"device\":\"gnss0\",\"mode\":3,\"time\":\"2000-01-01T%.2s:%.2s:%sZ\","
                        "\"lat\":50.840191667,\"lon\":4.347088333,\"altHAE\":153.79,\"altMSL\":108,\"geoidSep\":45.79,"
                        "\"speed\":0.0051,\"track\":88.63,\"eph\":28.5,\"epv\":46,\"accuracy\":\"full\"}\n",
                        current, current + 2, current + 4);
#ifdef URING
                    for (int c = 0; c < count; c++) {
                        struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
                        if (!sqe) { io_uring_submit(&ring); sqe = io_uring_get_sqe(&ring); }
                        io_uring_prep_send(sqe, clients[c], line, (size_t)length, MSG_NOSIGNAL | MSG_DONTWAIT);
                        sqe->flags |= IOSQE_FIXED_FILE | IOSQE_CQE_SKIP_SUCCESS;
                    }
                    io_uring_submit(&ring);
                    struct io_uring_cqe *cqe;
                    unsigned head, seen = 0;
                    io_uring_for_each_cqe(&ring, head, cqe) seen++;
                    io_uring_cq_advance(&ring, seen);
#else
                    for (int c = 0; c < count; c++) (void)!send(clients[c], line, (size_t)length, MSG_NOSIGNAL | MSG_DONTWAIT);
#endif
                }
            } else {
                ssize_t r = read(fd, buf, sizeof buf);
                if (r > 0 && memmem(buf, (size_t)r, "WATCH", 5))
                    (void)!write(fd, "{\"class\":\"WATCH\",\"enable\":true}\n", 32);
                if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
                    for (int c = 0; c < count; c++)
                        if (clients[c] == fd) clients[c] = clients[--count];
                    epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
                    close(fd);
                }
            }
        }
    }
}
