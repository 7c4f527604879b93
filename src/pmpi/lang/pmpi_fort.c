/* pmpi_fort: the hand-written Fortran entry points of the layer for Open MPI, and what the
 * generated ones (gen/gen_fort.py -> pmpi_fort_openmpi.c) share: the sentinels and the lookup of
 * the MPI's own Fortran entries. Written by hand: the routines whose Fortran form is not the C
 * form argument by argument (MPI_Init* without argc/argv; arrays of requests and statuses; 1-based
 * indices from Waitany/Waitsome/Testany/Testsome; Buffer_detach, whose Fortran buffer address is
 * not returned). MPI_WIN_GET_ATTR for both MPIs (both read the attribute past the layer). MPICH's mpif.h
 * and `use mpi` bindings otherwise call the C MPI_* entries, so for MPICH only
 * the lookup of the MPI's own Fortran entries is here (its mpi_f08 part is lang/pmpi_f08.c). */
#include "lang/pmpi_fort.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

/* Both MPIs' forwarders (Open MPI's pmpi_x_, MPICH's mpi_x_f08_) reach the MPI's own entry here. */
void *fort_profiling_entry(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        fprintf(stderr, "bobcat: the MPI's Fortran library has no %s, which this Fortran call needs; run "
                        "with BOBCAT_MPI=off, or report the MPI version\n", name);
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    return f;
}

#if defined(OPEN_MPI)

fort_sentinels_t fort_sent;

static void resolve4(void *set[4], const char *lower)
{
    char name[64];
    int n = 0;
    const char *fmt[4] = {"%s", "%s_", "%s__", NULL};
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, fmt[i], lower);
        set[n] = dlsym(RTLD_DEFAULT, name);
        n += set[n] != NULL;
    }
    int j = 0;
    for (const char *c = lower; *c && j < (int)sizeof name - 1; c++)
        name[j++] = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
    name[j] = 0;
    set[n] = dlsym(RTLD_DEFAULT, name);
}

void fort_sentinels_resolve(void)
{
    resolve4(fort_sent.bottom, "mpi_fortran_bottom");
    resolve4(fort_sent.in_place, "mpi_fortran_in_place");
    resolve4(fort_sent.status_ignore, "mpi_fortran_status_ignore");
    resolve4(fort_sent.statuses_ignore, "mpi_fortran_statuses_ignore");
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    void **all[4] = {fort_sent.bottom, fort_sent.in_place, fort_sent.status_ignore, fort_sent.statuses_ignore};
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 4; i++)
            if (all[k][i]) {
                lo = (uintptr_t)all[k][i] < lo ? (uintptr_t)all[k][i] : lo;
                hi = (uintptr_t)all[k][i] > hi ? (uintptr_t)all[k][i] : hi;
            }
    fort_sent.lo = lo == UINTPTR_MAX ? UINTPTR_MAX : lo; /* none: nothing is a sentinel */
    fort_sent.span = lo == UINTPTR_MAX ? 0 : hi - lo;
    __atomic_store_n(&fort_sent.ready, 1, __ATOMIC_RELEASE);
}

fort_handles_t fort_h;

void fort_handles_fill(void)
{
    int init = 0, fini = 0;
    if (fort_h.ready || PMPI_Initialized(&init) != MPI_SUCCESS || !init || PMPI_Finalized(&fini) != MPI_SUCCESS ||
        fini)
        return;
    if (!&fort_predef_ntype || !&fort_predef_nop)
        return;
    const MPI_Comm comms[] = {MPI_COMM_WORLD, MPI_COMM_SELF, MPI_COMM_NULL};
    for (size_t i = 0; i < sizeof comms / sizeof comms[0]; i++) {
        MPI_Fint f = PMPI_Comm_c2f(comms[i]);
        if ((unsigned)f < FORT_NCOMM)
            fort_h.comm[f] = comms[i];
    }
    for (int i = 0; i < fort_predef_ntype; i++) {
        MPI_Fint f = PMPI_Type_c2f(fort_predef_type[i]);
        if ((unsigned)f < FORT_NTYPE)
            fort_h.type[f] = fort_predef_type[i];
    }
    for (int i = 0; i < fort_predef_nop; i++) {
        MPI_Fint f = PMPI_Op_c2f(fort_predef_op[i]);
        if ((unsigned)f < FORT_NOP)
            fort_h.op[f] = fort_predef_op[i];
    }
    __atomic_store_n(&fort_h.ready, 1, __ATOMIC_RELEASE);
}

