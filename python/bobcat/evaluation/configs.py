"""Configurations: how a benchmark is launched for each column of the comparison.

A configuration is data (python/bobcat/data/configs.toml, plus an optional user file), turned
here into a command line, an environment and a record of what was done (runs.config_detail).
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from . import machine
from .. import paths
from .. import mpis

MODES = ("SN", "VN2")
# Debian 12's Open MPI 4.1 and MPICH 4.0: the MPIs every build has, the "Debian" side of the
# report's best-peer table. Today's MPIs (scripts/peers.sh: openmpi5, mpich5, impi) are further
# [mpi.<name>] tables in configs.toml; which of them this machine has is mpis.conf's business
# (bobcat.mpis), and an absent one is skipped, never an error.
VENDORS = ("openmpi", "mpich")
SYSTEM_MPIS = VENDORS
# The standard-ABI layer serves whichever MPI provides libmpi_abi.so.1: not a peer of its own.
NOT_PEERS = frozenset({"abi"})
USER_FILE = Path.home() / ".config" / "bobcat" / "configs.toml"
# Inherited variables with these prefixes would silently change a configuration's transport, so
# they are removed from every run's environment (and the removal is recorded).
CLEARED_ENV_PREFIXES = ("OMPI_MCA_", "PRTE_MCA_", "UCX_", "FI_", "MPIR_CVAR_", "HYDRA_", "I_MPI_")


class ConfigError(Exception):
    """A configuration file or a name in it is wrong; the message names the file and key."""


@dataclass(frozen=True)
class VendorSettings:
    launcher_args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    single_copy: str = ""
    yod_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class MpiSpec:
    """How to start a job with one MPI. launcher: the [mpi.<name>] table's, else the one mpis.conf
    names for that installation (a peer's prefix differs per machine), else Debian's; "" when the
    MPI is not installed here. family: openmpi or mpich, how its launcher is driven. An env value
    may say {prefix}: the installation's prefix from mpis.conf."""
    vendor: str
    launcher: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    oversubscribe_args: tuple[str, ...]
    family: str = ""
    prefix: str = ""


@dataclass(frozen=True)
class Config:
    name: str
    description: str
    via_yod: bool
    network: bool
    mpis: tuple[str, ...]
    vendor: dict[str, VendorSettings] = field(hash=False)
    source: str = ""


@dataclass
class Launch:
    argv: list[str]
    env: dict[str, str]
    detail: dict[str, Any]


@dataclass
class ConfigSet:
    mpi: dict[str, MpiSpec]
    network: dict[str, VendorSettings]
    configs: dict[str, Config]

    def vendors(self) -> tuple[str, ...]:
        """Every MPI the configuration data knows ([mpi.<name>]), installed here or not."""
        return tuple(self.mpi)

    def get(self, name: str) -> Config:
        try:
            return self.configs[name]
        except KeyError:
            raise ConfigError(f"unknown configuration {name!r} (known: {', '.join(self.configs)};"
                              " add one in a --configs file)") from None


# --- loading ----------------------------------------------------------------------------------

def _strs(v: Any, where: str) -> tuple[str, ...]:
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ConfigError(f"{where}: must be a list of strings")
    return tuple(v)


def _env(v: Any, where: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(v, dict):
        raise ConfigError(f"{where}: must be a table of NAME = \"value\"")
    return tuple((str(k), str(x)) for k, x in v.items())


def _check_keys(table: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)} (allowed: "
                          f"{', '.join(sorted(allowed))})")


def _vendor_settings(t: Any, where: str, base: VendorSettings) -> VendorSettings:
    if not isinstance(t, dict):
        raise ConfigError(f"{where}: must be a table")
    _check_keys(t, {"launcher_args", "env", "single_copy", "yod_args"}, where)
    return VendorSettings(
        launcher_args=base.launcher_args + _strs(t.get("launcher_args", []), f"{where}.launcher_args"),
        env=base.env + _env(t.get("env", {}), f"{where}.env"),
        single_copy=str(t.get("single_copy", base.single_copy)),
        yod_args=base.yod_args + _strs(t.get("yod_args", []), f"{where}.yod_args"))


def _mpi_spec(vendor: str, t: Any, where: str) -> MpiSpec:
    if not isinstance(t, dict):
        raise ConfigError(f"{where}: must be a table")
    if vendor in NOT_PEERS:
        raise ConfigError(f"{where}: {vendor} is the standard-ABI layer, which serves another MPI's "
                          "libmpi_abi.so.1; it is not an MPI of its own to configure")
    _check_keys(t, {"launcher", "family", "args", "env", "oversubscribe_args"}, where)
    inst = mpis.table().get(vendor)
    # An absent MPI without a family in the data is fine: it never runs here.
    family = str(t.get("family", inst.family if inst else ""))
    if (family or "family" in t) and family not in mpis.FAMILIES:
        raise ConfigError(f"{where}.family: one of {', '.join(mpis.FAMILIES)} (how its launcher is "
                          f"driven), not {family!r}")
    launcher = t.get("launcher", inst.launcher if inst else machine.LAUNCHERS.get(vendor, ""))
    return MpiSpec(vendor, str(launcher), _strs(t.get("args", []), f"{where}.args"),
                   _env(t.get("env", {}), f"{where}.env"),
                   _strs(t.get("oversubscribe_args", []), f"{where}.oversubscribe_args"),
                   family, inst.prefix if inst else "")


def _parse(doc: dict[str, Any], source: str, into: ConfigSet) -> None:
    _check_keys(doc, {"mpi", "network", "configs"}, source)
    for vendor, t in doc.get("mpi", {}).items():
        into.mpi[vendor] = _mpi_spec(vendor, t, f"{source}: [mpi.{vendor}]")
    known = into.vendors()
    for vendor, t in doc.get("network", {}).items():
        where = f"{source}: [network.{vendor}]"
        if vendor not in known:
            raise ConfigError(f"{where}: unknown MPI (known: {', '.join(known)}; add [mpi.{vendor}])")
        into.network[vendor] = _vendor_settings(t, where, VendorSettings())
    for name, t in doc.get("configs", {}).items():
        where = f"{source}: [configs.{name}]"
        if not isinstance(t, dict):
            raise ConfigError(f"{where}: must be a table")
        _check_keys(t, {"description", "via_yod", "network", "mpis", "launcher_args", "env",
                        "single_copy", "yod_args", *known}, where)
        names = _strs(t.get("mpis", list(known)), f"{where}.mpis")
        for m in names:
            if m not in known:
                raise ConfigError(f"{where}.mpis: unknown MPI {m!r} (known: {', '.join(known)})")
        for key in ("via_yod", "network"):
            if not isinstance(t.get(key, False), bool):
                raise ConfigError(f"{where}.{key}: must be true or false")
        common = {k: t[k] for k in ("launcher_args", "env", "single_copy", "yod_args") if k in t}
        base = _vendor_settings(common, where, VendorSettings())
        vendor = {v: _vendor_settings(t.get(v, {}), f"{where}.{v}", base) for v in names}
        into.configs[name] = Config(name, str(t.get("description", "")), t.get("via_yod", False),
                                    t.get("network", False), names, vendor, source)


def _load_file(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:  # the message carries "(at line N, column M)"
        raise ConfigError(f"{path}: {e}") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None


def load(user_file: Path | None = None) -> ConfigSet:
    """Built-in configurations, then the user's file (explicit, or ~/.config/bobcat/configs.toml
    when it exists), whose entries replace built-ins of the same name."""
    cs = ConfigSet({}, {}, {})
    builtin = resources.files("bobcat") / "data" / "configs.toml"
    _parse(tomllib.loads(builtin.read_text()), "built-in configs.toml", cs)
    if user_file is None and USER_FILE.exists():
        user_file = USER_FILE
    if user_file is not None:
        _parse(_load_file(user_file), str(user_file), cs)
    for vendor in VENDORS:
        if vendor not in cs.mpi:
            raise ConfigError(f"configuration data lacks [mpi.{vendor}]")
    for vendor in cs.mpi:
        # SN mode puts every configuration on the network stack: an MPI without these settings
        # would silently measure shared memory there.
        if vendor not in cs.network:
            raise ConfigError(f"configuration data has [mpi.{vendor}] but no [network.{vendor}]")
    return cs


# --- availability -----------------------------------------------------------------------------

@functools.cache
def find_yod() -> tuple[str | None, str]:
    """yod's path and version line, or None and why it cannot be used.  yod must pass its own
    self-check (`yod --version`); a yod that fails it makes `lwk` unavailable, never faked."""
    candidates = [paths.home() / "bin" / "yod", Path(sys.prefix) / "bin" / "yod"]
    which = shutil.which("yod")
    if which:
        candidates.append(Path(which))
    tried = []
    for c in candidates:
        if not (c.is_file() and os.access(c, os.X_OK)):
            continue
        try:
            r = subprocess.run([str(c), "--version"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as e:
            tried.append(f"{c}: {e}")
            continue
        lines = (r.stdout.strip() or r.stderr.strip()).splitlines()
        if r.returncode == 0:
            return str(c), lines[0] if lines else "yod"
        last = (r.stderr.strip() or r.stdout.strip()).splitlines()[-1:] or ["no output"]
        tried.append(f"{c} --version exited {r.returncode}: {last[0][:160]}")
    if not tried:
        return None, f"yod not found (looked in {candidates[0]}, {candidates[1]} and PATH)"
    return None, "yod fails its self-check: " + "; ".join(tried)


@functools.cache
def yod_dry_run(vendor: str) -> tuple[bool, str]:
    """yod's plan for a 2-rank job with this MPI, without launching: catches an incomplete install
    (no rank shim, no libbobcat flavour) before a campaign spends runs on it."""
    yod, why = find_yod()
    if yod is None:
        return False, why
    try:
        r = subprocess.run([yod, "--dry-run", "-VN2", "-np", "2", "--mpi", vendor, "/bin/true"],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"yod --dry-run: {e}"
    if r.returncode != 0:
        last = (r.stderr.strip() or r.stdout.strip()).splitlines()[-1:] or ["no output"]
        return False, f"yod --dry-run exited {r.returncode}: {last[0][:200]}"
    return True, why


def _layer_exports(vendor: str, symbol: str) -> bool:
    """Whether the installed libbobcat-<vendor>.so exports `symbol` (the layers' marker symbols)."""
    lib = paths.lib_dir() / f"libbobcat-{vendor}.so"
    if not lib.exists() or not shutil.which("nm"):
        return False
    try:
        syms = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True,
                              text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return any(line.split()[-1:] == [symbol] for line in syms.splitlines())


def onnode_mpi(vendor: str) -> str:
    """What carries lwk's on-node MPI messages: libbobcat's single-copy layer when the installed
    library exports its marker symbol (it is on unless BOBCAT_P2P=0, which runs never set), else
    the real MPI's own transport."""
    if _layer_exports(vendor, "bobcat_msg_layer"):
        return "libbobcat single-copy layer (bobcat_msg_layer exported)"
    return "real MPI (libbobcat's single-copy layer not built)"


def mpi_layer(vendor: str) -> str:
    """Whether lwk's MPI calls go through libbobcat's MPI layer (collectives in place over
    SMARTMAP, node communicators, shared windows): the installed library exports the marker
    symbol bobcat_coll_layer. The layer is on unless BOBCAT_MPI=off, which runs never set."""
    if _layer_exports(vendor, "bobcat_coll_layer"):
        return "libbobcat MPI layer: on-node collectives in place over SMARTMAP (bobcat_coll_layer exported)"
    return "real MPI only (libbobcat's MPI layer not built)"


def installed(cs: ConfigSet, vendor: str) -> tuple[bool, str]:
    """Whether MPI `vendor` is installed here: the build listed it in mpis.conf (Debian's two
    are assumed when no mpis.conf is installed) and its launcher exists. The reason names the fix."""
    if vendor not in cs.mpi:
        return False, f"unknown MPI {vendor!r} (known: {', '.join(cs.vendors())})"
    table = mpis.table()
    if vendor not in table:
        return False, (f"{vendor} is not installed on this machine (no line for it in "
                       f"{mpis_conf()}; scripts/peers.sh install, then make build)")
    launcher = cs.mpi[vendor].launcher
    if not launcher or shutil.which(launcher) is None:
        hint = f"install the {vendor} package" if vendor in SYSTEM_MPIS else \
            "scripts/peers.sh install, then make build"
        return False, f"{vendor}'s launcher {launcher or '(none)'} not found ({hint})"
    return True, "ok"


def installed_vendors(cs: ConfigSet) -> list[str]:
    """The known MPIs installed here, in configs.toml's order (Debian's first)."""
    return [v for v in cs.vendors() if installed(cs, v)[0]]


def mpis_conf() -> str:
    return os.path.join(paths.home_dir(), "share", "bobcat", "mpis.conf")


def availability(cs: ConfigSet, config: Config, vendor: str) -> tuple[bool, str]:
    """Whether (config, vendor) can run here, and why not."""
    if vendor not in config.mpis:
        return False, f"{config.name} is not defined for {vendor} (mpis = {list(config.mpis)})"
    ok, why = installed(cs, vendor)
    if not ok:
        return False, why
    if config.via_yod:
        return yod_dry_run(vendor)
    return True, "ok"


# --- building a launch ------------------------------------------------------------------------

def _merge_args(base: list[str], extra: tuple[str, ...]) -> list[str]:
    """Append `extra`, dropping earlier `--mca KEY VALUE` triples whose KEY `extra` sets again,
    so Open MPI never sees one parameter twice with different values."""
    keys = {extra[i + 1] for i in range(len(extra) - 2) if extra[i] == "--mca"}
    out: list[str] = []
    i = 0
    while i < len(base):
        if base[i] == "--mca" and i + 2 < len(base) and base[i + 1] in keys:
            i += 3
            continue
        out.append(base[i])
        i += 1
    return out + list(extra)


def base_env() -> tuple[dict[str, str], list[str]]:
    env = dict(os.environ)
    cleared = sorted(k for k in env if k.startswith(CLEARED_ENV_PREFIXES))
    for k in cleared:
        del env[k]
    return env, cleared


def build(cs: ConfigSet, config: Config, vendor: str, mode: str, ranks: int,
          program: list[str]) -> Launch:
    """The command line and environment that run `program` with `ranks` ranks under
    (config, vendor, mode), and the record of what was done."""
    if mode not in MODES:
        raise ConfigError(f"unknown mode {mode!r} (known: {', '.join(MODES)})")
    mpi = cs.mpi[vendor]
    vs = config.vendor[vendor]
    net = cs.network[vendor]
    # SN: one rank per (simulated) node, so every message crosses the network stack.
    use_network = config.network or mode == "SN"
    launcher_args = list(vs.launcher_args)
    extra_env = dict(vs.env)
    if use_network:
        launcher_args = _merge_args(launcher_args, net.launcher_args)
        extra_env.update(net.env)
    env, cleared = base_env()
    env.update({k: v.replace("{prefix}", mpi.prefix) for k, v in mpi.env})
    env.update(extra_env)
    cores = os.cpu_count() or 1
    oversub = list(mpi.oversubscribe_args) if ranks > cores else []
    detail: dict[str, Any] = {
        "config": config.name, "description": config.description, "mpi": vendor,
        "mpi_version": machine.mpi_version(vendor), "mode": mode, "ranks": ranks,
        "ranks_per_node": 1 if mode == "SN" else min(2, ranks),
        "nodes": ranks if mode == "SN" else (ranks + 1) // 2,
        "transport": ("network stack (" + ("simulated nodes, " if mode == "SN" else "")
                      + "on-node shared memory disabled)") if use_network else "shared memory",
        "single_copy": "none (network stack)" if use_network and not config.network else vs.single_copy,
        "via_yod": config.via_yod, "launcher_args": launcher_args + oversub,
        "env": extra_env, "env_cleared": cleared, "source": config.source,
    }
    if config.via_yod:
        yod, version = find_yod()
        if yod is None:
            raise ConfigError(f"{config.name}: {version}")
        mode_args = ["-SN", "-np", str(ranks), "--simulate-nodes"] if mode == "SN" else \
            ["-VN2", "-np", str(ranks)]
        if ranks > cores:
            mode_args.append("--oversubscribe")
        argv = [yod, *mode_args, "--mpi", vendor, *vs.yod_args,
                *(f"--launcher-arg={a}" for a in launcher_args), *program]
        detail.update(yod=yod, yod_version=version, yod_args=list(vs.yod_args),
                      onnode_mpi=onnode_mpi(vendor), mpi_layer=mpi_layer(vendor))
    else:
        launcher = shutil.which(mpi.launcher) or mpi.launcher
        pass_env: list[str] = []
        if mpi.family == "openmpi":
            # Open MPI forwards only what -x names to ranks on other hosts; name them so the
            # command line is the whole truth and also holds for a real multi-host run.
            for k in extra_env:
                pass_env += ["-x", k]
        argv = [launcher, "-np", str(ranks), *mpi.args, *oversub, *launcher_args, *pass_env, *program]
    return Launch(argv, env, detail)
