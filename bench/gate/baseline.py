"""bench/baseline.json: the committed figures, why they last changed, and the rule that a
commit changing them says so.

The file holds every figure (value, which way is better, tolerance), the reason given with
`--update-baseline --why` and the figures that moved then. The last commit touching the file
must carry that reason in its message: a baseline never moves without a stated why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bench import ROOT, git
from bench.gate.figures import Figure, Verdict

BASELINE = ROOT / "bench" / "baseline.json"
MIN_WHY = 20  # characters: a reason, not a word


class BaselineError(Exception):
    """The baseline file cannot be read: one line saying what to do."""


@dataclass
class Baseline:
    figures: dict[str, Figure]
    why: str = ""
    changes: list[dict[str, object]] = field(default_factory=list)


def load(path: Path | None = None) -> Baseline:
    path = BASELINE if path is None else path
    if not path.is_file():
        return Baseline({})
    try:
        raw = json.loads(path.read_text())
        figures = {name: Figure.from_json(f) for name, f in raw["figures"].items()}
        return Baseline(figures, str(raw.get("why", "")), list(raw.get("changes", [])))
    except (ValueError, KeyError, TypeError) as exc:
        raise BaselineError(f"{_rel(path)} is not a gate baseline ({exc}): restore it with"
                            " `git checkout -- bench/baseline.json`") from None


def updated(old: Baseline, now: Mapping[str, Figure], verdicts: list[Verdict],
            why: str) -> Baseline:
    """The new baseline: `now`'s figures, the reason, and what moved against `old`."""
    changes = [{"name": v.name, "kind": v.kind,
                "was": None if v.baseline is None else v.baseline.value,
                "now": None if v.now is None else v.now.value}
               for v in verdicts if v.kind != "same"]
    return Baseline(dict(now), why, changes)


def dumps(baseline: Baseline) -> str:
    """One figure a line, sorted: a diff shows what moved."""
    lines = ["{", f' "why": {json.dumps(baseline.why)},', ' "changes": [']
    lines += [f"  {json.dumps(c, sort_keys=True)}," for c in baseline.changes]
    if baseline.changes:
        lines[-1] = lines[-1].rstrip(",")
    lines += [" ],", ' "figures": {']
    names = sorted(baseline.figures)
    for i, name in enumerate(names):
        comma = "," if i < len(names) - 1 else ""
        body = json.dumps(baseline.figures[name].to_json())
        lines.append(f"  {json.dumps(name)}: {body}{comma}")
    lines += [" }", "}"]
    return "\n".join(lines) + "\n"


def save(baseline: Baseline, path: Path | None = None) -> None:
    (BASELINE if path is None else path).write_text(dumps(baseline))


def _normal(text: str) -> str:
    return " ".join(text.split())


def provenance(baseline: Baseline, path: Path | None = None) -> tuple[str | None, str | None]:
    """(problem, note): a problem fails the gate: the last commit touching the baseline does
    not say the baseline's why. A note does not: the file is uncommitted (say why in the
    commit to come) or not in a git checkout."""
    rel = _rel(BASELINE if path is None else path)
    if len(_normal(baseline.why)) < MIN_WHY:
        return (f"{rel} says no why (at least {MIN_WHY} characters): update it with"
                " `python -m bench gate --update-baseline --why \"...\"`"), None
    dirty = git("status", "--porcelain", "--", rel, cwd=ROOT)
    if dirty is None:
        return None, f"{rel}: not in a git checkout, its commit not checked"
    if dirty.strip():
        return None, (f"{rel} is uncommitted: commit it with a message that contains its why:"
                      f" \"{_normal(baseline.why)}\"")
    log = git("log", "-1", "--format=%h%x00%B", "--", rel, cwd=ROOT)
    if not log or "\x00" not in log:
        return None, f"{rel} has no commit yet: commit it with a message that contains its why"
    commit, message = log.split("\x00", 1)
    if _normal(baseline.why) not in _normal(message):
        return (f"{rel} changed in {commit} without its why in the commit message (the file"
                f" says: \"{_normal(baseline.why)}\"): amend the message, or update the"
                " baseline with `--update-baseline --why` and commit that"), None
    return None, None


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
