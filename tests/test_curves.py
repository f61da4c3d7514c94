"""Curve.scaled and Curve.anchored for every kind of scale-out curve."""

from __future__ import annotations

import numpy as np
import pytest

from cobell_cli.core.model.curves import Curve, log_levels, whatif_curve
from cobell_cli.core.model.parametric import AMDAHL, fit_theta

X = np.array([2.0, 4.0, 6.0, 8.0, 12.0, 16.0])
Y = np.array([100.0, 58.0, 44.0, 37.0, 31.0, 29.0])
W = np.ones_like(X)


def curves() -> dict[str, Curve]:
    t, v, ws = log_levels(X, Y, W)
    return {
        "parametric": Curve("parametric", fit_theta(X, Y, AMDAHL), AMDAHL),
        "power": Curve("power", np.array([np.log(180.0), -0.7])),
        "whatif": whatif_curve(X, Y, W, lambda n: 200.0 / n + 10.0),
        "llr": Curve("llr", bandwidth=0.4, t=t, v=v, w=ws),
        "powerlaw": Curve("powerlaw", bandwidth=0.4, t=t, v=v, w=ws),
    }


@pytest.mark.parametrize("kind", list(curves()))
def test_scaled_multiplies_every_prediction(kind: str) -> None:
    curve = curves()[kind]
    query = np.array([1.0, 3.0, 16.0, 24.0, 40.0])
    np.testing.assert_allclose(curve.scaled(1.3).predict(query), 1.3 * curve.predict(query),
                               rtol=1e-9)
    assert curve.scaled(1.3).describe()["kind"] == curve.describe()["kind"]


@pytest.mark.parametrize("kind", list(curves()))
def test_anchored_passes_through_the_point_and_keeps_the_shape(kind: str) -> None:
    curve = curves()[kind]
    moved = curve.anchored(16.0, 35.0)
    assert moved.predict(np.array([16.0]))[0] == pytest.approx(35.0, rel=1e-9)
    ratio = moved.predict(np.array([24.0, 40.0])) / curve.predict(np.array([24.0, 40.0]))
    assert ratio == pytest.approx(np.full(2, 35.0 / curve.predict(np.array([16.0]))[0]))
