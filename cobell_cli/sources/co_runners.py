"""After a `cobell submit`: store the co-runners that finished during the run as imported runs.

Co-runners nobody submits through cobell would otherwise stay unknown for ever; each submit
that saw one finish adds a run of it (idempotent by application id, like every import), so
its model grows and the next plan can predict its remaining time.

- YARN: the RM's finished apps since our start, read exactly as `history import --from-yarn`
  reads them (scale-out from vcore-seconds, source `yarn`).
- Spark standalone: the master's completed apps (scale-out = cores held / cores per
  executor; a completed app ends as FINISHED, KILLED or FAILED), source `import` with
  backend `standalone`: the history's sources have no `standalone` value (schema 3).
- Other backends record nothing. A cluster that does not answer costs this step only: the
  caller gets a warning, never an error.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cobell_cli.core.running import RunningApp
from cobell_cli.errors import ClusterError, HistoryError
from cobell_cli.sources.record import ImportedApp, ImportSummary, store_imported

STANDALONE_STATUS = {"FINISHED": "succeeded", "FAILED": "failed", "KILLED": "killed"}


def standalone_app(app: RunningApp) -> ImportedApp | None:
    """A completed standalone app as an ImportedApp; None without the times or a job."""
    status = STANDALONE_STATUS.get(app.state)
    if app.started_at is None or app.finished_at is None or status is None or not app.job:
        return None
    if status == "succeeded" and not app.scale_out:
        return None
    return ImportedApp(
        app_id=app.app_id,
        name=app.name,
        job=app.job,
        status=status,
        started_at=app.started_at,
        finished_at=app.finished_at,
        source="import",
        scale_out=app.scale_out or None,
        mean_scale_out=None,
        scale_out_how="cores held (standalone master)",
        user=app.user,
        backend="standalone",
    )


def learn_co_runners(
    history_path: Path, cluster: Any, since: float, until: float, own: Iterable[str]
) -> list[str]:
    """Import the co-runners that finished in [since, until]; returns warnings (module doc)."""
    from cobell_cli.store.history import History

    skip = set(own)
    summary = ImportSummary(source="co-runners", where=f"co-runners seen by {cluster.name}")
    try:
        apps = _finished(cluster, since, until, summary)
        apps = [a for a in apps if a.app_id not in skip]
        if not apps:
            return []
        with History.open(history_path, reap_lost=False) as history:
            store_imported(history, apps, summary)
    except (ClusterError, HistoryError) as exc:
        return [f"finished co-runners not recorded: {exc.line()}"]
    return []


def _finished(
    cluster: Any, since: float, until: float, summary: ImportSummary
) -> list[ImportedApp]:
    name = getattr(cluster, "name", "")
    if name == "yarn":
        from cobell_cli.sources.yarn_apps import read_finished

        return read_finished(
            cluster,
            since,
            until,
            summary,
            patterns=cluster.patterns,
            known_jobs=tuple(cluster.known_jobs),
        )
    if name == "standalone":
        found = (standalone_app(a) for a in cluster.apps_finished_since(since))
        return [a for a in found if a is not None and a.finished_at <= until]
    return []
