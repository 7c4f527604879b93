/* p2p_req: bobcat's request objects — the pool (in the segment: receivers store into their
 * tickets), the handles that tell them from the real MPI's, statuses, the datatypes and
 * communicators requests hold, and the two lists progress walks (orphans, the off-node queue). */
#include "p2p.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REQ_MAGIC 0xB0BCA7B0BCA7B0BCull /* non-canonical: never an Open MPI object's class pointer */
#define CHUNK 4096
#define MAXCHUNKS 256                 /* 1 Mi live requests: the 20 index bits of MPICH handles */
#define MPICH_TAG 0x0BC00000

static p2p_req_t *chunks[MAXCHUNKS];
static int nchunks;
static int hwm; /* 1 + the highest index ever handed out: p2p_req_pin_comm scans below it */
static p2p_req_t *freelist;
p2p_req_t *p2p_orphans; /* freed by the user while active, or internal (Bsend): reaped by progress */
p2p_req_t *p2p_offq_head;
static p2p_req_t *p2p_offq_tail;

p2p_req_t *p2p_req_new(void)
{
    if (!freelist) {
        if (nchunks == MAXCHUNKS)
            return NULL;
        /* Requests must sit in the segment: receivers store into their `done` words. */
        p2p_req_t *c = bobcat_msg_alloc_shared(sizeof(p2p_req_t) * CHUNK);
        if (!c)
            return NULL;
        for (int i = CHUNK - 1; i >= 0; i--) {
            c[i].idx = nchunks * CHUNK + i;
            c[i].fnext = freelist;
            freelist = &c[i];
        }
        chunks[nchunks++] = c;
    }
    p2p_req_t *r = freelist;
    freelist = r->fnext;
    if (r->idx >= hwm)
        hwm = r->idx + 1;
    /* Field by field, not memset: a receive window allocates one request per message, and clearing
     * the whole ~300-byte request (a `rep stos`) was a tenth of a message-rate receiver's time. The
     * engine part is set by bobcat_msg_send/recv/mrecv; only the words read before that are here. */
    r->magic = REQ_MAGIC;
    r->m.kind = 0;
    r->m.complete = 0;
    r->m.posted = 0;
    r->m.waits_done = 0;
    r->m.cancelled = 0;
    r->m.truncated = 0;
    r->m.ticket = NULL;
    r->kind = 0;
    r->ext_ops = NULL;
    r->persistent = 0;
    r->active = 1;
    r->freed = 0;
    r->mode = 0;
    r->buf = NULL;
    r->count = 0;
    r->type = (MPI_Datatype)0;
    r->type_owned = 0;
    r->peer = 0;
    r->tag = 0;
    r->comm = (MPI_Comm)0;
    r->c = NULL;
    r->pack = NULL;
    r->real = MPI_REQUEST_NULL;
    r->inner = MPI_REQUEST_NULL;
    r->switched = 0;
    r->polls = 0;
    r->done_err = 0;
    r->st_src = r->st_tag = r->st_err = r->st_cancelled = 0;
    r->st_bytes = 0;
    r->st_valid = 0;
    r->onext = r->oprev = NULL;
    r->fnext = NULL;
    r->permanent = 0;
    return r;
}

p2p_req_t *p2p_req_done(int mode)
{
    static p2p_req_t *done[2];
    p2p_req_t **d = &done[mode == MODE_RECV];
    if (!*d) {
        *d = p2p_req_new();
        if (!*d) {
            util_out_of_memory("the first point-to-point request", sizeof(p2p_req_t) * CHUNK);
        }
        (*d)->kind = P2P_K_NULL;
        /* A send's status says MPI_ANY_SOURCE / MPI_ANY_TAG, a receive's MPI_PROC_NULL /
         * MPI_ANY_TAG; 0 bytes (p2p_req_test). */
        (*d)->mode = mode == MODE_RECV ? MODE_RECV : MODE_STD;
        (*d)->comm = MPI_COMM_NULL;
        (*d)->permanent = 1;
    }
    return *d;
}

int p2p_req_hold_type(p2p_req_t *r, MPI_Datatype dt)
{
    if (r->type_owned)
        return MPI_SUCCESS;
    r->type = pmpi_dt_hold(dt);
    if (r->type == MPI_DATATYPE_NULL) {
        r->type = dt;
        return MPI_ERR_TYPE;
    }
    r->type_owned = r->type != dt;
    return MPI_SUCCESS;
}

int p2p_req_pin_comm(p2p_comm_t *c)
{
    for (int i = 0; i < hwm; i++) {
        p2p_req_t *r = &chunks[i / CHUNK][i % CHUNK];
        if (r->magic == REQ_MAGIC && !r->permanent && !r->c && r->comm == c->comm) {
            r->c = c;
            c->refs++;
        }
    }
    return c->refs;
}

