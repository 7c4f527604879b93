/* util: logging, the options table, sizes and timers shared by every layer of libbobcat. */
#ifndef BOBCAT_UTIL_H
#define BOBCAT_UTIL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <bobcat/status.h>

#define BOBCAT_EXPORT __attribute__((visibility("default")))
/* Internal calls between libbobcat.so and the per-MPI libbobcat-<mpi>.so (util_options, coll_*,
 * msg_*): exported from the shared object because the MPI layer is a separate one, but not public
 * API — no header under include/ declares them and their signatures may change at any time. */
#define BOBCAT_LAYER_API __attribute__((visibility("default")))

typedef enum { UTIL_LOG_ERROR, UTIL_LOG_WARN, UTIL_LOG_INFO, UTIL_LOG_DEBUG } util_log_level_t;

/* Log to stderr as "bobcat: rank <w>: ...". Uses write(2) on a stack buffer: safe before the
 * allocator is ready and inside the allocator itself. %m works after a failed syscall. */
BOBCAT_LAYER_API void util_log(util_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void util_log_set_rank(int rank);
void util_log_set_verbose(int verbose);
#define util_error(...) util_log(UTIL_LOG_ERROR, __VA_ARGS__)

/* The runtime's one way to fail for want of memory where there is no way back (peers wait for this
 * rank in shared memory): log what `what` needed, name the knob, abort. */
BOBCAT_LAYER_API __attribute__((noreturn)) void util_out_of_memory(const char *what, size_t bytes);
/* malloc, or util_out_of_memory. */
BOBCAT_LAYER_API void *util_alloc_or_die(size_t bytes, const char *what);

/* Start a thread of the library's own (util_thread.c): a small stack, every signal blocked in it
 * (they stay the program's threads'), named `name` (15 characters at most). 0, or pthread_create's
 * error number. */
BOBCAT_LAYER_API int util_thread_start(pthread_t *t, void *(*fn)(void *), const char *name);
/* futex(2) on `word` (FUTEX_WAIT returns at once if *word is no longer val): the library's threads
 * sleep and wake on it (the layer's lock, the engine's helper, the progress agent). */
BOBCAT_LAYER_API long util_futex(_Atomic uint32_t *word, int op, uint32_t val);
#define util_warn(...) util_log(UTIL_LOG_WARN, __VA_ARGS__)
#define util_info(...) util_log(UTIL_LOG_INFO, __VA_ARGS__)
#define util_debug(...) util_log(UTIL_LOG_DEBUG, __VA_ARGS__)

/* The words of the enum knobs (options.def): an enum knob's field holds one of these. */
typedef enum {
#define BOBCAT_WORD(WORD, SPELLING) UTIL_V_##WORD,
#include "options.def"
    UTIL_V_N
} util_word_t;

/* Options (knobs) from options.def: values after util_options_load(). */
typedef struct {
#define BOBCAT_OPT(NAME, TYPE, DEF, CAT, DOC) UTIL_OPT_FIELD_##TYPE(NAME)
#define UTIL_OPT_FIELD_SIZE(N) size_t N;
#define UTIL_OPT_FIELD_ENUM(N) util_word_t N;
#define UTIL_OPT_FIELD_BOOL(N) int N;
#define UTIL_OPT_FIELD_DOUBLE(N) double N;
#define UTIL_OPT_FIELD_STRING(N) const char *N;
#include "options.def"
} util_options_t;

/* Parse every knob from the environment; warns about unknown BOBCAT_* variables.
 * Returns BOBCAT_ERR_INVAL (after logging which variable and why) on a malformed value. */
bobcat_status_t util_options_load(util_options_t *opts_p);
/* The knobs as parsed by the last successful util_options_load (loads them on first use);
 * NULL if a value is malformed (already logged). For the MPI layer. */
const util_options_t *util_options(void);

/* "512M", "4k", "1G", "123" -> bytes. Returns BOBCAT_ERR_INVAL on junk or overflow. */
bobcat_status_t util_parse_size(const char *text, size_t *bytes_p);
bobcat_status_t util_parse_bool(const char *text, int *value_p);
/* `text` as a value of enum knob `knob` ("PAGES"), as the environment would give it; BOBCAT_ERR_INVAL if
 * the knob takes no such word (or is no enum knob). For tools that take a knob's values as arguments. */
bobcat_status_t util_option_word(const char *knob, const char *text, util_word_t *word_p);
/* The spelling of an enum knob's word ("huge"; aliases after '|': "off|0"), for messages. */
const char *util_word_name(util_word_t word);

double util_now(void); /* monotonic seconds */

/* memcpy for bulk data (non-overlapping): the same speed whatever the buffers' alignment
 * (util_copy.c says why glibc's is not used from UTIL_COPY_MIN bytes). For the layers too. Below
 * that size it is memcpy, inline, so a small copy pays no extra call. */
#define UTIL_COPY_MIN 2048
BOBCAT_LAYER_API void util_copy_large(void *dst, const void *src, size_t n);
static inline void util_copy(void *dst, const void *src, size_t n)
{
    if (n < UTIL_COPY_MIN)
        memcpy(dst, src, n);
    else
        util_copy_large(dst, src, n);
}

/* One step of a poll loop on a line another core will write. Without it, a core that polls in a
 * tight loop keeps asking for the line while the writer is acquiring it, and the message lands
 * later (measured by `bobcat-probe --compare-polling`; figures in docs/mpi.md, "Polling"). */
static inline void util_poll_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

#endif
