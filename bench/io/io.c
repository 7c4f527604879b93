/* bench/io/io.c — IOR-style file I/O, as the CNW report §4.2.4 runs it: file per process
 * (--mode fpp) or one shared file (--mode shared, rank r owns bytes [r·block, (r+1)·block)).
 *
 * Every rank writes its block in --transfer pieces with pwrite and fsyncs before its clock stops,
 * then reads it back with pread (--reorder: the next rank's data, so the page cache of the writer
 * does not serve the read, like IOR -C). Rates are aggregate: all bytes / the slowest rank's time
 * (GB/s = 1e9 B/s, higher is better). --direct opens with O_DIRECT (aligned buffers); a filesystem
 * that refuses it (tmpfs, some overlays) gets a message on stderr and buffered I/O, and params say
 * "direct": false. Each transfer carries a stamp (rank, index) over a rank-specific pattern;
 * --validate checks every transfer read (inside the read timing, as IOR -R does).
 * --dir defaults to a fresh directory under $TMPDIR (or /tmp), removed at the end; in a given
 * --dir only our files are created and removed. */
#include "bc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ALIGN 4096

typedef struct {
    const char *mode;
    int shared, direct_req, reorder, validate;
    size_t transfer, block;
    char dir[PATH_MAX];
} io_t;

static void file_name(const io_t *io, int rank, char *out, size_t len)
{
    if (io->shared)
        snprintf(out, len, "%s/bobcat-io.shared", io->dir);
    else
        snprintf(out, len, "%s/bobcat-io.%d", io->dir, rank);
}

/* Opens with O_DIRECT when asked and possible; *direct_p says what was obtained. */
static int open_file(const char *path, int flags, int want_direct, int *direct_p)
{
    int fd = -1;
    if (want_direct) {
        fd = open(path, flags | O_DIRECT, 0600);
        if (fd < 0 && errno == EINVAL)
            fprintf(stderr, "io: %s refuses O_DIRECT (EINVAL); using buffered I/O (give --dir on "
                            "a filesystem with direct I/O for unbuffered numbers)\n", path);
    }
    *direct_p = fd >= 0;
    if (fd < 0)
        fd = open(path, flags, 0600);
    return fd;
}

/* The stamp in the first 16 bytes tells a transfer from its neighbours. */
static void stamp(char *buf, int rank, size_t index)
{
    uint64_t s[2] = {(uint64_t)rank, (uint64_t)index};
    memcpy(buf, s, sizeof s);
}

