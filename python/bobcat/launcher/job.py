"""Running one job: spawn the launcher, relay its stderr, watch ranks, enforce the end, clean up.

yod is a child subreaper, so every process the job leaves behind on this host is re-parented to
yod and can be reaped.  The launcher runs in its own process group; ranks may sit in other groups
(Open MPI puts each local child in its own), so cleanup also finds processes by the
BOBCAT_JOB_ID=<job> entry in /proc/<pid>/environ, which every process of the job inherits.
"""

import os
import time

try:
    # The C core of the signal module: `import signal` also builds its enums, which costs yod
    # 6 ms of start-up on every job.  Signal names are looked up (with the full module) only
    # when a message needs one.
    import _signal as signal
except ImportError:  # not CPython
    import signal  # type: ignore[no-redef]

STATUS_PREFIX = b"@@bobcat@@ "
GRACE_S = 1.5            # SIGTERM -> SIGKILL
LINGER_S = 2.0           # after every rank reported, how long the launcher may take to exit
PARTIAL_HOLD_S = 0.05    # how long a partial line that might be a status line is held back
PR_SET_CHILD_SUBREAPER = 36
HEAD_MAX = 1024          # how much of a line split across reads is kept to look for abort messages


# Signals that end a rank from outside (a launcher's or yod's teardown, a user's kill): a rank that
# died of one is more likely a victim of another rank's failure than its cause.
TERMINATION_SIGNALS = (1, 2, 9, 15)     # SIGHUP, SIGINT, SIGKILL, SIGTERM


class RankEnd:
    """How one rank ended, from its shim's exit line."""
    __slots__ = ("rank", "code", "signal", "exec_errno")

    def __init__(self, rank: int, code: int | None, sig: int | None, exec_errno: int | None = None):
        self.rank, self.code, self.signal, self.exec_errno = rank, code, sig, exec_errno

    @property
    def ok(self) -> bool:
        return self.code == 0

    @property
    def terminated(self) -> bool:
        return self.signal in TERMINATION_SIGNALS

    def describe(self) -> str:
        if self.exec_errno is not None:
            return f"could not be started ({os.strerror(self.exec_errno)})"
        if self.signal is not None:
            try:
                import signal as signals
                name = signals.Signals(self.signal).name
            except ValueError:
                name = "?"
            return f"was killed by signal {self.signal} ({name})"
        return f"exited with code {self.code}"


class MpiAbort:
    """The MPI library's own word that a rank ended the whole job: MPI_Abort, or an error the MPI
    treats as fatal.  rank is the world rank when the message says it, else None (Open MPI names
    the rank in the aborting communicator only)."""
    __slots__ = ("rank", "code", "what", "comm", "comm_rank")

    def __init__(self, rank: int | None, code: int, what: str, comm: str, comm_rank: int):
        self.rank, self.code, self.what, self.comm, self.comm_rank = rank, code, what, comm, comm_rank


def _abort_what(reason: str, code: int) -> str:
    if reason.startswith("application called MPI_Abort"):
        return f"called MPI_Abort with code {code}"
    reason = reason.strip().removesuffix(", error stack:").removesuffix(":")
    return f"hit a fatal MPI error ({reason})" if reason else f"was aborted by MPI (code {code})"


def parse_mpich_abort(line: str) -> MpiAbort | None:
    """MPICH (MPID_Abort), from the aborting rank itself:
    'Abort(7) on node 1 (rank 1 in comm 0): application called MPI_Abort(MPI_COMM_WORLD, 7) - process 1'
    ('on node' is MPICH's name for the world rank; 'rank ... in comm' is the communicator's)."""
    import re
    m = re.search(r"\bAbort\((-?\d+)\) on node (\d+) \(rank (\d+) in comm (\d+)\): ?(.*)", line)
    if m is None:
        return None
    code = int(m.group(1))
    return MpiAbort(int(m.group(2)), code, _abort_what(m.group(5), code), m.group(4), int(m.group(3)))


