/* pmpi_comm: layer state and per-communicator info (see pmpi_comm.h for the contract).
 *
 * The info hangs on the communicator as an attribute: MPI_Comm_free (and MPI_Finalize for
 * communicators still alive) runs our delete callback, which frees it; MPI_Comm_dup's copy
 * callback is MPI_COMM_NULL_COPY_FN, so a dup starts without one and builds its own (its node
 * part must be its own: a dup's collectives are a separate stream from the parent's). The rank
 * tables come from the plan yod wrote (BOBCAT_PLAN) and MPI's group translation: local
 * computation only, so point-to-point calls may ask for them. The node part needs PMPI
 * collectives on the communicator and is built by the first bobcat collective on it. */
#include "pmpi_comm.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

pmpi_layer_t pmpi_layer = {.lead_world = MPI_COMM_NULL};

static int comm_keyval = MPI_KEYVAL_INVALID;
static pmpi_comm_t *world_pc;
/* One-entry cache in front of MPI_Comm_get_attr (a hash lookup in both MPIs): programs run most
 * of their calls on one or two communicators. The delete callback clears it, so a handle the MPI
 * reuses after a free never finds stale info. */
static MPI_Comm cache_comm = MPI_COMM_NULL;
static pmpi_comm_t *cache_pc;
/* The attribute value of a communicator bobcat does not handle (intercommunicator, ranks outside
 * MPI_COMM_WORLD): remembered so the check is not redone on every call. */
static pmpi_comm_t not_handled;

static pmpi_comm_ext_free_fn ext_free[PMPI_COMM_EXT_MAX];
static int ext_count;

/* Shared areas (a communicator's control area, its nonblocking collectives' ring) whose owner has
 * let go but whose peers may still use them; freed once every peer has (*refs == 0). Only the owner
 * may free: the memory is its heap. */
typedef struct zombie {
    void *mem;
    _Atomic int64_t *refs;
    struct zombie *next;
} zombie_t;
static zombie_t *zombies;

static void (*fini_hooks[8])(void);
static int fini_count;

void pmpi_at_finalize(void (*fn)(void))
{
    if (fini_count < 8)
        fini_hooks[fini_count++] = fn;
    else
        util_error("internal: more than 8 MPI_Finalize hooks");
}

void pmpi_run_finalize_hooks(void)
{
    for (int i = 0; i < fini_count; i++)
        fini_hooks[i]();
}

int pmpi_comm_ext_register(pmpi_comm_ext_free_fn free_fn)
{
    if (ext_count >= PMPI_COMM_EXT_MAX) {
        util_error("internal: more than %d communicator extensions (raise PMPI_COMM_EXT_MAX)", PMPI_COMM_EXT_MAX);
        return -1;
    }
    ext_free[ext_count] = free_fn;
    return ext_count++;
}

static void reap_zombies(void)
{
    for (zombie_t **z = &zombies; *z;) {
        if (atomic_load_explicit((*z)->refs, memory_order_acquire) == 0) {
            zombie_t *dead = *z;
            *z = dead->next;
            free(dead->mem);
            free(dead);
        } else {
            z = &(*z)->next;
        }
    }
}

void pmpi_free_when_unused(void *mem, _Atomic int64_t *refs, int last)
{
    zombie_t *z = last ? NULL : malloc(sizeof *z);
    if (last)
        free(mem);
    else if (z) {
        *z = (zombie_t){mem, refs, zombies};
        zombies = z;
    } /* else: out of memory for the note, the area stays (a leak, never a use after free) */
    reap_zombies();
}

int pmpi_real_requests;
static int early_alive; /* node parts built when their communicator was made (pmpi_comm_node_part_early) */
void (*pmpi_node_part_built)(pmpi_comm_t *pc);
void (*pmpi_node_part_freed)(pmpi_comm_t *pc);

