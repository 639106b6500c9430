// libsystemd's daemon helpers (sd_listen_fds, sd_is_socket_unix, sd_notify, sd_watchdog_enabled);
// Debian ships them in libsystemd-dev. See sd-daemon(3).
#include <systemd/sd-daemon.h>
// sd-login(3): whether a user has an active session (When In Use), and a monitor of changes.
#include <systemd/sd-login.h>