def parse_ompi_abort(first: str, second: str) -> MpiAbort | None:
    """Open MPI (mpirun's help message), two lines:
    'MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD' / 'with errorcode 7.'
    (Open MPI 5 puts '  Proc: [[48695,1],1]' between them and says '  Errorcode: 7')."""
    import re
    m = re.search(r"MPI_ABORT was invoked on rank (\d+) in communicator (.+?)\s*$", first)
    c = re.match(r"\s*(?:with errorcode|Errorcode:) (-?\d+)", second)
    if m is None or c is None:
        return None
    code, comm, comm_rank = int(c.group(1)), m.group(2), int(m.group(1))
    return MpiAbort(comm_rank if comm == "MPI_COMM_WORLD" else None, code,
                    f"called MPI_Abort with code {code}", comm, comm_rank)


def read_aborts(d: str, out: "Outcome") -> None:
    """libbobcat's MPI_Abort leaves abort.<world rank> (its code) in the job's directory
    (BOBCAT_END_DIR) before the MPI ends the job. The MPI's own message says the same on the
    aborting rank's stderr, which Hydra may kill the rank's proxy before relaying (MPICH 5: 2 of
    15 jobs); then this file is yod's only word of who aborted. It also gives the world rank where
    Open MPI names only the communicator's. The earliest file is the abort (another rank may call
    MPI_Abort while the first one's is ending the job)."""
    import re
    found = []
    for name in os.listdir(d):
        m = re.fullmatch(r"abort\.(\d+)", name)
        if m is None:
            continue
        path = os.path.join(d, name)
        try:
            with open(path) as f:
                code = int(f.read().strip())
            found.append((os.stat(path).st_mtime_ns, int(m.group(1)), code))
        except (OSError, ValueError):
            continue          # (a rank killed while writing it: the MPI's message may still say)
    if not found:
        return
    when, rank, code = min(found)
    if out.abort is None:
        out.abort = MpiAbort(rank, code, f"called MPI_Abort with code {code}", "", -1)
        out.ends_before_abort = sum(1 for t in out.end_times if t < when)
    elif out.abort.rank is None and out.abort.code == code and "MPI_Abort" in out.abort.what:
        out.abort.rank = rank


class Outcome:
    """What yod learnt about the job while it ran."""

    def __init__(self) -> None:
        self.launcher_status: int | None = None   # exit code, or -signal
        self.started: set[int] = set()             # ranks whose shim was about to exec the program
        self.ends: dict[int, RankEnd] = {}
        self.first_failure: RankEnd | None = None
        self.abort: MpiAbort | None = None         # the first abort the MPI reported
        self.global_exit: tuple[int, int] | None = None  # (rank, status) of shmem_global_exit
        self.ends_before_abort = 0                 # how many ranks had reported their end by then
        self.end_times: list[int] = []             # when each of ends arrived (wall clock, ns)
        self.nodes: list[dict[str, str]] = []
        self.timed_out = False
        self.signalled: int | None = None
        self.leftovers = 0                         # processes still alive after the launcher ended
        self.oom_kills = 0                         # OOM kills on this host during the job (OomWatch)
        self.oom_killed: list[str] = []            # the names the kernel log gives them

    def cause(self) -> RankEnd | None:
        """The failed rank most likely to have caused the job's end: the first to fail by itself
        (a non-zero code, an exec failure, a signal like SIGSEGV) rather than by a termination
        signal, which is how the ranks that a teardown stopped end.  Reports race (Open MPI's
        teardown SIGTERMs the other ranks while the aborting one is still exiting), so arrival
        order alone is not enough."""
        for e in self.ends.values():       # in arrival order
            if not e.ok and not e.terminated:
                return e
        return self.first_failure


