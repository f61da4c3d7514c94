"""The model cache: a table answers exactly as the model it was made from, and the cache only
ever answers for the very runs it was fitted on."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cobell_cli.core.model import fit_runtime_model
from cobell_cli.core.model_table import ModelTable, tabulate
from cobell_cli.store.model_cache import GRID_MAX, MAX_ENTRIES, ModelCache, cache_key

JOBS = ["wc", "km", "tpch", None, "?", "stranger", " wc "]

run = st.fixed_dictionaries(
    {
        "scale_out": st.integers(1, 48),
        "runtime_s": st.floats(1.0, 1e4, allow_nan=False, allow_infinity=False),
        "overlaps": st.dictionaries(
            st.sampled_from(["wc", "km", None, "?"]), st.floats(0.0, 1.0), max_size=2
        ),
        "status": st.just("succeeded"),
    }
)
overlap_rows = st.dictionaries(st.sampled_from(JOBS), st.floats(0.0, 3.0), max_size=3)


def history(n: int = 24) -> list[dict]:
    """Amdahl-like job with two co-runners of known harm, deterministic."""
    runs = []
    for i in range(n):
        x = 2 + (i % 8) * 3
        ov = {"wc": (i % 3) / 2} if i % 2 else {"km": (i % 4) / 4}
        a, b = (0.2, 1.0) if "wc" in ov else (0.05, 0.3)
        (ratio,) = ov.values()
        alone = 30 + 600 / x
        runs.append(
            {
                "status": "succeeded",
                "scale_out": x,
                "runtime_s": alone * (1 + (a + b / x) * ratio) * (1 + 0.01 * ((i * 7) % 5 - 2)),
                "overlaps": ov,
            }
        )
    return runs


def close(got: list[float], want: list[float]) -> bool:
    return all(math.isclose(g, float(w), rel_tol=1e-12) for g, w in zip(got, want, strict=True))


slow = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@slow
@given(st.lists(run, min_size=1, max_size=30), st.lists(overlap_rows, min_size=1, max_size=4))
def test_table_answers_like_the_model_on_its_grid(runs: list[dict], rows: list[dict]) -> None:
    model = fit_runtime_model(runs)
    table = ModelTable.from_payload(
        json.loads(json.dumps(tabulate(model, 48, 0.9).to_payload()))
    )
    xs = [1, 2, 5, 17, 48][: len(rows)] or [1]
    rows = rows[: len(xs)]
    assert close(table.predict(xs, rows), model.predict(xs, rows))
    assert close(table.predict(xs), model.predict(xs))
    for mine, theirs in zip(
        table.predict_interval(xs, rows, confidence=0.9),
        model.predict_interval(xs, rows, confidence=0.9),
        strict=True,
    ):
        assert close(mine, theirs)
    for job in JOBS:
        assert table.interference(job) == model.interference(job)
    assert table.scale_out_range_ == tuple(float(v) for v in model.scale_out_range_)


def test_off_the_grid_the_table_asks_the_real_model_fitted_on_demand() -> None:
    runs = history()
    model = fit_runtime_model(runs)
    fits = []

    def refit() -> object:
        fits.append(1)
        return fit_runtime_model(runs)

    table = ModelTable.from_payload(tabulate(model, 8, 0.9).to_payload(), fallback=refit)
    table.predict([4, 8], {"wc": 0.5})
    assert fits == []  # on the grid: no fit
    assert close(table.predict([9.5, 40], {"wc": 0.5}), model.predict([9.5, 40], {"wc": 0.5}))
    lower, upper = table.predict_interval([4], None, confidence=0.97)  # another confidence
    want_lower, want_upper = model.predict_interval([4], None, confidence=0.97)
    assert close(lower, want_lower) and close(upper, want_upper)
    assert fits == [1]  # fitted once, then reused
    with pytest.raises(ValueError, match="overlap ratio"):
        table.predict([4], {"wc": -1.0})
    with pytest.raises(ValueError, match="2 overlap dicts for 1"):
        table.predict([4], [{}, {}])


def test_second_fit_of_the_same_runs_is_a_hit_and_answers_the_same(tmp_path: Path) -> None:
    runs = history()
    cache = ModelCache(tmp_path / "models", grid_max=32, confidence=0.9)
    first = cache.fit(runs)
    second = cache.fit([dict(r) for r in runs])
    assert (cache.hits, cache.misses) == (1, 1)
    assert isinstance(second, ModelTable) and not isinstance(first, ModelTable)
    xs = list(range(1, 33))
    assert close(second.predict(xs, {"wc": 0.7}), first.predict(xs, {"wc": 0.7}))
    assert second.describe()["n_runs"] == first.describe()["n_runs"]
    assert list((tmp_path / "models").glob(".tmp-*")) == []


def test_any_change_to_the_runs_is_a_miss(tmp_path: Path) -> None:
    runs = history()
    cache = ModelCache(tmp_path, grid_max=32, confidence=0.9)
    cache.fit(runs)
    changed = [
        runs[:-1],
        [*runs[:-1], {**runs[-1], "runtime_s": runs[-1]["runtime_s"] + 1e-9}],
        [*runs[:-1], {**runs[-1], "overlaps": {"km": 0.5}}],
        [*runs[:-1], {**runs[-1], "status": "failed"}],
        list(reversed(runs)),
    ]
    for variant in changed:
        cache.fit(variant)
    assert (cache.hits, cache.misses) == (0, 1 + len(changed))
    other = ModelCache(tmp_path, grid_max=32, confidence=0.97)  # another confidence
    other.fit(runs)
    assert other.misses == 1
    assert cache_key(runs, 32, 0.9) != cache_key(runs, 64, 0.9)


def test_a_changed_model_source_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          ) -> None:
    from cobell_cli.store import model_cache

    runs = history()
    ModelCache(tmp_path / "models", grid_max=32, confidence=0.9).fit(runs)
    source = tmp_path / "src"
    source.mkdir()
    (source / "select.py").write_text("A = 1\n")
    monkeypatch.setattr(model_cache, "MODEL_SOURCES", (source,))
    model_cache.model_source_digest.cache_clear()
    try:
        before = model_cache.model_source_digest()
        cache = ModelCache(tmp_path / "models", grid_max=32, confidence=0.9)
        cache.fit(runs)
        assert (cache.hits, cache.misses) == (0, 1)  # another model than the one cached
        cache.fit(runs)
        assert cache.hits == 1
        (source / "select.py").write_text("A = 2\n")
        model_cache.model_source_digest.cache_clear()
        assert model_cache.model_source_digest() != before
        cache.fit(runs)
        assert cache.misses == 2
    finally:
        model_cache.model_source_digest.cache_clear()


def test_the_model_sources_cover_every_module_a_fitted_model_runs() -> None:
    """The digest must change with any code a cached answer came from: the runtime model's
    modules and the what-if package's (a plan with profiles fits through both)."""
    import importlib
    import pkgutil

    from cobell_cli.core import model, whatif
    from cobell_cli.store.model_cache import MODEL_SOURCES

    assert all(source.exists() for source in MODEL_SOURCES)
    covered = {
        path.resolve()
        for source in MODEL_SOURCES
        for path in (source.glob("*.py") if source.is_dir() else [source])
    }
    for package in (model, whatif):
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            module = importlib.import_module(info.name)
            assert Path(module.__file__).resolve() in covered, info.name


