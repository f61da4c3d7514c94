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
