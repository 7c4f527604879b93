/* mp_progress: a send to a posted receive completes whatever blocking call the receiver makes next
 * (issue 23, the MPI progress rule).
 *
 * Ranks pair up with a node mate (2k, 2k + 1). For every blocking call in the list (collectives the
 * real MPI runs, communicator and window constructors, MPI-IO, one-sided synchronisation...), the
 * even rank posts MPI_Irecv from its partner and enters the call; the odd rank sends (MPI_Ssend,
 * MPI_Issend + MPI_Wait, or a 1 MiB MPI_Send, a rendezvous) and only then enters the same call. The
 * standard says the send completes once the matching receive is posted, whatever the receiver does
 * next: a library whose receiver, sitting inside the real MPI, never drives its own point-to-point
 * hangs here. Run it under yod -tlimit so a hang fails; rank 0 names every case before it runs, so
 * the last line names the one that hung. Usage: mp_progress [CALL [SEND]]: only the calls and
 * sends whose names contain these substrings. Forcing bobcat's collectives to the real MPI (BOBCAT_COLL_*=mpi) makes more of them
 * such calls. MP_PROGRESS_THREADS=multiple starts MPI at MPI_THREAD_MULTIPLE (the layer's lock then
 * lets go of the engine around every blocking call: the same rule must hold). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mp_util.h"

static int rank, size, peer, receiver; /* peer: the partner, MPI_PROC_NULL for an odd last rank */
static char dir[256];                   /* a temporary directory for the MPI-IO cases */

/* ---- the blocking calls: setup (before the exchange), the call, teardown (after) ---- */

static MPI_Comm c_comm = MPI_COMM_NULL, c_made = MPI_COMM_NULL;
static MPI_Win c_win = MPI_WIN_NULL;
static MPI_File c_file = MPI_FILE_NULL;
static MPI_Group c_group = MPI_GROUP_NULL;
static int c_mem[64];
static int c_in[64], c_out[64];

