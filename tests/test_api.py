"""The measured overlap recorded after a run (what the next model is trained on)."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from cobell_cli.api import measured_overlaps
from cobell_cli.core.running import RunningApp


def app(app_id: str, start: float | None, end: float | None, job: str | None = "wc") -> RunningApp:
    return RunningApp(app_id, "n", job, "u", "q", "RUNNING", start, end, scale_out=4)


def test_partial_full_disjoint_and_still_running() -> None:
    rows = measured_overlaps(100.0, 200.0, [
        app("a", 50.0, 150.0),     # overlaps our first half
        app("b", 120.0, 130.0),    # inside
        app("c", 10.0, 90.0),      # ended before we started
        app("d", 180.0, None),     # still running at our end
        app("e", None, None),      # start hidden by ACLs: cannot be measured
    ])  # fmt: skip
    by_id = {r["co_runner_app_id"]: r for r in rows}
    assert set(by_id) == {"a", "b", "d"}
    assert by_id["a"]["overlap_s"] == 50.0 and by_id["a"]["overlap_ratio"] == 0.5
    assert by_id["b"]["overlap_ratio"] == pytest.approx(0.1)
    assert by_id["d"]["overlap_s"] == 20.0 and by_id["d"]["co_runner_finished_at"] is None
    assert by_id["a"]["co_runner_job"] == "wc" and by_id["a"]["co_runner_scale_out"] == 4


def test_same_app_listed_twice_counts_once() -> None:
    rows = measured_overlaps(0.0, 10.0, [app("a", 0.0, None), app("a", 0.0, 5.0)])
    assert len(rows) == 1


times = st.floats(min_value=0, max_value=1e6, allow_nan=False)


@given(start=times, length=st.floats(0.001, 1e5), a=times, b=st.none() | times)
@example(start=1e-12, length=1.0, a=1.0, b=None)  # a picosecond of overlap is none
def test_overlap_ratio_is_a_fraction_of_our_runtime(start, length, a, b) -> None:
    end = start + length
    rows = measured_overlaps(start, end, [app("x", a, b if b is None else max(a, b))])
    for row in rows:
        assert 0 < row["overlap_s"] <= length + 1e-3
        assert 0 <= row["overlap_ratio"] <= 1


def test_every_api_name_resolves_to_its_modules_object() -> None:
    """The names `cobell_cli.api` loads on first use (its `_LAZY` table) are the very objects
    the TYPE_CHECKING imports name, under the API's name where it differs from the module's,
    and importing the API loads no deadline scheduler (core/schedule; a fresh interpreter)."""
    from tests.test_cached_path_imports import run_python

    code = (
        "import ast, importlib, inspect, sys\n"
        "import cobell_cli.api as api\n"
        "early = sorted(m for m in sys.modules if m.startswith('cobell_cli.core.schedule'))\n"
        "tree = ast.parse(inspect.getsource(api))\n"
        "guard = next(n for n in tree.body if isinstance(n, ast.If))\n"
        "pairs = {(a.asname or a.name): (i.module, a.name) for i in guard.body"
        " for a in i.names}\n"
        "assert set(pairs) == set(api._LAZY), set(pairs) ^ set(api._LAZY)\n"
        "for name, (module, attribute) in pairs.items():\n"
        "    assert getattr(api, name) is getattr(importlib.import_module(module), attribute)\n"
        "missing = [n for n in api.__all__ if not hasattr(api, n)]\n"
        "print(early, missing)\n"
    )
    assert run_python(code).split() == ["[]", "[]"]
