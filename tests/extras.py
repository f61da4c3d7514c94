"""Optional dependencies in tests: a skip on a developer's machine that lacks an extra, a
failure under CI (`CI` set, as .ci/run sets it), where .ci/setup installs every extra the
tests use, so a broken install cannot turn tests into skips."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def require_extra(module: str, reason: str) -> ModuleType:
    """The imported module; skips with `reason` without it, except under CI."""
    if os.environ.get("CI"):
        return importlib.import_module(module)
    return pytest.importorskip(module, reason=reason)
