/* pmpi_init: the MPI boundary of libbobcat: MPI_Init* checks that the MPI world is the one yod
 * planned (a mismatch means the launcher placed ranks differently than the plan and SMARTMAP's
 * idea of "my node" would be wrong) and starts the layer (base/pmpi_comm.c, coll/, p2p/); MPI_Finalize prints the
 * statistics and stops it. Every MPI call not defined in src/pmpi goes straight to the real MPI.
 * src/pmpi is the only place that includes mpi.h. */
#include "base/pmpi_comm.h"
#include "coll/pmpi_coll.h"
#include "p2p/p2p.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void check_world(void)
{
    int planned = smap_world_size(), size = 0;
    if (planned == 0)
        return; /* not started by yod */
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != planned) {
        fprintf(stderr, "bobcat: rank %d: MPI_COMM_WORLD has %d ranks but yod planned %d: was the program started by "
                        "another launcher inside yod?\n", smap_world_rank(), size, planned);
        PMPI_Abort(MPI_COMM_WORLD, 3);
    }
}

/* Simulated nodes (yod --simulate-nodes) share one host name. Open MPI names a window's shared-memory
 * file by host, job and communicator id (osc rdma: "osc_rdma.<host>.<job>.<cid>" in its backing
 * directory; osc sm alike), and two simulated nodes' communicators can get the same id, so one
 * node's file was removed or reused under the other's window ("A system call failed during shared
 * memory initialization": open(2) or unlink(2) of /dev/shm/osc_rdma.*, in MPICH's rma tests under
 * --simulate-nodes). Each simulated node gets its own backing directory, inside the job's directory
 * that yod makes for this (BOBCAT_SIM_SHM_DIR, in /dev/shm) and removes after the job. Set before the
 * real MPI starts (it reads its parameters then); a value the user set stays. */
static void sim_node_backing_dir(void)
{
    const util_options_t *o = util_options();
    if (!o || !o->SIMULATE_NODES || !o->SIM_SHM_DIR[0] || smap_world_size() == 0)
        return;
    const char *base = o->SIM_SHM_DIR;
    char dir[4096];
    int n = snprintf(dir, sizeof dir, "%s/simnode-%d", base, smap_world_rank() - smap_local_rank());
    if (n <= 0 || (size_t)n >= sizeof dir || (mkdir(dir, 0700) != 0 && errno != EEXIST))
        return; /* (then Open MPI's default, as before) */
    setenv("OMPI_MCA_osc_rdma_backing_directory", dir, 0);
    setenv("OMPI_MCA_osc_sm_backing_directory", dir, 0);
}

/* BOBCAT_PROGRESS=thread (p2p/p2p_agent.c): the real MPI must run at MPI_THREAD_MULTIPLE for the
 * agent, whatever the program asks. Decided before the real MPI starts, from the knobs alone. */
static int agent_wanted(void)
{
    const util_options_t *o = util_options();
    return o && o->MPI && o->PROGRESS == UTIL_V_THREAD && smap_world_size() > 0;
}

/* The level the program asked for (MPI_Init: single), which MPI_Query_thread answers while the agent
 * makes the real MPI's MULTIPLE; -1: the real MPI's own. */
static int user_level = -1;

/* program_level: the level the program runs at (what it asked for and got; with the progress
 * thread, what it asked for, as MPI_Query_thread tells it). */
