"""bench.heldout: the held-out seeds played by two cores on the same draws, paired, judged."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from bench import ROOT
from bench import heldout as ho


@pytest.mark.parametrize(("late", "cost", "changed", "expected"), [
    ((0.0, 0.0), (0.0, 0.0), 0, "unchanged"),
    ((0.05, 0.01), (0.0, 0.0), 3, "worse"),  # late more often, beyond 2 SE
    ((0.01, 0.01), (0.02, 0.005), 4, "worse"),  # late within its SE, cost beyond
    ((0.05, 0.01), (-0.02, 0.005), 4, "trade-off"),  # later, cheaper
    ((-0.05, 0.01), (0.02, 0.005), 4, "trade-off"),  # earlier, dearer
    ((-0.05, 0.01), (0.0, 0.001), 4, "better"),
    ((0.0, 0.0), (-0.02, 0.005), 4, "better"),
    ((0.01, 0.01), (-0.001, 0.01), 4, "no worse"),  # both within two standard errors
    ((0.019, 0.01), (0.0, 0.0), 1, "no worse"),  # 1.9 SE
])  # fmt: skip
def test_the_verdict_reads_each_paired_difference_against_two_standard_errors(
    late: tuple[float, float], cost: tuple[float, float], changed: int, expected: str
) -> None:
    assert ho.verdict(late, cost, changed) == expected


@pytest.mark.parametrize(("late", "cost", "changed", "expected"), [
    ((0.0, 0.0), (0.0, 0.0), 0, "unchanged"),
    ((0.019, 0.01), (0.0, 0.0), 1, "base"),  # 1.9 SE: no worse at two, but base wins at one
    ((0.0, 0.0), (0.0026, 0.0018), 4, "base"),  # cost 1.4 SE higher (five refits, 1 Dec 2026)
    ((0.0, 0.0), (-0.0026, 0.0018), 4, "head"),
    ((0.009, 0.01), (0.001, 0.01), 4, "neither"),  # within one standard error both
    ((0.02, 0.01), (-0.02, 0.01), 4, "split"),
    ((-0.02, 0.01), (0.005, 0.01), 4, "head"),  # ahead on one, within one SE on the other
])  # fmt: skip
def test_the_rule_reads_who_wins_by_one_standard_error(
    late: tuple[float, float], cost: tuple[float, float], changed: int, expected: str
) -> None:
    assert ho.wins(late, cost, changed) == expected


def _runs(n: int, late: set[int], cost: float) -> list[dict]:
    return [{"key": f"k{i}", "late": i in late, "cost": cost} for i in range(n)]


def test_runs_pair_by_their_draw_and_the_differences_are_paired() -> None:
    base = _runs(20, set(), 100.0)
    head = list(reversed(_runs(20, {0, 1, 2, 3, 4, 5}, 110.0)))  # order does not pair them
    row = ho.compare_world("allocation", "simulator", base, head)
    assert (row.runs, row.changed) == (20, 20)
    assert (row.late_base_pct, row.late_head_pct) == (0.0, 30.0)
    assert row.late_diff_pct == pytest.approx(30.0)
    assert row.late_se_pct == pytest.approx(100 * (0.3 * 0.7 * 20 / 19 / 20) ** 0.5)
    assert row.cost_ratio == pytest.approx(1.1) and row.cost_diff_pct == pytest.approx(10.0)
    assert row.verdict == "worse"
    same = ho.compare_world("allocation", "simulator", base, list(base))
    assert (same.changed, same.verdict) == (0, "unchanged")


def test_runs_that_do_not_pair_are_an_error_not_a_verdict() -> None:
    with pytest.raises(ValueError, match="drew different runs"):
        ho.compare_world("deadline", "nodesim", _runs(3, set(), 1.0), _runs(4, set(), 1.0))


def test_deadline_stragglers_count_for_cost_not_for_lateness() -> None:
    base = [{"key": "a", "late": False, "judged": True, "cost": 10.0},
            {"key": "s", "late": False, "judged": False, "cost": 10.0}]
    head = [{"key": "a", "late": False, "judged": True, "cost": 10.0},
            {"key": "s", "late": True, "judged": False, "cost": 30.0}]
    row = ho.compare_world("deadline", "simulator", base, head)
    assert (row.late_base_pct, row.late_head_pct, row.late_diff_pct) == (0.0, 0.0, 0.0)
    assert row.cost_ratio == pytest.approx(2.0)


def _mutant(tmp_path: Path) -> Path:
    """A copy of cobell_cli whose planners aim at P(meet) 0.5 instead of 0.95."""
    parent = tmp_path / "mutant"
    shutil.copytree(ROOT / "cobell_cli", parent / "cobell_cli",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for rel, name in (("core/calibration.py", "DEFAULT_CONFIDENCE"),
                      ("core/schedule/risk.py", "DEADLINE_CONFIDENCE")):
        path = parent / "cobell_cli" / rel
        text, n = re.subn(rf"^{name} = 0\.95$", f"{name} = 0.5", path.read_text(), flags=re.M)
        assert n == 1, f"{rel}: {name} = 0.95 not found (the mutation's premise)"
        path.write_text(text)
    return parent


def test_a_core_that_aims_lower_is_found_worse_on_the_held_out_draws(
    bell_dir: Path, tmp_path: Path
) -> None:
    """Two real plays (--quick) in children, each with its own cobell_cli: the mutant is
    late more often than this checkout on the very same runs."""
    warm = tmp_path / "warm"
    base = ho.play_tree(ROOT, quick=True, jobs=2, warm=warm)
    assert [p.name for p in warm.iterdir()] == ["warm-4242-simulator-3.pkl"]  # base's history
    head = ho.play_tree(_mutant(tmp_path), quick=True, jobs=2, warm=warm)
    assert base["core"] != head["core"]  # each child imported its own core
    assert Path(head["core_path"]).parent.parent == tmp_path / "mutant"
    rows = {(r.section, r.world): r for r in ho.compare(base, head)}
    assert set(rows) == {("allocation", "simulator"), ("deadline", "simulator"),
                         ("memory", "simulator"), ("nodetype", "hetero")}
    allocation = rows[("allocation", "simulator")]
    assert allocation.runs == 52 and allocation.late_head_pct > allocation.late_base_pct
    assert allocation.verdict in ("worse", "trade-off"), allocation.line()
    assert all(rows[k].runs > 0 for k in rows)


def test_the_report_names_each_world_that_is_worse_or_traded() -> None:
    base = {"core": "a" * 12}
    head = {"core": "b" * 12}
    worse = ho.compare_world("memory", "nodesim", _runs(10, set(), 1.0), _runs(10, set(), 2.0))
    fine = ho.compare_world("allocation", "simulator", _runs(10, set(), 1.0),
                            _runs(10, set(), 1.0))
    text = ho.report("main", base, head, [worse, fine], 1.0, quick=False)
    assert worse.verdict == "worse" and "OOM" in worse.line() and "MB-s x2.0000" in worse.line()
    assert text.splitlines()[-1].startswith("verdict: worse or a trade-off in memory nodesim (")
    assert worse.wins == "base" and worse.line().endswith("worse; by one SE: base")
    assert text.splitlines()[-2] == ("by one standard error (what keeps a component in the "
                                     "default): base wins in memory nodesim")
    clean = ho.report("main", base, head, [fine], 1.0, quick=True)
    assert "--quick" in clean and clean.splitlines()[-1].startswith("verdict: no worse")
    assert clean.splitlines()[-2].endswith("no world won by either")


def test_a_base_with_this_core_plays_nothing(bell_dir: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """HEAD's core is this checkout's unless the core has uncommitted changes."""
    from bench import git

    if git("rev-parse", "HEAD") is None:
        pytest.skip("not a git checkout: there is no base commit to pair with")
    if (git("status", "--porcelain", "--", "cobell_cli/core") or "").strip():
        pytest.skip("the core has uncommitted changes: HEAD's core is not this checkout's")
    assert ho.main(["--base", "HEAD"]) == ho.OK
    assert "nothing to compare" in capsys.readouterr().out


def test_the_base_is_played_once_for_the_same_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kept by a hash of the tree's cobell_cli and this checkout's bench code: the same tree
    is read back, a changed one is played again, and --no-cache always plays."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    plays: list[Path] = []

    def fake_play(tree: Path, quick: bool, jobs: int, warm: Path | None = None) -> dict:
        assert warm is not None and not warm.exists()  # a fresh directory for its histories
        warm.mkdir(parents=True)
        (warm / "warm-1-simulator-3.pkl").write_bytes(b"")  # what a real play leaves
        plays.append(tree)
        return {"core": f"c{len(plays)}", "outcomes": {}}

    monkeypatch.setattr(ho, "play_tree", fake_play)
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "cobell_cli", tree / "cobell_cli",
                    ignore=shutil.ignore_patterns("__pycache__"))
    assert ho.play_base(tree, True, 1, use_cache=True)[0]["core"] == "c1"
    assert ho.play_base(tree, True, 1, use_cache=True)[0]["core"] == "c1"  # kept
    assert ho.play_base(tree, False, 1, use_cache=True)[0]["core"] == "c2"  # not --quick's
    (tree / "cobell_cli" / "config.py").write_text("# changed\n", encoding="utf-8")
    assert ho.play_base(tree, True, 1, use_cache=True)[0]["core"] == "c3"  # other sources
    assert ho.play_base(tree, True, 1, use_cache=False)[0]["core"] == "c4"
    assert len(plays) == 4


def test_runs_that_share_a_cluster_count_as_one_for_the_standard_error() -> None:
    values = [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
    mean, iid = ho.mean_se(values)
    assert mean == 0.5 and iid == pytest.approx((0.3 / 6) ** 0.5)
    _, clustered = ho.mean_se(values, ["a", "a", "a", "b", "b", "b"])
    assert clustered == pytest.approx(0.5)  # two clusters, +1.5 and -1.5: sqrt(2 * 4.5) / 6
    assert ho.mean_se(values, ["a"] * 6) == (0.5, float("inf"))
    assert ho.mean_se([0.2, 0.2], ["a", "a"]) == (0.2, 0.0)


def test_the_warmed_history_is_made_once_and_read_by_the_next_play(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench.colocation import World

    monkeypatch.setenv(ho.WARM_ENV, str(tmp_path))
    made: list[World] = []

    def warm() -> World:
        memory = World("sgd", {"sgd": [{"id": 1, "runtime_s": 100.0}]}, 2, {("k",): "model"})
        made.append(memory)
        return memory

    first = ho.warmed_history(7, "nodesim", 3, warm)
    second = ho.warmed_history(7, "nodesim", 3, warm)
    assert len(made) == 1 and second.histories == first.histories and second.next_id == 2
    assert second.fit_cache == {}  # the fitted models were the warming core's
    monkeypatch.delenv(ho.WARM_ENV)
    ho.warmed_history(7, "nodesim", 3, warm)
    assert len(made) == 2  # no directory: every play warms its own
