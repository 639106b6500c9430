// epoll(7) for EventPoller: struct epoll_event is packed on x86-64, which Swift cannot lay out, so its
// fields pass through here one by one; eventfd(2) and timerfd(2), whose headers Glibc does not import.
#include "CPosixShims.h"
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>

int locationd_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int locationd_epoll_control(int epfd, int operation, int fd, uint32_t events, uint64_t tag) {
    struct epoll_event event = {.events = events, .data.u64 = tag};
    return epoll_ctl(epfd, operation, fd, &event);
}

int locationd_epoll_wait(int epfd, uint64_t *tags, uint32_t *events, int capacity, int timeout) {
    struct epoll_event ready[64];
    if (capacity > 64) capacity = 64;
    int n = epoll_wait(epfd, ready, capacity, timeout);
    for (int i = 0; i < n; i++) {
        tags[i] = ready[i].data.u64;
        events[i] = ready[i].events;
    }
    return n;
}

int locationd_eventfd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

int locationd_timerfd(void) { return timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC | TFD_NONBLOCK); }

int locationd_timerfd_set(int fd, int64_t seconds, long nanoseconds) {
    struct itimerspec setting = {.it_value = {.tv_sec = seconds, .tv_nsec = nanoseconds}};
    return timerfd_settime(fd, 0, &setting, NULL);
}
