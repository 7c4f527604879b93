#!/bin/bash
# Stop the cluster start.sh DIR started: cancel its jobs, end its daemons by their pid files (TERM,
# then KILL after 10 s) and any step daemon still working in DIR.
dir=$(cd "${1:?usage: stop.sh DIR}" && pwd) || exit 1
export SLURM_CONF="$dir/etc/slurm.conf"
[ -f "$SLURM_CONF" ] && scancel --full -u "$(id -un)" >/dev/null 2>&1
pids=()
for f in "$dir"/run/*.pid; do
  [ -f "$f" ] && p=$(cat "$f") && kill -TERM "$p" 2>/dev/null && pids+=("$p")
done
for _ in $(seq 100); do
  alive=0
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
  [ $alive = 0 ] && break
  sleep 0.1
done
for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
for p in $(pgrep -x slurmstepd); do
  case "$(readlink "/proc/$p/cwd" 2>/dev/null)" in "$dir"*) kill -KILL "$p" 2>/dev/null ;; esac
done
rm -f "$dir"/run/*.pid
exit 0
