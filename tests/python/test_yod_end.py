"""How yod reports a job's end when the MPI launcher ends it (issue 13), on both real MPIs.

Hydra kills every process of the job on MPI_Abort, the rank shims included, so no rank reports its
end; yod must still tell "the job started and was ended" (exit 1, naming the aborting rank and its
code) from "the job never started" (exit 3).  Each test checks the exit status and the message
docs/yod.md promises, and that nothing of the job is left behind (test_yod_run's Run/yod helpers).
"""
import glob
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from test_yod_run import MPICC, MPIS, Run, _wait_for, progs, yod  # noqa: F401 (progs: fixture)

END_PROG = r"""
/* test program: argv = <rank> <action> [code]; every rank prints that it is up and meets the
 * others, then the rank named does the action while the others wait to be ended. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int r, n;
    MPI_Comm half;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_split(MPI_COMM_WORLD, r, 0, &half);   /* each rank alone: its rank there is 0 */
    printf("rank %d up\n", r);
    fflush(stdout);
    /* The same fact in a file: an abort may end Hydra's proxies before they relay stdout. */
    char up[4096];
    snprintf(up, sizeof up, "%s.up.%d", argv[0], r);
    FILE *f = fopen(up, "w");
    if (f) fclose(f);
    MPI_Barrier(MPI_COMM_WORLD);
    if (atoi(argv[1]) == r) {
        int code = argc > 3 ? atoi(argv[3]) : 1;
        if (strcmp(argv[2], "abort") == 0) MPI_Abort(MPI_COMM_WORLD, code);
        if (strcmp(argv[2], "subabort") == 0) MPI_Abort(half, code);
        if (strcmp(argv[2], "quietabort") == 0) { close(2); MPI_Abort(MPI_COMM_WORLD, code); }
        if (strcmp(argv[2], "badsend") == 0) MPI_Send(&r, 1, MPI_INT, n + 5, 0, MPI_COMM_WORLD);
    }
    sleep(120);
    MPI_Finalize();
    return 0;
}
"""


@pytest.fixture(scope="module")
def endprog(tmp_path_factory):
    d = tmp_path_factory.mktemp("endprog")
    src = d / "endprog.c"
    src.write_text(END_PROG)
    out = {}
    for mpi, cc in MPICC.items():
        exe = d / f"endprog.{mpi}"
        subprocess.run([cc, "-o", str(exe), str(src)], check=True)
        out[mpi] = str(exe)
    return out


def _yod_line(err: str) -> str:
    """yod's verdict: its last line (the --verbose plan lines come first)."""
    return [l for l in err.splitlines() if l.startswith("yod: ")][-1]


def _assert_aborted(r, mpi: str, rank: int, code: int, preload: bool = False) -> None:
    """Exit 1 and a line naming the aborting rank and its code.  Both MPIs sometimes lose their own
    abort message (Hydra's proxy exits before relaying the rank's last stderr; Open MPI's show_help
    fails to unpack it: 2 of 30 and 5 of 20 bare runs here), so without libbobcat (`preload`) each
    MPI has a second form: Open MPI's aborting rank still exits with the code and its shim says so;
    under Hydra no shim reports and yod says the launcher ended the job, with Hydra's status, which
    is the abort's code. With libbobcat, its MPI_Abort's word in the job's directory names the rank."""
    assert r.rc == 1, r.err
    line = _yod_line(r.err)
    prog = rf"rank {rank} \(endprog\.{mpi}\)"
    if mpi == "mpich":
        forms = [rf"yod: {prog} called MPI_Abort with code {code}; mpiexec\.mpich ended the other rank"]
        if not preload:
            forms.append(rf"yod: mpiexec\.mpich ended the job \(status {code}\) after the ranks started; "
                         r"ranks 0-1 ended without a report \(killed\?\)")
    else:
        forms = [rf"yod: {prog} {'called MPI_Abort with' if preload else '(called MPI_Abort with|exited with)'} "
                 rf"code {code}; 1 other rank stopped"]
    assert any(re.fullmatch(f, line) for f in forms), r.err
    assert "before any rank ran" not in r.err


