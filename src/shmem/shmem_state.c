/* shmem_state: the bottom of src/shmem (shmem_state.h) — this PE's view of the job, the predefined
 * team and context objects, and the one path that reports what went wrong: a message naming the
 * routine and the fix on stderr (one write, so lines of different PEs do not interleave), then
 * the end of the whole job. It calls only the transport (shmem_transport.h), never a file above. */
#include "shmem_state.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

shi_state_t shi = {.npes = 0, .spin_before_yield = 64};

static void vreport(const char *routine, const char *fmt, va_list ap)
{
    char buf[1024];
    int k = snprintf(buf, sizeof buf, "bobcat-shmem: PE %d: %s%s", shi.me, routine ? routine : "",
                     routine ? ": " : "");
    if (k < 0 || k >= (int)sizeof buf)
        k = 0;
    vsnprintf(buf + k, sizeof buf - (size_t)k - 1, fmt, ap);
    size_t n = strlen(buf);
    buf[n++] = '\n';
    ssize_t ignored = write(STDERR_FILENO, buf, n);
    (void)ignored;
}

void shi_fatal(const char *routine, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(routine, fmt, ap);
    va_end(ap);
    if (shi.initialized)
        shmem_tr_abort(1);
    _exit(1);
}

void shi_debug(const char *fmt, ...)
{
    if (!shi.debug)
        return;
    va_list ap;
    va_start(ap, fmt);
    vreport("debug", fmt, ap);
    va_end(ap);
}

void shi_not_symmetric(const char *routine, const void *addr, int pe)
{
    shi_fatal(routine,
              "address %p (target PE %d) is not symmetric: it is neither in the symmetric heap [%p, %p) nor in the "
              "program's global/static data [%p, %p); allocate it with shmem_malloc or make it a global or static "
              "variable",
              addr, pe, (void *)shi.heap, (void *)(shi.heap + shi.heap_size), (void *)shi.data,
              (void *)(shi.data + shi.data_size));
}

void shi_bad_pe(const char *routine, int pe)
{
    if (!shi.initialized)
        shi_not_initialized(routine);
    shi_fatal(routine, "PE %d does not exist (the job has PEs 0..%d)", pe, shi.npes - 1);
}

void shi_not_initialized(const char *routine)
{
    shi_fatal(routine, "called before shmem_init (or after shmem_finalize)");
}

void shi_bad_ctx(const char *routine, shmem_ctx_t ctx, int pe)
{
    if (!ctx)
        shi_fatal(routine, "called with SHMEM_CTX_INVALID (a context whose creation failed?)");
    shi_fatal(routine, "PE %d is not in the context's team (it has %d PEs)", pe, ctx->team ? ctx->team->size : 0);
}

BOBCAT_EXPORT void shmemi_generic_type_not_supported(void)
{
    shi_fatal("shmem generic routine", "called with an element type the standard does not list");
}

/* The predefined teams and the default context: the objects live here, below every routine that
 * compares a team with SHMEM_TEAM_WORLD; shi_teams_init (shmem_team.c) fills them at start-up. */
struct shmemi_team shi_team_world, shi_team_shared;
BOBCAT_EXPORT shmem_team_t SHMEM_TEAM_WORLD = &shi_team_world;
BOBCAT_EXPORT shmem_team_t SHMEM_TEAM_SHARED = &shi_team_shared;
static struct shmemi_ctx default_ctx = {.team = &shi_team_world};
BOBCAT_EXPORT shmem_ctx_t SHMEM_CTX_DEFAULT = &default_ctx;
