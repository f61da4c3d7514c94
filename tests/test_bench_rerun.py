"""`python -m bench rerun`: every stamped results file has a recipe whose commands exist, and
the runner runs each file's commands in order, stops a file at its first failure, and keeps
the quiet ones for after the others."""

from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bench import rerun as rr
from bench.recipes import RECIPES, Recipe
from bench.staleness import survey

FLAG = re.compile(r"^--[\w-]+")


def test_every_stamped_results_file_has_a_recipe_and_every_recipe_a_file() -> None:
    stamped = {s.name for s in survey() if s.state != "unstamped"}
    assert sorted(stamped - set(RECIPES)) == []
    assert sorted(set(RECIPES) - {s.name for s in survey()}) == []


def _module_and_words(command: str) -> tuple[str, list[str]]:
    words = shlex.split(command)
    while "=" in words[0]:  # NAME=value: the command's environment
        words.pop(0)
    assert words[:2] == ["python", "-m"], command
    return words[2], words[3:]


def _help_argv(module: str, words: list[str]) -> list[str]:
    """`--help` of the command's subcommand (the words before its first flag)."""
    sub = []
    for w in words:
        if w.startswith("-"):
            break
        sub.append(w)
    return [sys.executable, "-m", module, *sub[:1], "--help"]


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_a_recipe_names_modules_and_flags_that_exist(name: str) -> None:
    """Each command runs a bench module, and each flag it passes is one its --help lists."""
    for command in RECIPES[name].commands:
        module, words = _module_and_words(command)
        assert module.startswith("bench.") and importlib.util.find_spec(module), command
        flags = {FLAG.match(w)[0] for w in words if FLAG.match(w)}
        if not flags:
            continue
        shown = subprocess.run(_help_argv(module, words), capture_output=True, text=True,
                               cwd=Path(__file__).parents[1], timeout=120)
        assert shown.returncode == 0, shown.stderr[-1000:]
        assert sorted(f for f in flags if f not in shown.stdout) == [], command


def _writer(path: Path, text: str, fail: bool = False) -> str:
    """A recipe command that appends `text` to `path` (then fails, if asked)."""
    code = f"open({str(path)!r}, 'a').write({text!r}); raise SystemExit({int(fail)})"
    return f"python -c {shlex.quote(code)}"