# --- the job started, then the MPI ended it: exit 1 ---------------------------------------------

@pytest.mark.parametrize("rank,code", [(0, 7), (1, 9)])
@pytest.mark.parametrize("mpi", MPIS)
def test_mpi_abort_names_the_rank_and_its_code(endprog, mpi, rank, code):
    """The issue's case, with libbobcat preloaded: both ranks ran, then one called MPI_Abort."""
    for f in glob.glob(endprog[mpi] + ".up.*"):
        os.unlink(f)
    r = yod(["-VN2", "-np", "2", "--heap", "128M", endprog[mpi], str(rank), "abort", str(code)])
    # Both ranks ran (their marker files; their stdout lines may be lost with the abort under load:
    # Hydra's proxies can end before relaying them).
    assert sorted(glob.glob(endprog[mpi] + ".up.*")) == [endprog[mpi] + ".up.0", endprog[mpi] + ".up.1"]
    _assert_aborted(r, mpi, rank, code, preload=True)


@pytest.mark.parametrize("mpi", MPIS)
def test_mpi_abort_named_when_its_message_is_lost(endprog, mpi, tmp_path):
    """The aborting rank closed its stderr, so MPICH's own abort message (printed by the rank) is
    lost, as when Hydra kills the rank's proxy before relaying it: libbobcat's MPI_Abort left the
    rank's word in the job's directory (BOBCAT_END_DIR), and yod names the rank from it. Open MPI's
    message comes from mpirun and says the same. The directory is gone after the job."""
    r = yod(["-VN2", "-np", "2", "--heap", "128M", endprog[mpi], "1", "quietabort", "6"],
            env={"TMPDIR": str(tmp_path)})
    assert r.rc == 1, r.err
    assert re.match(rf"yod: rank 1 \(endprog\.{mpi}\) called MPI_Abort with code 6(;|$)", _yod_line(r.err)), r.err
    assert not glob.glob(str(tmp_path / "yod-end-*"))


@pytest.mark.parametrize("mpi", MPIS)
def test_mpi_abort_on_a_sub_communicator_names_the_world_rank(endprog, mpi):
    """Open MPI names the rank within the aborting communicator (0 here); yod names the world rank."""
    r = yod(["-np", "2", "--no-preload", endprog[mpi], "1", "subabort", "5"])
    _assert_aborted(r, mpi, 1, 5)


@pytest.mark.parametrize("mpi", MPIS)
def test_fatal_mpi_error_is_a_job_failure(endprog, mpi):
    r = yod(["-np", "2", "--no-preload", endprog[mpi], "1", "badsend"])
    assert r.rc == 1, r.err
    # MPICH's own abort message names the error (when Hydra relays it); Open MPI's rank exits
    # with a code and its shim says so.
    forms = ([r"yod: rank 1 \(endprog\.mpich\) hit a fatal MPI error \(Fatal error in \w+: Invalid rank\); "
              r"mpiexec\.mpich ended the other rank",
              r"yod: mpiexec\.mpich ended the job \(status \d+\) after the ranks started; ranks 0-1 "
              r"ended without a report \(killed\?\)"] if mpi == "mpich" else
             [r"yod: rank 1 \(endprog\.openmpi\) exited with code \d+; 1 other rank stopped"])
    assert any(re.fullmatch(f, _yod_line(r.err)) for f in forms), r.err


@pytest.mark.parametrize("mpi", MPIS)
def test_launcher_ends_the_job_after_a_shim_is_killed(progs, mpi, tmp_path):
    """kill -9 of a rank's shim: its program dies with it (PR_SET_PDEATHSIG), nothing reports rank
    1's end, and the launcher ends the rest (Hydra kills the other shims too, Open MPI SIGTERMs
    them and they report)."""
    run = Run(["-np", "2", "--no-preload", progs[mpi], "1", "sleep", str(tmp_path)])
    pid = _wait_for(tmp_path / "pid.1")
    _wait_for(tmp_path / "pid.0")
    shim = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    os.kill(shim, signal.SIGKILL)
    run.wait(30)
    assert run.rc == 1, run.err
    launcher, missing, others = (("mpiexec.mpich", "ranks 0-1", "") if mpi == "mpich" else
                                 ("mpirun.openmpi", "rank 1", "; 1 other rank stopped"))
    assert re.fullmatch(rf"yod: {re.escape(launcher)} ended the job \(status \d+\) after the ranks "
                        rf"started; {missing} ended without a report \(killed\?\){re.escape(others)}",
                        _yod_line(run.err)), run.err
    run.assert_clean()


