// libmosquitto, loaded on first use (dlopen(3)) instead of linked: the daemon maps it, and libssl and
// libcrypto with it, only when an uplink is configured. The uplink's calls keep libmosquitto's names:
// each function here forwards to the library's own, resolved once. Their signatures come from
// mosquitto.h (libmosquitto-dev 2.0), which this file includes, so the compiler checks them.
// When the library cannot be loaded, the functions fail as libmosquitto would: MOSQ_ERR_UNKNOWN, NULL
// with errno ELIBACC, or nothing done.
#include "CMosquitto.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>

#define LOCATIOND_MOSQUITTO_FUNCTIONS(X) \
    X(mosquitto_lib_init) X(mosquitto_new) X(mosquitto_destroy) X(mosquitto_user_data_set) \
    X(mosquitto_username_pw_set) X(mosquitto_will_set) X(mosquitto_reconnect_delay_set) X(mosquitto_tls_set) \
    X(mosquitto_connect_async) X(mosquitto_reconnect_async) X(mosquitto_disconnect) X(mosquitto_loop_start) \
    X(mosquitto_loop_stop) X(mosquitto_publish) X(mosquitto_connect_callback_set) \
    X(mosquitto_disconnect_callback_set) X(mosquitto_publish_callback_set) X(mosquitto_log_callback_set) \
    X(mosquitto_strerror) X(mosquitto_connack_string)

static struct {
#define LOCATIOND_POINTER(name) __typeof__(name) *name;
    LOCATIOND_MOSQUITTO_FUNCTIONS(LOCATIOND_POINTER)
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
    void *library = dlopen(LOCATIOND_MOSQUITTO_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        fail();
        return;
    }
#define LOCATIOND_RESOLVE(name) \
    if ((real.name = (__typeof__(name) *)dlsym(library, #name)) == NULL) { fail(); return; }
    LOCATIOND_MOSQUITTO_FUNCTIONS(LOCATIOND_RESOLVE)
#undef LOCATIOND_RESOLVE
}

const char *locationd_mosquitto_load(void) {
    pthread_once(&once, load);
    return failure;
}

static int loaded(void) {
    if (locationd_mosquitto_load() == NULL) return 1;
    errno = ELIBACC;
    return 0;
}

int mosquitto_lib_init(void) {
    return loaded() ? real.mosquitto_lib_init() : MOSQ_ERR_UNKNOWN;
}

struct mosquitto *mosquitto_new(const char *id, bool clean_session, void *obj) {
    return loaded() ? real.mosquitto_new(id, clean_session, obj) : NULL;
}

void mosquitto_destroy(struct mosquitto *mosq) {
    if (loaded()) real.mosquitto_destroy(mosq);
}

void mosquitto_user_data_set(struct mosquitto *mosq, void *obj) {
    if (loaded()) real.mosquitto_user_data_set(mosq, obj);
}

int mosquitto_username_pw_set(struct mosquitto *mosq, const char *username, const char *password) {
    return loaded() ? real.mosquitto_username_pw_set(mosq, username, password) : MOSQ_ERR_UNKNOWN;
}

int mosquitto_will_set(struct mosquitto *mosq, const char *topic, int payloadlen, const void *payload, int qos, bool retain) {
    return loaded() ? real.mosquitto_will_set(mosq, topic, payloadlen, payload, qos, retain) : MOSQ_ERR_UNKNOWN;
}

int mosquitto_reconnect_delay_set(struct mosquitto *mosq, unsigned int reconnect_delay, unsigned int reconnect_delay_max,
                                  bool reconnect_exponential_backoff) {
    return loaded() ? real.mosquitto_reconnect_delay_set(mosq, reconnect_delay, reconnect_delay_max, reconnect_exponential_backoff)
                    : MOSQ_ERR_UNKNOWN;
}

int mosquitto_tls_set(struct mosquitto *mosq, const char *cafile, const char *capath, const char *certfile, const char *keyfile,
                      int (*pw_callback)(char *buf, int size, int rwflag, void *userdata)) {
    return loaded() ? real.mosquitto_tls_set(mosq, cafile, capath, certfile, keyfile, pw_callback) : MOSQ_ERR_UNKNOWN;
}

int mosquitto_connect_async(struct mosquitto *mosq, const char *host, int port, int keepalive) {
    return loaded() ? real.mosquitto_connect_async(mosq, host, port, keepalive) : MOSQ_ERR_UNKNOWN;
}

int mosquitto_reconnect_async(struct mosquitto *mosq) {
    return loaded() ? real.mosquitto_reconnect_async(mosq) : MOSQ_ERR_UNKNOWN;
}

int mosquitto_disconnect(struct mosquitto *mosq) {
    return loaded() ? real.mosquitto_disconnect(mosq) : MOSQ_ERR_UNKNOWN;
}

int mosquitto_loop_start(struct mosquitto *mosq) {
    return loaded() ? real.mosquitto_loop_start(mosq) : MOSQ_ERR_UNKNOWN;
}

int mosquitto_loop_stop(struct mosquitto *mosq, bool force) {
    return loaded() ? real.mosquitto_loop_stop(mosq, force) : MOSQ_ERR_UNKNOWN;
}

int mosquitto_publish(struct mosquitto *mosq, int *mid, const char *topic, int payloadlen, const void *payload, int qos, bool retain) {
    return loaded() ? real.mosquitto_publish(mosq, mid, topic, payloadlen, payload, qos, retain) : MOSQ_ERR_UNKNOWN;
}

void mosquitto_connect_callback_set(struct mosquitto *mosq, void (*on_connect)(struct mosquitto *, void *, int)) {
    if (loaded()) real.mosquitto_connect_callback_set(mosq, on_connect);
}

void mosquitto_disconnect_callback_set(struct mosquitto *mosq, void (*on_disconnect)(struct mosquitto *, void *, int)) {
    if (loaded()) real.mosquitto_disconnect_callback_set(mosq, on_disconnect);
}

void mosquitto_publish_callback_set(struct mosquitto *mosq, void (*on_publish)(struct mosquitto *, void *, int)) {
    if (loaded()) real.mosquitto_publish_callback_set(mosq, on_publish);
}

void mosquitto_log_callback_set(struct mosquitto *mosq, void (*on_log)(struct mosquitto *, void *, int, const char *)) {
    if (loaded()) real.mosquitto_log_callback_set(mosq, on_log);
}

const char *mosquitto_strerror(int mosq_errno) {
    return loaded() ? real.mosquitto_strerror(mosq_errno) : "libmosquitto could not be loaded";
}

const char *mosquitto_connack_string(int connack_code) {
    return loaded() ? real.mosquitto_connack_string(connack_code) : "libmosquitto could not be loaded";
}
