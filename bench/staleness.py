"""Which core a results file was made on, so that one older than its code is seen.

Issue 34: result files went stale after merges and nothing noticed. `publish` stamps every
file it writes with the digest of cobell_cli/core's code (docstrings and comments left
out: rewording one does not move a figure) and the commit it was made at; `python -m bench
stale` lists the files made on another core, with the core commits since. The gate's
blocks are recomputed at every CI run and are current whatever the stamp says.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from bench import git
from cobell_cli.core.digest import blake2b

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "cobell_cli" / "core"
RESULTS = ROOT / "bench" / "results"
STAMP = re.compile(r"^<!-- made on core (?P<digest>[0-9a-f]{12}) at commit (?P<commit>\S+) -->$",
                   re.M)


def _without_docstrings(tree: ast.AST) -> ast.AST:
    """The tree less the string that opens a module, class or function body."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return tree


def core_digest(core: Path = CORE) -> str:
    """12 hex digits over the core's syntax trees, without docstrings, comments, positions."""
    digest = blake2b(digest_size=6)
    for path in sorted(core.rglob("*.py")):
        tree = _without_docstrings(ast.parse(path.read_text(), filename=str(path)))
        digest.update(path.relative_to(core).as_posix().encode() + b"\0")
        digest.update(ast.dump(tree).encode() + b"\n")
    return digest.hexdigest()


def head_commit() -> str:
    """HEAD's short hash, with `+` when the core has uncommitted changes; `unknown` off git."""
    head = git("rev-parse", "--short=7", "HEAD")
    if head is None:
        return "unknown"
    return head.strip() + ("+" if (git("status", "--porcelain", "--", "cobell_cli/core")
                                   or "").strip() else "")


def stamped(text: str, digest: str | None = None, commit: str | None = None) -> str:
    """The report with its stamp (one line at its end), replacing any it had."""
    line = (f"<!-- made on core {digest or core_digest()} at commit"
            f" {commit or head_commit()} -->")
    body = STAMP.sub("", text).rstrip("\n")
    return f"{body}\n\n{line}\n"


@dataclass(frozen=True)
class Standing:
    """One results file against the core of this checkout."""

    name: str
    state: str  # "current", "stale" or "unstamped"
    commit: str | None
    core_commits_since: int | None

    def line(self) -> str:
        if self.state == "unstamped":
            return f"{self.name}: no stamp (made before bench/staleness.py, or by hand)"
        since = ("" if self.core_commits_since is None
                 else f", {self.core_commits_since} commits to cobell_cli/core since")
        return f"{self.name}: {self.state}, made at {self.commit}{since}"


def judged(path: Path, digest: str) -> Standing:
    """Whether `path` was made on the core whose digest is `digest`."""
    found = STAMP.search(path.read_text())
    if found is None:
        return Standing(path.name, "unstamped", None, None)
    if found["digest"] == digest:
        return Standing(path.name, "current", found["commit"], None)
    commit = found["commit"].rstrip("+")
    count = (git("rev-list", "--count", f"{commit}..HEAD", "--", "cobell_cli/core")
             or "").strip()
    return Standing(path.name, "stale", found["commit"],
                    int(count) if count.isdigit() else None)


def survey(results: Path | None = None, digest: str | None = None) -> list[Standing]:
    """Every results file (default: bench/results), in name order, against this checkout's
    core; not gate.md, which the gate renders from bench/baseline.json and checks each run."""
    digest = digest or core_digest()
    files = sorted((results or RESULTS).glob("*.md"))
    return [judged(p, digest) for p in files if p.name != "gate.md"]


def main(argv: list[str] | None = None) -> int:
    """`python -m bench stale [--all]`: the results files made on another core."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench stale",
                                     description="results files made on another core")
    parser.add_argument("--all", action="store_true",
                        help="also the current and the unstamped ones")
    args = parser.parse_args(argv)
    rows = survey()
    for row in rows:
        if args.all or row.state == "stale":
            print(row.line())
    counts = {s: sum(r.state == s for r in rows) for s in ("current", "stale", "unstamped")}
    print(f"{len(rows)} results files: {counts['current']} current, {counts['stale']} stale,"
          f" {counts['unstamped']} unstamped (core {core_digest()})")
    return 0
