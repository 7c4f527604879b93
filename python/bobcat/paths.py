"""Where bobcat's installed runtime lives (libbobcat*.so, the rank shim, benchmark binaries).

BOBCAT_HOME names an install prefix; without it, a source checkout's build/stage is used.
pathlib is imported only by the functions that return Paths: yod uses the str forms, and the
import alone would cost it 6 ms of start-up on every job.
"""

import os

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
LIB = "lib"
LIBEXEC = os.path.join("libexec", "bobcat")


def home_dir() -> str:
    return os.environ.get("BOBCAT_HOME") or os.path.join(_REPO, "build", "stage")


def home() -> "Path":
    from pathlib import Path
    return Path(home_dir())


def lib_dir() -> "Path":
    return home() / LIB


def libexec_dir() -> "Path":
    return home() / LIBEXEC


def repo_root() -> "Path":
    from pathlib import Path
    return Path(_REPO)
