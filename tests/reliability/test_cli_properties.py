"""Properties of the whole CLI under hostile input (issue 15): for any `history import` input,
any arguments of any command and any COBELL_* environment, cobell ends in bounded time with an
exit code from the table in docs/reliability.md, and never with a traceback or an "internal error".

- Import inputs: random bytes, random CSV (cobell's and Bell's headers, cells of every kind)
  and structured-but-wrong JSON documents, whole or cut short; a failed import wrote nothing.
- Arguments: every command of the typer app is walked; each example picks a command and
  gives its options valid and invalid values of their type, sometimes an unknown option or a
  stray argument, and sets some COBELL_* variables to valid or invalid values.
- Safety: every cluster URL is a closed loopback port (or a malformed URL that fails
  validation); `submit` only ever runs `true`/`false` (never a generated word: it gets no
  positional argument but its harmless command after `--`); `demo` and `local-cluster start`
  (they start Spark) are only asked for `--help`. Files are in a per-example directory.
- Bounds: in-process calls (cli_support.cobell) run under a SIGALRM guard; `submit` runs as a
  real process (`python -m cobell_cli`) with a timeout.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cobell_cli import config
from cobell_cli.store.interchange import EXPORT_COLUMNS
from tests.cli_support import cobell
from tests.extras import require_extra
from tests.yarn_standin import dead_url

RELIABILITY = Path(__file__).resolve().parents[2] / "docs" / "reliability.md"
EXAMPLE = Path(__file__).resolve().parents[2] / "history" / "example.csv"
CALL_LIMIT_S = 60  # no call may take longer: a hang fails the property
SPARK_STARTERS = {("demo",), ("local-cluster", "start")}
EXAMPLES = int(os.environ.get("COBELL_PROPERTY_EXAMPLES", "0")) or None  # more, by hand


def documented_exit_codes() -> set[int]:
    """The codes of the "Exit codes" table in docs/reliability.md (`other` = a job's own: not
    cobell's)."""
    section = RELIABILITY.read_text().split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    codes: set[int] = set()
    for cell in re.findall(r"^\| ([0-9, ]+) \|", section, flags=re.M):
        codes.update(int(c) for c in cell.split(","))
    return codes


EXIT_CODES = documented_exit_codes()


def test_the_exit_code_table_is_read() -> None:
    assert {0, 1, 2, 3, 4, 5, 126, 127, 130} <= EXIT_CODES


# -- the workspace each example runs in ---------------------------------------------------------


class Hang(BaseException):
    """Raised by the alarm: a call outlived CALL_LIMIT_S (not an Exception: nothing in cobell
    may swallow it)."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    def fire(signum: int, frame: Any) -> None:
        raise Hang(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A history holding history/example.csv, copied for every example."""
    directory = tmp_path_factory.mktemp("template")
    result = cobell("--db", directory / "h.db", "history", "import", EXAMPLE)
    assert result.exit_code == 0, result.stderr
    return directory / "h.db"


@dataclass
class Workspace:
    root: Path
    dead: str

    def token(self, value: str) -> str:
        """Placeholders of the strategies (@db, @csv, ...) as this workspace's paths."""
        places = {
            "@db": self.root / "h.db",
            "@csv": self.root / "runs.csv",
            "@json": self.root / "runs.json",
            "@junk": self.root / "junk.bin",
            "@toml": self.root / "config.toml",
            "@dir": self.root / "a-directory",
            "@missing": self.root / "missing",
            "@nodir": self.root / "no-such-dir" / "file",
            "@out": self.root / "out" / "file",
        }
        for key, path in places.items():
            value = value.replace(key, str(path))
        return value.replace("@dead", self.dead)


@contextmanager
def workspace(template: Path) -> Iterator[Workspace]:
    with tempfile.TemporaryDirectory(prefix="cobell-prop-") as tmp:
        root = Path(tmp)
        shutil.copy(template, root / "h.db")
        shutil.copy(EXAMPLE, root / "runs.csv")
        (root / "runs.json").write_text(json.dumps({"cobell_history": 1, "runs": []}))
        (root / "junk.bin").write_bytes(bytes(range(256)) * 8)
        (root / "config.toml").write_text('cluster = "yarn"\nretries = 0\n')
        (root / "a-directory").mkdir()
        (root / "out").mkdir()
        conf = root / "hadoop-conf"
        conf.mkdir()
        dead = dead_url()
        host_port = dead.removeprefix("http://")
        (conf / "yarn-site.xml").write_text(
            "<configuration><property><name>yarn.resourcemanager.webapp.address</name>"
            f"<value>{host_port}</value></property></configuration>"
        )
        yield Workspace(root, dead)


def base_env(space: Workspace) -> dict[str, str]:
    """Every cluster is the closed port, without retries; the history is the copy."""
    return {
        "COBELL_DB": str(space.root / "h.db"),
        "COBELL_RM_URL": space.dead,
        "COBELL_STANDALONE_URL": space.dead,
        "COBELL_RETRIES": "0",
        "COBELL_CLUSTER_BUDGET_S": "5",
        "YARN_CONF_DIR": str(space.root / "hadoop-conf"),
        "HADOOP_CONF_DIR": str(space.root / "hadoop-conf"),
    }


def assert_well_behaved(code: int, stdout: str, stderr: str, what: Any) -> None:
    assert code in EXIT_CODES, (code, what, stderr[-500:])
    for stream in (stdout, stderr):
        assert "Traceback (most recent call last)" not in stream, (what, stream[-2000:])
        assert "internal error" not in stream, (what, stream[-500:])


def run_in_process(
    args: list[str], env: dict[str, str], stdin: str | None = None, cwd: Path | None = None
) -> Any:
    """cobell ARGS in this process, in `cwd` (a relative output path lands there)."""
    here = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with time_limit(CALL_LIMIT_S):
            return cobell(*args, env=env, input=stdin)
    finally:
        os.chdir(here)


# -- history import inputs ----------------------------------------------------------------------

numbers = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1e999", "-0", "0x10", "1_000", " 4 ", "NaN", "inf", "4.0", "٣"]),
)
cell = st.one_of(
    numbers,
    st.text(max_size=12),
    st.sampled_from(["", "succeeded", "failed", "running", "lost", "import", "yarn", "[]", "{}"]),
    st.sampled_from(['[{"overlap_ratio": 0.5}]', "[[1,2]]", '[{"overlap_ratio": 7}]', "[", "3"]),
)
header = st.one_of(
    st.just(["Nodes", "Runtime"]),
    st.lists(st.sampled_from([*EXPORT_COLUMNS, "colour", "", "Job"]), min_size=1, max_size=8,
             unique=True),
)  # fmt: skip


