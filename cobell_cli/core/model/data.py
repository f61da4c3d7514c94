"""Turn run records (mappings or objects) into arrays the models fit; validation lives here."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

# Runs in these states carry a runtime that says nothing about the job's speed.
USABLE_STATUSES = frozenset({"succeeded", ""})
# Keys that name no job: the co-runner is unknown, so it joins the pooled class.
UNKNOWN_CO_RUNNER_KEYS = frozenset({"", "?"})
POOLED = "*"  # the pooled "any other job" co-runner class


@dataclass(frozen=True)
class RunData:
    """Usable runs as arrays; `overlap` has one column per co-runner job in `co_runners`."""

    scale_out: np.ndarray  # float, > 0
    runtime_s: np.ndarray  # float, > 0
    overlap: np.ndarray  # shape (n, k), >= 0
    co_runners: tuple[str, ...]
    co_scale_out: np.ndarray | None = None  # (n, k): the co-runner's scale-out, 0 = unknown

    @property
    def n(self) -> int:
        return int(self.scale_out.size)

    def subset(self, mask: np.ndarray) -> RunData:
        sizes = None if self.co_scale_out is None else self.co_scale_out[mask]
        return RunData(self.scale_out[mask], self.runtime_s[mask], self.overlap[mask],
                       self.co_runners, sizes)


def _get(run: Any, key: str, default: Any = None) -> Any:
    if isinstance(run, Mapping):
        return run.get(key, default)
    return getattr(run, key, default)


def co_runner_key(job: Any) -> str:
    """Normalise a co-runner job name; None, "" and "?" mean unknown and map to the pool."""
    if job is None:
        return POOLED
    name = str(job).strip()
    return POOLED if name in UNKNOWN_CO_RUNNER_KEYS else name


def prepare_runs(runs: Iterable[Any]) -> RunData:
    """Keep succeeded runs with a positive finite scale-out and runtime; collect overlaps.

    Raises ValueError when no usable run remains, naming why, because a model of nothing
    would silently predict garbage.
    """
    if isinstance(runs, RunData):
        return runs
    xs: list[float] = []
    ys: list[float] = []
    ovs: list[dict[str, float]] = []
    sizes: list[dict[str, float]] = []
    seen = skipped_status = skipped_value = 0
    for run in runs:
        seen += 1
        status = _get(run, "status")
        if status is not None and str(status).strip().lower() not in USABLE_STATUSES:
            skipped_status += 1
            continue
        try:
            x = float(_get(run, "scale_out"))
            y = float(_get(run, "runtime_s"))
        except (TypeError, ValueError):
            skipped_value += 1
            continue
        if not (math.isfinite(x) and math.isfinite(y) and x > 0 and y > 0):
            skipped_value += 1
            continue
        ov: dict[str, float] = {}
        for job, ratio in (_get(run, "overlaps") or {}).items():
            try:
                r = float(ratio)
            except (TypeError, ValueError):
                continue
            if math.isfinite(r) and r > 0:
                key = co_runner_key(job)
                ov[key] = ov.get(key, 0.0) + r
        xs.append(x)
        ys.append(y)
        ovs.append(ov)
        sizes.append(_co_scale_outs(_get(run, "co_runner_scale_outs"), ov))
    if not xs:
        raise ValueError(
            f"no usable runs to fit a runtime model: {seen} given, {skipped_status} not "
            f"succeeded, {skipped_value} without a positive scale_out and runtime_s"
        )
    names = sorted({k for ov in ovs for k in ov}, key=lambda k: (k == POOLED, k))
    overlap = np.zeros((len(xs), len(names)))
    co_scale_out = np.zeros((len(xs), len(names)))
    index = {k: i for i, k in enumerate(names)}
    for row, ov in enumerate(ovs):
        for k, r in ov.items():
            overlap[row, index[k]] = r
        for k, v in sizes[row].items():
            co_scale_out[row, index[k]] = v
    known = co_scale_out if np.any(co_scale_out > 0) else None
    return RunData(np.asarray(xs), np.asarray(ys), overlap, tuple(names), known)


def _co_scale_outs(given: Any, overlaps: Mapping[str, float]) -> dict[str, float]:
    """{co-runner key: its scale-out} for the co-runners of a run that have one (optional
    `co_runner_scale_outs` of a run record: the overlap-weighted mean over its apps)."""
    out: dict[str, float] = {}
    for job, value in (given or {}).items() if isinstance(given, Mapping) else ():
        key = co_runner_key(job)
        try:
            v = float(value)
        except (TypeError, ValueError):
            continue
        if key in overlaps and math.isfinite(v) and v > 0:
            out[key] = v
    return out
