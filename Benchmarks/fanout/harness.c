/*
 * Fan-out latency harness for Benchmarks/fanout-latency.sh.
 *
 * One process, one epoll loop. It
 *   1. splits an NMEA capture into epochs (a new epoch starts at each GGA/RMC/GLL/GNS/ZDA whose UTC
 *      time differs from the current epoch's; lines before the first timed sentence are dropped),
 *   2. opens a pseudo-terminal (posix_openpt), puts it in raw mode, keeps the slave open, and writes
 *      the slave's path to --pty-file (the script then starts the daemon on that path),
 *   3. waits for the daemon's PID in --pid-file, connects --clients clients to --unix PATH or
 *      --tcp HOST:PORT, sends each the WATCH request, and waits until every client got its WATCH reply,
 *   4. replays the epochs at one per --period-ms (default 100 ms, i.e. 10 Hz): one write() of the whole
 *      epoch to the pty master; the CLOCK_MONOTONIC time after the write returned is the epoch's time,
 *   5. after each write, waits until the clients' sockets report new bytes (epoll, edge-triggered;
 *      polled without sleeping with --spin yes) and stamps each with the time of its last report, then
 *      reads them all; a TPV that was the last line a client had is stamped with that report time
 *      (--stamp ready, the default: when the TPV was in the client's socket, whatever the harness's own
 *      reading of N sockets costs), any other line with the time the read that completed it returned
 *      (--stamp read: every line so); each TPV is matched to its epoch by its "time" (time of day, ms)
 *      against the epoch's NMEA time, searching back from the last epoch written,
 *   6. after --warmup epochs, measures --epochs epochs: delay = first TPV of the epoch at a client minus
 *      the epoch's write time, over all clients and epochs; the daemon's CPU over the measured window,
 *      which runs from the write of the first measured epoch to one period after the write of the last:
 *      utime+stime from /proc/PID/stat, and the same sum at ns resolution from the daemon's process
 *      CPU-time clock (clock_getcpuclockid; the figure reported as cpu_pct); its VmRSS and RssAnon
 *      (/proc/PID/status) sampled every period, half-way between writes, the largest counting; and, as a
 *      check on the measurement, the CPU the harness itself and every other process used meanwhile
 *      (/proc/stat busy time minus daemon and harness).
 *
 * Prints a human-readable report on stderr and one machine-readable "RESULT key=value ..." line on
 * stdout. Exits non-zero when something failed (daemon gone, a client refused or closed, no TPV).
 * Bounded: every wait has a deadline, and alarm() ends the process if the loop ever hangs.
 *
 * --dump FILE writes "epoch client first-delay-ms last-delay-ms" for every measured client-epoch.
 *
 * Build: gcc -O2 -Wall -o harness harness.c -lm
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define LINE_MAX_BYTES 16384

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "harness: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s) {
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* ---------- capture ---------- */

struct epoch {
    char *bytes;
    size_t length, capacity;
    int time_ms;        /* UTC time of day, ms */
    double written;     /* CLOCK_MONOTONIC after the write returned; 0 = not yet */
};

static struct epoch *epochs;
static int epoch_count;

/* "hhmmss[.fff...]" at p (up to end) -> ms of day, or -1. */
static int parse_hms(const char *p, const char *end) {
    if (end - p < 6) return -1;
    for (int i = 0; i < 6; i++) if (p[i] < '0' || p[i] > '9') return -1;
    int h = (p[0] - '0') * 10 + (p[1] - '0');
    int m = (p[2] - '0') * 10 + (p[3] - '0');
    int s = (p[4] - '0') * 10 + (p[5] - '0');
    double frac = 0, scale = 0.1;
    p += 6;
    if (p < end && *p == '.') {
        for (p++; p < end && *p >= '0' && *p <= '9'; p++, scale /= 10) frac += (*p - '0') * scale;
    }
    return ((h * 60 + m) * 60 + s) * 1000 + (int)lround(frac * 1000);
}

