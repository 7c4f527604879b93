"""yod: Catamount's job launcher on stock Linux.

    yod [-SN | -VN2 | -VN3 | -VN4 | -VN <n>] -np <ranks> [options] program [args]
    yod -F <loadfile> [options]

yod computes the node plan, checks it against this machine, and runs the job through the real
launcher of the program's MPI with every rank wrapped in the bobcat-rank shim and libbobcat
preloaded.  It owns the job's life: time limit, signals, exit status and cleanup.  See docs/yod.md.
Start-up time matters (a user pays it on every job), so imports are few and lazy, and nothing but
the launcher itself is spawned on the success path.
"""

import os
import sys

from .plan import (MAX_HEAP, MIN_HEAP, PT_BUDGET, Options, Plan, UsageError, format_size, plan_heaps,
                       as_heap_cap, host_cores, hostfile_hosts, hugetlb_free, max_local_ranks, memory_bound,
                       mem_total, page_table_bytes, parse_args, slot_shift)

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_STARTUP, EXIT_TIMEOUT = 0, 1, 2, 3, 124

HELP = """\
usage: yod [-SN | -VN2 | -VN3 | -VN4 | -VN <n>] -np <ranks> [options] program [args]
       yod -F <loadfile> [options]

modes (ranks per node; default -VN <cores of this node>):
  -SN                 one rank per node
  -VN2 -VN3 -VN4      2, 3 or 4 ranks per node
  -VN <n>, -VN<n>     n ranks per node
  -np <ranks>         number of ranks
  -F <loadfile>       heterogeneous job: up to 32 lines `-np <n> [-SN|-VN<k>] program [args]`
options:
  --heap SIZE         heap per rank (4k, 2M, 1G ...)
  --heap-node SIZE    heap per node, divided evenly among its ranks (default: half the node's
                      available memory, at most 1G and at least 128M per rank)
  --pages POLICY      auto (default), huge, thp or small;  -small_pages = --pages small
  --windows POLICY    page tables of the windows onto other ranks' heaps: auto (default: eager
                      on 2 MiB pages, lazy on 4 KiB), eager or lazy (BOBCAT_WINDOWS)
  -tlimit SECONDS     time limit for the whole job (also env YOD_TIME_LIMIT)
  --mpi FLAVOUR       override the MPI detected from the program: openmpi, mpich (Debian's), or a
                      peer this bobcat was built for (openmpi5, mpich5, impi, abi: bobcat doctor)
  --hostfile FILE     hosts to run on (passed to the MPI launcher)
  --simulate-nodes    run a multi-node plan on this host, one simulated node per group of ranks
  --oversubscribe     allow more ranks on this host than cores
  --launcher-arg ARG  extra argument for the MPI launcher (repeatable)
  --verbose, -v       print the plan and the page size the ranks got
  --node-file FILE    write each node's status line (heap, page kind, populate time) to FILE
  --boot-dir DIR      bootstrap through socket files in DIR, shared by a node's ranks, instead of
                      abstract sockets (ranks in different network namespaces; BOBCAT_BOOT_DIR)
  --stats FILE        count every MPI call of every rank (BOBCAT_STATS_DIR) and write the job's
                      account to FILE (JSON); print the share of on-node traffic on bobcat's path
  --dry-run           print the plan and the launcher command; launch nothing
  --help, --version
exit status: 0 all ranks exited 0; 1 job failed; 2 bad input; 3 start-up failure;
             124 time limit; 128+n stopped by signal n (130 SIGINT, 143 SIGTERM)
"""


def _err(msg: str) -> None:
    sys.stderr.write(f"yod: {msg}\n")
    sys.stderr.flush()


def _detect(opts: Options) -> tuple["Mpi | None", list[bool], str | None]:
    """The job's MPI installation (--mpi, else the one every MPI program of the job runs on: its
    MPI soname resolved as the dynamic loader would, bobcat/mpis.py), per group whether it runs an MPI
    program (all do under --mpi), and a note for the user when that MPI gets no layer."""
    from ..mpis import Unserved, by_flavour, for_program
    if opts.mpi:
        return by_flavour(opts.mpi), [True] * len(opts.groups), None
    from ..elf import detect
    found: dict[str, tuple] = {}
    is_mpi = []
    for g in opts.groups:
        d = detect(g.program)
        is_mpi.append(d is not None)
        if d:
            try:
                m, note = for_program(*d)
            except Unserved as e:
                raise UsageError(f"{g.program}: {e}")
            found.setdefault(m.lib or m.family, (g, m, note))
    if len(found) > 1:
        (a, ma, _), (b, mb, _) = list(found.values())[:2]
        raise UsageError(f"{a.program} runs on {ma.describe()} and {b.program} on {mb.describe()}; one job "
                         "runs under one MPI: rebuild one of them")
    if not found:
        return None, is_mpi, None
    _, m, note = next(iter(found.values()))
    return m, is_mpi, note


