"""Campaign files: validation with named keys/lines, interleaved expansion, stored-spec round trip."""
import time

import pytest

from bobcat.evaluation import campaign, configs

GOOD = """
[campaign]
name = "t"
repetitions = 2
configs = ["linux-shm", "linux-nic"]
modes = ["VN2", "SN"]
mpis = ["openmpi", "mpich"]

[[bench]]
name = "imb"
args = ["--time", "0.01"]
points = [["--test", "pingpong"], ["--test", "barrier"]]

[[bench]]
name = "hpcc"
params = { N = 800 }
mpis = ["openmpi"]
modes = ["VN2"]
"""


pytestmark = pytest.mark.usefixtures("no_bobcat_knobs")


@pytest.fixture
def cs():
    return configs.load()


def load(tmp_path, text, cs):
    p = tmp_path / "c.toml"
    p.write_text(text)
    return campaign.load(p, cs)


def test_expansion_interleaves_configurations_within_each_repetition(tmp_path, cs):
    c = load(tmp_path, GOOD, cs)
    pts = campaign.expand(c)
    # imb: 2 reps x 2 points x 2 configs x 2 modes x 2 mpis; hpcc: 2 reps x 2 configs
    assert len(pts) == 2 * 2 * 8 + 2 * 2
    assert [p.seq for p in pts] == list(range(len(pts)))
    first = [(p.spec.config, p.spec.mode, p.spec.mpi) for p in pts[:8]]
    assert all(p.spec.args == ["--time", "0.01", "--test", "pingpong"] for p in pts[:8])
    assert first == [(cfg, m, mpi) for cfg in ("linux-shm", "linux-nic") for m in ("VN2", "SN")
                     for mpi in ("openmpi", "mpich")]
    # repetition is the outermost loop: every variant of every point before repetition 2
    reps = [p.repetition for p in pts]
    assert reps == sorted(reps) and reps.count(0) == reps.count(1)
    hpcc = [p for p in pts if p.spec.benchmark == "hpcc"]
    assert [p.spec.config for p in hpcc] == ["linux-shm", "linux-nic"] * 2
    assert all(p.spec.params == {"N": 800} and p.spec.mpi == "openmpi" for p in hpcc)


def test_sizes_make_points(tmp_path, cs):
    text = GOOD.replace('points = [["--test", "pingpong"], ["--test", "barrier"]]',
                        'points = [["--test", "pingpong"]]\nsizes = [8, 1024]')
    pts = [p for p in campaign.expand(load(tmp_path, text, cs)) if p.spec.benchmark == "imb"]
    assert {tuple(p.spec.args[-2:]) for p in pts} == {("--sizes", "8"), ("--sizes", "1024")}


def test_stored_spec_round_trips(tmp_path, cs):
    c = load(tmp_path, GOOD, cs)
    again = campaign.from_spec(c.to_spec(), cs)
    assert [(p.seq, p.spec) for p in campaign.expand(again)] == \
        [(p.seq, p.spec) for p in campaign.expand(c)]


def test_unavailable_combinations_are_skipped_with_reason(tmp_path, cs):
    text = GOOD.replace('mpis = ["openmpi"]\nmodes = ["VN2"]', 'modes = ["VN2"]')
    runnable, skipped = campaign.plan(load(tmp_path, text, cs), cs)
    hp = [s for s in skipped if s.benchmark == "hpcc" and s.mpi == "mpich"]
    assert hp and "only with mpi=openmpi" in hp[0].reason and hp[0].runs == 2
    assert all(not (p.spec.benchmark == "hpcc" and p.spec.mpi == "mpich") for p in runnable)


@pytest.mark.parametrize("edit, message", [
    (("[campaign]\n", "[campaign\n"), "line 2"),
    (('repetitions = 2', 'repetitions = 0'), "[campaign] repetitions"),
    (('repetitions = 2', 'repetition = 2'), "unknown key(s) repetition"),
    (('configs = ["linux-shm", "linux-nic"]', 'configs = ["linux-shm", "bogus"]'),
     "unknown configuration 'bogus'"),
    (('modes = ["VN2", "SN"]', 'modes = ["VN3"]'), "unknown mode 'VN3'"),
    (('name = "imb"', 'name = "imbx"'), "[[bench]] #1 name: unknown benchmark 'imbx'"),
    (('params = { N = 800 }', 'params = { N = 800, Q = 4 }'), "[[bench]] #2 (hpcc) params"),
    (('points = [["--test", "pingpong"], ["--test", "barrier"]]', 'points = "pingpong"'),
     "[[bench]] #1 (imb) points"),
])
def test_errors_name_the_line_or_key(tmp_path, cs, edit, message):
    with pytest.raises(campaign.CampaignError) as e:
        load(tmp_path, GOOD.replace(*edit), cs)
    assert message in str(e.value) and "c.toml" in str(e.value)