/* The UTC time of a timed NMEA sentence (GGA, RMC, GNS, ZDA: field 1; GLL: field 5), or -1. */
static int sentence_time(const char *line, size_t length) {
    if (length < 7 || line[0] != '$') return -1;
    const char *type = line + 3;
    int field;
    if (!memcmp(type, "GGA,", 4) || !memcmp(type, "RMC,", 4) || !memcmp(type, "GNS,", 4) || !memcmp(type, "ZDA,", 4))
        field = 1;
    else if (!memcmp(type, "GLL,", 4))
        field = 5;
    else
        return -1;
    const char *end = line + length, *p = line;
    for (int f = 0; f < field; f++) {
        p = memchr(p, ',', (size_t)(end - p));
        if (!p) return -1;
        p++;
    }
    const char *q = p;
    while (q < end && *q != ',' && *q != '*') q++;
    return parse_hms(p, q);
}

static void load_capture(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) die("cannot open capture %s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = malloc((size_t)size + 1);
    if (fread(data, 1, (size_t)size, f) != (size_t)size) die("short read on %s", path);
    fclose(f);

    int capacity = 64;
    epochs = calloc((size_t)capacity, sizeof *epochs);
    int current = -1;  /* index of the epoch being filled; -1 = before the first timed sentence */
    for (char *p = data, *end = data + size; p < end;) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *next = nl ? nl + 1 : end;
        size_t length = (size_t)(next - p);
        if (*p != '#') {
            int t = sentence_time(p, length);
            if (t >= 0 && (current < 0 || t != epochs[current].time_ms)) {
                if (++current == capacity) {
                    capacity *= 2;
                    epochs = realloc(epochs, (size_t)capacity * sizeof *epochs);
                }
                memset(&epochs[current], 0, sizeof epochs[current]);
                epochs[current].time_ms = t;
            }
            if (current >= 0) {
                struct epoch *e = &epochs[current];
                if (e->length + length > e->capacity) {
                    e->capacity = 2 * (e->length + length) + 1024;
                    e->bytes = realloc(e->bytes, e->capacity);
                    if (!e->bytes) die("out of memory");
                }
                memcpy(e->bytes + e->length, p, length);
                e->length += length;
            }
        }
        p = next;
    }
    epoch_count = current + 1;
    free(data);
}

/* ---------- daemon statistics ---------- */

static pid_t daemon_pid;

static long long daemon_ticks(void) {  /* utime + stime, clock ticks; -1 if gone */
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)daemon_pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    char *p = strrchr(buf, ')');  /* comm may contain spaces */
    if (!p) return -1;
    /* after ")": state(3) ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime(14) stime(15) */
    unsigned long long utime, stime;
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2) return -1;
    return (long long)(utime + stime);
}

static long daemon_status_kb(const char *key) {  /* e.g. "VmRSS:" -> kB; -1 if gone */
    char path[64], buf[8192];
    snprintf(path, sizeof path, "/proc/%d/status", (int)daemon_pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    char *p = strstr(buf, key);
    return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

/* The daemon's CPU time, seconds, from its process CPU-time clock (ns resolution; all threads, also
 * exited ones: the same sum as utime+stime); -1 if unavailable. */
static double daemon_cpu_seconds(void) {
    clockid_t clock;
    struct timespec ts;
    if (clock_getcpuclockid(daemon_pid, &clock) != 0 || clock_gettime(clock, &ts) != 0) return -1;
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The machine's busy and steal time, seconds summed over CPUs, from the first line of /proc/stat. */
static void machine_cpu_seconds(double *busy, double *steal) {
    unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, stolen = 0;
    FILE *f = fopen("/proc/stat", "r");
    if (f) {
        if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system, &idle, &iowait, &irq,
                   &softirq, &stolen) < 4)
            user = nice = system = irq = softirq = stolen = 0;
        fclose(f);
    }
    double tick = (double)sysconf(_SC_CLK_TCK);
    *busy = (double)(user + nice + system + irq + softirq) / tick;
    *steal = (double)stolen / tick;
}

static double self_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int daemon_threads(void) {
    long n = daemon_status_kb("Threads:");
    return (int)n;
}

/* ---------- clients ---------- */

struct client {
    int fd;
    int subscribed;     /* got the WATCH reply */
    int closed;
    size_t have;        /* bytes of an incomplete line in buf */
    long long last_tpv_slot;  /* slot of the last line read if it was a TPV, else -1 */
    char buf[LINE_MAX_BYTES];
};

static struct client *clients;
static int client_count;
/* Per client and epoch: first and last TPV arrival, and how many TPVs (row = client). */
static double *first_at, *last_at;
static unsigned short *tpv_count;
static long long unmatched_tpvs, tpvs_without_time, lines_total;
static int last_written = -1;

static const char *opt_unix, *opt_tcp;

static int connect_once(void) {
    int fd;
    if (opt_unix) {
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        if (strlen(opt_unix) >= sizeof a.sun_path) die("socket path too long");
        strcpy(a.sun_path, opt_unix);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) die("socket: %s", strerror(errno));
        if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) { close(fd); return -1; }
    } else {
        char host[256];
        const char *colon = strrchr(opt_tcp, ':');
        if (!colon || (size_t)(colon - opt_tcp) >= sizeof host) die("--tcp wants HOST:PORT");
        memcpy(host, opt_tcp, (size_t)(colon - opt_tcp));
        host[colon - opt_tcp] = 0;
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1)) };
        if (inet_pton(AF_INET, host, &a.sin_addr) != 1) die("--tcp host must be an IPv4 address");
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) die("socket: %s", strerror(errno));
        if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) { close(fd); return -1; }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return fd;
}

