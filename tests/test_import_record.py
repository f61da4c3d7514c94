"""The pure part every importer shares: job identity, status, overlapping pairs, standalone."""

from __future__ import annotations

import itertools
import random

from cobell_cli.core.running import RunningApp
from cobell_cli.sources.co_runners import standalone_app
from cobell_cli.sources.record import ImportedApp, job_of, overlapping_pairs, status_of


def app(app_id: str, start: float, end: float) -> ImportedApp:
    return ImportedApp(app_id, app_id, "j", "succeeded", start, end, "yarn", scale_out=2)


def test_overlapping_pairs_matches_all_pairs() -> None:
    rng = random.Random(7)
    apps = []
    for k in range(200):
        start = rng.uniform(0, 5000)
        apps.append(app(f"a{k}", start, start + rng.uniform(1, 400)))
    pairs = overlapping_pairs(apps)
    expected = {
        (i, j)
        for i, j in itertools.permutations(range(len(apps)), 2)
        if apps[i].started_at < apps[j].finished_at and apps[j].started_at < apps[i].finished_at
    }
    got = {(i, j) for i, partners in pairs.items() for j in partners}
    assert got == expected and len(got) > 100


def test_touching_apps_do_not_overlap() -> None:
    assert overlapping_pairs([app("a", 0, 10), app("b", 10, 20)]) == {}


def test_job_identity_and_status() -> None:
    patterns = {"report": "^report-"}
    assert job_of("x", ["cobell-job:etl"], [], patterns, "misc") == "etl"
    assert job_of("report-1", [], [], patterns, "misc") == "report"
    assert job_of("other", [], [], patterns, "misc") == "misc"
    assert job_of("Other", [], ["other"], patterns, None) == "other"
    assert job_of("", [], [], None, None) == "unnamed"
    assert status_of("SUCCEEDED", "FINISHED") == "succeeded"
    assert status_of("FAILED", "FINISHED") == "failed"
    assert status_of("UNDEFINED", "KILLED") == "killed"
    assert status_of("UNDEFINED", "FINISHED") is None


def test_standalone_completed_app() -> None:
    done = RunningApp("app-1", "cobell:pi", "pi", "bob", None, "FINISHED", 10.0, 70.0, 3)
    imported = standalone_app(done)
    assert imported is not None
    assert (imported.status, imported.scale_out, imported.runtime_s) == ("succeeded", 3, 60.0)
    assert imported.backend == "standalone" and imported.source == "import"
    unknown_size = RunningApp("app-2", "x", "x", None, None, "FINISHED", 10.0, 70.0, None)
    assert standalone_app(unknown_size) is None
    killed = RunningApp("app-3", "x", "x", None, None, "KILLED", 10.0, 70.0, None)
    assert standalone_app(killed) is not None


def test_a_bad_row_rolls_back_the_whole_import(tmp_path) -> None:
    from dataclasses import replace

    import pytest

    from cobell_cli.errors import CobellError
    from cobell_cli.sources.record import ImportSummary, store_imported
    from cobell_cli.store.history import History

    profile = '{"app_id": "a0", "stages": []}'
    good = [replace(app(f"a{k}", 100.0 * k, 100.0 * k + 150), profile=profile) for k in range(5)]
    bad = ImportedApp("bad", "bad", "j", "succeeded", 10.0, 20.0, "yarn", scale_out=None)
    count = lambda table: history.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # noqa: E731
    with History.open(tmp_path / "h.db") as history:
        with pytest.raises(CobellError, match=r"app bad cannot be stored \(scale_out"):
            store_imported(history, [*good, bad], ImportSummary("yarn", "t"))
        assert history.count() == 0
        assert count("colocations") == 0 and count("run_profiles") == 0
        summary = ImportSummary("yarn", "t")
        store_imported(history, good, summary)
        assert history.count() == 5 and summary.colocations == 8  # 4 neighbouring pairs
        assert summary.profiles == 5 and count("run_profiles") == 5


def test_any_json_app_is_parsed_or_skipped_never_raises() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from cobell_cli.sources.spark_history import AppDetails, parse_app
    from cobell_cli.sources.yarn_apps import parse_finished

    scalar = st.none() | st.booleans() | st.integers(-(10**13), 10**13) | st.floats() | st.text()
    value = st.recursive(
        scalar, lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=8
    )
    keys = st.sampled_from(
        ["id", "state", "finalStatus", "startedTime", "finishedTime", "vcoreSeconds", "name",
         "applicationTags", "resourceSecondsMap", "user", "queue"]
    )  # fmt: skip
    raw_app = st.dictionaries(keys, value) | value

    @settings(max_examples=150)
    @given(raw_app)
    def check_yarn(raw: object) -> None:
        parsed = parse_finished(raw)
        assert isinstance(parsed, str) or (parsed.runtime_s > 0 and parsed.scale_out != 0)

    @given(
        st.dictionaries(st.sampled_from(["id", "name"]), value),
        st.dictionaries(
            st.sampled_from(["completed", "startTimeEpoch", "endTimeEpoch", "sparkUser"]), value
        ),
        st.lists(st.dictionaries(st.sampled_from(["id", "addTime", "removeTime"]), value)),
    )
    def check_history_server(info: dict, attempt: dict, executors: list) -> None:  # fmt: skip
        details = AppDetails(info, attempt, executors, {}, [], [])
        parsed = parse_app(details)
        assert isinstance(parsed, str) or parsed.runtime_s > 0

    check_yarn()
    check_history_server()
