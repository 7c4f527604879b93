"""yod's input side: command line, load files, the plan, sizes, and the bad-input matrix.

The bad-input cases run the real yod with fake launchers first on PATH: each would leave a mark
if started, so "exit 2 and nothing launched" is checked, not assumed.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bobcat.launcher import plan as yod_plan
from bobcat.launcher.plan import UsageError, heap_per_rank, make_plan, parse_args, parse_loadfile, parse_size

CORES = yod_plan.host_cores()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for k in list(os.environ):
        if k.startswith("BOBCAT_") and k != "BOBCAT_HOME" or k == "YOD_TIME_LIMIT":
            monkeypatch.delenv(k)


# --- plan ----------------------------------------------------------------------------------------

def test_plan_heterogeneous_matches_contract_example():
    p = make_plan([(8, 4), (3, 1)])
    assert p.env == "8:4;3:1"
    assert (p.nodes, p.ranks) == (5, 11)
    assert [p.node_of(w) for w in range(11)] == [
        (0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1), (1, 2), (1, 3), (2, 0), (3, 0), (4, 0)]


def test_plan_last_node_may_hold_fewer():
    p = make_plan([(3, 2)])
    assert (p.nodes, p.env) == (2, "3:2")
    assert p.node_of(2) == (1, 0)
    assert p.max_rpn() == 2
    assert make_plan([(1, 4)]).max_rpn() == 1


def test_plan_rejects_empty_groups():
    with pytest.raises(UsageError):
        make_plan([(0, 2)])


def test_heap_rules():
    o = parse_args(["-np", "2", "/bin/true"])
    # Default: half of MemAvailable, divided among the ranks sharing the node, in [128M, 1G].
    assert heap_per_rank(o, 2, avail=8 << 30) == 1 << 30                 # 2 GiB each: capped
    assert heap_per_rank(o, 8, avail=8 << 30) == 512 << 20
    assert heap_per_rank(o, 8, sharing=16, avail=8 << 30) == 256 << 20  # simulated nodes share the host
    assert heap_per_rank(o, 3, avail=3 << 30) == (512 << 20)             # rounded down to 2 MiB
    assert heap_per_rank(o, 5, avail=3 << 30) % (2 << 20) == 0
    assert heap_per_rank(o, 64, avail=8 << 30) == 128 << 20              # never below the minimum
    assert heap_per_rank(o, 2) == 128 << 20                              # MemAvailable unknown
    o = parse_args(["--heap-node", "1G", "-np", "2", "/bin/true"])
    assert heap_per_rank(o, 2) == 512 << 20
    assert heap_per_rank(o, 3) % 4096 == 0 and heap_per_rank(o, 3) <= (1 << 30) // 3
    o = parse_args(["--heap", "64M", "-np", "2", "/bin/true"])
    assert heap_per_rank(o, 4) == 64 << 20
    o = parse_args(["--heap-node=2G", "-np", "2", "/bin/true"])
    assert heap_per_rank(o, 4) == 512 << 20


@pytest.mark.parametrize("text,value", [("4096", 4096), ("4k", 4096), ("2M", 2 << 20), ("1G", 1 << 30),
                                        ("512MiB", 512 << 20), ("1g", 1 << 30)])
def test_sizes(text, value):
    assert parse_size(text, "--heap") == value


@pytest.mark.parametrize("text", ["0", "x", "-1", "1.5G", "k", "", "4q"])
def test_bad_sizes(text):
    with pytest.raises(UsageError, match="--heap"):
        parse_size(text, "--heap")


def test_modes_and_options():
    o = parse_args(["-VN", "3", "-np", "5", "--pages", "thp", "-tlimit", "7", "--mpi", "mpich",
                    "--launcher-arg", "-v", "--launcher-arg=-x", "/bin/echo", "-np", "hi"])
    g = o.groups[0]
    assert (g.np, g.rpn, g.program, g.args) == (5, 3, "/bin/echo", ["-np", "hi"])
    assert (o.pages, o.tlimit, o.mpi, o.launcher_args) == ("thp", 7.0, "mpich", ["-v", "-x"])
    assert parse_args(["-SN", "-np", "1", "true"]).groups[0].rpn == 1
    assert parse_args(["-VN4", "-np", "1", "true"]).groups[0].rpn == 4
    assert parse_args(["-np", "1", "true"]).groups[0].rpn is None      # default: cores of this node
    assert parse_args(["-small_pages", "-np", "1", "true"]).pages == "small"


def test_time_limit_from_environment(monkeypatch):
    monkeypatch.setenv("YOD_TIME_LIMIT", "2.5")
    assert parse_args(["-np", "1", "true"]).tlimit == 2.5
    assert parse_args(["-tlimit", "9", "-np", "1", "true"]).tlimit == 9


# --- load files ----------------------------------------------------------------------------------

def _loadfile(tmp_path, text):
    p = tmp_path / "job.load"
    p.write_text(text)
    return str(p)


def test_loadfile_groups_comments_and_default_mode(tmp_path):
    f = _loadfile(tmp_path, "# a heterogeneous job\n\n-np 4 -VN2 /bin/echo 'a b' c  # trailing\n"
                            "-np 3 -SN /bin/true\n-np 2 true\n")
    gs = parse_loadfile(f, 4)
    assert [(g.np, g.rpn, g.program, g.args) for g in gs] == [
        (4, 2, "/bin/echo", ["a b", "c"]), (3, 1, "/bin/true", []), (2, 4, "/usr/bin/true", [])]
    assert gs[1].where == f"{f}:4"
    o = parse_args(["-F", f])
    assert len(o.groups) == 3 and o.groups[2].rpn is None


@pytest.mark.parametrize("text,line,what", [
    ("-np 2 /bin/true\n-np x /bin/true\n", 2, "positive whole number"),
    ("\n# c\n-VN2 /bin/true\n", 3, "missing -np"),
    ("-np 2 -VX /bin/true\n", 1, "unknown option -VX"),
    ("-np 2 -SN\n", 1, "no program"),
    ("-np 2\n-np 1 /no/such/program\n", 1, "no program"),
    ("-np 1 /bin/true\n-np 1 /no/such/program\n", 2, "does not exist"),
    ("-np 1 /bin/true 'unbalanced\n", 1, "quot"),
    ("-np 1 -SN -VN2 /bin/true\n", 1, "two modes"),
    ("-np 0 /bin/true\n", 1, "positive"),
    ("".join("-np 1 /bin/true\n" for _ in range(33)), 33, "at most 32"),
])
def test_loadfile_errors_name_the_line(tmp_path, text, line, what):
    f = _loadfile(tmp_path, text)
    with pytest.raises(UsageError) as e:
        parse_loadfile(f, None)
    assert f"{f}:{line}:" in str(e.value)
    assert what in str(e.value)


def test_loadfile_32_lines_is_the_limit(tmp_path):
    assert len(parse_loadfile(_loadfile(tmp_path, "-np 1 /bin/true\n" * 32), None)) == 32


# --- the bad-input matrix, through the real yod ----------------------------------------------------

@pytest.fixture
def fake_env(tmp_path):
    """PATH with fake launchers that leave a mark; a marked program; a non-executable file."""
    fake = tmp_path / "fakebin"
    fake.mkdir()
    mark = tmp_path / "launched"
    for name in ("mpiexec.mpich", "mpirun.openmpi", "srun"):
        p = fake / name
        p.write_text(f"#!/bin/sh\ntouch {mark}\n")
        p.chmod(0o755)
    prog = tmp_path / "prog.sh"
    prog.write_text(f"#!/bin/sh\ntouch {mark}\n")
    prog.chmod(0o755)
    (tmp_path / "noexec").write_text("#!/bin/sh\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOBCAT_") or k == "BOBCAT_HOME"}
    env.pop("YOD_TIME_LIMIT", None)
    env.pop("SLURM_JOB_ID", None)
    env["PATH"] = f"{fake}:{env['PATH']}"
    return {"env": env, "mark": mark, "prog": str(prog), "tmp": tmp_path}


def _yod(args, env, **kw):
    return subprocess.run([sys.executable, "-m", "bobcat.launcher.yod", *args], env=env, capture_output=True,
                          text=True, timeout=60, **kw)


BAD = [
    (["-np", "0", "{prog}"], "-np '0'"),
    (["-np", "-2", "{prog}"], "-np '-2'"),
    (["-np", "two", "{prog}"], "not a positive whole number"),
    (["-np", "1.5", "{prog}"], "not a positive whole number"),
    (["-np", "2", "-VN0", "{prog}"], "-VN"),
    (["-VX", "-np", "2", "{prog}"], "unknown option -VX"),
    (["-np", "2", "-VN"], "-VN needs"),
    (["-SN", "-VN2", "-np", "2", "{prog}"], "two modes"),
    (["-np", "2"], "no program"),
    ([], "no program"),
    (["{prog}"], "-np <ranks> is required"),
    (["-np", "1", "{tmp}/missing"], "does not exist"),
    (["-np", "1", "{tmp}/noexec"], "not executable"),
    (["-np", "1", "no-such-program-yod"], "not found on PATH"),
    (["--heap", "12Q", "-np", "1", "{prog}"], "--heap '12Q' is not a size"),
    (["--heap-node", "0", "-np", "1", "{prog}"], "--heap-node '0'"),
    (["--heap", "1G", "--heap-node", "2G", "-np", "1", "{prog}"], "not both"),
    (["--heap", "64T", "-np", "1", "{prog}"], "lower --heap"),
    (["--pages", "giant", "-np", "1", "{prog}"], "--pages 'giant'"),
    (["--windows", "sometimes", "-np", "1", "{prog}"], "--windows 'sometimes'"),
    (["--mpi", "lam", "-np", "1", "{prog}"], "--mpi 'lam'"),
    (["-tlimit", "-1", "-np", "1", "{prog}"], "-tlimit '-1'"),
    (["-tlimit", "soon", "-np", "1", "{prog}"], "-tlimit 'soon'"),
    (["--bogus", "-np", "1", "{prog}"], "unknown option --bogus"),
    (["-SN", "-np", "3", "{prog}"], "needs 3 nodes"),
    ([f"-VN{CORES + 1}", "-np", str(CORES + 1), "{prog}"], "--oversubscribe"),
    (["--simulate-nodes", "-SN", "-np", str(CORES + 1), "{prog}"], "on this host"),
    (["--simulate-nodes", "--hostfile", "{tmp}/hosts", "-np", "1", "{prog}"], "drop --hostfile"),
    (["--hostfile", "{tmp}/nohosts", "-np", "1", "{prog}"], "cannot read"),
    (["-F", "{tmp}/nofile"], "cannot read the load file"),
    (["-F", "{tmp}/hosts", "-np", "2"], "-np cannot be combined with -F"),
]


@pytest.mark.parametrize("args,message", BAD, ids=[" ".join(a) or "empty" for a, _ in BAD])
def test_bad_input_exits_2_and_launches_nothing(fake_env, args, message):
    (fake_env["tmp"] / "hosts").write_text("localhost\n")
    argv = [a.format(**fake_env) for a in args]
    r = _yod(argv, fake_env["env"])
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert r.stderr.startswith("yod: ")
    assert r.stdout == ""
    assert not fake_env["mark"].exists()


def test_bad_time_limit_in_environment(fake_env):
    env = dict(fake_env["env"], YOD_TIME_LIMIT="never")
    r = _yod(["-np", "1", fake_env["prog"]], env)
    assert r.returncode == 2 and "YOD_TIME_LIMIT 'never'" in r.stderr
    assert not fake_env["mark"].exists()


def test_missing_shim_and_library_are_named(fake_env):
    home = fake_env["tmp"] / "home"
    env = dict(fake_env["env"], BOBCAT_HOME=str(home))
    r = _yod(["-np", "1", fake_env["prog"]], env)
    assert r.returncode == 2 and "bobcat-rank" in r.stderr
    (home / "libexec" / "bobcat").mkdir(parents=True)
    (home / "libexec" / "bobcat" / "bobcat-rank").symlink_to("/bin/true")
    r = _yod(["-np", "1", fake_env["prog"]], env)
    assert r.returncode == 2 and "libbobcat.so is missing" in r.stderr
    (home / "lib").mkdir()
    (home / "lib" / "libbobcat.so").write_bytes(b"")
    r = _yod(["--mpi", "openmpi", "-np", "1", fake_env["prog"]], env)
    assert r.returncode == 2 and "libbobcat-openmpi.so is missing" in r.stderr
    assert not fake_env["mark"].exists()


def test_help_and_version():
    r = _yod(["--help"], os.environ)
    assert r.returncode == 0 and "-VN <n>" in r.stdout and "--heap-node" in r.stdout
    r = _yod(["--version"], os.environ)
    assert r.returncode == 0 and r.stdout.startswith("yod (bobcat) ")


def test_dry_run_prints_plan_and_command(fake_env):
    f = fake_env["tmp"] / "job.load"
    f.write_text(f"-np 3 -VN2 {fake_env['prog']} x\n-np 2 -SN /bin/true\n")
    r = _yod(["-F", str(f), "--heap-node", "1G", "--simulate-nodes", "--oversubscribe", "--no-preload", "--mpi", "openmpi",
              "--launcher-arg=--report-bindings", "--dry-run"], fake_env["env"])
    assert r.returncode == 0, r.stderr
    assert "BOBCAT_PLAN=3:2;2:1" in r.stdout
    cmd = r.stdout.splitlines()[-1]
    assert "mpirun.openmpi --bind-to none --oversubscribe" in cmd
    assert "--report-bindings" in cmd and " : -np 2 " in cmd
    assert "-x BOBCAT_HEAP" not in cmd                     # heaps differ per group: set by the shim
    assert "--setenv BOBCAT_HEAP=536870912" in cmd and "--setenv BOBCAT_HEAP=1073741824" in cmd
    assert not fake_env["mark"].exists()


def test_dry_run_hostfile_places_groups(fake_env):
    hf = fake_env["tmp"] / "hosts"
    hf.write_text("# two nodes\nn1 slots=2\nn2:2\nn3\n")
    r = _yod(["--hostfile", str(hf), "-VN2", "-np", "3", "--no-preload", "--mpi", "mpich",
              "--dry-run", "/bin/true"], fake_env["env"])
    assert r.returncode == 0, r.stderr
    cmd = r.stdout.splitlines()[-1]
    assert "-hosts n1:2,n2:1" in cmd and " -f " not in cmd          # Hydra takes one or the other
    r = _yod(["--hostfile", str(hf), "-SN", "-np", "4", "--no-preload", "/bin/true"], fake_env["env"])
    assert r.returncode == 2 and "3 (hosts in" in r.stderr


@pytest.mark.parametrize("extra, binds", [
    ([], True),                                             # one real node: mpirun binds
    (["--simulate-nodes", "-SN"], False),                   # simulated nodes: libbobcat binds
    (["--oversubscribe", "-VN4"], False),                   # more ranks than cores: nobody binds
    (["--no-preload"], False),                              # without libbobcat: nobody binds
])
def test_dry_run_lets_open_mpi_bind_only_where_its_mapping_is_ours(extra, binds):
    from bobcat.launcher.plan import host_cores
    if host_cores() < 2:
        pytest.skip("needs two cores")
    np = "4" if "-VN4" in extra else "2"
    r = _yod(["--mpi", "openmpi", "-np", np, "--heap", "128M", *extra, "--dry-run", "/bin/true"],
             os.environ)
    assert r.returncode == 0, r.stderr
    cmd = r.stdout.splitlines()[-1]
    if binds:
        assert "--map-by core --bind-to core" in cmd and "--bind-to none" not in cmd
    else:
        assert "--bind-to none" in cmd and "--bind-to core" not in cmd


# --- SMARTMAP's layout: the rule, the bound, the page-table estimate --------------------------------

@pytest.mark.parametrize("heap,shift,ranks", [
    (128 << 20, 27, 1024), ((128 << 20) + 4096, 28, 1024), (1, 21, 1024), (1 << 30, 30, 1024),
    (3 << 30, 32, 1024), (32 << 30, 35, 1024), (64 << 30, 36, 1022), (448 << 30, 39, 126),
    (16 << 40, 44, 2), ((16 << 40) + 1, 45, 0)])
def test_layout_rule_matches_libbobcat(heap, shift, ranks):
    # The same table as tests/unit/test_unit.c checks against smap_layout_shift/max_ranks.
    assert yod_plan.slot_shift(heap) == shift
    assert yod_plan.max_local_ranks(heap) == ranks


def test_page_table_model():
    pt = yod_plan.page_table_bytes
    m = 128 << 20
    assert pt(m, 8, "small", "eager") == 8 * (m // 512) + 64 * (m // 512)   # n own + n^2 windows
    assert pt(m, 8, "small", "auto") == pt(m, 8, "small", "lazy") == 8 * (m // 512)
    assert pt(m, 8, "thp", "auto") == 8 * 4096 + 8 * 4096                   # 8 windows share a PMD page
    big = 4 << 30                                                             # hugetlb PMD sharing
    assert pt(big, 128, "huge", "auto") == 128 * 4 * 4096
    assert pt(big, 128, "thp", "auto") == 128 * 4 * 4096 + 128 * 128 * 4 * 4096


def test_bound_checked_before_launch_and_before_memory(fake_env):
    # 1025 ranks of the 128 MiB minimum need 128 GiB, more than this host has: the bound must
    # still be what yod reports, since more memory would not help.
    r = _yod(["--oversubscribe", "-VN1025", "-np", "1025", "--heap", "128M", "--dry-run", fake_env["prog"]],
             fake_env["env"])
    assert r.returncode == 2, r.stderr
    assert "at most 1024 per node" in r.stderr and "SMAP_MAX_LOCAL_RANKS" in r.stderr
    assert "-VN" in r.stderr and "--heap" in r.stderr
    assert "MemAvailable" not in r.stderr
    assert not fake_env["mark"].exists()
    r = _yod(["--oversubscribe", "-VN1023", "-np", "1023", "--heap", "64G", fake_env["prog"]], fake_env["env"])
    assert r.returncode == 2 and "at most 1022 per node with a heap of 64 GiB" in r.stderr, r.stderr
    assert not fake_env["mark"].exists()


def test_dry_run_shows_layout_and_warns_on_page_tables(fake_env):
    r = _yod(["--oversubscribe", "-VN40", "-np", "40", "--heap", "128M", "--pages", "small",
              "--windows", "eager", "--mpi", "mpich", "--dry-run", fake_env["prog"]], fake_env["env"])
    if r.returncode == 2 and "MemAvailable" in r.stderr:
        pytest.skip("this host has not 5 GiB free for the plan")
    assert r.returncode == 0, r.stderr
    assert "layout: slot 128 MiB (2^27)" in r.stdout and "at most 1024 ranks per node" in r.stdout
    assert "windows: eager" in r.stdout and "page tables at start" in r.stdout
    assert "warning: the windows' page tables" in r.stderr and "--windows lazy" in r.stderr
    assert "BOBCAT_WINDOWS" in r.stderr
    r = _yod(["--oversubscribe", "-VN40", "-np", "40", "--heap", "128M", "--pages", "small",
              "--mpi", "mpich", "--dry-run", fake_env["prog"]], fake_env["env"])
    assert r.returncode == 0 and "windows: auto" in r.stdout and "warning" not in r.stderr, r.stderr
    assert not fake_env["mark"].exists()


def test_dry_run_says_how_the_default_heap_was_chosen(fake_env):
    r = _yod(["-VN2", "-np", "2", "--mpi", "mpich", "--dry-run", fake_env["prog"]], fake_env["env"])
    assert r.returncode == 0, r.stderr
    assert "heap: default, half of MemAvailable" in r.stdout and "divided among 2 ranks" in r.stdout
    heap = int(r.stdout.split("BOBCAT_HEAP=")[1].split()[0]) if "BOBCAT_HEAP=" in r.stdout else None
    r = _yod(["-VN2", "-np", "2", "--heap", "200M", "--mpi", "mpich", "--dry-run", fake_env["prog"]],
             fake_env["env"])
    assert r.returncode == 0 and "heap: default" not in r.stdout and "heap 200 MiB per rank" in r.stdout
    assert heap is None or (128 << 20) <= heap <= (1 << 30)
    assert not fake_env["mark"].exists()
