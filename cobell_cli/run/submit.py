"""Run a planned job and record what happened: the edge between plan, child process and history.

Recording rules (the history must stay consistent whatever happens to this process):
- the run is inserted as `running` (with host and our pid) before the child starts, and every
  later update is its own short transaction: no lock is held while the job runs;
- the app id is written as soon as the child prints it, so a killed cobell still leaves a
  traceable row, which the next `History.open` on this host marks `lost`;
- co-runners are read from the cluster after the run and stored with the measured overlap;
  a cluster that does not answer then costs the colocations, never the run.
"""

from __future__ import annotations

import getpass
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from cobell_cli.api import Prediction, measured_overlaps
from cobell_cli.errors import ClusterError
from cobell_cli.store.history import History, this_host

BACKENDS = {
    "spark-yarn": "yarn",
    "spark-standalone": "standalone",
    "flink": "flink",
    "placeholder": "generic",
}


@dataclass
class Outcome:
    run_id: int
    job: str
    app_id: str | None
    scale_out: int
    status: str
    exit_code: int
    predicted_s: float | None
    runtime_s: float
    target_s: float
    meet_probability: float | None = None  # estimated at planning; None: unknown
    confidence: float | None = None  # the level planned at; None: the point decision
    co_runners: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def met_target(self) -> bool:
        return self.status == "succeeded" and self.runtime_s <= self.target_s

    def to_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "run_id": self.run_id,
            "app_id": self.app_id,
            "scale_out": self.scale_out,
            "status": self.status,
            "predicted_s": self.predicted_s,
            "runtime_s": round(self.runtime_s, 3),
            "target_s": self.target_s,
            "met_target": self.met_target,
            "meet_probability": self.meet_probability,
            "confidence": self.confidence,
            "exit_code": self.exit_code,
            "co_runners": len(self.co_runners),
            "warnings": self.warnings,
        }


def status_of(exit_code: int, interrupted: bool) -> str:
    if exit_code == 0:
        return "succeeded"
    if interrupted or exit_code in (130, 143):  # SIGINT / SIGTERM, as a shell reports them
        return "killed"
    return "failed"


def execute(
    *,
    history_path: Path,
    cluster: Any,
    prediction: Prediction,
    argv: Sequence[str],
    stored_command: Sequence[str],
    launcher: str,
    input_bytes: int | None,
    submitted_at: float,
    log_file: Path | None = None,
    stdout: BinaryIO | None = None,
    stderr: BinaryIO | None = None,
    on_tick: Callable[[float], None] | None = None,
) -> Outcome:
    """Record, run, record again. Returns what happened; the child's exit code is in it."""
    from cobell_cli.run import child, event_capture

    plan = prediction.plan
    with History.open(history_path, reap_lost=False) as history:
        run_id = history.start_run(
            job=plan.job,
            input_bytes=input_bytes,
            scale_out=plan.scale_out,
            backend=BACKENDS.get(launcher, launcher),
            user=_user(),
            host=this_host(),
            pid=os.getpid(),
            submitted_at=submitted_at,
            target_s=plan.target_s,
            predicted_s=plan.predicted_s,
            meet_probability=plan.meet_probability,
            confidence=plan.confidence,
            model=plan.phase,
            reason=plan.reason,
            command=json.dumps(list(stored_command)),
        )

    def update(**fields: Any) -> None:
        # Called from the child's reader threads too: a connection of its own each time.
        with History.open(history_path, reap_lost=False) as h:
            h.finish_run(run_id, **fields)

    try:
        result = child.run(
            argv,
            log_file=log_file,
            on_start=lambda _pid, t: update(started_at=t),
            on_app_id=lambda app_id: update(app_id=app_id),
            on_tick=on_tick,
            stdout=stdout,
            stderr=stderr,
        )
    except BaseException as exc:
        code = getattr(exc, "exit_code", 1)
        update(status="failed", exit_code=code, reason=f"{plan.reason} | not started: {exc}")
        raise

    status = status_of(result.exit_code, result.interrupted)
    update(
        status=status,
        started_at=result.started_at,
        finished_at=result.finished_at,
        runtime_s=result.runtime_s,
        exit_code=result.exit_code,
    )
    outcome = Outcome(
        run_id=run_id,
        job=plan.job,
        app_id=result.app_id,
        scale_out=plan.scale_out,
        status=status,
        exit_code=result.exit_code,
        predicted_s=plan.predicted_s,
        runtime_s=result.runtime_s,
        target_s=plan.target_s,
        meet_probability=plan.meet_probability,
        confidence=plan.confidence,
    )
    outcome.warnings += event_capture.collect(history_path, run_id, argv, launcher, result.app_id)
    try:
        apps = [
            *cluster.running_apps(),
            *cluster.apps_finished_since(result.started_at),
        ]
    except ClusterError as exc:
        outcome.warnings.append(f"co-runners not recorded: {exc.line()}")
        return outcome
    own = {result.app_id} if result.app_id else set()
    rows = measured_overlaps(
        result.started_at, result.finished_at, [a for a in apps if a.app_id not in own]
    )
    if rows:
        with History.open(history_path, reap_lost=False) as history:
            history.add_colocations(run_id, rows)
    outcome.co_runners = rows
    outcome.warnings += _learn_co_runners(history_path, cluster, result, own)
    return outcome


def _learn_co_runners(history_path: Path, cluster: Any, result: Any, own: set[str]) -> list[str]:
    """Co-runners that finished during the run become imported runs (issue 14, item 2)."""
    from cobell_cli.sources.co_runners import learn_co_runners

    return learn_co_runners(history_path, cluster, result.started_at, result.finished_at, own)


def _user() -> str | None:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry in some containers
        return os.environ.get("USER")


def input_size(path: str) -> int:
    """Bytes under a local path or an hdfs:// URL (needs the `hdfs` CLI)."""
    import shutil
    import subprocess

    from cobell_cli.errors import UsageError

    if path.startswith(("hdfs://", "viewfs://", "s3a://", "abfs://", "gs://")):
        hdfs = shutil.which("hdfs")
        if hdfs is None:
            raise UsageError(
                f"cannot measure {path}: the `hdfs` command is not on PATH",
                hint="give --input-size BYTES instead",
            )
        proc = subprocess.run(
            [hdfs, "dfs", "-du", "-s", path], capture_output=True, text=True, timeout=120
        )
        if proc.returncode != 0 or not proc.stdout.split():
            raise UsageError(
                f"`hdfs dfs -du -s {path}` failed: {proc.stderr.strip().splitlines()[-1:] or ''}",
                hint="give --input-size BYTES instead",
            )
        return int(proc.stdout.split()[0])
    local = Path(path.removeprefix("file://")).expanduser()
    if not local.exists():
        raise UsageError(f"--input {path}: no such file or directory")
    if local.is_file():
        return local.stat().st_size
    return sum(p.stat().st_size for p in local.rglob("*") if p.is_file())
