"""The cluster and the settings through the Python API (cobell_cli/api/clusters.py, settings.py):
what `cobell cluster apps|check` and `cobell config show` do, callable without the CLI, against
a real HTTP RM stand-in on loopback and real SQLite files."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from cobell_cli import api
from cobell_cli.errors import ClusterError, ConfigError, HistoryError, UsageError
from tests.cli_support import cobell
from tests.yarn_standin import StandinRM

EXAMPLE = Path(__file__).parents[1] / "history" / "example.csv"


def test_history_jobs_of_a_real_file_and_of_none(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    assert api.history_jobs(db) == []
    assert not db.exists()  # asking never creates a history
    with api.open_history(db) as history:
        api.import_file(history, EXAMPLE)
        known = [row["job"] for row in api.list_jobs(history)]
    assert sorted(api.history_jobs(db)) == sorted(known) and known
    junk = tmp_path / "junk.db"
    junk.write_text("not a database at all, " * 100)
    with pytest.raises(HistoryError):
        api.history_jobs(junk)


def test_running_apps_oldest_first_mapped_to_known_jobs(yarn_rm: StandinRM) -> None:
    now = yarn_rm.now_s = time.time()
    yarn_rm.add_app("late", start_s=now - 10, executors=2)
    yarn_rm.add_app("nightly sgd", tags="cobell,cobell-job:sgd", start_s=now - 300, executors=6)
    yarn_rm.add_app("wordcount", start_s=now - 100, executors=3)
    settings = api.load_settings(cluster="yarn", rm_url=[yarn_rm.url])
    cluster = api.connect_cluster(settings, ["wordcount"])
    apps = api.running_apps(cluster)
    assert [a.name for a in apps] == ["nightly sgd", "wordcount", "late"]
    assert [a.job for a in apps] == ["sgd", "wordcount", None]  # tag, known name, unknown
    assert [a.scale_out for a in apps] == [6, 3, 2]


def test_check_cluster_says_who_answered_as_the_cli_does(
    tmp_path: Path, yarn_rm: StandinRM
) -> None:
    settings = api.load_settings(cluster="yarn", rm_url=[yarn_rm.url])
    report = api.check_cluster(api.connect_cluster(settings))
    assert report["backend"] == "yarn" and report["url"].rstrip("/") == yarn_rm.url.rstrip("/")
    assert report["url"] in report["cluster"]
    cli = cobell("--db", str(tmp_path / "h.db"), "cluster", "check", "--json", "--cluster",
                 "yarn", "--rm-url", yarn_rm.url)
    assert cli.exit_code == 0, cli.stderr
    shown = json.loads(cli.stdout)
    assert {k: shown[k] for k in ("backend", "url", "configured", "cluster")} == {
        k: report[k] for k in ("backend", "url", "configured", "cluster")}


def test_no_cluster_and_a_dead_one() -> None:
    none = api.connect_cluster(api.load_settings(cluster="none"))
    assert api.running_apps(none) == [] and api.check_cluster(none)["cluster"] == none.describe()
    with pytest.raises(ConfigError, match="no ResourceManager URL"):
        api.connect_cluster(api.load_settings(cluster="yarn"), env={},
                            yarn_conf_default=Path("/nonexistent"))
    dead = api.load_settings(cluster="yarn", rm_url=["http://127.0.0.1:9"], retries=0)
    with pytest.raises(ClusterError):
        api.running_apps(api.connect_cluster(dead, sleep=lambda _s: None))


def test_settings_rows_name_each_value_and_where_it_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "cobell.toml"
    conf.write_text("max_scale_out = 32\n")
    monkeypatch.setenv("COBELL_MIN_SCALE_OUT", "3")
    rows = {r["key"]: r for r in api.settings_rows(
        api.load_settings(conf, db=str(tmp_path / "h.db"), cluster="none"))}
    assert rows["max_scale_out"]["value"] == 32 and "cobell.toml" in rows["max_scale_out"]["source"]
    assert rows["min_scale_out"]["value"] == 3 and rows["min_scale_out"]["env"] == \
        "COBELL_MIN_SCALE_OUT"
    assert rows["cluster"]["value"] == "none" and rows["db"]["value"] == str(tmp_path / "h.db")
    assert len({r["source"] for r in rows.values()}) >= 3  # flag, env, file (and defaults)


def test_check_minimize_names_the_choices() -> None:
    assert api.check_minimize("memory-mb-seconds") == "memory-mb-seconds"
    with pytest.raises(UsageError, match="executor-seconds, memory-mb-seconds"):
        api.check_minimize("dollars")


def test_local_clusters_not_running_as_the_cli_reports_them(tmp_path: Path) -> None:
    spark = api.LocalCluster()  # the isolated data dir of this test, as the CLI's
    assert not spark.status().running and spark.stop() == []
    cli = cobell("local-cluster", "status", "--json")
    assert cli.exit_code == 1 and json.loads(cli.stdout) == spark.status().to_dict()
    yarn = api.LocalYarn(tmp_path / "yarn")
    status = yarn.status()
    assert isinstance(status, api.LocalYarnStatus)
    assert not status.running and status.pid is None and yarn.stop() is False
    shape = api.YarnShape(node_managers=1, labeled_node_managers=2, node_label="gpu")
    assert shape.labels() == ["", "gpu", "gpu"]
