/* boot_node: the node bootstrap. The ranks of one node meet on an abstract unix socket
 * ("\0bobcat-<job id>-<node>": no file is created, and the name vanishes with the socket; or, for
 * ranks in different network namespaces, a socket file in BOBCAT_BOOT_DIR, removed by rank 0), hand
 * their heap memfds to local rank 0 with SCM_RIGHTS, and get every rank's memfd back, in batches
 * of BOOT_BATCH (SCM_RIGHTS carries at most 253 per message), each mapped and closed as it comes.
 *
 * Security: the name is public (/proc/net/unix), so neither side trusts it. The server accepts a
 * segment only from a peer of its own uid (SO_PEERCRED) that presents the job's secret token; a
 * client hands its segment only to a server of its own uid. A rejected peer does not disturb the
 * job: the server keeps waiting for the real ranks until the boot timeout. */
#include "boot.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static const char *socket_dir = "";

void boot_set_socket_dir(const char *dir) { socket_dir = dir ? dir : ""; }

unsigned boot_socket_name(struct sockaddr_un *sa, const char *job_id, int node)
{
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    if (*socket_dir) {
        /* A file, NUL-terminated: the length counts the terminator, as bind(2) suggests. */
        int n = snprintf(sa->sun_path, sizeof sa->sun_path, "%s/bobcat-%s-%d", socket_dir, job_id, node);
        if (n < 0 || (size_t)n >= sizeof sa->sun_path)
            return 0;
        return (unsigned)(offsetof(struct sockaddr_un, sun_path) + (size_t)n + 1);
    }
    int n = snprintf(sa->sun_path + 1, sizeof sa->sun_path - 1, "bobcat-%s-%d", job_id, node);
    return (unsigned)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* Where the rendezvous is, for messages: "@bobcat-..." or the file's path. */
static const char *socket_where(const struct sockaddr_un *sa, char *buf, size_t len)
{
    if (sa->sun_path[0])
        snprintf(buf, len, "%s", sa->sun_path);
    else
        snprintf(buf, len, "@%s", sa->sun_path + 1);
    return buf;
}

static int peer_uid_ok(int fd)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
        return 0;
    return cred.uid == geteuid();
}

/* Constant-time comparison: the token must not leak through timing. */
static int token_equal(const char *a, const char *b)
{
    unsigned char diff = 0;
    for (int i = 0; i < BOOT_TOKEN_LEN; i++)
        diff |= (unsigned char)(a[i] ^ b[i]);
    return diff == 0;
}

static int remaining_ms(double deadline)
{
    double left = deadline - util_now();
    return left <= 0 ? 0 : (int)(left * 1000) + 1;
}

/* Wait until fd is readable or the deadline passes. */
static int wait_readable(int fd, double deadline)
{
    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int ms = remaining_ms(deadline);
        if (ms == 0)
            return 0;
        int r = poll(&pfd, 1, ms);
        if (r > 0)
            return 1;
        if (r < 0 && errno != EINTR)
            return 0;
    }
}

static ssize_t send_with_fds(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    char ctrl[CMSG_SPACE(sizeof(int) * BOOT_BATCH)];
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfds > 0) {
        memset(ctrl, 0, sizeof ctrl);
        msg.msg_control = ctrl;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
    }
    ssize_t n;
    do
        n = sendmsg(sock, &msg, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n;
}

/* Receive one record and up to max_fds (<= BOOT_BATCH) descriptors; returns bytes or -1.
 * *nfds_p gets the count. */
