"""`cobell model` through typer's CliRunner on a real SQLite history file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from cobell_cli.cli import model as model_cli
from cobell_cli.cli.common import state
from cobell_cli.errors import CobellError, UsageError
from cobell_cli.store.history import History
from tests.extras import require_extra


def make_root() -> typer.Typer:
    """A root like the real one (global --db), with only the model group mounted."""
    root = typer.Typer()

    @root.callback()
    def _root(ctx: typer.Context, db: str = typer.Option(..., "--db")) -> None:
        state(ctx).db = db

    root.add_typer(model_cli.app, name="model")
    return root


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """History: 'sgd' with co-runners (kmeans often, a one-off stranger), 'broken' failed only."""
    rng = np.random.default_rng(0)
    records = []
    for i in range(90):
        x = int(rng.choice(np.arange(4, 41, 4)))
        ov = float(rng.uniform(0, 1)) if i % 2 else 0.0
        runtime = (30 + 2000 / x) * (1 + (0.4 + 2 / x) * ov) * float(np.exp(rng.normal(0, .02)))
        colocations = [{"co_runner_job": "kmeans", "overlap_ratio": ov}] if ov else []
        if i == 7:
            colocations.append({"co_runner_job": "stranger", "overlap_ratio": 0.3})
        records.append({"job": "sgd", "status": "succeeded", "scale_out": x,
                        "runtime_s": runtime, "colocations": colocations})
    records.append({"job": "sgd", "status": "failed", "scale_out": 8, "runtime_s": 9e5})
    records.append({"job": "broken", "status": "failed", "scale_out": 8, "runtime_s": 12.0})
    path = tmp_path / "history.db"
    with History.open(path) as history:
        history.insert_runs(records, keep_ids=False)
    return path


def invoke(db: Path, *args: str) -> typer.testing.Result:
    return CliRunner().invoke(make_root(), ["--db", str(db), "model", *args])


def test_show_json_describes_the_fitted_model(db: Path) -> None:
    result = invoke(db, "show", "--job", "sgd", "--json")
    assert result.exit_code == 0, result.output
    d = json.loads(result.output)
    assert d["job"] == "sgd" and d["n_runs"] == 90  # the failed run is not used
    assert set(d["interference"]) == {"kmeans", "*"}  # the one-off stranger is pooled
    assert d["interference"]["kmeans"]["a"] == pytest.approx(0.4, abs=0.1)


def test_show_table_names_the_models_and_co_runners(db: Path) -> None:
    result = invoke(db, "show", "--job", "sgd")
    assert result.exit_code == 0, result.output
    assert "interpolation model" in result.output and "co-runner kmeans" in result.output
    assert "any other job" in result.output


@pytest.mark.parametrize(("job", "why"), [("nope", "is not in the history"),
                                          ("broken", "has no succeeded runs")])
def test_unknown_or_unusable_job_is_a_usage_error(db: Path, job: str, why: str) -> None:
    result = invoke(db, "show", "--job", job)
    assert isinstance(result.exception, UsageError)
    assert why in str(result.exception) and job in str(result.exception)
    assert "cobell history jobs" in result.exception.line()
    assert result.exception.exit_code == 2


def test_eval_compares_cobell_with_the_baselines_on_the_same_splits(db: Path) -> None:
    result = invoke(db, "eval", "--job", "sgd", "--protocol", "loso", "--json")
    assert result.exit_code == 0, result.output
    rows = {r["method"]: r for r in json.loads(result.output)["rows"]}
    assert set(rows) == {"ernest", "bell", "cobell", "noise_floor"}
    assert len({r["splits"] for r in rows.values()}) == 1 and rows["cobell"]["splits"] == 8
    # Only cobell knows the co-runners, so on co-located runs it must be clearly better.
    assert rows["cobell"]["mape_pct"] < 0.5 * rows["ernest"]["mape_pct"]
    table = invoke(db, "eval", "--job", "sgd", "-p", "extrap")
    assert table.exit_code == 0 and "median_mape_pct" in table.output


def test_eval_by_default_is_nested_cv_of_cobell_next_to_the_paper_and_bell(db: Path) -> None:
    result = invoke(db, "eval", "--job", "sgd", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["protocol"] == "nested"
    rows = {r["method"]: r for r in out["rows"]}
    assert set(rows) == {"cobell", "paper", "bell"}  # no repetition floor: co-runners vary
    assert rows["cobell"]["splits"] == 10 and rows["cobell"]["mape_se_pct"] > 0
    # The runs follow the paper's form with one co-runner: cobell must not lose to it by
    # more than the noise, and both must beat Bell, which cannot see the co-runner.
    assert rows["cobell"]["mape_pct"] <= rows["paper"]["mape_pct"] + rows["paper"]["mape_se_pct"]
    assert rows["paper"]["mape_pct"] < 0.5 * rows["bell"]["mape_pct"]


def test_eval_nested_with_too_few_runs_says_how_many_it_needs(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    with History.open(path) as history:
        history.insert_runs([{"job": "j", "status": "succeeded", "scale_out": x, "runtime_s": y}
                             for x, y in ((4, 400.0), (8, 210.0))])
    result = invoke(path, "eval", "--job", "j")
    assert isinstance(result.exception, UsageError)
    assert "2 runs" in str(result.exception) and "nested needs 3 runs" in result.exception.line()


def test_plot_writes_an_image(db: Path, tmp_path: Path) -> None:
    require_extra("matplotlib", reason="the plot extra (matplotlib) is not installed")
    out = tmp_path / "fit.png"
    result = invoke(db, "plot", "--job", "sgd", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_into_a_directory_writes_job_png_inside_it(db: Path, tmp_path: Path,
                                                       monkeypatch) -> None:
    """`-o plots` (an existing directory) wrote plots.png beside it and said `wrote plots`;
    `-o plots/new/` wrote plots/new.png."""
    require_extra("matplotlib", reason="the plot extra (matplotlib) is not installed")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plots").mkdir()
    for out, written in (("plots", "plots/sgd.png"), ("plots/new/", "plots/new/sgd.png")):
        result = invoke(db, "plot", "--job", "sgd", "-o", out)
        assert result.exit_code == 0, result.output
        assert f"wrote {written}" in result.output
        assert (tmp_path / written).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(tmp_path.glob("plots*.png")) and not (tmp_path / "plots" / "new.png").exists()


def test_plot_without_matplotlib_says_how_to_install_it(db: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import now raises ImportError
    result = invoke(db, "plot", "--job", "sgd", "-o", str(tmp_path / "x.png"))
    assert isinstance(result.exception, CobellError)
    assert "pip install 'cobell[plot]'" in result.exception.line()


def test_show_names_a_straggler_set_aside(tmp_path: Path) -> None:
    # Three single runs: 4 -> 400 s and 16 -> 100 s are linear speed-up; 8 -> 900 s cannot
    # sit between them without a slow-down faster than linear, so it is set aside.
    path = tmp_path / "h.db"
    with History.open(path) as history:
        history.insert_runs([{"job": "j", "status": "succeeded", "scale_out": x, "runtime_s": y}
                             for x, y in ((4, 400.0), (8, 900.0), (16, 100.0))])
    result = invoke(path, "show", "--job", "j")
    assert result.exit_code == 0, result.output
    (line,) = [ln for ln in result.output.splitlines() if "runs set aside at" in ln]
    assert line.split("runs set aside at")[1].split()[0] == "8" and "implausible" in line
    as_json = json.loads(invoke(path, "show", "--job", "j", "--json").output)
    assert as_json["cv"]["rejected_scale_outs"] == [8]


def test_show_says_what_each_pair_rests_on_and_flags_thin_ones(tmp_path: Path) -> None:
    """Four co-runners met often, four met in three runs each: every pair says what it rests
    on; a rare one whose three runs leave its effect uncertain is flagged (three runs can
    also happen to pin it down: flagged are only rare ones, and most of them)."""
    rng = np.random.default_rng(1)
    records = []
    often = ["k1", "k2", "k3", "k4"]
    rare = ["r1", "r2", "r3", "r4"]
    truth = dict(zip(often + rare, [(0.1, 0.5), (0.5, 2.0), (0.3, 0.0), (0.2, 3.0)] * 2,
                     strict=True))
    plan = [often[i % 4] for i in range(160)] + [r for r in rare for _ in range(3)]
    for co in plan:
        x = int(rng.choice(np.arange(4, 41, 4)))
        ov = float(rng.uniform(0.3, 1))
        a, b = truth[co]
        runtime = (30 + 2000 / x) * (1 + (a + b / x) * ov) * float(np.exp(rng.normal(0, .05)))
        records.append({"job": "sgd", "status": "succeeded", "scale_out": x, "runtime_s": runtime,
                        "colocations": [{"co_runner_job": co, "overlap_ratio": ov}]})
    path = tmp_path / "thin.db"
    with History.open(path) as history:
        history.insert_runs(records, keep_ids=False)
    d = json.loads(invoke(path, "show", "--job", "sgd", "--json").output)
    pairs = d["interference"]
    assert all(pairs[r]["runs"] == 3 and pairs[r]["overlap_s"] > 0 for r in rare)
    assert max(pairs[r]["own_weight"] for r in rare) < min(pairs[k]["own_weight"] for k in often)
    assert d["combination"]["pooling"] is not None
    text = invoke(path, "show", "--job", "sgd").output
    thin_rows = [line.split()[1] for line in text.splitlines() if "thin evidence" in line]
    assert set(thin_rows) <= set(rare) and len(thin_rows) >= 3
    assert "s overlapped" in text and "% own data" in text


def test_an_uncorrected_what_if_curve_reads_without_zero_terms() -> None:
    """`model show` printed `exp(2.22e-16 + 0·log x)` for a replay nothing corrected."""
    curve = {"kind": "what-if", "c0": 2.22e-16, "c1_log_scale_out": 0.0}
    assert model_cli._curve_text(curve) == "the what-if replay of the job's event-log profile"
    curve = {"kind": "what-if", "c0": 0.1, "c1_log_scale_out": -0.05}
    assert model_cli._curve_text(curve).endswith(" x 1.11·x^-0.05")


def test_eval_explains_its_noise_floor_row(db: Path) -> None:
    shown = invoke(db, "eval", "--job", "sgd", "--protocol", "loso")  # nested has no floor
    assert shown.exit_code == 0, shown.output
    assert "\nnoise_floor " in shown.output  # the row (repeated scale-outs in the fixture)
    assert "noise_floor: no model; each test run predicted by the mean" in shown.output
    help_text = invoke(db, "eval", "--help").output
    assert "noise_floor row is no model" in " ".join(help_text.split())
