/* msg_engine: the engine's state (msg_engine.h) and what only reads or sets it: the peers, the
 * knob setters, the queries of the layers above, and taking the engine back from the helper thread.
 * The bottom of the msg/ stack (README.md): it calls no other file of it. */
#include <sched.h>
#include <stdlib.h>

#include "msg_engine.h"

msg_engine_t msg_engine;

BOBCAT_LAYER_API void (*bobcat_msg_idle_hook)(void);

BOBCAT_LAYER_API int bobcat_msg_set_peer(int local, void *inbox)
{
    if (local < 0 || local >= SMAP_MAX_LOCAL_RANKS || !inbox)
        return 0;
    E.peer[local] = smap_remote_address(local, inbox); /* the universal form, also for ourselves */
    return E.peer[local] != NULL && E.peer[local]->magic == MSG_INBOX_MAGIC;
}

BOBCAT_LAYER_API void bobcat_msg_set_fastbox(unsigned cells, size_t ring)
{
    unsigned c = 1;
    while (c * 2 <= cells && c < (1u << 16))
        c *= 2;
    E.cells = cells ? c : 0;
    E.cell_data = E.eager < MSG_CELL_DATA ? E.eager : MSG_CELL_DATA;
    E.ring = ring / MSG_LINE * MSG_LINE;
    E.box_max = E.ring && E.eager > E.cell_data ? (E.eager < E.ring ? E.eager : E.ring) : E.cell_data;
}

BOBCAT_LAYER_API void bobcat_msg_set_split(size_t min_bytes) { E.split_min = min_bytes; }

BOBCAT_LAYER_API size_t bobcat_msg_eager_limit(void) { return E.eager; }
BOBCAT_LAYER_API int bobcat_msg_active(void) { return E.active; }
BOBCAT_LAYER_API int bobcat_msg_busy(void) { return E.away || E.posted_head != NULL; }
BOBCAT_LAYER_API const msg_stats_t *bobcat_msg_stats(void)
{
    /* Derived here, not counted per message: a small send's stores are its cost (msg.h, fast box). */
    E.stats.eager_sent = E.eager_nodes + E.stats.fbox_sent - E.stats.fbox_rndv;
    return &E.stats;
}

/* Take the engine back from the helper (it may be in a pass: wait for its end). */
__attribute__((noinline)) void msg_come_home(void)
{
    unsigned spins = 0;
    for (;;) {
        uint32_t s = MSG_AWAY;
        if (atomic_compare_exchange_weak_explicit(&E.inbox->away, &s, MSG_HOME, memory_order_acquire,
                                                  memory_order_relaxed))
            break;
        if (++spins % 64 == 0)
            sched_yield();
        else
            util_poll_pause();
    }
    E.away = 0;
}

BOBCAT_LAYER_API void *bobcat_msg_alloc_shared(size_t size)
{
    void *p = calloc(1, size);
    if (p && !smap_is_shared(p)) {
        free(p);
        return NULL;
    }
    return p;
}