static void comm_destroy(pmpi_comm_t *pc)
{
    early_alive -= pc->early;
    for (int i = 0; i < ext_count; i++)
        if (pc->ext[i] && ext_free[i])
            ext_free[i](pc, pc->ext[i]);
    if (pc->coll_ready) {
        coll_ctrl_t *ctrl = pc->cn.ctrl;
        int last = coll_node_release(&pc->cn);
        if (pc->node_rank == 0)
            pmpi_free_when_unused(ctrl, &ctrl->refs, last);
        if (pc->node_nb)
            pmpi_nb_area_release(pc->node_nb, pc->node_nb_own);
        free((void *)pc->cn.base);
        free(pc->node_ranks);
        free(pc->leader_rank);
        free(pc->pos);
        /* Inside MPI_Finalize the MPI is tearing communicators down itself. */
        if (!pmpi_layer.finalizing) {
            if (pmpi_node_part_freed)
                pmpi_node_part_freed(pc);
            if (pc->node_comm != MPI_COMM_NULL)
                PMPI_Comm_free(&pc->node_comm);
            if (pc->leaders_comm != MPI_COMM_NULL)
                PMPI_Comm_free(&pc->leaders_comm);
        }
    }
    reap_zombies();
    free(pc);
}

static int comm_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    PMPI_GUARD(); /* the real MPI calls this from any thread that frees a communicator */
    (void)keyval;
    (void)extra;
    if (cache_comm == comm) {
        cache_comm = MPI_COMM_NULL;
        cache_pc = NULL;
    }
    if (attr && attr != &not_handled)
        comm_destroy(attr);
    return MPI_SUCCESS;
}

/* Plan node and local index of every world rank (docs/design/contracts.md section 1). */
static int parse_plan(const char *plan, int world_size, int *node_p, int *local_p)
{
    const char *p = plan;
    long first = 0, node_base = 0;
    while (p && *p) {
        char *end;
        long n = strtol(p, &end, 10);
        if (end == p || *end != ':' || n <= 0)
            return -1;
        long rpn = strtol(end + 1, &end, 10);
        if (rpn <= 0 || (*end && *end != ';'))
            return -1;
        for (long i = 0; i < n && first + i < world_size; i++) {
            node_p[first + i] = (int)(node_base + i / rpn);
            local_p[first + i] = (int)(i % rpn);
        }
        first += n;
        node_base += (n + rpn - 1) / rpn;
        p = *end ? end + 1 : end;
    }
    return first == world_size ? 0 : -1;
}

static pmpi_comm_t *comm_build(MPI_Comm comm)
{
    int inter = 0, size, rank;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter)
        return &not_handled;
    PMPI_Comm_size(comm, &size);
    PMPI_Comm_rank(comm, &rank);
    size_t n = (size_t)size;
    pmpi_comm_t *pc = calloc(1, sizeof *pc + n * (3 * sizeof(int) + sizeof(uintptr_t)));
    if (!pc)
        return NULL;
    pc->peer_base = (uintptr_t *)(pc + 1);
    pc->world = (int *)(pc->peer_base + n);
    pc->node = pc->world + n;
    pc->local = pc->node + n;
    pc->comm = comm;
    pc->rank = rank;
    pc->size = size;
    pc->node_comm = pc->leaders_comm = MPI_COMM_NULL;
    pc->lead_tag = -1;
    if (comm == MPI_COMM_WORLD) {
        for (int r = 0; r < size; r++)
            pc->world[r] = r;
    } else {
        MPI_Group g, wg;
        int *idx = malloc(n * sizeof(int));
        if (!idx) {
            free(pc);
            return NULL;
        }
        for (int r = 0; r < size; r++)
            idx[r] = r;
        PMPI_Comm_group(comm, &g);
        PMPI_Comm_group(MPI_COMM_WORLD, &wg);
        PMPI_Group_translate_ranks(g, size, idx, wg, pc->world);
        PMPI_Group_free(&g);
        PMPI_Group_free(&wg);
        free(idx);
    }
    const pmpi_layer_t *L = &pmpi_layer;
    pc->single_node = 1;
    for (int r = 0; r < size; r++) {
        int w = pc->world[r];
        if (w == MPI_UNDEFINED || w < 0 || w >= L->world_size) {
            free(pc); /* a process from outside MPI_COMM_WORLD (dynamic processes) */
            return &not_handled;
        }
        pc->node[r] = L->world_node[w];
        pc->local[r] = pc->node[r] == L->node ? smap_pe_is_local(w) : -1;
        if (pc->local[r] >= 0) {
            pc->on_node++;
            if (r != rank)
                pc->peer_base[r] = (uintptr_t)smap_remote_address(pc->local[r], (void *)SMAP_HEAP_BASE) - SMAP_HEAP_BASE;
        } else {
            pc->single_node = 0;
        }
    }
    return pc;
}

