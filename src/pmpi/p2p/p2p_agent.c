/* p2p_agent: the progress agent (BOBCAT_PROGRESS=thread; docs/mpi.md, "Progress").
 *
 * Without it a rank's outstanding nonblocking collectives move only inside its own MPI calls, or,
 * on one node, when a node mate that waits does the rank's share through SMARTMAP (coll_nb's
 * helping). What nobody else can do for the rank is its leaders' phase through the real MPI (a
 * collective across nodes): that needs this process's MPI to run. The agent is a thread of the rank
 * that runs bobcat's progress pass (p2p_progress: the engine's arrivals, the nonblocking
 * collectives' state machines and their leaders' real requests) while the rank leads a node in a
 * nonblocking collective across nodes whose leaders' phase has not ended (p2p_agent_work), and
 * sleeps on a futex otherwise. On one node it stays asleep: a node mate that waits does a computing
 * rank's share (coll_nb's helping), and an agent beside it only took that node mate's core (overlap
 * at 64 KiB 40 % without it, 0 % with it: docs/benchmarks.md).
 *
 * The price, chosen once at MPI_Init: the real MPI runs at MPI_THREAD_MULTIPLE and the layer takes
 * its lock (base/pmpi_lock.h) at every entry, as under a MULTIPLE program, whatever level the
 * program asked for (MPI_Query_thread still answers the program's). The agent holds the lock only
 * for one pass at a time, and runs off its rank's core (on any other CPU of the job's, where the
 * scheduler finds it room: yod -SN on a node of two cores leaves one free), so the rank computes on
 * its own while the agent progresses.
 *
 * What it does not drive: requests of the real MPI the program holds itself (a call bobcat passed
 * on), which progress in the program's own calls as without bobcat. */
#include "p2p.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

int p2p_agent_work;

static pmpi_stat_t st_agent = {.name = "Progress_thread", .alg_names = {"pass"}};

static struct {
    pthread_t tid;
    int on;                             /* between a start that made it and its stop */
    _Atomic int stop;
    _Alignas(64) _Atomic uint32_t kick; /* bumped when a call starts, the futex the agent sleeps on */
    _Atomic int sleeping;
} G;

/* Polls between two passes while work is in flight: long enough that a pass does not take the
 * lock from the rank's own thread at every line it polls, short against a collective's step. */
#define AGENT_GAP_POLLS 32

static int pending(void) { return __atomic_load_n(&p2p_agent_work, __ATOMIC_SEQ_CST) != 0; }

/* Off the rank's own core: any other CPU of the job's cpuset (the kernel intersects the mask with
 * it), so a rank that computes keeps its core and the agent runs beside it; where the rank has no
 * other CPU (or is not bound to one), anywhere the rank may run. `own` is the rank's mask. */
static void place(const cpu_set_t *own)
{
    cpu_set_t others;
    CPU_ZERO(&others);
    long n = sysconf(_SC_NPROCESSORS_CONF);
    int bound = CPU_COUNT(own) == 1;
    for (long c = 0; c < n && c < CPU_SETSIZE; c++)
        if (!bound || !CPU_ISSET((int)c, own))
            CPU_SET((int)c, &others);
    if (sched_setaffinity(0, sizeof others, &others) != 0) /* EINVAL: no other CPU in the cpuset */
        sched_setaffinity(0, sizeof *own, own);
}

static cpu_set_t rank_mask;

static void *agent_main(void *arg)
{
    (void)arg;
    place(&rank_mask);
    for (;;) {
        uint32_t seen = atomic_load_explicit(&G.kick, memory_order_acquire);
        if (atomic_load_explicit(&G.stop, memory_order_acquire))
            break;
        if (!pending()) {
            atomic_store_explicit(&G.sleeping, 1, memory_order_seq_cst);
            if (!pending() && !atomic_load_explicit(&G.stop, memory_order_seq_cst))
                util_futex(&G.kick, FUTEX_WAIT_PRIVATE, seen); /* back at once if a kick came meanwhile */
            atomic_store_explicit(&G.sleeping, 0, memory_order_relaxed);
            continue;
        }
        pmpi_depth = 1;
        pmpi_lock_take();
        if (p2p_agent_work && p2p_ext_pending) {
            p2p_progress();
            pmpi_stat_path(&st_agent, PMPI_PATH_INPLACE, 0, 0);
        } else {
            p2p_agent_work = 0; /* a stale cue (the calls completed meanwhile) */
        }
        pmpi_depth = 0;
        pmpi_lock_drop();
        for (int i = 0; i < AGENT_GAP_POLLS && pending(); i++)
            util_poll_pause();
        sched_yield();
    }
    return NULL;
}

void p2p_agent_wanted(void)
{
    p2p_agent_work = 1;
    if (!G.on)
        return;
    atomic_fetch_add_explicit(&G.kick, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&G.sleeping, memory_order_seq_cst))
        util_futex(&G.kick, FUTEX_WAKE_PRIVATE, 1);
}

static void agent_forget(void) { G.on = 0; } /* a forked child has no agent */

int p2p_agent_start(void)
{
    static int once;
    if (!once) {
        pmpi_stats_register(&st_agent);
        pthread_atfork(NULL, NULL, agent_forget);
        once = 1;
    }
    if (sched_getaffinity(0, sizeof rank_mask, &rank_mask) != 0)
        CPU_ZERO(&rank_mask);
    atomic_store_explicit(&G.stop, 0, memory_order_relaxed);
    int rc = util_thread_start(&G.tid, agent_main, "bobcat-agent");
    if (rc != 0) {
        util_warn("BOBCAT_PROGRESS=thread: cannot start the progress thread (%s); nonblocking collectives progress "
                  "in the rank's own calls",
                  strerror(rc));
        return -1;
    }
    G.on = 1;
    return 0;
}

void p2p_agent_stop(void)
{
    if (!G.on)
        return;
    G.on = 0;
    atomic_store_explicit(&G.stop, 1, memory_order_seq_cst);
    atomic_fetch_add_explicit(&G.kick, 1, memory_order_seq_cst);
    util_futex(&G.kick, FUTEX_WAKE_PRIVATE, 1);
    pthread_join(G.tid, NULL);
}
