/* mp_p2p: MPI point-to-point semantics, checked value by value, whatever path carries them (bobcat
 * on one node, the real MPI across simulated nodes, both in one job). Every payload is a function
 * of (source, destination, tag, index), so a message delivered to the wrong receive, truncated,
 * reordered or corrupted fails a check. Usage: mp_p2p [big]  ("big" adds a 64 MiB exchange). */
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>

#include "mp_util.h"

static int rank, size;
static int eager = 2048; /* BOBCAT_P2P_EAGER's default: sizes around it are the interesting ones */

static unsigned char pat(int src, int dst, int tag, size_t i)
{
    return (unsigned char)(src * 31 + dst * 7 + tag * 13 + i * 3 + (i >> 8) * 5 + (i >> 16));
}

static void fill(unsigned char *b, size_t n, int src, int dst, int tag)
{
    for (size_t i = 0; i < n; i++)
        b[i] = pat(src, dst, tag, i);
}

static size_t bad_at(const unsigned char *b, size_t n, int src, int dst, int tag)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat(src, dst, tag, i))
            return i;
    return (size_t)-1;
}

/* Every ordered pair exchanges every size, standard mode, Send/Recv with Get_count. */
static void t_sizes(void)
{
    size_t sizes[] = {0, 1, 8, (size_t)eager - 1, (size_t)eager, (size_t)eager + 1, 65536, 1 << 20};
    size_t max = 1 << 20;
    unsigned char *s = malloc(max), *r = malloc(max);
    for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        for (int d = 1; d < size; d++) {
            int to = (rank + d) % size, from = (rank - d + size) % size;
            fill(s, n, rank, to, (int)k);
            memset(r, 0xee, max);
            MPI_Status st;
            MPI_Request rq;
            MPI_Irecv(r, (int)max, MPI_BYTE, from, (int)k, MPI_COMM_WORLD, &rq);
            MPI_Send(s, (int)n, MPI_BYTE, to, (int)k, MPI_COMM_WORLD);
            MPI_Wait(&rq, &st);
            int cnt = -1;
            MPI_Get_count(&st, MPI_BYTE, &cnt);
            CHECK(cnt == (int)n && st.MPI_SOURCE == from && st.MPI_TAG == (int)k, "size %zu from %d: count %d src %d tag %d",
                  n, from, cnt, st.MPI_SOURCE, st.MPI_TAG);
            size_t at = bad_at(r, n, from, rank, (int)k);
            CHECK(at == (size_t)-1, "size %zu from %d: byte %zu wrong", n, from, at);
            CHECK(n == max || r[n] == 0xee, "size %zu from %d: wrote past the message", n, from);
        }
    }
    free(s);
    free(r);
}

/* The four modes, blocking and not, including Bsend with an attached buffer and a ready send
 * whose receive is posted before (a barrier orders it). Stack buffers on both sides. */