class OomWatch:
    """The kernel's own record of OOM kills while the job runs: the oom_kill counter of
    /proc/vmstat (every kill, by the node's OOM killer or a memory cgroup's, Linux 4.13+) and,
    where yod may read the kernel log (/dev/kmsg: root, or kernel.dmesg_restrict=0), the names of
    the processes killed ("Killed process <pid> (<name>)")."""

    def __init__(self) -> None:
        self.count0 = self._count()
        self.kmsg = None
        try:
            self.kmsg = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            os.lseek(self.kmsg, 0, os.SEEK_END)
        except OSError:
            if self.kmsg is not None:
                os.close(self.kmsg)
            self.kmsg = None

    @staticmethod
    def _count() -> int | None:
        try:
            with open("/proc/vmstat", "rb") as f:
                return next((int(l.split()[1]) for l in f if l.startswith(b"oom_kill ")), None)
        except (OSError, ValueError):
            return None

    def finish(self) -> tuple[int, list[str]]:
        """(OOM kills since the start, the names of the processes the kernel log says it killed)."""
        n = self._count()
        kills = max(0, n - self.count0) if n is not None and self.count0 is not None else 0
        names: list[str] = []
        if self.kmsg is not None:
            try:
                while True:
                    rec = os.read(self.kmsg, 8192)     # one record per read
                    if not rec:
                        break
                    text = rec.split(b";", 1)[-1]
                    if b"Killed process " in text and b"(" in text:
                        names.append(text.split(b"(", 1)[1].split(b")", 1)[0].decode(errors="replace"))
            except OSError:                             # EAGAIN: no more; EPIPE: overwritten
                pass
            os.close(self.kmsg)
            self.kmsg = None
        return kills, names


def set_subreaper() -> None:
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def parse_status(line: bytes) -> tuple[str, dict[str, str]]:
    """'@@bobcat@@ exit rank=1 code=0' -> ('exit', {'rank': '1', 'code': '0'})."""
    words = line[len(STATUS_PREFIX):].decode("utf-8", "replace").split()
    kind = words[0] if words else ""
    fields = {}
    for w in words[1:]:
        k, _, v = w.partition("=")
        fields[k] = v.replace("%20", " ")
    return kind, fields


def proc_level() -> int | None:
    """None when /proc numbers processes as yod's PID namespace does (the usual case); else the
    depth of yod's namespace below the one /proc belongs to (`unshare --pid --fork` without
    --mount-proc leaves the host's /proc in place: its numbers are not the ones kill() takes)."""
    try:
        if int(os.readlink("/proc/self")) == os.getpid():
            return None
        with open("/proc/self/status", "rb") as f:
            nspid = next(l for l in f if l.startswith(b"NSpid:")).split()[1:]
        return len(nspid) - 1
    except (OSError, ValueError, StopIteration):
        return None


def _ns_pid(name: str, level: int) -> int | None:
    """The pid of /proc/<name> in yod's namespace (its NSpid at yod's depth), None if outside it."""
    with open(f"/proc/{name}/status", "rb") as f:
        nspid = next(l for l in f if l.startswith(b"NSpid:")).split()[1:]
    return int(nspid[level]) if len(nspid) > level else None


def job_pids(job_id: str) -> set[int]:
    """Processes on this host that belong to the job: its id in their environment, or they are
    our (re-parented) children.  Pids are yod's own (those kill() takes), also when /proc is
    the host's and yod runs in a PID namespace below it."""
    level = proc_level()
    me_here = os.getpid() if level is None else int(os.readlink("/proc/self"))
    needle = f"BOBCAT_JOB_ID={job_id}".encode()
    found = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        if int(name) == me_here:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                ours = needle in f.read().split(b"\0")
            if not ours:
                with open(f"/proc/{name}/stat", "rb") as f:
                    stat = f.read()
                # The command name may hold spaces and ')'; the ppid is the second field after the last ')'.
                fields = stat[stat.rindex(b")") + 2:].split()
                ours = int(fields[1]) == me_here and fields[0] != b"Z"
            if ours:
                pid = int(name) if level is None else _ns_pid(name, level)
                if pid is not None:
                    found.add(pid)
        except (OSError, ValueError, IndexError, StopIteration):
            continue
    return found


def shm_entries() -> set[tuple[str, int]]:
    """(name, inode) of this user's files in /dev/shm."""
    uid = os.geteuid()
    try:
        with os.scandir("/dev/shm") as it:
            return {(e.name, e.inode()) for e in it if e.is_file(follow_symlinks=False)
                    and e.stat(follow_symlinks=False).st_uid == uid}
    except OSError:
        return set()