MPI_Comm fort_comm_slow(MPI_Fint f)
{
    if (!__atomic_load_n(&fort_h.ready, __ATOMIC_ACQUIRE))
        fort_handles_fill();
    return MPI_Comm_f2c(f);
}

MPI_Datatype fort_type_slow(MPI_Fint f)
{
    if (!__atomic_load_n(&fort_h.ready, __ATOMIC_ACQUIRE))
        fort_handles_fill();
    return MPI_Type_f2c(f);
}

MPI_Op fort_op_slow(MPI_Fint f)
{
    if (!__atomic_load_n(&fort_h.ready, __ATOMIC_ACQUIRE))
        fort_handles_fill();
    return MPI_Op_f2c(f);
}

/* ---- start-up ------------------------------------------------------------------------------- */

static void fort_init(MPI_Fint *ierr)
{
    fort_sentinels_resolve();
    int rc = MPI_Init(NULL, NULL);
    fort_handles_fill();
    if (ierr)
        *ierr = rc;
}
FORT_NAMES(init, MPI_INIT, fort_init, (MPI_Fint *ierr))

static void fort_init_thread(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
{
    fort_sentinels_resolve();
    int prov = MPI_THREAD_SINGLE;
    int rc = MPI_Init_thread(NULL, NULL, *required, &prov);
    fort_handles_fill();
    if (rc == MPI_SUCCESS)
        *provided = prov;
    if (ierr)
        *ierr = rc;
}
FORT_NAMES(init_thread, MPI_INIT_THREAD, fort_init_thread, (MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr))

static void fort_buffer_detach(void *buffer_addr, MPI_Fint *size, MPI_Fint *ierr)
{
    (void)buffer_addr; /* Fortran cannot take a C pointer back: the MPI returns none either */
    void *c_addr = NULL;
    int c_size = 0;
    int rc = MPI_Buffer_detach(&c_addr, &c_size);
    if (rc == MPI_SUCCESS)
        *size = c_size;
    if (ierr)
        *ierr = rc;
}
FORT_NAMES(buffer_detach, MPI_BUFFER_DETACH, fort_buffer_detach, (void *buffer_addr, MPI_Fint *size, MPI_Fint *ierr))

/* ---- arrays of requests and statuses -------------------------------------------------------- */

#define FSTAT ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint))) /* MPI_STATUS_SIZE */
#define ON_STACK 16

/* Scratch for n C requests and statuses: on the stack for the common small case. */
typedef struct {
    MPI_Request rq[ON_STACK];
    MPI_Status st[ON_STACK];
    MPI_Request *r;
    MPI_Status *s;
} fort_tmp_t;

static int tmp_get(fort_tmp_t *t, int n, const MPI_Fint *freq)
{
    t->r = t->rq;
    t->s = t->st;
    if (n > ON_STACK) {
        t->r = malloc((size_t)n * (sizeof(MPI_Request) + sizeof(MPI_Status)));
        if (!t->r)
            return MPI_ERR_NO_MEM;
        t->s = (MPI_Status *)(void *)(t->r + n);
    }
    for (int i = 0; i < n; i++)
        t->r[i] = MPI_Request_f2c(freq[i]);
    return MPI_SUCCESS;
}

static void tmp_put(fort_tmp_t *t)
{
    if (t->r != t->rq)
        free(t->r);
}

static int settled(int rc) { return rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS; }

static void put_status(const MPI_Status *c, MPI_Fint *fstatuses, int i)
{
    if (!fort_statuses_ignore(fstatuses))
        fort_status_put(c, &fstatuses[(size_t)i * FSTAT]);
}

static void fort_waitall(MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *statuses, MPI_Fint *ierr)
{
    fort_tmp_t t;
    int n = *count, rc = tmp_get(&t, n, reqs);
    if (rc == MPI_SUCCESS) {
        int ign = fort_statuses_ignore(statuses);
        rc = MPI_Waitall(n, t.r, ign ? MPI_STATUSES_IGNORE : t.s);
        if (settled(rc))
            for (int i = 0; i < n; i++) {
                reqs[i] = MPI_Request_c2f(t.r[i]);
                if (!ign)
                    put_status(&t.s[i], statuses, i);
            }
        tmp_put(&t);
    }
    if (ierr)
        *ierr = rc;
}
FORT_NAMES(waitall, MPI_WAITALL, fort_waitall, (MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *statuses, MPI_Fint *ierr))

static void fort_testall(MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *flag, MPI_Fint *statuses, MPI_Fint *ierr)
{
    fort_tmp_t t;
    int n = *count, f = 0, rc = tmp_get(&t, n, reqs);
    if (rc == MPI_SUCCESS) {
        int ign = fort_statuses_ignore(statuses);
        rc = MPI_Testall(n, t.r, &f, ign ? MPI_STATUSES_IGNORE : t.s);
        if (settled(rc)) {
            *flag = f;
            for (int i = 0; i < n; i++) {
                reqs[i] = MPI_Request_c2f(t.r[i]);
                if (f && !ign)
                    put_status(&t.s[i], statuses, i);
            }
        }
        tmp_put(&t);
    }
    if (ierr)
        *ierr = rc;
}
FORT_NAMES(testall, MPI_TESTALL, fort_testall,
           (MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *flag, MPI_Fint *statuses, MPI_Fint *ierr))
FORT_PMPI(testall, fort_testall,
          (MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *flag, MPI_Fint *statuses, MPI_Fint *ierr))

/* Waitany/Testany: Fortran's index is 1-based; MPI_UNDEFINED stays as it is. */
static void any_done(int rc, int n, fort_tmp_t *t, MPI_Fint *reqs, int idx, MPI_Fint *index,
                     const MPI_Status *st, MPI_Fint *status, int ign)
{
    if (rc != MPI_SUCCESS)
        return;
    *index = idx == MPI_UNDEFINED ? MPI_UNDEFINED : idx + 1;
    if (idx != MPI_UNDEFINED && idx >= 0 && idx < n)
        reqs[idx] = MPI_Request_c2f(t->r[idx]);
    if (!ign)
        fort_status_put(st, status);
}

static void fort_waitany(MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *index, MPI_Fint *status, MPI_Fint *ierr)
{
    fort_tmp_t t;
    MPI_Status st;
    int n = *count, idx = MPI_UNDEFINED, rc = tmp_get(&t, n, reqs);
    if (rc == MPI_SUCCESS) {
        int ign = fort_status_ignore(status);
        rc = MPI_Waitany(n, t.r, &idx, ign ? MPI_STATUS_IGNORE : &st);
        any_done(rc, n, &t, reqs, idx, index, &st, status, ign);
        tmp_put(&t);
    }
    if (ierr)
        *ierr = rc;
}
FORT_NAMES(waitany, MPI_WAITANY, fort_waitany,
           (MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *index, MPI_Fint *status, MPI_Fint *ierr))

static void fort_testany(MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *index, MPI_Fint *flag, MPI_Fint *status,
                         MPI_Fint *ierr)
{
    fort_tmp_t t;
    MPI_Status st;
    int n = *count, idx = MPI_UNDEFINED, f = 0, rc = tmp_get(&t, n, reqs);
    if (rc == MPI_SUCCESS) {
        int ign = fort_status_ignore(status);
        rc = MPI_Testany(n, t.r, &idx, &f, ign ? MPI_STATUS_IGNORE : &st);
        if (rc == MPI_SUCCESS)
            *flag = f;
        any_done(rc, n, &t, reqs, idx, index, &st, status, ign || !f);
        tmp_put(&t);
    }
    if (ierr)
        *ierr = rc;
}
FORT_NAMES(testany, MPI_TESTANY, fort_testany,
           (MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *index, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr))
FORT_PMPI(testany, fort_testany,
          (MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *index, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr))

/* Waitsome/Testsome: the completed requests' indices, 1-based, and their statuses in order. */
static void some_done(int rc, fort_tmp_t *t, MPI_Fint *reqs, int outc, MPI_Fint *outcount, MPI_Fint *indices,
                      MPI_Fint *statuses, int ign)
{
    if (!settled(rc))
        return;
    *outcount = outc;
    if (outc == MPI_UNDEFINED)
        return;
    for (int i = 0; i < outc; i++) {
        int k = indices[i];
        reqs[k] = MPI_Request_c2f(t->r[k]);
        indices[i] = k + 1;
        if (!ign)
            put_status(&t->s[i], statuses, i);
    }
}

/* Waitsome and Testsome have the same arguments: one body for both. */
typedef int (*some_fn)(int, MPI_Request *, int *, int *, MPI_Status *);

static void some(some_fn fn, MPI_Fint *incount, MPI_Fint *reqs, MPI_Fint *outcount, MPI_Fint *indices,
                 MPI_Fint *statuses, MPI_Fint *ierr)
{
    fort_tmp_t t;
    int n = *incount, outc = 0, rc = tmp_get(&t, n, reqs);
    if (rc == MPI_SUCCESS) {
        int ign = fort_statuses_ignore(statuses);
        rc = fn(n, t.r, &outc, indices, ign ? MPI_STATUSES_IGNORE : t.s);
        some_done(rc, &t, reqs, outc, outcount, indices, statuses, ign);
        tmp_put(&t);
    }
    if (ierr)
        *ierr = rc;
}

static void fort_waitsome(MPI_Fint *incount, MPI_Fint *reqs, MPI_Fint *outcount, MPI_Fint *indices,
                          MPI_Fint *statuses, MPI_Fint *ierr)
{
    some(MPI_Waitsome, incount, reqs, outcount, indices, statuses, ierr);
}
FORT_NAMES(waitsome, MPI_WAITSOME, fort_waitsome,
           (MPI_Fint *incount, MPI_Fint *reqs, MPI_Fint *outcount, MPI_Fint *indices, MPI_Fint *statuses,
            MPI_Fint *ierr))

static void fort_testsome(MPI_Fint *incount, MPI_Fint *reqs, MPI_Fint *outcount, MPI_Fint *indices,
                          MPI_Fint *statuses, MPI_Fint *ierr)
{
    some(MPI_Testsome, incount, reqs, outcount, indices, statuses, ierr);
}
FORT_NAMES(testsome, MPI_TESTSOME, fort_testsome,
           (MPI_Fint *incount, MPI_Fint *reqs, MPI_Fint *outcount, MPI_Fint *indices, MPI_Fint *statuses,
            MPI_Fint *ierr))
FORT_PMPI(testsome, fort_testsome,
          (MPI_Fint *incount, MPI_Fint *reqs, MPI_Fint *outcount, MPI_Fint *indices, MPI_Fint *statuses,
           MPI_Fint *ierr))

static void fort_startall(MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *ierr)
{
    fort_tmp_t t;
    int n = *count, rc = tmp_get(&t, n, reqs);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Startall(n, t.r);
        if (rc == MPI_SUCCESS)
            for (int i = 0; i < n; i++)
                reqs[i] = MPI_Request_c2f(t.r[i]);
        tmp_put(&t);
    }
    if (ierr)
        *ierr = rc;
}
FORT_NAMES(startall, MPI_STARTALL, fort_startall, (MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *ierr))

