// libsystemd's sd-login, loaded on first use (dlopen(3)) instead of linked; see CSystemdLogin.h.
// A monitor exists only once loading succeeded, so the monitor functions need no check of their own.
#include "CSystemdLogin.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>

#define LOCATIOND_SD_LOGIN_FUNCTIONS(X) \
    X(sd_uid_get_state) X(sd_login_monitor_new) X(sd_login_monitor_get_fd) X(sd_login_monitor_flush) \
    X(sd_login_monitor_unref)

static struct {
#define LOCATIOND_POINTER(name) __typeof__(name) *name;
    LOCATIOND_SD_LOGIN_FUNCTIONS(LOCATIOND_POINTER)
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
    // RTLD_LOCAL: its symbols stay out of the global scope; RTLD_NOW: a missing one fails here.
    void *library = dlopen(LOCATIOND_LIBSYSTEMD_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        fail();
        return;
    }
#define LOCATIOND_RESOLVE(name)                                                        \
    real.name = (__typeof__(name) *)dlsym(RTLD_DEFAULT, #name);                         \
    if (real.name == NULL && (real.name = (__typeof__(name) *)dlsym(library, #name)) == NULL) { \
        fail();                                                           \
        return;                                                                        \
    }
    LOCATIOND_SD_LOGIN_FUNCTIONS(LOCATIOND_RESOLVE)
#undef LOCATIOND_RESOLVE
}

const char *locationd_sd_login_load(void) {
    pthread_once(&once, load);
    return failure;
}

int locationd_sd_uid_get_state(uid_t uid, char **state) {
    return locationd_sd_login_load() == NULL ? real.sd_uid_get_state(uid, state) : -ELIBACC;
}

int locationd_sd_login_monitor_new(const char *category, sd_login_monitor **ret) {
    return locationd_sd_login_load() == NULL ? real.sd_login_monitor_new(category, ret) : -ELIBACC;
}

int locationd_sd_login_monitor_get_fd(sd_login_monitor *m) {
    return real.sd_login_monitor_get_fd(m);
}

int locationd_sd_login_monitor_flush(sd_login_monitor *m) {
    return real.sd_login_monitor_flush(m);
}

sd_login_monitor *locationd_sd_login_monitor_unref(sd_login_monitor *m) {
    return real.sd_login_monitor_unref(m);
}