static int find_epoch(int time_ms) {  /* the latest written epoch with this time, or -1 */
    for (int j = last_written; j >= 0; j--)
        if (epochs[j].time_ms == time_ms) return j;
    return -1;
}

static void handle_line(int c, const char *line, size_t length, double at) {
    lines_total++;
    clients[c].last_tpv_slot = -1;
    if (!memmem(line, length, "\"class\":\"TPV\"", 13)) {
        if (!clients[c].subscribed && memmem(line, length, "\"class\":\"WATCH\"", 15)) clients[c].subscribed = 1;
        return;
    }
    const char *t = memmem(line, length, "\"time\":\"", 8);
    if (!t || (size_t)(line + length - t) < 8 + 19) { tpvs_without_time++; return; }
    t += 8 + 11;  /* skip "time":" and YYYY-MM-DDT */
    /* HH:MM:SS[.fff] -> hhmmss.fff */
    char hms[32];
    size_t k = 0;
    const char *end = line + length;
    for (const char *p = t; p < end && *p != '"' && *p != 'Z' && k < sizeof hms - 1; p++)
        if (*p != ':') hms[k++] = *p;
    hms[k] = 0;
    int ms = parse_hms(hms, hms + k);
    int j = ms < 0 ? -1 : find_epoch(ms);
    if (j < 0) { unmatched_tpvs++; return; }
    size_t slot = (size_t)c * (size_t)epoch_count + (size_t)j;
    if (tpv_count[slot] == 0) first_at[slot] = at;
    last_at[slot] = at;
    if (tpv_count[slot] < 65535) tpv_count[slot]++;
    clients[c].last_tpv_slot = (long long)slot;
}

static int epfd;
static int closed_clients;
static char readbuf[65536];

/* Reads client c until EAGAIN (its descriptor is edge-triggered), stamping each line with the time the
 * read that completed it returned. */
static void read_client(int c) {
    struct client *cl = &clients[c];
    for (;;) {
        ssize_t n = read(cl->fd, readbuf, sizeof readbuf);
        double at = now_s();
        if (n < 0) {
            if (errno == EAGAIN) return;
            if (errno == EINTR) continue;
            fprintf(stderr, "harness: client %d: read: %s\n", c, strerror(errno));
        }
        if (n <= 0) {
            if (n == 0 && cl->have) fprintf(stderr, "harness: client %d closed; last bytes: %.*s\n", c, (int)cl->have, cl->buf);
            epoll_ctl(epfd, EPOLL_CTL_DEL, cl->fd, NULL);
            close(cl->fd);
            cl->closed = 1;
            closed_clients++;
            return;
        }
        size_t start = 0;
        for (size_t i = 0; i < (size_t)n; i++) {
            if (readbuf[i] != '\n') continue;
            if (cl->have) {
                size_t add = i - start;
                if (cl->have + add <= sizeof cl->buf) {
                    memcpy(cl->buf + cl->have, readbuf + start, add);
                    handle_line(c, cl->buf, cl->have + add, at);
                }
                cl->have = 0;
            } else {
                handle_line(c, readbuf + start, i - start, at);
            }
            start = i + 1;
        }
        size_t rest = (size_t)n - start;
        if (rest) {
            if (cl->have + rest <= sizeof cl->buf) {
                memcpy(cl->buf + cl->have, readbuf + start, rest);
                cl->have += rest;
            } else {
                cl->have = 0;  /* an over-long line: dropped */
            }
        }
    }
}

