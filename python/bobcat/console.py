"""Console output of the `bobcat` CLI that stays whole wherever it goes.

On a terminal rich fits tables to the window and draws progress bars. Anywhere else -- a file,
`less`, `tee`, CI, a batch job -- there is no window: rich would assume 80 columns (or take the
size of whatever terminal stdin is), cut table cells to `ben…` and wrap lines mid-word, and a
progress bar prints nothing until the end. So here, when the stream is not a terminal, output is
laid out at full width (never truncated, never wrapped) and progress is one plain line per run,
flushed as it happens.

Also here: the machine-readable formats of a table (`--format csv|json|markdown`).
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Sequence

from rich.console import Console, ConsoleDimensions
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)
from rich.table import Table

if TYPE_CHECKING:
    from .evaluation.campaign import Point
    from .evaluation.store import RunRecord

# Width when not writing to a terminal: wider than any line bobcat prints, so nothing is cut or
# wrapped (rich pads only table cells, to their column's width, never to the console's).
PIPE_WIDTH = 100_000
FORMATS = ("table", "csv", "json", "markdown")


class Output(Console):
    """A rich Console whose width, when its stream is not a terminal, is unlimited instead of 80
    columns or the size of another stream's terminal. It ignores COLUMNS there, and FORCE_COLOR
    or TTY_COMPATIBLE (which make rich draw colours and live displays into a pipe, as CI
    services ask) do not make a pipe narrow either. Decided at each write, so a redirected
    sys.stdout is honoured."""

    def __init__(self, *args: Any, width: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, width=width, **kwargs)
        self._asked_width = width  # rich has put COLUMNS into _width when width is None

    def _on_a_terminal(self) -> bool:
        try:
            return bool(self.file.isatty())
        except (AttributeError, ValueError):  # no isatty, or a closed file
            return False

    @property
    def size(self) -> ConsoleDimensions:
        if self._asked_width is None and not self._on_a_terminal():
            return ConsoleDimensions(PIPE_WIDTH, self._height or 25)
        return Console.size.fget(self)  # type: ignore[attr-defined]

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._asked_width = new_size[0]
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]


# --- tables in several formats --------------------------------------------------------------------

@dataclass
class Column:
    name: str
    right: bool = False  # right-aligned (numbers)


def emit(con: Console, fmt: str, title: str, columns: Sequence[Column],
         shown: Sequence[Sequence[str]], records: Sequence[dict[str, Any]]) -> None:
    """Print a table: `shown` (formatted cells under `columns`) as a rich table or markdown;
    `records` (raw values, numbers as numbers, one dict per row, keys in column order) as CSV or
    JSON. Machine formats go to the console's file as they are: no markup, no layout."""
    if fmt == "table":
        t = Table(title=title)
        for c in columns:
            t.add_column(c.name, justify="right" if c.right else "left")
        for row in shown:
            t.add_row(*row)
        con.print(t)
        return
    f: IO[str] = con.file
    if fmt == "csv":
        keys = list(records[0]) if records else []
        w = csv.writer(f, lineterminator="\n")
        w.writerow(keys)
        for rec in records:
            w.writerow(["" if rec[k] is None else
                        json.dumps(rec[k], sort_keys=True) if isinstance(rec[k], (dict, list))
                        else rec[k] for k in keys])
    elif fmt == "json":
        json.dump(list(records), f, indent=1)
        f.write("\n")
    elif fmt == "markdown":
        def cell(s: str) -> str:
            return s.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")
        f.write(f"{title}\n\n" if title else "")
        f.write("| " + " | ".join(cell(c.name) for c in columns) + " |\n")
        f.write("|" + "|".join("---:" if c.right else "---" for c in columns) + "|\n")
        for row in shown:
            f.write("| " + " | ".join(cell(x) for x in row) + " |\n")
    else:
        raise ValueError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    f.flush()


# --- progress of a campaign -------------------------------------------------------------------------

_HOW_FLAGS = {"--time", "--iters", "--warmup", "--max-size", "--seconds", "--reps"}  # each takes a value


def run_label(p: Point) -> str:
    """`imb allreduce lwk openmpi VN2 rep 2`: what runs, without how long it measures."""
    s = p.spec
    what, args, i = [s.benchmark], list(s.args), 0
    while i < len(args):
        if args[i] == "--test" and i + 1 < len(args):
            what.append(args[i + 1])
            i += 2
        elif args[i] in _HOW_FLAGS:
            i += 2
        else:
            what.append(args[i])
            i += 1
    if s.benchmark == "hpcc":
        what += [f"{k}={v}" for k, v in s.run_params().items() if k in ("N", "NB", "P", "Q")]
    which = "account (untimed)" if not s.timed else f"rep {p.repetition + 1}"
    return f"{' '.join(what)} {s.config} {s.mpi} {s.mode} {which}"


def failure_reason(rec: RunRecord) -> str:
    if rec.status == "timeout":
        limit = rec.config_detail.get("timeout_s")
        return f"killed at its {limit:g} s limit" if isinstance(limit, (int, float)) else \
            "killed at its time limit"
    lines = [ln.strip() for ln in rec.raw_stderr.splitlines()
             if ln.strip() and not ln.startswith("--- bobcat")]
    last = lines[-1] if lines else "no message on stderr"
    return f"exit {rec.exit_code}: {last}" if rec.exit_code else last


def crash_note(crash: dict[str, Any]) -> str:
    """`crashed: exit 139 (SIGSEGV)`, for a job that died after its valid done line."""
    sig = f" ({crash['signal']})" if crash.get("signal") else ""
    return f"crashed: exit {crash.get('exit_code')}{sig}"


class CampaignProgress:
    """Callbacks for campaign.execute. On a terminal: a progress bar with ETA, failures printed
    above it as they happen. Otherwise: one line per run as it ends, flushed, e.g.
    `[37/246] imb allreduce lwk openmpi VN2 rep 2: ok 3.1 s`, failures with their reason."""

    def __init__(self, con: Console, name: str) -> None:
        self.con, self.name = con, name
        self.total = self.done_n = 0
        self.bar: Progress | None = None
        if con.is_terminal:
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                                console=con, transient=False)
            self.task = self.bar.add_task(name, total=None)

    def __enter__(self) -> CampaignProgress:
        if self.bar:
            self.bar.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.bar:
            self.bar.stop()

    def on_start(self, total: int, done: int) -> None:
        self.total, self.done_n = total, done
        if self.bar:
            # ETA from this session's runs only: restart the clock past what resume skipped.
            self.bar.reset(self.task, total=total, completed=done)

    def on_run(self, p: Point, phase: str) -> None:
        if self.bar:
            self.bar.update(self.task, description=f"{phase:5} {run_label(p)}")

    def on_done(self, p: Point, rec: RunRecord) -> None:
        self.done_n += 1
        ok = rec.status == "ok"
        crash = rec.config_detail.get("crashed_after_done")
        line = (f"[{self.done_n}/{self.total}] {run_label(p)}: {rec.status} {rec.duration:.1f} s"
                + ("" if ok else f" ({failure_reason(rec)})")
                + (f" (results kept; then the job {crash_note(crash)})" if crash else ""))
        if self.bar:
            self.bar.advance(self.task)
            if not ok or crash:
                self.bar.console.print(line, highlight=False, markup=False)
            return
        self.con.print(line, highlight=False, markup=False)
        self.con.file.flush()


def plain_line(con: Console, text: str) -> None:
    """A line of progress where no terminal shows a spinner: printed and flushed at once."""
    con.print(text, highlight=False, markup=False)
    con.file.flush()

