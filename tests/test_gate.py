"""`python -m bench gate`: the comparison with the baseline, the baseline's commit rule, the
committed tables, and the blocks a benchmark's full rerun keeps. The figures themselves are
the gate's to compute (the README's test command runs it); these tests run none of them."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from bench import publish
from bench.gate import baseline as bl
from bench.gate import blocks, cli, sections, tables
from bench.gate import units as u
from bench.gate.figures import PCT, RATIO, Figure, compare, count, higher, judge, lower

# --- figures against the baseline ---------------------------------------------------------------


@pytest.mark.parametrize(("was", "now", "kind"), [
    (5.0, 5.04, "same"), (5.0, 5.06, "worse"), (5.0, 4.94, "better"), (5.0, 4.96, "same")])
def test_a_lower_is_better_figure_fails_only_beyond_its_tolerance(was, now, kind) -> None:
    assert judge("late", lower(was, PCT), lower(now, PCT)).kind == kind


def test_direction_counts_and_figures_that_come_and_go() -> None:
    assert judge("met", higher(95.0, PCT), higher(94.0, PCT)).kind == "worse"
    assert judge("met", higher(95.0, PCT), higher(96.0, PCT)).kind == "better"
    assert judge("runs", count(18), count(18)).kind == "same"
    assert judge("runs", count(18), count(24)).kind == "changed"  # more runs: not "better"
    verdicts = {v.name: v for v in compare({"a": lower(1, RATIO), "b": lower(1, RATIO)},
                                           {"b": lower(1, RATIO), "c": lower(1, RATIO)})}
    assert (verdicts["a"].kind, verdicts["b"].kind, verdicts["c"].kind) == (
        "missing", "same", "new")
    assert [v.fails for v in verdicts.values()] == [True, False, True]


def test_the_baselines_direction_and_tolerance_decide() -> None:
    """A figure whose code now says 'higher' is still judged as the committed baseline says."""
    assert judge("x", lower(1.0, RATIO), Figure(1.01, "higher", 0.5)).kind == "worse"


def test_a_failing_figure_is_one_line_with_name_baseline_now_and_tolerance() -> None:
    line = judge("allocation.nodesim.pooled.cobell.late_pct", lower(1.2, PCT),
                 lower(3.7, PCT)).line()
    assert line == ("worse: allocation.nodesim.pooled.cobell.late_pct: baseline 1.2, now 3.7,"
                    " tolerance 0.05 (lower is better)")
    assert "\n" not in line


# --- the report and its exit code ---------------------------------------------------------------


@pytest.fixture
def clean_repo(monkeypatch):
    """Tables and the baseline's commit as a clean checkout has them."""
    monkeypatch.setattr(tables, "stale", lambda _figures: [])
    monkeypatch.setattr(bl, "provenance", lambda _b: (None, None))


def test_a_worse_figure_fails_the_gate_and_a_better_one_passes_saying_so(clean_repo,
                                                                        capsys) -> None:
    old = bl.Baseline({"a": lower(1.000, RATIO), "b": higher(90.0, PCT)}, "x" * 30)
    worse = compare(old.figures, {"a": lower(1.010, RATIO), "b": higher(90.0, PCT)})
    assert cli.report(worse, [], old, 1.0, as_json=False) == cli.FAILED
    out = capsys.readouterr().out
    assert "worse: a: baseline 1, now 1.01, tolerance 0.0005 (lower is better)" in out
    assert "bench gate: FAILED" in out
    # the failure names the one command that rewrites the baseline and the tables
    assert f"if the change is intended: `{cli.UPDATE}`" in out
    assert cli.UPDATE.startswith("python -m bench gate --update-baseline --why")
    better = compare(old.figures, {"a": lower(0.990, RATIO), "b": higher(91.0, PCT)})
    assert cli.report(better, [], old, 1.0, as_json=False) == cli.OK
    out = capsys.readouterr().out
    assert "better: b: baseline 90, now 91" in out and "--update-baseline" in out
    assert "bench gate: ok" in out