@st.composite
def csv_texts(draw: st.DrawFn) -> str:
    columns = draw(header)
    rows = draw(st.lists(st.lists(cell, min_size=0, max_size=len(columns) + 2), max_size=6))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator=draw(st.sampled_from(["\n", "\r\n"])))
    writer.writerow(columns)
    writer.writerows(rows)
    return buf.getvalue()


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
json_values = st.recursive(
    json_scalars,
    lambda kids: st.lists(kids, max_size=3)
    | st.dictionaries(st.text(max_size=5), kids, max_size=3),
    max_leaves=8,
)
plausible = {
    "job": st.text(max_size=6) | json_values,
    "status": st.sampled_from(["succeeded", "failed", "running", "bogus"]) | json_values,
    "scale_out": st.integers(-3, 2**70) | json_values,
    "runtime_s": st.floats(allow_nan=True) | json_values,
    "colocations": st.lists(
        st.dictionaries(st.sampled_from(["overlap_ratio", "overlap_s", "co_runner_job", "x"]),
                        json_values | st.floats(-1, 2)), max_size=2) | json_values,
}  # fmt: skip
run_like = st.dictionaries(
    st.sampled_from([*EXPORT_COLUMNS, "bogus"]),
    json_values,
    max_size=5,
).flatmap(lambda extra: st.fixed_dictionaries({}, optional=plausible).map(lambda r: {**extra, **r}))
documents = st.one_of(
    json_values,
    st.lists(run_like | json_values, max_size=4),
    st.fixed_dictionaries(
        {"runs": st.lists(run_like | json_values, max_size=4) | json_values},
        optional={"cobell_history": json_values | st.integers(0, 3)},
    ),
)


@st.composite
def json_texts(draw: st.DrawFn) -> str:
    text = json.dumps(draw(documents), indent=draw(st.sampled_from([None, 1])))
    if draw(st.booleans()):  # cut short, or with a stray character in it
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(["", ",", "]", "\0", '"', "\n}"]))
    return text


import_inputs = st.one_of(
    st.binary(max_size=300),
    st.binary(max_size=200).map(lambda b: b"job,status,scale_out,runtime_s\n" + b),
    csv_texts().map(str.encode),
    json_texts().map(lambda t: t.encode("utf-8", "surrogatepass")),
)


def runs_in(db: Path) -> int:
    if not db.exists():
        return 0
    listed = cobell("--db", db, "history", "list", "--format", "json")
    assert listed.exit_code == 0, listed.stderr
    return len(json.loads(listed.stdout))


