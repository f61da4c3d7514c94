"""tests/gate_beside.py (`pytest --gate`, the README's test command): a session whose tests
pass fails when the gate fails, the gate's words follow the tests' summary, and the gate runs
at nice 19. Each case is a real pytest process on a one-test directory, its gate a stand-in
script (the real gate takes minutes; it runs in the README's test command itself)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _session(tmp_path: Path, gate_exit: int, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "gate.py").write_text(textwrap.dedent(f"""
        import os
        print(f"stand-in gate at nice {{os.nice(0)}}")
        raise SystemExit({gate_exit})
        """))
    (tmp_path / "conftest.py").write_text(textwrap.dedent(f"""
        import sys
        import tests.gate_beside as beside
        beside.COMMAND = [sys.executable, {str(tmp_path / "gate.py")!r}]
        pytest_plugins = ["tests.gate_beside"]
        """))
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert True\n")
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "-p", "no:randomly", str(tmp_path), *args],
                          cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("gate_exit", [0, 1, 2])
def test_the_gate_decides_the_session_with_the_tests(tmp_path: Path, gate_exit: int):
    done = _session(tmp_path, gate_exit, "--gate")
    assert "1 passed" in done.stdout
    assert done.returncode == (0 if gate_exit == 0 else 1), done.stdout + done.stderr
    said = done.stdout.index("stand-in gate at nice 19")
    assert said > done.stdout.index("1 passed")  # after the tests' summary
    if gate_exit:
        assert f"bench gate exited {gate_exit}" in done.stderr


def test_without_the_option_no_gate_runs(tmp_path: Path):
    done = _session(tmp_path, 1)
    assert done.returncode == 0 and "stand-in gate" not in done.stdout