void p2p_req_release(p2p_req_t *r)
{
    if (r->permanent)
        return;
    if (r->pack) {
        free(r->pack);
        r->pack = NULL;
    }
    if (__builtin_expect(r->type_owned, 0)) {
        pmpi_dt_free(&r->type);
        r->type_owned = 0;
    }
    if (r->ext_ops) {
        r->ext_ops->release(r);
        r->ext_ops = NULL;
        r->ext = NULL;
    }
    if (r->c) {
        p2p_comm_unref(r->c);
        r->c = NULL;
    }
    r->magic = 0;
    r->fnext = freelist;
    freelist = r;
}

/* The live request in slot i, or NULL. */
static p2p_req_t *slot_at(unsigned i)
{
    if (i >= (unsigned)nchunks * CHUNK)
        return NULL;
    p2p_req_t *r = &chunks[i / CHUNK][i % CHUNK];
    return r->magic == REQ_MAGIC ? r : NULL;
}

#if defined(OPEN_MPI)
/* Fortran handles of bobcat's requests and messages. Open MPI's MPI_Request_c2f reads a field of
 * its own request object, which bobcat's are not, so bobcat numbers its own: slot index plus a base
 * far above any index of Open MPI's Fortran tables (they count live objects from 0). MPICH's handles
 * are integers already (its c2f is a cast), so only Open MPI needs this. */
#define FORT_REQ_BASE 0x40000000
#define FORT_MSG_BASE 0x50000000
#define FORT_SLOTS (MAXCHUNKS * CHUNK)

BOBCAT_EXPORT MPI_Fint MPI_Request_c2f(MPI_Request h)
{
    PMPI_GUARD();
    p2p_req_t *r = p2p_req_of(h);
    return r ? (MPI_Fint)(FORT_REQ_BASE + r->idx) : PMPI_Request_c2f(h);
}

BOBCAT_EXPORT MPI_Request MPI_Request_f2c(MPI_Fint f)
{
    PMPI_GUARD();
    if (f >= FORT_REQ_BASE && f < FORT_REQ_BASE + FORT_SLOTS) {
        p2p_req_t *r = slot_at((unsigned)(f - FORT_REQ_BASE));
        return r ? p2p_handle_of(r) : MPI_REQUEST_NULL;
    }
    return PMPI_Request_f2c(f);
}

BOBCAT_EXPORT MPI_Fint MPI_Message_c2f(MPI_Message h)
{
    PMPI_GUARD();
    p2p_req_t *m = p2p_msg_of(h);
    return m ? (MPI_Fint)(FORT_MSG_BASE + m->idx) : PMPI_Message_c2f(h);
}

BOBCAT_EXPORT MPI_Message MPI_Message_f2c(MPI_Fint f)
{
    PMPI_GUARD();
    if (f >= FORT_MSG_BASE && f < FORT_MSG_BASE + FORT_SLOTS) {
        p2p_req_t *m = slot_at((unsigned)(f - FORT_MSG_BASE));
        return m ? p2p_msghandle_of(m) : MPI_MESSAGE_NULL;
    }
    return PMPI_Message_f2c(f);
}

p2p_req_t *p2p_req_of(MPI_Request h)
{
    if (h == MPI_REQUEST_NULL || h == NULL)
        return NULL;
    p2p_req_t *r = (p2p_req_t *)(void *)h;
    return r->magic == REQ_MAGIC ? r : NULL;
}
MPI_Request p2p_handle_of(p2p_req_t *r) { return (MPI_Request)(void *)r; }
p2p_req_t *p2p_msg_of(MPI_Message h)
{
    if (h == MPI_MESSAGE_NULL || h == MPI_MESSAGE_NO_PROC || h == NULL)
        return NULL;
    p2p_req_t *r = (p2p_req_t *)(void *)h;
    return r->magic == REQ_MAGIC ? r : NULL;
}
MPI_Message p2p_msghandle_of(p2p_req_t *m) { return (MPI_Message)(void *)m; }
#else
/* MPICH's handles are ints; the standard ABI's (MPI_ABI_VERSION, the abi flavour) are pointers, and
 * bobcat's are the same tagged integer as a pointer: an address in the first 200 MB, where no
 * ABI-compliant MPI's handle lives (its predefined handles are below 0x1000, its objects in the
 * heap, which under yod is bobcat's segment, far above). The whole word is compared, so a real
 * pointer is never taken for bobcat's by its low 32 bits. */
#define HANDLE_WORD(h) ((uintptr_t)(h))
/* The live slot a bobcat handle with this tag names (index in bits 0-19), or NULL. */
static p2p_req_t *slot_of(uintptr_t h, unsigned tag)
{
    if ((h & ~(uintptr_t)0xFFFFFu) != tag)
        return NULL;
    return slot_at((unsigned)(h & 0xFFFFFu));
}
p2p_req_t *p2p_req_of(MPI_Request h) { return slot_of(HANDLE_WORD(h), MPICH_TAG); }
MPI_Request p2p_handle_of(p2p_req_t *r) { return (MPI_Request)(uintptr_t)(MPICH_TAG | r->idx); }
/* Messages: 0x0BD in bits 20-31, also HANDLE_KIND_INVALID to MPICH. */
#define MPICH_MSG_TAG 0x0BD00000
p2p_req_t *p2p_msg_of(MPI_Message h) { return slot_of(HANDLE_WORD(h), MPICH_MSG_TAG); }
MPI_Message p2p_msghandle_of(p2p_req_t *m) { return (MPI_Message)(uintptr_t)(MPICH_MSG_TAG | m->idx); }
#endif

