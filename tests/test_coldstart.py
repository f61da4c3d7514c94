"""bench/coldstart.py: the synthetic profile, and a tiny run of the experiment."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench import coldstart
from bench.colocation import Config
from cobell_cli.core.plan import search_state
from cobell_cli.core.whatif import fit_whatif, replay_s, workload

pytestmark = pytest.mark.timeout(600)


@pytest.mark.parametrize(("job", "x0", "runtime_s"), [("sgd", 16, 401.0), ("kmeans", 8, 1809.0),
                                                       ("grep", 32, 182.0)])
def test_the_synthetic_profile_replays_to_its_one_run(job: str, x0: int, runtime_s: float):
    p = coldstart.synthetic_profile(job, x0, runtime_s)
    w = workload(p)
    assert p.scale_out == x0
    assert p.runtime_s == pytest.approx(runtime_s, abs=1e-3)
    assert replay_s(w, x0) == pytest.approx(runtime_s, rel=1e-3)
    assert len(w.groups) == coldstart.ITERATIONS[job] + 1
    curve = fit_whatif([p]).predict([x0 // 2, x0, 2 * x0])
    assert curve[0] > curve[1] > curve[2] > coldstart.STARTUP_S


def test_a_tiny_cold_start(bell_dir):
    cfg = Config(worlds=("nodesim",), targets=("sgd",), variants=("single",))
    results = coldstart.run_experiment(cfg, (16,), bell_dir)
    assert set(results) == {("nodesim", "single", "sgd", 16, p) for p in coldstart.POLICIES}
    for per in results.values():
        assert set(per) == {"search", "bounded", "whatif", "oracle"}
        assert all(len(subs) == coldstart.SUBMITS for subs in per.values())
        assert coldstart.misses(per["oracle"]) == 0
        phases = [s.phase for s in per["whatif"]]
        assert phases[0] == "bootstrap-whatif"  # the imported run and its profile: no search
        assert per["search"][0].phase == per["bounded"][0].phase == "bootstrap-search"
        assert all(4 <= s.scale_out <= 60 for s in per["whatif"])
    text = coldstart.render(results, cfg, (16,), "python -m bench.coldstart --quick", 1.0)
    assert "## Totals per world" in text and "what-if bootstrap" in text
    assert "## Goals (issue 23)" in text and "| nodesim |" in text.split("## Totals")[0]
    assert text.count("| nodesim | single | sgd | 16 |") == 2


# --- the bootstrap search with Amdahl's bounds (no event log) ------------------------------

CANDS = list(range(1, 65))


def run(i: int, x: int, runtime_s: float) -> dict:
    return {"id": i, "scale_out": x, "runtime_s": runtime_s}


def test_a_met_run_bounds_the_probe_where_the_binary_search_halves():
    met = [run(1, 32, 250.0)]
    assert search_state(met, CANDS, 350.0).probe_scale_out == 16  # lower midpoint of [1, 32]
    # Amdahl: at x' <= 32 the runtime is at most 250 · 32 / x' <= 350 from x' = 22.9 on
    assert search_state(met, CANDS, 350.0, "bounded").probe_scale_out == 23


def test_a_missed_run_raises_the_bracket_to_linear_speed_up():
    missed = [run(1, 8, 700.0)]
    binary = search_state(missed, CANDS, 350.0)
    bounded = search_state(missed, CANDS, 350.0, "bounded")
    assert binary.lo_scale_out == 9 and bounded.lo_scale_out == 16  # 8 · 700 / 350
    assert bounded.probe_scale_out == (16 + 64) // 2


@settings(max_examples=200, deadline=None)
@given(serial=st.floats(1.0, 300.0), parallel=st.floats(10.0, 20000.0),
       first=st.sampled_from(CANDS), target=st.floats(20.0, 2000.0))
def test_on_an_amdahl_job_no_probe_after_a_met_run_misses(serial, parallel, first, target):
    def runtime(x: int) -> float:
        return serial + parallel / x

    runs = [run(1, first, runtime(first))]
    for i in range(2, 5):
        x = search_state(runs, CANDS, target, "bounded").probe_scale_out
        if any(r["runtime_s"] <= target for r in runs):
            assert runtime(x) <= target * (1 + 1e-9)
        runs.append(run(i, x, runtime(x)))


def test_the_reason_gives_the_bound_the_probe_rests_on():
    from cobell_cli.core.plan import plan

    chosen = plan(job="j", history=[{**run(1, 32, 250.0), "status": "succeeded",
                                     "started_at": 1.0}],
                  now=10.0, target_s=350.0, min_scale_out=1, max_scale_out=64,
                  search_policy="bounded")
    assert chosen.phase == "bootstrap-search" and chosen.scale_out == 23
    assert "Amdahl's law the run at 32 in 250 s bounds the runtime at 23 by 348 s" in chosen.reason
