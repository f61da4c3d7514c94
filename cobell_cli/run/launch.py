"""The user's command with the planned scale-out injected; redaction; app-id capture. Pure.

API for `cobell submit`::

    inj = inject(argv, scale_out=6, job="nightly-sgd")   # raises UsageError (exit 2)
    inj.argv       # what to run (`cobell_cli.run.child.run(inj.argv, ...)`)
    inj.launcher   # "spark-yarn" | "spark-standalone" | "flink" | "placeholder"
    inj.warnings   # user flags cobell replaced, to print as warnings
    redact(inj.argv)          # what to store in the history or print (--dry-run)
    parse_app_id(line)        # YARN application_<ts>_<n> or standalone app-<ts>-<n>

Launchers are recognised from argv[0] (after an optional `env NAME=value ...` prefix):

- `spark-submit` with `--master yarn` (also `--master=yarn`, `--conf spark.master=yarn`,
  legacy `yarn-client`/`yarn-cluster`): `--num-executors X`, dynamic allocation off unless the
  user set `spark.dynamicAllocation.enabled` either way, and `spark.yarn.tags` gets `cobell` and
  `cobell-job:<job>` merged into the user's tags. YARN lower-cases tags, so the cluster adapter
  compares them case-insensitively.
- `spark-submit --master spark://...`: X executors of `c` cores each, as
  `--executor-cores c --total-executor-cores X*c`; `c` is `cores_per_executor`, else the user's
  `--executor-cores`/`spark.executor.cores`, else 1 (the standalone default would be "all cores
  of a worker", one executor per worker, so it must be set).
  App name: the standalone master knows no tags, only names. Without a user `--name` (or
  `spark.app.name`) cobell adds `--name cobell:<job>`, which the standalone adapter maps to the
  job. A user-given name is kept without a warning: our own runs are mapped through the app id
  captured from the output and recorded in the history, which is exact, while a name is only a
  hint anyway (a PySpark script's `appName(...)` overrides `--name`).
  In `--deploy-mode cluster` the standalone client prints only a driver id, so no app id is
  captured there.
- `flink run` / `flink run-application`: `-p X`; on YARN targets also `-Dyarn.tags=...`.
- anything else: every `{scale_out}` in argv is replaced; without one it is a UsageError.

Event logs (for the what-if; run/event_capture.py decides and does the I/O):
`event_log_settings(argv, inherited)` says what a spark-submit command will log and where
(its `--conf`s over the properties file's), `with_event_log(argv, uri)` turns logging on among
the launcher's options, `local_directory(dir)` is a spark.eventLog.dir's local path or None.

`{scale_out}` placeholders are substituted for every launcher first, so
`spark-submit --master local[{scale_out}] ...` works as a placeholder command. New flags go at
the end of the launcher's options (before the application file); a flag the user already gave
is replaced in place, with a warning when its value changes, and never duplicated.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cobell_cli.core.job_name import check_job_name, job_tag
from cobell_cli.errors import UsageError
from cobell_cli.redact import REDACTED, is_secret_key, redact

__all__ = ["REDACTED", "is_secret_key", "redact"]

PLACEHOLDER = "{scale_out}"
COBELL_TAG = "cobell"

# spark-submit options that take a value (SparkSubmitOptionParser); everything else that
# starts with "-" is a switch. The first non-option token is the application resource and
# everything after it belongs to the application, so it is never touched.
_SPARK_VALUE_OPTS = frozenset(
    {
        "--archives", "--class", "--conf", "-c", "--deploy-mode", "--driver-class-path",
        "--driver-cores", "--driver-java-options", "--driver-library-path", "--driver-memory",
        "--executor-cores", "--executor-memory", "--files", "--jars", "--keytab", "--kill",
        "--master", "--name", "--num-executors", "--packages", "--exclude-packages",
        "--principal", "--properties-file", "--proxy-user", "--py-files", "--queue",
        "--repositories", "--status", "--total-executor-cores", "--remote",
    }
)  # fmt: skip
_FLINK_VALUE_OPTS = frozenset(
    {
        "-c", "--class", "-C", "--classpath", "-p", "--parallelism", "-s", "--fromSavepoint",
        "-py", "--python", "-pyfs", "--pyFiles", "-pym", "--pyModule", "-pyreq",
        "--pyRequirements", "-pyarch", "--pyArchives", "-pyexec", "--pyExecutable",
        "-pyclientexec", "--pyClientExecutable", "-t", "--target", "-m", "--jobmanager",
        "-e", "--executor", "-yid", "--yarnapplicationId", "-z", "--zookeeperNamespace",
        "-cm", "--claimMode", "-rm", "--restoreMode", "-D",
    }
)  # fmt: skip
_FLINK_RUN_ACTIONS = frozenset({"run", "run-application"})
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class Injection:
    argv: list[str]
    launcher: str
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Opt:
    """One option occurrence; `index` points at the flag token, `form` says how it is spelt."""

    index: int
    name: str
    value: str | None
    form: str  # "sep" (--x v), "eq" (--x=v), "attached" (-Dk=v, -p4), "switch"


def _parse_options(
    argv: Sequence[str], start: int, value_opts: frozenset[str]
) -> tuple[list[_Opt], int]:
    """Options from argv[start:] up to the first positional; returns them and that index."""
    opts: list[_Opt] = []
    i = start
    while i < len(argv):
        tok = argv[i]
        if tok == "--" or not tok.startswith("-") or tok == "-":
            break
        name, eq, value = tok.partition("=")
        if eq and name in value_opts:
            opts.append(_Opt(i, name, value, "eq"))
            i += 1
        elif tok in value_opts:
            val = argv[i + 1] if i + 1 < len(argv) else None
            opts.append(_Opt(i, tok, val, "sep"))
            i += 2
        elif tok.startswith("-D") and len(tok) > 2:
            opts.append(_Opt(i, "-D", tok[2:], "attached"))
            i += 1
        elif re.fullmatch(r"-p\d+", tok):
            opts.append(_Opt(i, "-p", tok[2:], "attached"))
            i += 1
        else:
            opts.append(_Opt(i, name, value if eq else None, "switch"))
            i += 1
    return opts, min(i, len(argv))


def _spell(opt: _Opt, value: str) -> list[str]:
    if opt.form == "sep":
        return [opt.name, value]
    if opt.form == "eq":
        return [f"{opt.name}={value}"]
    return [f"{opt.name}{value}"]  # attached


def _launcher_index(argv: Sequence[str]) -> int:
    """Index of the executable, skipping an `env NAME=value ...` prefix."""
    i = 0
    if argv and os.path.basename(argv[0]) == "env":
        i = 1
        while i < len(argv) and (_ENV_ASSIGNMENT.match(argv[i]) or argv[i] in {"-i", "-"}):
            i += 1
    return i


def _exe(argv: Sequence[str], i: int) -> str:
    if i >= len(argv):
        return ""
    name = os.path.basename(argv[i])
    return re.sub(r"2?\.cmd$", "", name)  # spark-submit.cmd / spark-submit2.cmd on Windows


def _spark_master(opts: list[_Opt]) -> str | None:
    master = None
    for opt in opts:
        if opt.name == "--master" and opt.value is not None:
            master = opt.value
        elif opt.name in {"--conf", "-c"} and opt.value:
            key, _, value = opt.value.partition("=")
            if key.strip() == "spark.master" and master is None:
                master = value
    return master


def detect_launcher(argv: Sequence[str]) -> str:
    """Which injection applies: spark-yarn, spark-standalone, flink or placeholder (the rest)."""
    i = _launcher_index(argv)
    exe = _exe(argv, i)
    if exe == "spark-submit":
        opts, _ = _parse_options(argv, i + 1, _SPARK_VALUE_OPTS)
        master = (_spark_master(opts) or "").strip().lower()
        if master == "yarn" or master.startswith("yarn-"):
            return "spark-yarn"
        if master.startswith("spark://"):
            return "spark-standalone"
        return "placeholder"
    if exe == "flink":
        return "flink"
    return "placeholder"


class _Editor:
    """Replacements and insertions on argv by original index, applied once at the end."""

    def __init__(self, argv: Sequence[str]) -> None:
        self.argv = list(argv)
        self.replace: dict[int, list[str]] = {}
        self.delete: set[int] = set()
        self.append: list[str] = []
        self.warnings: list[str] = []

    def set_opt(self, opt: _Opt, value: str) -> None:
        if opt.value == value:
            return
        self.warnings.append(f"replaced {_shown(opt)} with the planned value {value}")
        self.replace[opt.index] = _spell(opt, value)
        if opt.form == "sep":
            self.delete.add(opt.index + 1)

    def result(self, insert_at: int) -> list[str]:
        out: list[str] = []
        for i, tok in enumerate(self.argv):
            if i == insert_at:
                out.extend(self.append)
            if i in self.delete:
                continue
            out.extend(self.replace.get(i, [tok]))
        if insert_at >= len(self.argv):
            out.extend(self.append)
        return out


def _shown(opt: _Opt) -> str:
    if opt.form == "sep":
        return f"{opt.name} {opt.value}"
    if opt.form == "eq":
        return f"{opt.name}={opt.value}"
    return f"{opt.name}{opt.value}"


def _confs(opts: Iterable[_Opt], key: str, names: frozenset[str]) -> list[_Opt]:
    """Occurrences of a `key=value` property given through one of `names` (--conf, -D...)."""
    return [
        o
        for o in opts
        if o.name in names and o.value is not None and o.value.partition("=")[0].strip() == key
    ]


def _set_conf(ed: _Editor, opts: list[_Opt], key: str, value: str, names: frozenset[str]) -> None:
    for opt in _confs(opts, key, names):
        old = opt.value.partition("=")[2] if opt.value else ""
        if old != value:
            ed.warnings.append(f"replaced {key}={old} with the planned value {value}")
            ed.replace[opt.index] = _spell(opt, f"{key}={value}")
            if opt.form == "sep":
                ed.delete.add(opt.index + 1)


def _merge_tags(existing: str, job: str) -> str:
    tags = [t.strip() for t in existing.split(",") if t.strip()]
    lower = {t.lower() for t in tags}
    for tag in (COBELL_TAG, job_tag(job)):
        if tag.lower() not in lower:
            tags.append(tag)
    return ",".join(tags)


def _tag_conf(
    ed: _Editor, opts: list[_Opt], key: str, job: str, names: frozenset[str], new: list[str]
) -> None:
    given = _confs(opts, key, names)
    if not given:
        ed.append.extend([*new, f"{key}={_merge_tags('', job)}"])
        return
    for opt in given:  # merged, not overridden: no warning
        merged = _merge_tags((opt.value or "").partition("=")[2], job)
        ed.replace[opt.index] = _spell(opt, f"{key}={merged}")
        if opt.form == "sep":
            ed.delete.add(opt.index + 1)


_SPARK_CONF = frozenset({"--conf", "-c"})


def _inject_spark_yarn(ed: _Editor, opts: list[_Opt], end: int, scale_out: int, job: str) -> int:
    x = str(scale_out)
    given = [o for o in opts if o.name == "--num-executors"]
    for opt in given:
        ed.set_opt(opt, x)
    if not given:
        ed.append.extend(["--num-executors", x])
    _set_conf(ed, opts, "spark.executor.instances", x, _SPARK_CONF)
    dyn = _confs(opts, "spark.dynamicAllocation.enabled", _SPARK_CONF)
    if not dyn:
        ed.append.extend(["--conf", "spark.dynamicAllocation.enabled=false"])
    elif any((o.value or "").partition("=")[2].strip().lower() == "true" for o in dyn):
        ed.warnings.append(
            "you enabled spark.dynamicAllocation: the planned scale-out is only the initial "
            "number of executors, YARN may grant more or fewer"
        )
    _tag_conf(ed, opts, "spark.yarn.tags", job, _SPARK_CONF, ["--conf"])
    return end


def _conf_value(opts: list[_Opt], key: str) -> str | None:
    found = _confs(opts, key, _SPARK_CONF)
    return found[-1].value.partition("=")[2] if found and found[-1].value else None


def _inject_spark_standalone(
    ed: _Editor, opts: list[_Opt], scale_out: int, job: str, cores_per_executor: int | None
) -> None:
    cores_opts = [o for o in opts if o.name == "--executor-cores"]
    user_cores = cores_opts[-1].value if cores_opts else _conf_value(opts, "spark.executor.cores")
    if cores_per_executor is None:
        try:
            cores = int(user_cores) if user_cores is not None else 1
        except ValueError:
            raise UsageError(
                f"--executor-cores {user_cores!r} is not a whole number",
                hint="give a number of cores per executor",
            ) from None
    else:
        cores = cores_per_executor
    if cores < 1:
        raise UsageError(f"cores per executor must be >= 1, got {cores}")
    for opt in cores_opts:
        ed.set_opt(opt, str(cores))
    _set_conf(ed, opts, "spark.executor.cores", str(cores), _SPARK_CONF)
    if not cores_opts and _conf_value(opts, "spark.executor.cores") is None:
        ed.append.extend(["--executor-cores", str(cores)])

    total = str(scale_out * cores)
    total_opts = [o for o in opts if o.name == "--total-executor-cores"]
    for opt in total_opts:
        ed.set_opt(opt, total)
    _set_conf(ed, opts, "spark.cores.max", total, _SPARK_CONF)
    if not total_opts:
        ed.append.extend(["--total-executor-cores", total])

    named = any(o.name == "--name" for o in opts) or _conf_value(opts, "spark.app.name")
    if not named:
        ed.append.extend(["--name", f"cobell:{job}"])


def _inject_flink(ed: _Editor, opts: list[_Opt], scale_out: int, job: str) -> None:
    x = str(scale_out)
    given = [o for o in opts if o.name in {"-p", "--parallelism"}]
    for opt in given:
        ed.set_opt(opt, x)
    if not given:
        ed.append.extend(["-p", x])
    dash_d = frozenset({"-D"})
    _set_conf(ed, opts, "parallelism.default", x, dash_d)
    target = next((o.value for o in opts if o.name in {"-t", "--target"}), None) or ""
    manager = next((o.value for o in opts if o.name in {"-m", "--jobmanager"}), None) or ""
    if (target.startswith("yarn-") and target != "yarn-session") or manager == "yarn-cluster":
        tagged = _confs(opts, "yarn.tags", dash_d)
        if not tagged:
            ed.append.append(f"-Dyarn.tags={_merge_tags('', job)}")
        for opt in tagged:
            ed.replace[opt.index] = _spell(
                opt, f"yarn.tags={_merge_tags((opt.value or '').partition('=')[2], job)}"
            )
            if opt.form == "sep":
                ed.delete.add(opt.index + 1)


def inject(
    argv: Sequence[str], scale_out: int, job: str, cores_per_executor: int | None = None
) -> Injection:
    """The command to run for `job` at `scale_out`; see the module docstring for each launcher."""
    if not argv:
        raise UsageError("no command given", hint="put the job's command after `--`")
    if scale_out < 1:
        raise UsageError(f"scale-out must be >= 1, got {scale_out}")
    check_job_name(job)
    had_placeholder = any(PLACEHOLDER in tok for tok in argv)
    args = [tok.replace(PLACEHOLDER, str(scale_out)) for tok in argv]
    launcher = detect_launcher(args)
    i = _launcher_index(args)
    ed = _Editor(args)

    if launcher in {"spark-yarn", "spark-standalone"}:
        opts, end = _parse_options(args, i + 1, _SPARK_VALUE_OPTS)
        if launcher == "spark-yarn":
            _inject_spark_yarn(ed, opts, end, scale_out, job)
        else:
            _inject_spark_standalone(ed, opts, scale_out, job, cores_per_executor)
        return Injection(ed.result(end), launcher, ed.warnings)

    if launcher == "flink":
        action = args[i + 1] if i + 1 < len(args) else ""
        if action not in _FLINK_RUN_ACTIONS:
            if had_placeholder:
                return Injection(args, "placeholder", [])
            raise UsageError(
                f"`flink {action}` does not run a job, so cobell cannot set its parallelism",
                hint="use `flink run ...`, or put {scale_out} where the scale-out goes",
            )
        opts, end = _parse_options(args, i + 2, _FLINK_VALUE_OPTS)
        _inject_flink(ed, opts, scale_out, job)
        return Injection(ed.result(end), launcher, ed.warnings)

    if had_placeholder:
        return Injection(args, "placeholder", [])
    if _exe(args, i) == "spark-submit":
        raise UsageError(
            "spark-submit without `--master yarn` or `--master spark://...`: cobell cannot tell "
            "how to set the number of executors",
            hint="give --master, or put {scale_out} where the scale-out goes "
            "(e.g. --master 'local[{scale_out}]')",
        )
    exe = os.path.basename(args[i]) if i < len(args) else ""
    raise UsageError(
        f"cobell does not know how to set the scale-out of `{exe}`",
        hint="put {scale_out} in the command where the scale-out goes, or use spark-submit "
        "(YARN or standalone) or `flink run`",
    )


# --- node labels (YARN partitions) ---------------------------------------------------------

NODE_LABEL_CONF = "spark.yarn.executor.nodeLabelExpression"
LABEL_TAG_PREFIX = "cobell-label:"  # read back by cluster/yarn.py: where a co-runner runs


def spark_queue(argv: Sequence[str]) -> str | None:
    """The YARN queue a spark-submit command names (--queue, else spark.yarn.queue)."""
    if detect_launcher(argv) != "spark-yarn":
        return None
    opts, _ = _spark_options(argv)
    given = [o.value for o in opts if o.name == "--queue" and o.value]
    return given[-1] if given else _conf_value(opts, "spark.yarn.queue")


def with_node_label(injection: Injection, label: str) -> Injection:
    """The injected command with its executors placed on `label`'s nodes: on YARN the
    executors' node-label expression, and a `cobell-label:<label>` tag so that later plans see
    which partition the app runs in. The default partition ("") needs nothing. Spark
    standalone cannot place executors by label (a usage error); other launchers get a warning
    and no change."""
    if not label:
        return injection
    if injection.launcher == "spark-standalone":
        raise UsageError("--node-label needs YARN: Spark standalone cannot place executors "
                         "by node label", hint="drop --node-label, or submit to YARN")
    if injection.launcher != "spark-yarn":
        note = (f"node label {label!r} not injected: cobell sets it for spark-submit on YARN "
                f"only; place the job's containers on it yourself")
        return Injection(injection.argv, injection.launcher, [*injection.warnings, note])
    args = injection.argv
    i = _launcher_index(args)
    opts, end = _parse_options(args, i + 1, _SPARK_VALUE_OPTS)
    ed = _Editor(args)
    _set_conf(ed, opts, NODE_LABEL_CONF, label, _SPARK_CONF)
    if not _confs(opts, NODE_LABEL_CONF, _SPARK_CONF):
        ed.append.extend(["--conf", f"{NODE_LABEL_CONF}={label}"])
    for opt in _confs(opts, "spark.yarn.tags", _SPARK_CONF):
        tags = [t for t in (opt.value or "").partition("=")[2].split(",")
                if t.strip() and not t.strip().startswith(LABEL_TAG_PREFIX)]
        merged = ",".join([*tags, LABEL_TAG_PREFIX + label])
        ed.replace[opt.index] = _spell(opt, f"spark.yarn.tags={merged}")
        if opt.form == "sep":
            ed.delete.add(opt.index + 1)
    return Injection(ed.result(end), injection.launcher, [*injection.warnings, *ed.warnings])


# --- application ids -----------------------------------------------------------------------

# YARN: ApplicationId.toString() is "application_<cluster start ms>_<%04d seq>".
# Standalone: Master.newApplicationId() is "app-<yyyyMMddHHmmss>-<%04d seq>".
_APP_ID = re.compile(r"\b(application_\d+_\d+|app-\d{14}-\d{4,})\b")


def parse_app_id(line: str) -> str | None:
    """The first YARN or standalone application id in one line of launcher output."""
    match = _APP_ID.search(line)
    return match.group(1) if match else None


# --- event logs (issue 14, item 2) ----------------------------------------------------------

EVENT_LOG_PREFIX = "spark.eventLog."
SPARK_DEFAULT_EVENT_LOG_DIR = "/tmp/spark-events"  # spark.eventLog.dir's default
SPARK_LAUNCHERS = frozenset({"spark-yarn", "spark-standalone"})


@dataclass(frozen=True)
class SparkEventLog:
    """What a spark-submit command (with the properties file it reads) says of its event log."""

    user_set: bool  # the user set some spark.eventLog.* property: cobell leaves them alone
    enabled: bool
    directory: str  # spark.eventLog.dir as given (a path or a URL)
    driver_here: bool  # client deploy mode: the driver, which writes the log, runs on this host


def _spark_options(argv: Sequence[str]) -> tuple[list[_Opt], int]:
    i = _launcher_index(argv)
    return _parse_options(argv, i + 1, _SPARK_VALUE_OPTS)


def spark_confs(argv: Sequence[str]) -> dict[str, str]:
    """The `--conf key=value` properties of a spark-submit command; the last one wins."""
    opts, _ = _spark_options(argv)
    out: dict[str, str] = {}
    for opt in opts:
        if opt.name in _SPARK_CONF and opt.value and "=" in opt.value:
            key, _, value = opt.value.partition("=")
            out[key.strip()] = value
    return out


def properties_file(argv: Sequence[str]) -> str | None:
    """The `--properties-file` of a spark-submit command (it replaces spark-defaults.conf)."""
    opts, _ = _spark_options(argv)
    given = [o.value for o in opts if o.name == "--properties-file" and o.value]
    return given[-1] if given else None


def _driver_on_cluster(opts: list[_Opt], confs: dict[str, str]) -> bool:
    modes = [o.value for o in opts if o.name == "--deploy-mode" and o.value]
    mode = modes[-1] if modes else confs.get("spark.submit.deployMode", "client")
    master = (_spark_master(opts) or "").strip().lower()
    return mode.strip().lower() == "cluster" or master == "yarn-cluster"


def event_log_settings(argv: Sequence[str], inherited: Mapping[str, str]) -> SparkEventLog:
    """The event log a spark-submit command will write; `inherited`: its properties file's
    settings (spark-defaults.conf), which `--conf` overrides. A `-Dspark.eventLog...` inside
    another option (e.g. --driver-java-options) also counts as set by the user."""
    opts, _ = _spark_options(argv)
    confs = spark_confs(argv)
    merged = {**inherited, **confs}
    mentioned = any(EVENT_LOG_PREFIX in (o.value or "") for o in opts if o.name not in _SPARK_CONF)
    return SparkEventLog(
        user_set=mentioned or any(k.startswith(EVENT_LOG_PREFIX) for k in merged),
        enabled=merged.get("spark.eventLog.enabled", "false").strip().lower() == "true",
        directory=merged.get("spark.eventLog.dir", SPARK_DEFAULT_EVENT_LOG_DIR).strip(),
        driver_here=not _driver_on_cluster(opts, merged),
    )


def local_directory(directory: str) -> str | None:
    """The local path of a spark.eventLog.dir, None when it is not local (hdfs://, s3a://...).

    Spark resolves a value without a scheme as a local path (Utils.resolveURI)."""
    from urllib.parse import unquote, urlsplit

    if "://" not in directory and not directory.startswith("file:"):
        return directory or None
    parts = urlsplit(directory)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return None
    return unquote(parts.path) or None


SPARK_LOG_LEVELS = ("ALL", "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF")


def with_spark_log_level(injection: Injection, level: str) -> Injection:
    """The job's Spark log level (`spark.log.level`, Spark 3.5+: the SparkContext's level from
    its start, as if the job called setLogLevel), unless the command sets one itself. Lines
    the driver prints before its SparkContext exists (a few) are not affected."""
    level = level.upper()
    if level not in SPARK_LOG_LEVELS:
        raise UsageError(f"--spark-log-level {level!r} is not a log level",
                         hint=f"use one of {', '.join(SPARK_LOG_LEVELS)}")
    if injection.launcher not in SPARK_LAUNCHERS:
        note = "--spark-log-level applies to spark-submit commands; this one is left alone"
        return Injection(injection.argv, injection.launcher, [*injection.warnings, note])
    if "spark.log.level" in spark_confs(injection.argv):
        return injection
    _, end = _spark_options(injection.argv)
    argv = [*injection.argv[:end], "--conf", f"spark.log.level={level}", *injection.argv[end:]]
    return Injection(argv, injection.launcher, injection.warnings)


# What the memory models need in the log besides the tasks' executor metrics: each stage's
# per-executor peaks, polled often enough to see them (at the default, only at the 10 s
# heartbeats: a short task's peak is missed), and the processes' resident memory (off-heap,
# PySpark workers)
PEAK_METRICS_CONFS = (
    "spark.eventLog.logStageExecutorMetrics=true",
    "spark.executor.metrics.pollingInterval=250ms",
    "spark.executor.processTreeMetrics.enabled=true",
)


def with_event_log(argv: Sequence[str], directory_uri: str) -> list[str]:
    """The spark-submit command with event logging into `directory_uri`, among its options,
    with the executors' memory peaks logged (unless the command sets those itself)."""
    _, end = _spark_options(argv)
    extra = [
        "--conf",
        "spark.eventLog.enabled=true",
        "--conf",
        f"spark.eventLog.dir={directory_uri}",
    ]
    confs = spark_confs(argv)
    for conf in PEAK_METRICS_CONFS:
        if conf.partition("=")[0] not in confs:
            extra += ["--conf", conf]
    return [*argv[:end], *extra, *argv[end:]]


