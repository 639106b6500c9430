// libmosquitto, the MQTT client library Debian ships as libmosquitto-dev (mosquitto.h).
#include <mosquitto.h>
