"""How long a finished run really overlapped each co-runner: the colocation rows the history
keeps. Pure (times are passed in): `cobell submit` records with it after a run, the importers
for the runs they import, the benchmarks for their simulated runs. Light on purpose (no
numpy, nothing of overlap/): `cobell_cli.api` re-exports it, and importing the API stays cheap."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cobell_cli.core.running import RunningApp


def measured_overlaps(
    started_at: float, finished_at: float, apps: Sequence[RunningApp]
) -> list[dict[str, Any]]:
    """Co-runners that really overlapped [started_at, finished_at], as colocation rows.

    An app still running at the end counts until `finished_at`; overlap_ratio is relative to our
    runtime, clamped to [0, 1] against clock skew between cobell and the cluster.
    """
    runtime_s = max(finished_at - started_at, 0.0)
    rows: dict[str, dict[str, Any]] = {}
    for app in apps:
        if app.started_at is None:
            continue
        end = app.finished_at if app.finished_at is not None else finished_at
        overlap_s = round(min(end, finished_at) - max(app.started_at, started_at), 3)
        if overlap_s <= 0 or runtime_s <= 0:  # under a millisecond is clock noise, not overlap
            continue
        rows[app.app_id] = {
            "co_runner_app_id": app.app_id,
            "co_runner_job": app.job,
            "co_runner_scale_out": app.scale_out,
            "co_runner_started_at": app.started_at,
            "co_runner_finished_at": app.finished_at,
            "overlap_s": overlap_s,
            "overlap_ratio": round(min(max(overlap_s / runtime_s, 0.0), 1.0), 6),
        }
    return list(rows.values())
