"""The benchmarks of issue 28: their worlds behave as documented and their rows are what the
methods under test really do (bench/studies/unseen_pairs.py, bench/hetero.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench import hetero
from bench import simulator as sim
from bench.simulator import load_curves
from bench.studies import unseen_pairs
from cobell_cli.core.profile_effects import shares


def test_simulated_event_logs_tell_the_jobs_bottlenecks_apart() -> None:
    """What the profile sees is the demand in the event log's terms, with per-run noise."""
    grep, sgd = shares(sim.run_resources("grep", "a")), shares(sim.run_resources("sgd", "a"))
    assert grep is not None and sgd is not None
    assert grep["disk"] > sgd["disk"] and sgd["cpu"] > grep["cpu"]
    again = shares(sim.run_resources("grep", "b"))
    assert again != grep and again["disk"] == pytest.approx(grep["disk"], rel=0.5)


def test_unseen_pair_rows_hold_the_pair_out(bell_dir: Path) -> None:
    curves = load_curves(bell_dir)
    runs = unseen_pairs.simulated_runs("nodesim", 3, curves)
    pairs = runs.pairs()
    assert len(pairs) == 15  # every pair of the six jobs met
    pair = pairs[0]
    full = {job: unseen_pairs._fit(rs) for job, rs in runs.by_job.items()}
    f = unseen_pairs.fold(runs, pair, full)
    for job in pair:
        other = pair[1] if job == pair[0] else pair[0]
        assert not any(other in r["overlaps"] for r in f.train[job])
        assert len(f.train[job]) == len(runs.by_job[job]) - unseen_pairs.PAIR_REPS
    rows = unseen_pairs.held_out_errors(runs, f, pair, 0.9)
    assert len(rows) == 2 * unseen_pairs.PAIR_REPS
    assert all(0 <= r[m] < 1 for r in rows for m in unseen_pairs.METHODS)
    summary = unseen_pairs.summary({"world": "nodesim", "seed": 3, "errors": rows,
                                    "allocations": [], "forms": [f.structure.form]})
    assert summary["mape"]["pooled"] == pytest.approx(
        100 * np.mean([r["pooled"] for r in rows]))


def test_each_node_type_is_fast_at_its_resource() -> None:
    assert hetero.slowness("grep", "storage") < hetero.slowness("grep", "compute")
    assert hetero.slowness("kmeans", "compute") < hetero.slowness("kmeans", "storage")
    assert hetero.slowness("pagerank", "network") < hetero.slowness("pagerank", "")


def test_hetero_history_and_the_oracle(bell_dir: Path) -> None:
    curves = load_curves(bell_dir)
    h = hetero.history(curves, 5)
    for job, runs in h.runs.items():
        labels = {r["node_label"] for r in runs}
        assert labels == {None, *h.explored[job]} and len(h.explored[job]) == 2
    rows = hetero.allocate(hetero.History({"sgd": h.runs["sgd"]}, h.profiles, h.explored),
                           curves, 5)
    assert len(rows) == len(hetero.TARGET_SCALE_OUTS) * hetero.REPS
    for row in rows:
        assert not row["oracle"]["miss"]
        for name in ("one-for-all", "shared", "per-type", "fastest"):
            # nobody meets the target for less than the oracle pays
            assert row[name]["miss"] or row[name]["cost"] >= row["oracle"]["cost"] - 1e-9


def test_a_type_no_other_job_ran_on_is_left_out_of_both_loto_errors(bell_dir: Path) -> None:
    """Seed 13: one job alone explored a type. Held out, the shared structure has nothing
    for it (the planner leaves such a label out): those runs are counted, not scored, and
    both methods are compared on the same runs."""
    h = hetero.history(load_curves(bell_dir), 13)
    rows = hetero.loto(h)
    left = [r for r in rows if r.get("left_out")]
    assert left and all(set(r) == {"job", "type", "left_out"} for r in left)
    (job, kind), = {(r["job"], r["type"]) for r in left}
    assert sum(kind in h.explored[j] for j in h.runs) == 1 and kind in h.explored[job]
    one_submit = {name: {"miss": False, "cost": 1.0, "type": "default"}
                  for name in hetero.STRATEGIES}
    s = hetero.summarize(13, rows, [one_submit])
    assert s["left_out_runs"] == len(left) and s["held_out_runs"] == len(rows) - len(left)
    assert "left out: a type no other job ran on" in hetero.table([s])


def test_a_recording_is_read_back_and_evaluated(tmp_path: Path) -> None:
    """The recording's CSV (cobell history export) and its resources side file, as
    history/record-profiles.py writes them, feed the same leave-one-pair-out."""
    import json

    from cobell_cli.store import interchange
    from cobell_cli.store.history import History
    from tests.test_profile_effects import _history, _resources

    db = tmp_path / "h.db"
    _history(db)
    with History.open(db) as history:
        runs = history.runs(newest_first=False, with_colocations=True)
        for i, r in enumerate(runs):  # app ids as a real recording has them
            history.conn.execute("UPDATE runs SET app_id = ? WHERE id = ?", (f"app-{i}", r["id"]))
        history.conn.commit()
        runs = history.runs(newest_first=False, with_colocations=True)
    csv_path = tmp_path / "rec.csv"
    csv_path.write_text(interchange.to_csv(runs))
    (tmp_path / "rec.resources.jsonl").write_text("".join(
        json.dumps({"app_id": r["app_id"], "job": r["job"],
                    "resources": _resources(r["job"])}) + "\n" for r in runs))
    rec = unseen_pairs.real_runs(csv_path)
    assert sum(len(v) for v in rec.by_job.values()) == len(runs)
    pair = ("cpu-c", "victim")
    assert pair in rec.pairs() and ("cpu-b", "victim") not in rec.pairs()
    result = unseen_pairs.evaluate("real", 0, rec, None, 0.9, [pair])
    assert {r["victim"] for r in result["errors"]} == set(pair)
    # the recording as the fresh test set of itself, its one pair (every pair took 70 s of 2 cores)
    test = unseen_pairs.Runs({job: rec.by_job[job] for job in pair})
    fresh = unseen_pairs.fresh_errors(rec, test, 0.9)
    assert {r["victim"] for r in fresh["errors"]} == set(pair) and fresh["allocations"] == []


def test_the_planner_that_knows_the_world_meets_its_p_and_never_beats_the_oracle(
        bell_dir: Path) -> None:
    curves = load_curves(bell_dir)
    rows = hetero.known_distribution({"sgd": curves["sgd"]}, 5, draws=30)
    assert len(rows) == len(hetero.TARGET_SCALE_OUTS)
    for row in rows:
        for p in hetero.KNOWN_P:
            choice = row[p]
            assert choice["meet"] >= p  # sgd's targets are all reachable somewhere
            assert choice["cost"] >= 1.0  # the oracle knows the run; a plan only its spread
        assert row[0.95]["cost"] >= row[hetero.KNOWN_P[0]]["cost"]  # more certainty, more cost