/* MPI_Status internals: both MPIs keep the byte count and the cancelled flag in hidden fields
 * that MPI_Get_count / MPI_Get_elements / MPI_Test_cancelled read. */
void p2p_status_set(MPI_Status *st, int src, int tag, MPI_Count bytes, int cancelled)
{
    if (st == MPI_STATUS_IGNORE)
        return;
    st->MPI_SOURCE = src;
    st->MPI_TAG = tag;
#if defined(OPEN_MPI)
    st->_ucount = (size_t)bytes;
    st->_cancelled = cancelled;
#elif defined(MPICH)
    st->count_lo = (int)(bytes & 0xffffffff);
    st->count_hi_and_cancelled = (int)(((uint64_t)bytes >> 32) << 1) | (cancelled ? 1 : 0);
#else
    if (p2p_abi_status_direct) {   /* the MPICH layout, as p2p_abi_status_probe found it */
        st->MPI_internal[0] = (int)(bytes & 0xffffffff);
        st->MPI_internal[1] = (int)(((uint64_t)bytes >> 32) << 1) | (cancelled ? 1 : 0);
        return;
    }
    PMPI_Status_set_elements_x(st, MPI_BYTE, bytes);
    PMPI_Status_set_cancelled(st, cancelled);
#endif
}

#if !defined(OPEN_MPI) && !defined(MPICH)
/* The standard ABI hides where a status keeps its count (MPI_internal[5]); every MPI known to
 * provide the ABI (MPICH 5, Intel MPI) keeps MPICH's count_lo and count_hi_and_cancelled in its
 * first two words. Setting them directly saves two calls into the MPI per completed receive; the
 * probe at MPI_Init takes the shortcut only if the MPI itself writes and reads the status that way
 * (a count above 2^32, the cancelled flag, and back through Get_elements_x/Test_cancelled). */
int p2p_abi_status_direct;

void p2p_abi_status_probe(void)
{
    MPI_Status a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    const MPI_Count big = ((MPI_Count)5 << 32) | 0x1234567;
    if (PMPI_Status_set_elements_x(&a, MPI_BYTE, big) != MPI_SUCCESS || PMPI_Status_set_cancelled(&a, 1) != MPI_SUCCESS)
        return;
    if (a.MPI_internal[0] != 0x1234567 || a.MPI_internal[1] != ((5 << 1) | 1))
        return;
    b.MPI_internal[0] = 77;
    b.MPI_internal[1] = 3 << 1;
    MPI_Count c = 0;
    int flag = 1;
    if (PMPI_Get_elements_x(&b, MPI_BYTE, &c) != MPI_SUCCESS || PMPI_Test_cancelled(&b, &flag) != MPI_SUCCESS)
        return;
    p2p_abi_status_direct = c == (((MPI_Count)3 << 32) | 77) && flag == 0;
}
#endif

void p2p_status_empty(MPI_Status *st)
{
    if (st == MPI_STATUS_IGNORE)
        return;
    p2p_status_set(st, MPI_ANY_SOURCE, MPI_ANY_TAG, 0, 0);
    st->MPI_ERROR = MPI_SUCCESS;
}

void p2p_orphan(p2p_req_t *r)
{
    r->freed = 1;
    r->fnext = p2p_orphans;
    p2p_orphans = r;
}


/* ---- the off-node queue (see p2p_progress.c) ---- */

void p2p_offq_add(p2p_req_t *r)
{
    r->onext = NULL;
    r->oprev = p2p_offq_tail;
    if (p2p_offq_tail)
        p2p_offq_tail->onext = r;
    else
        p2p_offq_head = r;
    p2p_offq_tail = r;
}

static int in_offq(p2p_req_t *r) { return r->oprev || r->onext || p2p_offq_head == r; }

void p2p_offq_remove(p2p_req_t *r)
{
    if (!in_offq(r))
        return;
    if (r->oprev)
        r->oprev->onext = r->onext;
    else
        p2p_offq_head = r->onext;
    if (r->onext)
        r->onext->oprev = r->oprev;
    else
        p2p_offq_tail = r->oprev;
    r->onext = r->oprev = NULL;
}

int p2p_offq_has_comm(MPI_Comm comm)
{
    for (p2p_req_t *q = p2p_offq_head; q; q = q->onext)
        if (q->comm == comm)
            return 1;
    return 0;
}

