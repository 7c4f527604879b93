/* msg_away: the progress rule across calls into the real MPI (msg.h, "Away"). While the owner sits
 * in a blocking call of the real MPI with receives posted, a helper thread of this process, woken
 * by waiting senders, runs the receiver's passes for it. The top of the msg/ stack. */
#include <linux/futex.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "msg_engine.h"

static struct {
    pthread_t thread;
    int started;
    _Atomic int stop;
} A;

static void *helper_main(void *arg)
{
    (void)arg;
    msg_inbox_t *ib = E.inbox;
    for (;;) {
        uint32_t seen = atomic_load_explicit(&ib->kick, memory_order_acquire);
        if (atomic_load_explicit(&A.stop, memory_order_acquire))
            break;
        uint32_t s = MSG_AWAY;
        if (atomic_compare_exchange_strong_explicit(&ib->away, &s, MSG_PROXY, memory_order_acquire,
                                                    memory_order_relaxed)) {
            msg_progress_helper();
            atomic_store_explicit(&ib->away, MSG_AWAY, memory_order_release);
        }
        /* shared (senders of other processes wake it); back at once if a kick came meanwhile */
        util_futex(&ib->kick, FUTEX_WAIT, seen);
    }
    return NULL;
}

static void helper_forget(void) { A.started = 0; } /* a forked child has no helper */

static int helper_start(void)
{
    static int atfork;
    if (!atfork && pthread_atfork(NULL, NULL, helper_forget) == 0)
        atfork = 1;
    atomic_store_explicit(&A.stop, 0, memory_order_relaxed);
    int rc = util_thread_start(&A.thread, helper_main, "bobcat-progress");
    if (rc != 0) {
        util_error("msg: cannot start the progress helper thread (%s): a rank blocked in the real MPI will not "
                   "match its node mates' synchronous sends",
                   strerror(rc));
        return -1;
    }
    A.started = 1;
    return 0;
}

BOBCAT_LAYER_API int bobcat_msg_away_begin(void)
{
    if (!E.active || E.away || !E.posted_head)
        return 0;
    if (!A.started && helper_start() != 0)
        return 0;
    /* the helper's reserve: enough for a node and the box messages before it, twice */
    while (E.unexp_nfree < 2 * (E.cells + 2)) {
        msg_unexp_t *u = malloc(sizeof *u + E.eager);
        if (!u)
            break;
        u->data = (char *)(u + 1);
        msg_unexp_put(u);
    }
    E.away = 1;
    atomic_store_explicit(&E.inbox->away, MSG_AWAY, memory_order_release);
    return 1;
}

BOBCAT_LAYER_API void bobcat_msg_away_end(int went)
{
    if (went)
        home(); /* nothing to do if a callback came home already */
}

BOBCAT_LAYER_API void bobcat_msg_nudge(const msg_req_t *req)
{
    if (!E.active || req->complete || !req->waits_done)
        return;
    msg_inbox_t *ib = E.peer[req->dest];
    if (!ib || atomic_load_explicit(&ib->away, memory_order_relaxed) == MSG_HOME)
        return;
    atomic_fetch_add_explicit(&ib->kick, 1, memory_order_release);
    util_futex(&ib->kick, FUTEX_WAKE, 1);
}

BOBCAT_LAYER_API void bobcat_msg_away_stop(void)
{
    home();
    if (!A.started)
        return;
    atomic_store_explicit(&A.stop, 1, memory_order_release);
    atomic_fetch_add_explicit(&E.inbox->kick, 1, memory_order_release);
    util_futex(&E.inbox->kick, FUTEX_WAKE, 1);
    pthread_join(A.thread, NULL);
    A.started = 0;
}
