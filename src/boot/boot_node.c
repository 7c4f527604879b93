/* boot_node: the node bootstrap. The ranks of one node meet on an abstract unix socket
 * ("\0bobcat-<job id>-<node>": no file is created, and the name vanishes with the socket), hand
 * their heap memfds to local rank 0 with SCM_RIGHTS, and get every rank's memfd back.
 *
 * Security: the name is public (/proc/net/unix), so neither side trusts it. The server accepts a
 * segment only from a peer of its own uid (SO_PEERCRED) that presents the job's secret token; a
 * client hands its segment only to a server of its own uid. A rejected peer does not disturb the
 * job: the server keeps waiting for the real ranks until the boot timeout. */
#include "boot.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

unsigned boot_socket_name(struct sockaddr_un *sa, const char *job_id, int node)
{
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    int n = snprintf(sa->sun_path + 1, sizeof sa->sun_path - 1, "bobcat-%s-%d", job_id, node);
    return (unsigned)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
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
    char ctrl[CMSG_SPACE(sizeof(int) * SMAP_MAX_LOCAL_RANKS)];
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

/* Receive one record and up to max_fds descriptors; returns bytes or -1. *nfds_p gets the count. */
static ssize_t recv_with_fds(int sock, void *buf, size_t len, int *fds, int max_fds, int *nfds_p)
{
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    char ctrl[CMSG_SPACE(sizeof(int) * SMAP_MAX_LOCAL_RANKS)];
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl, .msg_controllen = sizeof ctrl};
    ssize_t n;
    do
        n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    *nfds_p = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        int tmp[SMAP_MAX_LOCAL_RANKS + 8];
        if (k > (int)(sizeof tmp / sizeof tmp[0]))
            k = (int)(sizeof tmp / sizeof tmp[0]);
        memcpy(tmp, CMSG_DATA(c), sizeof(int) * (size_t)k);
        for (int i = 0; i < k; i++) {
            if (*nfds_p < max_fds)
                fds[(*nfds_p)++] = tmp[i];
            else
                close(tmp[i]); /* never keep descriptors we did not ask for */
        }
    }
    if (n >= 0 && (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
        return -1;
    return n;
}

static bobcat_status_t serve(int lsock, const char *token, const boot_place_t *pl, int own_fd,
                             const boot_seg_desc_t *own, double deadline, int *fds, boot_seg_desc_t *descs)
{
    int conns[SMAP_MAX_LOCAL_RANKS];
    int joined = 1;
    for (int r = 0; r < pl->local_size; r++)
        conns[r] = fds[r] = -1;
    fds[0] = dup(own_fd);
    descs[0] = *own;
    bobcat_status_t st = BOBCAT_OK;
    while (joined < pl->local_size) {
        if (!wait_readable(lsock, deadline)) {
            util_error("timed out after waiting for %d of the %d ranks of node %d (raise BOBCAT_BOOT_TIMEOUT if "
                       "start-up is just slow)", pl->local_size - joined, pl->local_size, pl->node);
            st = BOBCAT_ERR_TIMEOUT;
            goto fail;
        }
        int c = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        boot_hello_t h;
        int fd = -1, nfd = 0;
        int ok = peer_uid_ok(c) && wait_readable(c, deadline) &&
                 recv_with_fds(c, &h, sizeof h, &fd, 1, &nfd) == (ssize_t)sizeof h && nfd == 1 &&
                 h.magic == BOOT_MAGIC && token_equal(h.token, token) && h.local_rank > 0 &&
                 h.local_rank < pl->local_size && conns[h.local_rank] < 0;
        if (!ok) {
            /* Not one of ours (another user, another job, a stray): drop it and keep waiting. */
            util_debug("rejected a bootstrap connection on node %d", pl->node);
            boot_reply_t no = {.magic = BOOT_MAGIC, .status = BOBCAT_ERR_PEER};
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
    boot_reply_t rep = {.magic = BOOT_MAGIC, .status = 0, .nranks = pl->local_size};
    for (int r = 0; r < pl->local_size; r++) {
        rep.desc[r].heap_size = descs[r].heap_size;
        rep.desc[r].page_size = descs[r].page_size;
        rep.desc[r].pages = descs[r].pages;
    }
    for (int r = 1; r < pl->local_size; r++)
        if (send_with_fds(conns[r], &rep, sizeof rep, fds, pl->local_size) != (ssize_t)sizeof rep) {
            util_error("sending the node's segments to local rank %d: %m", r);
            st = BOBCAT_ERR_SYS;
            goto fail;
        }
    for (int r = 1; r < pl->local_size; r++)
        close(conns[r]);
    return BOBCAT_OK;
fail:
    for (int r = 0; r < pl->local_size; r++) {
        if (conns[r] >= 0)
            close(conns[r]);
        if (fds[r] >= 0)
            close(fds[r]);
    }
    return st;
}

static bobcat_status_t join(const struct sockaddr_un *sa, socklen_t salen, const char *token, const boot_place_t *pl,
                            int own_fd, const boot_seg_desc_t *own, double deadline, int *fds, boot_seg_desc_t *descs)
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
            util_error("timed out waiting for local rank 0 of node %d (world rank %d) to start (raise "
                       "BOBCAT_BOOT_TIMEOUT if start-up is just slow)", pl->node, pl->node_first_rank);
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
                      .page_size = own->page_size, .pages = own->pages};
    memcpy(h.token, token, BOOT_TOKEN_LEN);
    if (send_with_fds(s, &h, sizeof h, &own_fd, 1) != (ssize_t)sizeof h) {
        util_error("sending the heap to local rank 0: %m");
        st = BOBCAT_ERR_SYS;
        goto out;
    }
    boot_reply_t *rep = &(boot_reply_t){0};
    int nfd = 0;
    if (!wait_readable(s, deadline)) {
        util_error("timed out waiting for the other ranks of node %d", pl->node);
        st = BOBCAT_ERR_TIMEOUT;
        goto out;
    }
    ssize_t n = recv_with_fds(s, rep, sizeof *rep, fds, pl->local_size, &nfd);
    if (n != (ssize_t)sizeof *rep || rep->magic != BOOT_MAGIC || rep->status != 0 || rep->nranks != pl->local_size ||
        nfd != pl->local_size) {
        util_error("local rank 0 of node %d refused this rank (wrong job token, or a duplicate local rank)", pl->node);
        for (int i = 0; i < nfd; i++)
            close(fds[i]);
        goto out;
    }
    for (int r = 0; r < pl->local_size; r++)
        descs[r] = (boot_seg_desc_t){rep->desc[r].heap_size, (smap_pages_t)rep->desc[r].pages, rep->desc[r].page_size};
    st = BOBCAT_OK;
out:
    close(s);
    return st;
}

bobcat_status_t boot_node_exchange(const char *job_id, const char *token, const boot_place_t *pl, int own_fd,
                                   const boot_seg_desc_t *own, double timeout_s, int *fds_p, boot_seg_desc_t *descs_p)
{
    if (strlen(token) != BOOT_TOKEN_LEN || !*job_id) {
        util_error("missing or malformed job id/token (BOBCAT_JOB_ID, BOBCAT_JOB_TOKEN): start the program with yod");
        return BOBCAT_ERR_INVAL;
    }
    struct sockaddr_un sa;
    socklen_t salen = (socklen_t)boot_socket_name(&sa, job_id, pl->node);
    double deadline = util_now() + timeout_s;
    if (pl->local_rank != 0)
        return join(&sa, salen, token, pl, own_fd, own, deadline, fds_p, descs_p);

    int ls = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (ls < 0) {
        util_error("socket: %m");
        return BOBCAT_ERR_SYS;
    }
    bobcat_status_t st;
    if (bind(ls, (struct sockaddr *)&sa, salen) || listen(ls, SMAP_MAX_LOCAL_RANKS)) {
        util_error("cannot open the bootstrap socket of node %d: %m (is another process using job id %s?)", pl->node,
                   job_id);
        st = BOBCAT_ERR_SYS;
    } else {
        st = serve(ls, token, pl, own_fd, own, deadline, fds_p, descs_p);
    }
    close(ls); /* the abstract name disappears here: nothing is left behind */
    return st;
}