@settings(max_examples=EXAMPLES or 250, suppress_health_check=[HealthCheck.too_slow])
@given(data=import_inputs, stdin=st.booleans(), flags=st.lists(
    st.sampled_from(["--skip-invalid", "--new-ids", "--dry-run", "--json"]), max_size=2,
    unique=True))  # fmt: skip
def test_history_import_of_any_input_fails_cleanly_or_imports(data: bytes, stdin: bool, flags):
    with tempfile.TemporaryDirectory(prefix="cobell-import-") as tmp:
        db, source = Path(tmp) / "h.db", Path(tmp) / "input"
        source.write_bytes(data)
        args = ["--db", str(db), "history", "import", "-" if stdin else str(source), *flags]
        text = data.decode("utf-8", "replace") if stdin else None
        result = run_in_process(args, env={}, stdin=text, cwd=Path(tmp))
        assert_well_behaved(result.exit_code, result.stdout, result.stderr, data[:200])
        if result.exit_code != 0:
            assert runs_in(db) == 0, "a failed import wrote runs"
            assert result.exit_code == 2, result.stderr


# -- every command, every option, the environment ------------------------------------------------


@dataclass(frozen=True)
class Option:
    opts: tuple[str, ...]  # every spelling, the "off" side of a --x/--no-x flag included
    is_flag: bool
    type_name: str
    choices: tuple[str, ...]
    name: str
    positional: bool
    multiple: bool
    required: bool


def commands() -> dict[tuple[str, ...], list[Option]]:
    """Every leaf command of the typer app and its parameters (help options left out)."""
    import typer.main

    from cobell_cli.cli import app

    root = typer.main.get_command(app)
    found: dict[tuple[str, ...], list[Option]] = {}

    def walk(cmd: Any, ctx: Any, path: tuple[str, ...]) -> None:
        if hasattr(cmd, "list_commands"):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                walk(sub, sub.context_class(sub, info_name=name, parent=ctx), (*path, name))
            return
        help_option = cmd.get_help_option(ctx)
        found[path] = [option(p) for p in cmd.get_params(ctx) if p is not help_option]

    walk(root, root.context_class(root, info_name="cobell"), ())
    return found


def option(param: Any) -> Option:
    positional = param.param_type_name != "option"
    choices = tuple(str(getattr(c, "value", c)) for c in getattr(param.type, "choices", ()) or ())
    metavar = param.metavar or ""
    if not choices and re.fullmatch(r"[a-z0-9_-]+(\|[a-z0-9_-]+)+", metavar):
        choices = tuple(metavar.split("|"))
    return Option(
        opts=() if positional else (*param.opts, *param.secondary_opts),
        is_flag=bool(not positional and param.is_flag),
        type_name=type(param.type).__name__,
        choices=choices,
        name=param.name,
        positional=positional,
        multiple=bool(param.multiple or param.nargs == -1),
        required=bool(param.required),
    )


COMMANDS = commands()
RUNNABLE = sorted(p for p in COMMANDS if p not in SPARK_STARTERS)

good_ints, bad_ints = ["1", "2", "4", "8"], ["-1", "0", "100001", "10" * 16, "1.5", "x", ""]
good_floats, bad_floats = ["0.5", "30", "300", "5000"], ["-1", "0", "1e308", "inf", "nan", "x", ""]


def mostly(good: list[str] | st.SearchStrategy[str], bad: st.SearchStrategy[str]):
    """Valid values three times in four: most examples then get past argument parsing."""
    valid = st.sampled_from(good) if isinstance(good, list) else good
    return st.one_of(valid, valid, valid, bad)


ints = mostly(good_ints, st.sampled_from(bad_ints))
floats = mostly(good_floats, st.sampled_from(bad_floats))


