// The self-pipe signal handler behind LocationPosix.SignalPipe.
#include "CPosixShims.h"
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static volatile int signal_pipe_fd = -1;

static void signal_pipe_handler(int signo) {
    int saved = errno;
    unsigned char byte = (unsigned char)signo;
    // A full pipe (tens of thousands of signals unread) drops this one; those already there still tell.
    (void)write(signal_pipe_fd, &byte, 1);
    errno = saved;
}

int locationd_signal_pipe_install(int write_fd, const int *signals, int count) {
    signal_pipe_fd = write_fd;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = signal_pipe_handler;
    action.sa_flags = SA_RESTART;
    sigfillset(&action.sa_mask);
    for (int i = 0; i < count; i++) {
        if (sigaction(signals[i], &action, NULL) != 0) return -1;
    }
    return 0;
}
