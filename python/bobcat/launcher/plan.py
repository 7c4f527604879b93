"""yod's command line, load files and the node plan (pure functions over the input; no launching).

The plan follows Catamount: a group of `np` ranks in mode SN (1 rank per node) or VNk (k ranks per
node) occupies ceil(np / k) nodes, filled in rank order, and only the group's last node may hold
fewer ranks.  Heterogeneous jobs (-F) place each group on its own nodes after the previous group's.
Every error here is a UsageError: yod exits 2 with the message and launches nothing.
"""

import os

MAX_LOAD_LINES = 32          # Catamount's yod -F limit
PAGE_POLICIES = ("auto", "huge", "thp", "small")
WINDOW_POLICIES = ("auto", "eager", "lazy")

# The default heap (no --heap, no --heap-node): this share of the node's MemAvailable, divided
# evenly among the ranks sharing the node, clamped to [MIN_HEAP, DEFAULT_HEAP_CAP] per rank.  The
# cap bounds the start-up cost (the heap is populated in full: 1 GiB takes ~0.05 s on hugetlb
# pages, ~0.2 s on shmem THP, ~0.55 s on 4 KiB pages here) and leaves memory to the rest of the
# node; docs/yod.md.
DEFAULT_HEAP_SHARE = 0.5
DEFAULT_HEAP_CAP = 1 << 30
MIN_HEAP = 128 << 20         # SMAP_MIN_HEAP (include/bobcat/smartmap.h)

# SMARTMAP's address layout, as include/bobcat/smartmap.h defines it (smap_layout_shift,
# smap_layout_max_ranks): own heap at LAYOUT_BASE, local rank r's window at
# LAYOUT_BASE + (r + 1) * slot, all below LAYOUT_TOP; slot = smallest power of two >= heap.
LAYOUT_BASE = 64 << 30       # SMAP_HEAP_BASE
LAYOUT_TOP = 1 << 46         # SMAP_LAYOUT_TOP: 64 TiB
MIN_SLOT_SHIFT = 21          # SMAP_MIN_SLOT_SHIFT: 2 MiB
MAX_HEAP = 1 << 44           # SMAP_MAX_HEAP: 16 TiB
MAX_LOCAL_RANKS = 1024       # SMAP_MAX_LOCAL_RANKS
PT_BUDGET = 0.01             # warn when page tables would take more than 1 % of a node's memory
MPIS = ("openmpi", "mpich")
BOOT_DIR_MAX = 64            # BOOT_DIR_MAX (src/boot/boot.h): the directory's part of sun_path


class UsageError(Exception):
    """Bad input: yod prints it and exits 2 before anything is launched."""


class Group:
    """One program of the job: np ranks of `program` at rpn ranks per node (None = default).
    `where` is "command line" or "<loadfile>:<line>", for messages."""
    __slots__ = ("np", "rpn", "program", "args", "where")

    def __init__(self, np: int, rpn: int | None, program: str, args: list[str],
                 where: str = "command line"):
        self.np, self.rpn, self.program, self.args, self.where = np, rpn, program, args, where

    def __repr__(self) -> str:
        return f"Group({self.np}, {self.rpn}, {self.program!r}, {self.args!r}, {self.where!r})"


class Options:
    """The parsed command line.  (Plain classes, not dataclasses: importing dataclasses costs
    yod several milliseconds of start-up.)"""

    def __init__(self) -> None:
        self.groups: list[Group] = []
        self.heap: int | None = None          # --heap: bytes per rank
        self.heap_node: int | None = None     # --heap-node: bytes per node, divided by its ranks
        self.pages = "auto"
        self.windows: str | None = None       # --windows (else BOBCAT_WINDOWS, else auto)
        self.tlimit: float | None = None
        self.verbose = False
        self.node_file: str | None = None     # --node-file: where the nodes' status lines go
        self.boot_dir: str | None = None      # --boot-dir: bootstrap socket files (BOBCAT_BOOT_DIR)
        self.stats: str | None = None         # --stats: where the job's account goes (JSON)
        self.mpi: str | None = None
        self.hostfile: str | None = None
        self.oversubscribe = False
        self.simulate_nodes = False
        self.launcher_args: list[str] = []
        self.dry_run = False
        self.preload = True
        self.help = False
        self.version = False