pmpi_comm_t *pmpi_comm_get(MPI_Comm comm)
{
    if (!pmpi_layer.on)
        return NULL;
    if (comm == MPI_COMM_WORLD)
        return world_pc;
    if (comm == cache_comm)
        return cache_pc;
    if (comm == MPI_COMM_NULL)
        return NULL;
    void *v = NULL;
    int flag = 0;
    if (PMPI_Comm_get_attr(comm, comm_keyval, &v, &flag) != MPI_SUCCESS)
        return NULL;
    pmpi_comm_t *pc = v;
    if (!flag) {
        pc = comm_build(comm);
        if (!pc)
            return NULL;
        if (PMPI_Comm_set_attr(comm, comm_keyval, pc) != MPI_SUCCESS) {
            if (pc != &not_handled)
                free(pc);
            return NULL;
        }
    }
    if (pc == &not_handled)
        pc = NULL;
    cache_comm = comm;
    cache_pc = pc;
    return pc;
}

pmpi_comm_t *pmpi_comm_peek(MPI_Comm comm)
{
    if (!pmpi_layer.on || comm == MPI_COMM_NULL)
        return NULL;
    if (comm == MPI_COMM_WORLD)
        return world_pc;
    if (comm == cache_comm)
        return cache_pc;
    void *v = NULL;
    int flag = 0;
    if (PMPI_Comm_get_attr(comm, comm_keyval, &v, &flag) != MPI_SUCCESS || !flag || v == &not_handled)
        return NULL;
    return v;
}

/* A receive on a private communicator that nothing ever matches: testing it drives the real
 * MPI's whole progress engine (MPI_Test runs a progress pass in both MPIs; MPICH's Iprobe may not
 * reach the netmod), and it is cancelled at MPI_Finalize. */
static MPI_Comm progress_comm = MPI_COMM_NULL;
static MPI_Request progress_req = MPI_REQUEST_NULL;
static int progress_dummy;

static void mpi_progress(void)
{
    int flag;
    if (progress_req != MPI_REQUEST_NULL)
        PMPI_Test(&progress_req, &flag, MPI_STATUS_IGNORE);
}

int pmpi_rma_windows;

/* A rank waiting inside an on-node collective: the real MPI's progress every 16th yield, or at
 * every yield while windows with real-MPI traffic exist (a peer's MPICH passive-target lock or
 * access epoch waits for this rank's engine: 50-130 us per operation under yod with every 16th,
 * against ~1 us bare, bench/rma). */
static void coll_wait_progress(unsigned yields)
{
    if (pmpi_rma_windows || yields % 16 == 0)
        mpi_progress();
}

void pmpi_mpi_progress(void) { mpi_progress(); }

/* The leaders' communicator's error handler. A leaders' call fails in the real MPI only when the
 * program's call is erroneous (a broadcast whose counts differ across nodes, say), so the
 * program's communicator decides, as it would have for the real MPI's own call: where its handler
 * is fatal, now; else the code goes back to the layer's call, which reports it through that handler
 * where it can tell (MPI_Bcast, MPI_Ibcast). The communicator made at the layer's set-up would
 * otherwise keep the handler the program's had then. */
