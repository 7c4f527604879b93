"""The results database: one SQLite file, schema of docs/design/contracts.md §4. The only module that
speaks SQL: the evaluation writes through Store, and compare, export and the report read through
Store and read_contents.

Durability rule: a run, its metrics and its account are written in one transaction, in WAL mode with
synchronous=FULL, so a Ctrl-C, a crash or a SIGKILL of bobcat never leaves half a run and never
loses a completed one.  Campaign rows carry the expanded spec so `--resume` can continue them.
"""
from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from .parsers import Metric

# 2 added the accounts table. A database of an older version this bobcat still reads (READABLE) is
# read as it is, and brought to SCHEMA_VERSION when opened for writing: every change so far only adds.
SCHEMA_VERSION = "2"
READABLE_VERSIONS = ("1", "2")
DEFAULT_DB = Path("results") / "bobcat.db"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta      (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS campaigns (id INTEGER PRIMARY KEY, name TEXT, spec TEXT, started REAL,
                                      finished REAL, status TEXT, summary TEXT);
CREATE TABLE IF NOT EXISTS runs      (id INTEGER PRIMARY KEY, campaign_id INTEGER, seq INTEGER,
                                      benchmark TEXT, config TEXT, mpi TEXT, mode TEXT, ranks INTEGER,
                                      params TEXT, repetition INTEGER, started REAL, duration REAL,
                                      status TEXT, exit_code INTEGER,
                                      machine TEXT, config_detail TEXT,
                                      probe_before TEXT, probe_after TEXT,
                                      placement TEXT, git_rev TEXT,
                                      command TEXT, raw_stdout TEXT, raw_stderr TEXT);
CREATE TABLE IF NOT EXISTS metrics   (run_id INTEGER REFERENCES runs(id), bench TEXT, name TEXT,
                                      value REAL, unit TEXT, better TEXT, size INTEGER, params TEXT);
CREATE TABLE IF NOT EXISTS accounts  (run_id INTEGER PRIMARY KEY REFERENCES runs(id), ranks INTEGER,
                                      missing_ranks TEXT, layer TEXT, off_reasons TEXT,
                                      on_node_calls INTEGER, on_node_bytes INTEGER,
                                      bobcat_calls INTEGER, bobcat_bytes INTEGER,
                                      bobcat_call_share REAL, bobcat_byte_share REAL,
                                      top_missed TEXT, totals TEXT);
CREATE INDEX IF NOT EXISTS runs_campaign ON runs(campaign_id, seq);
CREATE INDEX IF NOT EXISTS metrics_run ON metrics(run_id);
"""


class StoreError(Exception):
    pass


@dataclass
class RunRecord:
    benchmark: str
    config: str
    mpi: str
    mode: str
    ranks: int
    params: dict[str, Any]
    started: float
    duration: float
    status: str  # ok | failed | timeout
    exit_code: int | None
    machine: dict[str, Any]
    config_detail: dict[str, Any]
    probe_before: dict[str, Any] | None
    probe_after: dict[str, Any] | None
    placement: str
    git_rev: str | None
    command: list[str]
    raw_stdout: str
    raw_stderr: str
    metrics: list[Metric] = field(default_factory=list)
    # yod --stats FILE's account of the run (launcher/stats.py's merge, without per_rank); None
    # for a run that did not record one (not under yod, or the campaign did not ask).
    account: dict[str, Any] | None = None
    campaign_id: int | None = None
    seq: int | None = None
    repetition: int | None = None


def _json(v: Any) -> str | None:
    return None if v is None else json.dumps(v, sort_keys=True)


def _open_read_only(path: Path) -> sqlite3.Connection:
    if not path.exists():
        raise StoreError(f"no results database at {path} (run `bobcat evaluate` or "
                         "`bobcat run` first, or pass --db FILE)")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    db.row_factory = sqlite3.Row
    return db


@dataclass
class Contents:
    """Every row of a results database, each a dict of its columns (JSON columns as stored)."""
    meta: dict[str, str]
    campaigns: list[dict[str, Any]]
    runs: list[dict[str, Any]]
    metrics: list[dict[str, Any]]
    accounts: list[dict[str, Any]] = field(default_factory=list)


def read_contents(path: Path | str) -> Contents:
    """The whole database for the report, read without ever writing to it. A table the file lacks
    reads as empty and no schema version is demanded: the report shows what a database from an
    older writer, or one cut short, holds rather than nothing."""
    db = _open_read_only(Path(path))
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}

        def rows(table: str, order: str = "") -> list[dict[str, Any]]:
            if table not in tables:
                return []
            return [dict(r) for r in db.execute(f"SELECT * FROM {table}{order}")]

        return Contents(meta={r["key"]: r["value"] for r in rows("meta")},
                        campaigns=rows("campaigns", " ORDER BY id"), runs=rows("runs", " ORDER BY id"),
                        metrics=rows("metrics"), accounts=rows("accounts"))
    finally:
        db.close()


class Store:
    """Open (and create, unless read_only) the database at `path`."""

    def __init__(self, path: Path, read_only: bool = False):
        self.path = Path(path)
        if read_only:
            self.db = _open_read_only(self.path)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, timeout=30)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.row_factory = sqlite3.Row
        if not read_only:
            with self.db:
                self.db.executescript(SCHEMA)
                cols = {r["name"] for r in self.db.execute("PRAGMA table_info(campaigns)")}
                if "summary" not in cols:  # a database made by a writer without this column
                    self.db.execute("ALTER TABLE campaigns ADD COLUMN summary TEXT")
                self.db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)",
                                (SCHEMA_VERSION,))
                # An older version's database: the script above added what it lacked.
                self.db.execute("UPDATE meta SET value=? WHERE key='schema_version' AND value IN (%s)"
                                % ",".join("?" * len(READABLE_VERSIONS)),
                                (SCHEMA_VERSION, *READABLE_VERSIONS))
        row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None or row[0] not in READABLE_VERSIONS:
            found = row[0] if row else "none"
            raise StoreError(f"{self.path}: schema version {found}, this bobcat reads "
                             f"{', '.join(READABLE_VERSIONS)}; use another --db")

    def close(self) -> None:
        self.db.close()

    # --- campaigns ----------------------------------------------------------------------------

    def start_campaign(self, name: str, spec: dict[str, Any]) -> int:
        with self.db:
            cur = self.db.execute("INSERT INTO campaigns(name, spec, started, status) "
                                  "VALUES (?, ?, ?, 'running')", (name, _json(spec), time.time()))
        return int(cur.lastrowid)

    def set_campaign_status(self, cid: int, status: str, summary: dict[str, Any] | None = None) -> None:
        with self.db:
            self.db.execute("UPDATE campaigns SET status=?, finished=?, summary=? WHERE id=?",
                            (status, time.time() if status != "running" else None,
                             _json(summary), cid))

    def campaign(self, cid: int) -> sqlite3.Row | None:
        return self.db.execute("SELECT * FROM campaigns WHERE id=?", (cid,)).fetchone()

    def unfinished_campaign(self, name: str | None = None) -> sqlite3.Row | None:
        """The newest campaign (of that name) that did not finish: the one --resume continues."""
        q = "SELECT * FROM campaigns WHERE status != 'done'"
        args: tuple[Any, ...] = ()
        if name is not None:
            q += " AND name=?"
            args = (name,)
        return self.db.execute(q + " ORDER BY id DESC LIMIT 1", args).fetchone()

    def campaigns(self) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM campaigns ORDER BY id").fetchall()

    def completed_seqs(self, cid: int) -> set[int]:
        return {r[0] for r in self.db.execute("SELECT seq FROM runs WHERE campaign_id=?", (cid,))}

    # --- runs ---------------------------------------------------------------------------------

    def add_run(self, r: RunRecord) -> int:
        """Insert the run and its metrics atomically."""
        with self.db:
            cur = self.db.execute(
                "INSERT INTO runs(campaign_id, seq, benchmark, config, mpi, mode, ranks, params,"
                " repetition, started, duration, status, exit_code, machine, config_detail,"
                " probe_before, probe_after, placement, git_rev, command, raw_stdout, raw_stderr)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (r.campaign_id, r.seq, r.benchmark, r.config, r.mpi, r.mode, r.ranks,
                 _json(r.params), r.repetition, r.started, r.duration, r.status, r.exit_code,
                 _json(r.machine), _json(r.config_detail), _json(r.probe_before),
                 _json(r.probe_after), r.placement, r.git_rev, _json(r.command), r.raw_stdout,
                 r.raw_stderr))
            run_id = int(cur.lastrowid)
            self.db.executemany(
                "INSERT INTO metrics(run_id, bench, name, value, unit, better, size, params)"
                " VALUES (?,?,?,?,?,?,?,?)",
                [(run_id, m.bench, m.name, m.value, m.unit, m.better, m.size, _json(m.params))
                 for m in r.metrics])
            a = r.account
            if a is not None:
                s = a.get("summary", {})
                self.db.execute(
                    "INSERT INTO accounts(run_id, ranks, missing_ranks, layer, off_reasons,"
                    " on_node_calls, on_node_bytes, bobcat_calls, bobcat_bytes, bobcat_call_share,"
                    " bobcat_byte_share, top_missed, totals) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (run_id, a.get("ranks"), _json(a.get("missing_ranks")), _json(a.get("layer")),
                     _json(a.get("off_reasons")), s.get("on_node_calls"), s.get("on_node_bytes"),
                     s.get("bobcat_calls"), s.get("bobcat_bytes"), s.get("bobcat_call_share"),
                     s.get("bobcat_byte_share"), _json(s.get("top_missed")), _json(a.get("totals"))))
        return run_id

    def account_of(self, run_id: int) -> sqlite3.Row | None:
        return self.db.execute("SELECT * FROM accounts WHERE run_id=?", (run_id,)).fetchone()

    def metric_rows(self, configs: list[str] | None = None, benchmark: str | None = None,
                    bench: str | None = None, statuses: tuple[str, ...] = ("ok",)) -> Iterator[sqlite3.Row]:
        """Metrics joined with their run, filtered; the shape compare and export work on."""
        q = ("SELECT r.id AS run_id, r.campaign_id, r.seq, r.benchmark, r.config, r.mpi, r.mode,"
             " r.ranks, r.repetition, r.placement, r.status, r.started, r.params AS run_params,"
             " m.bench, m.name, m.value, m.unit, m.better, m.size, m.params"
             " FROM metrics m JOIN runs r ON r.id = m.run_id WHERE r.status IN (%s)"
             % ",".join("?" * len(statuses)))
        args: list[Any] = list(statuses)
        if configs:
            q += " AND r.config IN (%s)" % ",".join("?" * len(configs))
            args += configs
        if benchmark:
            q += " AND r.benchmark = ?"
            args.append(benchmark)
        if bench:
            q += " AND m.bench = ?"
            args.append(bench)
        yield from self.db.execute(q + " ORDER BY r.id", args)

    def yod_configs(self) -> list[str]:
        """The configurations whose runs went through yod (runs.config_detail.via_yod): the
        others are the peers `compare best-peer` picks from."""
        q = ("SELECT DISTINCT config FROM runs WHERE json_extract(config_detail, '$.via_yod') IN (1, 'true')")
        return sorted(r[0] for r in self.db.execute(q))

    def configs_present(self) -> list[str]:
        """The configurations the database has runs of, whatever their status."""
        return sorted(r[0] for r in self.db.execute("SELECT DISTINCT config FROM runs"))

    def runs(self) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM runs ORDER BY id").fetchall()

    def metrics_of(self, run_id: int) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM metrics WHERE run_id=?", (run_id,)).fetchall()
