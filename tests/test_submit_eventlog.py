"""`cobell submit` turns on Spark event logging, reads the run's log afterwards and stores its
profile (issue 14, item 2): the command it builds, finding a log by application id, and the
whole path through real processes. The real Spark runs are at the end of the file."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from cobell_cli.run import event_capture
from cobell_cli.run.launch import event_log_settings, inject, local_directory
from tests.cli_support import cobell_process
from tests.extras import require_extra
from tests.test_import_yarn import rows

PY = sys.executable
LOGS = Path(__file__).parent / "data" / "eventlogs" / "logs"
ETL_LOG = LOGS / "app-20261122233927-0000.zstd"  # a real run's single-file zstd log
ETL_APP = "app-20261122233927-0000"
STANDALONE = ["spark-submit", "--master", "spark://h:7077"]


def confs(argv: list[str]) -> dict[str, str]:
    return dict(argv[i + 1].split("=", 1) for i, tok in enumerate(argv) if tok == "--conf")


def prepared(argv: list[str], log_dir: Path | None, **kw) -> event_capture.Injection:
    return event_capture.prepare(inject(argv, 2, "etl"), log_dir, env={}, **kw)


# --- the command ---------------------------------------------------------------------------


def test_spark_commands_log_into_cobells_directory(tmp_path: Path) -> None:
    for argv in ([*STANDALONE, "app.py", "--x", "1"], ["spark-submit", "--master", "yarn", "a.py"]):
        inj = prepared(argv, tmp_path / "logs")
        app = argv.index(argv[-1] if argv[-1].endswith(".py") else "app.py")
        assert inj.argv[-(len(argv) - app) :] == argv[app:]  # the app and its arguments untouched
        got = confs(inj.argv[: inj.argv.index(argv[app])])
        assert got["spark.eventLog.enabled"] == "true"
        assert got["spark.eventLog.dir"] == (tmp_path / "logs").as_uri()
        assert inj.warnings == []
    assert (tmp_path / "logs").is_dir()  # Spark refuses to start without it


def test_what_cobell_leaves_alone(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    user = [*STANDALONE, "--conf", "spark.eventLog.dir=hdfs:///shared", "app.py"]
    assert "spark.eventLog.enabled" not in confs(prepared(user, logs).argv)
    java_opts = [*STANDALONE, "--driver-java-options", "-Dspark.eventLog.enabled=true", "a.py"]
    assert "spark.eventLog.dir" not in confs(prepared(java_opts, logs).argv)
    off = prepared([*STANDALONE, "app.py"], None)
    assert "spark.eventLog.enabled" not in confs(off.argv)
    placeholder = prepared(["spark-submit", "--master", "local[{scale_out}]", "a.py"], logs)
    assert "--conf" not in placeholder.argv
    flink = prepared(["flink", "run", "job.jar"], logs)
    assert not any("eventLog" in tok for tok in flink.argv)
    assert not logs.exists()
    cluster = prepared(
        ["spark-submit", "--master", "yarn", "--deploy-mode", "cluster", "a.py"], logs
    )
    assert "spark.eventLog.enabled" not in confs(cluster.argv)
    (note,) = cluster.warnings
    assert "--deploy-mode cluster" in note and "event log not captured" in note
    dry = prepared([*STANDALONE, "app.py"], logs, create=False)
    assert confs(dry.argv)["spark.eventLog.enabled"] == "true" and not logs.exists()


def test_the_properties_file_spark_submit_reads_counts_as_the_users(tmp_path: Path) -> None:
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text(
        "# cluster defaults\nspark.eventLog.enabled   true\nspark.eventLog.dir: file:///var/ev\n"
        "spark.executor.memory=2g\n"
    )
    argv = inject([*STANDALONE, "app.py"], 2, "etl").argv
    env = {"SPARK_CONF_DIR": str(conf_dir)}
    inherited = event_capture.inherited_properties(argv, env)
    assert inherited == {"spark.eventLog.enabled": "true", "spark.eventLog.dir": "file:///var/ev"}
    kept = event_capture.prepare(inject([*STANDALONE, "a.py"], 2, "e"), tmp_path / "l", env=env)
    assert "spark.eventLog.dir" not in confs(kept.argv)
    state = event_log_settings(argv, inherited)
    assert state.user_set and state.enabled and local_directory(state.directory) == "/var/ev"
    # SPARK_HOME/conf, an `env` prefix, and --properties-file (which replaces the defaults)
    home = {"SPARK_HOME": str(tmp_path)}
    assert event_capture.inherited_properties(argv, home) == inherited
    prefixed = ["env", f"SPARK_CONF_DIR={conf_dir}", *argv]
    assert event_capture.inherited_properties(prefixed, {}) == inherited
    own = tmp_path / "mine.properties"
    own.write_text("spark.eventLog.enabled=false\n")
    with_file = [*STANDALONE, "--properties-file", str(own), "app.py"]
    assert event_capture.inherited_properties(with_file, env) == {"spark.eventLog.enabled": "false"}


def test_local_directories() -> None:
    assert local_directory("file:///var/spark-events") == "/var/spark-events"
    assert local_directory("file:/var/spark%20events") == "/var/spark events"
    assert local_directory("/tmp/spark-events") == "/tmp/spark-events"
    assert local_directory("hdfs://nn:8020/spark-events") is None
    assert local_directory("s3a://bucket/logs") is None
    assert local_directory("file://otherhost/x") is None


# --- finding a run's log --------------------------------------------------------------------


def test_find_log_by_application_id(tmp_path: Path) -> None:
    app = "application_1700000000000_0042"
    for name in [
        f"{app}.zstd.inprogress",  # an earlier, crashed attempt of ...
        f"{app}_1.lz4",
        f"{app}_2.zstd",  # ... the latest attempt
        "application_1700000000000_00421",  # another app whose id starts the same
        "app-20990101000000-0001",
    ]:
        (tmp_path / name).write_text("{}")
    assert event_capture.find_log(tmp_path, app) == tmp_path / f"{app}_2.zstd"
    assert event_capture.find_log(tmp_path, "application_9_9") is None
    rolling = tmp_path / "eventlog_v2_app-20990101000000-0002"
    rolling.mkdir()
    (rolling / "events_1_app-20990101000000-0002.zstd").write_text("{}")
    (rolling / "appstatus_app-20990101000000-0002").write_text("")
    assert event_capture.find_log(tmp_path, "app-20990101000000-0002") == rolling
    assert event_capture.find_log(tmp_path, "app-20990101000000-0001").name.endswith("0001")
    assert event_capture.find_log(tmp_path / "missing", app) is None
    assert event_capture.spark_log_name("a b:c/d.e") == "a-b-c-d_e"


# --- through real processes (a stand-in spark-submit that writes a real run's log) ---------

FAKE_SPARK_SUBMIT = """\
#!{python}
# A stand-in for spark-submit on a standalone master: prints the app id the real client
# prints, writes the event log given in FAKE_LOG (a real run's) where a local spark.eventLog.dir
# says,
# and exits with FAKE_EXIT.
import os, shutil, sys
app = os.environ["FAKE_APP"]
print(f"INFO StandaloneSchedulerBackend: Connected to Spark cluster with app ID {{app}}",
      file=sys.stderr, flush=True)