static ssize_t recv_with_fds(int sock, void *buf, size_t len, int *fds, int max_fds, int *nfds_p)
{
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    char ctrl[CMSG_SPACE(sizeof(int) * (BOOT_BATCH + 8))];
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl, .msg_controllen = sizeof ctrl};
    ssize_t n;
    do
        n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    *nfds_p = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); n >= 0 && c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int i = 0; i < k; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + sizeof(int) * (size_t)i, sizeof fd);
            if (*nfds_p < max_fds)
                fds[(*nfds_p)++] = fd;
            else
                close(fd); /* never keep descriptors we did not ask for */
        }
    }
    if (n >= 0 && (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
        return -1;
    return n;
}

/* Local rank 0 holds every rank's memfd and a connection per client until all have joined: 2n
 * descriptors. Raise the soft RLIMIT_NOFILE to cover them for the bootstrap (restored after). */
static bobcat_status_t fd_room(const boot_place_t *pl, struct rlimit *saved, struct rlimit *now)
{
    getrlimit(RLIMIT_NOFILE, saved);
    *now = *saved;
    rlim_t need = 2 * (rlim_t)pl->local_size + 64;
    if (now->rlim_cur != RLIM_INFINITY && now->rlim_cur < need) {
        if (now->rlim_max != RLIM_INFINITY && now->rlim_max < need) {
            util_error("local rank 0 of a node of %d ranks needs %llu open files for the bootstrap, but the hard "
                       "limit is %llu: raise it (ulimit -Hn, limits.conf) or use fewer ranks per node (-VN)",
                       pl->local_size, (unsigned long long)need, (unsigned long long)now->rlim_max);
            return BOBCAT_ERR_LIMIT;
        }
        now->rlim_cur = need;
        if (setrlimit(RLIMIT_NOFILE, now)) {
            util_error("raising the open-file limit to %llu for the bootstrap: %m", (unsigned long long)need);
            return BOBCAT_ERR_LIMIT;
        }
    }
    return BOBCAT_OK;
}

static void batch_desc(boot_batch_t *b, int i, const boot_seg_desc_t *d)
{
    b->desc[i].heap_size = d->heap_size;
    b->desc[i].page_size = d->page_size;
    b->desc[i].pages = d->pages;
    b->desc[i].pad = 0;
}

/* Send every rank's segment to one client, BOOT_BATCH descriptors per message. */
static int send_all(int c, int slot_shift, int n, const int *fds, const boot_seg_desc_t *descs)
{
    boot_batch_t b;
    memset(&b, 0, sizeof b);
    b.magic = BOOT_MAGIC;
    b.nranks = n;
    b.slot_shift = slot_shift;
    for (int first = 0; first < n; first += BOOT_BATCH) {
        b.first = first;
        b.count = n - first < BOOT_BATCH ? n - first : BOOT_BATCH;
        for (int i = 0; i < b.count; i++)
            batch_desc(&b, i, &descs[first + i]);
        if (send_with_fds(c, &b, sizeof b, fds + first, b.count) != (ssize_t)sizeof b)
            return 0;
    }
    return 1;
}

static int wait_ack(int c, double deadline)
{
    uint32_t ack = 0;
    ssize_t n = -1;
    if (wait_readable(c, deadline))
        do
            n = recv(c, &ack, sizeof ack, 0);
        while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof ack && ack == BOOT_MAGIC;
}

static bobcat_status_t serve(int lsock, const char *token, const boot_place_t *pl, int slot_shift, int own_fd,
                             const boot_seg_desc_t *own, double deadline, boot_seg_fn_t fn, void *ctx)
{
    const int n = pl->local_size;
    struct rlimit saved, now;
    bobcat_status_t st = fd_room(pl, &saved, &now);
    if (st != BOBCAT_OK)
        return st;
    /* Per-peer tables, 32 bytes a rank, freed when the node has formed. */
    int *conns = calloc((size_t)n, sizeof *conns), *fds = calloc((size_t)n, sizeof *fds);
    boot_seg_desc_t *descs = calloc((size_t)n, sizeof *descs);
    if (!conns || !fds || !descs) {
        util_error("no memory for the bootstrap tables of %d ranks", n);
        st = BOBCAT_ERR_NOMEM;
        goto out;
    }
    int joined = 1;
    for (int r = 0; r < n; r++)
        conns[r] = fds[r] = -1;
    fds[0] = own_fd; /* the caller's: not closed here */
    descs[0] = *own;
    while (joined < n) {
        if (!wait_readable(lsock, deadline)) {
            util_error("timed out after waiting for %d of the %d ranks of node %d (raise BOBCAT_BOOT_TIMEOUT if "
                       "start-up is just slow%s)", n - joined, n, pl->node,
                       *socket_dir ? "" : "; ranks of one node in different network namespaces cannot reach this "
                                          "abstract socket: give yod --boot-dir DIR");
            st = BOBCAT_ERR_TIMEOUT;
            goto out;
        }
        int c = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        boot_hello_t h;
        int fd = -1, nfd = 0;
        int ok = peer_uid_ok(c) && wait_readable(c, deadline) &&
                 recv_with_fds(c, &h, sizeof h, &fd, 1, &nfd) == (ssize_t)sizeof h && nfd == 1 &&
                 h.magic == BOOT_MAGIC && token_equal(h.token, token) && h.local_rank > 0 &&
                 h.local_rank < n && conns[h.local_rank] < 0;
        if (ok && h.slot_shift != slot_shift) {
            /* One of ours, with another heap size: the node cannot agree on one layout. */
            util_error("local rank %d of node %d has a heap of %llu bytes (slot 2^%d) but local rank 0 uses slot "
                       "2^%d: every rank of a node needs the same heap size (BOBCAT_HEAP)", h.local_rank, pl->node,
                       (unsigned long long)h.heap_size, h.slot_shift, slot_shift);
            close(fd);
            close(c);
            st = BOBCAT_ERR_LAYOUT;
            goto out;
        }
        if (!ok) {
            /* Not one of ours (another user, another job, a stray): drop it and keep waiting. */
            util_debug("rejected a bootstrap connection on node %d", pl->node);
            boot_batch_t no;
            memset(&no, 0, sizeof no);
            no.magic = BOOT_MAGIC;
            no.status = BOBCAT_ERR_PEER;
            send_with_fds(c, &no, sizeof no, NULL, 0);
            if (nfd)
                close(fd);
            close(c);
            continue;
        }
        conns[h.local_rank] = c;
        fds[h.local_rank] = fd;
        descs[h.local_rank] = (boot_seg_desc_t){h.heap_size, (smap_pages_t)h.pages, h.page_size};
        joined++;
    }
    for (int r = 0; r < n && st == BOBCAT_OK; r++)
        st = fn(ctx, r, fds[r], &descs[r]);
    if (st != BOBCAT_OK)
        goto out;
    /* Descriptors in flight (sent, not yet received) count against the sender's RLIMIT_NOFILE for
     * unprivileged users: keep at most half the limit in flight, waiting for acknowledgements of
     * the oldest clients. `acked` trails `sent` in rank order. */
    long budget = now.rlim_cur == RLIM_INFINITY ? 1L << 30 : (long)(now.rlim_cur / 2);
    int acked = 1;
    for (int r = 1; r < n; r++) {
        while (acked < r && (long)(r - acked + 1) * n > budget) {
            if (!wait_ack(conns[acked], deadline)) {
                util_error("local rank %d of node %d did not take its segments", acked, pl->node);
                st = BOBCAT_ERR_PEER;
                goto out;
            }
            acked++;
        }
        /* A client that stopped reading must not hold rank 0 past the boot deadline. */
        int ms = remaining_ms(deadline);
        struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 + 1};
        setsockopt(conns[r], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (!send_all(conns[r], slot_shift, n, fds, descs)) {
            util_error("sending the node's segments to local rank %d: %m", r);
            st = BOBCAT_ERR_SYS;
            goto out;
        }
    }
    for (; acked < n; acked++)
        if (!wait_ack(conns[acked], deadline)) {
            util_error("local rank %d of node %d did not take its segments", acked, pl->node);
            st = BOBCAT_ERR_PEER;
            goto out;
        }
out:
    for (int r = 1; conns && fds && r < n; r++) {
        if (conns[r] >= 0)
            close(conns[r]);
        if (fds[r] >= 0)
            close(fds[r]);
    }
    free(conns);
    free(fds);
    free(descs);
    setrlimit(RLIMIT_NOFILE, &saved);
    return st;
}

/* Receive the node's segments from local rank 0, batch by batch, handing each to fn. */
static bobcat_status_t receive_all(int s, const boot_place_t *pl, int slot_shift, double deadline, boot_seg_fn_t fn,
                                   void *ctx)
{
    boot_batch_t *b = &(boot_batch_t){0};
    int got = 0;
    while (got < pl->local_size) {
        int fds[BOOT_BATCH], nfd = 0;
        if (!wait_readable(s, deadline)) {
            util_error("timed out waiting for the other ranks of node %d", pl->node);
            return BOBCAT_ERR_TIMEOUT;
        }
        ssize_t len = recv_with_fds(s, b, sizeof *b, fds, BOOT_BATCH, &nfd);
        bobcat_status_t st = BOBCAT_OK;
        if (len != (ssize_t)sizeof *b || b->magic != BOOT_MAGIC || b->status != 0 || b->nranks != pl->local_size ||
            b->first != got || b->count != nfd || nfd <= 0 || got + nfd > pl->local_size) {
            util_error("local rank 0 of node %d refused this rank (wrong job token, or a duplicate local rank)",
                       pl->node);
            st = BOBCAT_ERR_PEER;
        } else if (b->slot_shift != slot_shift) {
            util_error("local rank 0 of node %d uses slot 2^%d but this rank 2^%d: every rank of a node needs the "
                       "same heap size (BOBCAT_HEAP)", pl->node, b->slot_shift, slot_shift);
            st = BOBCAT_ERR_LAYOUT;
        }
        for (int i = 0; i < nfd; i++) {
            if (st == BOBCAT_OK) {
                boot_seg_desc_t d = {b->desc[i].heap_size, (smap_pages_t)b->desc[i].pages, b->desc[i].page_size};
                st = fn(ctx, got + i, fds[i], &d);
            }
            close(fds[i]);
        }
        if (st != BOBCAT_OK)
            return st;
        got += nfd;
    }
    uint32_t ack = BOOT_MAGIC;
    if (send(s, &ack, sizeof ack, MSG_NOSIGNAL) != (ssize_t)sizeof ack) {
        util_error("acknowledging the node's segments to local rank 0: %m");
        return BOBCAT_ERR_SYS;
    }
    return BOBCAT_OK;
}

static bobcat_status_t join(const struct sockaddr_un *sa, socklen_t salen, const char *token, const boot_place_t *pl,
                            int slot_shift, int own_fd, const boot_seg_desc_t *own, double deadline, boot_seg_fn_t fn,
                            void *ctx)
{
    int s = -1;
    struct timespec nap = {0, 500000};
    for (;;) {
        s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (s < 0) {
            util_error("socket: %m");
            return BOBCAT_ERR_SYS;
        }
        if (connect(s, (const struct sockaddr *)sa, salen) == 0)
            break;
        int e = errno;
        close(s);
        if (e != ECONNREFUSED && e != ENOENT && e != EAGAIN && e != EINTR) {
            errno = e;
            util_error("connecting to local rank 0 of node %d: %m", pl->node);
            return BOBCAT_ERR_SYS;
        }
        if (remaining_ms(deadline) == 0) {
            char where[120];
            socket_where(sa, where, sizeof where);
            if (sa->sun_path[0])
                util_error("timed out waiting for local rank 0 of node %d (world rank %d) to open its bootstrap "
                           "socket %s: is %s a directory every rank of the node shares? (raise BOBCAT_BOOT_TIMEOUT "
                           "if start-up is just slow)", pl->node, pl->node_first_rank, where, socket_dir);
            else
                util_error("timed out waiting for local rank 0 of node %d (world rank %d) to open its bootstrap "
                           "socket %s in this network namespace. Ranks of one node in different network namespaces "
                           "(one container per rank) do not share abstract unix sockets: give yod --boot-dir DIR "
                           "(BOBCAT_BOOT_DIR), a directory they all share (docs/containers.md); if start-up is just "
                           "slow, raise BOBCAT_BOOT_TIMEOUT", pl->node, pl->node_first_rank, where);
            return BOBCAT_ERR_TIMEOUT;
        }
        nanosleep(&nap, NULL); /* yield the core: the server may be waiting for it */
        if (nap.tv_nsec < 8000000)
            nap.tv_nsec *= 2;
    }
    bobcat_status_t st = BOBCAT_ERR_PEER;
    if (!peer_uid_ok(s)) {
        util_error("the bootstrap socket of node %d belongs to another user: refusing to hand over the heap", pl->node);
        goto out;
    }
    boot_hello_t h = {.magic = BOOT_MAGIC, .local_rank = pl->local_rank, .heap_size = own->heap_size,
                      .page_size = own->page_size, .pages = own->pages, .slot_shift = slot_shift};
    memcpy(h.token, token, BOOT_TOKEN_LEN);
    /* Descriptors in flight count against the sender's open-file limit (unprivileged users): on a
     * node of more ranks than that limit the hellos can hit it until rank 0 takes some. */
    ssize_t sent;
    while ((sent = send_with_fds(s, &h, sizeof h, &own_fd, 1)) < 0 && errno == ETOOMANYREFS && remaining_ms(deadline))
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    if (sent != (ssize_t)sizeof h) {
        util_error("sending the heap to local rank 0: %m");
        st = BOBCAT_ERR_SYS;
        goto out;
    }
    st = receive_all(s, pl, slot_shift, deadline, fn, ctx);
out:
    close(s);
    return st;
}

bobcat_status_t boot_node_exchange_each(const char *job_id, const char *token, const boot_place_t *pl,
                                        int slot_shift, int own_fd, const boot_seg_desc_t *own, double timeout_s,
                                        boot_seg_fn_t fn, void *ctx)
{
    if (strlen(token) != BOOT_TOKEN_LEN || !*job_id) {
        util_error("missing or malformed job id/token (BOBCAT_JOB_ID, BOBCAT_JOB_TOKEN): start the program with yod");
        return BOBCAT_ERR_INVAL;
    }
    struct sockaddr_un sa;
    socklen_t salen = (socklen_t)boot_socket_name(&sa, job_id, pl->node);
    if (salen == 0) {
        util_error("the bootstrap directory %s (BOBCAT_BOOT_DIR) is too long for a socket's name: use one of at "
                   "most %d characters", socket_dir, BOOT_DIR_MAX);
        return BOBCAT_ERR_INVAL;
    }
    double deadline = util_now() + timeout_s;
    if (pl->local_rank != 0)
        return join(&sa, salen, token, pl, slot_shift, own_fd, own, deadline, fn, ctx);

    int ls = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (ls < 0) {
        util_error("socket: %m");
        return BOBCAT_ERR_SYS;
    }
    bobcat_status_t st;
    int bound = bind(ls, (struct sockaddr *)&sa, salen) == 0;
    if (!bound || listen(ls, pl->local_size)) {
        char where[120];
        util_error("cannot open the bootstrap socket %s of node %d: %m (is another process using job id %s?%s)",
                   socket_where(&sa, where, sizeof where), pl->node, job_id,
                   sa.sun_path[0] ? " is BOBCAT_BOOT_DIR a writable directory?" : "");
        st = BOBCAT_ERR_SYS;
    } else {
        st = serve(ls, token, pl, slot_shift, own_fd, own, deadline, fn, ctx);
    }
    /* An abstract name disappears with the socket; a file is removed, once every rank has joined
     * (or the exchange failed): nothing is left behind. */
    if (bound && sa.sun_path[0])
        unlink(sa.sun_path);
    close(ls);
    return st;
}

typedef struct {
    int *fds;
    boot_seg_desc_t *descs;
    int n;
} collect_t;

static bobcat_status_t collect_one(void *ctx, int r, int fd, const boot_seg_desc_t *d)
{
    collect_t *c = ctx;
    int mine = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (mine < 0) {
        util_error("keeping local rank %d's segment: %m (raise the open-file limit, ulimit -n)", r);
        return BOBCAT_ERR_SYS;
    }
    c->fds[r] = mine;
    c->descs[r] = *d;
    c->n = r + 1;
    return BOBCAT_OK;
}

bobcat_status_t boot_node_exchange(const char *job_id, const char *token, const boot_place_t *pl, int own_fd,
                                   const boot_seg_desc_t *own, double timeout_s, int *fds_p, boot_seg_desc_t *descs_p)
{
    collect_t c = {fds_p, descs_p, 0};
    bobcat_status_t st = boot_node_exchange_each(job_id, token, pl, 0, own_fd, own, timeout_s, collect_one, &c);
    if (st != BOBCAT_OK)
        for (int r = 0; r < c.n; r++)
            close(fds_p[r]); /* segments arrive in rank order: the first c.n are ours */
    return st;
}
