/* util_log: stderr logging that never allocates, so it is usable inside malloc and before
 * the heap segment exists. */
#include "util.h"

#include <stdlib.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static int log_rank = -1;
static int log_verbose = 0;

void util_log_set_rank(int rank) { log_rank = rank; }
void util_log_set_verbose(int verbose) { log_verbose = verbose; }

void util_log(util_log_level_t level, const char *fmt, ...)
{
    if (level >= UTIL_LOG_INFO && !log_verbose)
        return;
    int saved_errno = errno; /* keep %m meaningful and the caller's errno intact */
    char buf[1024];
    static const char *const tags[] = {"", "warning: ", "", "debug: "};
    int n = log_rank >= 0 ? snprintf(buf, sizeof buf, "bobcat: rank %d: %s", log_rank, tags[level])
                          : snprintf(buf, sizeof buf, "bobcat: %s", tags[level]);
    va_list ap;
    va_start(ap, fmt);
    errno = saved_errno;
    if (n >= 0 && (size_t)n < sizeof buf)
        n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof buf - 1)
        n = sizeof buf - 2;
    buf[n++] = '\n';
    ssize_t ignored = write(STDERR_FILENO, buf, (size_t)n);
    (void)ignored;
    errno = saved_errno;
}

double util_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

BOBCAT_EXPORT const char *bobcat_status_string(bobcat_status_t status)
{
    switch (status) {
#define BOBCAT_STATUS_CASE(name, value, text) \
    case BOBCAT_##name:                      \
        return text;
        BOBCAT_STATUS_LIST(BOBCAT_STATUS_CASE)
#undef BOBCAT_STATUS_CASE
    }
    return "unknown status";
}

BOBCAT_LAYER_API void util_out_of_memory(const char *what, size_t bytes)
{
    util_error("out of memory for %s (%zu bytes): the heap is full; raise the heap per rank (yod --heap, "
               "--heap-node, or BOBCAT_HEAP)", what, bytes);
    abort();
}

BOBCAT_LAYER_API void *util_alloc_or_die(size_t bytes, const char *what)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        util_out_of_memory(what, bytes);
    return p;
}
