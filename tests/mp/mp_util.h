/* mp_util: tiny checking helpers shared by the multi-rank tests. */
#ifndef BOBCAT_MP_UTIL_H
#define BOBCAT_MP_UTIL_H

#include <stdio.h>
#include <stdlib.h>

static int mp_failures;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);     \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
            mp_failures++;                                                      \
        }                                                                       \
    } while (0)

#endif
