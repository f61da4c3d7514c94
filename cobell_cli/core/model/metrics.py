"""Error measures in the units users read: relative errors in percent, absolute in seconds."""

from __future__ import annotations

import numpy as np


def relative_errors(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    y_true = np.asarray(y_true, dtype=float)
    return np.abs(np.asarray(y_pred, dtype=float) - y_true) / y_true


def mape(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Mean absolute percentage error, in percent."""
    return float(100.0 * np.mean(relative_errors(y_true, y_pred)))


def mae(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    return float(np.mean(np.abs(np.asarray(y_pred, float) - np.asarray(y_true, float))))


def rmse(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    diff = np.asarray(y_pred, float) - np.asarray(y_true, float)
    return float(np.sqrt(np.mean(diff * diff)))


def all_metrics(y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, float]:
    return {"mape": mape(y_true, y_pred), "mae_s": mae(y_true, y_pred),
            "rmse_s": rmse(y_true, y_pred)}