def test_a_failed_unit_fails_the_gate_and_json_says_everything(clean_repo, capsys) -> None:
    old = bl.Baseline({"a": lower(1.0, RATIO)}, "x" * 30)
    verdicts = compare(old.figures, {})
    assert cli.report(verdicts, ["error: hetero loto: ValueError: boom"], old, 1.0,
                      as_json=True) == cli.FAILED
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is False and out["errors"] == ["error: hetero loto: ValueError: boom"]
    assert out["failing"] == [{"name": "a", "kind": "missing", "baseline": 1.0, "now": None,
                               "tolerance": RATIO}]


@pytest.mark.parametrize("argv", [["--update-baseline"], ["--update-baseline", "--why", "ok"],
                                  ["--why", "a long enough reason, but no update"],
                                  ["--jobs", "0"], ["--only", "nonsense"]])
def test_bad_arguments_exit_2_with_one_line(argv, capsys) -> None:
    assert cli.main(argv) == cli.CANNOT_RUN
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("python -m bench gate: error:")


def test_update_is_short_for_update_baseline() -> None:
    args = cli.parse(["--update", "--why", "the planner's new rule, 2 % cheaper"])
    assert args.update_baseline and args.why.startswith("the planner")
    assert not cli.parse([]).update_baseline


def test_an_unreadable_baseline_exits_2_saying_how_to_restore_it(tmp_path, monkeypatch,
                                                                  capsys) -> None:
    broken = tmp_path / "baseline.json"
    broken.write_text('{"figures": {"a": {"value": 1}}}')
    monkeypatch.setattr(bl, "BASELINE", broken)
    assert cli.main([]) == cli.CANNOT_RUN
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "git checkout -- bench/baseline.json" in err


# --- the baseline file and its commit -----------------------------------------------------------


def test_the_baseline_round_trips_one_figure_a_line() -> None:
    b = bl.Baseline({"z.late_pct": lower(1.25, PCT), "a.runs": count(18)}, "because",
                    [{"name": "z.late_pct", "kind": "worse", "was": 1.0, "now": 1.25}])
    text = bl.dumps(b)
    assert json.loads(text)["figures"]["a.runs"] == {"value": 18.0, "better": "equal",
                                                    "tolerance": 0.0}
    lines = text.splitlines()
    assert lines.index('  "a.runs": {"value": 18.0, "better": "equal", "tolerance": 0.0},') \
        < lines.index('  "z.late_pct": {"value": 1.25, "better": "lower", "tolerance": 0.05}')


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                    *args], check=True, capture_output=True)


def test_the_last_commit_touching_the_baseline_must_say_its_why(tmp_path, monkeypatch) -> None:
    """The rule that lets a worse figure through: the same commit updates the baseline and
    its message carries the reason written into the file."""
    repo = tmp_path / "repo"
    (repo / "bench").mkdir(parents=True)
    _git(repo, "init", "-q")
    monkeypatch.setattr(bl, "ROOT", repo)
    path = repo / "bench" / "baseline.json"
    why = "sgd pair late 5.6 -> 11.1 %: the exploration rule's price, 2 % cheaper"
    b = bl.Baseline({"a": lower(1.0, RATIO)}, why)
    bl.save(b, path)
    problem, note = bl.provenance(b, path)
    assert problem is None and "uncommitted" in note and why in note
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "bench: re-baseline\n\n" + why.replace("5.6 ", "5.6\n"))
    assert bl.provenance(b, path) == (None, None)  # line breaks in the message do not matter
    b2 = bl.Baseline({"a": lower(1.1, RATIO)}, "a later reason that no message states")
    bl.save(b2, path)
    _git(repo, "commit", "-q", "-am", "tweak the planner")
    problem, _ = bl.provenance(b2, path)
    assert problem is not None and "without its why in the commit message" in problem
    assert bl.provenance(bl.Baseline({}, "too short"), path)[0] is not None


def test_the_committed_baseline_was_committed_with_its_why() -> None:
    problem, _ = bl.provenance(bl.load())
    assert problem is None, problem


