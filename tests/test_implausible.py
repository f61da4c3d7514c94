"""Runs that cannot be right do not steer (issue 34, item 2): an implausible runtime is kept out
of fitting when it is recorded or imported, with its reason beside the `excluded` flag, shown
by `history list/show` and named by the plan; `history include` reverses it. Real SQLite
files, the real CLI."""

from __future__ import annotations

import csv
import json
import math
import sqlite3
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cobell_cli.core.plausibility import FASTER, SLOWER
from cobell_cli.store import journal
from cobell_cli.store.history import History
from cobell_cli.store.schema import MIGRATIONS
from tests.cli_support import cobell

LOGS = Path(__file__).parent / "data" / "eventlogs" / "logs"


def ernest(x: float) -> float:
    return 60.0 + 4800.0 / x


def synthetic(scale_outs: list[int], seed: int = 0, job: str = "etl") -> list[dict]:
    """Succeeded runs of a job that takes minutes, with 3 % noise, an hour apart."""
    rng = np.random.default_rng(seed)
    return [{"job": job, "status": "succeeded", "scale_out": x, "started_at": 1e9 + 3600 * i,
             "runtime_s": ernest(x) * math.exp(rng.normal(0, 0.03))}
            for i, x in enumerate(scale_outs)]


def run_json(db: Path, run_id: int) -> dict:
    shown = cobell("--db", db, "history", "show", str(run_id), "--json")
    assert shown.exit_code == 0, shown.stderr
    return json.loads(shown.stdout)


