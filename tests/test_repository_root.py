"""The repository's root holds the design card's entries and nothing else (issue 35: seven
wheel files had been committed there with the xdist change)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# pyproject.toml, cobell_cli/, history/, tests/, man/, completions/, README.md (the design
# card), and bench/, docs/, .ci/; dotfiles beside them.
EXPECTED = {
    "pyproject.toml", "README.md", "cobell_cli", "history", "tests", "man", "completions",
    "bench", "docs", ".ci",
}


def git(*args: str) -> subprocess.CompletedProcess[bytes]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout (an sdist has no committed file list to check)")
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, timeout=60)


def tracked_root_entries() -> set[str]:
    listed = git("ls-files", "-z").stdout.decode()
    return {path.split("/", 1)[0] for path in listed.split("\0") if path}


def test_the_root_holds_only_the_design_cards_entries() -> None:
    entries = tracked_root_entries()
    assert entries >= EXPECTED
    strays = {e for e in entries - EXPECTED if not e.startswith(".")}
    assert strays == set(), f"committed at the repository root: {sorted(strays)}"


def test_wheels_are_ignored() -> None:
    """A `pip download` into the checkout cannot be committed by accident again."""
    assert git("check-ignore", "-q", "pytest-9.2.0-py3-none-any.whl").returncode == 0
    assert git("check-ignore", "-q", "README.md").returncode == 1  # the check can say no