static void layer_start(int wanted, int program_level)
{
    check_world();
    int provided = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&provided);
    pmpi_layer.thread_level = provided;
    pmpi_layer.program_mt = program_level == MPI_THREAD_MULTIPLE;
    pmpi_comm_layer_init();
    if (pmpi_layer.on)
        pc_knobs_init();
    p2p_init(); /* point-to-point (p2p/p2p_init.c): collective over WORLD, on every rank */
    if (p2p_comm_lookup(MPI_COMM_WORLD)) { /* (registered: every rank agreed, the layer is on everywhere) */
        if (pmpi_layer.opt->COLL_LEADERS == UTIL_V_P2P)
            pmpi_comm_lead_start(); /* before WORLD's node part, which then uses it too */
        pmpi_comm_node_part_early(MPI_COMM_WORLD, MPI_COMM_NULL);
#if defined(OPEN_MPI)
        /* No hidden communicators after this (base/pmpi_comm.c, "Hidden communicators"): WORLD's
         * node part now, if it spans nodes and the early one was not made. */
        if (p2p_set.program_threads) {
            if (pc_knobs.hier)
                pmpi_comm_get_coll(MPI_COMM_WORLD);
            pmpi_layer.no_hidden_comms = 1;
            /* The other communicators' leaders' phases over point-to-point on a copy of WORLD
             * made now (BOBCAT_COLL_LEADERS auto). */
            if (pc_knobs.hier && pmpi_layer.opt->COLL_LEADERS == UTIL_V_AUTO)
                pmpi_comm_lead_start();
            /* Open MPI 4.1 opens its topology framework in the first topology constructor, and
             * threads that get there at once crash in mca_topo_base_lazy_init (4 threads making
             * Cartesian communicators at once: 3 of 8 runs under yod). Open it here, with one
             * thread, by a Cartesian communicator of this rank alone. */
            int one = 1, periodic = 0;
            MPI_Comm cart = MPI_COMM_NULL;
            if (PMPI_Cart_create(MPI_COMM_SELF, 1, &one, &periodic, 0, &cart) == MPI_SUCCESS && cart != MPI_COMM_NULL)
                PMPI_Comm_free(&cart);
        }
#endif
    }
    if (pmpi_layer.on && provided == MPI_THREAD_MULTIPLE) {
        /* From here every entry point holds the layer's lock (base/pmpi_lock.h); the collectives'
         * waits let go of it when they yield. */
        coll_tune.yield = pmpi_mt_yield;
        pmpi_lock_start();
    }
    if (!wanted)
        return;
    if (!pmpi_layer.on)
        util_warn("BOBCAT_PROGRESS=thread: the MPI layer is off (%s), so there is no progress thread",
                  pmpi_layer.off_reason ? pmpi_layer.off_reason : "?");
    else if (provided != MPI_THREAD_MULTIPLE)
        util_warn("BOBCAT_PROGRESS=thread needs the real MPI at MPI_THREAD_MULTIPLE, which it does not provide "
                  "(it gave level %d): running without a progress thread; unset BOBCAT_PROGRESS",
                  provided);
    else
        p2p_agent_start();
}

/* What the program is told: what it asked for, or less if the real MPI gave less. */
static int told(int required, int provided) { return provided < required ? provided : required; }

BOBCAT_EXPORT int MPI_Init(int *argc, char ***argv)
{
    int wanted = agent_wanted(), provided;
    sim_node_backing_dir();
    int rc = wanted ? PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) : PMPI_Init(argc, argv);
    if (rc != MPI_SUCCESS)
        return rc;
    if (wanted)
        user_level = MPI_THREAD_SINGLE; /* MPI_Init's, which every real MPI provides */
    else
        PMPI_Query_thread(&provided); /* (an MPI may give more than SINGLE to MPI_Init) */
    layer_start(wanted, wanted ? user_level : provided);
    return rc;
}

BOBCAT_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int wanted = agent_wanted();
    sim_node_backing_dir();
    int rc = PMPI_Init_thread(argc, argv, wanted ? MPI_THREAD_MULTIPLE : required, provided);
    if (rc != MPI_SUCCESS)
        return rc;
    int level = wanted ? told(required, *provided) : *provided;
    layer_start(wanted, level);
    if (wanted) {
        user_level = level;
        *provided = level;
    }
    return rc;
}

BOBCAT_EXPORT int MPI_Query_thread(int *provided)
{
    PMPI_GUARD();
    if (user_level < 0)
        return PMPI_Query_thread(provided);
    *provided = user_level;
    return MPI_SUCCESS;
}

/* The aborting rank's word in the job's directory (BOBCAT_END_DIR, made by yod), before the MPI
 * ends the job: the MPI's own abort message goes to this rank's stderr, which Hydra may kill the
 * rank's proxy before relaying, and then yod could not say who aborted (python/bobcat/launcher/
 * job.py, read_aborts). Not guarded: an abort must go through whatever another thread holds; it
 * touches no state of the layer. */
BOBCAT_EXPORT int MPI_Abort(MPI_Comm comm, int errorcode)
{
    const util_options_t *o = util_options();
    if (o && o->END_DIR[0] && smap_world_size() > 0) {
        char path[4096], line[32];
        int fd = -1, n = snprintf(path, sizeof path, "%s/abort.%d", o->END_DIR, smap_world_rank());
        if (n > 0 && (size_t)n < sizeof path)
            fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd >= 0) {
            n = snprintf(line, sizeof line, "%d\n", errorcode);
            ssize_t w = write(fd, line, (size_t)n); /* (if it fails, yod has the MPI's message alone) */
            (void)w;
            close(fd);
        }
    }
    return PMPI_Abort(comm, errorcode);
}

BOBCAT_EXPORT int MPI_Finalize(void)
{
    p2p_agent_stop(); /* first, outside the lock: it may be waiting for it */
    {
        PMPI_GUARD(); /* MULTIPLE: one thread finalizes, but a helper of the program's may still be
                         finishing a call of its own */
        p2p_finalize(); /* before the statistics: it reports its own */
        if (pmpi_layer.initialized) {
            pmpi_run_finalize_hooks();
            pmpi_stats_report();
            pmpi_comm_layer_fini();
            pmpi_layer.initialized = 0;
        }
        coll_tune.yield = NULL;
        pmpi_lock_stop();
    }
    return PMPI_Finalize(); /* outside the guard: the lock is let go of first */
}
