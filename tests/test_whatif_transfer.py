"""A what-if that transfers (issue 23, item 2), on the real recordings in bench/data/whatif:
other jobs' runs in the history change a job's what-if by at most 10 % unless the job's own
runs show, out of sample, that the change predicts them better; the start-up prior scales
with the executors per host, which the log's executor hosts tell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import whatif as bench
from cobell_cli.core.whatif import fit_whatif, workload
from cobell_cli.core.whatif.evidence import HOST_SHARE_OFFSET
from cobell_cli.store.history import History
from tests.cli_support import cobell
from tests.test_whatif_plan import store_profile

pytestmark = pytest.mark.timeout(600)
COUNTS = list(range(1, 9))


@pytest.fixture(scope="module")
def runs():
    if not (bench.DATA / "manifest.json").is_file():
        pytest.skip("the recorded logs are not in bench/data/whatif (bench/whatif_record.py)")
    return bench.load_runs(bench.DATA, bench.QUICK_EXECUTORS, (1, 2))


def others(runs, shape):
    return [r.profile for r in runs if r.shape != shape]


def moved(a, b) -> float:
    return max(abs(y / x - 1) for x, y in zip(a, b, strict=True))


def test_other_jobs_runs_do_not_move_a_one_run_whatif(runs):
    for r in runs:
        alone = fit_whatif([r.profile]).predict(COUNTS)
        crowded = fit_whatif([r.profile], cluster_profiles=others(runs, r.shape))
        assert moved(alone, crowded.predict(COUNTS)) <= 0.10, r.name
        assert crowded.startup_choice_.source == "log"


def test_other_jobs_move_it_only_where_the_jobs_own_run_shows_it_helps(runs):
    used = 0
    for r in runs:
        partner = next(p for p in runs if p.shape == r.shape and p.executors != r.executors
                       and p.rep == r.rep)
        own = [{"scale_out": x.executors, "runtime_s": x.runtime_s} for x in (r, partner)]
        alone = fit_whatif([r.profile], own)
        crowded = fit_whatif([r.profile], own, cluster_profiles=others(runs, r.shape))
        choice = crowded.startup_choice_
        if moved(alone.predict(COUNTS), crowded.predict(COUNTS)) > 0.10:
            assert choice.source == "cluster", r.name
        if choice.source == "cluster":
            used += 1
            # the kept jobs' trend predicts the job's own other run better than the prior
            assert choice.errors["cluster"] < choice.errors["log"]
            assert all(choice.errors[f"job {j}"] < choice.errors["log"] for j in choice.jobs)
    assert used > 0  # on these recordings some other jobs' trends do help


def test_the_start_up_prior_grows_with_the_executors_on_one_host(runs):
    r = next(r for r in runs if r.shape == "wide" and r.executors == 2)
    w = workload(r.profile)
    assert w.executors_per_host == 2  # both executors on 127.0.0.1
    scaled = fit_whatif([r.profile])
    observed = fit_whatif([r.profile], host_offset=None)
    first = [scaled.startup_.registration_s(w, n)[0] for n in (2, 4, 8)]
    assert first[0] == pytest.approx(w.registration_s[0])
    assert first == sorted(first) and first[2] > 2 * first[0]
    assert observed.startup_.registration_s(w, 8)[0] == pytest.approx(w.registration_s[0])
    own, k = w.registration_s[0], HOST_SHARE_OFFSET
    assert first[2] == pytest.approx(own * (k + 8) / (k + 2))  # 8 vs 2 on one host
    # the same run on two hosts (one executor each), placed alike: 8 executors are 4 per host
    spread = type(w)(**{**w.__dict__, "executors_per_host": 1})
    assert scaled.startup_.registration_s(spread, 8)[0] == pytest.approx(own * (k + 4) / (k + 1))
    assert scaled.startup_.registration_s(spread, 2)[0] == pytest.approx(own)


def test_model_whatif_with_other_jobs_in_the_history_is_the_empty_historys(runs, tmp_path):
    """The issue's symptom: after other jobs' runs reached the default history, `cobell model
    whatif` on the same log predicted 60-80 % more at 8 executors."""
    log = bench.DATA / "iterative-x2-r1.zstd"
    db = tmp_path / "h.db"
    with History.open(db) as history:
        history.insert_runs([{"job": f"other-{i}", "status": "succeeded",
                              "scale_out": r.executors, "runtime_s": r.runtime_s,
                              "started_at": float(i)}
                             for i, r in enumerate(runs) if r.shape != "iterative"],
                            keep_ids=False)
        for row, r in zip(history.runs(), [r for r in runs if r.shape != "iterative"],
                          strict=True):
            store_profile(history, row["id"], r.profile)

    def predict(path: Path) -> list[float]:
        out = cobell("--db", path, "model", "whatif", "--event-log", log, "--json",
                     *[a for x in (2, 4, 8) for a in ("-x", str(x))])
        assert out.exit_code == 0, out.stderr
        return [p["runtime_s"] for p in json.loads(out.stdout)["predictions"]]

    assert predict(db) == pytest.approx(predict(tmp_path / "empty.db"), rel=0.10)


def test_a_fit_makes_each_profile_a_workload_once(runs, monkeypatch):
    """Other jobs' profiles are judged one start-up candidate at a time; each one's workload
    (~10 ms per 25 000 tasks, on every predict) is made once per fit, not once per candidate."""
    import sys

    module = sys.modules["cobell_cli.core.whatif.workload"]  # the package exports `workload`
    made: list[int] = []
    original = module.workload
    monkeypatch.setattr(module, "workload", lambda p: made.append(id(p)) or original(p))
    r = runs[0]
    partner = next(p for p in runs if p.shape == r.shape and p.executors != r.executors)
    own = [{"scale_out": x.executors, "runtime_s": x.runtime_s} for x in (r, partner)]
    cluster = others(runs, r.shape)
    fit_whatif([r.profile], own, cluster_profiles=cluster)
    assert len(made) == len(set(made)) == 1 + len(cluster)
