"""What a cached `cobell predict` leaves undone, and that the shortcuts change no output.

A cached predict has ~0.13 s in all (bench/results/latency.md); importlib.metadata (which
tabulate asks for its own version) cost ~10 ms of it, core/profile.py's dataclasses ~2 ms,
building click commands for every sub-command ~6 ms.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_support import cobell

EXAMPLE = Path(__file__).resolve().parents[1] / "history" / "example.csv"


def run_python(code: str, *args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_a_table_renders_as_tabulate_does_without_importlib_metadata() -> None:
    rows = [{"job": "sgd", "runs": 3, "runtime_s": 12.25}, {"job": "wc\x1b", "runtime_s": 0.5}]
    code = (
        "import json, sys\n"
        "from cobell_cli.output import table\n"
        f"text = table({rows!r}, ['job', 'runs', 'runtime_s'])\n"
        "loaded = 'importlib.metadata' in sys.modules\n"
        "import importlib.metadata\n"  # the real one, as if the stand-in never existed
        "print(json.dumps([text, loaded, importlib.metadata.version('tabulate'),"
        " importlib.metadata.PackageNotFoundError.__module__]))\n"
    )
    text, loaded, version, error_module = json.loads(run_python(code))
    assert loaded is False
    assert version.count(".") >= 1 and error_module == "importlib.metadata"
    # The same text as tabulate imported the ordinary way (this process has importlib.metadata).
    from tabulate import tabulate

    expected = tabulate([["sgd", "3", "12.2"], ["wc\\x1b", "", "0.5"]],
                        headers=["job", "runs", "runtime_s"], tablefmt="simple",
                        disable_numparse=True)
    assert text == expected


def test_an_html_table_escapes_as_with_the_real_html_module() -> None:
    """html stands in while tabulate imports (output._tabulate): a table leaves it unloaded,
    and an HTML table made later in that process escapes with the real html.escape."""
    cell = "<a href='x'>&\"b\"</a>"
    html_table = f"tabulate.tabulate([[{cell!r}]], headers=['h&'], tablefmt='html')"
    code = (
        "import json, sys\n"
        "from cobell_cli.output import table\n"
        "table([{'a': 1}], ['a'])\n"
        "loaded = 'html' in sys.modules\n"
        "import tabulate\n"
        f"text = {html_table}\n"
        "print(json.dumps([loaded, text, 'html' in sys.modules]))\n"
    )
    loaded, text, loaded_after = json.loads(run_python(code))
    assert loaded is False and loaded_after is True
    plain = json.loads(run_python(f"import json, tabulate; print(json.dumps({html_table}))"))
    assert text == plain and "&lt;a href=&#x27;x&#x27;&gt;&amp;&quot;b&quot;" in text


def test_the_executable_collects_young_objects_less_often() -> None:
    """cobell_cli/__main__.py raises the first generation's threshold (700 by default)."""
    code = ("import gc, json; default = gc.get_threshold(); import cobell_cli.__main__; "
            "print(json.dumps([default, gc.get_threshold()]))")
    default, raised = json.loads(run_python(code))
    assert raised[0] >= 50 * default[0] and raised[1:] == default[1:]


def test_with_another_thread_running_tabulate_imports_the_ordinary_way() -> None:
    """The stand-in is process-wide while it is in sys.modules: with a second thread (a
    background history writer) it is not used, so that thread never sees it."""
    code = (
        "import json, sys, threading\n"
        "stop = threading.Event()\n"
        "t = threading.Thread(target=stop.wait); t.start()\n"
        "from cobell_cli.output import table\n"
        "table([{'a': 1}], ['a'])\n"
        "real = 'importlib.metadata' in sys.modules\n"
        "import tabulate\n"
        "stop.set(); t.join()\n"
        "print(json.dumps([real, tabulate.__version__]))\n"
    )
    real, version = json.loads(run_python(code))
    assert real is True and version != "unknown"


# Never on a cached predict: numpy (the fit needs it), libraries cobell does not use to
# predict (scipy alone costs ~0.33 s, sklearn and pandas more), and what a plain predict does
# not need: the deadline scheduler (~15 ms), the other commands' modules (cli/__init__.py
# registers only the command named), the co-runners' overlap fix-point and remaining work
# (a plan without co-runners; 10 dataclasses, ~3 ms), statistics with fractions and decimal
# (core/normal.py, ~3 ms), html (output._tabulate).
UNUSED_LIBRARIES = ("scipy", "sklearn", "pandas")
OTHER_COMMANDS = ("submit", "history", "model", "cluster", "local_cluster", "config_cmd",
                  "demo")
