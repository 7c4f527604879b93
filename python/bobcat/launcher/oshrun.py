"""oshrun: the OpenSHMEM launcher convention, over yod.

    oshrun [-np N | -n N] [mpirun-style options] [yod options] program [args]

OpenSHMEM users type `oshrun -np 4 ./a.out`; this translates the mpirun-style options they use
into yod's and runs yod in-process (one interpreter start).  Every PE is a yod rank: SMARTMAP
windows on the node, MPI between nodes.  yod's own options (-VN <n>, --simulate-nodes, --heap ...)
pass through unchanged.  Ranks beyond the cores are allowed (oversubscription is normal for
SHMEM tests): oshrun always passes --oversubscribe, and yod then leaves ranks unbound.
"""

import os
import sys

HELP = """\
usage: oshrun [-np N] [options] program [args]
mpirun-style options:
  -np N, -n N, -c N, --np N      number of PEs
  -N N, --npernode N, -npernode N, --map-by ppr:N:node
                                 PEs per node (yod -VN N)
  --hostfile F, -hostfile F, --machinefile F, -machinefile F
                                 hosts (yod --hostfile)
  -x NAME[=VALUE]                export a variable to the PEs
  --oversubscribe                accepted (always on)
  --bind-to X, --map-by X, --mca K V, -mca K V, --report-bindings, -q, --quiet
                                 accepted and ignored (yod binds one PE per core when they fit)
yod options (passed through): -SN, -VN<n>, --simulate-nodes, --heap, --heap-node, --pages,
  -tlimit, --mpi, -v/--verbose, --dry-run, --launcher-arg, --node-file, --boot-dir
environment: SHMEM_SYMMETRIC_SIZE (symmetric heap per PE), SHMEM_DEBUG, SHMEM_VERSION, SHMEM_INFO
See docs/shmem.md.
"""

_IGNORED_1 = {"--bind-to", "-bind-to", "--rank-by", "-rank-by", "--display-map"}
_IGNORED_0 = {"--report-bindings", "-report-bindings", "-q", "--quiet", "--tag-output", "-tag-output",
              "--allow-run-as-root", "--display-map", "--use-hwthread-cpus"}
_PASS_VALUED = {"--heap", "--heap-node", "--pages", "-tlimit", "--tlimit", "--mpi", "--launcher-arg",
                "--node-file", "--boot-dir"}
_PASS_FLAG = {"--simulate-nodes", "-v", "--verbose", "--dry-run", "-small_pages", "--small-pages", "-SN",
              "--no-preload", "--oversubscribe"}


class OshrunError(Exception):
    pass


def translate(argv: list[str]) -> list[str]:
    """oshrun's arguments -> yod's.  Raises OshrunError on a bad command line."""
    out = ["--oversubscribe"]
    i = 0

    def value(name: str) -> str:
        nonlocal i
        if i + 1 >= len(argv):
            raise OshrunError(f"{name} needs a value")
        i += 1
        return argv[i]

    while i < len(argv):
        a = argv[i]
        name, eq, val = a.partition("=") if a.startswith("--") else (a, "", "")
        if a == "--":
            i += 1
            break
        if not a.startswith("-") or a == "-":
            break
        v = val if eq else None
        if name in ("-np", "-n", "-c", "--np", "--n"):
            out += ["-np", v if v is not None else value(name)]
        elif name in ("-N", "--npernode", "-npernode"):
            out += ["-VN", v if v is not None else value(name)]
        elif name in ("--map-by", "-map-by"):
            spec = v if v is not None else value(name)
            parts = spec.split(":")
            if len(parts) >= 3 and parts[0] == "ppr" and parts[2].startswith("node"):
                out += ["-VN", parts[1]]
        elif name in ("--hostfile", "-hostfile", "--machinefile", "-machinefile"):
            out += ["--hostfile", v if v is not None else value(name)]
        elif name == "-x":
            spec = value(name)
            k, has, kv = spec.partition("=")
            if has:
                os.environ[k] = kv
            elif k not in os.environ:
                raise OshrunError(f"-x {k}: {k} is not set in this environment")
        elif name in ("--mca", "-mca", "--gmca", "-gmca"):
            value(name)
            value(name)
        elif name in _IGNORED_1:
            if v is None:
                value(name)
        elif name in _IGNORED_0:
            pass
        elif name in _PASS_VALUED:
            out += [name, v if v is not None else value(name)]
        elif name in _PASS_FLAG or name.startswith("-VN"):
            out.append(a)
            if name == "-VN" and i + 1 < len(argv) and argv[i + 1].isdigit():
                out.append(value(name))
        else:
            raise OshrunError(f"unknown option {a} (see oshrun --help)")
        i += 1
    if i >= len(argv):
        raise OshrunError("no program given (usage: oshrun -np N program [args])")
    # mpirun on one host puts every rank there; yod's default is one node of <cores> ranks. Without
    # a mode, hosts or Slurm, all PEs go on this node (one SMARTMAP node, the fast path).
    has_mode = any(a == "-SN" or a.startswith("-VN") for a in out)
    if not has_mode and "--hostfile" not in out and "--simulate-nodes" not in out \
            and not os.environ.get("SLURM_JOB_ID") and "-np" in out:
        out += ["-VN", out[out.index("-np") + 1]]
    return out + argv[i:]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        sys.stdout.write(HELP)
        return 0
    if args[0] in ("-V", "--version"):
        from .. import __version__
        sys.stdout.write(f"oshrun (bobcat OpenSHMEM 1.5 over yod) {__version__}\n")
        return 0
    try:
        yod_args = translate(args)
    except OshrunError as e:
        sys.stderr.write(f"oshrun: {e}\n")
        return 2
    from .yod import main as yod_main
    return yod_main(yod_args)


if __name__ == "__main__":
    sys.exit(main())