junk = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=10
)
urls = st.sampled_from(["@dead", "http://[::1", "ftp://x", "", "http://127.0.0.1:99999", "@dead/x"])
paths = st.sampled_from(["@csv", "@json", "@junk", "@dir", "@missing", "@nodir", "@out", "-"])
words = {
    "job": mostly(["sgd", "kmeans", "wordcount"], st.sampled_from(["nope", "", "\x1b[31m"]) | junk),
    "since": st.sampled_from(["7d", "12h", "0s", "2026-01-01", "yesterday", "1e400", "-5d"]),
    "confidence": st.sampled_from(["0.9", "point", "1", "0", "nan", "-1", "0.97"]),
    "input_size": st.sampled_from(["10G", "1", "-5", "1e30", "inf", "nan", "lots", "9" * 20 + "T"]),
    "memory_per_worker": st.sampled_from(["1g", "x"]),
    "co_runner": st.sampled_from(["wordcount", "nope"]) | junk,
    "status": st.sampled_from(["succeeded", "failed", "bogus"]),
}
def values(opt: Option) -> st.SearchStrategy[str]:
    if opt.choices:
        return mostly(list(opt.choices), junk)
    if "url" in opt.name or opt.name == "from_spark_history":
        return urls
    if opt.name in words:
        return words[opt.name]
    if opt.type_name in {"IntRange", "IntParamType"}:
        return ints
    if opt.type_name in {"FloatRange", "FloatParamType"}:
        return floats
    if "Path" in opt.type_name or opt.name in {"ca_bundle", "input", "files", "output", "seed"}:
        return paths
    return junk | paths


@st.composite
def argument_lists(draw: st.DrawFn, path: tuple[str, ...]) -> list[str]:
    params = COMMANDS[path]
    args: list[str] = []
    for opt in draw(st.lists(st.sampled_from(params), max_size=5)) if params else []:
        if opt.positional:
            if path == ("submit",):
                continue  # the job's command: only ever the harmless one below
            args += draw(st.lists(values(opt), min_size=1, max_size=2))
        elif opt.is_flag:
            args.append(draw(st.sampled_from(opt.opts)))
        else:
            args += [draw(st.sampled_from(opt.opts)), draw(values(opt))]
    # required options most of the time, so that examples get past argument parsing
    for opt in params:
        if opt.required and not opt.positional and draw(st.integers(0, 4)):
            args += [opt.opts[0], draw(values(opt))]
    if draw(st.integers(0, 9)) == 0:
        args.insert(draw(st.integers(0, len(args))), draw(st.sampled_from(["--bogus", "-Z"])))
    if path != ("submit",) and draw(st.integers(0, 9)) == 0:
        args.append(draw(junk))
    return args


env_values = {
    "db": st.sampled_from(["@db", "@dir", "@nodir", "@junk", "@missing"]),
    "config": st.sampled_from(["@toml", "@junk", "@missing", "@dir"]),
    "rm_url": urls,
    "standalone_url": urls,
    "cluster": st.sampled_from(["auto", "yarn", "standalone", "none", "mesos"]),
    "retries": st.sampled_from(["0", "1", "40", "-1", "x"]),
    "cluster_budget_s": st.sampled_from(["0.5", "2", "0", "inf", "x"]),
    "timeout_s": st.sampled_from(["0.5", "1e308", "inf", "x", "-1"]),
    "ca_bundle": paths,
}
env_names = [s.name for s in config.SETTINGS] + ["config"]


@st.composite
def environments(draw: st.DrawFn) -> dict[str, str]:
    if draw(st.booleans()):
        return {}
    chosen = draw(st.lists(st.sampled_from(env_names), max_size=3, unique=True))
    env = {}
    for name in chosen:
        generic = st.one_of(ints, floats, junk, st.sampled_from(["true", "off", "point", "none"]))
        env[f"COBELL_{name.upper()}"] = draw(env_values.get(name, generic))
    return env


