/*
 * bobcat-rank: the per-rank shim yod runs under the real MPI launcher.
 *
 *   bobcat-rank [--setenv NAME=VALUE]... [--] program [args...]
 *
 * It forks the program with BOBCAT_PRELOAD prepended to LD_PRELOAD (so libbobcat is preloaded into
 * the program only, never into the launcher or its daemons), stays behind as the program's parent,
 * and reports to yod on stderr (contracts.md section 2) that the rank is starting and how it ended:
 *
 *   @@bobcat@@ start rank=<w>                       (the child, just before it execs the program)
 *   @@bobcat@@ exit rank=<w> code=<n>      or      @@bobcat@@ exit rank=<w> signal=<n>
 *   @@bobcat@@ exit rank=<w> code=127 exec_errno=<e>  (the program could not be executed)
 *
 * then exits with the same code (128 + signal for a signal).  The launcher only sees the shim, so
 * yod learns every rank's real fate even when the launcher summarises or swallows it.  When the
 * launcher kills the shims themselves (Hydra does on MPI_Abort) no exit line comes, and the start
 * lines are what tells yod that the job did start: the child writes its line before exec, so it is
 * in the pipe before the program can run a single instruction, let alone abort the job.
 * --setenv exists for heterogeneous (-F) jobs, whose groups need different per-rank values
 * (BOBCAT_HEAP) that one job-wide environment cannot carry.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t child_pid;

/* Termination requests aimed at the rank (from yod's cleanup or the launcher) must reach the
 * program: the shim only relays them and keeps waiting so it can still report the outcome. */
static void forward_signal(int sig)
{
    if (child_pid > 0)
        kill((pid_t)child_pid, sig);
}

/* World rank as contracts.md section 1 orders the sources; -1 when no launcher told us. */
static long world_rank(void)
{
    static const char *const names[] = {"BOBCAT_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                        "PMIX_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        char *end;
        if (v == NULL || *v == '\0')
            continue;
        errno = 0;
        long r = strtol(v, &end, 10);
        if (errno == 0 && *end == '\0' && r >= 0)
            return r;
    }
    return -1;
}

/* LD_PRELOAD = BOBCAT_PRELOAD, then whatever the user already preloads (libbobcat must come first
 * so its malloc and MPI_* interposition win). */
static int set_preload(void)
{
    const char *lib = getenv("BOBCAT_PRELOAD");
    const char *old = getenv("LD_PRELOAD");
    if (lib == NULL || *lib == '\0')
        return 0;
    if (old == NULL || *old == '\0')
        return setenv("LD_PRELOAD", lib, 1);
    size_t n = strlen(lib) + 1 + strlen(old) + 1;
    char *both = malloc(n);
    if (both == NULL)
        return -1;
    snprintf(both, n, "%s:%s", lib, old);
    int rc = setenv("LD_PRELOAD", both, 1);
    free(both);
    return rc;
}

static void usage(void)
{
    fprintf(stderr, "usage: bobcat-rank [--setenv NAME=VALUE]... [--] program [args...]\n"
                    "(run by yod under the MPI launcher; not meant to be started by hand)\n");
}

int main(int argc, char **argv)
{
    int first = 1;
    while (first < argc && argv[first][0] == '-') {
        if (strcmp(argv[first], "--") == 0) {
            first++;
            break;
        }
        if (strcmp(argv[first], "--setenv") == 0 && first + 1 < argc) {
            char *eq = strchr(argv[first + 1], '=');
            if (eq == NULL || eq == argv[first + 1]) {
                fprintf(stderr, "bobcat-rank: --setenv wants NAME=VALUE, got '%s'\n", argv[first + 1]);
                return 2;
            }
            *eq = '\0';
            if (setenv(argv[first + 1], eq + 1, 1) != 0) {
                fprintf(stderr, "bobcat-rank: setenv %s: %s\n", argv[first + 1], strerror(errno));
                return 2;
            }
            first += 2;
            continue;
        }
        usage();
        return 2;
    }
    if (first >= argc) {
        usage();
        return 2;
    }
    long rank = world_rank();
    pid_t parent = getpid();

    /* The child writes exec's errno here when exec fails; a successful exec closes the pipe
     * (O_CLOEXEC) without a word.  That tells an exec failure from a program exiting 127. */
    int exec_pipe[2];
    if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
        fprintf(stderr, "bobcat-rank: rank %ld: pipe: %s\n", rank, strerror(errno));
        return 3;
    }

    /* Block the forwarded signals across fork so none slips in before the handlers can relay it;
     * the child restores the mask before exec. */
    sigset_t fwd, old;
    sigemptyset(&fwd);
    sigaddset(&fwd, SIGTERM);
    sigaddset(&fwd, SIGINT);
    sigaddset(&fwd, SIGHUP);
    sigprocmask(SIG_BLOCK, &fwd, &old);

    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "bobcat-rank: rank %ld: fork: %s\n", rank, strerror(errno));
        return 3;
    }
    if (pid == 0) {
        /* If the shim dies (kill -9 of the rank), the program must not outlive it. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(137);
        sigprocmask(SIG_SETMASK, &old, NULL);
        if (set_preload() != 0) {
            fprintf(stderr, "bobcat-rank: rank %ld: cannot set LD_PRELOAD: %s\n", rank, strerror(errno));
            _exit(127);
        }
        char line[64];
        int n = snprintf(line, sizeof line, "@@bobcat@@ start rank=%ld\n", rank);
        if (write(STDERR_FILENO, line, (size_t)n) < 0) {
            /* yod is gone; the program still runs and the launcher still sees its end. */
        }
        execvp(argv[first], &argv[first]);
        int e = errno;
        /* ENOENT for a file that exists means exec could not find what the file names: a #!
         * interpreter or an ELF program loader. */
        fprintf(stderr, "bobcat-rank: rank %ld: cannot run %s: %s%s\n", rank, argv[first], strerror(e),
                e == ENOENT && strchr(argv[first], '/') != NULL && access(argv[first], F_OK) == 0
                    ? " (its #! interpreter or ELF loader is missing)" : "");
        if (write(exec_pipe[1], &e, sizeof e) < 0) {
            /* The parent then reports a plain exit 127. */
        }
        _exit(127);
    }
    close(exec_pipe[1]);

    child_pid = pid;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigprocmask(SIG_SETMASK, &old, NULL);

    int exec_errno = 0;
    ssize_t got;
    while ((got = read(exec_pipe[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR)
        ;
    if (got != (ssize_t)sizeof exec_errno)
        exec_errno = 0;
    close(exec_pipe[0]);

    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "bobcat-rank: rank %ld: waitpid: %s\n", rank, strerror(errno));
            return 3;
        }
    }
    /* One write() of the whole line keeps it from interleaving with other ranks' output. */
    char line[96];
    int code, n;
    if (WIFSIGNALED(status)) {
        n = snprintf(line, sizeof line, "@@bobcat@@ exit rank=%ld signal=%d\n", rank, WTERMSIG(status));
        code = 128 + WTERMSIG(status);
    } else if (exec_errno != 0) {
        code = WEXITSTATUS(status);
        n = snprintf(line, sizeof line, "@@bobcat@@ exit rank=%ld code=%d exec_errno=%d\n", rank, code,
                     exec_errno);
    } else {
        code = WEXITSTATUS(status);
        n = snprintf(line, sizeof line, "@@bobcat@@ exit rank=%ld code=%d\n", rank, code);
    }
    if (write(STDERR_FILENO, line, (size_t)n) < 0) {
        /* Nobody is listening any more; the exit code still tells the launcher. */
    }
    return code;
}