static int leaders_keyval = MPI_KEYVAL_INVALID;
static MPI_Errhandler leaders_eh = MPI_ERRHANDLER_NULL;

void pmpi_comm_lead_error(const pmpi_comm_t *pc, int code)
{
    int fatal = 0;
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    if (PMPI_Comm_get_errhandler(pc->comm, &eh) != MPI_SUCCESS)
        return;
    fatal = eh == MPI_ERRORS_ARE_FATAL;
    PMPI_Errhandler_free(&eh);
    if (fatal)
        PMPI_Comm_call_errhandler(pc->comm, code);
}

static void leaders_error(MPI_Comm *lcomm, int *code, ...)
{
    void *v = NULL;
    int flag = 0;
    if (PMPI_Comm_get_attr(*lcomm, leaders_keyval, &v, &flag) == MPI_SUCCESS && flag)
        pmpi_comm_lead_error((const pmpi_comm_t *)v, *code);
}

static void leaders_errors_to(pmpi_comm_t *pc)
{
    if (leaders_keyval == MPI_KEYVAL_INVALID &&
        (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &leaders_keyval, NULL) != MPI_SUCCESS ||
         PMPI_Comm_create_errhandler(leaders_error, &leaders_eh) != MPI_SUCCESS))
        return; /* (the handler the program's communicator had: fatal by default) */
    if (PMPI_Comm_set_attr(pc->leaders_comm, leaders_keyval, pc) == MPI_SUCCESS)
        PMPI_Comm_set_errhandler(pc->leaders_comm, leaders_eh);
}

/* The leaders' phase over point-to-point (pmpi_comm_lead_start) for this communicator: forced, or
 * auto where the layer may make no communicators after MPI_Init (WORLD's node part, made inside
 * MPI_Init before that is decided, keeps its leaders' communicator). */
static int lead_p2p(void)
{
    const pmpi_layer_t *L = &pmpi_layer;
    if (L->lead_world == MPI_COMM_NULL)
        return 0;
    return L->opt->COLL_LEADERS == UTIL_V_P2P || (L->opt->COLL_LEADERS == UTIL_V_AUTO && L->no_hidden_comms);
}

/* Rank 0's tag for a new communicator's leaders' phase (see pmpi_comm_lead_start). Threads of a
 * rank may make communicators at once. */
static int lead_tag_new(void)
{
    static _Atomic unsigned seq;
    unsigned s = atomic_fetch_add_explicit(&seq, 1, memory_order_relaxed);
    int block = pmpi_layer.lead_block;
    unsigned blocks = (unsigned)(pmpi_layer.lead_tags / block);
    return pmpi_layer.world_rank * pmpi_layer.lead_tags + block * (int)(s % blocks);
}

/* Fewer tags per rank than this and the leaders' phase keeps its communicators (or, where it may
 * not make them, the real MPI keeps such collectives). */
#define LEAD_TAGS_MIN 64

void pmpi_comm_lead_start(void)
{
    pmpi_layer_t *L = &pmpi_layer;
    void *ub = NULL;
    int flag = 0;
    if (!L->on || L->lead_world != MPI_COMM_NULL ||
        PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag) != MPI_SUCCESS || !flag)
        return;
    long long tags = ((long long)*(const int *)ub + 1) / L->world_size;
    if (tags < LEAD_TAGS_MIN) {
        util_warn("the MPI's %d tags leave %lld per rank for leaders' phases over point-to-point, fewer than %d: "
                  "they keep their communicators",
                  *(const int *)ub, tags, LEAD_TAGS_MIN);
        return;
    }
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &L->lead_world) != MPI_SUCCESS) {
        L->lead_world = MPI_COMM_NULL;
        return;
    }
    /* Its calls' errors go back to the layer's call (pmpi_comm_lead_error decides). */
    PMPI_Comm_set_errhandler(L->lead_world, MPI_ERRORS_RETURN);
    L->lead_tags = tags > INT_MAX ? INT_MAX : (int)tags;
    /* A block per communicator: its blocking and nonblocking calls' tags, and where the tags are many
     * (Open MPI's and MPICH's MPI_TAG_UB of 2^31 - 1: 2^31 / ranks) 62 for its persistent ones (the
     * rest go to the real MPI); else those all go there. */
    L->lead_block = L->lead_tags >= (1 << 16) ? 64 : 2;
}

