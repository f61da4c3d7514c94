"""A `cobell predict` that has to fit must not import scipy: its import alone costs ~0.33 s,
more than half of such a predict (bench/results/latency.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cobell_cli.store.history import History

CO_JOBS = ("scan", "shuffle", "join")


def write_history(path: Path, scale_outs: tuple[int, ...], seed: int = 0) -> None:
    """120 runs of `etl` (a + b/x interference from three co-runner jobs) and their
    co-runners' own runs, as `cobell submit` records them."""
    rng = np.random.default_rng(seed)
    records, t = [], 1.7e9
    for i in range(160):
        job = "etl" if i < 120 else CO_JOBS[i % 3]
        x = int(rng.choice(scale_outs))
        runtime = (40.0 + 2400.0 / x) * float(np.exp(rng.normal(0, 0.03)))
        colocations = []
        if job == "etl" and rng.random() < 0.6:
            k = int(rng.integers(3))
            ratio = float(rng.random())
            runtime *= 1.0 + (0.1 * (k + 1) + 1.5 / x) * ratio
            colocations.append({"co_runner_app_id": f"application_{i}_co",
                                "co_runner_job": CO_JOBS[k], "co_runner_scale_out": 8,
                                "overlap_ratio": round(ratio, 6),
                                "overlap_s": round(ratio * runtime, 3)})
        records.append({"id": i + 1, "job": job, "scale_out": x, "runtime_s": runtime,
                        "status": "succeeded", "started_at": t, "finished_at": t + runtime,
                        "submitted_at": t, "colocations": colocations})
        t += runtime + 60.0
    with History.open(path) as history:
        history.insert_runs(records)


PROBE = """
import json, sys
from cobell_cli.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
loaded = {"scipy": any(m == "scipy" or m.startswith("scipy.") for m in sys.modules),
          "numpy": "numpy" in sys.modules,
          "interference": "cobell_cli.core.model.interference" in sys.modules}
print(json.dumps(loaded), file=sys.stderr)
"""


# Two scale-outs: too few for the broken-line curve, so the fit takes Ernest's curve, the
# path that polished with scipy's curve_fit; five: the broken line (the common case).
@pytest.mark.parametrize("scale_outs", [(4, 8), (2, 4, 8, 12, 16)])
@pytest.mark.parametrize("confidence", [None, "point"])
def test_a_predict_that_fits_with_co_runners_does_not_import_scipy(
        tmp_path: Path, scale_outs: tuple[int, ...], confidence: str | None) -> None:
    db = tmp_path / "h.db"
    write_history(db, scale_outs)
    args = ["--db", str(db), "predict", "-j", "etl", "-t", "200", "--cluster", "none",
            "--json", *(["--confidence", confidence] if confidence else [])]
    env = {**os.environ, "COBELL_MODEL_CACHE": "off", "XDG_CACHE_HOME": str(tmp_path / "c"),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_DATA_HOME": str(tmp_path / "d")}
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["phase"] == "model"
    loaded = json.loads(proc.stderr.strip().splitlines()[-1])
    # It fitted (numpy) the interference model (three co-runner jobs), and without scipy.
    assert loaded == {"scipy": False, "numpy": True, "interference": True}