def remove_orphaned_shm(before: set[tuple[str, int]]) -> None:
    """An MPI killed mid-job leaves its shared-memory files (Open MPI's vader segments) behind.
    Remove the ones that appeared during the job and that no live process has open or mapped:
    a file another job is using right now is left alone."""
    new = shm_entries() - before
    if not new:
        return
    in_use: set[str] = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/maps", "rb") as f:
                for line in f:
                    if b"/dev/shm/" in line:
                        in_use.add(line.rsplit(b"/dev/shm/", 1)[1].split(b" ")[0].strip().decode(errors="replace"))
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("/dev/shm/"):
                    in_use.add(target[9:])
        except OSError:
            continue
    for name, _ in new:
        if name not in in_use:
            try:
                os.unlink(f"/dev/shm/{name}")
            except OSError:
                pass


def _have_children() -> bool:
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def _status_tail(rest: bytes) -> int:
    """Where in an unterminated piece of stderr a status line starts or may be starting (a suffix
    that is a beginning of STATUS_PREFIX), or -1."""
    p = rest.find(STATUS_PREFIX)
    if p >= 0:
        return p
    for k in range(min(len(STATUS_PREFIX) - 1, len(rest)), 0, -1):
        if STATUS_PREFIX.startswith(rest[-k:]):
            return len(rest) - k
    return -1


