/* shmemx.h: bobcat's OpenSHMEM extensions (beyond the 1.5 standard). Programs that include
 * <shmemx.h> by habit get shmem.h and these. */
#ifndef BOBCAT_SHMEMX_H
#define BOBCAT_SHMEMX_H

#include "shmem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Seconds on a monotonic clock (for timing loops in tests and benchmarks). */
double shmemx_wtime(void);

#ifdef __cplusplus
}
#endif
#endif
