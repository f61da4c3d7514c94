"""`cobell model plot` draws what `cobell predict` predicts, and its legend hides no curve;
`cobell model show` says what chose the memory function in words that agree with it (issue
35). The YARN demo's seed history (history/local-yarn-demo.csv) is the newcomer's:
its interpolation curve ends at 67 s at 6 executors, where the separately chosen
extrapolation curve (a constant, 56 s) takes over, so predict itself says 67 s at 6 and 56 s
at 7; the plot and `model show` name that step where the runs end, as predict makes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cobell_cli import api
from cobell_cli.cli.model import runtime_figure
from cobell_cli.store.history import History
from tests.cli_support import cobell
from tests.extras import require_extra

SEED = Path(__file__).resolve().parents[1] / "history" / "local-yarn-demo.csv"
JOB = "scaling-demo-yarn"


@pytest.fixture
def figure(tmp_path: Path):
    require_extra("matplotlib", reason="the plot extra (matplotlib) is not installed")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    db = tmp_path / "h.db"
    assert cobell("--db", db, "history", "import", SEED).exit_code == 0
    predicted = json.loads(cobell("--db", db, "predict", "-j", JOB, "-t", "100", "--cluster",
                                  "none", "--all", "--json").stdout)
    with History.open(db, read_only=True) as history:
        data = api.model_input(history, JOB, window=1000)
    fig = runtime_figure(data, api.fit_model(data), None, plt)
    fig.tight_layout()  # as `model plot` saves it
    fig.canvas.draw()
    yield fig, predicted
    plt.close(fig)


def test_the_curve_alone_is_what_predict_predicts_at_every_scale_out(figure) -> None:
    fig, predicted = figure
    (ax,) = [a for a in fig.axes if a.get_xlabel() == "scale-out"]
    alone = next(line for line in ax.get_lines() if line.get_label() == "ov = 0")
    drawn = dict(zip(alone.get_xdata(), alone.get_ydata(), strict=True))
    shown = [c for c in predicted["candidates"] if c["scale_out"] in drawn]
    assert len(shown) >= 7  # 1..7: the runs' range and beyond
    for candidate in shown:
        assert drawn[candidate["scale_out"]] == pytest.approx(candidate["predicted_s"], rel=1e-6)
    assert drawn[6] > drawn[7]  # the step predict makes where the extrapolation takes over


def test_the_legend_sits_outside_the_axes_and_names_every_curve(figure) -> None:
    fig, _ = figure
    (ax,) = [a for a in fig.axes if a.get_xlabel() == "scale-out"]
    legend = ax.get_legend()
    box, area = legend.get_window_extent(), ax.get_window_extent()
    assert not box.overlaps(area)  # it hides no curve, ov = 1 included
    assert fig.get_window_extent().contains(box.x0, box.y0)  # and is drawn, not cut off
    names = [t.get_text() for t in legend.get_texts()]
    assert names[:3] == ["ov = 0", "ov = 0.5 (corunner-demo-yarn)", "ov = 1 (corunner-demo-yarn)"]
    assert "largest scale-out run (6)" in names[3]
    assert "interpolation 66.7 s, extrapolation 56.1 s (alone)" in names[3]  # the step, named


def test_model_show_says_where_the_curve_steps_and_by_how_much(tmp_path: Path) -> None:
    """The handover row's two runtimes are what predict says alone at 6 and beyond it (the
    extrapolation here is a constant): the step a user sees in predict's table, explained."""
    db = tmp_path / "h.db"
    assert cobell("--db", db, "history", "import", SEED).exit_code == 0
    described = json.loads(cobell("--db", db, "model", "show", "-j", JOB, "--json").stdout)
    handover = described["handover"]
    predicted = json.loads(cobell("--db", db, "predict", "-j", JOB, "-t", "100", "--cluster",
                                  "none", "--all", "--json").stdout)
    at = {c["scale_out"]: c["predicted_s"] for c in predicted["candidates"]}
    assert handover["scale_out"] == 6
    assert handover["interpolation_s"] == pytest.approx(at[6], rel=1e-6)
    assert handover["extrapolation_s"] == pytest.approx(at[7], rel=1e-6)
    assert at[6] - at[7] > 10  # the 67 -> 56 s step of issue 35
    shown = cobell("--db", db, "model", "show", "-j", JOB).stdout.splitlines()
    (line,) = [x for x in shown if x.startswith("handover at 6")]
    assert "interpolation 66.7 s, extrapolation 56.1 s (alone)" in line


def test_no_handover_line_where_the_curves_meet() -> None:
    """Runs on Amdahl's law: both curves are the same fit, so there is no step to explain."""
    from cobell_cli.cli.model import show_rows
    from cobell_cli.core.model import fit_runtime_model

    runs = [{"scale_out": x, "runtime_s": 10 + 120 / x} for x in (2, 4, 6, 8, 12, 16)]
    description = fit_runtime_model(runs).describe()
    h = description["handover"]
    assert h["extrapolation_s"] == pytest.approx(h["interpolation_s"], rel=1e-3)
    assert not [r for r in show_rows(description) if r["field"].startswith("handover")]


MEMORY_CSV = (  # the same input per executor at two scale-outs: no slope to fit
    "job,scale_out,runtime_s,status,input_bytes,executor_memory_mb,peak_memory_mb,started_at\n"
    "mem,4,400,succeeded,1000000000,1024,600,1\n"
    "mem,4,410,succeeded,1000000000,1024,620,2\n"
    "mem,8,230,succeeded,2000000000,1024,610,3\n"
)


def test_model_show_says_plainly_what_chose_a_constant_memory_function(tmp_path: Path) -> None:
    db, runs = tmp_path / "h.db", tmp_path / "mem.csv"
    runs.write_text(MEMORY_CSV)
    assert cobell("--db", db, "history", "import", runs).exit_code == 0
    shown = cobell("--db", db, "model", "show", "-j", "mem")
    (line,) = [x for x in shown.stdout.splitlines() if x.startswith("memory function")]
    assert "constant: 621 MB (3 runs, chosen by default: a constant, since the runs' inputs " \
        "are too alike" in line
    assert "linear" not in line and "z = input" not in line
    described = json.loads(cobell("--db", db, "model", "show", "-j", "mem", "--json").stdout)
    assert described["memory"]["function"] == "constant"
    assert "linear" not in described["memory"]["chosen_by"]
