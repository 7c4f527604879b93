/* msg_inbox: this rank's inbox (the Vyukov MPSC list of message nodes, msg.h) and the pool of
 * nodes it sends from: setting both up, growing the pool, and the consumer's pop. */
#include <stdlib.h>
#include <string.h>

#include "msg_engine.h"

/* Grow the sender's pool by one chunk of nodes (in the segment: receivers read them). */
int msg_pool_grow(void)
{
    char *chunk = NULL;
    if (posix_memalign((void **)&chunk, MSG_LINE, E.node_size * E.grow) != 0 || !smap_is_shared(chunk)) {
        util_error("msg: cannot allocate message nodes in the segment: raise BOBCAT_HEAP");
        free(chunk);
        return 0;
    }
    for (unsigned i = 0; i < E.grow; i++) {
        msg_node_t *n = (msg_node_t *)(chunk + (size_t)i * E.node_size);
        n->pool_next = E.free_nodes;
        E.free_nodes = n;
    }
    E.stats.pool_nodes += E.grow;
    return 1;
}

BOBCAT_LAYER_API bobcat_status_t bobcat_msg_init(size_t eager, unsigned nodes, void **inbox_p)
{
    if (E.active) {
        *inbox_p = E.inbox;
        return BOBCAT_OK;
    }
    if (eager > (1u << 20)) {
        util_error("msg: BOBCAT_P2P_EAGER must be <= 1M (got %zu)", eager);
        return BOBCAT_ERR_INVAL;
    }
    E.my_local = smap_local_rank();
    msg_inbox_t *ib = NULL;
    if (posix_memalign((void **)&ib, 4096, sizeof *ib) != 0 || !smap_is_shared(ib)) {
        util_error("msg: cannot allocate the inbox in the segment (raise BOBCAT_HEAP)");
        free(ib);
        return BOBCAT_ERR_NOMEM;
    }
    void *win = smap_remote_address(E.my_local, ib);
    if (!win) {
        util_error("msg: this rank's own window is not mapped; point-to-point stays with the real MPI");
        free(ib);
        return BOBCAT_ERR_LAYOUT;
    }
    E.delta = (uintptr_t)win - (uintptr_t)ib;
    memset(ib, 0, sizeof *ib);
    ib->magic = MSG_INBOX_MAGIC;
    ib->stub.kind = MSG_NODE_STUB;
    atomic_store_explicit(&ib->tail, universal(&ib->stub), memory_order_release);
    E.head = (msg_node_t *)(uintptr_t)universal(&ib->stub);
    E.eager = eager;
    E.node_size = (sizeof(msg_node_t) + eager + MSG_LINE - 1) / MSG_LINE * MSG_LINE;
    E.grow = nodes ? nodes : 64;
    E.inbox = ib;
    if (!msg_pool_grow()) {
        free(ib);
        return BOBCAT_ERR_NOMEM;
    }
    E.active = 1;
    *inbox_p = ib;
    return BOBCAT_OK;
}

BOBCAT_LAYER_API bobcat_status_t bobcat_msg_setup(void **inbox_p)
{
    util_options_t o;
    if (util_options_load(&o) != BOBCAT_OK || !o.P2P)
        return BOBCAT_ERR_INVAL;
    size_t page;
    if (smap_world_size() == 0 || smap_segment_info(&page, NULL) == SMAP_PAGES_NONE)
        return BOBCAT_ERR_INVAL; /* not started by yod: no segment, no windows */
    bobcat_status_t st = bobcat_msg_init(o.P2P_EAGER, (unsigned)o.P2P_NODES, inbox_p);
    if (st == BOBCAT_OK) {
        bobcat_msg_set_fastbox(o.P2P_FASTBOX > (1u << 16) ? (1u << 16) : (unsigned)o.P2P_FASTBOX, o.P2P_FASTBOX_RING);
        bobcat_msg_set_split(o.P2P_SPLIT_MIN);
        E.box_rndv = o.P2P_FASTBOX_RNDV;
    }
    return st;
}

/* Take the next node out of the inbox (Vyukov's pop); NULL if none is fully linked yet. */
msg_node_t *msg_inbox_pop(void)
{
    msg_node_t *stub = (msg_node_t *)(uintptr_t)universal(&E.inbox->stub);
    msg_node_t *head = E.head;
    uint64_t next = atomic_load_explicit(&head->next, memory_order_acquire);
    if (head == stub) {
        if (!next)
            return NULL;
        E.head = head = (msg_node_t *)(uintptr_t)next;
        next = atomic_load_explicit(&head->next, memory_order_acquire);
    }
    if (next) {
        E.head = (msg_node_t *)(uintptr_t)next;
        return head;
    }
    if (atomic_load_explicit(&E.inbox->tail, memory_order_acquire) != (uint64_t)(uintptr_t)head)
        return NULL; /* a sender is between its exchange and its link */
    inbox_push(E.inbox, &E.inbox->stub);
    next = atomic_load_explicit(&head->next, memory_order_acquire);
    if (next) {
        E.head = (msg_node_t *)(uintptr_t)next;
        return head;
    }
    return NULL;
}