static void t_modes(void)
{
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    unsigned char sb[3 * 4096 + 100], rb[3 * 4096 + 100];
    size_t n = sizeof sb;
    int bsz = 4 * (int)n + 4 * MPI_BSEND_OVERHEAD;
    void *battach = malloc((size_t)bsz);
    MPI_Buffer_attach(battach, bsz);
    for (int mode = 0; mode < 8; mode++) {
        int tag = 100 + mode;
        fill(sb, n, rank, to, tag);
        memset(rb, 0, n);
        MPI_Request rq, sq = MPI_REQUEST_NULL;
        MPI_Irecv(rb, (int)n, MPI_BYTE, from, tag, MPI_COMM_WORLD, &rq);
        MPI_Barrier(MPI_COMM_WORLD); /* receives posted: ready mode is legal */
        switch (mode) {
        case 0: MPI_Send(sb, (int)n, MPI_BYTE, to, tag, MPI_COMM_WORLD); break;
        case 1: MPI_Ssend(sb, (int)n, MPI_BYTE, to, tag, MPI_COMM_WORLD); break;
        case 2: MPI_Rsend(sb, (int)n, MPI_BYTE, to, tag, MPI_COMM_WORLD); break;
        case 3: MPI_Bsend(sb, (int)n, MPI_BYTE, to, tag, MPI_COMM_WORLD); break;
        case 4: MPI_Isend(sb, (int)n, MPI_BYTE, to, tag, MPI_COMM_WORLD, &sq); break;
        case 5: MPI_Issend(sb, (int)n, MPI_BYTE, to, tag, MPI_COMM_WORLD, &sq); break;
        case 6: MPI_Irsend(sb, (int)n, MPI_BYTE, to, tag, MPI_COMM_WORLD, &sq); break;
        case 7: MPI_Ibsend(sb, (int)n, MPI_BYTE, to, tag, MPI_COMM_WORLD, &sq); break;
        }
        if (mode == 3)
            memset(sb, 0, n); /* buffered: the message must not depend on sb any more */
        MPI_Wait(&sq, MPI_STATUS_IGNORE);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        size_t at = bad_at(rb, n, from, rank, tag);
        CHECK(at == (size_t)-1, "mode %d: byte %zu wrong", mode, at);
    }
    void *dummy;
    int dsz;
    MPI_Buffer_detach(&dummy, &dsz);
    CHECK(dummy == battach && dsz == bsz, "Buffer_detach returned another buffer");
    free(battach);
    /* Small Bsend completes before the receiver posts (it is buffered). */
    int v = rank * 10 + 1, got = -1;
    bsz = 64 + MPI_BSEND_OVERHEAD;
    battach = malloc((size_t)bsz);
    MPI_Buffer_attach(battach, bsz);
    MPI_Bsend(&v, 1, MPI_INT, to, 7, MPI_COMM_WORLD);
    MPI_Recv(&got, 1, MPI_INT, from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(got == from * 10 + 1, "Bsend value %d", got);
    MPI_Buffer_detach(&dummy, &dsz);
    free(battach);
}

/* Synchronous send must not complete before the receive matches: the receiver only posts after
 * it saw (through a second message on another communicator) that the sender's Issend is not done. */
static void t_ssend_sync(void)
{
    if (size < 2 || rank > 1)
        return;
    int v = 42, got = 0, peer = 1 - rank;
    if (rank == 0) {
        MPI_Request rq;
        MPI_Issend(&v, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, &rq);
        int flag = 1;
        for (int i = 0; i < 100; i++)
            MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
        CHECK(!flag, "Issend completed before the receive was posted");
        MPI_Send(&flag, 1, MPI_INT, peer, 6, MPI_COMM_WORLD);
        if (!flag)
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
    } else {
        int f;
        MPI_Recv(&f, 1, MPI_INT, peer, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(&got, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(got == 42, "Issend value %d", got);
    }
}

/* Out-of-order tags: N messages of each size class, received in reverse tag order. Large ones
 * go through Isend (the receiver is not there yet); small ones through blocking Send, which must
 * not wait for the receiver (eager). */
static void t_tag_order(void)
{
    enum { N = 12 };
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    size_t lens[2] = {16, 3 * (size_t)eager};
    for (int c = 0; c < 2; c++) {
        size_t n = lens[c];
        unsigned char *s = malloc(n * N), *r = malloc(n * N);
        MPI_Request sq[N];
        for (int t = 0; t < N; t++) {
            fill(s + t * n, n, rank, to, 200 + t);
            if (c == 0)
                MPI_Send(s + t * n, (int)n, MPI_BYTE, to, 200 + t, MPI_COMM_WORLD);
            else
                MPI_Isend(s + t * n, (int)n, MPI_BYTE, to, 200 + t, MPI_COMM_WORLD, &sq[t]);
        }
        for (int t = N - 1; t >= 0; t--) {
            MPI_Status st;
            MPI_Recv(r + t * n, (int)n, MPI_BYTE, from, 200 + t, MPI_COMM_WORLD, &st);
            CHECK(st.MPI_TAG == 200 + t, "tag %d got %d", 200 + t, st.MPI_TAG);
            CHECK(bad_at(r + t * n, n, from, rank, 200 + t) == (size_t)-1, "tag %d payload", 200 + t);
        }
        if (c == 1)
            MPI_Waitall(N, sq, MPI_STATUSES_IGNORE);
        free(s);
        free(r);
    }
}

/* ANY_SOURCE / ANY_TAG: every rank sends M numbered messages (mixed sizes) to rank 0, which
 * takes them with wildcards; per source the sequence must be increasing (non-overtaking). Then
 * the wildcard-before-specific ordering: rank 0 posts Irecv(ANY) and then Irecv(src) for two
 * messages of the same source and tag: the first must land in the wildcard. */
static void t_wildcards(void)
{
    enum { M = 20 };
    if (rank == 0) {
        int *next = calloc((size_t)size, sizeof(int));
        int cap = 4 * eager + 7 * M;
        unsigned char *buf = malloc((size_t)cap);
        for (int k = 0; k < M * (size - 1); k++) {
            MPI_Status st;
            MPI_Recv(buf, cap, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            int s = st.MPI_SOURCE, cnt;
            MPI_Get_count(&st, MPI_BYTE, &cnt);
            CHECK(s > 0 && s < size, "source %d", s);
            if (s <= 0 || s >= size)
                continue;
            int seq = st.MPI_TAG - 300;
            CHECK(seq == next[s], "from %d: seq %d, expected %d (overtaken)", s, seq, next[s]);
            size_t n = (seq % 3 == 2) ? 2 * (size_t)eager : (size_t)(seq * 7);
            CHECK((size_t)cnt == n && bad_at(buf, n, s, 0, st.MPI_TAG) == (size_t)-1, "from %d seq %d payload", s, seq);
            next[s] = seq + 1;
        }
        free(next);
        free(buf);
    } else {
        unsigned char *b = malloc(2 * (size_t)eager + 7 * M); /* seq * 7 may pass 2 * eager */
        for (int seq = 0; seq < M; seq++) {
            size_t n = (seq % 3 == 2) ? 2 * (size_t)eager : (size_t)(seq * 7);
            fill(b, n, rank, 0, 300 + seq);
            MPI_Send(b, (int)n, MPI_BYTE, 0, 300 + seq, MPI_COMM_WORLD);
        }
        free(b);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int last = size - 1;
    if (rank == 0 && last > 0) {
        int a = -1, b = -1;
        MPI_Request rq[2];
        MPI_Irecv(&a, 1, MPI_INT, MPI_ANY_SOURCE, 400, MPI_COMM_WORLD, &rq[0]);
        MPI_Irecv(&b, 1, MPI_INT, last, 400, MPI_COMM_WORLD, &rq[1]);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        CHECK(a == 1 && b == 2, "wildcard then specific: got %d, %d (expected 1, 2)", a, b);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == last) {
            int one = 1, two = 2;
            MPI_Send(&one, 1, MPI_INT, 0, 400, MPI_COMM_WORLD);
            MPI_Send(&two, 1, MPI_INT, 0, 400, MPI_COMM_WORLD);
        }
    }
}

/* Truncation through the communicator's error handler (set to return), and statuses. */
static void t_truncate(void)
{
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    /* MPICH raises request-array errors on MPI_COMM_WORLD's handler */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    size_t lens[2] = {100, 2 * (size_t)eager};
    for (int k = 0; k < 2; k++) {
        size_t n = lens[k];
        unsigned char *s = malloc(n), *r = calloc(n, 1);
        fill(s, n, rank, to, 500 + k);
        MPI_Request sq;
        MPI_Isend(s, (int)n, MPI_BYTE, to, 500 + k, c, &sq);
        MPI_Status st;
        int rc = MPI_Recv(r, (int)n / 2, MPI_BYTE, from, 500 + k, c, &st);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "len %zu: Recv into half returned class %d, not MPI_ERR_TRUNCATE", n, cls);
        /* The standard leaves the buffer's contents after a truncation open (Open MPI even writes
         * past it); the status must still name the message. */
        CHECK(st.MPI_SOURCE == from && st.MPI_TAG == 500 + k, "len %zu: truncated status", n);
        MPI_Wait(&sq, MPI_STATUS_IGNORE);
        /* the same through Waitall: MPI_ERR_IN_STATUS, the receive's MPI_ERROR says truncated and
         * the send's says success (its error field was garbage before), with the failing request
         * first and last in the array */
        for (int first = 0; first < 2; first++) {
            MPI_Request rq[2];
            int ri = first ? 0 : 1, si = 1 - ri;
            MPI_Irecv(r, (int)n / 4, MPI_BYTE, from, 510 + k, c, &rq[ri]);
            MPI_Isend(s, (int)n, MPI_BYTE, to, 510 + k, c, &rq[si]);
            MPI_Status sts[2];
            sts[0].MPI_ERROR = sts[1].MPI_ERROR = -12345;
            rc = MPI_Waitall(2, rq, sts);
            MPI_Error_class(rc, &cls);
            int cr = -1;
            MPI_Error_class(sts[ri].MPI_ERROR, &cr);
            CHECK(cls == MPI_ERR_IN_STATUS && cr == MPI_ERR_TRUNCATE, "len %zu: Waitall class %d, status class %d", n,
                  cls, cr);
            /* the send completed (MPI_SUCCESS, request freed) or, as MPICH does after a failure,
             * was left pending (MPI_ERR_PENDING, request still active) */
            int pend = sts[si].MPI_ERROR == MPI_ERR_PENDING;
            CHECK(sts[si].MPI_ERROR == MPI_SUCCESS || pend, "len %zu: Waitall: the send's MPI_ERROR is %d", n,
                  sts[si].MPI_ERROR);
            CHECK(sts[ri].MPI_SOURCE == from && sts[ri].MPI_TAG == 510 + k, "len %zu: Waitall: truncated status", n);
            CHECK((rq[si] == MPI_REQUEST_NULL) == !pend, "len %zu: Waitall: send request %s", n,
                  pend ? "pending but freed" : "complete but left");
            if (rq[si] != MPI_REQUEST_NULL)
                MPI_Wait(&rq[si], MPI_STATUS_IGNORE);
            if (rq[ri] != MPI_REQUEST_NULL) /* Open MPI keeps a failed request */
                MPI_Request_free(&rq[ri]);
        }
        free(s);
        free(r);
    }
    MPI_Comm_free(&c);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* Cancel a receive nobody sends to; a cancelled receive must not swallow a later message. */
static void t_cancel(void)
{
    int x = -1, to = (rank + 1) % size, from = (rank - 1 + size) % size;
    MPI_Request rq;
    MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 601, MPI_COMM_WORLD, &rq); /* nobody sends 601 */
    MPI_Cancel(&rq);
    MPI_Status st;
    MPI_Wait(&rq, &st);
    int flag = 0;
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag == 1 && rq == MPI_REQUEST_NULL, "receive not cancelled");
    int v = rank + 1000;
    MPI_Request sq;
    MPI_Isend(&v, 1, MPI_INT, to, 600, MPI_COMM_WORLD, &sq);
    st.MPI_ERROR = 12345; /* single-completion calls leave MPI_ERROR alone (MPI 3.2.5) */
    MPI_Recv(&x, 1, MPI_INT, from, 600, MPI_COMM_WORLD, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(x == from + 1000 && !flag, "after cancel: got %d", x);
    CHECK(st.MPI_ERROR == 12345, "MPI_Recv changed MPI_ERROR to %d", st.MPI_ERROR);
    MPI_Wait(&sq, MPI_STATUS_IGNORE);
}

/* Probe, then receive what it announced; Iprobe until there; Mprobe/Mrecv and Improbe/Imrecv. */
static void t_probe(void)
{
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    size_t lens[3] = {5, (size_t)eager + 1, 100000};
    unsigned char *s = malloc(100000);
    MPI_Request sq[3];
    for (int k = 0; k < 3; k++) {
        fill(s, lens[k], rank, to, 700 + k); /* same prefix pattern for every k's tag */
        unsigned char *copy = malloc(lens[k]);
        memcpy(copy, s, lens[k]);
        MPI_Isend(copy, (int)lens[k], MPI_BYTE, to, 700 + k, MPI_COMM_WORLD, &sq[k]);
    }
    for (int k = 0; k < 3; k++) {
        MPI_Status st;
        int cnt = 0;
        unsigned char *r;
        if (k == 0) {
            MPI_Probe(MPI_ANY_SOURCE, 700, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &cnt);
            r = malloc((size_t)cnt + 1);
            MPI_Recv(r, cnt, MPI_BYTE, st.MPI_SOURCE, 700, MPI_COMM_WORLD, &st);
        } else if (k == 1) {
            MPI_Message m;
            int flag = 0;
            while (!flag)
                MPI_Improbe(from, 701, MPI_COMM_WORLD, &flag, &m, &st);
            MPI_Get_count(&st, MPI_BYTE, &cnt);
            r = malloc((size_t)cnt + 1);
            MPI_Request rq;
            MPI_Imrecv(r, cnt, MPI_BYTE, &m, &rq);
            CHECK(m == MPI_MESSAGE_NULL, "Imrecv left the message handle");
            MPI_Wait(&rq, &st);
        } else {
            int flag = 0;
            while (!flag)
                MPI_Iprobe(from, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
            MPI_Message m;
            MPI_Mprobe(from, 702, MPI_COMM_WORLD, &m, &st);
            MPI_Get_count(&st, MPI_BYTE, &cnt);
            r = malloc((size_t)cnt + 1);
            MPI_Mrecv(r, cnt, MPI_BYTE, &m, &st);
        }
        CHECK(st.MPI_SOURCE == from && (size_t)cnt == lens[k], "probe %d: src %d count %d", k, st.MPI_SOURCE, cnt);
        CHECK(bad_at(r, lens[k], from, rank, 700 + k) == (size_t)-1, "probe %d: payload", k);
        free(r);
    }
    MPI_Waitall(3, sq, MPI_STATUSES_IGNORE);
    free(s);
    /* Probe of MPI_PROC_NULL answers at once. */
    MPI_Status st;
    int flag = 0;
    MPI_Iprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &flag, &st);
    CHECK(flag && st.MPI_SOURCE == MPI_PROC_NULL, "Iprobe(PROC_NULL)");
}

/* MPI_PROC_NULL everywhere, and a status of an empty receive. */
static void t_proc_null(void)
{
    int x = 7;
    MPI_Status st;
    MPI_Send(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD);
    MPI_Recv(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
    int cnt = -1;
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && cnt == 0 && x == 7, "Recv(PROC_NULL) status");
    int flag = 0;
    MPI_Request rq[2];
    MPI_Isend(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &rq[0]);
    MPI_Irecv(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    CHECK(rq[0] == MPI_REQUEST_NULL && rq[1] == MPI_REQUEST_NULL, "PROC_NULL requests not freed");
    MPI_Sendrecv(&x, 1, MPI_INT, MPI_PROC_NULL, 1, &x, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "Sendrecv(PROC_NULL)");
    /* Requests to and from MPI_PROC_NULL (bobcat hands out one shared completed request of each
     * kind): several live at once, each completed on its own, by each completion call. */
    MPI_Request nr[6];
    MPI_Irecv(&x, 1, MPI_INT, MPI_PROC_NULL, 2, MPI_COMM_WORLD, &nr[0]);
    MPI_Irecv(&x, 1, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &nr[1]);
    MPI_Issend(&x, 1, MPI_INT, MPI_PROC_NULL, 2, MPI_COMM_WORLD, &nr[2]);
    MPI_Irsend(&x, 1, MPI_INT, MPI_PROC_NULL, 2, MPI_COMM_WORLD, &nr[3]);
    MPI_Isend(&x, 1, MPI_INT, MPI_PROC_NULL, 2, MPI_COMM_WORLD, &nr[4]);
    MPI_Isend(&x, 1, MPI_INT, MPI_PROC_NULL, 2, MPI_COMM_WORLD, &nr[5]);
    flag = 0;
    st.MPI_SOURCE = st.MPI_TAG = 12345;
    MPI_Request_get_status(nr[1], &flag, &st);
    CHECK(flag && st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && nr[1] != MPI_REQUEST_NULL,
          "Request_get_status(Irecv PROC_NULL): flag %d source %d tag %d", flag, st.MPI_SOURCE, st.MPI_TAG);
    MPI_Cancel(&nr[0]);
    st.MPI_SOURCE = 12345;
    MPI_Wait(&nr[0], &st);
    int cancelled = 1;
    MPI_Test_cancelled(&st, &cancelled);
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(nr[0] == MPI_REQUEST_NULL && st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && cnt == 0 &&
              !cancelled,
          "Wait(Irecv PROC_NULL): source %d tag %d count %d cancelled %d", st.MPI_SOURCE, st.MPI_TAG, cnt, cancelled);
    flag = 0;
    MPI_Test(&nr[2], &flag, MPI_STATUS_IGNORE);
    CHECK(flag && nr[2] == MPI_REQUEST_NULL, "Test(Issend PROC_NULL)");
    MPI_Request_free(&nr[5]);
    CHECK(nr[5] == MPI_REQUEST_NULL, "Request_free(Isend PROC_NULL)");
    MPI_Status sts[5];
    int idx[5], n = 0;
    MPI_Testsome(5, nr, &n, idx, sts);
    CHECK(n == 3, "Testsome over PROC_NULL requests: %d done, want 3", n);
    for (int i = 0; i < n; i++)
        CHECK(idx[i] != 1 || sts[i].MPI_SOURCE == MPI_PROC_NULL, "Testsome: Irecv PROC_NULL source %d",
              sts[i].MPI_SOURCE);
    CHECK(nr[1] == MPI_REQUEST_NULL && nr[3] == MPI_REQUEST_NULL && nr[4] == MPI_REQUEST_NULL,
          "Testsome left PROC_NULL requests");
    CHECK(x == 7, "PROC_NULL receives wrote the buffer");
    /* MPI_Request_get_status of MPI_REQUEST_NULL: flag true, an empty status, MPI_ERROR included
     * (MPICH's test suite, rqstatus, caught garbage left there) */
    flag = 0;
    st.MPI_SOURCE = st.MPI_TAG = st.MPI_ERROR = 12345;
    MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st);
    CHECK(flag && st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG && st.MPI_ERROR == MPI_SUCCESS,
          "Request_get_status(MPI_REQUEST_NULL): flag %d source %d tag %d error %d", flag, st.MPI_SOURCE, st.MPI_TAG,
          st.MPI_ERROR);
}

/* Waitany / Waitsome / Testany / Testsome over bobcat's requests and the real MPI's (a
 * communicator from MPI_Comm_idup, which bobcat leaves to the real MPI). */
static void t_mixed_requests(void)
{
    MPI_Comm real;
    MPI_Request ir;
    MPI_Comm_idup(MPI_COMM_WORLD, &real, &ir);
    MPI_Wait(&ir, MPI_STATUS_IGNORE);
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    enum { K = 4 };
    int in[2 * K], out[2 * K];
    MPI_Request rq[2 * K], sq[2 * K];
    for (int i = 0; i < 2 * K; i++) {
        in[i] = -1;
        out[i] = rank * 100 + i;
        MPI_Comm c = i % 2 ? real : MPI_COMM_WORLD;
        MPI_Irecv(&in[i], 1, MPI_INT, from, 800 + i, c, &rq[i]);
    }
    rq[3] = MPI_REQUEST_NULL; /* a null entry among them */
    in[3] = from * 100 + 3;
    for (int i = 2 * K - 1; i >= 0; i--) {
        MPI_Comm c = i % 2 ? real : MPI_COMM_WORLD;
        if (i == 3)
            sq[i] = MPI_REQUEST_NULL;
        else
            MPI_Isend(&out[i], 1, MPI_INT, to, 800 + i, c, &sq[i]);
    }
    int seen[2 * K] = {0}, done = 1; /* index 3 is null */
    seen[3] = 1;
    while (done < 2 * K) {
        int idx[2 * K], n = 0;
        MPI_Status sts[2 * K];
        if (done % 2) {
            MPI_Waitany(2 * K, rq, &idx[0], &sts[0]);
            n = 1;
        } else {
            MPI_Waitsome(2 * K, rq, &n, idx, sts);
        }
        for (int j = 0; j < n; j++) {
            int i = idx[j];
            CHECK(i >= 0 && i < 2 * K && !seen[i], "completed index %d twice or out of range", i);
            if (i < 0 || i >= 2 * K)
                continue;
            seen[i] = 1;
            CHECK(rq[i] == MPI_REQUEST_NULL, "completed request %d not freed", i);
            CHECK(sts[j].MPI_TAG == 800 + i && sts[j].MPI_SOURCE == from, "status of %d: tag %d", i, sts[j].MPI_TAG);
            done++;
        }
    }
    int idx = 0;
    MPI_Waitany(2 * K, rq, &idx, MPI_STATUS_IGNORE);
    CHECK(idx == MPI_UNDEFINED, "Waitany over null requests gave %d", idx);
    int flag = 0;
    MPI_Testall(2 * K, sq, &flag, MPI_STATUSES_IGNORE);
    if (!flag)
        MPI_Waitall(2 * K, sq, MPI_STATUSES_IGNORE);
    for (int i = 0; i < 2 * K; i++)
        CHECK(in[i] == from * 100 + i, "mixed %d: got %d", i, in[i]);
    /* Testany / Testsome until done */
    MPI_Request t[2];
    int a = -1, b = -1, x = rank, y = rank + 1;
    MPI_Irecv(&a, 1, MPI_INT, from, 850, MPI_COMM_WORLD, &t[0]);
    MPI_Irecv(&b, 1, MPI_INT, from, 851, real, &t[1]);
    MPI_Send(&x, 1, MPI_INT, to, 850, MPI_COMM_WORLD);
    MPI_Send(&y, 1, MPI_INT, to, 851, real);
    int got = 0;
    while (got < 2) {
        int i, f, n, ids[2];
        MPI_Testany(2, t, &i, &f, MPI_STATUS_IGNORE);
        if (f && i != MPI_UNDEFINED)
            got++;
        MPI_Testsome(2, t, &n, ids, MPI_STATUSES_IGNORE);
        if (n != MPI_UNDEFINED)
            got += n;
    }
    CHECK(a == from && b == from + 1, "Testany/Testsome values %d %d", a, b);
    MPI_Comm_free(&real);
}

/* Testany over bobcat's requests only (the path that makes no real MPI call): all null or
 * inactive persistent -> flag 1, MPI_UNDEFINED; one posted receive not yet
 * sent to -> flag 0, MPI_UNDEFINED; once sent -> its index, the value, the handle nulled. */
static void t_testany_mine(void)
{
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    int v = -1, x = rank * 10 + 3, i = -2, f = -2, dummy;
    MPI_Request r[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status st;
    MPI_Recv_init(&dummy, 1, MPI_INT, from, 871, MPI_COMM_WORLD, &r[2]); /* never started */
    /* The status is not checked here: MPI 4.0 says it is empty, but MPICH 4.0 alone (the .off
     * runs) leaves it untouched. */
    MPI_Testany(3, r, &i, &f, &st);
    CHECK(f == 1 && i == MPI_UNDEFINED, "Testany of nulls: flag %d index %d", f, i);
    MPI_Irecv(&v, 1, MPI_INT, from, 870, MPI_COMM_WORLD, &r[1]);
    MPI_Testany(3, r, &i, &f, &st); /* nobody sends before the barrier below */
    CHECK(f == 0 && i == MPI_UNDEFINED && r[1] != MPI_REQUEST_NULL, "Testany before the send: flag %d index %d", f, i);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Send(&x, 1, MPI_INT, to, 870, MPI_COMM_WORLD);
    for (f = 0; !f;)
        MPI_Testany(3, r, &i, &f, &st);
    CHECK(i == 1 && v == from * 10 + 3 && r[1] == MPI_REQUEST_NULL && st.MPI_SOURCE == from && st.MPI_TAG == 870,
          "Testany after the send: index %d value %d source %d tag %d", i, v, st.MPI_SOURCE, st.MPI_TAG);
    MPI_Request_free(&r[2]);
}

/* Persistent requests started many times, data checked every round; Request_get_status. */
static void t_persistent(void)
{
    enum { ROUNDS = 100 };
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    size_t n = (size_t)eager + 1;
    unsigned char *s = malloc(n), *r = malloc(n);
    int sv = 0, rv = 0;
    MPI_Request q[4];
    MPI_Send_init(s, (int)n, MPI_BYTE, to, 900, MPI_COMM_WORLD, &q[0]);
    MPI_Recv_init(r, (int)n, MPI_BYTE, from, 900, MPI_COMM_WORLD, &q[1]);
    MPI_Ssend_init(&sv, 1, MPI_INT, to, 901, MPI_COMM_WORLD, &q[2]);
    MPI_Recv_init(&rv, 1, MPI_INT, MPI_ANY_SOURCE, 901, MPI_COMM_WORLD, &q[3]);
    for (int round = 0; round < ROUNDS; round++) {
        fill(s, n, rank, to, round);
        sv = rank * 1000 + round;
        MPI_Startall(4, q);
        if (round % 2) {
            MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
        } else {
            int flag = 0;
            while (!flag)
                MPI_Testall(4, q, &flag, MPI_STATUSES_IGNORE);
        }
        CHECK(bad_at(r, n, from, rank, round) == (size_t)-1 && rv == from * 1000 + round, "round %d", round);
        if (mp_failures)
            break;
    }
    for (int i = 0; i < 4; i++) {
        CHECK(q[i] != MPI_REQUEST_NULL, "persistent request %d freed by completion", i);
        int flag = 0;
        MPI_Status st;
        MPI_Request_get_status(q[i], &flag, &st);
        CHECK(flag, "inactive persistent request %d not complete", i);
        MPI_Request_free(&q[i]);
    }
    free(s);
    free(r);
}

/* Derived datatypes: a strided vector sent, received contiguous and as the same vector. */
static void t_datatypes(void)
{
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    enum { COUNT = 2000, STRIDE = 3 };
    MPI_Datatype vec;
    MPI_Type_vector(COUNT, 1, STRIDE, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int *sv = malloc(sizeof(int) * COUNT * STRIDE), *rc = malloc(sizeof(int) * COUNT),
        *rv = malloc(sizeof(int) * COUNT * STRIDE);
    for (int i = 0; i < COUNT * STRIDE; i++)
        sv[i] = rank * 100000 + i;
    MPI_Request sq[2];
    MPI_Isend(sv, 1, vec, to, 1000, MPI_COMM_WORLD, &sq[0]);
    MPI_Isend(sv, 1, vec, to, 1001, MPI_COMM_WORLD, &sq[1]);
    MPI_Status st;
    MPI_Recv(rc, COUNT, MPI_INT, from, 1000, MPI_COMM_WORLD, &st);
    int cnt = 0, el = 0;
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(cnt == COUNT, "vector into ints: count %d", cnt);
    for (int i = 0; i < COUNT; i++)
        if (rc[i] != from * 100000 + i * STRIDE) {
            CHECK(0, "vector into ints: [%d] = %d", i, rc[i]);
            break;
        }
    for (int i = 0; i < COUNT * STRIDE; i++)
        rv[i] = -1;
    MPI_Recv(rv, 1, vec, from, 1001, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, vec, &cnt);
    MPI_Get_elements(&st, vec, &el);
    CHECK(cnt == 1 && el == COUNT, "vector: count %d elements %d", cnt, el);
    for (int i = 0; i < COUNT * STRIDE; i++)
        if (rv[i] != (i % STRIDE ? -1 : from * 100000 + i)) {
            CHECK(0, "vector into vector: [%d] = %d", i, rv[i]);
            break;
        }
    MPI_Waitall(2, sq, MPI_STATUSES_IGNORE);
    MPI_Type_free(&vec);
    /* A contiguous derived type and a partial count: Get_count says MPI_UNDEFINED. */
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_DOUBLE, &pair);
    MPI_Type_commit(&pair);
    double d[6] = {1, 2, 3, 4, 5, 6}, e[6] = {0};
    MPI_Request q;
    MPI_Isend(d, 5, MPI_DOUBLE, to, 1002, MPI_COMM_WORLD, &q);
    MPI_Recv(e, 3, pair, from, 1002, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, pair, &cnt);
    MPI_Get_elements(&st, pair, &el);
    CHECK(cnt == MPI_UNDEFINED && el == 5 && e[4] == 5 && e[5] == 0, "pair: count %d elements %d", cnt, el);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    MPI_Type_free(&pair);
    free(sv);
    free(rc);
    free(rv);
}

/* Sendrecv and Sendrecv_replace around the ring, on communicators made every way. */
static void t_comms(void)
{
    MPI_Comm comms[5];
    int nc = 0;
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[nc++]);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &comms[nc++]);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &comms[nc++]);
    MPI_Group wg, g;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int excl[1] = {0};
    MPI_Group_excl(wg, 1, excl, &g);
    MPI_Comm_create(MPI_COMM_WORLD, g, &comms[nc++]); /* MPI_COMM_NULL on rank 0 */
    int dims[1] = {size}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &comms[nc++]);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    for (int k = 0; k < nc; k++) {
        MPI_Comm c = comms[k];
        /* a message on WORLD with the same tag must not be taken by c's receive */
        int wv = 5555, got = -1, wgot = -1;
        MPI_Request wq;
        MPI_Isend(&wv, 1, MPI_INT, (rank + 1) % size, 1100, MPI_COMM_WORLD, &wq);
        if (c == MPI_COMM_NULL) {
            MPI_Recv(&wgot, 1, MPI_INT, (rank - 1 + size) % size, 1100, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Wait(&wq, MPI_STATUS_IGNORE);
            continue;
        }
        int r, n;
        MPI_Comm_rank(c, &r);
        MPI_Comm_size(c, &n);
        int to = (r + 1) % n, from = (r - 1 + n) % n, cv = r * 10 + k;
        MPI_Status st;
        MPI_Sendrecv(&cv, 1, MPI_INT, to, 1100, &got, 1, MPI_INT, from, 1100, c, &st);
        CHECK(got == from * 10 + k && st.MPI_SOURCE == from, "comm %d: Sendrecv got %d", k, got);
        MPI_Recv(&wgot, 1, MPI_INT, (rank - 1 + size) % size, 1100, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(wgot == 5555, "comm %d: WORLD message got %d", k, wgot);
        MPI_Wait(&wq, MPI_STATUS_IGNORE);
        size_t len = (size_t)eager * 2;
        unsigned char *b = malloc(len);
        fill(b, len, r, to, k);
        MPI_Sendrecv_replace(b, (int)len, MPI_BYTE, to, 1101, from, 1101, c, &st);
        CHECK(bad_at(b, len, from, r, k) == (size_t)-1, "comm %d: Sendrecv_replace payload", k);
        free(b);
    }
    for (int k = 0; k < nc; k++)
        if (comms[k] != MPI_COMM_NULL)
            MPI_Comm_free(&comms[k]);
}

/* Request_free of an active send: the message still arrives. */
static void t_request_free(void)
{
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    size_t n = 3 * (size_t)eager;
    unsigned char *s = malloc(n), *r = malloc(n);
    fill(s, n, rank, to, 1200);
    MPI_Request q;
    MPI_Isend(s, (int)n, MPI_BYTE, to, 1200, MPI_COMM_WORLD, &q);
    MPI_Request_free(&q);
    CHECK(q == MPI_REQUEST_NULL, "Request_free left the handle");
    MPI_Recv(r, (int)n, MPI_BYTE, from, 1200, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(bad_at(r, n, from, rank, 1200) == (size_t)-1, "freed send payload");
    MPI_Barrier(MPI_COMM_WORLD); /* the receiver has copied: s may go */
    free(s);
    free(r);
}

/* Many small blocking sends before the receiver looks: more than the inbox holds. */
static void t_flood(void)
{
    enum { F = 200 };
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    for (int i = 0; i < F; i++) {
        int v = rank * 100000 + i;
        MPI_Send(&v, 1, MPI_INT, to, 1300, MPI_COMM_WORLD);
    }
    for (int i = 0; i < F; i++) {
        int v = -1;
        MPI_Recv(&v, 1, MPI_INT, from, 1300, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (v != from * 100000 + i) {
            CHECK(0, "flood %d: got %d", i, v);
            break;
        }
    }
}

/* A stream of mixed sizes to the next rank, one tag, checked in the order sent: fast-box cells,
 * the data ring, rendezvous headers, a full box falling back to the inbox (often, with a small
 * BOBCAT_P2P_FASTBOX), and every seventh message synchronous (always the inbox), so the pair's order
 * is checked across both paths. Each payload is salted with its index: an overtaking message fails. */
static size_t stream_size(int i, int sender)
{
    const size_t sz[] = {0,  1,  2,  3,  4,  5,  6,  7,   8,   9,   12,                15,            16,
                         17, 24, 32, 33, 39, 40, 41, 48,  56,  63,  64,                65,            100,
                         200, (size_t)eager - 1, (size_t)eager, (size_t)eager + 1, 3 * (size_t)eager};
    enum { NS = sizeof sz / sizeof sz[0] };
    return sz[(size_t)(i * 7 + i / NS + sender) % NS];
}

static void t_stream(void)
{
    enum { M = 700, W = 16 };
    size_t maxn = 3 * (size_t)eager > 200 ? 3 * (size_t)eager : 200;
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    unsigned char *s = malloc(W * maxn), *r = malloc(maxn);
    MPI_Request q[W];
    int bad = 0;
    for (int base = 0; base < M && !bad; base += W) {
        for (int k = 0; k < W; k++) {
            int i = base + k;
            size_t n = stream_size(i, rank);
            fill(s + (size_t)k * maxn, n, rank, to, i);
            (i % 7 == 3 ? MPI_Issend : MPI_Isend)(s + (size_t)k * maxn, (int)n, MPI_BYTE, to, 1500, MPI_COMM_WORLD, &q[k]);
        }
        for (int k = 0; k < W && !bad; k++) {
            int i = base + k, cnt = -1;
            size_t n = stream_size(i, from);
            MPI_Status st;
            MPI_Recv(r, (int)maxn, MPI_BYTE, from, 1500, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &cnt);
            size_t at = cnt == (int)n ? bad_at(r, n, from, rank, i) : 0;
            if (at != (size_t)-1) {
                CHECK(0, "stream message %d from %d: %d bytes (want %zu), first bad byte %zd", i, from, cnt, n,
                      cnt == (int)n ? (ssize_t)at : (ssize_t)-1);
                bad = 1;
            }
        }
        MPI_Waitall(W, q, MPI_STATUSES_IGNORE);
    }
    free(s);
    free(r);
}

/* 64 MiB between rank pairs (0,1), (2,3)... */
static void t_big(void)
{
    size_t n = 64u << 20;
    int peer = rank ^ 1;
    if (peer >= size)
        return;
    unsigned char *s = malloc(n), *r = malloc(n);
    fill(s, n, rank, peer, 1400);
    MPI_Status st;
    MPI_Sendrecv(s, (int)n, MPI_BYTE, peer, 1400, r, (int)n, MPI_BYTE, peer, 1400, MPI_COMM_WORLD, &st);
    int cnt = 0;
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(cnt == (int)n && bad_at(r, n, peer, rank, 1400) == (size_t)-1, "64 MiB: count %d", cnt);
    free(s);
    free(r);
}

/* Blocking receives from one node mate take the pair's next message straight from its fast-box
 * cell when nothing can come before it (bobcat_msg_recv_box); everything else must go the posted
 * way. Pairs (even, odd) play: a warm-up stream (the box opens), ping-pongs of cell and data-ring
 * sizes received with a specific and with any tag, a tag asked for out of order, a truncation, a
 * receive posted before the blocking one (it matches first) and an unexpected message left by a
 * probe. */
static void box_send(int to, int tag, size_t n, MPI_Comm c)
{
    unsigned char b[2048 + 64];
    fill(b, n, rank, to, tag);
    MPI_Send(b, (int)n, MPI_BYTE, to, tag, c);
}

static void box_expect(int from, int tag_asked, int tag_sent, size_t n, size_t cap, MPI_Comm c, const char *what)
{
    unsigned char b[2048 + 64];
    memset(b, 0xee, sizeof b);
    MPI_Status st;
    int rc = MPI_Recv(b, (int)cap, MPI_BYTE, from, tag_asked, c, &st);
    int cnt = -1;
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(rc == MPI_SUCCESS && cnt == (int)n && st.MPI_SOURCE == from && st.MPI_TAG == tag_sent,
          "%s: %zu B tag %d: rc %d count %d source %d tag %d", what, n, tag_sent, rc, cnt, st.MPI_SOURCE, st.MPI_TAG);
    size_t at = bad_at(b, n, from, rank, tag_sent);
    CHECK(at == (size_t)-1, "%s: %zu B tag %d: byte %zu wrong", what, n, tag_sent, at);
    CHECK(b[n] == 0xee, "%s: %zu B: wrote past the message", what, n);
}

static void t_box_recv(void)
{
    if (rank == size - 1 && size % 2)
        return;
    int peer = rank ^ 1, first = rank % 2 == 0;
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    for (int i = 0; i < 20; i++) { /* warm-up both ways */
        if (first) {
            box_send(peer, 1, 8, c);
            box_expect(peer, 1, 1, 8, 8, c, "warm-up");
        } else {
            box_expect(peer, 1, 1, 8, 8, c, "warm-up");
            box_send(peer, 1, 8, c);
        }
    }
    size_t sizes[] = {0, 1, 7, 8, 39, 40, 41, 100, 1000, 2047, 2048};
    for (int rep = 0; rep < 3; rep++)
        for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            size_t n = sizes[k];
            int tag = 10 + (int)k, asked = rep == 1 ? MPI_ANY_TAG : tag;
            if (first) {
                box_send(peer, tag, n, c);
                box_expect(peer, asked, tag, n, 2048, c, "ping-pong");
            } else {
                box_expect(peer, asked, tag, n, 2048, c, "ping-pong");
                box_send(peer, tag, n, c);
            }
        }
    if (first) {
        box_send(peer, 30, 16, c); /* asked for second */
        box_send(peer, 31, 24, c);
        box_send(peer, 32, 32, c); /* truncated */
        box_send(peer, 33, 8, c);  /* for the Irecv posted first */
        box_send(peer, 34, 8, c);  /* for the blocking receive after it */
        box_send(peer, 35, 12, c); /* probed, then received */
        box_send(peer, 36, 20, c);
    } else {
        box_expect(peer, 31, 31, 24, 2048, c, "out of order");
        box_expect(peer, 30, 30, 16, 2048, c, "out of order");
        unsigned char t[64];
        MPI_Status st;
        int rc = MPI_Recv(t, 16, MPI_BYTE, peer, 32, c, &st), cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE && st.MPI_TAG == 32, "32 B into 16: class %d tag %d", cls, st.MPI_TAG);
        MPI_Request rq;
        unsigned char early[64];
        MPI_Irecv(early, 64, MPI_BYTE, peer, MPI_ANY_TAG, c, &rq);
        box_expect(peer, MPI_ANY_TAG, 34, 8, 2048, c, "after a posted receive");
        MPI_Wait(&rq, &st);
        int cnt = -1;
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        CHECK(st.MPI_TAG == 33 && cnt == 8 && bad_at(early, 8, peer, rank, 33) == (size_t)-1,
              "the receive posted first got tag %d count %d", st.MPI_TAG, cnt);
        int flag = 0;
        while (!flag)
            MPI_Iprobe(peer, 35, c, &flag, &st);
        box_expect(peer, MPI_ANY_TAG, 35, 12, 2048, c, "after a probe");
        box_expect(peer, 36, 36, 20, 2048, c, "after a probe");
    }
    MPI_Comm_free(&c);
}

/* Blocking rendezvous receives from a node mate: header in the pair's cell, the receiver claims
 * and copies with no request (sizes above the eager limit, the split copy from 64 KiB, a truncation
 * that must still be reported); then a receiver that posts late: the sender's MPI_Send completes on
 * its own (it copies its data aside while the header still waits in the cell), scribbles over its
 * buffer, and raises a flag in a shared window; the receiver, which made no MPI call meanwhile, must
 * get the original data. Pairs (even, odd) on one node, with bobcat's engine on (the real MPI may
 * block such a send until the receive is posted, as the standard allows). */
static void t_rndv_recv(void)
{
    const char *p2p = getenv("BOBCAT_P2P");
    int on = !(p2p && !strcmp(p2p, "0"));
    MPI_Comm shm;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm);
    int peer = rank ^ 1, first = rank % 2 == 0, peer_shm = MPI_UNDEFINED;
    MPI_Group wg, sg;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Comm_group(shm, &sg);
    if (peer < size)
        MPI_Group_translate_ranks(wg, 1, &peer, sg, &peer_shm);
    MPI_Group_free(&wg);
    MPI_Group_free(&sg);
    int *flag = NULL;
    MPI_Win win;
    MPI_Win_allocate_shared(sizeof(int), sizeof(int), MPI_INFO_NULL, shm, &flag, &win);
    *flag = 0;
    MPI_Barrier(shm);
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    if (on && peer_shm != MPI_UNDEFINED) {
        size_t sizes[] = {(size_t)eager + 1, 3 * (size_t)eager, 64u << 10, 1u << 20};
        size_t maxn = 1u << 20;
        unsigned char *b = malloc(maxn + 64);
        for (int i = 0; i < 10; i++) /* the pair's boxes open: the headers below go through cells */
            MPI_Sendrecv_replace(b, 8, MPI_BYTE, peer, 1999, peer, 1999, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
            for (int rep = 0; rep < 2; rep++) {
                size_t n = sizes[k];
                int tag = 2000 + (int)k;
                for (int turn = 0; turn < 2; turn++) {
                    if (first == (turn == 0)) {
                        fill(b, n, rank, peer, tag);
                        MPI_Send(b, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
                    } else {
                        MPI_Status st;
                        int cnt = -1;
                        memset(b, 0xee, n + 1);
                        MPI_Recv(b, (int)maxn, MPI_BYTE, peer, rep ? MPI_ANY_TAG : tag, MPI_COMM_WORLD, &st);
                        MPI_Get_count(&st, MPI_BYTE, &cnt);
                        CHECK(cnt == (int)n && st.MPI_TAG == tag && bad_at(b, n, peer, rank, tag) == (size_t)-1 &&
                                  b[n] == 0xee,
                              "rendezvous %zu B: count %d tag %d", n, cnt, st.MPI_TAG);
                    }
                }
            }
        /* truncated */
        size_t n = 3 * (size_t)eager;
        if (first) {
            fill(b, n, rank, peer, 2100);
            MPI_Send(b, (int)n, MPI_BYTE, peer, 2100, c);
        } else {
            MPI_Status st;
            int cls = -1, rc = MPI_Recv(b, (int)n / 2, MPI_BYTE, peer, 2100, c, &st);
            MPI_Error_class(rc, &cls);
            CHECK(cls == MPI_ERR_TRUNCATE && bad_at(b, n / 2, peer, rank, 2100) == (size_t)-1,
                  "rendezvous %zu B into %zu: class %d", n, n / 2, cls);
        }
        /* the late receiver */
        if (first) {
            fill(b, n, rank, peer, 2200);
            MPI_Send(b, (int)n, MPI_BYTE, peer, 2200, MPI_COMM_WORLD);
            memset(b, 0x5a, n);
            int *theirs = NULL;
            MPI_Aint sz;
            int du;
            MPI_Win_shared_query(win, peer_shm, &sz, &du, &theirs);
            __atomic_store_n(theirs, 1, __ATOMIC_RELEASE);
        } else {
            while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE))
                sched_yield();
            MPI_Recv(b, (int)n, MPI_BYTE, peer, 2200, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(bad_at(b, n, peer, rank, 2200) == (size_t)-1, "late receiver got the scribbled buffer");
        }
        free(b);
    }
    MPI_Comm_free(&c);
    MPI_Barrier(shm);
    MPI_Win_free(&win);
    MPI_Comm_free(&shm);
}

/* MPI_Comm_free while requests on the communicator are pending or persistent (MPI: they complete
 * normally; the communicator goes when they are done): a receive, a truncated receive whose error
 * goes to the freed communicator's handler, and a persistent receive started twice after the free.
 * Pairs (even, odd); an odd last rank sits out. */
static void t_comm_free(void)
{
    int partner = rank ^ 1;
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    if (partner >= size) {
        MPI_Comm_free(&c);
        return;
    }
    int out[4] = {rank, rank + 1, rank + 2, rank + 3};
    if (rank & 1) {
        MPI_Send(out, 4, MPI_INT, partner, 1, c);
        MPI_Send(out, 4, MPI_INT, partner, 2, c);
        MPI_Send(out, 4, MPI_INT, partner, 3, c);
        MPI_Send(out, 4, MPI_INT, partner, 3, c);
        MPI_Comm_free(&c);
        CHECK(c == MPI_COMM_NULL, "sender: Comm_free left the handle");
        return;
    }
    int a[4] = {0}, b[2] = {0}, p[4] = {0};
    MPI_Request rq[2], pr;
    /* MPICH raises a Waitall's error on MPI_COMM_WORLD's handler, Open MPI on the request's
     * communicator's (here, freed): both return it */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Status st[2];
    MPI_Irecv(a, 4, MPI_INT, partner, 1, c, &rq[0]);
    MPI_Irecv(b, 2, MPI_INT, partner, 2, c, &rq[1]);
    MPI_Recv_init(p, 4, MPI_INT, partner, 3, c, &pr);
    MPI_Comm_free(&c);
    CHECK(c == MPI_COMM_NULL, "receiver: Comm_free left the handle");
    int rc = MPI_Waitall(2, rq, st);
    int cls = MPI_SUCCESS;
    MPI_Error_class(st[1].MPI_ERROR, &cls);
    CHECK(rc == MPI_ERR_IN_STATUS && cls == MPI_ERR_TRUNCATE, "after Comm_free: Waitall %d, truncated class %d", rc, cls);
    CHECK(a[0] == partner && a[3] == partner + 3, "after Comm_free: got %d..%d", a[0], a[3]);
    for (int k = 0; k < 2; k++) {
        p[0] = p[3] = -1;
        MPI_Start(&pr);
        MPI_Wait(&pr, MPI_STATUS_IGNORE);
        CHECK(p[0] == partner && p[3] == partner + 3, "persistent start %d after Comm_free: got %d..%d", k, p[0], p[3]);
    }
    MPI_Request_free(&pr);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *e = getenv("BOBCAT_P2P_EAGER");
    if (e)
        eager = atoi(e);
    struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {{"sizes", t_sizes},         {"modes", t_modes},           {"ssend_sync", t_ssend_sync},
                 {"tag_order", t_tag_order}, {"wildcards", t_wildcards},   {"truncate", t_truncate},
                 {"cancel", t_cancel},       {"probe", t_probe},           {"proc_null", t_proc_null},
                 {"mixed_requests", t_mixed_requests}, {"testany_mine", t_testany_mine}, {"persistent", t_persistent}, {"datatypes", t_datatypes},
                 {"comms", t_comms},         {"request_free", t_request_free}, {"flood", t_flood},
                 {"stream", t_stream},       {"comm_free", t_comm_free}, {"box_recv", t_box_recv}, {"rndv_recv", t_rndv_recv}, {"big", t_big}};
    for (unsigned i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (tests[i].fn == t_big && !(argc > 1 && !strcmp(argv[1], "big")))
            continue;
        const char *only = getenv("MP_P2P_ONLY"); /* for debugging: one test by name */
        if (only && strcmp(only, tests[i].name))
            continue;
        int before = mp_failures;
        if (getenv("MP_P2P_VERBOSE"))
            fprintf(stderr, "rank %d: %s\n", rank, tests[i].name);
        tests[i].fn();
        MPI_Barrier(MPI_COMM_WORLD);
        if (mp_failures != before)
            fprintf(stderr, "rank %d: %s failed\n", rank, tests[i].name);
    }
    int total = 0;
    MPI_Allreduce(&mp_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("mp_p2p: %d ranks, %d failures\n", size, total);
    MPI_Finalize();
    return total ? 1 : 0;
}
