"""The headline tables the docs and results files quote: rendered from the baseline's figures
into bench/results/gate.md and into the gate's blocks of the files in BLOCK_FILES, and
checked against them, so a committed table cannot go stale.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from bench import ROOT
from bench.gate.blocks import blocks, put
from bench.gate.figures import Figure
from bench.gate.sections import SECTIONS, table

GATE_MD = ROOT / "bench" / "results" / "gate.md"
# file -> the sections whose blocks it holds (bench/results/gate.md holds them all)
BLOCK_FILES: dict[str, tuple[str, ...]] = {
    "docs/benchmarks.md": tuple(SECTIONS),
    "bench/results/colocation.md": ("allocation",),
    "bench/results/oracle_bound_blind.md": ("allocation",),
    "bench/results/real_colocation.md": ("real_colocation",),
    "bench/results/whatif.md": ("whatif",),
    "bench/results/accuracy.md": ("accuracy",),
    "bench/results/memory_accuracy.md": ("memory_accuracy",),
    "bench/results/memory_e2e.md": ("memory_e2e",),
    "bench/results/deadline.md": ("deadline",),
    "bench/results/hetero.md": ("hetero",),
    "bench/results/coverage.md": ("coverage",),
}
HOW = ("the gate's figures: `python -m bench gate` recomputes them at every CI run and fails"
       " when one is worse than bench/baseline.json; this table is rendered from that file,"
       " never typed")


def body(section: str, figures: Mapping[str, Figure]) -> str:
    title = SECTIONS[section][0]
    return f"**{title}** ({HOW}):\n\n{table(section, figures)}\n"


def gate_md(figures: Mapping[str, Figure]) -> str:
    from bench.gate import units as u

    lines = ["# The gate's figures", "",
             "Written by `python -m bench gate --update-baseline` (and `--tables`) from"
             " bench/baseline.json; `python -m bench gate` fails when a figure is worse than"
             " the baseline by more than its tolerance, or when a table here or in"
             " docs/benchmarks.md differs from this render. bench/README.md says what each"
             f" configuration covers. Seeds fixed (simulated worlds: {u.SEED}), inputs"
             " committed or the Bell data; no wall-clock figure.", ""]
    for section in SECTIONS:
        lines += [f"## {SECTIONS[section][0]}", "", table(section, figures), ""]
    return "\n".join(lines)


def expected(figures: Mapping[str, Figure]) -> dict[Path, str]:
    """Every generated file's text as the baseline renders it (block files: their blocks in
    the file's current text)."""
    out = {GATE_MD: gate_md(figures)}
    for rel, sections in BLOCK_FILES.items():
        path = ROOT / rel
        text = path.read_text() if path.is_file() else f"# {path.stem}\n"
        for section in sections:
            text = put(text, section, body(section, figures))
        out[path] = text
    return out


def stale(figures: Mapping[str, Figure]) -> list[str]:
    """One line per file whose tables differ from the baseline's render."""
    problems = []
    if not GATE_MD.is_file() or GATE_MD.read_text() != gate_md(figures):
        problems.append(f"{_rel(GATE_MD)} differs from bench/baseline.json's render")
    for rel, sections in BLOCK_FILES.items():
        path = ROOT / rel
        have = blocks(path.read_text()) if path.is_file() else {}
        for section in sections:
            if section not in have:
                problems.append(f"{rel} has no gate block '{section}'")
            elif have[section].rstrip() != body(section, figures).rstrip():
                problems.append(f"{rel}: gate block '{section}' differs from"
                                " bench/baseline.json's render")
    return problems


def write(figures: Mapping[str, Figure]) -> list[Path]:
    """Write every generated table; the files whose text changed."""
    changed = []
    for path, text in expected(figures).items():
        if not path.is_file() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            changed.append(path)
    return changed


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))
