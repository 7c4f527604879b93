/* bobcat: the public C API beyond SMARTMAP (status codes, the knobs table). */
#ifndef BOBCAT_BOBCAT_H
#define BOBCAT_BOBCAT_H

#include <bobcat/smartmap.h>
#include <bobcat/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Print libbobcat's knobs (BOBCAT_* environment variables) to fd: markdown=1 for a table. */
void bobcat_options_print(int fd, int markdown);

#ifdef __cplusplus
}
#endif
#endif