@settings(max_examples=EXAMPLES or 300, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_command_arguments_and_environment_end_cleanly(template: Path, data: Any) -> None:
    path = data.draw(st.sampled_from([p for p in RUNNABLE if p != ("submit",)]), label="command")
    args = data.draw(argument_lists(path), label="args")
    env = data.draw(environments(), label="env")
    with workspace(template) as space:
        full_env = {k: space.token(v) for k, v in {**base_env(space), **env}.items()}
        argv = [*path, *(space.token(a) for a in args)]
        result = run_in_process(argv, full_env, cwd=space.root)
        assert_well_behaved(result.exit_code, result.stdout, result.stderr, (argv, env))


@settings(max_examples=EXAMPLES or 20, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_submit_with_any_arguments_runs_only_its_harmless_command(template: Path, data: Any):
    args = data.draw(argument_lists(("submit",)), label="args")
    env = data.draw(environments(), label="env")
    job = data.draw(st.sampled_from([["true", "{scale_out}"], ["false", "{scale_out}"]]))
    # most runs get past the (closed) cluster, so that the job really runs and is recorded
    args += data.draw(st.sampled_from([[], ["--cluster", "none"], ["--allow-no-cluster"]] * 2))
    with workspace(template) as space:
        full_env = {
            **os.environ,
            **{k: space.token(v) for k, v in {**base_env(space), **env}.items()},
        }
        argv = [sys.executable, "-m", "cobell_cli", "submit"]
        argv += [*(space.token(a) for a in args), "--", *job]
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            env=full_env,
            timeout=CALL_LIMIT_S,
            check=False,
            cwd=space.root,
        )
        assert_well_behaved(proc.returncode, proc.stdout, proc.stderr, (argv, env))


@pytest.mark.parametrize("path", sorted(SPARK_STARTERS), ids=" ".join)
def test_commands_that_start_spark_answer_help(path: tuple[str, ...]) -> None:
    result = run_in_process([*path, "--help"], env={})
    assert result.exit_code == 0 and "Usage" in result.stdout


def test_every_command_is_covered() -> None:
    assert set(RUNNABLE) | SPARK_STARTERS == set(COMMANDS)
    assert ("history", "import") in COMMANDS and ("submit",) in COMMANDS


# -- what the properties found, kept as plain examples --------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["history", "show", "10" * 16], "no run with id"),
        (["history", "rm", "10" * 16, "--yes"], "no run with id"),
        (["model", "eval", "-j", "sgd", "-p", "sparse3", "--seed", "-1"], "--seed"),
        (["history", "import", "--from-spark-history", "http://[::1"], "not a valid URL"),
        (["history", "import", "--from-yarn", "--timeline-url", "http://h:99999"], "Port out of"),
        (["predict", "-j", "sgd", "-t", "300", "--input-size", "1e30"], "below 8 EiB"),
        (["predict", "-j", "sgd", "-t", "300", "--input-size", "nan"], "below 8 EiB"),
    ],
    ids=["show-huge-id", "rm-huge-id", "negative-seed", "bad-ipv6-url", "bad-port", "size-1e30",
         "size-nan"],
)
def test_found_bugs_are_usage_errors(template: Path, args: list[str], expected: str) -> None:
    with workspace(template) as space:
        result = run_in_process(args, base_env(space), cwd=space.root)
    assert result.exit_code == 2, result.stderr
    assert expected in result.stderr
    assert_well_behaved(result.exit_code, result.stdout, result.stderr, args)


def test_a_limit_beyond_64_bits_lists_every_run(template: Path) -> None:
    with workspace(template) as space:
        result = run_in_process(
            ["history", "list", "-n", "10" * 16, "-f", "json"], base_env(space), cwd=space.root
        )
    assert result.exit_code == 0, result.stderr
    assert len(json.loads(result.stdout)) == sum(1 for _ in EXAMPLE.open()) - 1


@pytest.mark.parametrize("command", ["false", "3", '{"argv": []}'])
def test_an_imported_command_that_is_not_a_list_is_named(tmp_path: Path, command: str) -> None:
    source = tmp_path / "runs.json"
    source.write_text(f'[{{"job": "a", "status": "failed", "command": {command}}}]')
    result = cobell("--db", tmp_path / "h.db", "history", "import", source)
    assert result.exit_code == 2
    assert f"{source}: record 1: command: expected a list of arguments" in result.stderr


def test_an_unrecognised_file_is_named_once(tmp_path: Path) -> None:
    source = tmp_path / "runs.csv"
    source.write_text("a,b\n1,2\n")
    result = cobell("--db", tmp_path / "h.db", "history", "import", source)
    assert result.exit_code == 2 and result.stderr.count(str(source)) == 1
    piped = cobell("--db", tmp_path / "h.db", "history", "import", "-", input="a,b\n")
    assert "cobell: error: <stdin>: line 1: unrecognised header" in piped.stderr


def test_a_plot_of_an_exotic_name_prints_no_python_warning(tmp_path: Path) -> None:
    require_extra("matplotlib", reason="model plot needs the plot extra")
    # Characters the default font has no glyph for (a control character is no job name since
    # issue 35: --job refuses it with one line, tested in tests/test_job_name.py)
    name = "\u30b8\u30e7\u30d6-\U0001f600"
    source = tmp_path / "runs.csv"
    source.write_text("Nodes,Runtime\n4,100\n8,60\n16,40\n")
    db = tmp_path / "h.db"
    assert cobell("--db", db, "history", "import", source, "--job", "a").exit_code == 0
    with sqlite3.connect(db) as conn:  # no job name today (core/job_name.py): an older history's
        conn.execute("UPDATE runs SET job = ?", (name,))
    proc = subprocess.run(
        [sys.executable, "-m", "cobell_cli", "--db", str(db), "model", "plot", "--job", name,
         "-o", str(tmp_path / "p.png")],
        capture_output=True, text=True, timeout=CALL_LIMIT_S, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines() == [f"wrote {tmp_path / 'p.png'}"]
