"""bench/staleness.py: a results file knows the core it was made on, and `python -m bench
stale` finds the ones made on another (issue 34: result files went stale unnoticed)."""

from __future__ import annotations

from pathlib import Path

import pytest

import bench
from bench import staleness

CODE = '''"""A module."""


def halve(x: float) -> float:
    """Half of x."""
    return x / 2  # exact for floats
'''


def _core(tmp_path: Path, text: str) -> Path:
    core = tmp_path / "core"
    (core / "model").mkdir(parents=True, exist_ok=True)
    (core / "model" / "half.py").write_text(text)
    return core


def test_the_digest_follows_the_code_not_its_words(tmp_path: Path) -> None:
    before = staleness.core_digest(_core(tmp_path, CODE))
    reworded = CODE.replace("Half of x.", "x over two, said otherwise.").replace(
        "# exact for floats", "# a comment")
    assert staleness.core_digest(_core(tmp_path, reworded)) == before
    changed = CODE.replace("x / 2", "x / 3")
    assert staleness.core_digest(_core(tmp_path, changed)) != before
    renamed = tmp_path / "core" / "model" / "third.py"
    (tmp_path / "core" / "model" / "half.py").rename(renamed)
    renamed.write_text(CODE)
    assert staleness.core_digest(tmp_path / "core") != before  # the path is part of the code


def test_a_stamp_is_replaced_not_added() -> None:
    once = staleness.stamped("# Report\n\n| a |\n", digest="a" * 12, commit="1234567")
    twice = staleness.stamped(once, digest="b" * 12, commit="89abcde+")
    assert once.endswith("<!-- made on core aaaaaaaaaaaa at commit 1234567 -->\n")
    assert twice.count("<!-- made on core") == 1
    assert twice.startswith("# Report\n\n| a |\n\n<!-- made on core bbbbbbbbbbbb")


def test_survey_tells_current_stale_and_unstamped(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(staleness.stamped("a\n", digest="c" * 12, commit="abc1234"))
    (tmp_path / "b.md").write_text(staleness.stamped("b\n", digest="d" * 12, commit="abc1234"))
    (tmp_path / "c.md").write_text("c, typed by hand\n")
    rows = {r.name: r for r in staleness.survey(tmp_path, digest="c" * 12)}
    assert [rows[n].state for n in ("a.md", "b.md", "c.md")] == ["current", "stale", "unstamped"]
    assert rows["b.md"].commit == "abc1234"
    assert "stale, made at abc1234" in rows["b.md"].line()


def test_publish_stamps_with_this_checkouts_core(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "x.md"
    bench.publish("# X\n\nfigures\n", out)
    bench.publish("# X\n\nnew figures\n", out)
    text = out.read_text()
    assert "new figures" in text and text.count("<!-- made on core") == 1
    assert [r.state for r in staleness.survey(tmp_path)] == ["current"]
    assert "wrote" in capsys.readouterr().out


def test_the_gate_names_results_made_on_another_core_but_does_not_fail_on_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from bench.gate import baseline as bl
    from bench.gate import cli, tables
    from bench.gate.figures import compare, lower

    (tmp_path / "old.md").write_text(staleness.stamped("x\n", digest="e" * 12, commit="abc1234"))
    monkeypatch.setattr(staleness, "RESULTS", tmp_path)
    monkeypatch.setattr(tables, "stale", lambda _figures: [])
    monkeypatch.setattr(bl, "provenance", lambda _b: (None, None))
    old = bl.Baseline({"a": lower(1.0, 0.0005)}, "x" * 30)
    assert cli.report(compare(old.figures, {"a": lower(1.0, 0.0005)}), [], old, 1.0,
                      as_json=False) == cli.OK
    assert "note: 1 results files were made on another core" in capsys.readouterr().out
