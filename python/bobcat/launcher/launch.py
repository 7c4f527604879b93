"""The launcher command line for a plan: Open MPI's mpirun, MPICH's Hydra mpiexec, or Slurm's srun.

yod never places or binds ranks itself: it tells the real launcher how many ranks go on which host
(one host unless --hostfile/Slurm) and wraps every rank in the bobcat-rank shim.  libbobcat binds
each rank to core `local index % cores` (contracts.md section 1).  Open MPI binds the same way with
--map-by core --bind-to core, and its start-up is 25-30 ms faster when it knows its ranks are bound,
so on one unsimulated node yod lets mpirun bind and libbobcat keeps that binding; elsewhere the
launcher is told not to bind.
"""

import os

from .plan import Plan, UsageError

LAUNCHERS = {"openmpi": "mpirun.openmpi", "mpich": "mpiexec.mpich"}
# Non-MPI programs run under whichever launcher is installed, the faster-starting first:
# measured on the reference VM, 2 ranks of /bin/true: Hydra 10-20 ms, Open MPI 60-180 ms.
NON_MPI_ORDER = ("mpich", "openmpi")
# Variables that reach the ranks without yod naming them are forwarded by name to Open MPI
# (mpirun only forwards OMPI_* and -x names to remote nodes); Hydra and srun forward everything.
PASS_PREFIXES = ("BOBCAT_", "UCX_", "MPIR_CVAR_")
SRUN_MPI_TYPE = {"openmpi": "pmix", "mpich": "pmi2"}


