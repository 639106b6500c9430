// ThreadSanitizer annotations for locks whose slow path it cannot see (LocationPosix/Locked.swift).
// The functions are ThreadSanitizer's public interface (compiler-rt's sanitizer/tsan_interface.h); they are
// declared weak here so that a build without the sanitizer links with them null and calls nothing.

#include "CPosixShims.h"

extern void __tsan_acquire(void *address) __attribute__((weak));
extern void __tsan_release(void *address) __attribute__((weak));

void locationd_tsan_acquire(void *address) {
    if (__tsan_acquire) __tsan_acquire(address);
}

void locationd_tsan_release(void *address) {
    if (__tsan_release) __tsan_release(address);
}
