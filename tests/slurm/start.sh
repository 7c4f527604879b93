#!/bin/bash
# Start a private Slurm cluster (slurmctld + one slurmd per emulated node, as root) with all its
# files in DIR. Nodes are named bc1..bcN, all on this host, each with this host's CPUs.
# Usage: start.sh DIR NODES PORT   (ports PORT .. PORT+NODES are used)
# then:  export SLURM_CONF=DIR/etc/slurm.conf;  stop it with stop.sh DIR.
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
slurmctld -f "$SLURM_CONF" -i          # -i: no state from an earlier cluster
for i in $(seq "$nodes"); do
  slurmd -f "$SLURM_CONF" -N "bc$i"
done
for _ in $(seq 300); do                 # the nodes come up idle within a second here
  [ "$(sinfo -h -N -t idle -o %N 2>/dev/null | wc -l)" -ge "$nodes" ] && break
  sleep 0.1
done
if ! timeout 30 srun -N "$nodes" -n "$nodes" -t 1 true; then
  echo "start.sh: the cluster did not run a step; logs in $dir/log" >&2
  exit 1
fi
