#!/bin/bash
# Stop the cluster start.sh DIR started, whatever state its start reached: cancel its jobs, end its
# daemons (TERM, then KILL after 10 s) and any step daemon still working in DIR. The daemons are
# found by the configuration file in DIR on their command line (start.sh passes it with -f), which
# also finds a daemon whose start was cut short before it wrote its pid file and never matches a
# recycled pid: only processes of this cluster, never by name.
dir=$(cd "${1:?usage: stop.sh DIR}" && pwd) || exit 1
export SLURM_CONF="$dir/etc/slurm.conf"
ours() {
  for c in /proc/[0-9]*/cmdline; do
    { tr '\0' '\n' < "$c"; } 2>/dev/null | grep -qxF "$SLURM_CONF" || continue
    p=${c#/proc/}; echo "${p%/cmdline}"
  done
  for p in $(pgrep -x slurmstepd); do
    case "$(readlink "/proc/$p/cwd" 2>/dev/null)" in "$dir"*) echo "$p" ;; esac
  done
}
ctld=0
for p in $(ours); do [ "$(cat "/proc/$p/comm" 2>/dev/null)" = slurmctld ] && ctld=1; done
# Jobs first, while the controller is there to end them. Without one (a start that failed), scancel
# could only wait, and a slurmd busy trying to register would take 10 s to heed TERM: KILL at once.
[ $ctld = 1 ] && timeout 10 scancel --full -u "$(id -un)" >/dev/null 2>&1
pids=()
for p in $(ours | sort -un); do
  [ $ctld = 1 ] && [ "$p" != "$$" ] && kill -TERM "$p" 2>/dev/null && pids+=("$p")
done
for _ in $(seq 100); do
  alive=0
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
  [ $alive = 0 ] && break
  sleep 0.1
done
for p in $(ours | sort -un); do
  [ "$p" != "$$" ] && kill -KILL "$p" 2>/dev/null
done
rm -f "$dir"/run/*.pid
exit 0