def which(name: str) -> str | None:
    for d in os.environ.get("PATH", "").split(os.pathsep):
        p = os.path.join(d or ".", name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


class Launch:
    """kind is openmpi, mpich or srun; env_names the variables forwarded by name; files the
    contents of the temporary files srun needs (multiprog, hostfile) for -F jobs."""
    __slots__ = ("kind", "argv", "env_names", "files")

    def __init__(self, kind: str, argv: list[str], env_names: list[str],
                 files: dict[str, str] | None = None):
        self.kind, self.argv, self.env_names, self.files = kind, argv, env_names, files or {}


def in_slurm() -> bool:
    return bool(os.environ.get("SLURM_JOB_ID")) and which("srun") is not None


def launcher_of(inst) -> str | None:
    """The path of an installation's launcher (a peer's is a path; a system one a name on PATH)."""
    if os.sep in inst.launcher:
        return inst.launcher if os.access(inst.launcher, os.X_OK) else None
    return which(inst.launcher)


def pick_kind(inst, hostfile: str | None, simulate: bool) -> str:
    """openmpi, mpich or srun for the job's MPI installation (mpis.Mpi, None for non-MPI
    programs).  srun inside a Slurm allocation unless a hostfile or simulated nodes say the job
    stays under mpiexec."""
    if in_slurm() and not hostfile and not simulate:
        return "srun"
    if inst is not None:
        if launcher_of(inst) is None:
            raise UsageError(f"the program needs {inst.describe()}, but its launcher {inst.launcher} is not "
                             f"there; install it (or put it on PATH) or choose another MPI with --mpi")
        return inst.family
    for kind in NON_MPI_ORDER:
        if which(LAUNCHERS[kind]) is not None:
            return kind
    raise UsageError("no MPI launcher found on PATH (mpirun.openmpi or mpiexec.mpich); install one")


def _host_lists(plan: Plan, hosts: list[str] | None) -> list[str | None]:
    """Per group, the 'host:count,...' placement, or None when everything runs on this host."""
    if hosts is None:
        return [None] * len(plan.groups)
    out: list[str | None] = []
    for np, rpn, nodes, base in plan.groups:
        parts = []
        for k in range(nodes):
            parts.append(f"{hosts[base + k]}:{min(rpn, np - k * rpn)}")
        out.append(",".join(parts))
    return out


def _mpmd(plan: Plan, placement: list[str | None], progs: list[list[str]], np_flag: str,
          host_flag: str) -> list[str]:
    """The groups as one MPMD command line ("A : B : ..."), in the launcher's own flag names."""
    argv: list[str] = []
    for g, (np, _, _, _) in enumerate(plan.groups):
        if g:
            argv.append(":")
        argv += [np_flag, str(np)]
        if placement[g]:
            argv += [host_flag, placement[g]]
        argv += progs[g]
    return argv


def build(kind: str, plan: Plan, progs: list[list[str]], env: dict[str, str], *,
          hosts: list[str] | None, hostfile: str | None, oversubscribe: bool,
          extra: list[str], launcher_binds: bool = False, inst=None) -> Launch:
    """progs[g] is group g's full rank command (shim, its options, program, args); inst the job's
    MPI installation (mpis.Mpi), whose own launcher starts it."""
    mpi = inst.family if inst is not None else None
    exe = (launcher_of(inst) if inst is not None else None) or which(LAUNCHERS.get(kind, "")) or LAUNCHERS.get(kind)
    names = sorted(k for k in env if k.startswith(PASS_PREFIXES))
    placement = _host_lists(plan, hosts)
    if kind == "openmpi":
        argv = [exe]
        argv += ["--map-by", "core", "--bind-to", "core"] if launcher_binds else ["--bind-to", "none"]
        if oversubscribe:
            argv.append("--oversubscribe")
        if hostfile:
            argv += ["--hostfile", hostfile]
        for n in names:
            argv += ["-x", n]
        argv += extra + _mpmd(plan, placement, progs, "-np", "--host")
        return Launch(kind, argv, names)
    if kind == "mpich":
        # Hydra propagates the whole environment by default (-genvall), so the BOBCAT_* variables,
        # including the secret job token, never appear on a command line.
        # With a hostfile every group gets its hosts from yod's plan (-hosts); Hydra refuses a
        # host file next to host lists, so the file itself is not passed on.
        argv = [exe]
        argv += extra + _mpmd(plan, placement, progs, "-n", "-hosts")
        return Launch(kind, argv, names)
    # srun: one group is a plain step; several groups become an arbitrary distribution (one
    # host per rank in SLURM_HOSTFILE) with a multi-prog file mapping rank ranges to programs.
    argv = [which("srun") or "srun", "--cpu-bind=none"]
    # srun must serve the PMI the MPI library speaks, or each rank starts as a world of its own
    # (MPICH) or MPI_Init fails (Open MPI): Debian's Open MPI 4.1 needs PMIx, MPICH 4.0 PMI-2.
    # A choice the user made (SLURM_MPI_TYPE, or --mpi through --launcher-arg) stands.
    if mpi in SRUN_MPI_TYPE and not env.get("SLURM_MPI_TYPE") \
            and not any(a == "--mpi" or a.startswith("--mpi=") for a in extra):
        argv.append(f"--mpi={SRUN_MPI_TYPE[mpi]}")
    argv += ["-n", str(plan.ranks)]
    if len(plan.groups) == 1:
        np, rpn, nodes, _ = plan.groups[0]
        argv += ["-N", str(nodes), f"--ntasks-per-node={rpn}"] + extra + progs[0]
        return Launch(kind, argv, names)
    import shlex
    lines, first = [], 0
    for g, (np, _, _, _) in enumerate(plan.groups):
        lines.append(f"{first}-{first + np - 1} {shlex.join(progs[g])}")
        first += np
    hostlist = [hosts[plan.node_of(w)[0]] for w in range(plan.ranks)] if hosts else []
    return Launch(kind, argv + ["--distribution=arbitrary", "-N", str(plan.nodes)] + extra +
                  ["--multi-prog", "@MULTIPROG@"], names,
                  {"multiprog": "\n".join(lines) + "\n", "hostfile": "\n".join(hostlist) + "\n"})
