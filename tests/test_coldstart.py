"""bench/coldstart.py: the synthetic profile, and a tiny run of the experiment."""

from __future__ import annotations

import pytest

from bench import coldstart
from bench.colocation import Config
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
        assert set(per) == {"search", "whatif", "oracle"}
        assert all(len(subs) == coldstart.SUBMITS for subs in per.values())
        assert coldstart.misses(per["oracle"]) == 0
        phases = [s.phase for s in per["whatif"]]
        assert phases[0] == "bootstrap-whatif"  # the imported run and its profile: no search
        assert per["search"][0].phase == "bootstrap-search"
        assert all(4 <= s.scale_out <= 60 for s in per["whatif"])
    text = coldstart.render(results, cfg, (16,), "python -m bench.coldstart --quick", 1.0)
    assert "## Totals per world" in text and "what-if bootstrap" in text
    assert text.count("| nodesim | single | sgd | 16 |") == 2
