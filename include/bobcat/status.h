/* bobcat status codes: BOBCAT_OK = 0, errors negative. Names come from one list (BOBCAT_STATUS_LIST). */
#ifndef BOBCAT_STATUS_H
#define BOBCAT_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

#define BOBCAT_STATUS_LIST(X)                                                      \
    X(OK, 0, "success")                                                            \
    X(ERR_INVAL, -1, "invalid argument or setting")                                \
    X(ERR_NOMEM, -2, "out of memory")                                              \
    X(ERR_SYS, -3, "system call failed")                                           \
    X(ERR_PAGES, -4, "requested page size not available")                          \
    X(ERR_LAYOUT, -5, "address layout conflict")                                   \
    X(ERR_TIMEOUT, -6, "timed out")                                                \
    X(ERR_PEER, -7, "peer rejected or misbehaved")                                 \
    X(ERR_LIMIT, -8, "a documented limit was exceeded")

typedef enum {
#define BOBCAT_STATUS_ENUM(name, value, text) BOBCAT_##name = value,
    BOBCAT_STATUS_LIST(BOBCAT_STATUS_ENUM)
#undef BOBCAT_STATUS_ENUM
} bobcat_status_t;

/* Human-readable text of a status code. */
const char *bobcat_status_string(bobcat_status_t status);

#ifdef __cplusplus
}
#endif
#endif