/* ---------- stamping at readiness ---------- */

/* After an epoch is written: wait for the clients' sockets to become readable without reading them, and
 * stamp each with the time epoll reported new bytes on it (edge-triggered, so every arrival after the
 * last drain is one more report). The wait ends when every open client has reported and nothing new came
 * for 2 ms, or 30 ms after the write. Then every client that reported is read; if the last line it had
 * was a TPV, the first of its epoch at that client, and nothing followed it, that TPV was in the socket
 * by the client's last report, so its arrival is that report's time — an upper bound on the true arrival,
 * off by at most one epoll_wait, independent of how long the harness then takes to read N sockets. Any
 * other case keeps the read-time stamp (also an upper bound). With --spin the wait polls epoll_wait(0)
 * instead of sleeping, so no report waits for the harness to wake up. */
static double *edge_at;
static int *edge_list;
static long long ready_stamped, read_stamped;
static int opt_spin, opt_stamp_ready = 1;

static void await_epoch(double written, struct epoll_event *events, int master, char *drain, size_t drain_size) {
    int reported = 0, open_clients = client_count - closed_clients;
    double last_report = written;
    for (;;) {
        int n = epoll_wait(epfd, events, 1024, opt_spin ? 0 : 1);
        if (n < 0 && errno != EINTR) die("epoll_wait: %s", strerror(errno));
        /* Polling, give way to anything else runnable on this CPU: the pty's flush work, queued on the
         * CPU that wrote the epoch, would otherwise wait for the harness's time slice to end. After
         * reports, wait 20 us before asking again (a vDSO clock loop, no system call): every epoll_wait
         * that finds reports takes the epoll instance's lock, which the daemon's send() needs too to
         * queue the next report, and polling back to back made each of a fan-out's sends wait for it. */
        if (opt_spin && n == 0) sched_yield();
        if (opt_spin && n > 0) {
            double until = now_s() + 20e-6;
            while (now_s() < until) {}
        }
        double at = now_s();
        for (int i = 0; i < n; i++) {
            uint32_t id = events[i].data.u32;
            if (id == 0xFFFFFFFEu) { while (read(master, drain, drain_size) > 0) {} continue; }
            if (id >= (uint32_t)client_count) continue;  /* the timer: left for the main loop */
            if (edge_at[id] == 0) edge_list[reported++] = (int)id;
            edge_at[id] = at;
            last_report = at;
        }
        if (reported >= open_clients && at - last_report >= 0.002) break;
        if (at - written >= 0.030) break;
    }
    for (int k = 0; k < reported; k++) {
        int c = edge_list[k];
        struct client *cl = &clients[c];
        cl->last_tpv_slot = -1;
        if (!cl->closed) read_client(c);
        long long s = cl->last_tpv_slot;
        if (opt_stamp_ready && !cl->closed && s >= 0 && cl->have == 0 && tpv_count[s] == 1 && first_at[s] >= edge_at[c]) {
            first_at[s] = last_at[s] = edge_at[c];
            ready_stamped++;
        } else {
            read_stamped++;
        }
        edge_at[c] = 0;
    }
}

/* ---------- main ---------- */

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile(const double *sorted, size_t n, double p) {  /* nearest rank */
    if (n == 0) return NAN;
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);
    if (rank < 1) rank = 1;
    return sorted[rank - 1];
}

static void usage(void) {
    fprintf(stderr,
        "usage: harness --capture FILE --pty-file FILE --pid-file FILE (--unix PATH | --tcp HOST:PORT)\n"
        "               --watch REQUEST --clients N [--warmup W] [--epochs E] [--period-ms MS] [--label NAME]\n"
        "               [--dump FILE] [--stamp ready|read] [--spin yes|no]\n");
    exit(64);
}

