// inih, the INI parser Debian ships as libinih-dev (the format of geoclue.conf and systemd units).
#include <ini.h>
