"""Synthetic job histories as the CSV files `cobell history import` and the benchmarks read."""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def succeeded_run(run_id: int, job: str, scale_out: int, start: float, runtime_s: float,
                  colocations: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One succeeded run's row, its co-runners' overlaps as the history keeps them (JSON)."""
    return {"id": run_id, "job": job, "scale_out": scale_out, "status": "succeeded",
            "submitted_at": start, "started_at": start, "finished_at": start + runtime_s,
            "runtime_s": runtime_s, "colocations": json.dumps(list(colocations))}


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