def test_a_files_commands_run_in_order_and_stop_at_the_first_failure(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    recipes = {
        "a.md": Recipe((_writer(out, "a1 "), _writer(out, "a2 ", fail=True),
                        _writer(out, "a3 ")), 1),
    }
    [outcome] = rr.rerun(["a.md"], 1, tmp_path / "logs", tmp_path, recipes, say=lambda _: None)
    assert not outcome.ok and outcome.failed_command == recipes["a.md"].commands[1]
    assert out.read_text() == "a1 a2 "  # the third never ran
    assert outcome.log.read_text().startswith("$ python -c")


def test_rerun_tmp_is_a_fresh_directory_shared_by_one_files_commands(tmp_path: Path) -> None:
    seen = tmp_path / "seen.txt"
    keep = "import os; open(os.environ['RERUN_TMP'] + '/hand', 'w').write('x')"
    read = (f"import os; open({str(seen)!r}, 'a').write(str(os.path.exists("
            "os.environ['RERUN_TMP'] + '/hand')) + ' ')")
    recipes = {"a.md": Recipe((f"python -c {shlex.quote(keep)}",
                               f"python -c {shlex.quote(read)}"), 1),
               "b.md": Recipe((f"python -c {shlex.quote(read)}",), 1)}
    outcomes = rr.rerun(["a.md", "b.md"], 1, tmp_path / "logs", tmp_path, recipes,
                        say=lambda _: None)
    assert all(o.ok for o in outcomes)
    assert sorted(seen.read_text().split()) == ["False", "True"]  # b did not see a's file


def test_quiet_recipes_run_alone_after_the_others(tmp_path: Path) -> None:
    stamps = tmp_path / "stamps.txt"
    slow = "import time; time.sleep(0.5)"
    recipes = {
        "long.md": Recipe((f"python -c {shlex.quote(slow)}", _writer(stamps, "long ")), 9),
        "short.md": Recipe((_writer(stamps, "short "),), 1),
        "timed.md": Recipe((_writer(stamps, "timed "),), 5, quiet=True),
    }
    said: list[str] = []
    lock = threading.Lock()

    def say(line: str) -> None:
        with lock:
            said.append(line)

    waited: list[str] = []

    def idle() -> float:  # the machine's load, once it is below the bar
        waited.append(stamps.read_text() if stamps.exists() else "")
        return 0.42

    started = time.perf_counter()
    outcomes = rr.rerun(list(recipes), 2, tmp_path / "logs", tmp_path, recipes, say=say,
                        quiet_load=idle)
    assert all(o.ok for o in outcomes) and time.perf_counter() - started < 30
    assert stamps.read_text().split() == ["short", "long", "timed"]  # 2 lanes, quiet last
    assert [o.name for o in outcomes] == ["long.md", "short.md", "timed.md"]
    assert said[0].startswith("rerun: long.md")  # longest first
    assert waited == ["short long "]  # asked once, for the quiet one, after the others ended
    assert any(ln.startswith("rerun: timed.md") and ln.endswith("load 0.42 before")
               for ln in said)


def test_an_environment_word_sets_the_commands_environment(tmp_path: Path) -> None:
    argv, env = rr.argv_of("OPENBLAS_NUM_THREADS=1 python -m bench.x --out $RERUN_TMP/f", tmp_path)
    assert argv == [sys.executable, "-m", "bench.x", "--out", f"{tmp_path}/f"]
    assert env == {"OPENBLAS_NUM_THREADS": "1"}


def test_a_name_without_a_recipe_is_exit_2_and_runs_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert rr.main(["--only", "no-such-file"]) == rr.CANNOT_RUN
    assert "no recipe for no-such-file.md" in capsys.readouterr().err


def test_the_dry_run_lists_the_plan_longest_first_quiet_last(
    capsys: pytest.CaptureFixture[str],
) -> None:
    names = sorted(RECIPES)
    assert rr.main(["--dry-run", "--only", *names]) == rr.OK
    lines = capsys.readouterr().out.splitlines()
    manual = [n for n in names if RECIPES[n].by_hand]
    assert [ln.split(":")[0] for ln in lines] == [*rr.order(names)[0], *rr.order(names)[1],
                                                  *manual]
    ran = lines[:len(lines) - len(manual)]
    quiet = [ln for ln in ran if "(alone)" in ln]
    assert quiet and ran[len(ran) - len(quiet):] == quiet
    assert all(": by hand (" in ln for ln in lines[len(ran):])


def test_text_written_by_hand_survives_a_rewrite_of_its_results_file(tmp_path: Path) -> None:
    """publish keeps a `kept` block the file held, at the end, and never twice."""
    from bench import publish
    from bench.gate.blocks import kept_over

    reading = "<!-- kept:reading -->\nReading: 0.25 stays.\n<!-- /kept:reading -->"
    out = tmp_path / "study.md"
    out.write_text(f"# Study\n\n| a |\n|---|\n| 1 |\n\n{reading}\n")
    publish("# Study\n\n| a |\n|---|\n| 2 |\n", out)
    text = out.read_text()
    assert "| 2 |" in text and "| 1 |" not in text  # the tables are the rerun's
    assert text.count(reading) == 1 and text.index(reading) > text.index("| 2 |")
    assert text.rstrip().endswith("-->") and "made on core" in text.splitlines()[-1]
    assert kept_over(text, text) == text  # a file that has it keeps one


def test_the_results_file_names_rerun_tmp_not_the_gone_directory(tmp_path: Path) -> None:
    results = tmp_path / "bench" / "results"
    results.mkdir(parents=True)
    code = ("import os; open('bench/results/a.md', 'w').write("
            "'Command: `x --cache ' + os.environ['RERUN_TMP'] + '/c`')")
    recipes = {"a.md": Recipe((f"python -c {shlex.quote(code)}",), 1)}
    [outcome] = rr.rerun(["a.md"], 1, tmp_path / "logs", tmp_path, recipes, say=lambda _: None)
    assert outcome.ok
    assert (results / "a.md").read_text() == "Command: `x --cache $RERUN_TMP/c`"
