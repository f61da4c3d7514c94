"""RM discovery from real yarn-site.xml files written into tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from cobell_cli import config
from cobell_cli.cluster import connect
from cobell_cli.cluster.yarn import YarnCluster
from cobell_cli.cluster.yarnconf import discover_rm_urls, expand, find_yarn_site, rm_web_urls
from cobell_cli.errors import ConfigError


def write_site(directory: Path, props: dict[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    body = "".join(
        f"  <property>\n    <name>{k}</name>\n    <value>{v}</value>\n  </property>\n"
        for k, v in props.items()
    )
    path = directory / "yarn-site.xml"
    path.write_text(f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n')
    return path


def test_search_order_yarn_conf_dir_then_hadoop_conf_dir_then_default(tmp_path: Path) -> None:
    yarn_dir, hadoop_dir, default = tmp_path / "y", tmp_path / "h", tmp_path / "etc"
    write_site(default, {"yarn.resourcemanager.hostname": "from-default"})
    env: dict[str, str] = {"YARN_CONF_DIR": str(yarn_dir), "HADOOP_CONF_DIR": str(hadoop_dir)}
    assert find_yarn_site(env, default) == default / "yarn-site.xml"
    write_site(hadoop_dir, {"yarn.resourcemanager.hostname": "from-hadoop"})
    assert find_yarn_site(env, default) == hadoop_dir / "yarn-site.xml"
    write_site(yarn_dir, {"yarn.resourcemanager.hostname": "from-yarn"})
    assert discover_rm_urls(env, default) == (
        ["http://from-yarn:8088"],
        yarn_dir / "yarn-site.xml",
    )
    assert find_yarn_site({}, tmp_path / "nowhere") is None


def test_webapp_address_wins_over_hostname() -> None:
    props = {
        "yarn.resourcemanager.hostname": "rm.example",
        "yarn.resourcemanager.webapp.address": "rm-web.example:18088",
    }
    assert rm_web_urls(props, {}) == ["http://rm-web.example:18088"]


def test_hadoop_default_host_is_asked_as_localhost() -> None:
    assert rm_web_urls({}, {}) == ["http://localhost:8088"]


def test_variables_expand_from_properties_and_environment() -> None:
    props = {
        "cluster.domain": "prod.example",
        "yarn.resourcemanager.hostname": "rm.${cluster.domain}",
        "yarn.resourcemanager.webapp.address": "${yarn.resourcemanager.hostname}:${RM_PORT}",
    }
    assert rm_web_urls(props, {"RM_PORT": "9088"}) == ["http://rm.prod.example:9088"]
    assert expand("${env.HOME_DIR}/x", {}, {"HOME_DIR": "/h"}) == "/h/x"
    assert expand("${undefined}", {}, {}) == "${undefined}"
    assert expand("${a}", {"a": "${a}"}, {}) == "${a}"  # a cycle ends, not hangs


def test_ha_rm_ids_with_per_id_webapp_addresses(tmp_path: Path) -> None:
    write_site(
        tmp_path,
        {
            "yarn.resourcemanager.ha.enabled": "true",
            "yarn.resourcemanager.ha.rm-ids": "rm1, rm2,rm3",
            "yarn.resourcemanager.webapp.address.rm1": "master1:8088",
            "yarn.resourcemanager.hostname.rm2": "master2",
            "yarn.resourcemanager.hostname.rm3": "master3",
            "yarn.resourcemanager.webapp.address.rm3": "${yarn.resourcemanager.hostname.rm3}:9999",
        },
    )
    urls, _ = discover_rm_urls({"YARN_CONF_DIR": str(tmp_path)}, tmp_path / "none")
    assert urls == ["http://master1:8088", "http://master2:8088", "http://master3:9999"]


def test_https_only_uses_the_https_addresses() -> None:
    props = {
        "yarn.http.policy": "HTTPS_ONLY",
        "yarn.resourcemanager.ha.enabled": "true",
        "yarn.resourcemanager.ha.rm-ids": "a,b",
        "yarn.resourcemanager.webapp.address.a": "m1:8088",
        "yarn.resourcemanager.webapp.https.address.a": "m1:8443",
        "yarn.resourcemanager.hostname.b": "m2",
    }
    assert rm_web_urls(props, {}) == ["https://m1:8443", "https://m2:8090"]


def test_ha_without_addresses_is_a_config_error() -> None:
    props = {"yarn.resourcemanager.ha.enabled": "true", "yarn.resourcemanager.ha.rm-ids": "x"}
    with pytest.raises(ConfigError, match=r"hostname\.x"):
        rm_web_urls(props, {})
    with pytest.raises(ConfigError, match="rm-ids is empty"):
        rm_web_urls({"yarn.resourcemanager.ha.enabled": "true"}, {})


def test_broken_xml_is_a_config_error_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "yarn-site.xml").write_text("<configuration><property>")
    with pytest.raises(ConfigError, match="not valid XML") as err:
        discover_rm_urls({"HADOOP_CONF_DIR": str(tmp_path)}, tmp_path / "none")
    assert str(tmp_path / "yarn-site.xml") in str(err.value)


def test_auto_picks_yarn_from_yarn_site_and_rm_url_beats_it(tmp_path: Path) -> None:
    write_site(tmp_path, {"yarn.resourcemanager.hostname": "site-rm"})
    env = {"YARN_CONF_DIR": str(tmp_path)}
    cluster = connect(config.load({}, env={}), env=env, yarn_conf_default=tmp_path / "none")
    assert isinstance(cluster, YarnCluster)
    assert cluster.rm_urls == ["http://site-rm:8088"]
    assert cluster.source == f"yarn-site.xml {tmp_path / 'yarn-site.xml'}"

    flagged = connect(
        config.load({"rm_url": ["flag-rm:8088"]}, env={}), env=env, yarn_conf_default=tmp_path
    )
    assert flagged.rm_urls == ["http://flag-rm:8088"] and flagged.source == "--rm-url"
    from_env = connect(config.load({}, env={"COBELL_RM_URL": "a:1,b:2"}), env=env)
    assert from_env.rm_urls == ["http://a:1", "http://b:2"]
    assert from_env.source == "env COBELL_RM_URL"