def test_scale_out_ranges_share_entries_and_larger_runs_grow_the_grid(tmp_path: Path) -> None:
    runs = history()
    ModelCache(tmp_path, grid_max=6, confidence=0.9).fit(runs)
    wide = ModelCache(tmp_path, grid_max=GRID_MAX, confidence=0.9)
    assert isinstance(wide.fit(runs), ModelTable) and wide.hits == 1
    huge = [*runs, {"status": "succeeded", "scale_out": GRID_MAX + 40, "runtime_s": 50.0}]
    wide.fit(huge)
    assert (tmp_path / f"{cache_key(huge, GRID_MAX + 40, 0.9)}.json").exists()


def test_unfittable_runs_are_remembered_as_such(tmp_path: Path) -> None:
    bad = [{"status": "failed", "scale_out": 4, "runtime_s": 10.0}]
    cache = ModelCache(tmp_path, grid_max=8, confidence=0.9)
    with pytest.raises(ValueError, match="no usable runs") as first:
        cache.fit(bad)
    with pytest.raises(ValueError) as second:
        cache.fit(bad)
    assert str(second.value) == str(first.value) and cache.hits == 1


@pytest.mark.parametrize(
    "damage",
    ["", "{not json", '{"key": "someone else", "table": {}}', "[1, 2]", '{"key": "K"}'],
)
def test_a_damaged_entry_is_a_miss_and_is_rewritten(tmp_path: Path, damage: str) -> None:
    runs = history()
    cache = ModelCache(tmp_path, grid_max=16, confidence=0.9)
    cache.fit(runs)
    (path,) = tmp_path.glob("*.json")
    assert path.stem == cache_key(runs, GRID_MAX, 0.9)
    path.write_text(damage.replace('"K"', json.dumps(path.stem)))
    assert cache.fit(runs) is not None
    assert cache.misses == 2
    assert json.loads(path.read_text())["key"] == path.stem


def test_an_unwritable_cache_still_plans(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = ModelCache(blocker / "models", grid_max=8, confidence=0.9)
    assert cache.fit(history()) is not None
    assert cache.fit(history()) is not None
    assert (cache.hits, cache.misses) == (0, 2)


def test_the_cache_keeps_only_the_newest_entries(tmp_path: Path) -> None:
    cache = ModelCache(tmp_path, grid_max=4, confidence=0.9, fit=lambda runs: _Flat())
    for i in range(MAX_ENTRIES + 5):
        cache.fit([{"status": "succeeded", "scale_out": 1, "runtime_s": float(i + 1)}])
    assert len(list(tmp_path.glob("*.json"))) == MAX_ENTRIES


class _Flat:
    """A model that takes the same time at any scale-out, so pruning needs no fitting."""

    scale_out_range_ = (1.0, 1.0)

    def predict(self, xs: list[int], overlaps: object = None) -> list[float]:
        return [1.0 for _ in xs]

    def predict_interval(
        self, xs: list[int], overlaps: object = None, confidence: float = 0.9
    ) -> tuple[list[float], list[float]]:
        return [1.0 for _ in xs], [1.0 for _ in xs]

    def interference(self, job: object) -> tuple[float, float]:
        return 0.0, 0.0

    def describe(self) -> dict:
        return {}