dirs = [a.split("=", 1)[1] for a in sys.argv if a.startswith("spark.eventLog.dir=")]
target = dirs[-1].removeprefix("file://") if dirs else ""
if os.environ.get("FAKE_LOG") and target and "://" not in target:
    name = app + os.environ.get("FAKE_SUFFIX", ".zstd")
    shutil.copyfile(os.environ["FAKE_LOG"], os.path.join(target, name))
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
"""


@pytest.fixture
def fake_spark(tmp_path: Path) -> Path:
    require_extra("zstandard", reason="the recorded logs are zstd: needs the eventlog extra")
    fake = tmp_path / "bin" / "spark-submit"
    fake.parent.mkdir()
    fake.write_text(FAKE_SPARK_SUBMIT.format(python=PY))
    fake.chmod(0o755)
    return fake


def submit(db: Path, fake: Path, *extra: str, env: dict[str, str], conf: tuple = (), cwd=None):
    """`cobell submit` of job etl through the stand-in spark-submit, as a process."""
    import os
    import subprocess

    argv = [
        PY, "-m", "cobell_cli", "--db", str(db), "submit", "-j", "etl", "-t", "60",
        "--cluster", "none", "--json", *extra, "--", str(fake), "--master",
        "spark://127.0.0.1:7077", *conf, "app.py",
    ]  # fmt: skip
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        env={**os.environ, "FAKE_APP": ETL_APP, **env},
        cwd=cwd,
        timeout=120,
    )


def test_a_run_leaves_its_log_and_profile(tmp_path: Path, fake_spark: Path) -> None:
    db = tmp_path / "h.db"
    proc = submit(db, fake_spark, env={"FAKE_LOG": str(ETL_LOG)})
    assert proc.returncode == 0, proc.stderr
    assert "event log" not in proc.stderr
    (run,) = rows(db, "SELECT * FROM runs")
    assert run["app_id"] == ETL_APP
    assert Path(run["event_log"]) == tmp_path / "event-logs" / f"{ETL_APP}.zstd"
    assert "spark.eventLog.enabled=true" in run["command"]
    (profile,) = rows(db, "SELECT * FROM run_profiles")
    from cobell_cli.core.profile import PROFILE_FORMAT

    assert profile["run_id"] == run["id"] and profile["format"] == PROFILE_FORMAT
    summary = json.loads(profile["summary"])
    assert summary["app_id"] == ETL_APP and summary["scale_out"] == 2 and summary["stages"]
    from cobell_cli.core.profile import AppProfile

    assert AppProfile.from_dict(summary).scale_out == 2  # what the what-if reads back


def test_a_broken_log_is_one_warning_and_the_exit_code_stands(
    tmp_path: Path, fake_spark: Path
) -> None:
    db = tmp_path / "h.db"
    torn = tmp_path / "torn.zstd"
    torn.write_bytes(ETL_LOG.read_bytes()[:5000])
    proc = submit(db, fake_spark, env={"FAKE_LOG": str(torn), "FAKE_EXIT": "3"})
    assert proc.returncode == 3
    lines = [line for line in proc.stderr.splitlines() if "event log" in line]
    assert len(lines) == 1 and "event log not read" in lines[0] and "truncated" in lines[0]
    assert "Traceback" not in proc.stderr
    (run,) = rows(db, "SELECT status, exit_code, event_log FROM runs")
    assert tuple(run) == ("failed", 3, None)
    assert rows(db, "SELECT count(*) FROM run_profiles")[0][0] == 0
    missing = submit(db, fake_spark, env={"FAKE_APP": "app-20990101000000-0009"})
    assert missing.returncode == 0 and "no log of app-20990101000000-0009" in missing.stderr


def test_off_and_the_users_own_directory(tmp_path: Path, fake_spark: Path) -> None:
    db = tmp_path / "h.db"
    env = {"FAKE_LOG": str(ETL_LOG)}
    off = submit(db, fake_spark, "--event-log-dir", "off", env=env, cwd=tmp_path)
    assert off.returncode == 0 and not (tmp_path / "event-logs").exists()
    assert not list(tmp_path.glob("app-*"))  # no log written anywhere
    assert "eventLog" not in rows(db, "SELECT command FROM runs")[0][0]
    user = tmp_path / "user-logs"
    user.mkdir()
    conf = ("--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir={user}")
    mine = submit(db, fake_spark, env=env, conf=conf)
    assert mine.returncode == 0, mine.stderr
    assert not (tmp_path / "event-logs").exists()
    run = rows(db, "SELECT * FROM runs ORDER BY id DESC")[0]
    assert run["event_log"] == str(user / f"{ETL_APP}.zstd")
    assert rows(db, "SELECT run_id FROM run_profiles")[0][0] == run["id"]
    remote = ("--conf", "spark.eventLog.enabled=true", "--conf", "spark.eventLog.dir=hdfs:///ev")
    far = submit(db, fake_spark, env=env, conf=remote)
    assert far.returncode == 0 and "hdfs:///ev is not a local path" in far.stderr
    custom = submit(db, fake_spark, "--event-log-dir", str(tmp_path / "mine"), env=env)
    assert custom.returncode == 0 and (tmp_path / "mine" / f"{ETL_APP}.zstd").exists()
    bad = submit(db, fake_spark, "--event-log-dir", "hdfs:///x", env=env)
    assert bad.returncode == 2 and "event_log_dir" in bad.stderr and "--event-log-dir" in bad.stderr


def test_the_setting_from_env_and_file(tmp_path: Path) -> None:
    from cobell_cli import config

    env = {"HOME": str(tmp_path)}
    default = config.load({}, env=env)  # next to the default history (XDG data dir, conftest)
    assert default.event_log_path == tmp_path / "xdg-data" / "cobell" / "event-logs"
    assert config.load({"db": str(tmp_path / "h.db")}, env=env).event_log_path == (
        tmp_path / "event-logs"
    )
    assert config.load({}, env={**env, "COBELL_EVENT_LOG_DIR": "off"}).event_log_path is None
    file = tmp_path / "c.toml"
    file.write_text('event_log_dir = "file:///srv/logs"\n')
    assert config.load({}, file, env=env).event_log_path == Path("/srv/logs")
    from cobell_cli.errors import ConfigError

    with pytest.raises(ConfigError, match=r"event_log_dir .*local directory"):
        config.load({}, env={**env, "COBELL_EVENT_LOG_DIR": "s3a://b/x"})


# --- real Spark: `flock /tmp/cobell-spark.lock .venv/bin/python -m pytest -m spark ...` ------


READ_JOB = """
import sys, time
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
lines = spark.sparkContext.textFile(sys.argv[1], 4)
print(lines.map(lambda l: (len(l) % 7, 1)).reduceByKey(lambda a, b: a + b).count())
spark.stop()
"""


def spark_submit(db: Path, spark, job: Path, *args: str, conf: tuple = ()) -> dict:
    """A real `cobell submit` of a small PySpark job at scale-out 1 on the local cluster."""
    import subprocess

    from tests.spark_support import driver_env

    argv = [
        PY, "-m", "cobell_cli", "--db", str(db), "submit", "-j", "small", "-t", "300",
        "--min-scale-out", "1", "--max-scale-out", "1", "--cluster", "none", "--json", "--",
        str(spark.spark_submit), "--master", spark.master_url, *conf, str(job), *args,
    ]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, env=driver_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "event log not read" not in proc.stderr, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.spark
def test_a_real_submit_leaves_an_event_log_and_a_profile(local_spark, tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    job, data = tmp_path / "read.py", tmp_path / "input.txt"
    job.write_text(READ_JOB)
    data.write_text("".join(f"line {k} of the input, padded to be longer\n" for k in range(60_000)))
    outcome = spark_submit(db, local_spark, job, str(data))
    app_id = outcome["app_id"]
    assert app_id.startswith("app-")
    (run,) = rows(db, "SELECT * FROM runs")
    log = Path(run["event_log"])
    assert log.parent == tmp_path / "event-logs" and app_id in log.name and log.exists()
    (profile,) = rows(db, "SELECT * FROM run_profiles")
    summary = json.loads(profile["summary"])
    assert profile["run_id"] == run["id"] and summary["app_id"] == app_id
    assert summary["scale_out"] == 1 and summary["cores_per_executor"] == 1
    assert sum(len(s["task_s"]) for s in summary["stages"]) >= 8  # 4 read + 4 reduce tasks
    assert summary["end_ms"] is not None and 0 < summary["runtime_s"] <= run["runtime_s"]
    # the input is what the first stage read: the file, and a little more, since each of the
    # 4 splits reads on past its end, in Hadoop's 64 KiB buffers, to finish its last line
    size = data.stat().st_size
    assert size <= summary["input_bytes"] <= size + 4 * 2 * 64 * 1024
    # the same log, imported as a run of its own: the same figures from the other fold
    imported = cobell_process(
        "--db", tmp_path / "other.db", "history", "import", "--from-event-logs",
        tmp_path / "event-logs", "--json",
    )  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    (again,) = rows(tmp_path / "other.db", "SELECT * FROM runs")
    assert again["app_id"] == app_id and again["job"] == "small" and again["scale_out"] == 1
    assert again["input_bytes"] == summary["input_bytes"]


@pytest.mark.spark
def test_a_real_submit_respects_the_users_event_log_dir(local_spark, tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    user = tmp_path / "user-events"
    user.mkdir()
    conf = ("--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir={user}")
    import cobell_cli.examples as examples

    job = Path(examples.__file__).parent / "scaling_job.py"
    outcome = spark_submit(db, local_spark, job, "--tasks", "2", "--task-s", "0.2", conf=conf)
    assert not (tmp_path / "event-logs").exists()
    (run,) = rows(db, "SELECT * FROM runs")
    assert run["command"].count("spark.eventLog.dir") == 1
    log = Path(run["event_log"])
    assert log.parent == user and outcome["app_id"] in log.name
    assert (
        json.loads(rows(db, "SELECT summary FROM run_profiles")[0][0])["app_id"]
        == (outcome["app_id"])
    )


def test_strict_with_no_feasible_scale_out_creates_no_event_log_directory(tmp_path: Path) -> None:
    """`submit --strict` exited 3 "nothing was started" but had created the event-log
    directory: nothing is created for a job that does not start."""
    db, logs = tmp_path / "h.db", tmp_path / "event-logs"
    example = Path(__file__).parents[1] / "history" / "example.csv"
    assert cobell_process("--db", db, "history", "import", example).returncode == 0
    fake = tmp_path / "bin" / "spark-submit"  # never run: the plan stops first
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    path = f"{fake.parent}:{os.environ.get('PATH', '')}"
    proc = cobell_process(
        "--db", db, "submit", "-j", "sgd", "-t", "1", "--cluster", "none", "--strict",
        "--event-log-dir", logs, "--", *STANDALONE, "app.py", env={"PATH": path},
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert "nothing was started" in proc.stderr
    assert not logs.exists()
