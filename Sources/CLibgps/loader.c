// libgps, loaded on first use (dlopen(3)) instead of linked: the daemon maps it, and libstdc++ and libdbus
// with it, only when a gpsd receiver is configured. The receiver's calls keep libgps's names: each function
// here forwards to the library's own, resolved once. Their signatures come from gps.h, which CLibgps.h
// includes, so the compiler checks them. When the library cannot be loaded, the functions fail as libgps
// would: -1 (errno ELIBACC), false, or the loader's message.
#include "CLibgps.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>

#define LOCATIOND_LIBGPS_FUNCTIONS(X) \
    X(gps_open) X(gps_close) X(gps_read) X(gps_waiting) X(gps_stream) X(gps_errstr)

static struct {
#define LOCATIOND_POINTER(name) __typeof__(name) *name;
    LOCATIOND_LIBGPS_FUNCTIONS(LOCATIOND_POINTER)
#undef LOCATIOND_POINTER
} real;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *failure;
// dlerror(3)'s text lives only until the thread's next dlerror call or its end: a copy is kept.
static char failure_text[512];

static void fail(void) {
    const char *error = dlerror();
    snprintf(failure_text, sizeof failure_text, "%s", error != NULL ? error : "unknown dynamic loader error");
    failure = failure_text;
}

static void load(void) {
    // RTLD_LOCAL: its symbols stay out of the global scope; RTLD_NOW: a missing one fails here, not later.
    void *library = dlopen(LOCATIOND_LIBGPS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        fail();
        return;
    }
#define LOCATIOND_RESOLVE(name) \
    if ((real.name = (__typeof__(name) *)dlsym(library, #name)) == NULL) { fail(); return; }
    LOCATIOND_LIBGPS_FUNCTIONS(LOCATIOND_RESOLVE)
#undef LOCATIOND_RESOLVE
}

const char *locationd_libgps_load(void) {
    pthread_once(&once, load);
    return failure;
}

static int loaded(void) {
    if (locationd_libgps_load() == NULL) return 1;
    errno = ELIBACC;
    return 0;
}

int gps_open(const char *host, const char *port, struct gps_data_t *data) {
    return loaded() ? real.gps_open(host, port, data) : -1;
}

int gps_close(struct gps_data_t *data) {
    return loaded() ? real.gps_close(data) : -1;
}

int gps_read(struct gps_data_t *data, char *message, int message_len) {
    return loaded() ? real.gps_read(data, message, message_len) : -1;
}

bool gps_waiting(const struct gps_data_t *data, int timeout) {
    return loaded() ? real.gps_waiting(data, timeout) : false;
}

int gps_stream(struct gps_data_t *data, unsigned int flags, void *device) {
    return loaded() ? real.gps_stream(data, flags, device) : -1;
}

const char *gps_errstr(const int error) {
    if (locationd_libgps_load() != NULL) return failure;
    return real.gps_errstr(error);
}
