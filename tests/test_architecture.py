"""The architecture's rules, checked on the source (../shared/ARCHITECTURE.md):

- the core is pure: nothing under cobell_cli/core/ does I/O, reads the clock, the environment
  or the OS's entropy, or imports an edge of cobell;
- no import circles: neither between the package's parts (cli, api, run, sources, store,
  cluster, core and the top-level modules) nor between its modules;
- arrows point down the layers: cli -> api -> edges (run, sources, store, cluster, config, ...)
  -> core -> errors.

Every import counts: module level, inside functions and under `if TYPE_CHECKING:`. An import
hidden in a function still runs, and a type-only one still ties the two modules' designs
together, so neither is a way around a rule. The source is parsed with `ast`, not imported,
so the tests see imports that a run never reaches.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "cobell_cli"
ROOT = "cobell_cli"

# Top to bottom. A part may import its own layer (without a circle) or any layer below it.
# The root package (`cobell_cli/__init__.py`: the version) and errors.py (exception types and
# exit codes) are the floor everything may stand on. timespec.py parses user text, an edge's
# job: the core receives epoch seconds (CONVENTIONS, "Time").
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"__main__", "cli", "docs"}),
    frozenset({"api"}),
    frozenset({"run", "sources", "store", "cluster", "config", "output", "timespec", "redact",
               "interrupts", "threads", "examples"}),
    frozenset({"core"}),
    frozenset({ROOT, "errors"}),
)

# What the core may not import, by top-level module name. Each does I/O, reads the clock, the
# environment or the OS's entropy, runs processes or talks to the network, or is an edge's
# library. Pure helpers of the standard library (math, statistics, hashlib, json, re, bisect,
# heapq, functools, dataclasses, typing, ...) and numpy/scipy computations stay allowed.
IMPURE_MODULES = frozenset({
    # files and the file system
    "io", "os", "pathlib", "shutil", "tempfile", "glob", "fileinput", "mmap", "fcntl",
    "csv", "pickle", "shelve", "dbm", "sqlite3", "sqlite_utils", "gzip", "bz2", "lzma",
    "zipfile", "tarfile", "zstandard", "lz4", "snappy", "cramjam", "importlib",
    # the clock and the local zone
    "time", "datetime", "zoneinfo", "sched",
    # the environment, the process and its terminal
    "sys", "getpass", "platform", "locale", "pwd", "grp", "resource", "signal", "atexit",
    "tty", "termios", "curses", "readline", "logging", "ctypes", "builtins",
    # other processes and threads
    "subprocess", "multiprocessing", "threading", "_thread", "concurrent", "asyncio",
    "select", "selectors",
    # the network
    "socket", "ssl", "http", "urllib", "requests", "requests_gssapi", "urllib3", "email",
    "smtplib", "ftplib", "webbrowser", "xmlrpc",
    # the OS's entropy (seeded numpy generators are fine)
    "random", "secrets", "uuid",
    # the edges' libraries
    "typer", "click", "rich", "tabulate", "matplotlib", "pyspark",
})
IMPURE_BUILTINS = frozenset({"open", "print", "input", "breakpoint", "exec", "eval", "compile",
                             "__import__"})
# numpy's file I/O, and the generator that seeds itself from the OS when given no seed.
NUMPY_IO = frozenset({"load", "save", "savez", "savez_compressed", "loadtxt", "savetxt",
                      "genfromtxt", "fromfile", "tofile", "memmap", "fromregex", "DataSource"})


@dataclass(frozen=True)
class Import:
    """One import statement's target, resolved to a module of the package or a library."""

    source: str  # the importing module, e.g. cobell_cli.store.history
    target: str  # what it needs, e.g. cobell_cli.store.journal or numpy
    line: int

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} (line {self.line})"


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its __init__.py)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known: Mapping[str, Path]) -> Iterator[Import]:
    """Each import anywhere in the module, its target the deepest module of the package it
    names. `from pkg import submodule` inside pkg needs only the submodule: pkg itself is
    already being imported then, so that is not an edge to pkg's __init__."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(name, is_package, node.level, node.module)
            subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known]
            inside = name.startswith(base + ".")
            targets = subs if subs and len(subs) == len(node.names) and inside else [base, *subs]
        else:
            continue
        for target in targets:
            yield Import(name, _deepest(target, known), node.lineno)


def _absolute(name: str, is_package: bool, level: int, module: str | None) -> str:
    if not level:
        return module or ""
    parts = name.split(".")[: len(name.split(".")) - level + (1 if is_package else 0)]
    return ".".join([*parts, *([module] if module else [])])


def _deepest(target: str, known: Mapping[str, Path]) -> str:
    """cobell_cli.core.plan.Plan -> cobell_cli.core.plan; libraries stay as written."""
    if not (target == ROOT or target.startswith(ROOT + ".")):
        return target
    while target not in known and "." in target:
        target = target.rsplit(".", 1)[0]
    return target


def part(module: str) -> str:
    """The package part a module belongs to: `store` for cobell_cli.store.history, `config`
    for cobell_cli.config, the root for cobell_cli itself."""
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 else ROOT


def layer(part_name: str) -> int:
    for rank, parts in enumerate(LAYERS):
        if part_name in parts:
            return rank
    raise AssertionError(f"{part_name!r} is in no layer: add it to LAYERS in {__file__}")


def internal_imports(package: Path = PACKAGE) -> list[Import]:
    known = modules(package)
    return [imp for name, path in known.items() for imp in imports(name, path, known)
            if imp.target in known and imp.target != name]


def circles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def _explain(found: Sequence[Sequence[str]], imps: Sequence[Import], key) -> str:
    lines = []
    for component in found:
        members = set(component)
        lines.append(f"circle {' <-> '.join(component)}:")
        lines += [f"  {imp}" for imp in imps if key(imp.source) in members
                  and key(imp.target) in members and key(imp.source) != key(imp.target)]
    return "\n".join(lines)


def part_circles(imps: Sequence[Import]) -> str:
    edges: dict[str, set[str]] = {}
    for imp in imps:
        if part(imp.source) != part(imp.target):
            edges.setdefault(part(imp.source), set()).add(part(imp.target))
    return _explain(circles(edges), imps, part)


def module_circles(imps: Sequence[Import]) -> str:
    edges: dict[str, set[str]] = {}
    for imp in imps:
        edges.setdefault(imp.source, set()).add(imp.target)
    return _explain(circles(edges), imps, lambda m: m)


def upward_imports(imps: Sequence[Import]) -> list[str]:
    return [f"{imp}: {part(imp.source)} may not import {part(imp.target)}, a layer above it"
            for imp in imps if layer(part(imp.source)) > layer(part(imp.target))]


def impurities(package: Path = PACKAGE) -> list[str]:
    """Every way a module under core/ could reach the world, by file and line."""
    known = modules(package)
    core = {name: path for name, path in known.items() if part(name) == "core"}
    found = []
    for name, path in core.items():
        for imp in imports(name, path, known):
            if imp.target in known and part(imp.target) not in ("core", "errors"):
                found.append(f"{imp}: the core imports the edge {part(imp.target)!r}")
            elif imp.target.split(".")[0] in IMPURE_MODULES:
                found.append(f"{imp}: the core may not import {imp.target.split('.')[0]!r}")
        found += [f"{name}: {why}" for why in _impure_calls(ast.parse(path.read_text()))]
    return found


def _impure_calls(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in IMPURE_BUILTINS:
            yield f"calls {func.id}() (line {node.lineno})"
        elif isinstance(func, ast.Attribute):
            if func.attr in NUMPY_IO:
                yield f"calls .{func.attr}(), numpy's file I/O (line {node.lineno})"
            elif func.attr == "default_rng" and not (node.args or node.keywords):
                yield f"calls default_rng() without a seed, the OS's entropy (line {node.lineno})"


def test_the_core_is_pure() -> None:
    assert not impurities(), "\n".join(impurities())


def test_no_circle_between_the_parts_of_the_package() -> None:
    found = part_circles(internal_imports())
    assert not found, found


def test_no_circle_between_modules() -> None:
    found = module_circles(internal_imports())
    assert not found, found


def test_arrows_point_down_the_layers() -> None:
    found = upward_imports(internal_imports())
    assert not found, "\n".join(found)


def test_every_part_has_a_layer() -> None:
    parts = {part(name) for name in modules()}
    assert parts <= set().union(*LAYERS), parts - set().union(*LAYERS)


# The checks themselves must be able to fail: each rule on a small package that breaks it.

def _package(tmp_path: Path, files: Mapping[str, str]) -> Path:
    root = tmp_path / ROOT
    for rel, text in {"__init__.py": "", **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize("body, why", [
    ("import time\n", "'time'"),
    ("def f():\n    import os.path\n", "'os'"),
    ("from datetime import datetime\n", "'datetime'"),
    ("def f():\n    from cobell_cli.store import history\n", "edge 'store'"),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cobell_cli.cluster.base"
     " import Cluster\n", "edge 'cluster'"),
    ("from ..output import table\n", "edge 'output'"),
    ("def f(p):\n    return open(p).read()\n", "open()"),
    ("import numpy as np\nrng = np.random.default_rng()\n", "without a seed"),
    ("import numpy as np\ndef f(p):\n    return np.loadtxt(p)\n", "loadtxt"),
])
def test_purity_check_catches(tmp_path: Path, body: str, why: str) -> None:
    package = _package(tmp_path, {
        "core/__init__.py": "", "core/x.py": body, "store/__init__.py": "",
        "store/history.py": "", "cluster/__init__.py": "", "cluster/base.py": "",
        "output.py": "",
    })
    found = impurities(package)
    assert found and all(why in line for line in found), found


def test_purity_check_passes_pure_code(tmp_path: Path) -> None:
    package = _package(tmp_path, {
        "core/__init__.py": "", "errors.py": "",
        "core/x.py": "import math\nimport numpy as np\nfrom cobell_cli.errors import E\n"
                     "from cobell_cli.core import y\nrng = np.random.default_rng(7)\n",
        "core/y.py": "from . import x\n",
    })
    assert impurities(package) == []


def test_circle_check_catches_a_circle_hidden_in_a_function(tmp_path: Path) -> None:
    package = _package(tmp_path, {
        "api.py": "from cobell_cli.sources import record\n",
        "sources/__init__.py": "",
        "sources/record.py": "def f():\n    from cobell_cli.api import g\n",
    })
    imps = internal_imports(package)
    assert "circle api <-> sources" in part_circles(imps)
    assert "cobell_cli.sources.record -> cobell_cli.api (line 2)" in module_circles(imps)


def test_circle_check_catches_a_circle_inside_a_part(tmp_path: Path) -> None:
    package = _package(tmp_path, {
        "store/__init__.py": "from cobell_cli.store.history import History\n",
        "store/history.py": "from cobell_cli.store import journal\n",
        "store/journal.py": "def f():\n    from cobell_cli.store.history import pid_alive\n",
    })
    imps = internal_imports(package)
    assert part_circles(imps) == ""
    assert "cobell_cli.store.history <-> cobell_cli.store.journal" in module_circles(imps)


def test_a_package_importing_its_own_submodule_is_no_circle(tmp_path: Path) -> None:
    package = _package(tmp_path, {
        "store/__init__.py": "from cobell_cli.store.history import History\n",
        "store/history.py": "from cobell_cli.store import files\n",
        "store/files.py": "",
    })
    assert module_circles(internal_imports(package)) == ""


def test_layer_check_catches_an_upward_arrow(tmp_path: Path) -> None:
    package = _package(tmp_path, {
        "api.py": "", "run/__init__.py": "",
        "run/submit.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                         "    from cobell_cli.api import Prediction\n",
    })
    found = upward_imports(internal_imports(package))
    assert found == ["cobell_cli.run.submit -> cobell_cli.api (line 3): run may not import api, "
                     "a layer above it"]


# Every module of the command line is a thin layer over the API (parse the options, call
# cobell_cli.api, render): it reaches the store, the importers, the cluster, run and the core
# only through it. The entry point (cobell_cli/cli/__init__.py) also sets up the process:
# the version, BLAS threads, and the signal handlers of the whole command.
THIN_COMMANDS = tuple(name for name in modules() if part(name) == "cli")
THIN_MAY_IMPORT = frozenset({"api", "cli", "errors", "output", "timespec"})
ENTRY_MAY_IMPORT = {"cobell_cli.cli": frozenset({ROOT, "threads", "interrupts"})}


def past_the_api(imps: Sequence[Import], commands: Sequence[str] = THIN_COMMANDS) -> list[str]:
    return [f"{imp}: a thin command reaches {part(imp.target)!r} past the API"
            for imp in imps
            if imp.source in commands and part(imp.target) not in THIN_MAY_IMPORT
            and part(imp.target) not in ENTRY_MAY_IMPORT.get(imp.source, ())]


def test_every_command_goes_through_the_api() -> None:
    assert {"cobell_cli.cli.submit", "cobell_cli.cli.demo", "cobell_cli.cli.demo_yarn",
            "cobell_cli.cli"} <= set(THIN_COMMANDS)
    found = past_the_api(internal_imports())
    assert not found, "\n".join(found)


def test_thin_check_catches_a_command_reaching_into_the_store(tmp_path: Path) -> None:
    package = _package(tmp_path, {
        "api.py": "", "cli/__init__.py": "", "store/__init__.py": "", "store/history.py": "",
        "cli/history.py": "from cobell_cli import api\n\ndef f():\n"
                          "    from cobell_cli.store.history import STATUSES\n",
    })
    found = past_the_api(internal_imports(package))
    assert len(found) == 1 and "'store' past the API" in found[0], found