# --- the tables ---------------------------------------------------------------------------------


def test_the_committed_tables_are_the_baselines_render() -> None:
    """What the docs and results files quote is what bench/baseline.json holds."""
    assert tables.stale(bl.load().figures) == []


def test_every_table_cell_has_a_figure_and_every_figure_a_cell() -> None:
    figures = bl.load().figures
    rendered = "\n".join(sections.table(s, figures) for s in sections.SECTIONS)
    assert "| - " not in rendered and " - |" not in rendered and "/ - " not in rendered
    for name, figure in figures.items():  # a figure moved far shows in its section's table
        moved = {**figures, name: Figure(figure.value + 1000.0, figure.better, 0.0)}
        section = name.split(".")[0]
        assert sections.table(section, moved) != sections.table(section, figures), name


def test_a_stale_block_and_a_lost_block_are_found(tmp_path, monkeypatch) -> None:
    figures = bl.load().figures
    monkeypatch.setattr(tables, "ROOT", tmp_path)
    monkeypatch.setattr(tables, "GATE_MD", tmp_path / "gate.md")
    monkeypatch.setattr(tables, "BLOCK_FILES", {"results/hetero.md": ("hetero",),
                                                "docs/benchmarks.md": ("hetero", "deadline")})
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "hetero.md").write_text("# Node types\n\nThe full run.\n")
    assert len(tables.stale(figures)) == 4  # gate.md, and three blocks nowhere yet
    tables.write(figures)
    assert tables.stale(figures) == []
    hetero = tmp_path / "results" / "hetero.md"
    assert hetero.read_text().endswith("The full run.\n")
    key = f"hetero.{u.HETERO_SEED}.shared.met_pct"
    hand = {**figures, key: Figure(figures[key].value - 5, "higher", PCT)}
    hetero.write_text(blocks.put(hetero.read_text(), "hetero", tables.body("hetero", hand)))
    assert tables.stale(figures) == ["results/hetero.md: gate block 'hetero' differs from"
                                     " bench/baseline.json's render"]


def test_a_full_rerun_of_a_benchmark_keeps_the_gate_blocks_of_its_results_file(tmp_path) -> None:
    out = tmp_path / "hetero.md"
    out.write_text("# Node types\n\n" + blocks.block("hetero", "| a |") + "\n\nold table\n")
    publish("# Node types, rerun\n\nnew table\n", out)
    text = out.read_text()
    assert blocks.blocks(text) == {"hetero": "| a |\n"}
    assert text.startswith("# Node types, rerun\n\n<!-- gate:hetero -->")
    assert "new table" in text and "old table" not in text


# --- the work -----------------------------------------------------------------------------------


def test_every_section_has_work_and_the_work_is_longest_first() -> None:
    work = u.units()
    assert {r for s in sections.SECTIONS for r in u.SECTION_RUNNERS[s]} == {w.runner for w in work}
    assert [w.cost_s for w in work] == sorted((w.cost_s for w in work), reverse=True)
    assert len({(w.runner, w.key) for w in work}) == len(work)
    assert u.only(work, {"hetero"}) == [w for w in work if w.runner == "hetero"]


def test_coverage_too_high_and_too_low_are_both_worse_and_the_table_says_which_cell_misses(
) -> None:
    """A cell's coverage is held from both sides of the nominal 90 %: an interval that covers
    99 % reserves more than it must, one at 84 % misses targets; moving toward 90 is better."""
    def cells(*covered: int) -> dict[str, dict]:
        return {"coverage": {("nodesim", "200"): {60: [
            {"covered": c, "n": 150, "log_width": 0.2 + c / 1000} for c in covered]}}}

    wide, right, narrow = (sections.coverage_figures(cells(*c))
                           for c in ((149, 147), (135, 137), (126, 126)))
    name = "coverage.nodesim.200.60"
    assert wide[f"{name}.over_pct"].value == pytest.approx(100 * 296 / 300 - 90)
    assert (wide[f"{name}.under_pct"].value, narrow[f"{name}.over_pct"].value) == (0.0, 0.0)
    assert wide[f"{name}.runs"].value == 300.0
    toward = {v.name: v.kind for v in compare(wide, right)}
    assert toward[f"{name}.over_pct"] == "better" and toward[f"{name}.under_pct"] == "same"
    assert {v.name: v.kind for v in compare(right, narrow)}[f"{name}.under_pct"] == "worse"
    rows = [sections.table("coverage", f).splitlines()[-1] for f in (wide, right, narrow)]
    assert rows == ["| nodesim | 200 | 60 | 300 | 98.7 | 0.348 | missed |",
                    "| nodesim | 200 | 60 | 300 | 90.7 | 0.336 | met |",
                    "| nodesim | 200 | 60 | 300 | 84.0 | 0.326 | missed |"]


