/* sys_memory: how much memory this process may still take — the least of MemAvailable and, over
 * its memory cgroup and every ancestor, (memory.max or memory.high) - memory.current on cgroup v2,
 * memory.limit_in_bytes - memory.usage_in_bytes on v1 — and a node-wide lock that makes "check the
 * room, then take a step of it" atomic among bobcat's ranks (issue 27: several jobs populating at
 * once each saw room the others were about to take, and the OOM killer settled it). yod's
 * plan.py (cgroup_room, memory_bound) reads the same files before launch; this is the ranks'
 * check, step by step, while they populate. */
#include "sys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int read_u64(const char *path, unsigned long long *v)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    int ok = fscanf(f, "%llu", v) == 1;
    fclose(f);
    return ok ? 0 : -1;
}

static size_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "re");
    char line[128];
    unsigned long long kb = 0;
    if (!f)
        return SIZE_MAX;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            break;
    fclose(f);
    return kb ? (size_t)kb << 10 : SIZE_MAX;
}

size_t sys_memory_room(char *what, size_t len)
{
    size_t best = mem_available();
    snprintf(what, len, "MemAvailable");
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return best;
    char line[4096], v1[4096] = "", v2[4096] = "";
    int have_v1 = 0, have_v2 = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = 0;
        if (!strcmp(line, "0") && c1[1] == 0) {
            snprintf(v2, sizeof v2, "%s", c2 + 1);
            have_v2 = 1;
        }
        for (char *tok = strtok(c1 + 1, ","); tok; tok = strtok(NULL, ","))
            if (!strcmp(tok, "memory")) {
                snprintf(v1, sizeof v1, "%s", c2 + 1);
                have_v1 = 1;
            }
    }
    fclose(f);
    const char *base, *path, *limits[2], *usage;
    if (have_v1) {
        base = "/sys/fs/cgroup/memory", path = v1, limits[0] = "memory.limit_in_bytes", limits[1] = NULL;
        usage = "memory.usage_in_bytes";
    } else if (have_v2) {
        base = access("/sys/fs/cgroup/cgroup.controllers", F_OK) && !access("/sys/fs/cgroup/unified/cgroup.controllers", F_OK)
                   ? "/sys/fs/cgroup/unified" : "/sys/fs/cgroup";
        path = v2, limits[0] = "memory.max", limits[1] = "memory.high", usage = "memory.current";
    } else {
        return best;
    }
    /* From the process's own cgroup up to the root: the least room over them all. */
    char dir[4096 + 64];
    snprintf(dir, sizeof dir, "%s%s", base, path);
    size_t baselen = strlen(base);
    for (;;) {
        char file[sizeof dir + 32];
        unsigned long long used = 0, limit;
        snprintf(file, sizeof file, "%s/%s", dir, usage);
        read_u64(file, &used);
        for (int i = 0; i < 2 && limits[i]; i++) {
            snprintf(file, sizeof file, "%s/%s", dir, limits[i]);
            if (read_u64(file, &limit) || limit >= 1ULL << 62) /* "max", or v1's "no limit" */
                continue;
            size_t room = limit > used ? (size_t)(limit - used) : 0;
            if (room < best) {
                best = room;
                snprintf(what, len, "the cgroup's %s (%llu MiB for %s, %llu MiB in use)", limits[i], limit >> 20,
                         dir[baselen] ? dir + baselen : "/", used >> 20);
            }
        }
        char *slash = strrchr(dir + baselen, '/');
        if (!slash)
            break;
        *slash = 0;
    }
    return best;
}

/* The node lock is an abstract unix socket name: bound by one process at a time, released by the
 * kernel when its holder dies, nothing left in any file system. Every bobcat rank of every job and
 * user in this network namespace shares it. A holder that keeps it longer than `wait_s` (a stuck
 * or hostile process) is not waited for: this rank's steps then go unlocked, as they would without it. */
int sys_node_lock(double wait_s)
{
    static int given_up; /* once a holder kept it past wait_s, this rank no longer waits */
    if (given_up)
        return -1;
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    static const char name[] = "bobcat-populate-lock";
    memcpy(a.sun_path + 1, name, sizeof name - 1);
    socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + sizeof name - 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    double t0 = util_now();
    while (bind(fd, (struct sockaddr *)&a, alen)) {
        if (errno != EADDRINUSE || util_now() - t0 > wait_s) {
            given_up = errno == EADDRINUSE;
            if (given_up)
                util_info("the node's populate lock (@%s) is held past %.1f s: taking the heap without it", name,
                          wait_s);
            close(fd);
            return -1;
        }
        struct timespec ts = {0, 200000}; /* a step takes ~10 ms: poll at 0.2 ms */
        nanosleep(&ts, NULL);
    }
    return fd;
}

void sys_node_unlock(int fd)
{
    if (fd >= 0)
        close(fd);
}

/* The job's hold on the node lock: its local rank 0 takes the lock for the whole node of the job
 * (every rank's heap, until the node has formed), so jobs that start together take memory one job
 * at a time and the first ones complete, instead of every rank of every job taking part of its
 * heap and every job failing. The other local ranks wait until their rank 0 holds it, which it
 * says by a datagram socket bound to a name of the job's node (connect succeeds once it exists). */
static int job_holds_lock;

static socklen_t abstract_name(struct sockaddr_un *a, const char *job, int node)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "bobcat-populate-%s-%d", job, node);
    if (n > (int)sizeof a->sun_path - 2)
        n = (int)sizeof a->sun_path - 2;
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

void sys_job_lock(const char *job, int node, int local_rank, double wait_s, int fds_p[2])
{
    fds_p[0] = fds_p[1] = -1;
    struct sockaddr_un a;
    socklen_t alen = abstract_name(&a, job, node);
    if (local_rank == 0) {
        fds_p[0] = sys_node_lock(wait_s);
        fds_p[1] = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fds_p[1] >= 0 && bind(fds_p[1], (struct sockaddr *)&a, alen)) {
            close(fds_p[1]);
            fds_p[1] = -1;
        }
        job_holds_lock = fds_p[0] >= 0;
        return;
    }
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    double t0 = util_now();
    while (fd >= 0 && connect(fd, (struct sockaddr *)&a, alen) && util_now() - t0 < wait_s) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    if (fd >= 0)
        close(fd);
    job_holds_lock = util_now() - t0 < wait_s;
}

void sys_job_unlock(int fds[2])
{
    sys_node_unlock(fds[1]);
    sys_node_unlock(fds[0]);
    fds[0] = fds[1] = -1;
    job_holds_lock = 0;
}

int sys_job_holds_lock(void) { return job_holds_lock; }
