"""Which cluster `connect` asks when nothing names one: the running local clusters of `cobell
local-cluster start` (issue 35), after everything a person configured. The local finder is
the seam here; tests/test_real_yarn_cluster.py finds the real local YARN through the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cobell_cli import config
from cobell_cli.cluster import connect
from cobell_cli.errors import ConfigError
from cobell_cli.run import local_found

SITE = """<configuration>
<property><name>yarn.resourcemanager.webapp.address</name><value>127.0.0.1:18088</value>
</property></configuration>"""


@pytest.fixture
def local_site(tmp_path: Path) -> Path:
    site = tmp_path / "local-yarn" / "conf" / "yarn-site.xml"
    site.parent.mkdir(parents=True)
    site.write_text(SITE)
    return site


def _connect(kind: str, running: dict[str, str | None], **flags):
    asked: list[str] = []

    def local(which: str) -> str | None:
        asked.append(which)
        return running.get(which)

    settings = config.load({"cluster": kind, **flags})  # isolated_env: no user config
    cluster = connect(settings, env={}, yarn_conf_default=Path("/nonexistent"), local=local)
    return cluster, asked


@pytest.mark.parametrize("kind", ["yarn", "auto"])
def test_a_running_local_yarn_is_found_when_nothing_is_configured(kind, local_site) -> None:
    cluster, _ = _connect(kind, {"yarn": str(local_site), "standalone": "http://127.0.0.1:8080"})
    assert cluster.name == "yarn" and cluster.rm_urls == ["http://127.0.0.1:18088"]
    assert cluster.source == f"the local YARN of `cobell local-cluster start --yarn` ({local_site})"


@pytest.mark.parametrize("kind", ["standalone", "auto"])
def test_a_running_local_standalone_master_is_found_when_nothing_is_configured(kind) -> None:
    cluster, _ = _connect(kind, {"standalone": "http://127.0.0.1:8080"})
    assert cluster.name == "standalone" and cluster.master_urls == ["http://127.0.0.1:8080"]
    assert cluster.source == "the local master of `cobell local-cluster start`"


def test_what_a_person_configured_wins_and_the_local_clusters_are_not_asked(local_site) -> None:
    cluster, asked = _connect("auto", {"yarn": str(local_site)},
                              standalone_url="http://master:8080")
    assert cluster.name == "standalone" and cluster.source == "--standalone-url"
    assert asked == []
    cluster, asked = _connect("yarn", {"yarn": str(local_site)}, rm_url="http://rm:8088")
    assert cluster.rm_urls == ["http://rm:8088"] and cluster.source == "--rm-url"
    assert asked == []


def test_nothing_running_is_no_cluster_or_an_error_naming_the_local_cluster() -> None:
    cluster, asked = _connect("auto", {})
    assert cluster.name == "none" and "running local cluster" in cluster.describe()
    assert asked == ["yarn", "standalone"]
    for kind, start in (("yarn", "cobell local-cluster start --yarn"),
                        ("standalone", "cobell local-cluster start`")):
        with pytest.raises(ConfigError) as error:
            _connect(kind, {})
        assert start in error.value.line()


# -- the finder itself: the local clusters' own files and a real process per pid file ---------


@pytest.fixture
def process(tmp_path: Path):
    """Start a real process whose command line holds the given marks; killed at the end."""
    started: list[subprocess.Popen] = []

    def start(*marks: str) -> int:
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *marks])
        started.append(proc)
        # Between fork and exec the child's command line is still pytest's: wait for the exec,
        # so that the premise (a process whose command line holds the marks) is certain.
        cmdline = Path(f"/proc/{proc.pid}/cmdline")
        deadline = time.monotonic() + 30
        while not all(m.encode() in cmdline.read_bytes() for m in marks):
            assert time.monotonic() < deadline, f"process {proc.pid} never showed {marks}"
            time.sleep(0.01)
        return proc.pid

    yield start
    for proc in started:
        proc.kill()
        proc.wait()


def test_a_running_local_yarn_is_found_by_its_files_and_its_process(tmp_path: Path,
                                                                    process) -> None:
    base = tmp_path / local_found.YARN_DIR
    site = base / "conf" / "yarn-site.xml"
    site.parent.mkdir(parents=True)
    site.write_text(SITE)
    (base / "yarn.pid").write_text(f"{process(local_found.YARN_LAUNCHER, str(base))}\n")
    assert local_found.running_yarn_site(tmp_path) is None  # not ready yet
    (base / "ready.json").write_text('{"webapp": "127.0.0.1:18088"}')
    assert local_found.running_yarn_site(tmp_path) == site
    (base / "yarn.pid").write_text(f"{process('something-else')}\n")  # a recycled pid
    assert local_found.running_yarn_site(tmp_path) is None
    (base / "yarn.pid").write_text(f"{2**22 + 11}\n")  # no such process
    assert local_found.running_yarn_site(tmp_path) is None


def test_a_running_local_master_is_found_by_its_files_and_its_process(tmp_path: Path,
                                                                      process) -> None:
    base = tmp_path / local_found.STANDALONE_DIR
    base.mkdir()
    (base / "master.pid").write_text(f"{process(local_found.MASTER_CLASS)}\n")
    assert local_found.running_master_webui(tmp_path) is None  # never started: no shape
    (base / "cluster.json").write_text(json.dumps({"shape": {"webui_port": 18080}}))
    assert local_found.running_master_webui(tmp_path) == "http://127.0.0.1:18080"
    (base / "master.pid").unlink()
    assert local_found.running_master_webui(tmp_path) is None
