"""The test suite's own rule: under CI a missing dependency the setup installs is a failure,
not a skip (a skip there would hide a broken install or a broken lookup in cobell)."""

from __future__ import annotations

import pytest

from cobell_cli.errors import CobellError
from tests import spark_support
from tests.extras import require_extra


def _no_java() -> None:
    raise CobellError("no java found (a bug in the lookup)")


def test_under_ci_a_failing_spark_lookup_fails_instead_of_skipping(monkeypatch) -> None:
    """About 20 Spark tests skipped under CI when find_java()/find_spark_home() failed."""
    monkeypatch.setattr(spark_support, "find_java", _no_java)
    monkeypatch.setattr(spark_support, "installed_here", lambda: True)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="cobell's lookup failed: no java found"):
        spark_support.require_spark()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="needs Java and pyspark"):
        spark_support.require_spark()
    monkeypatch.setenv("CI", "true")  # a CI machine without Java at all: nothing to blame
    monkeypatch.setattr(spark_support, "installed_here", lambda: False)
    with pytest.raises(pytest.skip.Exception):
        spark_support.require_spark()


def test_under_ci_a_missing_extra_is_an_import_error(monkeypatch) -> None:
    monkeypatch.setenv("CI", "1")
    with pytest.raises(ImportError):
        require_extra("cobell_no_such_extra", reason="not installed")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="not installed"):
        require_extra("cobell_no_such_extra", reason="not installed")
    assert require_extra("json", reason="stdlib").dumps([]) == "[]"


@pytest.mark.parametrize(
    ("ci", "outcome"), [(None, pytest.skip.Exception), ("1", pytest.fail.Exception)]
)
def test_missing_bell_data_skips_with_the_reason_but_fails_under_ci(
    tmp_path, monkeypatch, ci: str | None, outcome: type
) -> None:
    """`bell_dir` skipped under CI too: a checkout whose ../shared was not found ran none of
    the tests on the real runtime data and said so only in the skip summary."""
    import tests.conftest as conftest

    env = {k: v for k, v in conftest._ENV_AT_IMPORT.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    monkeypatch.setattr(conftest, "_ENV_AT_IMPORT", env)
    with pytest.raises((pytest.skip.Exception, pytest.fail.Exception)) as info:
        conftest.require_shared(tmp_path / "no-bell", "real runtime data")
    assert info.type is outcome
    assert str(tmp_path / "no-bell") in str(info.value)
    assert conftest.require_shared(tmp_path, "real runtime data") == tmp_path


def test_the_bell_data_is_found_from_a_worktree_beside_main(tmp_path) -> None:
    """From /work/wt/NAME the fixture looked for /work/wt/shared and skipped every test on
    the Bell data; ../shared is searched upwards, and $COBELL_BELL_DATA wins."""
    from bench import bell_data

    shared = tmp_path / "work" / "shared" / "data" / "bell"
    shared.mkdir(parents=True)
    worktree = tmp_path / "work" / "wt" / "gate"
    worktree.mkdir(parents=True)
    assert bell_data({}, worktree) == shared
    assert bell_data({}, tmp_path / "work" / "main") == shared
    assert bell_data({"COBELL_BELL_DATA": str(tmp_path)}, worktree) == tmp_path
    nearer = tmp_path / "work" / "wt" / "shared" / "data" / "bell"
    nearer.mkdir(parents=True)
    assert bell_data({}, worktree) == nearer