coll_nb_area_t *pmpi_nb_area_new(int size)
{
    size_t bytes = (coll_nb_area_size(size) + COLL_LINE - 1) & ~(size_t)(COLL_LINE - 1);
    coll_nb_area_t *a = aligned_alloc(COLL_LINE, bytes);
    if (a && !smap_is_shared(a)) {
        free(a);
        a = NULL;
    }
    if (a)
        coll_nb_area_init(a, size);
    return a;
}

void pmpi_nb_area_release(coll_nb_area_t *view, void *own)
{
    int last = atomic_fetch_sub_explicit(&view->refs, 1, memory_order_acq_rel) == 1;
    if (own)
        pmpi_free_when_unused(own, &view->refs, last);
}

static int node_part_build(pmpi_comm_t *pc)
{
    const pmpi_layer_t *L = &pmpi_layer;
    int me = pc->rank, mynode = pc->node[me];
    /* Leaders, node runs and the node's ranks, all from the tables. */
    int nn = 0, blocked = 1;
    pc->leader = -1;
    pc->node_ranks = malloc((size_t)pc->on_node * sizeof(int));
    pc->leader_rank = malloc((size_t)pc->size * sizeof(int));
    uintptr_t *base = malloc((size_t)pc->on_node * sizeof(uintptr_t));
    if (!pc->node_ranks || !pc->leader_rank || !base)
        goto fail;
    for (int r = 0; r < pc->size; r++) {
        int first = 1;
        for (int q = 0; q < r && first; q++)
            first = pc->node[q] != pc->node[r];
        if (first)
            pc->leader_rank[r] = nn++;
        else
            for (int q = 0; q < r; q++)
                if (pc->node[q] == pc->node[r]) {
                    pc->leader_rank[r] = pc->leader_rank[q];
                    break;
                }
        if (!first && pc->node[r - 1] != pc->node[r])
            blocked = 0; /* a node seen before, but not just before r: its ranks are not one run */
        if (pc->node[r] == mynode) {
            if (pc->leader < 0)
                pc->leader = r;
            if (r == me)
                pc->node_rank = pc->node_size;
            base[pc->node_size] = pc->peer_base[r];
            pc->node_ranks[pc->node_size++] = r;
        }
    }
    pc->nnodes = nn;
    pc->blocked = blocked;
    /* Node order: one allocation for pos, by_pos, node_first and node_count. */
    if (!(pc->pos = malloc((2 * (size_t)pc->size + 2 * (size_t)nn) * sizeof(int))))
        goto fail;
    pc->by_pos = pc->pos + pc->size;
    pc->node_first = pc->by_pos + pc->size;
    pc->node_count = pc->node_first + nn;
    for (int k = 0; k < nn; k++)
        pc->node_count[k] = 0;
    for (int r = 0; r < pc->size; r++)
        pc->node_count[pc->leader_rank[r]]++;
    for (int k = 0, at = 0; k < nn; k++) {
        pc->node_first[k] = at;
        at += pc->node_count[k];
        pc->node_count[k] = 0; /* refilled below as a cursor, ends equal */
    }
    for (int r = 0; r < pc->size; r++) {
        int k = pc->leader_rank[r];
        pc->pos[r] = pc->node_first[k] + pc->node_count[k]++;
        pc->by_pos[pc->pos[r]] = r;
    }
    /* One node: the node is comm itself, in comm's order, and there is no leaders' phase, so no
     * communicator is made for either (node_comm and leaders_comm stay MPI_COMM_NULL; only the
     * calls across nodes use them). Making them was two hidden communicator constructions inside
     * the program's first collective on comm, and at MPI_THREAD_MULTIPLE Open MPI 4.1's context-id
     * agreement hung for good when other threads made communicators meanwhile (MPICH's
     * threads/comm/comm_create_group_threads: 4 s bare, stuck under yod). */
    int p2p = nn > 1 && lead_p2p();
    if (nn > 1 && !p2p &&
        (PMPI_AWAY(PMPI_Comm_split(pc->comm, mynode, me, &pc->node_comm)) != MPI_SUCCESS ||
         PMPI_AWAY(PMPI_Comm_split(pc->comm, pc->leader == me ? 0 : MPI_UNDEFINED, me, &pc->leaders_comm)) !=
             MPI_SUCCESS))
        goto fail;
    if (pc->leaders_comm != MPI_COMM_NULL)
        leaders_errors_to(pc);
    /* The control area lives in the node's first rank's heap; the others learn its address. */
    uint64_t addr = 0;
    coll_ctrl_t *ctrl = NULL;
    if (pc->node_rank == 0) {
        ctrl = aligned_alloc(COLL_LINE, (coll_ctrl_size(pc->node_size) + COLL_LINE - 1) & ~(size_t)(COLL_LINE - 1));
        if (ctrl && smap_is_shared(ctrl))
            coll_ctrl_init(ctrl, pc->node_size);
        addr = (uint64_t)(uintptr_t)ctrl;
    }
    if (p2p) {
        /* No node communicator to broadcast on: every rank's address, rank 0's new tag and the node
         * ring's area, from all (a collective on comm itself, which makes no context). */
        coll_nb_area_t *nb = pc->node_rank == 0 && pc->node_size > 1 ? pmpi_nb_area_new(pc->node_size) : NULL;
        uint64_t mine[3] = {addr, me == 0 ? (uint64_t)lead_tag_new() : 0, (uint64_t)(uintptr_t)nb};
        uint64_t *all = util_alloc_or_die(3 * (size_t)pc->size * sizeof(uint64_t), "a communicator's node part");
        if (PMPI_AWAY(PMPI_Allgather(mine, 3, MPI_UINT64_T, all, 3, MPI_UINT64_T, pc->comm)) != MPI_SUCCESS) {
            free(all);
            free(nb);
            goto fail;
        }
        addr = all[3 * (size_t)pc->node_ranks[0]];
        pc->lead_tag = (int)all[1];
        pc->node_nb_ok = 1; /* every node of more than one rank has its area */
        for (int k = 0; k < nn; k++)
            if (pc->node_count[k] > 1 && !all[3 * (size_t)pc->by_pos[pc->node_first[k]] + 2])
                pc->node_nb_ok = 0;
        if (pc->node_nb_ok && nb)
            pc->node_nb_own = nb;
        else
            free(nb);
        uint64_t area = all[3 * (size_t)pc->node_ranks[0] + 2];
        if (pc->node_nb_ok && area)
            pc->node_nb = (coll_nb_area_t *)(uintptr_t)(area + base[0]);
        free(all);
    } else if (PMPI_AWAY(PMPI_Bcast(&addr, 1, MPI_UINT64_T, 0, nn > 1 ? pc->node_comm : pc->comm)) != MPI_SUCCESS) {
        goto fail;
    }
    if (!addr) {
        util_error("no heap for a communicator's control area: raise the heap (yod --heap)");
        goto fail;
    }
    pc->cn = (coll_node_t){.size = pc->node_size, .rank = pc->node_rank, .base = base,
                           .ctrl = (coll_ctrl_t *)(uintptr_t)(addr + base[0]), .spin = L->spin,
                           .progress = coll_wait_progress};
    base = NULL;
    pc->coll_ready = 1;
    if (pmpi_node_part_built)
        pmpi_node_part_built(pc);
    return 0;
fail:
    free(base);
    return -1;
}

