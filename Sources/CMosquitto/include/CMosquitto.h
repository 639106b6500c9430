// libmosquitto, the MQTT client library of the fleet uplink (Debian: libmosquitto1, headers in
// libmosquitto-dev), loaded when the first uplink needs it (loader.c): a daemon without an `[uplink]`
// maps neither it nor the OpenSSL it brings (libssl, libcrypto: 1.7 MiB resident).
#ifndef LOCATIOND_CMOSQUITTO_H
#define LOCATIOND_CMOSQUITTO_H

#include <mosquitto.h>

/// The library's file name (its soname, mosquitto.h's LIBMOSQUITTO_MAJOR 1).
#define LOCATIOND_MOSQUITTO_LIBRARY "libmosquitto.so.1"

/// Loads libmosquitto and resolves the functions the uplink calls, once (thread-safe; later calls return
/// the first outcome). Returns NULL when loaded, else why not (dlerror(3)'s text, kept for the process).
/// The `mosquitto_*` functions the uplink calls (loader.c) load it themselves on first use; a caller that
/// wants the reason calls this first.
const char *locationd_mosquitto_load(void);

#endif
