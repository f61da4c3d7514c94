"""Shared fixtures: an isolated environment per test (no user config, no user history)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from hypothesis import settings

from bench import BELL_DATA_ENV, bell_data

# CI must be reproducible: the same examples every run (a failure found locally is kept in the
# example database; CI replays none), and no per-example deadline on a shared, loaded machine.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

# A test run started in the background by a script (`cmd &` without job control) inherits
# SIGINT ignored, and an ignored signal stays ignored across exec: every cobell and job the
# signal tests start would then ignore the SIGINT they send, as they should under such a shell.
# The tests are about a terminal's Ctrl-C, so their processes start with the default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

pytest_plugins = ("tests.yarn_standin", "tests.spark_support", "tests.yarn_support")

# The JVMs the tests start from here (spark-submit and client-mode drivers, the local Spark
# cluster's daemons and the executors they fork, the local YARN's daemons and, through its
# spark-defaults.conf, its containers: tests/yarn_support.py) compile with C1 only. A JVM that
# lives a minute spends much of its CPU in C2 compiling code it will not run long enough to
# repay. On 2 cores (2026-11-29): test_submit_spark.py and test_memory_spark.py took 418 CPU-s
# and 242 s without it, 265 CPU-s and 194 s with it; the suite under `pytest -n auto` 1788 s
# before, 1392 s after it and 2fcf7ae together (2fcf7ae took a 226 s search off the other
# worker), 1245 s once the YARN containers had it too. The tier changes speed, not what the
# tests check: heap sizes, GC and every Spark setting stay the JVM's and Spark's own. A user's
# own JAVA_TOOL_OPTIONS is kept, the flag appended once (xdist's workers inherit it).
JIT_FOR_TESTS = "-XX:TieredStopAtLevel=1"
_java_options = os.environ.get("JAVA_TOOL_OPTIONS", "")
if JIT_FOR_TESTS not in _java_options.split():
    os.environ["JAVA_TOOL_OPTIONS"] = f"{_java_options} {JIT_FOR_TESTS}".strip()

# The environment as the session started (isolated_env drops COBELL_* from each test's).
_ENV_AT_IMPORT = dict(os.environ)
# ../shared beside the checkout or one of its parents (a worktree under /work/wt/NAME finds
# /work/shared as /work/main does); the Bell data may live elsewhere: $COBELL_BELL_DATA.
SHARED = next((p / "shared" for p in Path(__file__).resolve().parents[1:]
               if (p / "shared").is_dir()), Path(__file__).resolve().parents[2] / "shared")
BELL_DIR = bell_data(_ENV_AT_IMPORT)
YARN_FIXTURES = SHARED / "fixtures" / "yarn"


def require_shared(path: Path, what: str) -> Path:
    """`path`, or skip saying why where it is absent; under CI (`CI` set, as .ci/run does)
    fail instead: the real data is there on the machine CI runs on, so a skip would hide
    the tests that need it (the real-YARN tests' rule, tests/yarn_support.py)."""
    if path.is_dir():
        return path
    reason = f"{what} not found at {path} (../shared is absent)"
    if _ENV_AT_IMPORT.get("CI"):
        pytest.fail(f"CI must run the tests on the {what}, but: {reason}"
                    f" (set {BELL_DATA_ENV} or put ../shared beside the checkout)")
    pytest.skip(reason)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point XDG dirs into tmp and drop COBELL_* so the user's setup never leaks into tests."""
    for key in list(os.environ):
        if key.startswith("COBELL_") or key in {"YARN_CONF_DIR", "HADOOP_CONF_DIR"}:
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    return tmp_path


@pytest.fixture
def bell_dir() -> Path:
    return require_shared(BELL_DIR, "real runtime data")


@pytest.fixture
def yarn_fixtures() -> Path:
    return require_shared(YARN_FIXTURES, "YARN REST fixtures")


# The test files with tests on a real Spark or YARN cluster (marker `spark` or `yarn`, or the
# `local_spark` / `real_yarn` fixtures). Under pytest-xdist (`-n`, the README's test command)
# each file here runs in one worker, together: the session's clusters then start once and their
# JVMs never compete with a second set; every other test spreads over the workers.
CLUSTER_FILES = frozenset(f"tests/{name}.py" for name in (
    "test_import_spark_history", "test_learn_co_runners_spark", "test_local_cluster",
    "test_memory_spark", "test_progress_reader", "test_real_yarn_cluster",
    "test_real_yarn_interrupt", "test_real_yarn_labels", "test_real_yarn_oom",
    "test_real_yarn_spark",
    "test_submit_eventlog", "test_submit_spark",
))  # fmt: skip
CLUSTER_FIXTURES = frozenset({"local_spark", "real_yarn"})


def _test_file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test on a real cluster outside CLUSTER_FILES would start a second cluster under xdist:
    name its file there."""
    for item in items:
        marked = item.get_closest_marker("spark") or item.get_closest_marker("yarn")
        on_cluster = marked or CLUSTER_FIXTURES & set(getattr(item, "fixturenames", ()))
        path = _test_file(item.nodeid)
        if on_cluster and path not in CLUSTER_FILES:
            raise pytest.UsageError(f"{item.nodeid} runs on a real cluster: add {path} to "
                                    "CLUSTER_FILES in tests/conftest.py")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Every test of CLUSTER_FILES is one unit of work (one worker); every other test its own.
    (xdist's `--dist loadgroup` marks cannot do it: pytest 9 ignores the node id suffix xdist
    3.8 sets for a group.)"""
    from xdist.scheduler import LoadScopeScheduling

    class RealClustersTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "real-clusters" if _test_file(nodeid) in CLUSTER_FILES else nodeid

    return RealClustersTogether(config, log)