/* Hidden communicators. A communicator that spans nodes needs two of the layer's own for its
 * collectives (node_part_build: node_comm, leaders_comm), made by MPI_Comm_split when it is made
 * (pmpi_comm_node_part_early) or in the program's first collective on it. At
 * MPI_THREAD_MULTIPLE on Open MPI 4.1 those splits hang: in MPICH's threads/comm/
 * comm_create_group_threads2 across two simulated nodes (4 threads per rank, each making
 * communicators from WORLD with MPI_Comm_create_group), every run stuck with three threads of a
 * rank in ompi_comm_nextcid for the layer's splits and the fourth there for its
 * MPI_Comm_create_group; the program alone, which never splits, runs in 4 s, and MPICH runs it
 * with the splits. So when some rank's program runs at MULTIPLE on Open MPI
 * (pmpi_layer.no_hidden_comms, the same on every rank) the layer makes no node or leaders
 * communicators after MPI_Init (made with MPI_Comm_create_group from a copy of WORLD they hang
 * too: tests/external/ompi_split_threads.c, mode 2). WORLD gets its node part there, before the
 * program can have a second thread in MPI, and with it pmpi_layer.lead_world; every other
 * communicator that spans nodes builds a node part without communicators (lead_tag >= 0), whose
 * leaders' phases are point-to-point on lead_world (coll/pmpi_coll_lead.c), and a ring area for
 * its nonblocking calls' node phases (node_nb), so its collectives stay the layer's, blocking,
 * nonblocking and persistent. BOBCAT_COLL_LEADERS=p2p does the same for every communicator, WORLD
 * too; =comm never, and then such communicators' collectives go to the real MPI. Communicators on
 * one node need none of this and keep the layer's collectives. */
