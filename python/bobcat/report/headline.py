"""Headline metrics: the few numbers per benchmark a reader compares first.

`bobcat compare` shows only these unless given `--all` (or `--metric NAME`, which asks for one
metric at every size). The rule per benchmark is documented in docs/evaluation.md ("Headline
metrics"); keep the two in step. Everything a benchmark measures stays in the database and in
`bobcat export`.
"""
from __future__ import annotations

from typing import Any

LATENCY_BYTES = 8
BANDWIDTH_BYTES = (64 << 10, 1 << 20)
HEADLINE_BYTES = (LATENCY_BYTES, *BANDWIDTH_BYTES)

IMB_P2P = frozenset({"pingpong", "pingping", "sendrecv", "exchange"})
IMB_COLLECTIVES = frozenset({"bcast", "reduce", "allreduce", "allgather", "alltoall",
                             "reduce_scatter", "iallreduce", "ialltoall"})

# HPCC's published results (the columns of the HPC Challenge results table: G-HPL, G-PTRANS,
# G-RandomAccess, G-FFT, EP-STREAM Triad, EP-DGEMM, RandomRing bandwidth and latency) -- never its
# inputs (N, NB, P, Q, ...), timings, residuals or build facts.
HPCC_RESULTS = ("HPL_Tflops", "PTRANS_GBs", "MPIRandomAccess_GUPs", "MPIFFT_Gflops",
                "StarSTREAM_Triad", "StarDGEMM_Gflops", "RandomlyOrderedRingBandwidth_GBytes",
                "RandomlyOrderedRingLatency_usec")

# Benchmarks whose headline is a fixed set of metric names, whatever the parameters.
_BY_NAME: dict[str, frozenset[str]] = {
    "probe": frozenset({"oneway_ns"}),
    "selfish": frozenset({"detour_rate", "detour_max", "time_lost"}),
    "ring": frozenset({"lat_avg", "bw_avg"}),
    "ptrans": frozenset({"bandwidth"}),
    "fft": frozenset({"gflops"}),
    "io": frozenset({"write_bw", "read_bw"}),
    "hpcc": frozenset(HPCC_RESULTS),
    # OpenSHMEM on one node: put/get latency, the atomic, the barrier, and put bandwidth at every
    # size it measures (64 KiB .. 4 MiB); not the memcpy reference or the put issue rate.
    "shmem": frozenset({"put_latency", "get_latency", "fetch_add", "fetch_add_contended",
                         "barrier_all", "put_bw"}),
}


def is_headline(benchmark: str, bench: str, metric: str, size: int | None,
                params: dict[str, Any]) -> bool:
    """Whether a metric (of run benchmark `benchmark`, JSON bench `bench`, message size `size`,
    metric parameters `params`) is a headline one. A benchmark (or IMB test) without a rule here
    shows everything: better too much than a silently empty comparison."""
    if benchmark in _BY_NAME:
        return metric in _BY_NAME[benchmark]
    if benchmark == "stream":  # the aggregate of all ranks at once (the SN vs VN comparison)
        return metric == "triad" and params.get("phase") == "all"
    if benchmark == "gups":
        return metric == "gups_sum" or (metric == "gups" and params.get("mode") == "mpi")
    if benchmark == "imb":
        if bench in IMB_P2P:
            return (metric == "t_avg" and size == LATENCY_BYTES) or \
                (metric == "bandwidth" and size in BANDWIDTH_BYTES)
        if bench == "barrier":
            return metric == "t_avg"
        if bench in IMB_COLLECTIVES:
            # IMB-NBC's overlap of the nonblocking ones at 1 MiB (imb --overlap)
            return (metric == "t_avg" and size in HEADLINE_BYTES) or (metric == "overlap" and size == 1 << 20)
        if bench == "msgrate":
            return metric == "msgrate"
    return True
