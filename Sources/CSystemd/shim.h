// libsystemd's daemon helpers (sd_listen_fds, sd_is_socket_unix, sd_notify, sd_watchdog_enabled);
// Debian ships them in libsystemd-dev. See sd-daemon(3).
#include <systemd/sd-daemon.h>
