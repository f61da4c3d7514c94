"""Event logs of the Spark runs `cobell submit` launches: turned on before, read after.

Before the run (`prepare`): a spark-submit command (YARN or standalone) gets
`--conf spark.eventLog.enabled=true --conf spark.eventLog.dir=file://<event_log_dir>`, a
directory of cobell's own (setting `event_log_dir`, default `event-logs/` next to the history;
`off` turns this off), created if missing because Spark refuses to start without it. Left
alone when:

- the user set any `spark.eventLog.*` property, on the command line or in the properties file
  spark-submit reads (`--properties-file`, else `spark-defaults.conf` in `$SPARK_CONF_DIR` or
  `$SPARK_HOME/conf`): their logs stay where their History Server looks for them, and cobell
  reads them there after the run if the directory is local;
- the driver runs on the cluster (`--deploy-mode cluster`) of another host: it could not
  write to a directory of this host (a one-line note says so). Where the user's own
  `spark.eventLog.dir` is a local path, the log is still looked for there after the run: a
  directory the cluster's nodes share with this host (a network mount) holds it. A cluster
  on this host (`cluster_here`: `cobell local-cluster start --yarn`, any RM on loopback) runs
  its drivers here, so they write into cobell's directory as a client-mode driver does.

After the run (`collect`): the log of the run's application id (single file or rolling
directory, plain or compressed, `.inprogress` if the driver died) is folded into a profile
(sources/eventlog_profile.py) and stored in `run_profiles`, its path in `runs.event_log`; an
executor killed by SIGTERM is judged by its own log first (`judge_hook_kills`). This never
changes the job's exit code nor loses the run: any failure is one warning line.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cobell_cli.run import launch
from cobell_cli.run.launch import Injection

if TYPE_CHECKING:
    from cobell_cli.core.profile import AppProfile
    from cobell_cli.sources.executor_log import Fetch

ROLLING_PREFIX = "eventlog_v2_"
HOOK_LOGS_BUDGET_S = 10.0  # reading the logs of executors killed by SIGTERM, in all


def prepare(
    injection: Injection,
    log_dir: Path | None,
    *,
    create: bool = True,
    env: Mapping[str, str] | None = None,
    cluster_here: bool = False,
) -> Injection:
    """The injected command with event logging into `log_dir` (module doc); None: off.
    `create=False` (a dry run) leaves the file system alone; `cluster_here`: the cluster's
    drivers run on this host (module doc)."""
    if log_dir is None or injection.launcher not in launch.SPARK_LAUNCHERS:
        return injection
    argv = injection.argv
    state = launch.event_log_settings(argv, inherited_properties(argv, env))
    if state.user_set:
        return injection
    if not state.driver_here and not cluster_here:
        note = (
            "event log not captured: with --deploy-mode cluster the driver runs on the cluster, "
            "not here; set spark.eventLog.dir to a shared directory to keep it"
        )
        return Injection(argv, injection.launcher, [*injection.warnings, note])
    directory = log_dir.expanduser().absolute()
    try:
        if create:
            directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        note = f"event log not captured: cannot create {directory} ({exc.strerror or exc})"
        return Injection(argv, injection.launcher, [*injection.warnings, note])
    uri = directory.as_uri()
    return Injection(launch.with_event_log(argv, uri), injection.launcher, injection.warnings)


def collect(
    history_path: Path,
    run_id: int,
    argv: Sequence[str],
    launcher: str,
    app_id: str | None,
    env: Mapping[str, str] | None = None,
    fetch: Fetch | None = None,
) -> list[str]:
    """Store the profile of the run's event log; returns warnings, never raises. `fetch`
    reads an executor's log page with the cluster's auth and TLS (judge_hook_kills)."""
    if launcher not in launch.SPARK_LAUNCHERS:
        return []
    try:
        return _collect(history_path, run_id, argv, app_id, env, fetch)
    except KeyboardInterrupt:
        return ["event log not read: interrupted"]
    except Exception as exc:  # a broken log or history costs the profile, never the run
        text = str(exc).strip().splitlines()
        return [f"event log not read: {text[0] if text else type(exc).__name__}"]


def _collect(
    history_path: Path,
    run_id: int,
    argv: Sequence[str],
    app_id: str | None,
    env: Mapping[str, str] | None,
    fetch: Fetch | None,
) -> list[str]:
    from cobell_cli.sources.eventlog_profile import summarize
    from cobell_cli.store.history import History

    state = launch.event_log_settings(argv, inherited_properties(argv, env))
    if not state.enabled or not (state.driver_here or state.user_set):
        return []  # cluster mode, cobell's own directory: nothing was asked of the driver
    local = launch.local_directory(state.directory)
    if local is None:
        return [f"event log not read: spark.eventLog.dir {state.directory} is not a local path"]
    if not app_id:
        return ["event log not read: the job's output named no application id"]
    log = find_log(Path(local), app_id)
    if log is None:
        where = "" if state.driver_here else " (the driver ran on the cluster, not here)"
        return [f"event log not read: no log of {app_id} in {local}{where}"]
    profile = summarize(log)
    if profile.app_id and profile.app_id != app_id:
        return [f"event log not read: {log} is the log of {profile.app_id}, not {app_id}"]
    judge_hook_kills(profile, fetch=fetch)
    with History.open(history_path, reap_lost=False) as history:
        history.save_profile(run_id, profile, event_log=str(log))
    return []


def log_fetch(cluster: Any) -> Fetch | None:
    """How executors' log pages are read: with the cluster client's auth (simple: user.name;
    Kerberos: SPNEGO) and TLS, which a NodeManager asks as its RM does; a plain GET where the
    cluster has no client (none)."""
    return getattr(getattr(cluster, "client", None), "text", None)


def judge_hook_kills(profile: AppProfile, budget_s: float = HOOK_LOGS_BUDGET_S,
                     fetch: Fetch | None = None) -> None:
    """Each executor its own JVM killed (an OOM, or a SIGTERM from outside: the same exit 143)
    judged by its logs (core/memory/failures.hook_verdict): kept as a memory failure, with
    what the log said, or dropped. Logs not read within `budget_s` keep it."""
    from cobell_cli.core.memory.failures import hook_verdict
    from cobell_cli.sources.executor_log import read_executor_log

    memory = profile.memory
    if memory is None or not memory.oom_hook_kills:
        return
    ends = time.monotonic() + budget_s
    for reason, *urls in memory.oom_hook_kills:
        logs = []
        for url in urls:
            left = ends - time.monotonic()
            text = (read_executor_log(url, timeout_s=min(left, 5.0), fetch=fetch)
                    if left > 0.1 else None)
            logs += [text] if text is not None else []
        verdict = hook_verdict(reason, logs)
        memory.memory_failures += [verdict] if verdict is not None else []
    memory.oom_hook_kills = []


def spark_log_name(app_id: str) -> str:
    """The name Spark gives an app's log (EventLogFileWriter.nameForAppAndAttempt, no attempt)."""
    out = []
    for c in app_id:
        out.append("-" if c in " :/" else "_" if c in ".${}'\"" else c)
    return "".join(out).lower()


