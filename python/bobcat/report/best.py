"""The best peer per metric across every installed MPI (issue 29): for one measurement (a metric at
one point and mode), which (configuration, MPI) of the peers -- every configuration that does not
run under yod, with Debian's MPIs and today's (Open MPI 5, MPICH 5, Intel MPI) -- has the best
median, the best among Debian's two alone, and the reference (lwk) beside them.

One decision, used by `bobcat compare best-peer lwk` (from the store's rows) and by the report
(from its Dataset): both hand over the same shape, {(config, mpi): {run key: value}}, where a run
key is (campaign, repetition, run id), so the per-repetition ratios pair the runs the interleaved
protocol ran back to back.
"""
from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..evaluation.configs import SYSTEM_MPIS

RunKey = tuple  # (campaign id, repetition, run id)


@dataclass(frozen=True)
class Series:
    """One configuration with one MPI at one measurement: one value per run (a run's repeated
    values already reduced to their median)."""
    config: str
    mpi: str
    values: Mapping[RunKey, float]

    @property
    def median(self) -> float:
        return statistics.median(self.values.values())

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def name(self) -> str:
        return f"{self.config}/{self.mpi}"


@dataclass(frozen=True)
class Best:
    """The reference's best series, the best of Debian's MPIs and the best of every peer, with the
    reference over the best peer as a ratio of medians and the min-max of its per-repetition ratios."""
    reference: Series | None
    debian: Series | None
    peer: Series | None
    better: str
    ratio: float | None
    ratio_min: float | None
    ratio_max: float | None
    peers: int  # how many peer series were measured at this point
    # The reference's medians over its MPIs (lowest, highest): how much its best owes to the pick.
    reference_range: tuple[float, float] | None = None

    @property
    def verdict(self) -> str:
        """'reference', 'peer', 'same', or '?' (no direction, or a side missing)."""
        if self.ratio is None or self.better not in ("higher", "lower"):
            return "?"
        if self.ratio == 1.0:
            return "same"
        return "reference" if (self.ratio > 1) == (self.better == "higher") else "peer"


def best_of(series: Iterable[Series], better: str) -> Series | None:
    """The series with the best median by the metric's direction (the first of equals, in the order
    given); None when there is none."""
    chosen: Series | None = None
    for s in series:
        if not s.values:
            continue
        if chosen is None or (s.median > chosen.median if better == "higher" else s.median < chosen.median):
            chosen = s
    return chosen


def _ratio(b: float, a: float) -> float | None:
    return b / a if a else None


def pick(by_series: Mapping[tuple[str, str], Mapping[RunKey, float]], better: str, reference: str,
         is_peer_config, reference_mpi: str | None = None) -> Best:
    """The best peer of one measurement. by_series: {(config, mpi): {run key: value}};
    is_peer_config(config): whether a configuration is a peer (not under yod, not the reference);
    reference_mpi: only that MPI's series of the reference (default: its best over every MPI)."""
    order = sorted(by_series)
    series = [Series(c, m, by_series[(c, m)]) for c, m in order]
    refs = [s for s in series if s.config == reference and s.values
            and (reference_mpi is None or s.mpi == reference_mpi)]
    ref = best_of(refs, better)
    meds = [s.median for s in refs]
    peers = [s for s in series if s.config != reference and is_peer_config(s.config)]
    peer = best_of(peers, better)
    debian = best_of([s for s in peers if s.mpi in SYSTEM_MPIS], better)
    ratio = lo = hi = None
    if ref is not None and peer is not None:
        ratio = _ratio(ref.median, peer.median)
        by_rep_r = {k[:2]: v for k, v in ref.values.items() if k[0] is not None}
        by_rep_p = {k[:2]: v for k, v in peer.values.items() if k[0] is not None}
        shared = sorted(set(by_rep_r) & set(by_rep_p), key=str)
        ratios = [_ratio(by_rep_r[k], by_rep_p[k]) for k in shared] if shared else \
            [_ratio(a, b) for a in ref.values.values() for b in peer.values.values()]
        finite = [x for x in ratios if x is not None]
        lo, hi = (min(finite), max(finite)) if finite else (None, None)
    return Best(ref, debian, peer, better, ratio, lo, hi, len(peers),
                (min(meds), max(meds)) if meds else None)


CAPTION = ("For each headline metric: the best peer, i.e. the (configuration, MPI) with the best "
           "median among every configuration that does not run under yod, with every installed MPI "
           "(Debian's Open MPI 4.1 and MPICH 4.0, and Open MPI 5, MPICH 5 and Intel MPI where "
           "scripts/peers.sh installed them); the best of Debian's two alone; and {ref} at its best "
           "over the same MPIs, with the range of its medians over them. {ref}/best is the ratio of medians, spread the min–max of the "
           "per-repetition ratios of the two winners. A best of many series under noise flatters "
           "the side with more series, here the peers.")