static void dup_world(void) { MPI_Comm_dup(MPI_COMM_WORLD, &c_comm); }
static void dup_world_warm(void)
{
    MPI_Comm_dup(MPI_COMM_WORLD, &c_comm);
    MPI_Barrier(c_comm);
    int v = 1;
    MPI_Bcast(&v, 1, MPI_INT, 0, c_comm);
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_SUM, c_comm);
}
/* a communicator bobcat leaves to the real MPI whole */
static void idup_world(void)
{
    MPI_Request q;
    MPI_Comm_idup(MPI_COMM_WORLD, &c_comm, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
}
static void world(void) { c_comm = MPI_COMM_WORLD; }
static void free_comm(void)
{
    if (c_comm != MPI_COMM_WORLD && c_comm != MPI_COMM_NULL)
        MPI_Comm_free(&c_comm);
    c_comm = MPI_COMM_NULL;
    if (c_made != MPI_COMM_NULL)
        MPI_Comm_free(&c_made);
    if (c_group != MPI_GROUP_NULL)
        MPI_Group_free(&c_group);
}

static void x_barrier(void) { MPI_Barrier(c_comm); }
static void x_bcast(void)
{
    for (int i = 0; i < 64; i++)
        c_in[i] = rank == 0 ? 1000 + i : -1;
    MPI_Bcast(c_in, 64, MPI_INT, 0, c_comm);
    CHECK(c_in[63] == 1063, "Bcast gave %d", c_in[63]);
}
static void x_allreduce(void)
{
    for (int i = 0; i < 64; i++)
        c_in[i] = rank + i;
    MPI_Allreduce(c_in, c_out, 64, MPI_INT, MPI_SUM, c_comm);
    CHECK(c_out[1] == size * (size - 1) / 2 + size, "Allreduce gave %d", c_out[1]);
}
static void x_reduce(void)
{
    int v = rank + 1, s = 0;
    MPI_Reduce(&v, &s, 1, MPI_INT, MPI_SUM, 0, c_comm);
    CHECK(rank != 0 || s == size * (size + 1) / 2, "Reduce gave %d", s);
}
static void x_alltoallv(void)
{
    int sc[64], sd[64], rc[64], rd[64];
    for (int r = 0; r < size; r++) {
        sc[r] = rc[r] = 1;
        sd[r] = rd[r] = r;
        c_in[r] = rank * 100 + r;
    }
    MPI_Alltoallv(c_in, sc, sd, MPI_INT, c_out, rc, rd, MPI_INT, c_comm);
    CHECK(c_out[size - 1] == (size - 1) * 100 + rank, "Alltoallv gave %d", c_out[size - 1]);
}
static void x_allgatherv(void)
{
    int rc[64], rd[64], v = rank + 7;
    for (int r = 0; r < size; r++)
        rc[r] = 1, rd[r] = r;
    MPI_Allgatherv(&v, 1, MPI_INT, c_out, rc, rd, MPI_INT, c_comm);
    CHECK(c_out[size - 1] == size + 6, "Allgatherv gave %d", c_out[size - 1]);
}
static void x_allgather(void)
{
    int v = rank + 3;
    MPI_Allgather(&v, 1, MPI_INT, c_out, 1, MPI_INT, c_comm);
    CHECK(c_out[size - 1] == size + 2, "Allgather gave %d", c_out[size - 1]);
}
static void x_reduce_scatter(void)
{
    int rc[64];
    for (int r = 0; r < size; r++)
        rc[r] = 1, c_in[r] = r;
    int v = -1;
    MPI_Reduce_scatter(c_in, &v, rc, MPI_INT, MPI_SUM, c_comm);
    CHECK(v == rank * size, "Reduce_scatter gave %d", v);
}
static void x_scan(void)
{
    int v = 1, s = 0;
    MPI_Scan(&v, &s, 1, MPI_INT, MPI_SUM, c_comm);
    CHECK(s == rank + 1, "Scan gave %d", s);
}
static void x_gatherv(void)
{
    int rc[64], rd[64], v = rank + 5;
    for (int r = 0; r < size; r++)
        rc[r] = 1, rd[r] = r;
    MPI_Gatherv(&v, 1, MPI_INT, c_out, rc, rd, MPI_INT, 0, c_comm);
    CHECK(rank != 0 || c_out[size - 1] == size + 4, "Gatherv gave %d", c_out[size - 1]);
}
static void x_comm_split(void) { MPI_Comm_split(c_comm, rank % 2, rank, &c_made); }
static void x_comm_split_type(void)
{
    MPI_Comm_split_type(c_comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &c_made);
}
static void x_comm_dup(void) { MPI_Comm_dup(c_comm, &c_made); }
static void world_group(void)
{
    c_comm = MPI_COMM_WORLD;
    MPI_Comm_group(MPI_COMM_WORLD, &c_group);
}
static void x_comm_create(void) { MPI_Comm_create(c_comm, c_group, &c_made); }
static void x_ibarrier_wait(void)
{
    MPI_Request q;
    MPI_Ibarrier(c_comm, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
}

static void x_win_create(void)
{
    MPI_Win_create(c_mem, sizeof c_mem, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &c_win);
}
static void win_make(void)
{
    x_win_create();
    MPI_Win_fence(0, c_win);
}
static void x_win_fence(void) { MPI_Win_fence(0, c_win); }
static void x_win_free(void) { MPI_Win_free(&c_win); }
static void win_done(void)
{
    if (c_win != MPI_WIN_NULL)
        MPI_Win_free(&c_win);
}

static void file_path(char *p, size_t n) { snprintf(p, n, "%s/data", dir); }
static void x_file_open(void)
{
    char p[300];
    file_path(p, sizeof p);
    MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &c_file);
}
static void file_made(void)
{
    x_file_open();
    MPI_File_set_view(c_file, (MPI_Offset)rank * 64 * sizeof(int), MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
}
static void x_file_write_all(void)
{
    for (int i = 0; i < 64; i++)
        c_in[i] = rank * 64 + i;
    MPI_File_write_all(c_file, c_in, 64, MPI_INT, MPI_STATUS_IGNORE);
}
static void x_file_close(void) { MPI_File_close(&c_file); }
static void file_done(void)
{
    if (c_file != MPI_FILE_NULL)
        MPI_File_close(&c_file);
}

typedef struct {
    const char *name;
    void (*setup)(void), (*call)(void), (*teardown)(void);
} call_t;

static const call_t calls[] = {
    {"MPI_Barrier(fresh MPI_Comm_dup)", dup_world, x_barrier, free_comm},
    {"MPI_Barrier(warm MPI_Comm_dup)", dup_world_warm, x_barrier, free_comm},
    {"MPI_Barrier(WORLD)", world, x_barrier, free_comm},
    {"MPI_Barrier(MPI_Comm_idup)", idup_world, x_barrier, free_comm},
    {"MPI_Bcast(fresh MPI_Comm_dup)", dup_world, x_bcast, free_comm},
    {"MPI_Bcast(warm MPI_Comm_dup)", dup_world_warm, x_bcast, free_comm},
    {"MPI_Bcast(MPI_Comm_idup)", idup_world, x_bcast, free_comm},
    {"MPI_Allreduce(warm MPI_Comm_dup)", dup_world_warm, x_allreduce, free_comm},
    {"MPI_Allreduce(MPI_Comm_idup)", idup_world, x_allreduce, free_comm},
    {"MPI_Reduce(WORLD)", world, x_reduce, free_comm},
    {"MPI_Allgather(MPI_Comm_idup)", idup_world, x_allgather, free_comm},
    {"MPI_Alltoallv(WORLD)", world, x_alltoallv, free_comm},
    {"MPI_Allgatherv(WORLD)", world, x_allgatherv, free_comm},
    {"MPI_Reduce_scatter(WORLD)", world, x_reduce_scatter, free_comm},
    {"MPI_Scan(WORLD)", world, x_scan, free_comm},
    {"MPI_Gatherv(WORLD)", world, x_gatherv, free_comm},
    {"MPI_Comm_split(WORLD)", world, x_comm_split, free_comm},
    {"MPI_Comm_split_type(WORLD)", world, x_comm_split_type, free_comm},
    {"MPI_Comm_dup(WORLD)", world, x_comm_dup, free_comm},
    {"MPI_Comm_create(WORLD)", world_group, x_comm_create, free_comm},
    {"MPI_Ibarrier+MPI_Wait(WORLD)", world, x_ibarrier_wait, free_comm},
    {"MPI_Win_create", NULL, x_win_create, win_done},
    {"MPI_Win_fence", win_make, x_win_fence, win_done},
    {"MPI_Win_free", x_win_create, x_win_free, win_done},
    {"MPI_File_open", NULL, x_file_open, file_done},
    {"MPI_File_write_all", file_made, x_file_write_all, file_done},
    {"MPI_File_close", file_made, x_file_close, file_done},
};

/* ---- the sends ---- */

enum { BIG = 1 << 20 };
static const char *const kinds[] = {"MPI_Ssend", "MPI_Issend+MPI_Wait", "1 MiB MPI_Send"};
static unsigned char *sbuf, *rbuf;

static unsigned char pat(int src, int tag, size_t i) { return (unsigned char)(src * 29 + tag * 11 + i * 7 + (i >> 9)); }

static void one_case(const call_t *c, int kind, int tag)
{
    if (rank == 0) {
        printf("mp_progress: %s while the partner does %s\n", c->name, kinds[kind]);
        fflush(stdout);
    }
    size_t n = kind == 2 ? BIG : 16;
    if (c->setup)
        c->setup();
    if (receiver && peer != MPI_PROC_NULL) {
        MPI_Request q;
        memset(rbuf, 0, n);
        MPI_Irecv(rbuf, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &q);
        c->call();
        MPI_Status st;
        MPI_Wait(&q, &st);
        int cnt = -1;
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        size_t bad = (size_t)-1;
        for (size_t i = 0; i < n && bad == (size_t)-1; i++)
            if (rbuf[i] != pat(peer, tag, i))
                bad = i;
        CHECK(cnt == (int)n && bad == (size_t)-1, "%s / %s: count %d, first wrong byte %zd", c->name, kinds[kind], cnt,
              (ssize_t)bad);
    } else if (peer != MPI_PROC_NULL) {
        for (size_t i = 0; i < n; i++)
            sbuf[i] = pat(rank, tag, i);
        if (kind == 0) {
            MPI_Ssend(sbuf, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
        } else if (kind == 1) {
            MPI_Request q;
            MPI_Issend(sbuf, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        } else {
            MPI_Send(sbuf, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
        }
        c->call();
    } else {
        c->call();
    }
    if (c->teardown)
        c->teardown();
}

int main(int argc, char **argv)
{
    const char *lvl = getenv("MP_PROGRESS_THREADS");
    if (lvl && !strcmp(lvl, "multiple")) {
        int provided = -1;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        if (provided != MPI_THREAD_MULTIPLE) {
            fprintf(stderr, "mp_progress: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
            MPI_Abort(MPI_COMM_WORLD, 77);
        }
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    peer = (rank ^ 1) < size ? rank ^ 1 : MPI_PROC_NULL;
    receiver = rank % 2 == 0;
    const char *only = argc > 1 ? argv[1] : NULL, *only_kind = argc > 2 ? argv[2] : NULL;
    sbuf = malloc(BIG);
    rbuf = malloc(BIG);
    if (rank == 0) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/mp_progress.XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(dir)) {
            perror(dir);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    int tag = 1;
    for (unsigned i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        if (only && !strstr(calls[i].name, only))
            continue;
        for (int kind = 0; kind < 3; kind++) {
            if (only_kind && !strstr(kinds[kind], only_kind))
                continue;
            int before = mp_failures;
            one_case(&calls[i], kind, tag++);
            if (mp_failures != before)
                fprintf(stderr, "rank %d: %s / %s failed\n", rank, calls[i].name, kinds[kind]);
            MPI_Barrier(MPI_COMM_WORLD); /* the case is over everywhere */
        }
    }
    int total = 0;
    MPI_Allreduce(&mp_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        char p[300];
        file_path(p, sizeof p);
        unlink(p);
        rmdir(dir);
        printf("mp_progress: %d ranks, %d failures\n", size, total);
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return total ? 1 : 0;
}