# --- executor memory (issue 26) ----------------------------------------------------------

EXECUTOR_MEMORY = "spark.executor.memory"
EXECUTOR_OVERHEAD = "spark.executor.memoryOverhead"


@dataclass(frozen=True)
class UserMemory:
    """The executor memory a spark-submit command sets itself, MB (None: not set there)."""

    executor_memory_mb: int | None
    executor_overhead_mb: int | None

    @property
    def given(self) -> bool:
        return self.executor_memory_mb is not None


def user_memory(argv: Sequence[str], inherited: Mapping[str, str] | None = None) -> UserMemory:
    """`--executor-memory` / `spark.executor.memory` and the overhead as the command gives
    them (the last one wins, as in spark-submit), over its properties file's (`inherited`);
    a value Spark could not read is a UsageError."""
    from cobell_cli.core.memory.units import memory_mb

    if detect_launcher(argv) not in SPARK_LAUNCHERS:
        return UserMemory(None, None)
    opts, _ = _spark_options(argv)
    confs = {**(inherited or {}), **spark_confs(argv)}
    flags = [o.value for o in opts if o.name == "--executor-memory" and o.value is not None]
    found = {
        EXECUTOR_MEMORY: flags[-1] if flags else confs.get(EXECUTOR_MEMORY),
        EXECUTOR_OVERHEAD: confs.get(EXECUTOR_OVERHEAD),
    }
    parsed: dict[str, int | None] = {}
    for key, text in found.items():
        try:
            parsed[key] = memory_mb(text) if text is not None else None
        except ValueError as exc:
            name = "--executor-memory" if key == EXECUTOR_MEMORY and flags else key
            raise UsageError(
                f"{name}: {exc}", hint="write it as spark-submit does, e.g. 4g or 4096m"
            ) from None
    return UserMemory(parsed[EXECUTOR_MEMORY], parsed[EXECUTOR_OVERHEAD])


