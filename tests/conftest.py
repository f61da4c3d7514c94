"""Shared fixtures: an isolated environment per test (no user config, no user history)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from hypothesis import settings

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

SHARED = Path(__file__).resolve().parents[2] / "shared"
BELL_DIR = SHARED / "data" / "bell"
YARN_FIXTURES = SHARED / "fixtures" / "yarn"


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
    if not BELL_DIR.is_dir():
        pytest.skip(f"real runtime data not found at {BELL_DIR} (../shared/data/bell is absent)")
    return BELL_DIR


@pytest.fixture
def yarn_fixtures() -> Path:
    if not YARN_FIXTURES.is_dir():
        pytest.skip(f"YARN REST fixtures not found at {YARN_FIXTURES} (../shared is absent)")
    return YARN_FIXTURES


CLUSTER_FIXTURES = {"local_spark", "real_yarn"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist's `--dist loadgroup` (the README's test command), every test on a real
    cluster runs in one worker: the session's Spark and YARN clusters then start once, and
    their JVMs never compete with a second set. The other tests spread over the workers."""
    for item in items:
        marked = item.get_closest_marker("spark") or item.get_closest_marker("yarn")
        if marked or CLUSTER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group("real-clusters"))
