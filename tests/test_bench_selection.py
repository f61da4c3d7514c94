"""bench.selection and bench.studies.prior_width on small made-up data (their full runs take
minutes)."""

from __future__ import annotations

import numpy as np
import pytest

from bench import selection
from bench.studies import prior_width
from cobell_cli.core.model import uncertainty
from cobell_cli.core.model.data import prepare_runs


def _runs(n: int, seed: int, noise: float = 0.01) -> list[dict]:
    """The paper's form: Amdahl's curve, one co-runner with a + b/x."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        x = int(rng.choice([2, 4, 8, 16]))
        ov = {"co": float(rng.uniform(0.2, 1.0))} if rng.random() < 0.6 else {}
        y = (20 + 400 / x) * (1 + (0.2 + 0.8 / x) * ov.get("co", 0.0))
        out.append({"scale_out": x, "runtime_s": y * float(np.exp(rng.normal(0, noise))),
                    "overlaps": ov})
    return out


def test_every_variant_is_scored_on_the_same_test_runs_and_bell_misses_the_co_runner():
    task = selection.Task("made-up", "seed 0", _runs(30, 0), _runs(20, 1))
    scores = selection.score(task)
    assert set(scores) == set(selection.VARIANTS)
    assert all(v.shape == (20,) and np.all(v >= 0) for v in scores.values())
    assert scores["cobell"].mean() < 3.0
    assert scores["Bell"].mean() > 2 * scores["cobell"].mean()
    text = selection.render([task], [scores], "test", 1.0)
    row = next(line for line in text.splitlines() if line.startswith("| Bell |"))
    gap = scores["Bell"].mean() - scores["cobell"].mean()
    assert f"(+{gap:.2f} ± 0.00)" in row


def test_prior_width_measures_coverage_at_each_width_and_restores_the_constant():
    data = prepare_runs(_runs(40, 2, noise=0.05))
    cuts = prior_width.draws(data, [0])
    assert len(cuts) == 5 and all(tr.sum() == 3 for tr, _ in cuts)  # one run at 3 levels
    before = uncertainty.PRIOR_LOG_HALF_WIDTH
    out = prior_width.measure({"made-up": [(data, cuts)]}, [0.01, 0.5])["made-up"]
    assert before == uncertainty.PRIOR_LOG_HALF_WIDTH
    assert out["coverage"][0.01] < out["coverage"][0.5]  # a wider prior covers more
    assert out["n"] == sum(int(te.sum()) for _, te in cuts) and out["q90"] > 0


@pytest.mark.parametrize("pool", [2, "2 varying"])
def test_simulated_tasks_have_fresh_runs_with_co_runners(bell_dir, pool, monkeypatch):
    monkeypatch.setattr(selection, "SIM_SIZES", (12,))
    monkeypatch.setattr(selection, "SIM_POOLS", (pool,))
    monkeypatch.setattr(selection, "SIM_TARGETS", ("sgd",))
    monkeypatch.setattr(selection, "SIM_FRESH", 5)
    (task,) = selection.sim_tasks(bell_dir, 1, ("simulator",))
    assert len(task.train) == 12 and len(task.test) == 5
    assert all(r["overlaps"] for r in task.test)
    sizes = {s for r in task.train + task.test for s in r["co_runner_scale_outs"].values()}
    assert (len(sizes) > 2) == (pool == "2 varying")  # two jobs, two sizes unless varying


def _history(path, scale_outs):
    """A CSV history of the real sets' target job: two runs per scale-out."""
    rows = ["id,job,scale_out,status,submitted_at,started_at,finished_at,runtime_s"]
    for i, x in enumerate([x for x in scale_outs for _ in range(2)], start=1):
        start, runtime = 1_700_000_000.0 + 1000.0 * i, 20.0 + 60.0 / x + i % 2
        rows.append(f"{i},colo-target,{x},succeeded,{start},{start},{start + runtime},{runtime}")
    path.write_text("\n".join(rows) + "\n")


def test_prior_width_notes_a_real_set_without_a_sparse3_draw(tmp_path):
    _history(tmp_path / "three.csv", (1, 3, 4))  # sparse3 needs a fourth scale-out to test on
    _history(tmp_path / "four.csv", (1, 2, 3, 4))
    sets, no_draw = prior_width.real_sets({"three": tmp_path / "three.csv",
                                           "four": tmp_path / "four.csv",
                                           "absent": tmp_path / "absent.csv"}, [0])
    assert list(sets) == ["four sparse3, seeds 0-0"]
    assert no_draw == ["three (6 runs at scale-outs [1, 3, 4])"]


def test_a_cached_history_is_read_back_not_scored_again(tmp_path, monkeypatch):
    tasks = [selection.Task("made-up", f"seed {s}", _runs(12, s), _runs(4, s + 10))
             for s in (0, 1)]
    calls: list[str] = []

    def fake_score(task):
        calls.append(task.label)
        return {v: np.full(len(task.test), float(len(calls))) for v in selection.VARIANTS}

    monkeypatch.setattr(selection, "score", fake_score)
    first = selection.evaluate(tasks[:1], 1, tmp_path)
    both = selection.evaluate(tasks, 1, tmp_path)
    assert calls == ["seed 0", "seed 1"]  # seed 0 came from the cache the second time
    assert np.array_equal(both[0]["cobell"], first[0]["cobell"])
    assert both[1]["cobell"][0] == 2.0 and len(list(tmp_path.iterdir())) == 2