def predicted(db: Path, job: str, target: str) -> dict:
    result = cobell("--db", db, "predict", "-j", job, "-t", target, "--cluster", "none",
                    "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


# -- the measured failure: Bell's sgd and a `cobell submit -- echo` -------------------------


@pytest.mark.parametrize("command", [["echo", "{scale_out}"],
                                     ["sh", "-c", "sleep 0.2", "{scale_out}"]])
def test_trying_cobell_with_a_stand_in_command_does_not_wreck_the_plan(
        tmp_path: Path, bell_dir: Path, command: list[str]) -> None:
    """105 runs of Bell's sgd reserve about 40 for 200 s (41 when the issue was filed). A
    submit of `echo` (0.0 s) or of a 0.2 s command recorded a success that made the next
    predict reserve 63-64 of 64 executors,
    "no scale-out meets the 200 s target": now it is kept out, said so, and named by the
    plan, and the plan stays within one step of the plan before it (until `history include`
    lets it in)."""
    db = tmp_path / "h.db"
    imported = cobell("--db", db, "history", "import", bell_dir / "sgd.spark.csv", "--job",
                      "sgd", "--runtime-unit", "ms")
    assert imported.exit_code == 0, imported.stderr
    before = predicted(db, "sgd", "200")["scale_out"]
    assert 36 <= before <= 44 and before < 60  # the premise: a plan far from the wrecked one
    submitted = cobell("--db", db, "submit", "-j", "sgd", "-t", "200", "--cluster", "none",
                       "--", *command)
    assert submitted.exit_code == 0, submitted.stderr
    assert "run 106 kept out of fitting: implausible runtime" in submitted.stderr
    plan = predicted(db, "sgd", "200")
    assert abs(plan["scale_out"] - before) <= 1 and plan["feasible"]
    assert any(w.startswith("run 106 kept out of fitting: implausible runtime")
               for w in plan["warnings"])
    text = cobell("--db", db, "predict", "-j", "sgd", "-t", "200", "--cluster", "none")
    assert "run 106 kept out of fitting" in text.stderr
    run = run_json(db, 106)
    assert run["excluded"] == 1 and run["excluded_by"] == "cobell"
    assert run["excluded_reason"].startswith("implausible runtime: ")
    listed = cobell("--db", db, "history", "list", "-n", "1")
    assert "succeeded (implausible)" in listed.stdout
    shown = cobell("--db", db, "history", "show", "106")
    assert "excluded:" in shown.stdout and "yes, by cobell" in shown.stdout
    included = cobell("--db", db, "history", "include", "106")
    assert included.exit_code == 0 and "included 1 run" in included.stderr
    assert run_json(db, 106)["excluded_by"] is None
    # the run steers again: by more than one step (to 63-64 before issue 34's decision rule,
    # which reads a sub-second run's pull as faster runs: fewer executors now)
    assert abs(predicted(db, "sgd", "200")["scale_out"] - before) > 1


# -- imports ---------------------------------------------------------------------------


def write_csv(path: Path, runs: list[dict], columns: list[str]) -> None:
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(runs)


def test_a_csv_with_an_implausible_row_imports_it_kept_out(tmp_path: Path) -> None:
    runs = synthetic([2, 4, 8, 16, 32] * 3)
    runs.insert(7, {**runs[7], "runtime_s": 0.05})  # run 8: a 0.05 s success
    source = tmp_path / "runs.csv"
    write_csv(source, runs, ["job", "status", "scale_out", "started_at", "runtime_s"])
    db = tmp_path / "h.db"
    imported = cobell("--db", db, "history", "import", source)
    assert imported.exit_code == 0, imported.stderr
    assert "imported 16 runs" in imported.stderr
    assert "1 kept out of fitting as implausible (run 8:" in imported.stderr
    run = run_json(db, 8)
    assert run["excluded_by"] == "cobell" and "0.05 s at scale-out" in run["excluded_reason"]
    assert [r["id"] for r in run_json_list(db) if r["excluded"]] == [8]


def run_json_list(db: Path) -> list[dict]:
    listed = cobell("--db", db, "history", "list", "--json")
    assert listed.exit_code == 0, listed.stderr
    return json.loads(listed.stdout)


def test_a_bell_file_with_a_stray_row_keeps_it_out(tmp_path: Path, bell_dir: Path) -> None:
    lines = (bell_dir / "sgd.spark.csv").read_text().splitlines()
    source = tmp_path / "sgd.spark.csv"
    source.write_text("\n".join([*lines[:50], "41,3", *lines[50:]]) + "\n")  # 3 ms at 41
    db = tmp_path / "h.db"
    imported = cobell("--db", db, "history", "import", source, "--runtime-unit", "ms")
    assert imported.exit_code == 0, imported.stderr
    kept_out = [r for r in run_json_list(db) if r["excluded"]]
    assert [(r["scale_out"], r["runtime_s"]) for r in kept_out] == [(41, 0.003)]


def test_include_reverses_it_and_export_import_round_trips_byte_for_byte(
        tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with History.open(db) as history:
        ids = history.insert_runs([*synthetic([2, 4, 8, 16] * 3), *synthetic([8], job="etl")],
                                  judge=True)
        history.insert_runs([{**synthetic([4])[0], "runtime_s": 0.01, "started_at": 2e9},
                             {**synthetic([8])[0], "runtime_s": 0.02, "started_at": 2e9 + 1}],
                            judge=True)
        assert history.kept_out(range(1, 20)) == {
            14: history.run(14)["excluded_reason"], 15: history.run(15)["excluded_reason"]}
        assert len(ids) == 13 and len(history.training_runs("etl")) == 13
        history.set_excluded([3], True)  # by hand
    included = cobell("--db", db, "history", "include", "14", "--json")
    assert json.loads(included.stdout) == {"included": [14], "unchanged": []}
    assert run_json(db, 14)["excluded"] == 0 and run_json(db, 14)["excluded_reason"] is None
    assert "excluded:             no" in cobell("--db", db, "history", "show", "14").stdout
    assert run_json(db, 3)["excluded_by"] == "hand" and run_json(db, 15)["excluded_by"] == "cobell"
    for fmt in ("csv", "json"):
        exported = cobell("--db", db, "history", "export", "--format", fmt)
        source = tmp_path / f"h.{fmt}"
        source.write_text(exported.stdout)
        copy = tmp_path / f"copy-{fmt}.db"
        assert cobell("--db", copy, "history", "import", source).exit_code == 0
        again = cobell("--db", copy, "history", "export", "--format", fmt)
        assert again.stdout == exported.stdout, fmt  # run 14 is not judged again
        assert "excluded_reason" in exported.stdout.splitlines()[0] or fmt == "json"


def test_a_reason_on_a_run_that_is_used_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "bad.csv"
    write_csv(source, [{**synthetic([4])[0], "excluded": 0, "excluded_reason": "odd"}],
              ["job", "status", "scale_out", "runtime_s", "excluded", "excluded_reason"])
    imported = cobell("--db", tmp_path / "h.db", "history", "import", source)
    assert imported.exit_code != 0
    assert "excluded_reason: only a run with excluded = 1 has one" in imported.stderr


def test_event_logs_imported_next_to_a_job_that_takes_minutes_are_kept_out(
        tmp_path: Path) -> None:
    """The recorded `etl` log ran seconds at 2 executors; a history where etl takes 20 min
    there keeps the imported run out (the path every record import shares)."""
    pytest.importorskip("zstandard", reason="the recorded logs are zstd: the eventlog extra")
    db = tmp_path / "h.db"
    with History.open(db) as history:
        history.insert_runs([{"job": "etl", "status": "succeeded", "scale_out": x,
                              "runtime_s": 1200.0 * 2 / x, "started_at": 1e9 + i}
                             for i, x in enumerate([1, 2, 4] * 3)], judge=True)
    result = cobell("--db", db, "history", "import", "--from-event-logs", LOGS, "--json")
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    [(run_id, reason)] = summary["kept_out"].items()
    assert run_json(db, int(run_id))["job"] == "etl" and reason.startswith("implausible")
    line = cobell("--db", tmp_path / "other.db", "history", "import", "--from-event-logs", LOGS)
    assert "kept out" not in line.stderr  # alone, nothing to judge it by


# -- recorded runs: the completion, the journal, a migrated file ----------------------------


def test_a_journalled_completion_is_judged_when_it_is_applied(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with History.open(db) as history:
        history.insert_runs(synthetic([2, 4, 8, 16] * 3))
        run_id = history.start_run(job="etl", scale_out=8, host="elsewhere", pid=1)
    row = {"status": "succeeded", "runtime_s": 0.004, "exit_code": 0, "job": "etl",
           "scale_out": 8}
    journal.append(db, journal.entry(run_id, row, "history locked"))
    with History.open(db, read_only=True) as history:
        assert history.run(run_id)["excluded"] == 0  # pending: not applied yet
    with History.open(db) as history:  # the next writer applies the journal
        run = history.run(run_id)
    assert run["status"] == "succeeded" and run["excluded"] == 1
    assert run["excluded_reason"].startswith("implausible runtime: 0.004 s at scale-out 8")


def test_complete_run_judges_in_the_same_write(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with History.open(db) as history:
        history.insert_runs(synthetic([2, 4, 8, 16] * 3))
        slow, fine, failed = (history.start_run(job="etl", scale_out=4, started_at=2e9 + i)
                              for i in range(3))
        assert list(history.complete_run(slow, status="succeeded", runtime_s=1e6)) == [slow]
        assert history.complete_run(fine, status="succeeded", runtime_s=ernest(4)) == {}
        assert history.complete_run(failed, status="failed", runtime_s=0.01) == {}
        assert [r["id"] for r in history.training_runs("etl")][-1] == fine


def test_a_version_9_history_migrates_with_no_reasons(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    for step in MIGRATIONS[:9]:
        step(conn)
    conn.execute("INSERT INTO runs (job, status, scale_out, runtime_s, excluded) "
                 "VALUES ('etl', 'succeeded', 4, 9, 1)")
    conn.execute("PRAGMA application_id = 0x436F426C")
    conn.execute("PRAGMA user_version = 9")
    conn.commit()
    conn.close()
    with History.open(db) as history:
        run = history.run(1)
        assert run["excluded"] == 1 and run["excluded_reason"] is None  # by hand
        with pytest.raises(sqlite3.IntegrityError):
            history.conn.execute("UPDATE runs SET excluded = 0 WHERE id = 1 AND 0")  # no-op
            history.conn.execute("UPDATE runs SET excluded_reason = 'x', excluded = 0")
    assert run_json(db, 1)["excluded_by"] == "hand"


# -- the goal: no single run moves a >= 10-run history's decision by more than one step ----


def plan_of(db: Path, job: str = "etl", target: str = "250") -> int:
    return int(predicted(db, job, target)["scale_out"])


@pytest.mark.parametrize("runtime_s", [0.0, 1e-3, 0.2, 3.0, 2e4, 1e5, 1e6])
def test_no_flagged_run_moves_the_decision(tmp_path: Path, runtime_s: float) -> None:
    """A 12-run history planned at 250 s; one more run at 24 executors (it ran 16 and 32),
    from 0 s to 1e6 s, through a real submit's write: the decision stays."""
    db = tmp_path / "h.db"
    with History.open(db) as history:
        history.insert_runs(synthetic([2, 4, 8, 16, 32, 64] * 2), judge=True)
    before = plan_of(db)
    with History.open(db) as history:
        run_id = history.start_run(job="etl", scale_out=24)
        assert list(history.complete_run(run_id, status="succeeded", runtime_s=runtime_s)) \
            == [run_id]
    assert abs(plan_of(db) - before) <= 1


@settings(max_examples=40, deadline=None)
@given(
    scale_outs=st.lists(st.sampled_from([1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64]), min_size=10,
                        max_size=30),
    seed=st.integers(0, 2**16),
    added_at=st.integers(1, 64),
    runtime_s=st.one_of(st.just(0.0), st.floats(0.0, 1e6),
                        st.floats(-7, 6).map(lambda e: 10.0**e)),
)
def test_only_plausible_runs_reach_the_planner(
        scale_outs: list[int], seed: int, added_at: int, runtime_s: float) -> None:
    """Any run (0 s .. 1e6 s, any scale-out) completed in a history of >= 10 runs: if it is
    kept out, the planner sees exactly the runs it saw before, so the decision cannot move;
    if not, its runtime is one the job could have had there: within FASTER times faster than
    a perfect speed-up allows and SLOWER times slower than a perfect slow-down (inside the
    scale-outs the job ran: than the job there), with a margin for the 3 % noise. Whether
    such a plausible run moves the decision is the planner's part (issue 34, item 1)."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "h.db"
        with History.open(db) as history:
            history.insert_runs(synthetic(scale_outs, seed), judge=True)
            before = history.training_runs("etl")
            run_id = history.start_run(job="etl", scale_out=added_at, started_at=2e9)
            kept_out = history.complete_run(run_id, status="succeeded", runtime_s=runtime_s)
            after = history.training_runs("etl")
    if kept_out:
        assert after == before
        return
    assert [r["id"] for r in after] == [*(r["id"] for r in before), run_id]
    truth = ernest(added_at)
    inside = min(scale_outs) <= added_at <= max(scale_outs)
    fastest = truth if inside else min(ernest(x) * x / added_at for x in scale_outs)
    slowest = truth if inside else max(ernest(x) * x / added_at for x in scale_outs)
    loose = 1.0 if inside else 10.0  # beyond them, the speed-up bounds are 10x wider
    assert fastest / (FASTER * loose * 1.25) <= runtime_s <= slowest * SLOWER * loose * 1.25


@pytest.mark.parametrize("scale_out, factor", [
    (2, 1.5),
    pytest.param(41, 5.0, marks=pytest.mark.xfail(strict=True, reason=(
        "the planner's part (issue 34, item 1): a plausible run the test accepts still moves "
        "the decision: on Bell's sgd one run 5x slower at 41 executors moves it by more than "
        "one step (2 on main 3d214e4 at confidence 0.9; still more than one at 0.95; one 1.5x "
        "the curve at 2 executors moved it by 3 at 0.9, by at most one at 0.95)"))),
])
def test_no_plausible_run_moves_bells_sgd_by_more_than_one_step(
        tmp_path: Path, bell_dir: Path, scale_out: int, factor: float) -> None:
    db = tmp_path / "h.db"
    imported = cobell("--db", db, "history", "import", bell_dir / "sgd.spark.csv", "--job",
                      "sgd", "--runtime-unit", "ms")
    assert imported.exit_code == 0
    before = plan_of(db, "sgd", "200")
    with History.open(db) as history:
        run_id = history.start_run(job="sgd", scale_out=scale_out, started_at=2e9)
        curve = {2: 2151.0, 41: 180.0}[scale_out]  # the L1 curve through all 105 runs
        assert not history.complete_run(run_id, status="succeeded", runtime_s=curve * factor)
    assert abs(plan_of(db, "sgd", "200") - before) <= 1
