#!/usr/bin/env bash
# make install PREFIX=<dir>: the runtime (libs, headers, pkg-config, shim, benchmarks) and the
# Python tools in their own environment under <dir>/lib/bobcat/venv, so bin/yod and bin/bobcat
# work without activating anything.
set -euo pipefail
prefix=$(mkdir -p "$1" && cd "$1" && pwd)
build=${2:-build}
here=$(cd "$(dirname "$0")/.." && pwd)
venv="$prefix/lib/bobcat/venv"
if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q --upgrade "$here"
cmake -S "$here" -B "$here/$build" -DBOBCAT_PYTHON="$venv/bin/python" >/dev/null
cmake --build "$here/$build" -j "$(nproc)" >/dev/null
cmake --install "$here/$build" --prefix "$prefix" >/dev/null
# The source tree's own stage keeps using the checkout's venv.
cmake -S "$here" -B "$here/$build" -DBOBCAT_PYTHON="$here/.venv/bin/python" >/dev/null
cmake --build "$here/$build" -j "$(nproc)" >/dev/null
echo "installed bobcat into $prefix (bin/yod, bin/bobcat, bin/oshcc, bin/oshc++, bin/oshrun, lib/libbobcat*.so, include/bobcat, lib/pkgconfig/bobcat.pc and bobcat-shmem.pc)"