HEAVY = ("importlib.metadata", "cobell_cli.core.profile", "numpy", *UNUSED_LIBRARIES,
         "cobell_cli.api.deadlines", "cobell_cli.core.schedule",
         *(f"cobell_cli.cli.{m}" for m in OTHER_COMMANDS), "cobell_cli.core.overlap",
         "cobell_cli.core.remaining", "statistics", "decimal", "fractions", "html")


def predict_twice(args: list[str], tmp_path: Path) -> list[tuple[str, set[str]]]:
    """A predict in a new process, twice (a miss that fits, then a hit), with its own cache
    directory: each one's output and the modules of HEAVY it had loaded at its end."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_DATA_HOME": str(tmp_path / "d")}
    env.pop("COBELL_MODEL_CACHE", None)
    probe = (
        "import sys\n"
        "from cobell_cli.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n"
    )
    out = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True,
                              text=True, timeout=120, env=env)
        assert proc.returncode == 0, proc.stderr
        out.append((proc.stdout, set(ast.literal_eval(proc.stderr.strip().splitlines()[-1]))))
    return out


def test_a_cached_predict_imports_neither_importlib_metadata_nor_the_profile_code(
        tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    result = cobell("--db", db, "history", "import", EXAMPLE)
    assert result.exit_code == 0, result.stderr
    args = ["--db", str(db), "predict", "-j", "sgd", "-t", "300", "--cluster", "none"]
    (miss_out, miss), (hit_out, hit) = predict_twice(args, tmp_path)
    assert "numpy" in miss and not miss & set(UNUSED_LIBRARIES)
    assert not miss & {f"cobell_cli.cli.{m}" for m in OTHER_COMMANDS}
    assert hit == set()
    assert "scale-out" in hit_out.lower() and miss_out == hit_out


def test_a_cached_predict_of_a_job_with_event_log_profiles_imports_only_the_profile_code(
        tmp_path: Path) -> None:
    """What `cobell submit` records for a Spark job: runs with their event-log profiles (the
    job's at two executor counts, and another job's). A cached predict decodes and replays
    them (core/profile.py, core/whatif/), and loads nothing else of HEAVY: not statistics (the
    what-if's medians come from core/median.py), nor numpy."""
    from cobell_cli.store.history import History
    from tests.test_replay_cache import etl_profile

    db = tmp_path / "h.db"
    with History.open(db) as history:
        for job, x in (("etl", 2), ("etl", 4), ("other", 2), ("other", 4)):
            p = etl_profile(executors=x)
            [run_id] = history.insert_runs([{
                "job": job, "status": "succeeded", "scale_out": x, "runtime_s": p.runtime_s,
                "started_at": 100.0 * x}], keep_ids=False)
            history.save_profile(run_id, p)
    args = ["--db", str(db), "predict", "-j", "etl", "-t", "20", "--cluster", "none", "--json"]
    (miss_out, _), (hit_out, hit) = predict_twice(args, tmp_path)  # the miss stores replays
    assert hit == {"cobell_cli.core.profile"}
    outputs = [json.loads(miss_out), json.loads(hit_out)]
    assert outputs[0]["phase"] == "bootstrap-whatif"  # the plan replayed the profiles
    for out in outputs:
        out.pop("now", None)
    assert outputs[0] == outputs[1]

COMMAND_LINES = [
    ["predict", "--help"],
    ["--db", "h.db", "predict", "--help"],
    ["--db=h.db", "--debug", "submit", "--help"],
    ["history", "--help"],
    ["history", "import", "--help"],
    ["model", "--help"],
    ["cluster", "--help"],
    ["local-cluster", "--help"],
    ["config", "show"],
    ["demo", "--help"],
    ["predict"],  # missing options: click's error names `cobell predict --help`
    ["predict", "-j", "x", "-t", "10", "--nosuch"],
    ["history", "nosuch"],
    ["nosuch"],
    ["--help"],
    ["--help", "predict"],
    ["-h"],
    ["--db", "h.db", "--help"],
    ["--version"],
    ["--db", "--help"],  # --help is --db's value: click's "Missing command"
    ["--", "predict"],
    ["--db"],
    [],
]


@pytest.mark.parametrize("args", COMMAND_LINES, ids=" ".join)
def test_the_one_command_app_answers_as_the_whole_app(
        args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cobell_cli import cli

    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "COBELL_DB": str(tmp_path / "h.db")}
    monkeypatch.chdir(tmp_path)
    monkeypatch.delattr(cli, "app", raising=False)  # as in a new process: no whole app yet
    pruned = cobell(*args, env=env)
    monkeypatch.setattr(cli, "_app_for", lambda _: cli.app)
    whole = cobell(*args, env=env)
    assert (pruned.exit_code, pruned.stdout, pruned.stderr) == (
        whole.exit_code, whole.stdout, whole.stderr)


def test_the_whole_app_is_built_on_first_use_with_every_command_in_help_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from cobell_cli import cli

    monkeypatch.delattr(cli, "app", raising=False)
    assert "app" not in vars(cli)
    whole = cli.app
    assert cli.app is whole and vars(cli)["app"] is whole  # built once, then a plain global
    names = [c.name for c in whole.registered_commands] + [
        g.name for g in whole.registered_groups]
    assert sorted(names) == sorted(c[0] for c in cli.COMMANDS)
    assert not cli._root.registered_commands and not cli._root.registered_groups
    with pytest.raises(AttributeError, match="nosuch"):
        cli.nosuch  # noqa: B018 - the module's __getattr__ answers only `app`


@pytest.mark.parametrize("built", [False, True], ids=["lazily", "from the whole app"])
def test_a_command_line_builds_only_its_command(
        built: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    from cobell_cli import cli

    monkeypatch.delattr(cli, "app", raising=False)
    if built:
        cli.app  # noqa: B018
    _app_for = cli._app_for
    one = _app_for(["--db", "h.db", "predict", "-j", "sgd", "-t", "300"])
    assert [c.name for c in one.registered_commands] == ["predict"]
    assert not one.registered_groups
    group = _app_for(["--config", "c.toml", "history", "jobs"])
    assert [g.name for g in group.registered_groups] == ["history"]
    assert not group.registered_commands
    assert len(cli.app.registered_commands) > 1  # the app itself is left whole
    for whole in (["nosuch"], ["--", "predict"], ["--", "--help"]):
        assert _app_for(whole) is cli.app
    for root in (["--help", "predict"], [], ["--db", "h.db", "-h"], ["--version"]):
        assert _app_for(root) is cli.app  # once built, the whole app answers the root too


def test_the_root_alone_is_answered_by_stand_ins(monkeypatch: pytest.MonkeyPatch) -> None:
    from cobell_cli import cli

    monkeypatch.delattr(cli, "app", raising=False)
    for root in (["--help", "predict"], [], ["--db", "h.db", "-h"], ["--version"]):
        listing = cli._app_for(root)
        assert [c.callback for c in listing.registered_commands] == [cli._stand_in] * len(
            cli.COMMANDS)
        assert not listing.registered_groups
    assert "app" not in vars(cli)  # nothing built the whole app
    with pytest.raises(RuntimeError, match="stand-in"):
        cli._stand_in()


def test_the_roots_help_lists_every_command_without_importing_one() -> None:
    """`cobell --help` lists each command's name and short help: stand-ins answer, and no
    command's module is imported (cli._listing); the text is the whole app's (above)."""
    code = (
        "import sys\n"
        "from cobell_cli.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit as exit:\n"
        "    assert exit.code == 0, exit.code\n"
        "print(sorted(m for m in sys.modules if m.startswith('cobell_cli.cli.')), "
        "file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    from cobell_cli import cli

    for name, *_ in cli.COMMANDS:
        assert f"  {name} " in proc.stdout
    assert proc.stderr.strip() == "['cobell_cli.cli.common']"


def test_the_root_options_that_take_a_value_are_the_ones_the_pruning_skips() -> None:
    """A root option added later with a value would otherwise be read as the command name."""
    import typer.main

    from cobell_cli.cli import ROOT_ONLY, ROOT_OPTIONS_WITH_VALUE, app

    root = typer.main.get_command(app)
    with_value = {o for p in root.params if not getattr(p, "is_flag", False)
                  and not getattr(p, "count", False) for o in p.opts}
    assert with_value == set(ROOT_OPTIONS_WITH_VALUE)
    flags = {o for p in root.params for o in p.opts} - with_value
    assert set(ROOT_ONLY) <= flags | {"-h", "--help"}
