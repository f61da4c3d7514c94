"""bench.studies.late_runs: a run's log error splits exactly into its parts, what it records
of the plan is what the plan decided on, and the attribution follows the module's rule."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from bench import colocation as co
from bench.gate import units as gate
from bench.studies import late_runs as lr
from cobell_cli.core.plan import model_phase


def _late(**parts: float) -> dict:
    base = {"curve": 0.0, "repetition": 0.0, "pairs": 0.0, "placement": 0.0, "overlap": 0.0,
            "blind_late": False}
    return {**base, **parts}


def test_attribution_names_noise_where_the_physics_aware_planner_is_late_too() -> None:
    assert lr.attribute(_late(overlap=0.2, blind_late=True)) == (
        "noise: the physics-aware planner is late too")
    assert lr.attribute(_late(curve=-0.01, pairs=-0.02, placement=0.3)) == (
        "noise the bound should have covered")


def test_attribution_names_the_larger_positive_model_part() -> None:
    assert lr.attribute(_late(curve=0.01, pairs=0.05, overlap=0.03)) == "curve and pairs"
    assert lr.attribute(_late(curve=-0.25, pairs=0.35, overlap=0.03)) == "pairs"
    assert lr.attribute(_late(curve=0.17, pairs=-0.02, overlap=0.03)) == "curve"
    assert lr.attribute(_late(curve=0.02, pairs=-0.01, overlap=0.03)) == "overlap"


def test_the_parts_sum_to_the_log_error_and_the_hooks_leave_nothing_behind(
        bell_dir: Path) -> None:
    del bell_dir  # the cell reads the Bell data from bench's default place
    plan, bounds, play, decide = co.plan, model_phase._runtime_bounds, co.play, co.decide
    cfg = dataclasses.replace(gate.allocation_config("nodesim", "single", "sgd"),
                              runs_per_interferer=2, strategies=("default",))
    cell, runs = lr._cell((cfg, "default"))
    assert cell == "nodesim/single/sgd"
    assert [d["index"] for d in runs] == [7, 8]  # 8 runs, the bootstrap's 6 left out
    for d in runs:
        assert d["check_predicted_s"] == pytest.approx(d["predicted_s"], rel=1e-9)
        total = d["curve"] + d["repetition"] + d["interference"] + d["overlap"]
        assert total == pytest.approx(math.log(d["runtime_s"] / d["predicted_s"]), abs=1e-9)
        assert d["late"] == (d["runtime_s"] > d["target_s"])
        assert 4 <= d["oracle_scale_out"] <= 60
        assert [c["job"] for c in d["co_runners"]] == [
            j for j in d["co_jobs"]]
    assert (co.plan, model_phase._runtime_bounds, co.play, co.decide) == (
        plan, bounds, play, decide)


def test_physics_splits_the_interference_part_into_the_pairs_and_the_draw(
        bell_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    del bell_dir
    monkeypatch.setattr(lr, "REDRAWS", 4)
    monkeypatch.setattr(lr, "NOISE_BLIND_DRAWS", 4)
    cfg = dataclasses.replace(gate.allocation_config("nodesim", "single", "sgd"),
                              runs_per_interferer=2, strategies=("default",))
    _, runs = lr._cell((cfg, "default"))
    world, curves = co.truth("nodesim"), co.load_curves(co.DEFAULT_DATA)
    setups = {s.index: s for s in co.draw_runs("single", "sgd", cfg, curves, world)}
    d = runs[-1]
    got = lr.physics(d, setups[d["index"]], curves, "sgd", world, cfg.seed)
    assert got["pairs"] + got["placement"] == pytest.approx(d["interference"], abs=1e-9)
    assert 0.0 <= got["own_noise_meet"] <= 1.0 and 0.0 <= got["blind_meet"] <= 1.0
    assert co.MIN_SCALE_OUT <= got["blind_scale_out"] <= got["blind_high_scale_out"]
    assert got["blind_high_scale_out"] <= co.MAX_SCALE_OUT


def test_the_sized_variant_fits_with_sized_models_only_while_inside() -> None:
    fit = co.fit_runtime_model
    with lr.fitted("sized"):
        assert co.fit_runtime_model.keywords == {"sized": True}  # type: ignore[attr-defined]
    assert co.fit_runtime_model is fit
    with pytest.raises(ValueError, match="unknown variant"), lr.fitted("wider"):
        pass