/* A communicator that spans nodes where the layer may make no communicators and its leaders' phase
 * may not run over point-to-point either (BOBCAT_COLL_LEADERS=comm, or no lead_world): its
 * collectives stay the real MPI's. */
static int no_node_part(const pmpi_comm_t *pc)
{
    return !pc->single_node && pmpi_layer.no_hidden_comms && !lead_p2p();
}

pmpi_comm_t *pmpi_comm_get_coll(MPI_Comm comm)
{
    pmpi_comm_t *pc = pmpi_comm_get(comm);
    if (!pc || pc->coll_ready)
        return pc;
    if (no_node_part(pc))
        return NULL;
    if (node_part_build(pc) != 0) {
        util_warn("could not set up bobcat's collectives on a communicator: it uses the real MPI's");
        /* Every rank ran the same PMPI calls, so all fail alike or the MPI aborted already. */
        return NULL;
    }
    return pc;
}

pmpi_why_t pmpi_comm_coll_why(MPI_Comm comm)
{
    if (!pmpi_layer.on)
        return PMPI_WHY_OFF;
    const pmpi_comm_t *pc = pmpi_comm_peek(comm);
    if (!pc)
        return PMPI_WHY_INTER;
    return no_node_part(pc) ? PMPI_WHY_THREADS : PMPI_WHY_SETUP;
}

/* Why early: a nonblocking call may not build the node part (a communicator split, which would
 * deadlock a legal program whose ranks enter other collectives between starting it and waiting),
 * so without it a communicator's nonblocking collectives across nodes go to the real MPI until its
 * first blocking one. Why only below a parent that has one, and at most EARLY_MAX alive: each node
 * part costs two of the MPI's contexts and a control area, and a program may hold a thousand
 * communicators (MPICH's cmfree holds 1,020 splits, and MPICH 4.0 has 2,048 contexts), most of
 * them made from a parent that never ran bobcat's collectives or never running collectives
 * themselves. Every rank decides alike: the knobs are the job's, the parent's node part was built
 * collectively, the layout is the communicator's, and the count is agreed (an allreduce). */
#define EARLY_MAX 32
int pmpi_node_part_early;