# --- the job never started: exit 3 ----------------------------------------------------------------

@pytest.mark.parametrize("mpi", MPIS)
def test_a_rank_that_cannot_be_executed_is_a_startup_failure(endprog, mpi, tmp_path):
    """yod checks every program before launch, but exec can still fail on the rank: here a script
    whose #! interpreter does not exist (as a binary missing on a remote node would)."""
    bad = tmp_path / "badinterp"
    bad.write_text("#!/nonexistent/interpreter\necho never\n")
    bad.chmod(0o755)
    load = tmp_path / "job.load"
    load.write_text(f"-np 2 -VN2 {endprog[mpi]} 9 abort\n-np 1 -SN {bad}\n")
    r = yod(["-F", str(load), "--simulate-nodes", "--oversubscribe", "--no-preload"])
    assert r.rc == 3, r.err
    assert _yod_line(r.err) == ("yod: rank 2 (badinterp) could not be started (No such file or "
                                "directory); the job was ended")
    assert (f"bobcat-rank: rank 2: cannot run {bad}: No such file or directory (its #! interpreter "
            "or ELF loader is missing)") in r.err


@pytest.mark.parametrize("mpi", MPIS)
def test_launcher_failing_before_any_rank_is_a_startup_failure(endprog, mpi):
    r = yod(["-np", "2", "--no-preload", "--launcher-arg=--no-such-option", endprog[mpi], "9", "abort"])
    assert r.rc == 3, r.err
    launcher = "mpiexec.mpich" if mpi == "mpich" else "mpirun.openmpi"
    assert re.fullmatch(rf"yod: {launcher} failed \(status \d+\) before any rank ran", _yod_line(r.err))


# --- the verdict from captured output (deterministic: both MPIs lose their abort message at times) -

S = "@@bobcat@@ "
MPICH_FATAL = ("Abort(738871814) on node 1 (rank 1 in comm 0): Fatal error in internal_Send: Invalid "
               "rank, error stack:\ninternal_Send(120): MPI_Send(buf=0x7ffc1e1cd90c, count=1, MPI_INT, 9, 0, "
               "MPI_COMM_WORLD) failed\ninternal_Send(78).: Invalid rank has value 9 but must be "
               "nonnegative and less than 4\n")
OMPI_ABORT = ("-" * 74 + "\nMPI_ABORT was invoked on rank {r} in communicator {comm}\nwith errorcode {c}.\n\n"
              "NOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes.\n" + "-" * 74 + "\n")


def _started(n):
    return "".join(f"{S}start rank={w}\n" for w in range(n))


