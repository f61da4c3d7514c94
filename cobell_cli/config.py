"""Effective settings and where each came from: flags > COBELL_* env > config.toml > defaults.

Every setting is declared once in SETTINGS; the environment variable, the config key, the
`config show` listing and the man page's ENVIRONMENT section are all derived from it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cobell_cli.core.calibration import DEFAULT_CONFIDENCE
from cobell_cli.errors import ConfigError

MAX_SECONDS = 3600.0  # no cluster request is worth waiting an hour for
MAX_SCALE_OUT = 100_000  # executors; a larger range would take minutes just to enumerate
MAX_RETRIES = 10
MAX_RUNS = 1_000_000_000
CLUSTER_BUDGET_S = 15.0  # a dead or hanging cluster costs a query at most this (cluster/http.py)


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".local/share")
    return Path(base) / "cobell"


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".config")
    return Path(base) / "cobell"


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".cache")
    return Path(base) / "cobell"


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off", ""}:
        return False
    raise ValueError(f"expected true or false, got {value!r}")


def _str_list(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    return [part.strip() for part in str(value).split(",") if part.strip()]


def _choice(*choices: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        text = str(value).strip().lower()
        if text not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}, got {value!r}")
        return text

    return parse


def _finite(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"must be a finite number, got {value!r}")
    return number


def _whole(value: Any, low: int, high: int) -> int:
    """An integer within [low, high]: beyond it a count overflows SQLite or never finishes."""
    if isinstance(value, bool):
        raise ValueError(f"expected a whole number, got {value!r}")
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(f"must be a whole number, got {value!r}")
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"expected a whole number, got {value!r}") from None
    if not low <= number <= high:
        raise ValueError(f"must be between {low} and {high}, got {value!r}")
    return number


def _int_range(low: int, high: int) -> Callable[[Any], int]:
    return lambda value: _whole(value, low, high)


def _seconds(value: Any) -> float:
    number = _finite(value)
    if not 0 < number <= MAX_SECONDS:
        raise ValueError(f"must be > 0 and at most {MAX_SECONDS:.0f} seconds, got {value!r}")
    return number


def _text(value: Any) -> str:
    text = str(value)
    if "\0" in text or not text.strip():
        raise ValueError(f"expected a non-empty text without NUL bytes, got {value!r}")
    return text


def _url(value: Any) -> str:
    """An http(s) URL whose host and port parse, checked here so a typo fails at load."""
    from urllib.parse import urlsplit

    text = _text(value).strip()
    try:
        parts = urlsplit(text if "://" in text else "http://" + text)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise ValueError(f"not a valid URL {text!r} ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"expected an http(s)://host[:port] URL, got {text!r}")
    return text


def _urls(value: Any) -> list[str]:
    return [_url(part) for part in _str_list(value)]


def _url_list_text(value: Any) -> str:
    """Comma-separated URLs kept as one text (standalone HA masters), each part checked."""
    text = _text(value).strip()
    for part in text.split(","):
        _url(part)
    return text


EVENT_LOG_OFF = "off"


def _event_log_dir(value: Any) -> str:
    """A local directory for the event logs of the runs cobell launches, or 'off'.

    Local because cobell reads the log after the run; a `file://` URL is taken as its path."""
    text = _text(value).strip()
    if text.lower() in {"off", "none", "false", "no", "0"}:
        return EVENT_LOG_OFF
    if text.startswith("file://"):
        text = text.removeprefix("file://")
    elif "://" in text or text.startswith(("hdfs:", "s3a:", "abfs:", "gs:", "viewfs:")):
        raise ValueError(
            f"expected a local directory (cobell reads the log after the run) or 'off', "
            f"got {text!r}"
        )
    return str(Path(text).expanduser())


AUTO_LABELS = "auto"


def _node_labels(value: Any) -> list[str]:
    """Node labels to choose among ("" is the default partition), or ["auto"]: every label
    the submit's queue may use."""
    if isinstance(value, str) and value.strip().lower() == AUTO_LABELS:
        return [AUTO_LABELS]
    labels = [str(v).strip() for v in (value if isinstance(value, list) else
                                       str(value).split(","))]
    if not labels or any(not v or "\0" in v or " " in v for v in labels):
        raise ValueError(f"expected labels a,b,... or 'auto', got {value!r}")
    return ["" if v.lower() == "default" else v for v in labels]


