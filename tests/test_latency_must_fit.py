"""A `cobell predict` that has to fit loads no module it does not need: numpy.ma costs ~8-10 ms
of such a predict (numpy 2 imports it on the first np.unique(x) without return_* options, the
first np.median and every np.quantile), 5 % of the 0.2x spark-submit goal (issue 34);
core/sorted_values.py answers those three without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cobell_cli.store.history import History
from tests.test_no_scipy_on_predict import write_history

PROBE = """
import json, sys
from cobell_cli.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps({m: m in sys.modules for m in ("numpy", "numpy.ma",
                  "cobell_cli.core.model.select")}), file=sys.stderr)
"""


def run_probe(probe: str, db: Path, tmp_path: Path, *extra: str) -> tuple[dict[str, Any], Any]:
    """`cobell predict -j etl -t 200 --json` of `db` in a new process that runs `probe`, the
    model cache off: the plan, and what the probe printed last on stderr (JSON)."""
    env = {**os.environ, "COBELL_MODEL_CACHE": "off", "XDG_CACHE_HOME": str(tmp_path / "c"),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_DATA_HOME": str(tmp_path / "d")}
    args = ["--db", str(db), "predict", "-j", "etl", "-t", "200", "--cluster", "none",
            "--json", *extra]
    proc = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), json.loads(proc.stderr.strip().splitlines()[-1])


# Two scale-outs (Ernest's curve, the regime and edge checks) and five (the broken line, the
# interpolation CV with its medians); the default P(meet) policy and the point decision.
@pytest.mark.parametrize("scale_outs,confidence", [((4, 8), None), ((2, 4, 8, 12, 16), "point")])
def test_a_predict_that_fits_does_not_import_numpy_ma(
        tmp_path: Path, scale_outs: tuple[int, ...], confidence: str | None) -> None:
    db = tmp_path / "h.db"
    write_history(db, scale_outs)
    plan, loaded = run_probe(PROBE, db, tmp_path,
                             *(["--confidence", confidence] if confidence else []))
    assert plan["phase"] == "model"
    # It fitted (numpy, the model) without numpy.ma.
    assert loaded == {"numpy": True, "numpy.ma": False, "cobell_cli.core.model.select": True}


EXIT_PROBE = """
import atexit, gc, json, sys
atexit.register(lambda: print(json.dumps(gc.get_freeze_count()), file=sys.stderr))
from cobell_cli.cli import main
if "MODE" == "in-process":
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
else:
    sys.argv = ["cobell", *sys.argv[1:]]
    main()
"""


def test_the_process_exit_skips_the_collection_only_when_cobell_ends_it(tmp_path: Path) -> None:
    """cli.main() as the process entry freezes what the command left (no collection at exit,
    ~35 ms CPU of a fitting predict); called with arguments (tests, scripts) it leaves the
    caller's collector alone. The output is the same either way."""
    db = tmp_path / "h.db"
    write_history(db, (2, 4, 8))
    frozen, plans = {}, {}
    for mode in ("process", "in-process"):
        plans[mode], frozen[mode] = run_probe(EXIT_PROBE.replace("MODE", mode), db, tmp_path)
        plans[mode].pop("now")
    assert frozen["process"] > 10_000 and frozen["in-process"] == 0
    assert plans["process"] == plans["in-process"]


def write_long_history(path: Path, n: int) -> None:
    """n runs of `etl` at 2..16 executors, 60 % of them next to one of three co-runner jobs."""
    rng = np.random.default_rng(1)
    records = []
    for i in range(n):
        x = int(rng.choice([2, 4, 8, 12, 16]))
        runtime, colocations = 40.0 + 2400.0 / x, []
        if rng.random() < 0.6:
            ratio = float(rng.random())
            runtime *= 1.0 + (0.2 + 1.5 / x) * ratio
            colocations.append({"co_runner_app_id": f"application_{i}_co",
                                "co_runner_job": f"co{i % 3}", "co_runner_scale_out": 8,
                                "overlap_ratio": round(ratio, 6)})
        t = 1.7e9 + 1000.0 * i
        records.append({"id": i + 1, "job": "etl", "scale_out": x, "status": "succeeded",
                        "runtime_s": runtime * float(np.exp(rng.normal(0, 0.03))),
                        "started_at": t, "submitted_at": t, "colocations": colocations})
    with History.open(path) as history:
        history.insert_runs(records)


COLLECTIONS_PROBE = """
import atexit, gc, json, runpy, sys
seen = []
default = gc.get_threshold()[0]  # collections before cobell sets its own are runpy's
gc.callbacks.append(lambda phase, info: phase == "start" and gc.get_threshold()[0] != default
                    and seen.append(info["generation"]))
atexit.register(lambda: print(json.dumps(seen), file=sys.stderr))
sys.argv = ["cobell", *sys.argv[1:]]
runpy.run_module("cobell_cli", run_name="__main__")
"""


def test_the_executable_runs_no_collection_in_a_predict_that_fits(tmp_path: Path) -> None:
    """cobell_cli/__main__.py's young-generation threshold: a predict that fits (numpy, the
    model: ~50 000 objects) finishes before the first collection (at 50 000 it paid one)."""
    db = tmp_path / "h.db"
    write_long_history(db, 1000)  # the planner's window, as bench.latency's 10 000-run history
    plan, collections = run_probe(COLLECTIONS_PROBE, db, tmp_path)
    assert plan["phase"] == "model"
    assert collections == []