def _available_nodes(kind: str, opts: Options, hosts: list[str] | None) -> tuple[int, str]:
    if opts.simulate_nodes:
        return 1 << 30, "simulated"
    if hosts is not None:
        return len(hosts), f"hosts in {opts.hostfile}" if opts.hostfile else "nodes in the Slurm allocation"
    if kind == "srun":
        n = os.environ.get("SLURM_NNODES") or os.environ.get("SLURM_JOB_NUM_NODES") or "1"
        return int(n) if n.isdigit() else 1, "nodes in the Slurm allocation (SLURM_NNODES)"
    return 1, "only this host: no --hostfile, not in Slurm"


def _slurm_hosts() -> list[str]:
    import subprocess
    nodelist = os.environ.get("SLURM_JOB_NODELIST", "")
    out = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True,
                         text=True).stdout.split()
    if not out:
        raise UsageError(f"cannot expand SLURM_JOB_NODELIST={nodelist!r} with scontrol")
    return out


def _fallback_reason() -> str:
    """Why `auto` ended on 4 KiB pages, read from the kernel's own knobs."""
    reasons = []
    try:
        with open("/proc/meminfo") as f:
            free = next((int(l.split()[1]) for l in f if l.startswith("HugePages_Free:")), 0)
        if free == 0:
            reasons.append("no hugetlb pages reserved")
    except (OSError, ValueError):
        pass
    try:
        with open("/sys/kernel/mm/transparent_hugepage/shmem_enabled") as f:
            mode = f.read().split("[", 1)[1].split("]", 1)[0]
        if mode in ("never", "deny"):
            reasons.append("shmem THP disabled")
    except (OSError, IndexError):
        pass
    return ", ".join(reasons) or "no 2 MiB pages could be had"


def _remove_boot_sockets(d: str, job_id: str) -> None:
    """Local rank 0 removes its socket file once the node has formed; a rank 0 killed during the
    bootstrap cannot, so yod removes what is left of this job's (this host's view of the dir)."""
    prefix = f"bobcat-{job_id}-"
    try:
        names = [n for n in os.listdir(d) if n.startswith(prefix)]
    except OSError:
        return
    for n in names:
        try:
            os.unlink(os.path.join(d, n))
        except OSError:
            pass


def _ompi_session_base(env: dict[str, str]) -> str | None:
    """Where to make a private directory for Open MPI's session files when its usual one cannot
    be ours, else None.  Open MPI names it `<TMPDIR or /tmp>/ompi.<host>.<uid>` and fails in
    orte_init ("orte_session_dir failed") when it exists but belongs to someone else: in a user
    namespace (a rootless container, `unshare --user --map-root-user`) the uid is the namespace's
    0, and the directory of that name is the real root's, left by any root job on the host."""
    base = env.get("TMPDIR") or env.get("TEMP") or env.get("TMP") or "/tmp"
    # Open MPI 5's runtime (PRRTE) names its directory prte.<host>.<uid>: either may be the blocker.
    for name in ("ompi", "prte"):
        top = os.path.join(base, f"{name}.{os.uname().nodename}.{os.geteuid()}")
        if os.path.lexists(top) and not os.access(top, os.W_OK | os.X_OK):
            return base
    return None


