// sd-login(3) for Swift: whether a user has an active session (When In Use), and a monitor of changes.
// Written against libsystemd 252 (Debian 12's libsystemd-dev); sd-login's API is stable since systemd 38.
//
// libsystemd is loaded when the policy first depends on login sessions (loader.c), not linked: a daemon
// whose policy has no `ask` rule and no When-In-Use grant maps neither it nor the libraries it brings
// (liblzma, libzstd, liblz4, libgcrypt, libgpg-error, libcap: 1.6–1.8 MiB resident with it and what
// sd-login touches, Benchmarks/README.md, issue 16).
// The daemon's other uses of systemd (socket activation, sd_notify, the watchdog) are its documented
// protocols, spoken by Sources/LocationServer/SystemdProtocol.swift.
#ifndef CSYSTEMDLOGIN_H
#define CSYSTEMDLOGIN_H

#include <systemd/sd-login.h>

/// libsystemd's soname: sd-login's ABI is that of libsystemd.so.0.
#define LOCATIOND_LIBSYSTEMD_LIBRARY "libsystemd.so.0"

/// Loads libsystemd and resolves the sd-login functions below, once (thread-safe; later calls return the
/// first outcome). Returns NULL when loaded, else why not (dlerror(3)'s text, kept for the process).
/// Each function resolves in the global scope first, as a linked library's would, so a definition
/// interposed with LD_PRELOAD takes precedence (the tests' logind stand-in); then in libsystemd.
const char *locationd_sd_login_load(void);

/// sd_uid_get_state(3); -ELIBACC when libsystemd cannot be loaded.
int locationd_sd_uid_get_state(uid_t uid, char **state);
/// sd_login_monitor_new(3); -ELIBACC when libsystemd cannot be loaded.
int locationd_sd_login_monitor_new(const char *category, sd_login_monitor **ret);
/// sd_login_monitor_get_fd(3).
int locationd_sd_login_monitor_get_fd(sd_login_monitor *m);
/// sd_login_monitor_flush(3).
int locationd_sd_login_monitor_flush(sd_login_monitor *m);
/// sd_login_monitor_unref(3).
sd_login_monitor *locationd_sd_login_monitor_unref(sd_login_monitor *m);

#endif