def test_the_joint_fits_machine_spread_passes_and_cobells_own_error_still_fails() -> None:
    """The paper's joint fit lands in another local minimum on another CPU (profiles dev 21.35
    % on one machine, 22.01 % on another, one commit): that peer's move within the spread
    measured across machines passes; cobell's own error moving by 0.1 point does not."""
    import numpy as np

    from bench import real_colocation as rc

    def figures(cobell: float, paper: float) -> dict[str, Figure]:
        errors = {"cobell": np.array([cobell, cobell]), rc.JOINT: np.array([paper, paper])}
        return sections.real_colocation_figures({"real_colocation": {("profiles dev",): errors}})

    name = "real_colocation.profiles dev"
    was = figures(23.80, 21.35)
    other_machine = {v.name: v.kind for v in compare(was, figures(23.80, 22.01))}
    assert other_machine[f"{name}.paper_ape"] == "same"
    assert other_machine[f"{name}.cobell_vs_paper"] == "same"
    worse_cobell = {v.name: v.kind for v in compare(was, figures(23.90, 21.35))}
    assert worse_cobell[f"{name}.cobell_ape"] == "worse"
    far = {v.name: v.kind for v in compare(was, figures(23.80, 25.0))}
    assert far[f"{name}.paper_ape"] == "worse"  # beyond any spread measured: a real change


def test_the_allocation_cells_play_the_gates_strategies_on_bench_colocations_runs() -> None:
    from bench import colocation as co

    cfg = u.allocation_config("nodesim", "pair", "sgd")
    assert set(cfg.strategies) == set(u.ALLOCATION_STRATEGIES.values())
    assert co._playing(cfg) == ["bell90", "default", "bell95", "oracle"]
    assert "bell95" not in co._playing(co.Config())  # on request only: a full run plays STRATEGIES
    assert (cfg.seed, cfg.runs_per_interferer) == (u.SEED, u.RUNS_PER_INTERFERER)


def test_ci_runs_the_gate_after_the_tests() -> None:
    """.ci/run runs the README's test-command block; the gate is its last step, so a red
    test stops CI before the gate's minutes are spent."""
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    block = readme.split("<!-- test-command -->", 1)[1].split("<!-- /test-command -->", 1)[0]
    command = [line for line in block.splitlines() if line and not line.startswith("```")]
    assert len(command) == 1
    steps = [s.strip() for s in command[0].split("&&")]
    assert steps[-1] == ".venv/bin/python -m bench gate"
    assert any(s.startswith(".venv/bin/python -m pytest") for s in steps[:-1])


def test_benchmarks_pin_the_numeric_kernels_before_numpy_loads() -> None:
    """The paper's joint fit lands in other local minima under another OpenBLAS kernel
    (bench/__init__.py): every benchmark process, and the gate's workers, get one kernel and
    numpy's SIMD up to AVX2 wherever the caller set none."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("the pin is for x86-64 machines; this one is " + platform.machine())
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES")}
    code = ("import sys, bench, os; assert 'numpy' not in sys.modules; "
            "print(os.environ['OPENBLAS_CORETYPE'], os.environ['NPY_DISABLE_CPU_FEATURES'])")
    checkout = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True, cwd=checkout).stdout.split()
    assert out[0] == "Nehalem" and "X86_V4" in out[1:]
