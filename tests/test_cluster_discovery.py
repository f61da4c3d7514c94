"""Which cluster `connect` asks when nothing names one: the running local clusters of `cobell
local-cluster start` (issue 35), after everything a person configured. The local finder is
the seam here; tests/test_real_yarn_cluster.py finds the real local YARN through the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from cobell_cli import config
from cobell_cli.cluster import connect
from cobell_cli.errors import ConfigError

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
