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

import pytest

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


# Two scale-outs (Ernest's curve, the regime and edge checks) and five (the broken line, the
# interpolation CV with its medians); the default P(meet) policy and the point decision.
@pytest.mark.parametrize("scale_outs,confidence", [((4, 8), None), ((2, 4, 8, 12, 16), "point")])
def test_a_predict_that_fits_does_not_import_numpy_ma(
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
    assert json.loads(proc.stdout)["phase"] == "model"
    loaded = json.loads(proc.stderr.strip().splitlines()[-1])
    # It fitted (numpy, the model) without numpy.ma.
    assert loaded == {"numpy": True, "numpy.ma": False, "cobell_cli.core.model.select": True}


EXIT_PROBE = """
import atexit, gc, json, sys
atexit.register(lambda: print(json.dumps(gc.get_freeze_count()), file=sys.stderr))
from cobell_cli.cli import main
if sys.argv[1] == "in-process":
    try:
        main(sys.argv[2:])
    except SystemExit:
        pass
else:
    sys.argv = ["cobell", *sys.argv[2:]]
    main()
"""


def test_the_process_exit_skips_the_collection_only_when_cobell_ends_it(tmp_path: Path) -> None:
    """cli.main() as the process entry freezes what the command left (no collection at exit,
    ~35 ms CPU of a fitting predict); called with arguments (tests, scripts) it leaves the
    caller's collector alone. The output is the same either way."""
    db = tmp_path / "h.db"
    write_history(db, (2, 4, 8))
    args = ["--db", str(db), "predict", "-j", "etl", "-t", "200", "--cluster", "none",
            "--json"]
    env = {**os.environ, "COBELL_MODEL_CACHE": "off", "XDG_CACHE_HOME": str(tmp_path / "c"),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_DATA_HOME": str(tmp_path / "d")}
    frozen, plans = {}, {}
    for mode in ("process", "in-process"):
        proc = subprocess.run([sys.executable, "-c", EXIT_PROBE, mode, *args],
                              capture_output=True, text=True, timeout=300, env=env)
        assert proc.returncode == 0, proc.stderr
        frozen[mode] = json.loads(proc.stderr.strip().splitlines()[-1])
        plans[mode] = json.loads(proc.stdout)
        plans[mode].pop("now")
    assert frozen["process"] > 10_000 and frozen["in-process"] == 0
    assert plans["process"] == plans["in-process"]
