"""The app -> job mapping (pure) and the choice of backend by connect()."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cobell_cli import config
from cobell_cli.cluster import Cluster, connect, job_app_name, job_tag, map_job
from cobell_cli.cluster.jobs import compile_patterns, split_tags
from cobell_cli.cluster.none import NoCluster
from cobell_cli.cluster.standalone import StandaloneCluster
from cobell_cli.cluster.yarn import YarnCluster
from cobell_cli.errors import ConfigError


def test_tag_beats_pattern_beats_name() -> None:
    patterns = compile_patterns({"etl": r"^nightly-etl", "sgd": r"sgd"})
    assert map_job("sgd", ["cobell-job:kmeans"], ["sgd"], patterns) == "kmeans"
    assert map_job("nightly-etl 2024", [], ["sgd"], patterns) == "etl"
    assert map_job("my sgd", [], [], patterns) == "sgd"
    assert map_job("wordcount", [], ["wordcount"], patterns) == "wordcount"
    assert map_job("wordcount2", [], ["wordcount"], patterns) is None


def test_standalone_name_prefix() -> None:
    assert map_job(job_app_name("pagerank"), [], []) == "pagerank"
    assert map_job("cobell:", [], []) is None  # an empty job name is no job


def test_patterns_are_tried_in_configured_order() -> None:
    patterns = compile_patterns({"first": "job", "second": "job"})
    assert map_job("a job", [], [], patterns) == "first"


def test_bad_regex_is_a_usage_error() -> None:
    with pytest.raises(ConfigError, match="'broken'"):
        compile_patterns({"broken": "("})


def test_split_tags_accepts_yarn_string_and_list() -> None:
    assert split_tags(" a, b ,,c") == ("a", "b", "c")
    assert split_tags(["x", " y"]) == ("x", "y")
    assert split_tags(None) == () and split_tags("") == ()


@given(job=st.from_regex(r"[A-Za-z][A-Za-z0-9_.-]{0,20}", fullmatch=True))
def test_what_cobell_tags_maps_back_to_the_job(job: str) -> None:
    # YARN lower-cases tags; the known spelling comes back.
    assert map_job("any name", [job_tag(job).lower()], [job]) == job
    assert map_job(job_app_name(job), [], []) == job


# -- connect() --------------------------------------------------------------------------


def settings(**flags: object) -> config.Settings:
    return config.load(flags, env={})


def test_auto_without_anything_is_none_and_says_so_loudly(tmp_path: Path) -> None:
    cluster = connect(settings(), env={}, yarn_conf_default=tmp_path)
    assert isinstance(cluster, NoCluster) and cluster.name == "none"
    assert "NO CLUSTER INFORMATION" in cluster.describe()
    assert cluster.running_apps() == [] and cluster.apps_finished_since(0.0) == []
    assert cluster.app("application_1_1") is None
    assert cluster.check()["backend"] == "none"
    assert isinstance(cluster, Cluster)


def test_auto_prefers_yarn_then_standalone(tmp_path: Path) -> None:
    both = settings(rm_url=["rm:8088"], standalone_url="http://m:8080")
    assert connect(both, env={}, yarn_conf_default=tmp_path).name == "yarn"
    only_master = settings(standalone_url="http://m:8080")
    cluster = connect(only_master, env={}, yarn_conf_default=tmp_path)
    assert isinstance(cluster, StandaloneCluster) and cluster.master_urls == ["http://m:8080"]
    assert isinstance(cluster, Cluster)


def test_explicit_none_ignores_configured_urls(tmp_path: Path) -> None:
    cluster = connect(settings(cluster="none", rm_url=["rm:8088"]), env={})
    assert isinstance(cluster, NoCluster)


def test_explicit_backend_without_url_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        connect(settings(cluster="yarn"), env={}, yarn_conf_default=tmp_path)
    assert "--rm-url" in err.value.line() and err.value.exit_code == 2
    with pytest.raises(ConfigError) as err:
        connect(settings(cluster="standalone"), env={}, yarn_conf_default=tmp_path)
    assert "--standalone-url" in err.value.line()


def test_bad_urls_and_missing_ca_bundle_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"http\(s\)"):
        connect(settings(rm_url=["ftp://rm"]), env={})
    with pytest.raises(ConfigError, match="CA bundle"):
        connect(settings(rm_url=["https://rm"], ca_bundle=str(tmp_path / "nope.pem")), env={})


def test_connect_passes_known_jobs_and_patterns() -> None:
    cluster = connect(settings(rm_url=["rm"], job_patterns={"etl": "^etl-"}), ["sgd"], env={})
    assert isinstance(cluster, YarnCluster)
    assert cluster.known_jobs == ["sgd"] and set(cluster.patterns) == {"etl"}
    assert cluster.describe() == "yarn RM http://rm (not contacted yet)"
