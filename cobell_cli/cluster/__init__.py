"""Cluster adapters: what is running right now, as plain RunningApp records.

`connect(settings, known_jobs)` picks the backend (`cluster` setting):

- `yarn`: the RM URL(s) from `rm_url` (flag > COBELL_RM_URL > config file), else from
  yarn-site.xml (`$YARN_CONF_DIR`, `$HADOOP_CONF_DIR`, `/etc/hadoop/conf`), else the local
  YARN `cobell local-cluster start --yarn` runs;
- `standalone`: the master web UI at `standalone_url`, else the local master `cobell
  local-cluster start` runs;
- `none`: no cluster information (said loudly by `describe()`);
- `auto`: yarn if an RM URL is configured or a yarn-site.xml is found, else standalone if a
  master URL is set, else a running local YARN, else a running local standalone master, else
  none.

The local clusters are asked for through `local(kind)` (api/clusters.py), and only when
nothing is configured: what a person configured always wins. `check()` says where the
address came from (`source`).

Creating the adapter does no network I/O; the first request does. Each query an adapter
answers (running apps, finished apps, check) ends within `cluster_budget_s` however the
cluster fails (cluster/http.py); `adapter.query()` shares one budget across several calls.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cobell_cli.cluster.base import Cluster
from cobell_cli.cluster.deadline import UNBOUNDED, Deadline
from cobell_cli.cluster.jobs import job_app_name, job_tag, map_job
from cobell_cli.errors import ConfigError

if TYPE_CHECKING:
    from cobell_cli.config import Settings

__all__ = [
    "Cluster",
    "Deadline",
    "connect",
    "job_app_name",
    "job_tag",
    "map_job",
    "query",
]

DEFAULT_BACKOFF_S = 0.5

YARN_FIX = (
    "check --rm-url / COBELL_RM_URL or yarn-site.xml, or run with --cluster none "
    "(predictions then ignore co-runners)"
)
# `history import --from-yarn` takes no --cluster: only the RM's address can be fixed there.
YARN_RECORD_FIX = "check --rm-url / COBELL_RM_URL or yarn-site.xml"
STANDALONE_FIX = (
    "check --standalone-url / COBELL_STANDALONE_URL (the master web UI, e.g. "
    "http://master:8080), or run with --cluster none"
)


def query(cluster: Any) -> AbstractContextManager[Deadline]:
    """One cluster query around several calls of any adapter: they share one budget, and the
    Deadline it yields says what is left of it (unbounded for an adapter without budgets)."""
    opener = getattr(cluster, "query", None)
    return opener() if opener is not None else nullcontext(UNBOUNDED)


class _LocalClusters:
    """`local(kind)`, asked at most once per kind (it reads pid files and /proc)."""

    def __init__(self, local: Callable[[str], str | None] | None) -> None:
        self.local = local
        self.answers: dict[str, str | None] = {}

    def __call__(self, kind: str) -> str | None:
        if self.local is None:
            return None
        if kind not in self.answers:
            self.answers[kind] = self.local(kind)
        return self.answers[kind]


def _source(settings: Settings, name: str) -> str:
    """Where a setting came from, as `cluster check` says it: `--rm-url`, `env COBELL_RM_URL`,
    `file PATH`."""
    from cobell_cli.config import BY_NAME

    origin = settings.sources.get(name, "settings")
    return BY_NAME[name].option if origin == "flag" else origin


def connect(
    settings: Settings,
    known_jobs: Iterable[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    yarn_conf_default: Path | None = None,
    backoff_s: float | None = None,
    sleep: Callable[[float], None] | None = None,
    yarn_fix: str = YARN_FIX,
    local: Callable[[str], str | None] | None = None,
) -> Any:
    """The Cluster the settings point at; see the module docstring for `auto` and `local`."""
    from cobell_cli.cluster import yarnconf
    from cobell_cli.cluster.jobs import compile_patterns
    from cobell_cli.cluster.none import NoCluster

    env = os.environ if env is None else env
    conf_default = yarnconf.DEFAULT_CONF_DIR if yarn_conf_default is None else yarn_conf_default
    kind = settings.cluster
    patterns = compile_patterns(settings.job_patterns or {})
    known = list(known_jobs)

    rm_urls: list[str] = list(settings.rm_url or [])
    source = _source(settings, "rm_url")
    if kind in {"auto", "yarn"} and not rm_urls:
        rm_urls, site = yarnconf.discover_rm_urls(env, conf_default)
        source = f"yarn-site.xml {site}" if site else source
    masters, master_source = settings.standalone_url, _source(settings, "standalone_url")
    found = _LocalClusters(local)
    if kind == "auto":
        kind = ("yarn" if rm_urls else "standalone" if masters else "yarn" if found("yarn")
                else "standalone" if found("standalone") else "none")
        if kind == "none":
            return NoCluster("cluster = auto found no RM URL, yarn-site.xml, standalone_url or "
                             "running local cluster")
    if kind == "yarn" and not rm_urls and (site := found("yarn")):
        rm_urls = yarnconf.rm_web_urls(yarnconf.read_properties(Path(site)), env)
        source = f"the local YARN of `cobell local-cluster start --yarn` ({site})"
    if kind == "standalone" and not masters and (masters := found("standalone")):
        master_source = "the local master of `cobell local-cluster start`"
    if kind == "none":
        return NoCluster()

    def client(what: str, fix: str, auth: str) -> Any:
        from cobell_cli.cluster.http import JsonClient

        extra: dict[str, Any] = {} if sleep is None else {"sleep": sleep}
        return JsonClient(
            what=what,
            auth=auth,
            user=settings.rm_user,
            ca_bundle=settings.ca_bundle,
            timeout_s=settings.timeout_s,
            retries=settings.retries,
            budget_s=settings.cluster_budget_s,
            backoff_s=DEFAULT_BACKOFF_S if backoff_s is None else backoff_s,
            fix=fix,
            **extra,
        )

    if kind == "yarn":
        from cobell_cli.cluster.yarn import YarnCluster

        if not rm_urls:
            raise ConfigError(
                "cluster = yarn but no ResourceManager URL is configured, no yarn-site.xml "
                "was found in $YARN_CONF_DIR, $HADOOP_CONF_DIR or /etc/hadoop/conf, and no "
                "local YARN runs",
                hint="pass --rm-url http://rm:8088, set COBELL_RM_URL, or start one with "
                "`cobell local-cluster start --yarn`",
            )
        return YarnCluster(
            rm_urls,
            client("YARN RM", yarn_fix, settings.auth),
            known_jobs=known,
            patterns=patterns,
            source=source or "settings",
        )
    if kind == "standalone":
        from cobell_cli.cluster.standalone import StandaloneCluster

        if not masters:
            raise ConfigError(
                "cluster = standalone but no master URL is configured and no local cluster runs",
                hint="pass --standalone-url http://master:8080, set COBELL_STANDALONE_URL, or "
                "start one with `cobell local-cluster start`",
            )
        urls = [u for u in str(masters).split(",") if u.strip()]
        # The master UI knows no user.name; Kerberos applies when the UI has a SPNEGO filter.
        auth = "none" if settings.auth == "simple" else settings.auth
        return StandaloneCluster(
            urls, client("Spark master", STANDALONE_FIX, auth), known_jobs=known,
            patterns=patterns, source=master_source,
        )
    raise ConfigError(f"unknown cluster kind {kind!r}", hint="use auto, yarn, standalone or none")