_SHIFT = {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}


def parse_size(text: str, knob: str) -> int:
    """'4096', '4k', '2M', '1G' (binary units; 'KiB'/'MB' spellings accepted) -> bytes > 0."""
    t = text.strip().lower()
    for tail in ("ib", "b"):
        if t.endswith(tail) and len(t) > len(tail) and t[-len(tail) - 1] in "kmgt":
            t = t[:-len(tail)]
            break
    unit = t[-1:] if t[-1:] in ("k", "m", "g", "t") else ""
    digits = t[:len(t) - len(unit)]
    if not digits.isascii() or not digits.isdigit() or int(digits) == 0:
        raise UsageError(f"{knob} {text!r} is not a size; give a positive number with an optional "
                         f"k/M/G suffix, e.g. {knob} 512M")
    return int(digits) << _SHIFT[unit]


def parse_count(text: str, what: str) -> int:
    try:
        n = int(text, 10)
    except ValueError:
        n = 0
    if n <= 0 or not text.strip().isdigit():
        raise UsageError(f"{what} {text!r} is not a positive whole number of ranks")
    return n


def _mode_rpn(flag: str, nxt: str | None) -> tuple[int, int] | None:
    """Ranks per node for a mode flag and how many argv items it used; None if not a mode flag."""
    if flag == "-SN":
        return 1, 1
    if flag == "-VN":
        if nxt is None:
            raise UsageError("-VN needs the number of ranks per node, e.g. -VN 4")
        return parse_count(nxt, "-VN"), 2
    if flag.startswith("-VN"):
        return parse_count(flag[3:], "mode -VN<k>: ranks per node"), 1
    return None


def format_size(n: int) -> str:
    """Bytes in the largest binary unit they reach: whole when exact, else one decimal."""
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n >> shift} {unit}" if n % (1 << shift) == 0 else f"{n / (1 << shift):.1f} {unit}"
    return f"{n} B"


def resolve_program(prog: str, where: str) -> str:
    """Absolute path of an executable program, searched on PATH like a shell would."""
    if "/" in prog:
        cands = [os.path.abspath(prog)]
    else:
        cands = [os.path.join(d or ".", prog) for d in os.environ.get("PATH", "").split(os.pathsep)]
    for c in cands:
        if os.path.isfile(c):
            if os.access(c, os.X_OK):
                return os.path.abspath(c)
            if "/" in prog:
                raise UsageError(f"{where}: program {prog} is not executable (chmod +x it)")
    if "/" in prog:
        raise UsageError(f"{where}: program {prog} does not exist")
    raise UsageError(f"{where}: program {prog!r} not found on PATH; give its path")


# Long options taking a value; '--opt=value' is accepted for each of them.
_VALUED = {"-np", "-F", "--heap", "--heap-node", "--pages", "--windows", "-tlimit", "--tlimit", "--mpi",
           "--hostfile", "--launcher-arg", "-n", "--node-file", "--stats", "--boot-dir"}