@pytest.mark.parametrize("mpi,nranks,stderr,status,rc,line", [
    # the issue: Hydra killed the shims, MPICH's line names the world rank ('on node') and code
    ("mpich", 2, _started(2) + "Abort(7) on node 1 (rank 1 in comm 0): application called "
     "MPI_Abort(MPI_COMM_WORLD, 7) - process 1\n", 7, 1,
     "yod: rank 1 (true) called MPI_Abort with code 7; mpiexec.mpich ended the other rank"),
    ("mpich", 4, _started(4) + "Abort(5) on node 3 (rank 1 in comm 496): application called "
     "MPI_Abort(comm=0x84000001, 5) - process 1\n", 9, 1,
     "yod: rank 3 (true) called MPI_Abort with code 5; mpiexec.mpich ended the 3 other ranks"),
    ("mpich", 2, _started(2) + MPICH_FATAL, 6, 1,
     "yod: rank 1 (true) hit a fatal MPI error (Fatal error in internal_Send: Invalid rank); "
     "mpiexec.mpich ended the other rank"),
    # Hydra lost the abort line: the start lines still say the job ran
    ("mpich", 2, _started(2), 9, 1, "yod: mpiexec.mpich ended the job (status 9) after the ranks "
     "started; ranks 0-1 ended without a report (killed?)"),
    # Open MPI names the rank in the aborting communicator; the shim's code gives the world rank
    ("openmpi", 2, _started(2) + f"{S}exit rank=0 signal=15\n{S}exit rank=1 code=5\n"
     + OMPI_ABORT.format(r=0, comm="MPI COMMUNICATOR 3 SPLIT FROM 0", c=5), 5, 1,
     "yod: rank 1 (true) called MPI_Abort with code 5; 1 other rank stopped"),
    ("openmpi", 2, _started(2) + f"{S}exit rank=1 code=7\n" + OMPI_ABORT.format(r=1, comm="MPI_COMM_WORLD", c=7)
     + f"{S}exit rank=0 signal=15\n", 7, 1, "yod: rank 1 (true) called MPI_Abort with code 7; 1 other rank stopped"),
    # a rank died first and a peer's MPI then found the broken connection fatal: the first is the cause
    ("mpich", 2, _started(2) + f"{S}exit rank=0 signal=11\n" + MPICH_FATAL, 11, 1,
     "yod: rank 0 (true) was killed by signal 11 (SIGSEGV); mpiexec.mpich ended the other rank"),
    # Open MPI lost its message and the SIGTERMed rank reported first: the cause is still rank 1
    ("openmpi", 2, _started(2) + f"{S}exit rank=0 signal=15\n{S}exit rank=1 code=7\n", 7, 1,
     "yod: rank 1 (true) exited with code 7; 1 other rank stopped"),
    # a shim killed under Open MPI: the SIGTERMed rank is a victim, rank 1 vanished
    ("openmpi", 2, _started(2) + f"{S}exit rank=0 signal=15\n", 137, 1,
     "yod: mpirun.openmpi ended the job (status 137) after the ranks started; rank 1 ended without "
     "a report (killed?); 1 other rank stopped"),
    # under Hydra a reported SIGKILL or SIGTERM came from outside (a user's kill): that rank is the cause
    ("mpich", 2, _started(2) + f"{S}exit rank=1 signal=9\n", 137, 1,
     "yod: rank 1 (true) was killed by signal 9 (SIGKILL); mpiexec.mpich ended the other rank"),
    ("mpich", 2, _started(2) + f"{S}exit rank=1 signal=15\n", 143, 1,
     "yod: rank 1 (true) was killed by signal 15 (SIGTERM); mpiexec.mpich ended the other rank"),
    # never started, or only partly
    ("mpich", 2, "[mpiexec@vm] match_arg (utils/args/args.c:163): unrecognized argument bogus\n", 255, 3,
     "yod: mpiexec.mpich failed (status 255) before any rank ran"),
    ("mpich", 4, _started(2), 1, 3, "yod: mpiexec.mpich failed (status 1) before ranks 2-3 started"),
    ("openmpi", 2, _started(2) + f"{S}exit rank=1 code=127 exec_errno=2\n{S}exit rank=0 signal=15\n", 1, 3,
     "yod: rank 1 (true) could not be started (No such file or directory); the job was ended"),
    # libbobcat's start-up refusal stays a start-up failure
    ("mpich", 2, _started(2) + f"{S}exit rank=0 code=3\n", 3, 3, "yod: rank 0 (true) exited with code 3; "
     "mpiexec.mpich ended the other rank"),
])
def test_verdict_from_captured_output(capfd, monkeypatch, mpi, nranks, stderr, status, rc, line):
    """The relayed stderr is fed one byte at a time, so every line arrives split across reads."""
    from bobcat.launcher.yod import Yod
    from bobcat.launcher.job import Job
    from bobcat.launcher.plan import parse_args
    for k in list(os.environ):
        if k.startswith("BOBCAT_") and k != "BOBCAT_HOME":
            monkeypatch.delenv(k)
    y = Yod(parse_args(["--mpi", mpi, f"-VN{nranks}", "-np", str(nranks), "--oversubscribe",
                        "--no-preload", "/bin/true"]))
    y.prepare()
    job = Job(y.launch.argv, y.env, y.job_id, nranks, None, y.on_status)
    data = stderr.encode()
    for i in range(len(data)):
        job._feed(data[i:i + 1], 0.0)
    job._flush_partial(0.0, force=True)
    job.out.launcher_status = status
    assert y.verdict(job.out) == rc
    err = capfd.readouterr().err
    assert err.splitlines()[-1] == line
    assert "@@bobcat@@" not in err