def find_log(directory: Path, app_id: str) -> Path | None:
    """The app's log in a spark.eventLog.dir: `<app>[_<attempt>][.codec][.inprogress]` or a
    rolling `eventlog_v2_<app>[_<attempt>]` directory; a finished one before an `.inprogress`
    one, then the latest attempt."""
    base = spark_log_name(app_id)
    found: list[tuple[bool, str, Path]] = []
    try:
        entries = list(directory.iterdir())
    except OSError:
        return None
    for path in entries:
        name = path.name
        rolling = name.startswith(ROLLING_PREFIX)
        stem = name[len(ROLLING_PREFIX) :] if rolling else name.split(".", 1)[0]
        if stem != base and not stem.startswith(base + "_"):
            continue
        if rolling != path.is_dir():
            continue
        found.append((_in_progress(path, rolling), stem, path))
    if not found:
        return None
    return min(found, key=lambda f: (f[0], _negated(f[1])))[2]


def _negated(stem: str) -> tuple[int, str]:
    """Sort key for the latest attempt first (`_2` before `_1`, an attempt before none)."""
    attempt = stem.rpartition("_")[2] if "_" in stem else ""
    return (-int(attempt) if attempt.isdigit() else 0, stem)


def _in_progress(path: Path, rolling: bool) -> bool:
    if not rolling:
        return path.name.endswith(".inprogress")
    return any(p.name.endswith(".inprogress") for p in path.glob("appstatus_*"))


# -- the properties file spark-submit reads -----------------------------------------------------


def inherited_properties(
    argv: Sequence[str],
    env: Mapping[str, str] | None = None,
    prefixes: tuple[str, ...] = (launch.EVENT_LOG_PREFIX,),
) -> dict[str, str]:
    """The spark.eventLog.* settings (or those under other `prefixes`) of the properties file
    spark-submit will read: the `--properties-file`, else spark-defaults.conf in
    $SPARK_CONF_DIR, else $SPARK_HOME/conf (both also from an `env NAME=value` prefix of the
    command), else next to spark-submit."""
    path = _properties_path(argv, env)
    if path is None:
        return {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    return {k: v for k, v in parse_properties(text).items() if k.startswith(prefixes)}


def _properties_path(argv: Sequence[str], env: Mapping[str, str] | None) -> Path | None:
    given = launch.properties_file(argv)
    if given:
        return Path(given).expanduser()
    env = {**(os.environ if env is None else env), **_env_prefix(argv)}
    if env.get("SPARK_CONF_DIR"):
        return Path(env["SPARK_CONF_DIR"]) / "spark-defaults.conf"
    if env.get("SPARK_HOME"):
        return Path(env["SPARK_HOME"]) / "conf" / "spark-defaults.conf"
    exe = _executable(argv)
    if exe is None:
        return None
    return exe.resolve().parent.parent / "conf" / "spark-defaults.conf"


def _env_prefix(argv: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    if argv and os.path.basename(argv[0]) == "env":
        for tok in argv[1:]:
            name, eq, value = tok.partition("=")
            if not eq:
                if tok in {"-i", "-"}:
                    continue
                break
            out[name] = value
    return out


def _executable(argv: Sequence[str]) -> Path | None:
    import shutil

    i = launch._launcher_index(argv)
    if i >= len(argv):
        return None
    found = shutil.which(argv[i])
    return Path(found) if found else None


def parse_properties(text: str) -> dict[str, str]:
    """A Java .properties file's `key=value`, `key: value` or `key value` lines (no escapes
    beyond what spark-defaults.conf uses); `#` and `!` start comments."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        cut = min((i for i, c in enumerate(line) if c in "=: \t"), default=len(line))
        key, rest = line[:cut], line[cut:].lstrip()
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip()
        out[key] = rest
    return out