class Job:
    def __init__(self, argv: list[str], env: dict[str, str], job_id: str, nranks: int,
                 tlimit: float | None, on_status, scan_always: bool = False):
        # scan_always: ranks on this host may not descend from yod (srun starts them from
        # slurmstepd), so only the environment scan can find them.
        self.scan_always = scan_always
        self.argv = argv
        self.env = env
        self.job_id = job_id
        self.nranks = nranks
        self.tlimit = tlimit
        self.on_status = on_status          # callback(kind, fields) for node lines
        self.out = Outcome()
        self.pid = -1
        self._buf = b""
        self._head = b""                    # the start of a user line already partly relayed
                                            # (up to HEAD_MAX), for _abort_line
        self._held_since = 0.0
        self._ompi_abort_line: str | None = None   # first line of Open MPI's two-line abort message

    # --- stderr relay -------------------------------------------------------------------------
    def _emit(self, data: bytes) -> None:
        while data:
            try:
                n = os.write(2, data)
            except InterruptedError:
                continue
            except OSError:
                return
            data = data[n:]

    def _feed(self, data: bytes, now: float) -> None:
        """Relay the launcher's stderr, taking out the shims' status lines.  The launcher merges
        the ranks' streams chunk by chunk, so a status line (one atomic write by its shim) can
        arrive in the middle of another rank's unfinished line, or after the program's own last,
        unterminated line: it is recognised wherever it starts, and the text around it is relayed
        as the user wrote it."""
        buf = self._buf + data
        out = []
        start = 0
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            line = buf[start:nl + 1]
            start = nl + 1
            p = line.find(STATUS_PREFIX)
            if p >= 0:
                if p > 0:                       # the unfinished user line goes on after it
                    out.append(self._partial(line[:p]))
                self._status(line[p:].rstrip(b"\r\n"))
                continue
            out.append(line)
            if self.out.abort is None:
                # Pipes split lines anywhere: look at the whole line, not its last piece.
                whole = self._head + line if self._head else line
                if b"Abort(" in whole or b"MPI_ABORT" in whole or self._ompi_abort_line is not None:
                    self._abort_line(whole.decode("utf-8", "replace"))
            self._head = b""
        rest = buf[start:]
        # A partial line goes out now, so prompts and progress dots show up, except for the part
        # that is or could become a status line, which is held briefly (see flush_partial).
        keep = _status_tail(rest)
        if keep < 0:
            keep = len(rest)
        if keep > 0:
            out.append(self._partial(rest[:keep]))
            rest = rest[keep:]
        if rest and not self._buf:
            self._held_since = now
        self._buf = rest
        if out:
            self._emit(b"".join(out))

    def _partial(self, piece: bytes) -> bytes:
        """A piece of a user line relayed before its end: kept (up to HEAD_MAX) for _abort_line."""
        self._head = (self._head + piece)[:HEAD_MAX]
        return piece

    def _flush_partial(self, now: float, force: bool = False) -> None:
        if self._buf and (force or now - self._held_since > PARTIAL_HOLD_S):
            self._emit(self._partial(self._buf))
            self._buf = b""

    def _abort_line(self, line: str) -> None:
        """Watch the relayed stderr for the MPI's own abort message (only lines that might be one
        get here); Hydra kills the rank shims on an abort, so this is the only word of who did it."""
        if self._ompi_abort_line is not None:
            if line.lstrip().startswith("Proc:"):      # Open MPI 5: the code comes on the next line
                return
            self.out.abort = parse_ompi_abort(self._ompi_abort_line, line)
            self._ompi_abort_line = None
        elif "MPI_ABORT was invoked" in line:
            self._ompi_abort_line = line
        else:
            self.out.abort = parse_mpich_abort(line)
        if self.out.abort is not None:
            self.out.ends_before_abort = len(self.out.ends)

    def _status(self, line: bytes) -> None:
        kind, f = parse_status(line)
        if kind == "exit":
            try:
                end = RankEnd(int(f["rank"]), int(f["code"]) if "code" in f else None,
                              int(f["signal"]) if "signal" in f else None,
                              int(f["exec_errno"]) if "exec_errno" in f else None)
            except (KeyError, ValueError):
                return
            self.out.ends[end.rank] = end
            self.out.end_times.append(time.time_ns())
            if not end.ok and self.out.first_failure is None:
                self.out.first_failure = end
        elif kind == "start":
            try:
                self.out.started.add(int(f["rank"]))
            except (KeyError, ValueError):
                return
        elif kind == "global_exit":
            # OpenSHMEM's shmem_global_exit(status), said by the library before its MPI_Abort:
            # the job's exit status is that status (the first PE's, should several call it).
            try:
                if self.out.global_exit is None:
                    self.out.global_exit = (int(f["rank"]), int(f["status"]))
            except (KeyError, ValueError):
                return
        elif kind == "node":
            self.out.nodes.append(f)
            self.on_status(kind, f)

    # --- the job's life -----------------------------------------------------------------------
    def run(self) -> Outcome:
        import select
        set_subreaper()
        self._shm_before = shm_entries()
        oom = OomWatch()
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        caught: list[int] = []

        def on_signal(sig, _frame):
            caught.append(sig)

        old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        # A SIGCHLD handler (not SIG_DFL) makes the kernel deliver it, which wakes select via the fd.
        old[signal.SIGCHLD] = signal.signal(signal.SIGCHLD, lambda s, f: None)
        old_wakeup = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        try:
            self.pid = os.posix_spawn(
                self.argv[0], self.argv, self.env,
                file_actions=[(os.POSIX_SPAWN_DUP2, err_w, 2)],
                setpgroup=0,
                # Python ignores SIGPIPE and SIGXFSZ; the job must start with the defaults.
                setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM,
                           signal.SIGHUP, signal.SIGCHLD))
        except OSError as e:
            os.close(err_r)
            os.close(err_w)
            self._restore(old, old_wakeup, wake_r, wake_w)
            raise RuntimeError(f"cannot start {self.argv[0]}: {e.strerror}") from None
        os.close(err_w)
        start = time.monotonic()
        deadline = start + self.tlimit if self.tlimit else None
        stop_at = None          # when set: teardown in progress, SIGKILL at this time
        eof = False
        launcher_done_at = None
        all_done_at = None
        try:
            while True:
                now = time.monotonic()
                if caught and self.out.signalled is None:
                    self.out.signalled = caught[0]
                if stop_at is None and (self.out.signalled is not None or self.out.first_failure
                                        or (deadline is not None and now >= deadline)):
                    if deadline is not None and now >= deadline and self.out.signalled is None \
                            and self.out.first_failure is None:
                        self.out.timed_out = True
                    self._kill_all(signal.SIGTERM, launcher=not self.out.first_failure)
                    stop_at = now + GRACE_S
                # Every rank has ended but the launcher lingers: Hydra, for one, waits for
                # whatever still holds a rank's stdout (a daemonised grandchild).  Stop it all.
                if len(self.out.ends) >= self.nranks and all_done_at is None:
                    all_done_at = now
                if stop_at is None and all_done_at is not None and launcher_done_at is None \
                        and now - all_done_at > LINGER_S:
                    self._kill_all(signal.SIGTERM)
                    stop_at = now + GRACE_S
                if stop_at is not None and now >= stop_at:
                    self._kill_all(signal.SIGKILL)
                    stop_at = now + 3600
                self._reap()
                if self.out.launcher_status is not None and launcher_done_at is None:
                    launcher_done_at = now
                if launcher_done_at is not None and (eof or now - launcher_done_at > 0.5):
                    break
                timeout = 0.5
                if self._buf:
                    timeout = PARTIAL_HOLD_S
                if deadline is not None and stop_at is None:
                    timeout = min(timeout, max(0.0, deadline - now))
                if all_done_at is not None and stop_at is None:
                    timeout = min(timeout, max(0.0, all_done_at + LINGER_S - now) + 0.01)
                if stop_at is not None:
                    timeout = min(timeout, max(0.0, stop_at - now), 0.1)
                if launcher_done_at is not None:
                    timeout = min(timeout, 0.05)
                rlist = [wake_r] + ([] if eof else [err_r])
                try:
                    ready, _, _ = select.select(rlist, [], [], timeout)
                except InterruptedError:
                    ready = []
                now = time.monotonic()
                if wake_r in ready:
                    try:
                        while os.read(wake_r, 512):
                            pass
                    except BlockingIOError:
                        pass
                if err_r in ready:
                    data = os.read(err_r, 65536)
                    if data:
                        self._feed(data, now)
                    else:
                        eof = True
                self._flush_partial(now)
            # The launcher is gone; anything of the job still alive here is a straggler.
            if not eof:
                self._drain(err_r)
            self._flush_partial(time.monotonic(), force=True)
            self.out.leftovers = self._cleanup()
        finally:
            self.out.oom_kills, self.out.oom_killed = oom.finish()
            os.close(err_r)
            self._restore(old, old_wakeup, wake_r, wake_w)
        return self.out

    def _drain(self, fd: int) -> None:
        import select
        while select.select([fd], [], [], 0)[0]:
            data = os.read(fd, 65536)
            if not data:
                break
            self._feed(data, time.monotonic())

    def _kill_all(self, sig: int, launcher: bool = True) -> int:
        """Signal every process of the job.  launcher=False spares the launcher: after a rank
        failure it is usually tearing the job down already, and Open MPI's mpirun takes a second
        termination signal during its own abort as "force" and crashes noisily."""
        pids = job_pids(self.job_id)
        if launcher:
            try:
                os.killpg(self.pid, sig)
            except OSError:
                pass
        else:
            pids.discard(self.pid)
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        return len(pids)

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.pid:
                self.out.launcher_status = os.waitstatus_to_exitcode(status)

    def _cleanup(self) -> int:
        """Stop and reap whatever the job left behind; returns how many processes that was."""
        self._reap()
        if not self.scan_always and not _have_children():
            # yod is a subreaper: every surviving local descendant would be its child, so with
            # none left the /proc scan (milliseconds on a busy node) can be skipped.
            remove_orphaned_shm(self._shm_before)
            return 0
        n = self._kill_all(signal.SIGTERM)
        if n:
            end = time.monotonic() + GRACE_S
            while time.monotonic() < end and job_pids(self.job_id):
                self._reap()
                time.sleep(0.02)
            self._kill_all(signal.SIGKILL)
        # Every child (including re-parented orphans) is reaped before yod exits.
        end = time.monotonic() + 5
        while time.monotonic() < end:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                if not job_pids(self.job_id):
                    break
                time.sleep(0.01)
        remove_orphaned_shm(self._shm_before)
        return n

    @staticmethod
    def _restore(old, old_wakeup, wake_r, wake_w) -> None:
        signal.set_wakeup_fd(old_wakeup)
        for s, h in old.items():
            signal.signal(s, h)
        os.close(wake_r)
        os.close(wake_w)