#endif /* OPEN_MPI */

/* ---- MPI_WIN_GET_ATTR, both MPIs -------------------------------------------------------------- */

#if defined(OPEN_MPI) || defined(MPICH) /* not the MPI ABI build, which has no Fortran of its own */

/* Both MPIs' Fortran MPI_WIN_GET_ATTR read the attribute inside the MPI (Open MPI's C
 * PMPI_Win_get_attr, MPICH's MPII_Win_get_attr), past the layer. The attributes bobcat answers
 * itself for its windows (their flavour, memory model and base: the real window under one is
 * always made by MPI_Win_create over the same memory) come from the layer's MPI_Win_get_attr here,
 * as the Fortran integers the MPI would give; every other keyval, and every window of the real
 * MPI's alone, from the MPI's own entry. Open MPI's predefined keyvals have the same values in C
 * and Fortran; MPICH's Fortran ones are the C ones plus 1 (MPI_WIN_BASE 0x66000001 in C,
 * 0x66000002 in mpif.h and mpi_f08). 1 if answered here. */
#if defined(MPICH)
#define FORT_KEYVAL(c) ((c) + 1)
#else
#define FORT_KEYVAL(c) (c)
#endif
static int win_attr_ours(const MPI_Fint *win, const MPI_Fint *keyval, MPI_Aint *value, MPI_Fint *flag, MPI_Fint *ierr)
{
    int k = *keyval == FORT_KEYVAL(MPI_WIN_BASE)            ? MPI_WIN_BASE
            : *keyval == FORT_KEYVAL(MPI_WIN_CREATE_FLAVOR) ? MPI_WIN_CREATE_FLAVOR
            : *keyval == FORT_KEYVAL(MPI_WIN_MODEL)         ? MPI_WIN_MODEL
                                                            : 0;
    if (!k)
        return 0;
    void *v = NULL;
    int f = 0;
    int rc = MPI_Win_get_attr(MPI_Win_f2c(*win), k, &v, &f);
    if (rc == MPI_SUCCESS) {
        *flag = f != 0; /* LOGICAL: gfortran's .TRUE. is 1 */
        if (f)
            *value = k == MPI_WIN_BASE ? (MPI_Aint)(uintptr_t)v : *(const int *)v;
    }
    if (ierr) /* optional in mpi_f08 */
        *ierr = rc;
    return 1;
}

