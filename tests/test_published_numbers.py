"""One source of truth for every published number: what the README and docs/ say about a
benchmark is what its committed results file says, and `python -m bench` rewrites the committed
tables."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.__main__ import BENCHMARKS, QUICK_ONLY, committed_arguments

ROOT = Path(__file__).parents[1]
NUMBER = re.compile(r"(?<![\w.^])\d+(?:\.\d+)?")
LINK = re.compile(r"\]\((?:\.\./)?(bench/results/[\w-]+\.md)\)")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _plain(text: str) -> str:
    """The same number written the same way: dashes, times signs and thousands separators."""
    text = text.replace("−", "-").replace("–", "-").replace("×", "x")
    return re.sub(r"(?<=\d) (?=\d{3}\b)", "", text)


def _rounds_to(found: str, written: str) -> bool:
    decimals = len(written.split(".")[1]) if "." in written else 0
    return f"{float(found):.{decimals}f}" == written


def claims(text: str) -> list[tuple[str, list[str]]]:
    """Each paragraph or list item of a page that links results files: its text, the files."""
    blocks = re.split(r"\n(?=- |\n)", text)
    return [(block, LINK.findall(block)) for block in blocks if LINK.search(block)]


def published_claims() -> list[tuple[str, list[str]]]:
    """The claims of the README and of every page in docs/."""
    return [claim for page in PAGES for claim in claims(page.read_text())]


def unsupported(block: str, files: list[str]) -> list[str]:
    """The numbers of a block that none of its results files states (to the digits the
    page shows); commands in backticks, link targets and HTTP status codes are not claims."""
    results = _plain(" ".join((ROOT / f).read_text() for f in files))
    stated = set(NUMBER.findall(results))
    text = re.sub(r"\]\([^)]*\)", "]", block)
    text = re.sub(r"`[^`]*`", "", text)
    text = re.sub(r"HTTP \d{3}", "", text)
    return [n for n in NUMBER.findall(_plain(text))
            if n not in stated and not any(_rounds_to(s, n) for s in stated)]


def test_the_docs_quote_only_numbers_their_results_files_state() -> None:
    """The README had drifted: coverage "58–97 %" (the file: 58.8–96.0 %), scipy's import
    "0.34×" (0.31×), and "11 %" run-to-run noise that was a prediction error."""
    found = published_claims()
    assert len(found) >= 15  # every benchmark's entry, and the sections citing results
    drifted = {files[0]: missing for block, files in found
               if (missing := unsupported(block, files))}
    assert drifted == {}, drifted


def test_the_check_catches_a_drifted_number() -> None:
    block = "- [x](bench/results/coverage.md) — the paper's interval covered 58–97 %"
    assert unsupported(block, ["bench/results/coverage.md"]) == ["58", "97"]
    fixed = "- [x](bench/results/coverage.md) — the paper's interval covered 59.9–95.7 %"
    assert unsupported(fixed, ["bench/results/coverage.md"]) == []


def test_a_page_in_docs_links_results_files_one_level_up() -> None:
    """docs/ links `../bench/results/X.md`: still a claim on X, and its numbers still checked."""
    page = "Text.\n\n- [x](../bench/results/coverage.md) — covered 58–97 %\n"
    [(block, files)] = claims(page)
    assert files == ["bench/results/coverage.md"]
    assert unsupported(block, files) == ["58", "97"]


@pytest.mark.parametrize("name", [n for n in BENCHMARKS if n not in QUICK_ONLY])
def test_python_m_bench_runs_each_benchmark_as_its_results_were_made(name: str) -> None:
    """`python -m bench` ran bench.coverage with its default --seeds 3 while the committed
    table was made with --seeds 5: it now takes the arguments from the results file."""
    arguments = committed_arguments(name)
    command = next(line for line in (ROOT / "bench" / "results" / f"{name}.md").read_text()
                   .splitlines() if line.startswith("Command:"))
    assert f"python -m bench.{name}" in command
    assert " ".join(arguments) in command
    if name == "coverage":
        assert arguments == ["--seeds", "5"]