def test_builtin_campaigns_are_valid(cs):
    for name in campaign.BUILTIN:
        c = campaign.load(campaign.resolve(name), cs)
        assert c.name == name and campaign.expand(c)


def test_user_configuration_file(tmp_path):
    f = tmp_path / "mine.toml"
    f.write_text('[configs.ompi-sm-eager]\ndescription = "x"\nmpis = ["openmpi"]\n'
                 '[configs.ompi-sm-eager.openmpi]\nlauncher_args = ["--mca", "btl_vader_eager_limit", "8192"]\n')
    cs = configs.load(f)
    c = cs.get("ompi-sm-eager")
    assert c.mpis == ("openmpi",) and "linux-shm" in cs.configs
    launch = configs.build(cs, c, "openmpi", "SN", 2, ["/bin/true"])
    # SN adds the network transport after the configuration's own arguments
    assert launch.argv[-4:] == ["--mca", "btl", "tcp,self", "/bin/true"]
    assert launch.argv.index("btl_vader_eager_limit") < launch.argv.index("btl")
    assert launch.detail["transport"].startswith("network stack (simulated nodes")
    f.write_text('[configs.x]\nvia_yod = "yes"\n')
    with pytest.raises(configs.ConfigError, match=r"\[configs.x\].via_yod"):
        configs.load(f)
    f.write_text('[configs.x\n')
    with pytest.raises(configs.ConfigError, match="line 1"):
        configs.load(f)


def test_network_settings_replace_not_duplicate(cs):
    shm = configs.build(cs, cs.get("linux-nic"), "openmpi", "SN", 2, ["/bin/true"])
    assert shm.argv.count("btl") == 1
    mp = configs.build(cs, cs.get("linux-shm-nocma"), "mpich", "SN", 2, ["/bin/true"])
    assert mp.env["UCX_TLS"] == "tcp,self" and mp.env["MPIR_CVAR_NOLOCAL"] == "1"
    vn = configs.build(cs, cs.get("linux-shm-nocma"), "mpich", "VN2", 2, ["/bin/true"])
    assert vn.env["UCX_TLS"] == "sysv,posix,self" and "MPIR_CVAR_NOLOCAL" not in vn.env
    assert vn.detail["transport"] == "shared memory"


# --- runner.execute: how a run's job ends -----------------------------------------------------------

def test_execute_returns_output_and_exit_code():
    from bobcat.evaluation import runner
    c = runner.execute(["sh", "-c", "echo out; echo err >&2; exit 3"], None, None, 30)
    assert (c.returncode, c.stdout, c.stderr, c.ended_after_done) == (3, "out\n", "err\n", False)


def test_execute_ends_a_job_that_hangs_after_its_done_line(monkeypatch):
    """MPICH 4.0's MPI_Finalize hang, played by a shell: the done line, then no exit."""
    from bobcat.evaluation import runner
    monkeypatch.setattr(runner, "DONE_GRACE_S", 0.5)
    script = 'echo \'{"bench": "x", "done": true, "valid": true}\'; sleep 60'
    t0 = time.monotonic()
    c = runner.execute(["sh", "-c", script], None, None, 30, stop_after_done=True)
    assert time.monotonic() - t0 < 10
    assert c.ended_after_done and c.returncode is None
    assert '"done": true' in c.stdout
    # Without stop_after_done the same job runs into its timeout instead.
    c = runner.execute(["sh", "-c", script], None, None, 1.0)
    assert c.returncode is None and not c.ended_after_done


def test_execute_leaves_a_job_that_exits_soon_after_its_done_line(monkeypatch):
    from bobcat.evaluation import runner
    monkeypatch.setattr(runner, "DONE_GRACE_S", 5.0)
    c = runner.execute(["sh", "-c", 'echo \'{"done": true}\'; sleep 0.3; echo late >&2; exit 0'],
                       None, None, 30, stop_after_done=True)
    assert (c.returncode, c.ended_after_done, c.stderr) == (0, False, "late\n")