int main(int argc, char **argv) {
    const char *capture = NULL, *pty_file = NULL, *pid_file = NULL, *watch = NULL, *label = "daemon", *dump = NULL;
    int warmup = 20, measured = 100, period_ms = 100;
    client_count = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) usage();
        const char *v = argv[++i];
        if (!strcmp(a, "--capture")) capture = v;
        else if (!strcmp(a, "--pty-file")) pty_file = v;
        else if (!strcmp(a, "--pid-file")) pid_file = v;
        else if (!strcmp(a, "--unix")) opt_unix = v;
        else if (!strcmp(a, "--tcp")) opt_tcp = v;
        else if (!strcmp(a, "--watch")) watch = v;
        else if (!strcmp(a, "--clients")) client_count = atoi(v);
        else if (!strcmp(a, "--warmup")) warmup = atoi(v);
        else if (!strcmp(a, "--epochs")) measured = atoi(v);
        else if (!strcmp(a, "--period-ms")) period_ms = atoi(v);
        else if (!strcmp(a, "--label")) label = v;
        else if (!strcmp(a, "--dump")) dump = v;
        else if (!strcmp(a, "--spin")) opt_spin = !strcmp(v, "yes");
        else if (!strcmp(a, "--stamp")) {
            if (!strcmp(v, "ready")) opt_stamp_ready = 1;
            else if (!strcmp(v, "read")) opt_stamp_ready = 0;
            else usage();
        }
        else usage();
    }
    if (!capture || !pty_file || !pid_file || !watch || (!opt_unix == !opt_tcp) || client_count < 1 ||
        warmup < 0 || measured < 1 || period_ms < 1)
        usage();
    signal(SIGPIPE, SIG_IGN);
    double period = period_ms / 1000.0;

    load_capture(capture);
    int total = warmup + measured;
    if (epoch_count < total) die("%s has %d epochs, %d needed (warm-up %d + %d)", capture, epoch_count, total, warmup, measured);
    epoch_count = total;  /* replay only what is measured */
    /* Hard stop: connect (30 s) + subscribe (20 s) + replay + drain, with margin. */
    alarm((unsigned)(90 + total * period + 10));

    /* Descriptors: clients + pty + epoll + timer + slack. */
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rlim_t need = (rlim_t)client_count + 64;
    if (rl.rlim_cur < need) {
        if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
            die("RLIMIT_NOFILE hard limit %llu < %llu needed", (unsigned long long)rl.rlim_max, (unsigned long long)need);
        rl.rlim_cur = need;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) die("setrlimit: %s", strerror(errno));
    }

    /* The pseudo-terminal: raw, slave kept open so the master never sees a hang-up. */
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) die("posix_openpt: %s", strerror(errno));
    const char *slave_path = ptsname(master);
    if (!slave_path) die("ptsname: %s", strerror(errno));
    int slave = open(slave_path, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave < 0) die("open %s: %s", slave_path, strerror(errno));
    struct termios tio;
    tcgetattr(slave, &tio);
    cfmakeraw(&tio);
    tcsetattr(slave, TCSANOW, &tio);
    fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
    {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", pty_file);
        FILE *f = fopen(tmp, "w");
        if (!f) die("cannot write %s: %s", tmp, strerror(errno));
        fprintf(f, "%s\n", slave_path);
        fclose(f);
        if (rename(tmp, pty_file) != 0) die("rename %s: %s", tmp, strerror(errno));
    }

    /* The daemon's PID, then its socket. */
    double deadline = now_s() + 30;
    for (;;) {
        FILE *f = fopen(pid_file, "r");
        int pid = 0;
        if (f) {
            if (fscanf(f, "%d", &pid) != 1) pid = 0;
            fclose(f);
        }
        if (pid > 0) { daemon_pid = pid; break; }
        if (now_s() > deadline) die("no PID in %s after 30 s", pid_file);
        sleep_s(0.02);
    }
    clients = calloc((size_t)client_count, sizeof *clients);
    for (;;) {
        int fd = connect_once();
        if (fd >= 0) { clients[0].fd = fd; break; }
        if (daemon_ticks() < 0) die("daemon (PID %d) exited before accepting clients", (int)daemon_pid);
        if (now_s() > deadline) die("cannot connect to %s after 30 s: %s", opt_unix ? opt_unix : opt_tcp, strerror(errno));
        sleep_s(0.05);
    }
    for (int c = 1; c < client_count; c++) {
        int fd = connect_once();
        if (fd < 0) die("client %d: connect: %s", c, strerror(errno));
        clients[c].fd = fd;
    }
    epfd = epoll_create1(EPOLL_CLOEXEC);
    size_t watch_length = strlen(watch);
    char *request = malloc(watch_length + 2);
    memcpy(request, watch, watch_length);
    request[watch_length] = '\n';
    for (int c = 0; c < client_count; c++) {
        if (write(clients[c].fd, request, watch_length + 1) != (ssize_t)(watch_length + 1))
            die("client %d: write: %s", c, strerror(errno));
        fcntl(clients[c].fd, F_SETFL, fcntl(clients[c].fd, F_GETFL) | O_NONBLOCK);
        struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u32 = (uint32_t)c };
        if (epoll_ctl(epfd, EPOLL_CTL_ADD, clients[c].fd, &ev) != 0) die("epoll_ctl: %s", strerror(errno));
    }
    {
        struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 0xFFFFFFFEu };  /* anything the daemon writes */
        epoll_ctl(epfd, EPOLL_CTL_ADD, master, &ev);
    }
    first_at = calloc((size_t)client_count * (size_t)epoch_count, sizeof *first_at);
    last_at = calloc((size_t)client_count * (size_t)epoch_count, sizeof *last_at);
    tpv_count = calloc((size_t)client_count * (size_t)epoch_count, sizeof *tpv_count);
    edge_at = calloc((size_t)client_count, sizeof *edge_at);
    edge_list = calloc((size_t)client_count, sizeof *edge_list);
    if (!first_at || !last_at || !tpv_count || !edge_at || !edge_list) die("out of memory");

    struct epoll_event events[1024];
    char drain[4096];
    /* Every client subscribed? */
    deadline = now_s() + 20;
    for (;;) {
        int subscribed = 0;
        for (int c = 0; c < client_count; c++) subscribed += clients[c].subscribed;
        if (subscribed == client_count) break;
        if (closed_clients) die("%d client(s) closed before subscribing (client limit?)", closed_clients);
        if (now_s() > deadline) die("only %d of %d clients subscribed after 20 s", subscribed, client_count);
        int n = epoll_wait(epfd, events, 1024, 100);
        for (int i = 0; i < n; i++) {
            if (events[i].data.u32 == 0xFFFFFFFEu) { while (read(master, drain, sizeof drain) > 0) {} continue; }
            read_client((int)events[i].data.u32);
        }
    }
    double subscribed_at = now_s();
    fprintf(stderr, "harness: %s: %d clients subscribed; pty %s; replaying %d epochs (%d warm-up) every %d ms\n",
            label, client_count, slave_path, epoch_count, warmup, period_ms);

    /* Replay. The timer ticks twice per period: even ticks write an epoch, odd ticks sample /proc. */
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    struct timespec start_ts;
    clock_gettime(CLOCK_MONOTONIC, &start_ts);
    start_ts.tv_nsec += 100000000;  /* first write in 100 ms */
    if (start_ts.tv_nsec >= 1000000000) { start_ts.tv_sec++; start_ts.tv_nsec -= 1000000000; }
    long half_ns = (long)period_ms * 500000L;
    struct itimerspec its = { .it_interval = { half_ns / 1000000000L, half_ns % 1000000000L }, .it_value = start_ts };
    timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
    {
        struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 0xFFFFFFFFu };
        epoll_ctl(epfd, EPOLL_CTL_ADD, tfd, &ev);
    }
    long long tick = 0, ticks_start = -1, ticks_end = -1;
    double cpu_start = -1, cpu_end = -1, self_start = 0, self_end = 0;
    double busy_start = 0, busy_end = 0, steal_start = 0, steal_end = 0;
    double window_start = 0, window_end = 0, drain_until = 0;
    long rss_max_kb = 0, rss_max_all_kb = 0, anon_max_kb = 0;
    int threads_max = 0, write_stalls = 0;
    int done = 0;
    while (!done) {
        int n = epoll_wait(epfd, events, 1024, 1000);
        if (n < 0 && errno != EINTR) die("epoll_wait: %s", strerror(errno));
        for (int i = 0; i < n; i++) {
            uint32_t id = events[i].data.u32;
            if (id == 0xFFFFFFFEu) { while (read(master, drain, sizeof drain) > 0) {} continue; }
            if (id != 0xFFFFFFFFu) { read_client((int)id); continue; }
            uint64_t expirations = 0;
            if (read(tfd, &expirations, sizeof expirations) != sizeof expirations) continue;
            for (uint64_t e = 0; e < expirations && !done; e++, tick++) {
                if (tick % 2 == 1) {  /* half-way between writes: sample the daemon */
                    long rss = daemon_status_kb("VmRSS:");
                    if (rss < 0) die("daemon (PID %d) is gone", (int)daemon_pid);
                    if (rss > rss_max_all_kb) rss_max_all_kb = rss;
                    if (last_written >= warmup && rss > rss_max_kb) rss_max_kb = rss;
                    long anon = daemon_status_kb("RssAnon:");
                    if (last_written >= warmup && anon > anon_max_kb) anon_max_kb = anon;
                    int th = daemon_threads();
                    if (th > threads_max) threads_max = th;
                    continue;
                }
                int j = (int)(tick / 2);
                if (j < epoch_count) {
                    struct epoch *ep = &epochs[j];
                    size_t off = 0;
                    double give_up = now_s() + 1;
                    while (off < ep->length) {
                        ssize_t w = write(master, ep->bytes + off, ep->length - off);
                        if (w > 0) { off += (size_t)w; continue; }
                        if (w < 0 && errno != EAGAIN && errno != EINTR) die("write to pty: %s", strerror(errno));
                        if (now_s() > give_up) die("the daemon does not read the pty (epoch %d)", j);
                        write_stalls++;
                        sleep_s(0.001);
                    }
                    ep->written = now_s();
                    last_written = j;
                    await_epoch(ep->written, events, master, drain, sizeof drain);
                    if (j == warmup) {
                        ticks_start = daemon_ticks();
                        cpu_start = daemon_cpu_seconds();
                        self_start = self_cpu_seconds();
                        machine_cpu_seconds(&busy_start, &steal_start);
                        window_start = ep->written;
                    }
                } else if (j == epoch_count) {
                    /* one period after the last write: the measured window ends */
                    ticks_end = daemon_ticks();
                    cpu_end = daemon_cpu_seconds();
                    self_end = self_cpu_seconds();
                    machine_cpu_seconds(&busy_end, &steal_end);
                    window_end = now_s();
                    drain_until = window_end + 1.0;
                } else if (now_s() >= drain_until) {
                    done = 1;
                } else {
                    /* drain: stop early once every open client has the last epoch */
                    int missing = 0;
                    for (int c = 0; c < client_count && !missing; c++)
                        if (!clients[c].closed && tpv_count[(size_t)c * (size_t)epoch_count + (size_t)(epoch_count - 1)] == 0)
                            missing = 1;
                    if (!missing) done = 1;
                }
            }
        }
    }
    if (ticks_start < 0 || ticks_end < 0) die("daemon (PID %d) is gone", (int)daemon_pid);
    long hwm_kb = daemon_status_kb("VmHWM:");

    /* Delays over the measured epochs. */
    size_t max_samples = (size_t)client_count * (size_t)measured, samples = 0, multi = 0;
    double *first_delays = malloc(max_samples * sizeof(double)), *last_delays = malloc(max_samples * sizeof(double));
    long long tpvs_measured = 0;
    for (int c = 0; c < client_count; c++)
        for (int j = warmup; j < epoch_count; j++) {
            size_t slot = (size_t)c * (size_t)epoch_count + (size_t)j;
            if (!tpv_count[slot]) continue;
            first_delays[samples] = (first_at[slot] - epochs[j].written) * 1000;
            last_delays[samples] = (last_at[slot] - epochs[j].written) * 1000;
            samples++;
            tpvs_measured += tpv_count[slot];
            if (tpv_count[slot] > 1) multi++;
        }
    if (dump) {  /* every measured client-epoch: epoch, client, first and last TPV delay in ms */
        FILE *f = fopen(dump, "w");
        if (!f) die("cannot write %s: %s", dump, strerror(errno));
        for (int j = warmup; j < epoch_count; j++)
            for (int c = 0; c < client_count; c++) {
                size_t slot = (size_t)c * (size_t)epoch_count + (size_t)j;
                if (tpv_count[slot])
                    fprintf(f, "%d %d %.3f %.3f\n", j, c, (first_at[slot] - epochs[j].written) * 1000,
                            (last_at[slot] - epochs[j].written) * 1000);
            }
        fclose(f);
    }
    if (samples == 0) die("no TPV matched a measured epoch (%lld TPVs unmatched, %lld without time)", unmatched_tpvs, tpvs_without_time);
    qsort(first_delays, samples, sizeof(double), compare_doubles);
    qsort(last_delays, samples, sizeof(double), compare_doubles);
    double p50 = percentile(first_delays, samples, 50), p99 = percentile(first_delays, samples, 99);
    double pmax = first_delays[samples - 1], pmin = first_delays[0];
    double l50 = percentile(last_delays, samples, 50), l99 = percentile(last_delays, samples, 99);
    double window = window_end - window_start;
    double cpu = (double)(ticks_end - ticks_start) / (double)sysconf(_SC_CLK_TCK) / window * 100;
    double cpu_precise = cpu_start >= 0 && cpu_end >= 0 ? (cpu_end - cpu_start) / window * 100 : cpu;
    /* Everything else the machine ran meanwhile, % of one CPU: interference with the measurement. */
    double self_cpu = (self_end - self_start) / window * 100;
    double other = (busy_end - busy_start) / window * 100 - cpu_precise - self_cpu;
    if (other < 0) other = 0;
    double steal = (steal_end - steal_start) / window * 100;
    double coverage = (double)samples / (double)max_samples * 100;

    fprintf(stderr,
            "harness: %s, %d clients: %zu of %zu client-epochs got a TPV (%.1f%%), %.2f TPVs each; %d clients closed\n"
            "         first TPV delay ms: min %.3f  p50 %.3f  p99 %.3f  max %.3f;  last TPV p50 %.3f p99 %.3f\n"
            "         daemon CPU %.3f%% over %.2f s (CPU-time clock; utime+stime %lld ticks = %.2f%%), VmRSS max %ld kB (RssAnon max %ld kB; whole run %ld kB, VmHWM %ld kB), threads max %d\n"
            "         harness CPU %.2f%%; other processes %.1f%% of a CPU, steal %.1f%% (interference)\n"
            "         %lld TPVs unmatched, %lld without time, %d write stalls, subscribed %.2f s before the first write\n"
            "         stamped at readiness: %lld client-epoch reads, at the read: %lld (--stamp %s, --spin %s)\n",
            label, client_count, samples, max_samples, coverage, (double)tpvs_measured / (double)samples, closed_clients,
            pmin, p50, p99, pmax, l50, l99, cpu_precise, window, ticks_end - ticks_start, cpu, rss_max_kb, anon_max_kb, rss_max_all_kb, hwm_kb,
            threads_max, self_cpu, other, steal, unmatched_tpvs, tpvs_without_time, write_stalls, epochs[0].written - subscribed_at,
            ready_stamped, read_stamped, opt_stamp_ready ? "ready" : "read", opt_spin ? "yes" : "no");
    printf("RESULT label=%s clients=%d epochs=%d samples=%zu coverage=%.1f tpv_per_epoch=%.2f p50_ms=%.3f p99_ms=%.3f "
           "max_ms=%.3f last_p50_ms=%.3f last_p99_ms=%.3f cpu_pct=%.3f stat_cpu_pct=%.2f rss_kb=%ld anon_kb=%ld hwm_kb=%ld closed=%d harness_cpu_pct=%.2f other_cpu_pct=%.1f steal_pct=%.1f ready_stamped=%lld read_stamped=%lld\n",
           label, client_count, measured, samples, coverage, (double)tpvs_measured / (double)samples, p50, p99, pmax, l50,
           l99, cpu_precise, cpu, rss_max_kb, anon_max_kb, hwm_kb, closed_clients, self_cpu, other, steal, ready_stamped, read_stamped);
    fflush(stdout);
    (void)multi;
    return closed_clients ? 2 : 0;
}
