"""The YARN adapter: documented shapes (pure parsing) and behaviour against the stand-in RM."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from cobell_cli import config
from cobell_cli.cluster import connect
from cobell_cli.cluster.yarn import (
    ShapeError,
    YarnCluster,
    parse_app,
    parse_apps,
    progress_fraction,
    scale_out_from_containers,
)
from cobell_cli.errors import EXIT_CLUSTER, ClusterError, UsageError
from tests.yarn_standin import (  # noqa: F401
    StandinRM,
    dead_url,
    running_standin,
    yarn_rm_factory_fixture,
    yarn_rm_fixture,
)


def yarn(
    urls: list[str],
    known_jobs: tuple[str, ...] = (),
    sleeps: list[float] | None = None,
    **flags: Any,
) -> YarnCluster:
    """A YarnCluster built the way the CLI builds it: settings -> connect()."""
    flags = {"cluster": "yarn", "rm_url": urls, "retries": 0, "timeout_s": 5, **flags}
    settings = config.load(flags, env={})
    recorder = sleeps if sleeps is not None else []
    cluster = connect(settings, known_jobs, env={}, backoff_s=0.01, sleep=recorder.append)
    assert isinstance(cluster, YarnCluster)
    return cluster


# -- pure parsing -------------------------------------------------------------------------


def test_documented_apps_fixture_parses(yarn_fixtures: Path) -> None:
    doc = json.loads((yarn_fixtures / "apps.json").read_text())
    apps = parse_apps(doc)
    assert [a.app_id for a in apps] == [
        "application_1476912658570_0002",
        "application_1476912658570_0001",
    ]
    first = apps[0]
    assert first.state == "FINISHED"
    assert first.started_at == pytest.approx(1476913457.320)
    assert first.finished_at == pytest.approx(1476913761.898)
    assert first.progress == pytest.approx(1.0)
    # finished apps hold no containers: their executors are counted from vcore-seconds, as
    # `history import --from-yarn` counts them (201 vcore-s in 305 s: less than the AM, so 1)
    assert first.scale_out == 1
    assert first.job is None and first.tags == ()
    assert first.user == "user2" and first.queue == "default" and first.backend == "yarn"


def test_standin_serves_every_documented_app_field(yarn_fixtures: Path) -> None:
    documented = json.loads((yarn_fixtures / "apps.json").read_text())["apps"]["app"][0]
    rm = StandinRM()
    app_id = rm.add_app("x")
    served = rm.render(rm.apps[app_id])
    assert served is not None
    assert set(documented) <= set(served)

    def kind(value: Any) -> str:  # JSON kinds: 100 and 100.0 are both numbers
        if isinstance(value, bool):
            return "bool"
        return "number" if isinstance(value, int | float) else type(value).__name__

    for key, value in documented.items():
        assert kind(served[key]) == kind(value), key


def test_documented_info_fixture_has_the_ha_state_we_read(yarn_fixtures: Path) -> None:
    info = json.loads((yarn_fixtures / "info.json").read_text())
    assert info["clusterInfo"]["haState"] == "ACTIVE"
    assert set(info["clusterInfo"]) <= set(StandinRM().cluster_info()["clusterInfo"])


@pytest.mark.parametrize(
    "doc",
    [{"apps": None}, {"apps": {}}, {"apps": {"app": None}}, {"apps": {"app": []}}],
    ids=["apps-null", "apps-empty", "app-null", "app-empty-list"],
)
def test_empty_shapes_mean_no_apps(doc: dict[str, Any]) -> None:
    assert parse_apps(doc) == []


def test_a_single_app_object_is_read_as_a_list() -> None:
    apps = parse_apps({"apps": {"app": {"id": "application_1_1", "state": "RUNNING"}}})
    assert [a.app_id for a in apps] == ["application_1_1"]


@pytest.mark.parametrize("doc", [[], {"app": []}, {"apps": []}, {"apps": {"app": "x"}}, "x"])
def test_undocumented_shapes_are_refused(doc: Any) -> None:
    with pytest.raises(ShapeError):
        parse_apps(doc)


@pytest.mark.parametrize("hidden", [-1, None, "N/A", "missing"])
def test_acl_hidden_fields_become_none(hidden: Any) -> None:
    raw: dict[str, Any] = {
        "id": "application_1_7",
        "name": "etl",
        "state": "RUNNING",
        "user": "N/A",
        "queue": None,
        "startedTime": 0,
        "finishedTime": 0,
        "runningContainers": hidden,
        "progress": hidden,
    }
    if hidden == "missing":
        del raw["runningContainers"], raw["progress"]
    app = parse_app(raw)
    assert app is not None
    assert app.scale_out is None and app.progress is None
    assert app.user is None and app.queue is None
    assert app.started_at is None and app.finished_at is None and app.running
    assert app.tags == ()


def test_an_app_without_id_is_dropped_not_fatal() -> None:
    apps = parse_apps({"apps": {"app": [{"name": "no id"}, {"id": "application_1_2"}, 7]}})
    assert [a.app_id for a in apps] == ["application_1_2"]


@pytest.mark.parametrize(
    ("containers", "state", "expected"),
    [
        (5, "RUNNING", 4),
        (1, "RUNNING", 0),
        (0, "RUNNING", None),
        (-1, "RUNNING", None),
        (9, "FINISHED", None),
        ("3", "RUNNING", 2),
    ],
)
def test_scale_out_is_running_containers_minus_the_am(
    containers: Any, state: str, expected: int | None
) -> None:
    assert scale_out_from_containers(containers, state) == expected


@pytest.mark.parametrize(
    ("raw", "expected"), [(0, 0.0), (42.5, 0.425), (100, 1.0), (150, None), (-1, None)]
)
def test_progress_percent_becomes_a_fraction(raw: Any, expected: float | None) -> None:
    assert progress_fraction(raw) == (pytest.approx(expected) if expected is not None else None)


def test_tags_map_the_app_to_its_job_case_insensitively() -> None:
    raw = {
        "id": "application_1_3",
        "name": "whatever",
        "state": "RUNNING",
        "applicationTags": "team-a,cobell-job:sgd",
    }
    app = parse_app(raw, known_jobs=["SGD"])
    assert app is not None and app.job == "SGD"
    assert app.tags == ("team-a", "cobell-job:sgd")


# -- against the stand-in RM ----------------------------------------------------------------


def test_running_apps_reads_what_the_rm_runs(yarn_rm: StandinRM) -> None:
    sgd = yarn_rm.add_app("sgd run", tags="cobell-job:sgd", executors=6, duration_s=400)
    other = yarn_rm.add_app("adhoc query", executors=3, duration_s=None, user="bob")
    yarn_rm.add_app("queued", state="ACCEPTED")
    yarn_rm.add_app("old", start_s=yarn_rm.now_s - 1000, duration_s=100)
    yarn_rm.advance(100)

    cluster = yarn([yarn_rm.url], known_jobs=("sgd",), rm_user="carol")
    apps = {a.app_id: a for a in cluster.running_apps()}

    assert set(apps) == {sgd, other}
    assert apps[sgd].job == "sgd" and apps[sgd].scale_out == 6
    assert apps[sgd].progress == pytest.approx(0.25)
    assert apps[sgd].started_at == pytest.approx(yarn_rm.now_s - 100)
    assert apps[other].job is None and apps[other].user == "bob" and apps[other].scale_out == 3
    last = yarn_rm.requests[-1]
    assert last["path"] == "/ws/v1/cluster/apps"
    assert last["query"]["states"] == ["RUNNING"] and last["query"]["user.name"] == ["carol"]
    assert cluster.describe() == f"yarn RM {yarn_rm.url}"


def test_apps_start_and_finish_over_time(yarn_rm: StandinRM) -> None:
    t0 = yarn_rm.now_s
    later = yarn_rm.add_app("later", start_s=t0 + 50, duration_s=100)
    cluster = yarn([yarn_rm.url])
    assert cluster.running_apps() == []

    yarn_rm.advance(60)
    assert [a.app_id for a in cluster.running_apps()] == [later]

    yarn_rm.advance(200)
    assert cluster.running_apps() == []
    finished = cluster.apps_finished_since(t0 + 100)
    assert [a.app_id for a in finished] == [later]
    assert finished[0].finished_at == pytest.approx(t0 + 150)
    assert finished[0].state == "FINISHED" and not finished[0].running
    assert yarn_rm.requests[-1]["query"]["finishedTimeBegin"] == [str(int((t0 + 100) * 1000))]
    assert cluster.apps_finished_since(t0 + 151) == []


def test_a_finished_app_s_executors_are_counted_from_its_vcore_seconds(
    yarn_rm: StandinRM,
) -> None:
    """`cobell submit` records the co-runners that finished during its run with their
    scale-out (the colocations' co_runner_scale_out was blank on YARN, filled on standalone)."""
    from cobell_cli.core.colocation import measured_overlaps

    t0 = yarn_rm.now_s
    wide = yarn_rm.add_app("wide", start_s=t0, duration_s=100, executors=6)
    cluster = yarn([yarn_rm.url])
    assert [a.scale_out for a in cluster.running_apps()] == [6]
    yarn_rm.advance(200)
    (finished,) = cluster.apps_finished_since(t0)
    assert (finished.app_id, finished.scale_out) == (wide, 6)
    (row,) = measured_overlaps(t0 + 50, t0 + 150, [finished])
    assert row["co_runner_scale_out"] == 6


def test_killed_and_failed_apps_count_as_finished(yarn_rm: StandinRM) -> None:
    t0 = yarn_rm.now_s
    killed = yarn_rm.add_app("k", duration_s=None)
    failed = yarn_rm.add_app("f", duration_s=None)
    yarn_rm.advance(30)
    yarn_rm.finish(killed, "KILLED")
    yarn_rm.finish(failed, "FAILED")
    states = {a.app_id: a.state for a in yarn([yarn_rm.url]).apps_finished_since(t0)}
    assert states == {killed: "KILLED", failed: "FAILED"}


def test_app_by_id(yarn_rm: StandinRM) -> None:
    app_id = yarn_rm.add_app("one", tags=["cobell-job:wc"], executors=2)
    cluster = yarn([yarn_rm.url])
    found = cluster.app(app_id)
    assert found is not None and found.job == "wc" and found.scale_out == 2
    assert cluster.app("application_1_999999") is None
    with pytest.raises(UsageError):
        cluster.app("../../etc/passwd")


def test_acl_hidden_app_on_the_wire(yarn_rm: StandinRM) -> None:
    yarn_rm.add_app("secret", acl_hidden=True)
    (app,) = yarn([yarn_rm.url]).running_apps()
    assert app.scale_out is None and app.progress is None and app.tags == ()
    assert app.job is None and app.state == "RUNNING"


@pytest.mark.parametrize("shape", ["null", "empty", "app_null"])
def test_empty_shapes_on_the_wire(yarn_rm: StandinRM, shape: str) -> None:
    yarn_rm.add_app("hidden by the shape")
    yarn_rm.apps_shape = shape
    assert yarn([yarn_rm.url]).running_apps() == []


def test_single_object_shape_on_the_wire(yarn_rm: StandinRM) -> None:
    app_id = yarn_rm.add_app("only")
    yarn_rm.apps_shape = "single"
    assert [a.app_id for a in yarn([yarn_rm.url]).running_apps()] == [app_id]


def test_ha_finds_the_active_rm(yarn_rm_factory: Any) -> None:
    active = yarn_rm_factory()
    standby = yarn_rm_factory(ha_state="STANDBY", redirect_to=active.url)
    app_id = active.add_app("on the active one")
    cluster = yarn([standby.url, active.url])

    assert [a.app_id for a in cluster.running_apps()] == [app_id]
    assert cluster.describe() == f"yarn RM {active.url} (active)"
    report = cluster.check()
    assert report["url"] == active.url and report["ha_state"] == "ACTIVE"
    assert report["skipped"] == [{"url": standby.url, "why": "HA state STANDBY"}]
    assert not any(r["path"] == "/ws/v1/cluster/apps" for r in standby.requests)


def test_a_standby_redirect_is_followed_and_named(yarn_rm_factory: Any) -> None:
    active = yarn_rm_factory()
    standby = yarn_rm_factory(ha_state="STANDBY", redirect_to=active.url)
    app_id = active.add_app("x")
    cluster = yarn([standby.url])
    assert [a.app_id for a in cluster.running_apps()] == [app_id]
    assert any(r["path"] == "/ws/v1/cluster/apps" for r in standby.requests)
    assert cluster.describe() == f"yarn RM {active.url} (active)"


def test_only_standbys_is_an_error_naming_them(yarn_rm_factory: Any) -> None:
    s1 = yarn_rm_factory(ha_state="STANDBY")
    s2 = yarn_rm_factory(ha_state="STANDBY")
    with pytest.raises(ClusterError) as err:
        yarn([s1.url, s2.url]).running_apps()
    assert s1.url in str(err.value) and s2.url in str(err.value)
    assert "STANDBY" in str(err.value)


def test_dead_rm_fails_with_one_line_after_bounded_backoff() -> None:
    url = dead_url()
    sleeps: list[float] = []
    cluster = yarn([url], sleeps=sleeps, retries=2)
    with pytest.raises(ClusterError) as err:
        cluster.running_apps()
    line = err.value.line()
    assert err.value.exit_code == EXIT_CLUSTER
    assert url in line and "connection refused" in line and "3 attempt" in line
    assert "--rm-url" in line and "\n" not in line
    assert sleeps == [pytest.approx(0.01), pytest.approx(0.02)]  # exponential back-off


def test_a_dead_rm_in_an_ha_pair_is_skipped_without_waiting(yarn_rm: StandinRM) -> None:
    dead = dead_url()
    app_id = yarn_rm.add_app("x")
    sleeps: list[float] = []
    cluster = yarn([dead, yarn_rm.url], sleeps=sleeps, retries=2)
    assert [a.app_id for a in cluster.running_apps()] == [app_id]
    assert sleeps == []
    assert cluster.check()["skipped"][0]["url"] == dead


def test_slow_rm_times_out(yarn_rm: StandinRM) -> None:
    yarn_rm.delay_s = 1.0
    cluster = yarn([yarn_rm.url], timeout_s=0.2, retries=1)
    started = time.monotonic()
    with pytest.raises(ClusterError) as err:
        cluster.running_apps()
    elapsed = time.monotonic() - started
    assert "no answer within 0.2 s" in str(err.value) and yarn_rm.url in str(err.value)
    assert elapsed < 1.5  # two attempts of 0.2 s, not two of 1 s


def test_a_transient_5xx_is_retried(yarn_rm: StandinRM) -> None:
    app_id = yarn_rm.add_app("x")
    yarn_rm.fail_next = 1
    sleeps: list[float] = []
    cluster = yarn([yarn_rm.url], sleeps=sleeps, retries=2)
    assert [a.app_id for a in cluster.running_apps()] == [app_id]
    assert len(sleeps) == 1


def test_a_persistent_5xx_is_an_error(yarn_rm: StandinRM) -> None:
    yarn_rm.fail_next, yarn_rm.fail_status = 100, 503
    with pytest.raises(ClusterError) as err:
        yarn([yarn_rm.url], retries=2).running_apps()
    assert "HTTP 503" in str(err.value)
    assert len(yarn_rm.requests) == 3


def test_malformed_json_is_an_error_without_retries(yarn_rm: StandinRM) -> None:
    yarn_rm.garbage = True
    with pytest.raises(ClusterError) as err:
        yarn([yarn_rm.url], retries=2).running_apps()
    assert "not JSON" in str(err.value) and yarn_rm.url in str(err.value)
    assert len(yarn_rm.requests) == 1


def test_truncated_json_is_an_error(yarn_rm: StandinRM) -> None:
    yarn_rm.raw_apps = b'{"apps": {"app": [{"id": "applic'
    with pytest.raises(ClusterError, match="not JSON"):
        yarn([yarn_rm.url]).running_apps()


def test_an_undocumented_document_is_an_error(yarn_rm: StandinRM) -> None:
    yarn_rm.apps_shape = "not_object"
    with pytest.raises(ClusterError, match="does not understand"):
        yarn([yarn_rm.url]).running_apps()


def test_401_hints_at_auth(yarn_rm: StandinRM) -> None:
    yarn_rm.require_user = True
    with pytest.raises(ClusterError) as err:
        yarn([yarn_rm.url], auth="none").running_apps()
    assert "HTTP 401" in err.value.line() and "COBELL_AUTH" in err.value.line()
    assert yarn([yarn_rm.url], auth="simple", rm_user="dave").running_apps() == []


def test_kerberos_without_the_extra_says_how_to_install_it(yarn_rm: StandinRM) -> None:
    try:
        import requests_gssapi  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("requests-gssapi is installed here, so the missing-extra path cannot run")
    with pytest.raises(ClusterError) as err:
        yarn([yarn_rm.url], auth="kerberos")
    assert "pip install 'cobell[kerberos]'" in err.value.line()


def test_standin_registration_over_http(yarn_rm: StandinRM) -> None:
    """The endpoint the `cobell submit` tests' fake spark-submit uses."""
    import requests

    resp = requests.post(
        f"{yarn_rm.url}/_standin/apps",
        json={"name": "wc", "tags": "cobell-job:wc", "executors": 5, "duration_s": 30},
        timeout=5,
    )
    assert resp.status_code == 201
    app_id = resp.json()["id"]
    cluster = yarn([yarn_rm.url])
    (app,) = cluster.running_apps()
    assert app.app_id == app_id and app.job == "wc" and app.scale_out == 5
    requests.post(f"{yarn_rm.url}/_standin/clock", json={"advance_s": 31}, timeout=5)
    assert cluster.running_apps() == []
    assert [a.app_id for a in cluster.apps_finished_since(yarn_rm.now_s - 60)] == [app_id]


def test_standin_context_manager_frees_its_port() -> None:
    with running_standin() as rm:
        url = rm.url
        assert yarn([url]).running_apps() == []
    with pytest.raises(ClusterError, match="connection refused"):
        yarn([url]).running_apps()


def test_tls_is_verified_by_default_and_ca_bundle_trusts_the_rm(
    self_signed: tuple[str, str],
) -> None:
    with running_standin(tls=self_signed) as rm:
        app_id = rm.add_app("over tls")
        assert rm.url.startswith("https://")
        with pytest.raises(ClusterError) as err:
            yarn([rm.url]).running_apps()
        assert "TLS verification" in err.value.line() and "--ca-bundle" in err.value.line()
        trusted = yarn([rm.url], ca_bundle=self_signed[0])
        assert [a.app_id for a in trusted.running_apps()] == [app_id]
        assert trusted.check()["tls_verify"] == f"verified with {self_signed[0]}"