def with_memory(
    injection: Injection, executor_memory_mb: int, executor_overhead_mb: int | None
) -> Injection:
    """The injected spark-submit command with this executor memory (and, on YARN, overhead):
    set among its options, or replaced where the command gives it (`--executor-memory`,
    `spark.executor.memory`, the overhead), with a warning, never duplicated. The caller
    decides whether a memory the user gave may be replaced (a retry after a memory failure)."""
    if injection.launcher not in SPARK_LAUNCHERS:
        return injection
    argv = injection.argv
    opts, end = _spark_options(argv)
    ed = _Editor(argv)
    heap = f"{executor_memory_mb}m"
    flags = [o for o in opts if o.name == "--executor-memory"]
    for opt in flags:
        ed.set_opt(opt, heap)
    _set_conf(ed, opts, EXECUTOR_MEMORY, heap, _SPARK_CONF)
    if not flags:
        ed.append.extend(["--executor-memory", heap])
    if injection.launcher == "spark-yarn" and executor_overhead_mb:
        overhead = f"{executor_overhead_mb}m"
        _set_conf(ed, opts, EXECUTOR_OVERHEAD, overhead, _SPARK_CONF)
        if not _confs(opts, EXECUTOR_OVERHEAD, _SPARK_CONF):
            ed.append.extend(["--conf", f"{EXECUTOR_OVERHEAD}={overhead}"])
    return Injection(ed.result(end), injection.launcher, [*injection.warnings, *ed.warnings])