def _label_prices(value: Any) -> dict[str, float]:
    """{label: price multiplying executor-seconds}, from a table or "a=1,b=2.5"."""
    items = value.items() if isinstance(value, Mapping) else (
        part.partition("=")[::2] for part in _str_list(value))
    out = {}
    for label, price in items:
        label = str(label).strip()
        try:
            number = float(price)
        except (TypeError, ValueError):
            number = float("nan")
        if not label or not math.isfinite(number) or number <= 0:
            raise ValueError(f"expected LABEL=PRICE pairs with prices > 0, got {value!r}")
        out["" if label.lower() == "default" else label] = number
    return out


def _fraction(value: Any) -> float:
    number = _finite(value)
    if not 0 < number < 1:
        raise ValueError(f"must be between 0 and 1 (exclusive), got {value!r}")
    return number


def _confidence(value: Any) -> float | None:
    """A probability in (0, 1), or 'point' (None): plan on the point prediction."""
    if isinstance(value, str) and value.strip().lower() == "point":
        return None
    try:
        return _fraction(value)
    except ValueError:
        raise ValueError(
            f"expected a probability between 0 and 1 (exclusive) or 'point', got {value!r}"
        ) from None


def _non_negative_float(value: Any) -> float:
    number = _finite(value)
    if number < 0:
        raise ValueError(f"must be >= 0, got {value!r}")
    return number


def _patterns(value: Any) -> dict[str, str]:
    if isinstance(value, Mapping):
        return _compiled({str(k): str(v) for k, v in value.items()})
    # env form: "job1=regex1,job2=regex2"
    out: dict[str, str] = {}
    for part in _str_list(value):
        job, sep, regex = part.partition("=")
        if not sep or not job:
            raise ValueError(f"expected JOB=REGEX pairs, got {part!r}")
        out[job.strip()] = regex.strip()
    return _compiled(out)


def _compiled(patterns: dict[str, str]) -> dict[str, str]:
    import re

    for job, regex in patterns.items():
        try:
            re.compile(regex)
        except re.error as exc:
            raise ValueError(f"{job}: {regex!r} is not a regular expression ({exc})") from None
    return patterns


@dataclass(frozen=True)
class Setting:
    name: str
    parse: Callable[[Any], Any]
    default: Any
    help: str

    @property
    def env(self) -> str:
        return "COBELL_" + self.name.upper()

    @property
    def option(self) -> str:
        """The command-line option that sets it (the name's own unless OPTIONS says)."""
        return OPTIONS.get(self.name, "--" + self.name.replace("_", "-"))


# Settings whose option is not named after them: one label per --node-label's comma, one
# price per --label-price pair, --step for the step between scale-outs.
OPTIONS = {"node_labels": "--node-label", "label_prices": "--label-price",
           "scale_out_step": "--step"}


SETTINGS: tuple[Setting, ...] = (
    Setting("db", _text, None, "history database file (default: $XDG_DATA_HOME/cobell/history.db)"),
    Setting(
        "cluster",
        _choice("auto", "yarn", "standalone", "none"),
        "auto",
        "where co-runners are read from: yarn, standalone, none, or auto (yarn if an RM is "
        "configured or found in yarn-site.xml, else standalone if a master URL is set, else none)",
    ),
    Setting("rm_url", _urls, [], "YARN ResourceManager web URL(s), comma-separated for HA"),
    Setting(
        "standalone_url", _url_list_text, None, "Spark standalone master web UI URL, e.g. http://host:8080"
    ),
    Setting(
        "auth", _choice("simple", "kerberos", "none"), "simple", "how to authenticate to the RM"
    ),
    Setting("rm_user", _text, None, "user.name sent to the RM with simple auth (default: $USER)"),
    Setting("ca_bundle", _text, None, "CA bundle used to verify the RM's TLS certificate"),
    Setting(
        "timeout_s",
        _seconds,
        10.0,
        "longest wait for the cluster to connect or send the next bytes of an answer, "
        "seconds (within cluster_budget_s)",
    ),
    Setting(
        "cluster_budget_s",
        _seconds,
        CLUSTER_BUDGET_S,
        "total time one cluster query may take, seconds: every retry, HA RM, redirect and "
        "the answer's download included",
    ),
    Setting(
        "retries",
        _int_range(0, MAX_RETRIES),
        2,
        f"retries of a failed cluster request (with back-off), 0-{MAX_RETRIES}",
    ),
    Setting(
        "allow_no_cluster", _bool, False, "predict without co-runners when the cluster is down"
    ),
    Setting("min_scale_out", _int_range(1, MAX_SCALE_OUT), 1, "smallest scale-out considered"),
    Setting("max_scale_out", _int_range(1, MAX_SCALE_OUT), 64, "largest scale-out considered"),
    Setting("scale_out_step", _int_range(1, MAX_SCALE_OUT), 1, "step between candidate scale-outs"),
    Setting(
        "confidence",
        _confidence,
        DEFAULT_CONFIDENCE,
        "choose the smallest scale-out meeting the target with at least this estimated "
        "probability; 'point' plans on the point prediction (the paper's decision)",
    ),
    Setting(
        "input_tolerance",
        _non_negative_float,
        0.10,
        "history runs count as similar when their input size is within this fraction",
    ),
    Setting("job_patterns", _patterns, {}, "map other apps to jobs by name: JOB=REGEX,..."),
    Setting(
        "node_labels",
        _node_labels,
        [],
        "YARN node labels (partitions) to choose among, comma-separated ('default' is the "
        "default partition), or 'auto': every label the submit's queue may use (empty: "
        "wherever the queue puts the job, as before)",
    ),
    Setting(
        "label_prices",
        _label_prices,
        {},
        "price of each node label per executor-second, LABEL=PRICE,... (default 1)",
    ),
    Setting(
        "history_window",
        _int_range(0, MAX_RUNS),
        1000,
        "plan and fit on the job's most recent N succeeded runs (0: all of them)",
    ),
    Setting(
        "model_cache",
        _bool,
        True,
        "reuse fitted models from $XDG_CACHE_HOME/cobell/models (keyed by the runs they were "
        "fitted on; safe to delete), and the history's last passed integrity check",
    ),
    Setting(
        "event_log_dir",
        _event_log_dir,
        None,
        "where `cobell submit` has Spark write the event logs of the runs it launches, read "
        "after each run for the what-if (default: event-logs/ next to the history); 'off': "
        "leave event logging alone",
    ),
)

BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}


@dataclass
class Settings:
    values: dict[str, Any]
    sources: dict[str, str]
    warnings: list[str]
    config_file: Path | None

    def __getattr__(self, name: str) -> Any:
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def db_path(self) -> Path:
        return Path(self.values["db"]).expanduser() if self.values["db"] else default_db_path()

    @property
    def event_log_path(self) -> Path | None:
        """The event-log directory of submitted runs; None when capture is off."""
        value = self.values.get("event_log_dir")
        if value == EVENT_LOG_OFF:
            return None
        return Path(value) if value else self.db_path.parent / "event-logs"


def default_db_path(env: Mapping[str, str] | None = None) -> Path:
    return data_dir(env) / "history.db"


def _read_file(path: Path) -> dict[str, Any]:
    import tomllib  # most runs have no config file: no parser to load

    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"config file {path} is not valid TOML ({exc})", hint="fix the file or pass --config"
        ) from None
    except UnicodeDecodeError:
        raise ConfigError(
            f"config file {path} is not text (not UTF-8)", hint="pass a TOML file to --config"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None


def load(
    flags: Mapping[str, Any] | None = None,
    config_path: str | Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Resolve every setting; flags whose value is None count as not given."""
    env = os.environ if env is None else env
    flags = flags or {}
    warnings: list[str] = []

    explicit = config_path or env.get("COBELL_CONFIG")
    path = Path(explicit).expanduser() if explicit else config_dir(env) / "config.toml"
    file_values: dict[str, Any] = {}
    used_file: Path | None = None
    if path.exists():
        file_values = _read_file(path)
        used_file = path
    elif explicit:
        raise ConfigError(f"config file {path} does not exist", hint="check the --config path")

    for key in file_values:
        if key not in BY_NAME:
            warnings.append(f"{path}: unknown key {key!r} ignored (see `cobell config show`)")

    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for setting in SETTINGS:
        for origin, raw in (
            ("flag", flags.get(setting.name)),
            (f"env {setting.env}", env.get(setting.env)),
            (f"file {path}", file_values.get(setting.name)),
        ):
            if raw is None or (origin.startswith("env") and raw == ""):
                continue
            try:
                values[setting.name] = setting.parse(raw)
            except (TypeError, ValueError, OverflowError) as exc:
                where = setting.option if origin == "flag" else origin
                raise ConfigError(
                    f"bad value for {setting.name} ({where}): {exc}",
                    hint="fix or unset it (`cobell config show` lists every setting)",
                ) from None
            sources[setting.name] = origin
            break
        else:
            values[setting.name] = setting.default
            sources[setting.name] = "default"

    if values["min_scale_out"] > values["max_scale_out"]:
        raise ConfigError(
            f"min_scale_out {values['min_scale_out']} is larger than max_scale_out "
            f"{values['max_scale_out']}",
            hint="give a range with min <= max",
        )
    return Settings(values=values, sources=sources, warnings=warnings, config_file=used_file)