/* pwrite/pread the whole length, retrying short transfers; 0 or the errno. */
static int full_io(int fd, char *buf, size_t len, off_t off, int writing)
{
    while (len) {
        ssize_t n = writing ? pwrite(fd, buf, len, off) : pread(fd, buf, len, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno;
        if (n == 0)
            return EIO; /* unexpected end of file */
        buf += n;
        len -= (size_t)n;
        off += n;
    }
    return 0;
}

static void die(const char *what, const char *path, int err)
{
    fprintf(stderr, "io: rank %d: %s %s: %s\n", bc_rank, what, path, strerror(err));
    MPI_Abort(MPI_COMM_WORLD, 3);
}

/* Writes (writing=1) or reads the block of `owner`; returns this rank's seconds. */
static double phase(const io_t *io, int owner, char *buf, int writing, int *direct_p)
{
    char path[PATH_MAX + 32];
    file_name(io, owner, path, sizeof path);
    size_t n = io->block / io->transfer;
    off_t base = io->shared ? (off_t)io->block * owner : 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = bc_now();
    int flags = writing ? O_WRONLY | (io->shared ? 0 : O_CREAT | O_TRUNC) : O_RDONLY;
    int fd = open_file(path, flags, io->direct_req && *direct_p, direct_p);
    if (fd < 0)
        die("cannot open", path, errno);
    for (size_t i = 0; i < n; i++) {
        if (writing)
            stamp(buf, owner, i);
        int err = full_io(fd, buf, io->transfer, base + (off_t)(i * io->transfer), writing);
        if (err == EINVAL && *direct_p && i == 0) {
            /* Some filesystems accept the O_DIRECT open but refuse the transfer. */
            fprintf(stderr, "io: %s refuses direct transfers (EINVAL); using buffered I/O\n",
                    path);
            close(fd);
            *direct_p = 0;
            fd = open(path, flags, 0600);
            if (fd < 0)
                die("cannot reopen", path, errno);
            err = full_io(fd, buf, io->transfer, base, writing);
        }
        if (err)
            die(writing ? "write to" : "read from", path, err);
        if (!writing && io->validate) {
            char expect[16];
            stamp(expect, owner, i);
            if (memcmp(buf, expect, sizeof expect) != 0 ||
                bc_check(buf + 16, io->transfer - 16, bc_seed((uint64_t)owner, 9, io->transfer)))
                bc_fail("io: transfer %zu of rank %d's block read back wrong", i, owner);
        }
    }
    if (writing && fsync(fd) != 0)
        die("fsync", path, errno);
    close(fd);
    return bc_now() - t0;
}

int main(int argc, char **argv)
{
    io_t io = {.mode = "fpp", .transfer = 1 << 20, .block = 16 << 20};
    const char *dir = NULL;
    bc_common_t c = {0};
    bc_opt_t opts[] = {
        {"mode", BC_OPT_STR, &io.mode, "fpp (file per process) or shared (one file)"},
        {"transfer", BC_OPT_SIZE, &io.transfer, "bytes per pwrite/pread"},
        {"block", BC_OPT_SIZE, &io.block, "bytes per rank (a multiple of --transfer)"},
        {"direct", BC_OPT_FLAG, &io.direct_req, "O_DIRECT (transfer a multiple of 4K)"},
        {"reorder", BC_OPT_FLAG, &io.reorder, "read the next rank's data (IOR -C)"},
        {"dir", BC_OPT_STR, &dir, "target directory (default: a fresh one under $TMPDIR, removed)"},
        {NULL, 0, NULL, NULL},
    };
    bc_parse(argc, argv, "io",
             "IOR-style write then read-back of a block per rank, file per process or shared "
             "file; aggregate GB/s (higher is better).",
             0, &c, opts);
    io.validate = c.validate;
    if (strcmp(io.mode, "fpp") != 0 && strcmp(io.mode, "shared") != 0)
        bc_usage_error("--mode: '%s' is neither fpp nor shared", io.mode);
    io.shared = strcmp(io.mode, "shared") == 0;
    if (io.transfer < 64 || io.block < io.transfer || io.block % io.transfer)
        bc_usage_error("--block must be a multiple of --transfer, and --transfer at least 64");
    if (io.direct_req && io.transfer % ALIGN)
        bc_usage_error("--direct needs --transfer to be a multiple of 4K");
    if (dir && strlen(dir) >= PATH_MAX - 64)
        bc_usage_error("--dir: path too long");
    bc_init(&argc, &argv);

    /* The directory: rank 0 creates the temporary one and tells the others (one host; on several
     * nodes give --dir on a shared filesystem). */
    int made_dir = 0, bad = 0;
    if (bc_rank == 0) {
        if (dir) {
            struct stat st;
            if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
                fprintf(stderr, "io: --dir %s is not a directory\n", dir);
                bad = 1;
            } else {
                snprintf(io.dir, sizeof io.dir, "%s", dir);
            }
        } else {
            const char *tmp = getenv("TMPDIR");
            snprintf(io.dir, sizeof io.dir, "%s/bobcat-io-XXXXXX", tmp && *tmp ? tmp : "/tmp");
            if (!mkdtemp(io.dir)) {
                fprintf(stderr, "io: cannot create a directory under %s: %s (set TMPDIR or give "
                                "--dir)\n", tmp && *tmp ? tmp : "/tmp", strerror(errno));
                bad = 1;
            }
            made_dir = 1;
        }
    }
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (bad) {
        MPI_Finalize();
        return 2;
    }
    MPI_Bcast(io.dir, sizeof io.dir, MPI_CHAR, 0, MPI_COMM_WORLD);

    char *buf = NULL;
    if (posix_memalign((void **)&buf, ALIGN, io.transfer) != 0) {
        fprintf(stderr, "io: cannot allocate a %zu-byte buffer\n", io.transfer);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    bc_fill(buf + 16, io.transfer - 16, bc_seed((uint64_t)bc_rank, 9, io.transfer));
    if (io.shared && bc_rank == 0) { /* create and empty the shared file before anyone opens it */
        char path[PATH_MAX + 32];
        file_name(&io, 0, path, sizeof path);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0)
            die("cannot create", path, errno);
        close(fd);
    }

    int direct = io.direct_req;
    double tw = phase(&io, bc_rank, buf, 1, &direct);
    int reader_of = io.reorder ? (bc_rank + 1) % bc_nranks : bc_rank;
    if (io.validate) /* the read buffer must not still hold the data by accident */
        memset(buf, 0, io.transfer);
    double tr = phase(&io, reader_of, buf, 0, &direct);

    double twmax, trmax;
    int direct_all;
    MPI_Reduce(&tw, &twmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&tr, &trmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&direct, &direct_all, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
    double total = (double)io.block * bc_nranks;
#define PFMT "\"mode\": \"%s\", \"direct\": %s, \"transfer\": %zu, \"block\": %zu, \"reorder\": %s"
#define PARGS io.mode, direct_all ? "true" : "false", io.transfer, io.block, \
              io.reorder ? "true" : "false"
    bc_emit("write_bw", total / twmax / 1e9, "GB/s", "higher", PFMT, PARGS);
    bc_emit("read_bw", total / trmax / 1e9, "GB/s", "higher", PFMT, PARGS);

    /* Nothing left behind: every rank removes its file, then rank 0 the directory it made. */
    MPI_Barrier(MPI_COMM_WORLD);
    char path[PATH_MAX + 32];
    file_name(&io, bc_rank, path, sizeof path);
    if ((!io.shared || bc_rank == 0) && unlink(path) != 0)
        fprintf(stderr, "io: cannot remove %s: %s\n", path, strerror(errno));
    MPI_Barrier(MPI_COMM_WORLD);
    if (made_dir && rmdir(io.dir) != 0)
        fprintf(stderr, "io: cannot remove %s: %s\n", io.dir, strerror(errno));
    free(buf);
    return bc_finish();
}
