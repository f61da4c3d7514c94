"""The cluster now, from Python: which RM/master cobell asks, and the apps running on it.

`cobell cluster apps|check` and the planning commands are a thin layer over these functions, so
a script asks the same cluster the same way (the same settings, budgets, job mapping and
errors: a `ConfigError` for a setting that names no cluster, a `ClusterError` when none
answers). Creating the adapter does no network I/O; its first question does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cobell_cli.config import Settings
    from cobell_cli.core.running import RunningApp


def connect_cluster(settings: Settings, known_jobs: Iterable[str] = (), **options: Any) -> Any:
    """The cluster `settings` point at (YARN RM, Spark standalone master, or none; `auto`
    picks), as the adapter planning asks. An app named like one of `known_jobs` maps to that
    job; `options` are the adapter's test seams (env, backoff_s, sleep, ...)."""
    from cobell_cli.cluster import connect

    return connect(settings, known_jobs, **{"local": local_cluster, **options})


def local_cluster(kind: str) -> str | None:
    """Where this machine's `cobell local-cluster start` cluster of `kind` answers while it
    runs: the yarn-site.xml of the local YARN (`yarn`), the standalone master's web UI
    (`standalone`); None when none runs. The fallback when nothing is configured."""
    from cobell_cli.config import data_dir
    from cobell_cli.run import local_found

    if kind == "yarn":
        site = local_found.running_yarn_site(data_dir())
        return None if site is None else str(site)
    return local_found.running_master_webui(data_dir())


def running_apps(cluster: Any) -> list[RunningApp]:
    """The apps running on `cluster` now, oldest first (then by app id): what `cobell cluster
    apps` lists. A ClusterError when the cluster does not answer within its budget."""
    return sorted(cluster.running_apps(), key=lambda a: (a.started_at or 0.0, a.app_id))


def check_cluster(cluster: Any) -> dict[str, Any]:
    """Ask `cluster` once: which RM/master answered, its HA state, auth mode and latency, and
    `cluster`: how cobell describes it (what `cobell cluster check --json` prints). A
    ClusterError when no configured RM/master answers."""
    return {**cluster.check(), "cluster": cluster.describe()}