@pytest.mark.parametrize("chunk", [1, 3, 1 << 16])
def test_status_lines_found_inside_unfinished_user_lines(capfd, monkeypatch, chunk):
    """The launcher merges the ranks' stderr chunk by chunk: a shim's line can land in the middle of
    another rank's unfinished line, and the exit line follows a program's unterminated last line.
    Both are still status lines, and the user's text around them is relayed intact."""
    from bobcat.launcher.job import Job
    job = Job(["true"], {}, "0" * 16, 2, None, lambda kind, fields: None)
    data = (f"{S}start rank=0\npartial{S}start rank=1\npartial line\n line\n"
            f"no newline{S}exit rank=0 code=0\n@ not a status line\n@@bobcat@ nor this\n"
            f"{S}exit rank=1 code=4\n").encode()
    for i in range(0, len(data), chunk):
        job._feed(data[i:i + chunk], 0.0)
    job._flush_partial(0.0, force=True)
    assert job.out.started == {0, 1}
    assert {r: e.code for r, e in job.out.ends.items()} == {0: 0, 1: 4}
    assert capfd.readouterr().err == ("partialpartial line\n line\nno newline@ not a status line\n"
                                      "@@bobcat@ nor this\n")


def test_held_prefix_is_relayed_when_no_status_line_follows(capfd):
    from bobcat.launcher.job import Job
    job = Job(["true"], {}, "0" * 16, 1, None, lambda kind, fields: None)
    job._feed(b"progress @@bob", 0.0)
    assert capfd.readouterr().err == "progress "      # the tail might start a status line
    job._flush_partial(1.0)
    assert capfd.readouterr().err == "@@bob"


def test_read_aborts_takes_the_first_and_fills_what_the_mpi_left_out(tmp_path):
    """The words libbobcat's MPI_Abort leaves (abort.<world rank>: the code): the earliest is the
    abort; it stands in for a lost MPI message, and gives the world rank that Open MPI's message
    (a sub-communicator's rank) lacks; a message that names a rank is kept as the MPI said it."""
    from bobcat.launcher.job import MpiAbort, Outcome, read_aborts
    (tmp_path / "abort.3").write_text("7\n")
    (tmp_path / "abort.1").write_text("9\n")
    (tmp_path / "abort.x").write_text("1\n")          # not a rank's: ignored
    os.utime(tmp_path / "abort.3", ns=(1_000_000_000, 1_000_000_000))
    os.utime(tmp_path / "abort.1", ns=(2_000_000_000, 2_000_000_000))
    out = Outcome()
    out.end_times = [500_000_000, 1_500_000_000]      # one rank's end came before the abort
    read_aborts(str(tmp_path), out)
    assert (out.abort.rank, out.abort.code, out.abort.what) == (3, 7, "called MPI_Abort with code 7")
    assert out.ends_before_abort == 1
    out = Outcome()
    out.abort = MpiAbort(None, 7, "called MPI_Abort with code 7", "comm 2", 0)
    read_aborts(str(tmp_path), out)
    assert out.abort.rank == 3 and out.abort.comm == "comm 2"
    out = Outcome()
    out.abort = MpiAbort(2, 5, "called MPI_Abort with code 5", "MPI_COMM_WORLD", 2)
    read_aborts(str(tmp_path), out)
    assert out.abort.rank == 2
    empty = tmp_path / "none"
    empty.mkdir()
    out = Outcome()
    read_aborts(str(empty), out)
    assert out.abort is None
