"""`bobcat export`: the database as CSV (one row per metric) or JSON (one object per run).

CSV is for spreadsheets and pandas: flat, one metric value per row with its run's identity.
JSON keeps everything a run stored (machine facts, probes, raw output) for archiving.
"""
from __future__ import annotations

import csv
import json
from typing import IO, Any

from ..evaluation.store import Store

CSV_COLUMNS = ["run_id", "campaign_id", "seq", "benchmark", "config", "mpi", "mode", "ranks",
               "repetition", "placement", "status", "started", "bench", "name", "value", "unit",
               "better", "size", "params", "run_params"]
_JSON_FIELDS = ("params", "machine", "config_detail", "probe_before", "probe_after", "command")


def write_csv(store: Store, out: IO[str]) -> int:
    w = csv.writer(out)
    w.writerow(CSV_COLUMNS)
    n = 0
    for r in store.metric_rows(statuses=("ok", "failed", "timeout")):
        w.writerow([r[c] for c in CSV_COLUMNS])
        n += 1
    return n


def runs_as_dicts(store: Store) -> list[dict[str, Any]]:
    out = []
    for r in store.runs():
        d = dict(r)
        for k in _JSON_FIELDS:
            if d.get(k) is not None:
                d[k] = json.loads(d[k])
        d["metrics"] = [{**dict(m), "params": json.loads(m["params"] or "{}")}
                        for m in store.metrics_of(r["id"])]
        for m in d["metrics"]:
            del m["run_id"]
        out.append(d)
    return out


def write_json(store: Store, out: IO[str]) -> int:
    runs = runs_as_dicts(store)
    campaigns = []
    for c in store.campaigns():
        d = dict(c)
        for k in ("spec", "summary"):
            d[k] = json.loads(d[k]) if d.get(k) else None
        campaigns.append(d)
    json.dump({"campaigns": campaigns, "runs": runs}, out, indent=1)
    out.write("\n")
    return len(runs)
