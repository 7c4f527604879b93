"""Where bobcat's installed runtime lives (libbobcat*.so, the rank shim, benchmark binaries).

BOBCAT_HOME names an install prefix; without it, a source checkout's build/stage is used.
"""
import os
from pathlib import Path

_REPO = Path(__file__).resolve().parents[2]


def home() -> Path:
    env = os.environ.get("BOBCAT_HOME")
    if env:
        return Path(env)
    return _REPO / "build" / "stage"


def lib_dir() -> Path:
    return home() / "lib"


def libexec_dir() -> Path:
    return home() / "libexec" / "bobcat"


def repo_root() -> Path:
    return _REPO