void pmpi_comm_node_part_early(MPI_Comm comm, MPI_Comm parent)
{
    if (!pmpi_node_part_early || comm == MPI_COMM_NULL)
        return;
    if (parent != MPI_COMM_NULL) {
        const pmpi_comm_t *pp = pmpi_comm_peek(parent);
        if (!pp || !pp->coll_ready)
            return;
    }
    pmpi_comm_t *pc = pmpi_comm_get(comm);
    if (!pc || pc->single_node || pc->coll_ready || pmpi_layer.no_hidden_comms)
        return;
    int full = early_alive >= EARLY_MAX, any_full = 1;
    if (PMPI_AWAY(PMPI_Allreduce(&full, &any_full, 1, MPI_INT, MPI_MAX, comm)) != MPI_SUCCESS || any_full)
        return; /* (the real MPI raised an error on comm: its handler returned) */
    if (pmpi_comm_get_coll(comm)) { /* on failure every rank warns and keeps the real MPI's */
        pc->early = 1;
        early_alive++;
    }
}

void pmpi_comm_layer_init(void)
{
    pmpi_layer_t *L = &pmpi_layer;
    L->initialized = 1;
    L->opt = util_options();
    L->world_rank = smap_world_rank();
    L->world_size = smap_world_size();
    L->local_rank = smap_local_rank();
    L->local_size = smap_local_size();
    if (!L->opt) {
        L->off_reason = "malformed-BOBCAT-knob";
        return;
    }
    pmpi_stats_print = L->opt->STATS != UTIL_V_OFF;
    pmpi_stats_on = pmpi_stats_print || L->opt->STATS_DIR[0];
    if (L->world_size == 0) {
        L->off_reason = "not-started-by-yod";
        return;
    }
    if (!L->opt->MPI) {
        L->off_reason = "BOBCAT_MPI=off";
        return;
    }
    L->world_node = malloc((size_t)L->world_size * sizeof(int));
    L->world_local = malloc((size_t)L->world_size * sizeof(int));
    if (!L->world_node || !L->world_local || parse_plan(L->opt->PLAN, L->world_size, L->world_node, L->world_local)) {
        util_warn("cannot read the node plan BOBCAT_PLAN='%s': the MPI layer is off", L->opt->PLAN);
        L->off_reason = "bad-plan";
        return;
    }
    L->node = L->world_node[L->world_rank];
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    L->spin = L->local_size > cpus ? 1 : (int)(L->opt->COLL_SPIN ? L->opt->COLL_SPIN : 1);
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, comm_delete, &comm_keyval, NULL) != MPI_SUCCESS) {
        L->off_reason = "no-keyval";
        return;
    }
    if (PMPI_Comm_dup(MPI_COMM_SELF, &progress_comm) == MPI_SUCCESS)
        PMPI_Irecv(&progress_dummy, 1, MPI_INT, 0, 1, progress_comm, &progress_req);
    L->on = 1;
    world_pc = comm_build(MPI_COMM_WORLD);
    if (!world_pc || world_pc == &not_handled) {
        world_pc = NULL;
        L->on = 0;
        L->off_reason = "no-memory";
    }
}

void pmpi_comm_layer_fini(void)
{
    pmpi_layer_t *L = &pmpi_layer;
    if (world_pc) {
        comm_destroy(world_pc);
        world_pc = NULL;
    }
    cache_comm = MPI_COMM_NULL;
    cache_pc = NULL;
    if (progress_req != MPI_REQUEST_NULL) {
        PMPI_Cancel(&progress_req);
        PMPI_Wait(&progress_req, MPI_STATUS_IGNORE);
    }
    if (progress_comm != MPI_COMM_NULL)
        PMPI_Comm_free(&progress_comm);
    if (L->lead_world != MPI_COMM_NULL)
        PMPI_Comm_free(&L->lead_world);
    L->finalizing = 1;
    L->on = 0;
}
