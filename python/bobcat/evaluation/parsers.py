"""Turn what a benchmark printed into metrics.

Two formats: the JSON lines every bobcat benchmark prints (docs/design/contracts.md §3), and the
summary section of HPCC's hpccoutf.txt (Debian's unmodified hpcc).  Parsers never raise on odd
input: a run whose output cannot be understood is stored as failed with its raw output, so the
evidence is kept.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

PLACEMENTS = ("smt", "core", "chip")


@dataclass
class Metric:
    bench: str
    name: str
    value: float
    unit: str
    better: str  # "higher", "lower", or "" when the direction is unknown
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def size(self) -> int | None:
        b = self.params.get("bytes")
        return int(b) if isinstance(b, (int, float)) and not isinstance(b, bool) else None


@dataclass
class Parsed:
    metrics: list[Metric] = field(default_factory=list)
    done: dict[str, Any] | None = None  # the closing {"done": true, ...} line
    problems: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return self.done is not None and bool(self.done.get("valid", False))


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def parse_jsonl(text: str) -> Parsed:
    """Parse contracts §3 output.  Lines that are not JSON objects are reported as problems
    (launchers sometimes print banners on stdout) but do not stop the parse."""
    out = Parsed()
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            out.problems.append(f"line {lineno}: not JSON: {line[:80]}")
            continue
        if not isinstance(obj, dict):
            out.problems.append(f"line {lineno}: not a JSON object")
            continue
        if obj.get("done") is True:
            out.done = obj
            continue
        missing = [k for k in ("bench", "metric", "value", "unit", "better") if k not in obj]
        value = _number(obj.get("value"))
        if missing or value is None:
            why = f"missing {', '.join(missing)}" if missing else "value is not a finite number"
            out.problems.append(f"line {lineno}: {why}")
            continue
        better = obj["better"] if obj["better"] in ("higher", "lower") else ""
        params = obj.get("params") if isinstance(obj.get("params"), dict) else {}
        extra = {k: obj[k] for k in ("placement",) if k in obj}
        out.metrics.append(Metric(str(obj["bench"]), str(obj["metric"]), value, str(obj["unit"]),
                                  better, {**params, **extra}))
    return out


def parse_probe(text: str) -> dict[str, Any] | None:
    """The cache-line probe's record: the first `oneway_ns` line, with its placement."""
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and obj.get("metric") == "oneway_ns":
            if obj.get("placement") not in PLACEMENTS:
                obj["placement"] = classify_placement(_number(obj.get("value")))
            return obj
    return None


def classify_placement(oneway_ns: float | None) -> str:
    """The thresholds of contracts §3, for a probe that did not classify itself."""
    if oneway_ns is None:
        return "unknown"
    if oneway_ns < 40:
        return "smt"
    return "core" if oneway_ns <= 150 else "chip"


def run_placement(before: dict[str, Any] | None, after: dict[str, Any] | None) -> str:
    """A run's placement is the probe's when the probes before and after the run agree."""
    if not before or not after:
        return "unknown"
    a, b = before.get("placement"), after.get("placement")
    if a not in PLACEMENTS or b not in PLACEMENTS:
        return "unknown"
    return a if a == b else "mixed"


# --- HPCC -------------------------------------------------------------------------------------

# (pattern on the summary key, unit, better); first match wins.  Keys not matched keep their
# value with no unit and no direction.
_HPCC_TABLE: list[tuple[re.Pattern[str], str, str]] = [
    (re.compile(r"^HPL_Tflops$"), "Tflop/s", "higher"),
    (re.compile(r".*_Gflops$"), "Gflop/s", "higher"),
    (re.compile(r"^PTRANS_GBs$"), "GB/s", "higher"),
    (re.compile(r".*_GUPs$"), "GUP/s", "higher"),
    (re.compile(r"^(Star|Single)STREAM_(Copy|Scale|Add|Triad)$"), "GB/s", "higher"),
    (re.compile(r".*Latency_usec$"), "us", "lower"),
    (re.compile(r".*Bandwidth_GBytes$"), "GB/s", "higher"),
    (re.compile(r".*_(time|CheckTime)$"), "s", "lower"),
    (re.compile(r".*_time\d$"), "s", "lower"),
    (re.compile(r".*(Errors|ErrorsFraction|maxErr|_residual)$"), "", "lower"),
]


def hpcc_unit(key: str) -> tuple[str, str]:
    for pat, unit, better in _HPCC_TABLE:
        if pat.match(key):
            return unit, better
    return "", ""


def parse_hpcc(text: str) -> Parsed:
    """Parse hpccoutf.txt.  The file is appended to by every run in a directory, so only the
    last summary section counts (runs use a fresh directory anyway)."""
    out = Parsed()
    start = text.rfind("Begin of Summary section.")
    end = text.find("End of Summary section.", start)
    if start < 0 or end < 0:
        out.problems.append("no complete 'Begin of Summary section' ... 'End of Summary section'")
        return out
    summary: dict[str, float] = {}
    for line in text[start:end].splitlines()[1:]:
        key, sep, raw = line.partition("=")
        if not sep:
            continue
        try:
            value = float(raw.strip())
        except ValueError:
            continue  # VersionRelease=f, HPL_cpfact=R: labels, not measurements
        if math.isfinite(value):
            summary[key.strip()] = value
    procs = int(summary.get("CommWorldProcs", 0)) or None
    params: dict[str, Any] = {"ranks": procs} if procs else {}
    for key, value in summary.items():
        unit, better = hpcc_unit(key)
        out.metrics.append(Metric("hpcc", key, value, unit, better, dict(params)))
    out.done = {"bench": "hpcc", "done": True, "valid": summary.get("Success") == 1.0}
    return out


def hpcc_input(n: int, nb: int, p: int, q: int) -> str:
    """An hpccinf.txt for one problem size, block size and P x Q grid (HPCC reads it from cwd)."""
    lines = [
        "HPLinpack benchmark input file",
        "written by bobcat",
        "HPL.out      output file name (if any)",
        "8            device out (6=stdout,7=stderr,file)",
        "1            # of problems sizes (N)",
        f"{n}         Ns",
        "1            # of NBs",
        f"{nb}          NBs",
        "0            PMAP process mapping (0=Row-,1=Column-major)",
        "1            # of process grids (P x Q)",
        f"{p}            Ps",
        f"{q}            Qs",
        "16.0         threshold",
        "1            # of panel fact",
        "2            PFACTs (0=left, 1=Crout, 2=Right)",
        "1            # of recursive stopping criterium",
        "4            NBMINs (>= 1)",
        "1            # of panels in recursion",
        "2            NDIVs",
        "1            # of recursive panel fact.",
        "1            RFACTs (0=left, 1=Crout, 2=Right)",
        "1            # of broadcast",
        "1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)",
        "1            # of lookahead depth",
        "1            DEPTHs (>=0)",
        "2            SWAP (0=bin-exch,1=long,2=mix)",
        "64           swapping threshold",
        "0            L1 in (0=transposed,1=no-transposed) form",
        "0            U  in (0=transposed,1=no-transposed) form",
        "1            Equilibration (0=no,1=yes)",
        "8            memory alignment in double (> 0)",
        "##### This line (no. 32) is ignored (it serves as a separator). ######",
        "0                      \t\tNumber of additional problem sizes for PTRANS",
        "1200 10000 30000        \tvalues of N",
        "0                       \tnumber of additional blocking sizes for PTRANS",
        "40 9 8 13 13 20 16 32 64       \tvalues of NB",
    ]
    return "\n".join(lines) + "\n"
