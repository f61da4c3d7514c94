"""core/sorted_values.py: np.unique's values and np.median bit for bit, without numpy.ma."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from cobell_cli.core.sorted_values import distinct, median, quantile

# Every float64, NaN, ±inf and -0.0 included, and few distinct values (repeats, as scale-outs).
any_float = st.floats(width=64) | st.sampled_from([0.0, -0.0, 1.0, 2.0, 48.0, np.nan])
shapes = st.integers(0, 30) | st.tuples(st.integers(0, 6), st.integers(0, 6))


@given(arrays(np.float64, shapes, elements=any_float))
def test_distinct_is_np_unique(values: np.ndarray) -> None:
    got, expected = distinct(values), np.unique(values)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert got.tobytes() == expected.tobytes()  # -0.0 against 0.0, NaN's bits


@given(arrays(np.int64, st.integers(0, 30), elements=st.integers(-5, 5)))
def test_distinct_of_integers_is_np_unique(values: np.ndarray) -> None:
    got, expected = distinct(values), np.unique(values)
    assert got.dtype == expected.dtype and got.tolist() == expected.tolist()


@given(arrays(np.float64, shapes, elements=any_float))
def test_median_is_np_median(values: np.ndarray) -> None:
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        got = median(values)
    with warnings.catch_warnings(record=True) as numpys:
        warnings.simplefilter("always")
        expected = np.median(values)
    assert type(got) is type(expected)
    if np.isnan(expected):  # which NaN (its payload bits) numpy returns is not the point
        assert np.isnan(got)
    else:
        assert np.asarray(got).tobytes() == np.asarray(expected).tobytes()  # -0.0 too
    assert [w.category for w in ours] == [w.category for w in numpys]


@given(arrays(np.float64, st.integers(1, 30), elements=any_float),
       st.lists(st.floats(0.0, 1.0) | st.sampled_from([0.0, 0.05, 0.5, 0.95, 1.0]),
                min_size=1, max_size=4))
def test_quantile_is_np_quantile(values: np.ndarray, q: list[float]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # inf - inf in both
        got, expected = quantile(values, q), np.quantile(values, q)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    nan = np.isnan(expected)
    assert np.array_equal(np.isnan(got), nan)
    # bit for bit, but a zero's sign: numpy's interpolation and ours may round a zero
    # between -0.0 and 0.0 to either sign (found by hypothesis: [0.0, -0.0, ...] at 0.0625)
    zero = ~nan & (expected == 0.0)
    assert np.array_equal(got[zero], expected[zero])
    assert got[~nan & ~zero].tobytes() == expected[~nan & ~zero].tobytes()


def test_known_answers() -> None:
    assert distinct([48, 4, 8, 4]).tolist() == [4, 8, 48]
    assert median([3.0, 1.0, 2.0]) == 2.0 and median([4.0, 1.0, 3.0, 2.0]) == 2.5
    assert np.isnan(median([1.0, np.nan, 0.0]))
    assert quantile([4.0, 1.0, 3.0, 2.0], [0.0, 0.5, 1.0]).tolist() == [1.0, 2.5, 4.0]


def test_neither_imports_numpy_ma() -> None:
    """What the module is for: numpy's own functions load numpy.ma, these do not."""
    code = ("import json, sys, numpy as np\n"
            "from cobell_cli.core.sorted_values import distinct, median, quantile\n"
            "x = np.array([3.0, 1.0, 3.0])\n"
            "distinct(x); median(x); quantile(x, [0.05, 0.5]); ours = 'numpy.ma' in sys.modules\n"
            "np.unique(x); theirs = 'numpy.ma' in sys.modules\n"
            "print(json.dumps([ours, theirs]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert json.loads(out.stdout) == [False, True]