def parse_args(argv: list[str]) -> Options:
    """yod's command line -> Options.  Options come first; the first non-option is the program."""
    o = Options()
    np: int | None = None
    rpn: int | None = None
    loadfile: str | None = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if not a.startswith("-") or a == "-":
            break
        if a == "--":
            i += 1
            break
        val: str | None = None
        name = a
        if a.startswith("--") and "=" in a:
            name, val = a.split("=", 1)
        if name in _VALUED and val is None:
            if i + 1 >= len(argv):
                raise UsageError(f"{name} needs a value (see yod --help)")
            val = argv[i + 1]
            i += 1
        i += 1
        mode = _mode_rpn(name, argv[i] if i < len(argv) else None) if name.startswith("-SN") or \
            name.startswith("-VN") else None
        if mode is not None:
            if rpn is not None:
                raise UsageError(f"two modes given ({a}); choose one of -SN, -VN2, -VN3, -VN4, -VN <n>")
            rpn = mode[0]
            i += mode[1] - 1
        elif name in ("-np", "-n"):
            np = parse_count(val, "-np")
        elif name == "-F":
            loadfile = val
        elif name == "--heap":
            o.heap = parse_size(val, "--heap")
        elif name == "--heap-node":
            o.heap_node = parse_size(val, "--heap-node")
        elif name == "--pages":
            if val not in PAGE_POLICIES:
                raise UsageError(f"--pages {val!r}: choose one of {', '.join(PAGE_POLICIES)}")
            o.pages = val
        elif name == "--windows":
            if val not in WINDOW_POLICIES:
                raise UsageError(f"--windows {val!r}: choose one of {', '.join(WINDOW_POLICIES)}")
            o.windows = val
        elif name in ("-small_pages", "--small-pages"):
            o.pages = "small"
        elif name in ("-tlimit", "--tlimit"):
            o.tlimit = _parse_tlimit(val, name)
        elif name in ("-v", "--verbose"):
            o.verbose = True
        elif name == "--node-file":
            o.node_file = val
        elif name == "--stats":
            d = os.path.dirname(os.path.abspath(val))
            if not os.path.isdir(d) or not os.access(d, os.W_OK):
                raise UsageError(f"--stats {val}: directory {d} does not exist or is not writable; "
                                 "give a file in a writable directory")
            o.stats = os.path.abspath(val)
        elif name == "--boot-dir":
            d = os.path.abspath(val)
            if not os.path.isdir(d) or not os.access(d, os.W_OK | os.X_OK):
                raise UsageError(f"--boot-dir {val}: {d} is not a writable directory; give one that every "
                                 "rank of a node can reach (a volume the containers share)")
            if len(d) > BOOT_DIR_MAX:
                raise UsageError(f"--boot-dir {d}: {len(d)} characters, but a unix socket's name holds at most "
                                 f"{BOOT_DIR_MAX} for the directory; use a shorter path")
            o.boot_dir = d
        elif name == "--mpi":
            from ..mpis import table
            known = list(table())
            if val not in known:
                raise UsageError(f"--mpi {val!r}: choose one of {', '.join(known)} (the MPIs this bobcat "
                                 "has a layer for: bobcat doctor lists them)")
            o.mpi = val
        elif name == "--hostfile":
            o.hostfile = val
        elif name == "--oversubscribe":
            o.oversubscribe = True
        elif name == "--simulate-nodes":
            o.simulate_nodes = True
        elif name == "--launcher-arg":
            o.launcher_args.append(val)
        elif name == "--dry-run":
            o.dry_run = True
        elif name == "--no-preload":
            o.preload = False
        elif name in ("-h", "--help"):
            o.help = True
            return o
        elif name == "--version":
            o.version = True
            return o
        else:
            hint = " (modes are -SN, -VN2, -VN3, -VN4, -VN <n>)" if name.startswith(("-S", "-V")) else ""
            raise UsageError(f"unknown option {a}{hint}; see yod --help")
    rest = argv[i:]
    if o.heap is not None and o.heap_node is not None:
        raise UsageError("give either --heap (per rank) or --heap-node (per node), not both")
    if o.tlimit is None and os.environ.get("YOD_TIME_LIMIT"):
        o.tlimit = _parse_tlimit(os.environ["YOD_TIME_LIMIT"], "YOD_TIME_LIMIT")
    if loadfile is not None:
        if np is not None:
            raise UsageError("-np cannot be combined with -F; put -np on each line of the load file")
        if rest:
            raise UsageError(f"-F {loadfile}: the load file names the programs; remove {rest[0]!r} "
                             "from the command line")
        o.groups = parse_loadfile(loadfile, rpn)
        return o
    if not rest:
        raise UsageError("no program given; usage: yod [-SN|-VN2|-VN3|-VN4|-VN <n>] -np <ranks> program [args]")
    if np is None:
        raise UsageError("-np <ranks> is required (or -F <loadfile>)")
    o.groups = [Group(np, rpn, resolve_program(rest[0], "command line"), rest[1:])]
    return o