class Yod:
    def __init__(self, opts: Options):
        self.opts = opts
        self.warned = False
        self.node_out = None

    def prepare(self) -> None:
        """Everything short of launching: the plan, every check, the command.  Raises UsageError."""
        from .. import paths
        from .launch import build, pick_kind
        o = self.opts
        self.cores = host_cores()
        # The memory the node's ranks may use (MemAvailable, or a tighter cgroup or Slurm limit) and
        # the ranks' ulimit -v: the default heap honours both, and an explicit one must fit them.
        avail_mem, self.mem_what, self.as_limit = memory_bound()
        self.plan: Plan
        self.plan, self.sharing, self.heaps = plan_heaps(o, self.cores, avail_mem, self.as_limit)
        if o.simulate_nodes and o.hostfile:
            raise UsageError("--simulate-nodes runs every node on this host; drop --hostfile "
                             "(or drop --simulate-nodes to use the hosts)")
        self.inst, is_mpi, note = _detect(o)
        if note:
            _err(note)
        # The layer's flavour (None: the program runs on its MPI without it) and the launcher's kind.
        self.mpi = self.inst.flavour if self.inst else None
        self.kind = pick_kind(self.inst, o.hostfile, o.simulate_nodes)
        if self.inst:
            from .job import proc_level
            if proc_level() is not None:
                # yod and libbobcat cope (job.py maps the pids); the MPIs do not: UCX finds a peer's
                # shared memory through /proc/<pid>/fd and Open MPI's ranks fail to start.
                raise UsageError(
                    "/proc belongs to another PID namespace than yod's (`unshare --pid` without "
                    "--mount-proc?): the MPI finds its peers' shared memory through /proc/<pid> and fails "
                    "in MPI_Init; mount this namespace's own /proc (unshare --pid --fork --mount-proc, or "
                    "mount -t proc proc /proc in a mount namespace) — docs/containers.md")
        hosts = None
        if o.hostfile:
            hosts = hostfile_hosts(o.hostfile)
        elif self.kind == "srun" and len(o.groups) > 1:
            hosts = _slurm_hosts()
        avail, what = _available_nodes(self.kind, o, hosts)
        if self.plan.nodes > avail:
            raise UsageError(
                f"the plan needs {self.plan.nodes} nodes ({self._plan_words()}) but there "
                f"{'is' if avail == 1 else 'are'} {avail} ({what}); use more ranks per node "
                "(-VN <n>), fewer ranks, a --hostfile with more hosts, or --simulate-nodes")
        # Ranks sharing this host: all of them when nodes are simulated here, else one node's worth.
        if o.simulate_nodes or self.plan.nodes == 1:
            here = self.plan.ranks
            scope = "on this host" if o.simulate_nodes else "per node"
        else:
            here, scope = self.plan.max_rpn(), "per node"
        # Heap: per group (groups differ in ranks per node, plan_heaps); the node total must fit.
        self.avail_mem = avail_mem
        # SMARTMAP's address layout bounds the ranks of a node (include/bobcat/smartmap.h): checked
        # here, before launch, so that no rank has to refuse to start.
        for (np, rpn, _, _), g, h in zip(self.plan.groups, o.groups, self.heaps):
            n, top = min(np, rpn), max_local_ranks(h)
            if o.preload and top == 0:
                raise UsageError(f"a heap of {format_size(h)} per rank for {os.path.basename(g.program)} exceeds "
                                 f"SMARTMAP's largest, {format_size(MAX_HEAP)} (SMAP_MAX_HEAP); lower --heap / --heap-node")
            if o.preload and n > top:
                raise UsageError(
                    f"{n} ranks per node for {os.path.basename(g.program)}, but SMARTMAP's address layout "
                    f"holds at most {top} per node with a heap of {format_size(h)} per rank (slots of "
                    f"{format_size(1 << slot_shift(h))} below 64 TiB, and SMAP_MAX_LOCAL_RANKS = 1024); "
                    "use fewer ranks per node (-VN <n>) or a smaller heap (--heap / --heap-node)")
        self.oversubscribed = here > self.cores
        if self.oversubscribed and not o.oversubscribe:
            raise UsageError(f"{here} ranks {scope} but this host has {self.cores} cores; use fewer "
                             "ranks per node, more nodes, or --oversubscribe")
        # libbobcat's floor (SMAP_MIN_HEAP in smartmap.h): the allocator hands the heap out in
        # 32 MiB blocks and every allocating thread (the MPI's helpers too) owns one.
        for g, h in zip(o.groups, self.heaps):
            if o.preload and h < MIN_HEAP:
                raise UsageError(f"{format_size(h)} of heap per rank for {g.program} is below the minimum of "
                                 f"{format_size(MIN_HEAP)}; raise --heap-node or --heap")
        if o.simulate_nodes or self.plan.nodes == 1:
            need = sum(g.np * h for g, h in zip(o.groups, self.heaps))
        else:
            need = max(min(g.np, g.rpn) * h for g, h in zip(o.groups, self.heaps))
        # The hugetlb pool is outside MemAvailable, and heaps on auto or huge pages come from it first.
        room = None if avail_mem is None else avail_mem + (hugetlb_free() if o.pages in ("auto", "huge") else 0)
        knob = ("--heap" if o.heap is not None else
                "--heap-node" if o.heap_node is not None else f"--heap-node (default: half of {self.mem_what})")
        if room is not None and need > room:
            raise UsageError(f"the heaps need {format_size(need)} on one node but only "
                             f"{format_size(room)} is available ({self.mem_what}"
                             f"{' + free hugetlb pages' if room != avail_mem else ''}); lower {knob}")
        if o.preload and self.as_limit is not None:
            for (np, rpn, _, _), h in zip(self.plan.groups, self.heaps):
                if h * (min(np, rpn) + 1) > self.as_limit:
                    raise UsageError(
                        f"a rank maps its heap and a window onto each of its node's {min(np, rpn)} heaps: "
                        f"{min(np, rpn) + 1} x {format_size(h)}, more than its address space under ulimit -v "
                        f"({format_size(self.as_limit)}); raise ulimit -v or lower {knob}")
        # The rank shim and the libbobcat flavour of each group.
        lib_dir = os.path.join(paths.home_dir(), paths.LIB)
        shim = os.path.join(paths.home_dir(), paths.LIBEXEC, "bobcat-rank")
        if not os.access(shim, os.X_OK):
            raise UsageError(f"the rank shim {shim} is missing; build and install bobcat "
                             "(make build) or set BOBCAT_HOME to its install prefix")
        libs = []
        for g, g_mpi in zip(o.groups, is_mpi):
            if not o.preload:
                libs.append(None)
                continue
            mpi = self.mpi if g_mpi else None
            # libbobcat.so comes first and by itself: a preloaded library precedes libc, so its
            # malloc wins; as a mere dependency of the MPI flavour it would come after libc.
            wanted = ["libbobcat.so"] + ([f"libbobcat-{mpi}.so"] if mpi else [])
            if mpi and self.oversubscribed:
                # Makes MPICH's UCX polling yield the core while it waits (launcher/bobcat_yield.c).
                wanted.append("libbobcat-yield.so")
            for name in wanted:
                if not os.path.isfile(os.path.join(lib_dir, name)):
                    raise UsageError(f"{os.path.join(lib_dir, name)} is missing (needed for {g.program}); build and "
                                     "install bobcat (make build) or set BOBCAT_HOME to its install prefix")
            libs.append(":".join(os.path.join(lib_dir, name) for name in wanted))
        # The environment every rank gets (contracts.md section 1).
        self.job_id = os.urandom(8).hex()
        env = dict(os.environ)
        for k in ("BOBCAT_PRELOAD", "BOBCAT_HEAP"):
            env.pop(k, None)
        env.update(BOBCAT_JOB_ID=self.job_id, BOBCAT_JOB_TOKEN=os.urandom(16).hex(),
                   BOBCAT_PLAN=self.plan.env, BOBCAT_SIMULATE_NODES="1" if o.simulate_nodes else "0",
                   BOBCAT_PAGES=o.pages, BOBCAT_BIND="none" if self.oversubscribed else "core")
        if self.inst is not None and os.path.exists(os.path.join(self.inst.prefix, "bin", "impi_info")):
            # Intel MPI finds its own parts (libfabric providers, hydra's proxy) from I_MPI_ROOT.
            env.setdefault("I_MPI_ROOT", self.inst.prefix)
        if self.kind == "openmpi" and os.geteuid() == 0:
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        # Made in run() (not under --dry-run), removed after the job.
        self.ompi_tmp_base = (_ompi_session_base(env) if self.kind == "openmpi"
                              and not env.get("OMPI_MCA_orte_tmpdir_base")
                              and not env.get("PRTE_MCA_prte_tmpdir_base") else None)
        self.private_tmp = self.sim_shm = self.end_dir = None
        per_group: list[list[str]] = [[] for _ in o.groups]
        for name, values in (("BOBCAT_HEAP", [str(h) for h in self.heaps]), ("BOBCAT_PRELOAD", libs)):
            if len(set(values)) == 1:
                if values[0] is not None:
                    env[name] = values[0]
            else:
                for g, v in enumerate(values):
                    if v is not None:
                        per_group[g] += ["--setenv", f"{name}={v}"]
        if o.windows:
            env["BOBCAT_WINDOWS"] = o.windows
        if o.boot_dir:
            env["BOBCAT_BOOT_DIR"] = o.boot_dir
        self.boot_dir = env.get("BOBCAT_BOOT_DIR") or None
        self.windows = env.get("BOBCAT_WINDOWS") or "auto"
        self.page_tables = self._page_tables()
        self.env = env
        # Open MPI binds exactly as libbobcat would on a single real node (launch.py).
        self.launcher_binds = (o.preload and env["BOBCAT_BIND"] == "core" and self.kind == "openmpi"
                               and self.plan.nodes == 1 and not o.simulate_nodes)
        progs = [[shim] + per_group[i] + ["--", g.program] + g.args for i, g in enumerate(o.groups)]
        self.launch = build(self.kind, self.plan, progs, env, hosts=hosts, hostfile=o.hostfile,
                            oversubscribe=o.oversubscribe and self.kind == "openmpi",
                            extra=o.launcher_args, launcher_binds=self.launcher_binds, inst=self.inst)

    def _page_tables(self) -> tuple[int, float, str, int] | None:
        """The worst node's page tables at start (bytes, share of the node's memory, page kind, and
        bytes once every rank has touched all of every peer's heap), estimated for the smallest
        page kind the policy may end on."""
        if not self.opts.preload:
            return None
        kind = {"huge": "huge", "thp": "thp"}.get(self.opts.pages, "small")
        total = mem_total() or 1
        worst = None
        for (np, rpn, _, _), h in zip(self.plan.groups, self.heaps):
            b = page_table_bytes(h, min(np, rpn), kind, self.windows)
            if worst is None or b > worst[0]:
                worst = (b, b / total, kind, page_table_bytes(h, min(np, rpn), kind, "eager"))
        return worst

    def warnings(self) -> list[str]:
        pt = self.page_tables
        if pt and pt[1] > PT_BUDGET:
            return [f"the windows' page tables would take {format_size(pt[0])} per node at start, "
                    f"{pt[1] * 100:.1f} % of its memory, on {pt[2]} pages with --windows {self.windows}: "
                    "use --windows lazy (BOBCAT_WINDOWS=lazy), 2 MiB pages (--pages huge or thp), or fewer "
                    "ranks per node"]
        return []

    def _plan_words(self) -> str:
        return ", ".join(f"{np} ranks at {rpn} per node" for np, rpn, _, _ in self.plan.groups)

    def summary(self) -> list[str]:
        o, p = self.opts, self.plan
        lines = [f"job {self.job_id}: {p.ranks} ranks on {p.nodes} node{'s' if p.nodes > 1 else ''}"
                 f"{' (simulated on this host)' if o.simulate_nodes else ''}, "
                 f"mpi {self.mpi or 'none'}, launcher {self.launch.argv[0]}"]
        for (np, rpn, nodes, base), g, h, sharing in zip(p.groups, o.groups, self.heaps, self.sharing):
            last = np - (nodes - 1) * rpn
            lines.append(f"  {os.path.basename(g.program)}: {np} ranks, {rpn} per node "
                         f"(-{'SN' if rpn == 1 else f'VN{rpn}'}) on nodes {base}-{base + nodes - 1}"
                         f"{f', last node holds {last}' if last != rpn else ''}; "
                         f"heap {format_size(h)} per rank")
            if o.heap is None and o.heap_node is None:
                cap = as_heap_cap(self.as_limit, min(np, rpn))
                by_as = cap is not None and self.avail_mem and cap < self.avail_mem // 2 // sharing
                lines.append(f"    heap: default, half of {self.mem_what}: "
                             f"{format_size(self.avail_mem) if self.avail_mem else 'unknown'} divided among "
                             f"{sharing} ranks sharing the node"
                             + (f", at most {format_size(cap)} per rank under ulimit -v "
                                f"({format_size(self.as_limit)}: own heap and {min(np, rpn)} windows per rank)"
                                if by_as else "")
                             + ", within [128 MiB, 1 GiB] per rank (--heap / --heap-node to choose)")
            if o.preload:
                sh = slot_shift(h)
                lines.append(f"    layout: slot {format_size(1 << sh)} (2^{sh}): own heap at 64 GiB, local rank "
                             f"r's window at 64 GiB + (r + 1) * {format_size(1 << sh)}; at most "
                             f"{max_local_ranks(h)} ranks per node at this heap")
        lines.append(f"  binding: {'none (oversubscribed: ' + str(self.cores) + ' cores)' if self.oversubscribed else 'one rank per core'}"
                     f"; pages: {o.pages}; windows: {self.windows}; BOBCAT_PLAN={p.env}")
        if self.page_tables:
            b, share, kind, full = self.page_tables
            lines.append(f"  page tables at start (estimate, {kind} pages): {format_size(b)} per node, "
                         f"{share * 100:.2f} % of its memory"
                         + (f"; up to {format_size(full)} ({full / b * share * 100:.2f} %) once every rank has "
                            "touched all of every peer's heap (lazy windows)" if full > b else ""))
        if o.tlimit:
            lines.append(f"  time limit: {o.tlimit:g} s")
        return lines

    def on_status(self, kind: str, f: dict[str, str]) -> None:
        if self.node_out is not None:
            # For tools (bobcat's runner records the page kind each run's heap got): the line as
            # libbobcat wrote it, contracts.md section 2, one per node.
            self.node_out.write("@@bobcat@@ " + kind + "".join(
                f" {k}={v.replace(' ', '%20')}" for k, v in f.items()) + "\n")
            self.node_out.flush()
        if self.opts.verbose:
            try:
                heap = format_size(int(f.get("heap", "0")))
                page = format_size(int(f.get("page_size", "0")))
            except ValueError:
                heap = page = "?"
            _err(f"node {f.get('node', '?')}: {f.get('ranks', '?')} ranks, heap {heap} per rank on "
                 f"{page} pages ({f.get('pages', '?')}), populated in {f.get('populate_s', '?')} s")
        elif self.opts.pages == "auto" and f.get("pages") == "small" and not self.warned:
            self.warned = True
            _err(f"heap on 4 KiB pages: {_fallback_reason()} — see docs/yod.md")

    def run(self) -> int:
        from .job import Job
        if self.opts.verbose:
            for line in self.summary():
                _err(line)
        if self.opts.node_file:
            try:
                self.node_out = open(self.opts.node_file, "w", encoding="utf-8")
            except OSError as e:
                _err(f"--node-file {self.opts.node_file}: cannot write it: {e.strerror}")
                return EXIT_USAGE
        stats_dir = None
        if self.opts.stats:
            import tempfile
            # Beside FILE rather than in /tmp: under srun the ranks of other nodes write there too.
            try:
                stats_dir = tempfile.mkdtemp(prefix=".yod-stats-", dir=os.path.dirname(self.opts.stats))
            except OSError as e:
                _err(f"--stats {self.opts.stats}: cannot make a directory beside it: {e.strerror}")
                return EXIT_USAGE
            self._pass_on("BOBCAT_STATS_DIR", stats_dir)
        if self.ompi_tmp_base:
            import tempfile
            try:
                self.private_tmp = tempfile.mkdtemp(prefix="yod-ompi-", dir=self.ompi_tmp_base)
                self.env["OMPI_MCA_orte_tmpdir_base"] = self.private_tmp   # Open MPI 4
                self.env["PRTE_MCA_prte_tmpdir_base"] = self.private_tmp   # Open MPI 5 (PRRTE)
            except OSError as e:
                _err(f"Open MPI's session directory in {self.ompi_tmp_base} belongs to another user (a user "
                     f"namespace?) and no private one can be made there ({e.strerror}): set TMPDIR")
                if stats_dir is not None:
                    import shutil
                    shutil.rmtree(stats_dir, ignore_errors=True)
                return EXIT_USAGE
        if self.opts.preload:
            # Where libbobcat's MPI_Abort leaves the aborting rank's word (read_aborts()); without it
            # (no room in TMPDIR) yod has the MPI's own abort message alone. Made after the last
            # early return above, so that the finally below always removes it.
            import tempfile
            try:
                self.end_dir = tempfile.mkdtemp(prefix="yod-end-")
                self._pass_on("BOBCAT_END_DIR", self.end_dir)
            except OSError:
                self.end_dir = None
        if self.kind == "openmpi" and self.opts.simulate_nodes and self.opts.preload:
            # Simulated nodes share the host name, so two nodes' Open MPI window files (named by host,
            # job and communicator id) collided; libbobcat gives each node a directory in this one.
            import tempfile
            try:
                self.sim_shm = tempfile.mkdtemp(prefix="yod-simshm-",
                                                dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
                self.env["BOBCAT_SIM_SHM_DIR"] = self.sim_shm
            except OSError:
                self.sim_shm = None
        job = Job(self.launch.argv, self.env, self.job_id, self.plan.ranks, self.opts.tlimit,
                  self.on_status, scan_always=self.kind == "srun")
        try:
            out = job.run()
            if self.end_dir:
                from .job import read_aborts
                read_aborts(self.end_dir, out)
        except RuntimeError as e:
            _err(str(e))
            return EXIT_STARTUP
        finally:
            if self.boot_dir:
                _remove_boot_sockets(self.boot_dir, self.job_id)
            for d in (self.private_tmp, self.sim_shm, self.end_dir):
                if d:
                    import shutil
                    shutil.rmtree(d, ignore_errors=True)
            if self.node_out is not None:
                self.node_out.close()
            if stats_dir is not None:
                import shutil
                from .stats import collect
                try:
                    for line in collect(stats_dir, self.plan.ranks, self.opts.stats):
                        _err(line)
                finally:
                    shutil.rmtree(stats_dir, ignore_errors=True)
        return self.verdict(out)

    def _pass_on(self, name: str, value: str) -> None:
        """A variable every rank gets: in the job's environment, and named to mpirun, which passes
        on only the variables it is told to (-x), for the remote nodes."""
        self.env[name] = value
        if self.kind == "openmpi" and name not in self.launch.env_names:
            self.launch.argv[1:1] = ["-x", name]

    def _prog_of(self, rank: int) -> str:
        first = 0
        for g in self.opts.groups:
            if rank < first + g.np:
                return os.path.basename(g.program)
            first += g.np
        return "?"

    def verdict(self, out) -> int:
        """The exit status and the one line that says why, from everything the job told yod: the
        shims' start and exit lines, the MPI's abort message, and the launcher's status.  A job
        that started and was then ended is a failure (1), never a start-up failure (3), even when
        the launcher killed the shims before they could report (Hydra on MPI_Abort)."""
        if out.signalled is not None:
            import signal as sig
            _err(f"stopped by {sig.Signals(out.signalled).name}; the job was ended")
            return 128 + out.signalled
        if out.timed_out:
            _err(f"time limit of {self.opts.tlimit:g} s reached; the job was ended")
            return EXIT_TIMEOUT
        launcher = os.path.basename(self.launch.argv[0])
        noexec = next((e for e in out.ends.values() if e.exec_errno is not None), None)
        if noexec is not None:
            _err(f"rank {noexec.rank} ({self._prog_of(noexec.rank)}) {noexec.describe()}; "
                 "the job was ended")
            return EXIT_STARTUP
        if out.global_exit is not None:
            # The program ended the job on purpose, with the status it chose (OpenSHMEM: "the
            # exit status of the program"); the MPI_Abort that carried it out is not a failure.
            rank, status = out.global_exit
            _err(f"rank {rank} ({self._prog_of(rank)}) called shmem_global_exit({status})"
                 + self._others(out, rank, launcher))
            # A process exit status is 8 bits; a status that truncates to 0 must not read as success.
            return status & 0xff if status & 0xff or status == 0 else EXIT_FAILED
        cause = out.cause()
        if out.abort is not None:
            rank = self._abort_rank(out)
            # A rank that failed by itself before the abort (SIGSEGV, then a peer's MPI finds the
            # broken connection fatal) is the cause; the abort is its consequence.
            before = list(out.ends.values())[:out.ends_before_abort]
            if cause is None or cause.terminated or cause.rank == rank or cause not in before:
                return self._aborted(out, rank, launcher)
        missing = [r for r in range(self.plan.ranks) if r not in out.ends]
        # Open MPI tears a job down with SIGTERM, which the shims forward and report; Hydra
        # SIGKILLs the shims, which then report nothing.  So under Open MPI, ranks that reported
        # only SIGTERM while others vanished without a report (their shim was killed) are the
        # launcher's victims, and the vanished ranks are where the end began.  Under Hydra a
        # reported SIGTERM came from elsewhere (a user's kill) and is the cause.
        victims_only = (self.kind == "openmpi" and cause is not None and cause.signal == 15
                        and bool(missing) and out.launcher_status != 0)
        if cause is not None and not victims_only:
            _err(f"rank {cause.rank} ({self._prog_of(cause.rank)}) {cause.describe()}"
                 + self._oom(out, cause) + self._others(out, cause.rank, launcher))
            return EXIT_STARTUP if cause.code == EXIT_STARTUP else EXIT_FAILED
        if out.leftovers and self.opts.verbose:
            _err(f"ended {out.leftovers} process{'es' if out.leftovers > 1 else ''} the job left behind")
        if not missing:
            return EXIT_OK          # every rank exited 0, whatever the launcher made of its end
        if out.launcher_status != 0:
            unstarted = [r for r in range(self.plan.ranks) if r not in out.started]
            if len(unstarted) == self.plan.ranks:
                _err(f"{launcher} failed (status {out.launcher_status}) before any rank ran")
                return EXIT_STARTUP
            if unstarted:
                _err(f"{launcher} failed (status {out.launcher_status}) before "
                     f"rank{'s' if len(unstarted) > 1 else ''} {_ranges(unstarted)} started")
                return EXIT_STARTUP
            stopped = sum(1 for e in out.ends.values() if not e.ok)
            _err(f"{launcher} ended the job (status {out.launcher_status}) after the ranks "
                 f"started; rank{'s' if len(missing) > 1 else ''} {_ranges(missing)} ended "
                 "without a report (killed?)"
                 + (f"; {stopped} other rank{'s' if stopped > 1 else ''} stopped" if stopped else ""))
            return EXIT_FAILED
        _err(f"rank{'s' if len(missing) > 1 else ''} {_ranges(missing)} ended without a report")
        return EXIT_FAILED

    @staticmethod
    def _abort_rank(out) -> int | None:
        """The world rank that aborted.  Open MPI names the rank only within the aborting
        communicator; the world rank is then the one whose shim reported the abort's code."""
        a = out.abort
        if a.rank is not None:
            return a.rank
        same = [e.rank for e in out.ends.values() if e.signal is None and e.code == a.code & 0xff]
        return same[0] if len(same) == 1 else None

    def _aborted(self, out, rank: int | None, launcher: str) -> int:
        """The MPI says a rank aborted the job (MPI_Abort or a fatal MPI error)."""
        a = out.abort
        who = (f"rank {rank} ({self._prog_of(rank)})" if rank is not None else
               f"rank {a.comm_rank} of communicator {a.comm}")
        _err(f"{who} {a.what}" + self._others(out, rank, launcher))
        return EXIT_FAILED

    def _oom(self, out, end) -> str:
        """Whether the kernel's OOM killer is what sent a rank its SIGKILL, from the kernel's own
        record (job.OomWatch): the kill count says one happened during the job, the kernel log
        (where readable) names the process."""
        if end.signal != 9 or not out.oom_kills:
            return ""
        prog = self._prog_of(end.rank)
        named = prog[:15] in out.oom_killed        # the kernel keeps 15 characters of a name
        if out.oom_killed and not named:
            return ""
        return (f"{'' if named else ' (probably)'} by the kernel's OOM killer: the node or the job's memory "
                f"cgroup ran out of memory ({out.oom_kills} OOM kill{'s' if out.oom_kills > 1 else ''} during the "
                f"job); give the job more memory or lower --heap / --heap-node")

    def _others(self, out, rank: int | None, launcher: str) -> str:
        """'; 2 other ranks stopped' from the shims' reports, or, when the launcher killed the
        shims before they could report, that the launcher ended the job.  With the ending rank
        unknown (rank None) it may be among the unreported ones, so no count is given."""
        stopped = sum(1 for e in out.ends.values() if e.rank != rank and not e.ok)
        if stopped:
            return f"; {stopped} other rank{'s' if stopped > 1 else ''} stopped"
        n = sum(1 for r in range(self.plan.ranks) if r != rank and r not in out.ends)
        if n and rank is None:
            return f"; {launcher} ended the other ranks"
        if n:
            return f"; {launcher} ended {'the other rank' if n == 1 else f'the {n} other ranks'}"
        return ""


def _ranges(ranks: list[int]) -> str:
    out, i = [], 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        out.append(str(ranks[i]) if i == j else f"{ranks[i]}-{ranks[j]}")
        i = j + 1
    return ",".join(out)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        opts = parse_args(args)
        if opts.help:
            sys.stdout.write(HELP)
            return EXIT_OK
        if opts.version:
            from .. import __version__
            sys.stdout.write(f"yod (bobcat) {__version__}\n")
            return EXIT_OK
        y = Yod(opts)
        y.prepare()
    except UsageError as e:
        _err(str(e))
        return EXIT_USAGE
    for w in y.warnings():
        _err(f"warning: {w}")
    if opts.dry_run:
        import shlex
        for line in y.summary():
            print(line)
        print(shlex.join(y.launch.argv))
        return EXIT_OK
    if y.launch.files:
        return _run_with_files(y)
    return y.run()


def _run_with_files(y: Yod) -> int:
    """srun with several programs: its multi-prog and host files live for the job's duration."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="yod-") as d:
        mp = os.path.join(d, "multiprog")
        with open(mp, "w") as f:
            f.write(y.launch.files["multiprog"])
        y.launch.argv = [mp if a == "@MULTIPROG@" else a for a in y.launch.argv]
        if y.launch.files["hostfile"].strip():
            hf = os.path.join(d, "hosts")
            with open(hf, "w") as f:
                f.write(y.launch.files["hostfile"])
            y.env["SLURM_HOSTFILE"] = hf
        return y.run()


if __name__ == "__main__":
    sys.exit(main())
