"""`cobell cluster apps|check` through the real entry point, against the stand-in RM."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from cobell_cli import cli as cli_root
from cobell_cli.cli import cluster as cluster_cli
from tests.cli_support import cobell, cobell_process
from tests.yarn_standin import (  # noqa: F401  (fixtures)
    StandinRM,
    dead_url,
    yarn_rm_factory_fixture,
    yarn_rm_fixture,
)


def _registered() -> bool:
    return any(g.typer_instance is cluster_cli.app for g in cli_root.app.registered_groups)


REGISTERED_BY_LEAD = _registered()  # before this module's fixture mounts it


@pytest.fixture(autouse=True)
def cluster_group() -> Iterator[None]:
    """Mount `cluster` on the real root app for the test if the lead has not registered it."""
    if _registered():
        yield
        return
    cli_root.app.add_typer(cluster_cli.app, name="cluster")
    try:
        yield
    finally:
        cli_root.app.registered_groups[:] = [
            g for g in cli_root.app.registered_groups if g.typer_instance is not cluster_cli.app
        ]


def test_apps_table_shows_jobs_and_unknown_co_runners(yarn_rm: StandinRM) -> None:
    yarn_rm.add_app("sgd nightly", tags="cobell-job:sgd", executors=8, duration_s=200)
    yarn_rm.add_app("someone's notebook", user="bob", queue="adhoc", executors=2)
    yarn_rm.advance(50)
    result = cobell("cluster", "apps", "--rm-url", yarn_rm.url)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "app_id",
        "name",
        "job",
        "user",
        "queue",
        "state",
        "started",
        "scale_out",
        "progress",
    ]
    sgd = next(line for line in lines if "sgd nightly" in line)
    assert " sgd " in sgd and " 8 " in sgd and "25%" in sgd and "2023-11-14T22:13:20Z" in sgd
    other = next(line for line in lines if "notebook" in line)
    assert "unknown" in other and "bob" in other and "adhoc" in other
    assert f"cluster: yarn RM {yarn_rm.url}" in result.stderr


def test_apps_json(yarn_rm: StandinRM) -> None:
    app_id = yarn_rm.add_app("wc", tags="cobell-job:wc", executors=3)
    result = cobell("cluster", "apps", "--json", "--rm-url", yarn_rm.url)
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["backend"] == "yarn" and payload["cluster"] == f"yarn RM {yarn_rm.url}"
    (app,) = payload["apps"]
    assert app["app_id"] == app_id and app["job"] == "wc" and app["scale_out"] == 3
    assert app["started_at"] == pytest.approx(yarn_rm.now_s) and app["tags"] == ["cobell-job:wc"]


def test_apps_map_names_of_jobs_in_the_history(yarn_rm: StandinRM, tmp_path: Any) -> None:
    from cobell_cli.store.history import History

    db = tmp_path / "h.db"
    with History.open(db) as history:
        history.insert_runs(
            [{"job": "pagerank", "scale_out": 4, "runtime_s": 100.0, "status": "succeeded"}]
        )
    yarn_rm.add_app("pagerank")
    result = cobell("--db", str(db), "cluster", "apps", "--json", "--rm-url", yarn_rm.url)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["apps"][0]["job"] == "pagerank"


def test_check_names_the_active_rm_of_an_ha_pair(yarn_rm_factory: Any) -> None:
    active = yarn_rm_factory()
    standby = yarn_rm_factory(ha_state="STANDBY", redirect_to=active.url)
    result = cobell(
        "cluster",
        "check",
        "--rm-url",
        standby.url,
        "--rm-url",
        active.url,
        env={"COBELL_RM_USER": "erin"},
    )
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert f"answered: {active.url}" in out and "ha state: ACTIVE" in out
    assert f"skipped:  {standby.url}: HA state STANDBY" in out
    assert "auth:     simple (user.name=erin)" in out and "latency:" in out


def test_check_json(yarn_rm: StandinRM) -> None:
    result = cobell("cluster", "check", "--json", "--rm-url", yarn_rm.url)
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["url"] == yarn_rm.url and report["ha_state"] == "ACTIVE"
    assert report["auth"] == "simple" and report["latency_ms"] >= 0
    assert report["rm_version"] == "3.3.6-standin"


def test_unreachable_rm_is_one_line_and_exit_4() -> None:
    url = dead_url()
    result = cobell(
        "cluster", "check", "--rm-url", url, env={"COBELL_RETRIES": "0", "COBELL_TIMEOUT_S": "2"}
    )
    assert result.exit_code == 4
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("cobell: error: ") and url in line and "--rm-url" in line


def test_garbage_answer_is_exit_4(yarn_rm: StandinRM) -> None:
    yarn_rm.garbage = True
    result = cobell("cluster", "apps", "--rm-url", yarn_rm.url)
    assert result.exit_code == 4 and "not JSON" in result.stderr
    assert "Traceback" not in result.stderr


def test_none_backend_says_so_loudly() -> None:
    result = cobell("cluster", "apps", "--cluster", "none", "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {
        "backend": "none",
        "cluster": json.loads(result.stdout)["cluster"],
        "apps": [],
    }
    assert "NO CLUSTER INFORMATION" in result.stderr
    check = cobell("cluster", "check", "--cluster", "none")
    assert check.exit_code == 0 and "no cluster information" in check.stdout


def test_bad_cluster_kind_is_a_usage_error() -> None:
    result = cobell("cluster", "apps", "--cluster", "mesos")
    assert result.exit_code == 2 and "mesos" in result.stderr


def test_real_process(yarn_rm: StandinRM) -> None:
    """A separate interpreter: `python -m cobell_cli`, or the same root app with `cluster`
    mounted the way this module's fixture does while the lead has not registered it."""
    import subprocess
    import sys

    app_id = yarn_rm.add_app("proc", executors=5)
    args = ["cluster", "apps", "--json", "--rm-url", yarn_rm.url]
    if REGISTERED_BY_LEAD:
        proc = cobell_process(*args, timeout=60)
    else:
        boot = (
            "import sys; from cobell_cli import cli; from cobell_cli.cli import cluster; "
            "cli.app.add_typer(cluster.app, name='cluster'); cli.main(sys.argv[1:])"
        )
        proc = subprocess.run(
            [sys.executable, "-c", boot, *args], capture_output=True, text=True, timeout=60
        )
    assert proc.returncode == 0, proc.stderr
    assert [a["app_id"] for a in json.loads(proc.stdout)["apps"]] == [app_id]