typedef void win_get_attr_fn(MPI_Fint *, MPI_Fint *, MPI_Aint *, MPI_Fint *, MPI_Fint *);

/* The MPI's own `entry` (cached in *fn) for the other keyvals. */
static void win_attr_theirs(win_get_attr_fn **fn, const char *entry, MPI_Fint *win, MPI_Fint *keyval, MPI_Aint *value,
                            MPI_Fint *flag, MPI_Fint *ierr)
{
    if (!*fn)
        *fn = (win_get_attr_fn *)fort_profiling_entry(entry);
    (*fn)(win, keyval, value, flag, ierr);
}

static void fort_win_get_attr(MPI_Fint *win, MPI_Fint *keyval, MPI_Aint *value, MPI_Fint *flag, MPI_Fint *ierr)
{
    static win_get_attr_fn *fn;
    if (!win_attr_ours(win, keyval, value, flag, ierr))
        win_attr_theirs(&fn, "pmpi_win_get_attr_", win, keyval, value, flag, ierr);
}

#define WIN_GET_ATTR_PARAMS (MPI_Fint * win, MPI_Fint * keyval, MPI_Aint * value, MPI_Fint * flag, MPI_Fint * ierr)
#if defined(OPEN_MPI)
FORT_NAMES(win_get_attr, MPI_WIN_GET_ATTR, fort_win_get_attr, WIN_GET_ATTR_PARAMS)
/* Open MPI's mpi_f08 wrapper calls the profiling name (a LOGICAL argument). */
FORT_PMPI(win_get_attr, fort_win_get_attr, WIN_GET_ATTR_PARAMS)
#elif defined(MPICH)
BOBCAT_EXPORT void mpi_win_get_attr WIN_GET_ATTR_PARAMS __attribute__((alias("fort_win_get_attr")));
BOBCAT_EXPORT void mpi_win_get_attr_ WIN_GET_ATTR_PARAMS __attribute__((alias("fort_win_get_attr")));
BOBCAT_EXPORT void mpi_win_get_attr__ WIN_GET_ATTR_PARAMS __attribute__((alias("fort_win_get_attr")));
BOBCAT_EXPORT void MPI_WIN_GET_ATTR WIN_GET_ATTR_PARAMS __attribute__((alias("fort_win_get_attr")));

/* MPICH's mpi_f08 procedure: the same arguments (TYPE(MPI_Win) holds MPICH's C handle). */
static void f08_win_get_attr(MPI_Fint *win, MPI_Fint *keyval, MPI_Aint *value, MPI_Fint *flag, MPI_Fint *ierr)
{
    static win_get_attr_fn *fn;
    if (!win_attr_ours(win, keyval, value, flag, ierr))
        win_attr_theirs(&fn, "mpi_win_get_attr_f08_", win, keyval, value, flag, ierr);
}
BOBCAT_EXPORT void mpi_win_get_attr_f08_ WIN_GET_ATTR_PARAMS __attribute__((alias("f08_win_get_attr")));
#endif
#endif /* OPEN_MPI || MPICH */
