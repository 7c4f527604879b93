#!/bin/bash
# Start a private Slurm cluster (slurmctld + one slurmd per emulated node, as root) with all its
# files in DIR. Nodes are named bc1..bcN, all on this host, each with this host's CPUs.
# Usage: start.sh DIR NODES PORT   (ports PORT .. PORT+NODES are used; pick them outside the
#        kernel's ephemeral range, where any outgoing connection can take them first)
# then:  export SLURM_CONF=DIR/etc/slurm.conf;  stop it with stop.sh DIR (on every path: a failed
#        start may leave daemons running).
# Exit status: 0 the cluster ran a step; 3 a daemon could not bind its port (pick other ports and
# retry); 1 any other failure (logs in DIR/log).
set -euo pipefail
dir=$(mkdir -p "${1:?usage: start.sh DIR NODES PORT}" && cd "$1" && pwd)
nodes=${2:?NODES}
port=${3:?PORT}
host=$(hostname -s)
mkdir -p "$dir"/{etc,state,run,log,tmp}
node_lines=""
for i in $(seq "$nodes"); do
  mkdir -p "$dir/spool/slurmd-bc$i"
  node_lines+="NodeName=bc$i NodeHostname=$host NodeAddr=127.0.0.1 Port=$((port + i)) CPUs=$(nproc) State=UNKNOWN\n"
done
sed -e "s|@DIR@|$dir|g" -e "s|@HOST@|$host|g" -e "s|@USER@|$(id -un)|g" -e "s|@CTLD_PORT@|$port|g" \
    -e "s|@NODES@|${node_lines%\\n}|" "$(dirname "$0")/slurm.conf.in" > "$dir/etc/slurm.conf"
export SLURM_CONF="$dir/etc/slurm.conf"

# The daemons fork into the background before they bind, so a port taken in the meantime shows up
# only in their logs (slurmctld: fatal; slurmd: "Unable to bind listen port").
bind_failed() {
  grep -qsE 'Unable to bind|Address already in use' "$dir"/log/*.log
}
fail() {
  if bind_failed; then
    echo "start.sh: a daemon could not bind its port (ports $port..$((port + nodes))):" >&2
    grep -hsE 'Unable to bind|Address already in use' "$dir"/log/*.log >&2
    exit 3
  fi
  echo "start.sh: $1; logs in $dir/log" >&2
  tail -n 20 "$dir"/log/*.log >&2 2>/dev/null || true
  exit 1
}

slurmctld -f "$SLURM_CONF" -i || fail "slurmctld did not start"   # -i: no state from an earlier cluster
for i in $(seq "$nodes"); do
  slurmd -f "$SLURM_CONF" -N "bc$i" || fail "slurmd bc$i did not start"
done
idle=0
for _ in $(seq 600); do                 # the nodes come up idle within a second on a quiet machine
  bind_failed && fail "bind"
  idle=$(sinfo -h -N -t idle -o %N 2>/dev/null | wc -l)
  [ "$idle" -ge "$nodes" ] && break
  sleep 0.1
done
[ "$idle" -ge "$nodes" ] || fail "only $idle of $nodes nodes came up idle within 60 s"
# --foreground: stay in our process group, so whoever ends this script ends the step too.
if ! timeout --foreground 30 srun -N "$nodes" -n "$nodes" -t 1 true; then
  fail "the cluster did not run a step"
fi