def _parse_tlimit(text: str, knob: str) -> float:
    try:
        t = float(text)
    except ValueError:
        t = -1.0
    if not t > 0 or t != t or t == float("inf"):
        raise UsageError(f"{knob} {text!r} is not a positive number of seconds")
    return t


def parse_loadfile(path: str, default_rpn: int | None) -> list[Group]:
    """A Catamount -F load file: one `-np <n> [-SN|-VN<k>|-VN <k>] program [args]` per line."""
    import shlex
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise UsageError(f"-F {path}: cannot read the load file: {e.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"-F {path}: the load file is not text") from None
    groups: list[Group] = []
    for lineno, line in enumerate(lines, 1):
        where = f"{path}:{lineno}"
        try:
            words = shlex.split(line, comments=True)
        except ValueError as e:
            raise UsageError(f"{where}: {e}; check the quoting") from None
        if not words:
            continue
        if len(groups) == MAX_LOAD_LINES:
            raise UsageError(f"{where}: more than {MAX_LOAD_LINES} programs; a load file holds at "
                             f"most {MAX_LOAD_LINES} lines (Catamount's limit)")
        np = None
        rpn = None
        j = 0
        while j < len(words) and words[j].startswith("-"):
            w = words[j]
            try:
                if w in ("-np", "-n"):
                    if j + 1 >= len(words):
                        raise UsageError("-np needs a number")
                    np = parse_count(words[j + 1], "-np")
                    j += 2
                    continue
                mode = _mode_rpn(w, words[j + 1] if j + 1 < len(words) else None) \
                    if w.startswith(("-SN", "-VN")) else None
            except UsageError as e:
                raise UsageError(f"{where}: {e}") from None
            if mode is None:
                raise UsageError(f"{where}: unknown option {w}; a line is "
                                 "-np <n> [-SN|-VN<k>] program [args]")
            if rpn is not None:
                raise UsageError(f"{where}: two modes on one line")
            rpn = mode[0]
            j += mode[1]
        if np is None:
            raise UsageError(f"{where}: missing -np <ranks>; a line is -np <n> [-SN|-VN<k>] program [args]")
        if j >= len(words):
            raise UsageError(f"{where}: no program after the options")
        groups.append(Group(np, rpn if rpn is not None else default_rpn,
                            resolve_program(words[j], where), words[j + 1:], where))
    if not groups:
        raise UsageError(f"-F {path}: the load file names no program")
    return groups


class Plan:
    """Nodes and ranks: per group (np, rpn, nodes, first node); totals; BOBCAT_PLAN."""
    __slots__ = ("groups", "nodes", "ranks")

    def __init__(self, groups: list[tuple[int, int, int, int]], nodes: int, ranks: int):
        self.groups, self.nodes, self.ranks = groups, nodes, ranks

    @property
    def env(self) -> str:
        return ";".join(f"{np}:{rpn}" for np, rpn, _, _ in self.groups)

    def node_of(self, world_rank: int) -> tuple[int, int]:
        """(node, local rank) of a world rank, as contracts.md section 1 defines it."""
        base_rank = 0
        for np, rpn, _, base in self.groups:
            if world_rank < base_rank + np:
                i = world_rank - base_rank
                return base + i // rpn, i % rpn
            base_rank += np
        raise ValueError(f"rank {world_rank} is outside the plan")

    def max_rpn(self) -> int:
        return max(min(np, rpn) for np, rpn, _, _ in self.groups)


def make_plan(groups: list[tuple[int, int]]) -> Plan:
    """(np, ranks per node) per group -> Plan.  A group's ranks per node never exceed its np."""
    out = []
    base = 0
    for np, rpn in groups:
        if np <= 0 or rpn <= 0:
            raise UsageError(f"a group needs at least one rank and one rank per node (got {np}:{rpn})")
        nodes = -(-np // rpn)
        out.append((np, rpn, nodes, base))
        base += nodes
    return Plan(out, base, sum(g[0] for g in groups))


def plan_heaps(opts: Options, cores: int, avail: int | None,
               as_limit: int | None = None) -> tuple[Plan, list[int], list[int]]:
    """The job's plan and, per group, the ranks that share a node's memory and the heap per rank, as
    yod makes them: the pure part of its start-up (no ELF, launcher or shim lookups), which the
    evaluation also asks for the hugetlb pages a job needs. Ranks per node not given are `cores`;
    a node's memory is shared by all ranks when nodes are simulated on this host or the job is one
    node, else by one node's worth of each group; `avail` is the memory they may use and `as_limit`
    the ranks' `ulimit -v` (memory_bound). Raises UsageError for a plan yod would refuse."""
    for g in opts.groups:
        if g.rpn is None:
            g.rpn = cores
    plan = make_plan([(g.np, g.rpn) for g in opts.groups])
    one_host = opts.simulate_nodes or plan.nodes == 1
    sharing = [plan.ranks if one_host else min(g.np, g.rpn) for g in opts.groups]
    heaps = [heap_per_rank(opts, g.rpn, n, avail, as_heap_cap(as_limit, min(g.np, g.rpn)))
             for g, n in zip(opts.groups, sharing)]
    return plan, sharing, heaps


def heap_per_rank(opts: Options, rpn: int, sharing: int | None = None, avail: int | None = None,
                  as_cap: int | None = None) -> int:
    """--heap as given; else --heap-node divided evenly by the ranks per node, rounded down to
    whole 4 KiB pages; else the default: DEFAULT_HEAP_SHARE of `avail` (the memory the node's
    ranks may use: MemAvailable or a tighter cgroup or Slurm limit) divided by the `sharing` ranks
    that share it (rpn if None), at most `as_cap` (ulimit -v), rounded down to 2 MiB and clamped
    to [MIN_HEAP, DEFAULT_HEAP_CAP] (MIN_HEAP when avail is unknown)."""
    if opts.heap is not None:
        return opts.heap
    if opts.heap_node is not None:
        per = (opts.heap_node // rpn) & ~4095
        if per <= 0:
            raise UsageError(f"--heap-node {format_size(opts.heap_node)} divided by {rpn} ranks per node "
                             "leaves less than a 4 KiB page per rank; give a larger --heap-node")
        return per
    if avail is None:
        return MIN_HEAP
    per = int(avail * DEFAULT_HEAP_SHARE) // (sharing or rpn)
    if as_cap is not None:
        per = min(per, as_cap)
    return max(MIN_HEAP, min(DEFAULT_HEAP_CAP, per & ~((2 << 20) - 1)))


# --- SMARTMAP's address layout and its page tables ---------------------------------------------

def slot_shift(heap: int) -> int:
    """log2 of the slot of a heap: the smallest power of two >= heap, at least 2 MiB."""
    return max(MIN_SLOT_SHIFT, (heap - 1).bit_length())


def max_local_ranks(heap: int) -> int:
    """Local ranks the layout holds at this heap per rank (0: the heap is too large)."""
    if heap > MAX_HEAP:
        return 0
    return max(0, min(MAX_LOCAL_RANKS, ((LAYOUT_TOP - LAYOUT_BASE) >> slot_shift(heap)) - 1))


_GIB = 1 << 30
_PT_PAGE = 4096


def _pmd_pages(span: int) -> int:
    """4 KiB page-table pages of PMD entries (2 MiB mappings) covering `span` bytes."""
    return -(-span // _GIB)


def page_table_bytes(heap: int, n: int, kind: str, windows: str) -> int:
    """Estimated page tables at start for one node of n ranks of `heap` bytes on `kind` pages
    ("small", "thp", "huge") with windows filled `windows` ("eager", "lazy", "auto").  The model
    the scaling benchmark checks (python/bobcat/bench/scaling.py, docs/yod.md):
      * 4 KiB pages: 8 bytes per 4 KiB mapped, in every rank that maps it;
      * 2 MiB pages: one 4 KiB PMD page per GiB of address space mapped; windows are packed in
        slots, so small windows share one;
      * hugetlb windows of >= 1 GiB in 1 GiB-aligned slots: Linux shares the PMD pages of the whole
        GiBs among every rank mapping them (PMD sharing), so they count once per node;
      * lazy windows cost nothing at start (and at most the eager amount once fully touched)."""
    slot = 1 << slot_shift(heap)
    if kind == "small":
        own = heap // 512
        win = n * heap // 512
    else:
        own = _pmd_pages(heap) * _PT_PAGE
        win = _pmd_pages(n * slot if slot < _GIB else n * heap) * _PT_PAGE
    eager = windows == "eager" or (windows == "auto" and kind != "small")
    if not eager:
        return n * own
    if kind == "huge" and heap >= _GIB:
        whole = heap // _GIB
        shared = n * whole * _PT_PAGE                      # once per heap, node-wide
        partial = _pmd_pages(heap - whole * _GIB) * _PT_PAGE if heap % _GIB else 0
        return shared + n * (n + 1) * partial
    return n * own + n * win


def host_cores() -> int:
    """Cores (not hardware threads) in this process's allowed cpuset, from sysfs; cpu count if unknown."""
    cpus = os.sched_getaffinity(0)
    seen = set()
    for c in cpus:
        try:
            with open(f"/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list") as f:
                seen.add(f.read().strip())
        except OSError:
            return len(cpus)
    return len(seen) or len(cpus)


def mem_available() -> int | None:
    """MemAvailable of /proc/meminfo in bytes (None if the kernel does not say)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _read_int(path: str) -> int | None:
    """An integer file of the cgroup tree; None when missing, unreadable or "max"."""
    try:
        with open(path) as f:
            text = f.read().strip()
        return None if text == "max" else int(text)
    except (OSError, ValueError):
        return None


def cgroup_room(root: str = "") -> tuple[int, str] | None:
    """The memory this process's cgroup still allows, and which limit that is: the least, over
    its cgroup and every ancestor, of (memory.max or memory.high) - memory.current on cgroup v2,
    or memory.limit_in_bytes - memory.usage_in_bytes on v1's memory controller; None when no
    limit applies.  `root` prefixes the paths (tests)."""
    try:
        with open(f"{root}/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    v1 = next((l.split(":", 2)[2] for l in lines if l.count(":") >= 2 and "memory" in l.split(":")[1].split(",")),
              None)
    v2 = next((l.split(":", 2)[2] for l in lines if l.startswith("0::")), None)
    if v1 is not None:
        base, path, files = f"{root}/sys/fs/cgroup/memory", v1, (("memory.limit_in_bytes",), "memory.usage_in_bytes")
    elif v2 is not None:
        base, path, files = f"{root}/sys/fs/cgroup", v2, (("memory.max", "memory.high"), "memory.current")
        if not os.path.exists(f"{base}/cgroup.controllers") and os.path.exists(f"{base}/unified/cgroup.controllers"):
            base += "/unified"          # systemd's hybrid layout: v2 beside the v1 hierarchies
    else:
        return None
    best = None
    parts = [p for p in path.split("/") if p]
    for depth in range(len(parts), -1, -1):
        d = "/".join([base, *parts[:depth]])
        used = _read_int(f"{d}/{files[1]}") or 0
        for name in files[0]:
            limit = _read_int(f"{d}/{name}")
            # v1 writes "no limit" as the largest page-aligned signed 64-bit number
            if limit is None or limit >= 1 << 62:
                continue
            room = max(0, limit - used)
            if best is None or room < best[0]:
                rel = "/" + "/".join(parts[:depth])
                best = (room, f"the cgroup's {name} ({format_size(limit)} for {rel}, {format_size(used)} in use)")
    return best


AS_RESERVE = 1 << 30         # address space a rank needs beside its heap and windows (libraries, MPI)


def memory_bound(avail: int | None = None, root: str = "") -> tuple[int | None, str, int | None]:
    """What bounds the default heap on this host: (bytes of memory the node's ranks may use, which
    limit that is, in words, and the soft `ulimit -v` in bytes or None).  The memory is the least
    of MemAvailable, the job's cgroup (v2 memory.max/memory.high, v1's limit) and Slurm's
    SLURM_MEM_PER_NODE (or SLURM_MEM_PER_CPU times SLURM_CPUS_ON_NODE); `ulimit -v` bounds each rank's own address space instead (as_heap_cap)."""
    if avail is None:
        avail = mem_available()
    room, what = avail, "MemAvailable"
    cg = cgroup_room(root)
    if cg is not None and (room is None or cg[0] < room):
        room, what = cg
    slurm = os.environ.get("SLURM_MEM_PER_NODE", "")
    if slurm.isdigit() and int(slurm) > 0 and (room is None or int(slurm) << 20 < room):
        room, what = int(slurm) << 20, f"Slurm's SLURM_MEM_PER_NODE ({slurm} MiB)"
    # --mem-per-cpu: Slurm's per-CPU memory times the CPUs the job holds on this node
    per_cpu, cpus = os.environ.get("SLURM_MEM_PER_CPU", ""), os.environ.get("SLURM_CPUS_ON_NODE", "")
    if per_cpu.isdigit() and cpus.isdigit() and int(per_cpu) > 0 and int(cpus) > 0:
        mib = int(per_cpu) * int(cpus)
        if room is None or mib << 20 < room:
            room, what = mib << 20, f"Slurm's SLURM_MEM_PER_CPU x SLURM_CPUS_ON_NODE ({per_cpu} MiB x {cpus})"
    import resource
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    return room, what, None if soft == resource.RLIM_INFINITY else soft


def as_heap_cap(as_limit: int | None, sharing: int) -> int | None:
    """The largest heap a rank's address space holds under `ulimit -v`: the rank maps its own heap
    and a window onto each of the `sharing` heaps of its node, and keeps AS_RESERVE for the rest."""
    return None if as_limit is None else max(0, as_limit - AS_RESERVE) // (sharing + 1)


def hugetlb_free() -> int:
    """Bytes of free 2 MiB hugetlb pages (HugePages_Free): memory a heap on `auto` or `huge` pages
    takes from the pool, which MemAvailable does not count."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("HugePages_Free:"):
                    return int(line.split()[1]) * (2 << 20)
    except (OSError, ValueError, IndexError):
        pass
    return 0


def mem_total() -> int | None:
    """MemTotal of /proc/meminfo in bytes (None if unreadable)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def hostfile_hosts(path: str) -> list[str]:
    """Distinct host names of an Open MPI (`host slots=n`) or MPICH (`host:n`) hostfile, in order."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise UsageError(f"--hostfile {path}: cannot read it: {e.strerror}") from None
    hosts: list[str] = []
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line:
            h = line.split()[0].split(":", 1)[0]
            if h not in hosts:
                hosts.append(h)
    if not hosts:
        raise UsageError(f"--hostfile {path}: names no host")
    return hosts
