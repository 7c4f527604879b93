/* test_boot_security: a job's heap segments go only to that job's ranks. A process of another
 * user, and a process of the same user without the job token, are refused by local rank 0 and get
 * no descriptor; the real rank still joins afterwards. A rank refuses to hand its heap to a
 * bootstrap socket owned by another user. Needs root (to act as another user); skips otherwise. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../src/boot/boot.h"
#include "../mp/mp_util.h"

#define NOBODY 65534
static const char *job = "5ec0de5ec0de0001";
static const char *token = "00112233445566778899aabbccddeeff";

static int make_segment(const char *text)
{
    int fd = memfd_create("test-heap", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, 4096) || pwrite(fd, text, strlen(text) + 1, 0) < 0)
        return -1;
    return fd;
}

static const boot_place_t place0 = {.world_rank = 0, .world_size = 2, .node = 0, .local_rank = 0, .local_size = 2};
static const boot_place_t place1 = {.world_rank = 1, .world_size = 2, .node = 0, .local_rank = 1, .local_size = 2};

/* Run as local rank 0; exit 0 if the node formed and local rank 1's heap says "client". */
static void server(int as_uid, double timeout)
{
    if (as_uid >= 0 && setresuid((uid_t)as_uid, (uid_t)as_uid, (uid_t)as_uid))
        _exit(10);
    int fd = make_segment("server"), fds[2];
    boot_seg_desc_t own = {4096, SMAP_PAGES_SMALL, 4096}, descs[2];
    if (boot_node_exchange(job, token, &place0, fd, &own, timeout, fds, descs) != BOBCAT_OK)
        _exit(1);
    char got[16] = "";
    _exit(pread(fds[1], got, sizeof got, 0) > 0 && !strcmp(got, "client") ? 0 : 2);
}

/* Speak the wire protocol by hand, as an intruder would: returns 1 if refused with no fd. */
static int intrude(int as_uid, const char *tok)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (as_uid >= 0 && setresuid((uid_t)as_uid, (uid_t)as_uid, (uid_t)as_uid))
            _exit(10);
        struct sockaddr_un sa;
        socklen_t len = (socklen_t)boot_socket_name(&sa, job, 0);
        int s = -1;
        for (int tries = 0; tries < 2000; tries++) {
            s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
            if (connect(s, (struct sockaddr *)&sa, len) == 0)
                break;
            close(s);
            s = -1;
            usleep(1000);
        }
        if (s < 0)
            _exit(11);
        int fd = make_segment("intruder");
        boot_hello_t h = {.magic = BOOT_MAGIC, .local_rank = 1, .heap_size = 4096, .page_size = 4096, .pages = 1};
        memcpy(h.token, tok, BOOT_TOKEN_LEN);
        char ctrl[CMSG_SPACE(sizeof(int))] = {0};
        struct iovec iov = {&h, sizeof h};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl, .msg_controllen = sizeof ctrl};
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof fd);
        if (sendmsg(s, &m, MSG_NOSIGNAL) < 0)
            _exit(0); /* refused before it could even speak */
        boot_batch_t rep; /* a refusal is one batch with status != 0 and no descriptor */
        char rctrl[CMSG_SPACE(sizeof(int) * 8)];
        struct iovec riov = {&rep, sizeof rep};
        struct msghdr rm = {.msg_iov = &riov, .msg_iovlen = 1, .msg_control = rctrl, .msg_controllen = sizeof rctrl};
        ssize_t n = recvmsg(s, &rm, 0);
        int got_fd = n > 0 && rm.msg_controllen > 0 && CMSG_FIRSTHDR(&rm) != NULL;
        _exit(!got_fd && (n <= 0 || rep.status != 0) ? 0 : 1);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st))
        fprintf(stderr, "intruder ended with status 0x%x\n", st);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static int wait_exit(pid_t pid)
{
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(void)
{
    if (geteuid() != 0) {
        printf("test_boot_security: SKIP (needs root to act as another user)\n");
        return 77;
    }
    /* 1. Intruders first, then the real rank. */
    pid_t srv = fork();
    if (srv == 0)
        server(-1, 10.0);
    CHECK(intrude(NOBODY, token), "a process of another user (with the right token!) was not refused");
    CHECK(intrude(-1, "ffffffffffffffffffffffffffffffff"), "a same-user process with a wrong token was not refused");
    int fd = make_segment("client"), fds[2];
    boot_seg_desc_t own = {4096, SMAP_PAGES_SMALL, 4096}, descs[2];
    CHECK(boot_node_exchange(job, token, &place1, fd, &own, 10.0, fds, descs) == BOBCAT_OK,
          "the real rank could not join after the intruders");
    char got[16] = "";
    CHECK(pread(fds[0], got, sizeof got, 0) > 0 && !strcmp(got, "server"), "rank 1 did not get rank 0's heap");
    CHECK(wait_exit(srv) == 0, "local rank 0 did not form the node");

    /* 2. A bootstrap socket owned by another user gets nothing. */
    srv = fork();
    if (srv == 0)
        server(NOBODY, 3.0);
    usleep(100000);
    CHECK(boot_node_exchange(job, token, &place1, fd, &own, 3.0, fds, descs) == BOBCAT_ERR_PEER,
          "handed the heap to another user's socket");
    kill(srv, SIGKILL);
    wait_exit(srv);
    printf("test_boot_security: %s\n", mp_failures ? "FAILED" : "ok");
    return mp_failures != 0;
}
