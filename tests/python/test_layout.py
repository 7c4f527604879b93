"""The shape of the Python package (issue 25): sub-packages whose dependencies point down, no import
circle, no oversized module, and SQL only in the store.

Read from the source with ast, never by importing, so a circle is found even where a lazy import
inside a function would hide it at run time.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "python" / "bobcat"

# Layers, lowest first: a module may import from its own layer and the ones below it.
LAYERS = {
    "bobcat.paths": 0, "bobcat": 0,
    "bobcat.launcher": 1, "bobcat.external": 1,
    "bobcat.evaluation": 2,
    "bobcat.report": 3, "bobcat.bench": 3,
    "bobcat.cli": 4, "bobcat.console": 4, "bobcat.doctor": 4,
}
MAX_LINES = 700


def _modules() -> dict[str, Path]:
    mods = {}
    for f in PKG.rglob("*.py"):
        parts = f.relative_to(PKG.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = f
    return mods


def _imports(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """bobcat modules `name` imports anywhere in its body (lazy and TYPE_CHECKING ones too), and the
    packages whose __init__ that runs."""
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = pkg.split(".")
                base = ".".join(up[:len(up) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
        for t in targets:
            while t and t not in mods:
                t = t.rpartition(".")[0]
            # Importing a.b.c runs a/__init__ and a/b/__init__ first.
            parts = t.split(".")
            out.update(".".join(parts[:i]) for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in mods)
    out.discard(name)
    return out


def _layer(name: str) -> int:
    while name not in LAYERS:
        name = name.rpartition(".")[0]
    return LAYERS[name]


def test_every_module_has_a_layer():
    for name in _modules():
        assert name == "bobcat" or name.count(".") >= 1
        _layer(name)


def test_no_import_circle():
    mods = _modules()
    graph = {n: _imports(n, p, mods) for n, p in mods.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == 1:
                raise AssertionError("import circle: " + " -> ".join(stack[stack.index(m):] + [m]))
            if m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)


def test_dependencies_point_down():
    mods = _modules()
    up = [f"{n} imports {m}" for n, p in mods.items() for m in _imports(n, p, mods)
          if _layer(m) > _layer(n) or (_layer(m) == _layer(n) and m.split(".")[:2] != n.split(".")[:2]
                                       and _layer(n) in (1, 3))]
    assert not up, "imports against the layering (cli/console/doctor > report, bench > evaluation " \
                   "> launcher, external > paths): " + "; ".join(sorted(up))


def test_package_inits_import_nothing():
    """yod pays for every module its packages' __init__ files import, on every job."""
    for name, path in _modules().items():
        if path.name == "__init__.py":
            imports = [n for n in ast.parse(path.read_text()).body
                       if isinstance(n, (ast.Import, ast.ImportFrom))]
            assert not imports, f"{path} imports at package level"


def test_no_oversized_module():
    big = {str(p.relative_to(PKG)): n for p in PKG.rglob("*.py")
           if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not big, f"modules over {MAX_LINES} lines (split them along their jobs): {big}"


def test_sql_only_in_the_store():
    """The store reads what it writes: nobody else opens the database or writes SQL."""
    others = []
    for name, path in _modules().items():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if "sqlite3" in names and name != "bobcat.evaluation.store":
                others.append(name)
            # SQL text handed to a cursor: .execute("SELECT ...") and friends.
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("execute", "executemany", "executescript") and node.args
                    and isinstance(node.args[0], (ast.Constant, ast.JoinedStr, ast.BinOp))
                    and name != "bobcat.evaluation.store"):
                others.append(f"{name} (.{node.func.attr})")
    assert not others, f"SQLite used outside bobcat.evaluation.store: {sorted(set(others))}"


def test_yod_imports_only_its_own():
    """What `bin/yod` loads before main() (python -S, as the wrapper runs it): the launcher's two
    modules and os. A package __init__ that pulled in its family, or a module that brought back
    `from __future__` (~0.1 ms, as much as the launcher package itself costs), would show here."""
    code = ("import sys; base = set(sys.modules); sys.path.insert(0, sys.argv[1]); "
            "import bobcat.launcher.yod; print(' '.join(sorted(set(sys.modules) - base)))")
    r = subprocess.run([sys.executable, "-S", "-c", code, str(PKG.parent)], capture_output=True,
                       text=True, check=True)
    loaded = set(r.stdout.split())
    assert {m for m in loaded if m.startswith("bobcat")} == {
        "bobcat", "bobcat.launcher", "bobcat.launcher.yod", "bobcat.launcher.plan"}
    assert not loaded & {"__future__", "pathlib", "re", "shlex", "subprocess"}, loaded
