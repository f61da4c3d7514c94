"""The README and docs/ show what the code does: every `cobell` command they show parses against
today's CLI, those that need no cluster run on the example history, transcripts print what they
show, links land on a page and heading that exist, the settings table is the settings, and the
tests a page names exist. The README stays the five-minute page."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
import typer

from cobell_cli import api
from cobell_cli.cli import app
from cobell_cli.config import SETTINGS
from cobell_cli.errors import CobellError
from tests import doc_pages
from tests.cli_support import cobell
from tests.doc_pages import PAGES, ROOT, Shown

EXAMPLE = ROOT / "history" / "example.csv"
EXAMPLE_JOBS = {"sgd", "wordcount", "kmeans"}
PLACEHOLDER = re.compile(r"[A-Z][A-Z_]*")  # RUN_ID, FILE, N: a value the reader fills in
# Commands that need no cluster, no Spark and no job the example history lacks: run for real.
RUNNABLE = {
    ("predict",), ("model", "show"), ("model", "eval"), ("config", "show"),
    ("history", "list"), ("history", "show"), ("history", "jobs"), ("history", "import"),
    ("history", "export"),
}
# Click's errors (typer vendors click, so they are matched by name): a shown command that
# leaves out a required option is a mention, fine in prose (`cobell model show`), not in a
# code block, where the reader copies the whole line.
MENTION_ONLY = {"MissingParameter", "NoArgsIsHelpError"}


ROOT_COMMAND = typer.main.get_command(app)


def parse(argv: tuple[str, ...]) -> tuple[tuple[str, ...], Any]:
    """Parse like `cobell ARGV` would, without running it: the command path and its context.
    Raises click's own error for an unknown command or option, a bad value, an extra
    argument or a missing required one. A placeholder stands for a value (`1`); where the
    command belongs (`cobell COMMAND --help`) it ends the check."""
    cmd, args, path = ROOT_COMMAND, list(argv), ()
    while hasattr(cmd, "resolve_command"):
        ctx = cmd.make_context(" ".join(("cobell", *path)), args)
        rest = [*ctx._protected_args, *ctx.args]
        if not rest or PLACEHOLDER.fullmatch(rest[0]):
            return path, ctx
        name, cmd, args = cmd.resolve_command(ctx, rest)
        path = (*path, name)
    args = ["1" if PLACEHOLDER.fullmatch(a) else a for a in args]
    return path, cmd.make_context(" ".join(("cobell", *path)), args)


def problem(argv: tuple[str, ...], mention: bool) -> str | None:
    """Why `cobell ARGV` would not parse, in click's words; None when it does."""
    try:
        parse(argv)
    except CobellError as exc:  # a value cobell's own parsers refuse (a duration, a time)
        return f"{type(exc).__name__}: {exc.line()}"
    except Exception as exc:
        if not hasattr(exc, "format_message"):
            raise
        if mention and type(exc).__name__ in MENTION_ONLY:
            return None
        return f"{type(exc).__name__}: {exc.format_message()}"
    return None


SHOWN = doc_pages.shown_commands()


def inline_mentions() -> list[Shown]:
    """`cobell ...` in backticks in the pages' prose."""
    found = []
    for page in PAGES:
        for number, line in enumerate(page.read_text().splitlines(), 1):
            for span in re.findall(r"`(cobell [^`]*)`", line):
                for argv in doc_pages.command_argvs(span):
                    found.append(Shown(f"{page.relative_to(ROOT)}:{number}", span, argv))
    return found


# -- commands ------------------------------------------------------------------------------


def test_the_pages_show_commands() -> None:
    """The extraction finds the commands (an empty list would pass everything below)."""
    pages = {shown.where.split(":")[0] for shown in SHOWN}
    assert {"README.md", "docs/planning.md", "docs/history.md", "docs/yarn.md"} <= pages
    assert len(SHOWN) >= 30
    assert any(shown.argv[:1] == ("demo",) for shown in SHOWN)  # the main command's


@pytest.mark.parametrize("shown", SHOWN, ids=lambda s: s.where)
def test_every_command_in_a_code_block_parses(shown: Shown) -> None:
    assert problem(shown.argv, mention=False) is None, (
        f"{shown.where}: `{shown.text}`: {problem(shown.argv, mention=False)}"
    )


def test_every_command_mentioned_in_the_prose_parses() -> None:
    mentions = inline_mentions()
    assert len(mentions) >= 50
    wrong = [f"{m.where}: `{m.text}`: {p}" for m in mentions if (p := problem(m.argv, True))]
    assert wrong == []


@pytest.mark.parametrize(
    "text, expected",
    [
        ("cobell predict -j sgd -t 300 --confidenc 0.9", "NoSuchOption"),
        ("cobell histroy list", "UsageError"),
        ("cobell predict -j sgd -t soon", "UsageError: --target-runtime 'soon'"),
        ("cobell history list --format yaml", "BadParameter"),
        ("cobell history show 12 13", "UsageError"),
        ("cobell model show", "MissingParameter"),
        ("cobell local-cluster --yarn", "NoSuchOption"),
    ],
)
def test_the_parse_check_catches_a_wrong_command(text: str, expected: str) -> None:
    [argv] = doc_pages.command_argvs(text)
    found = problem(argv, mention=False)
    assert found is not None and found.startswith(expected), found


@pytest.mark.parametrize(
    "line, argvs",
    [
        ("$ cobell predict -j sgd -t 5min --cluster none",
         [("predict", "-j", "sgd", "-t", "5min", "--cluster", "none")]),
        ("cobell local-cluster status --yarn; cobell local-cluster stop --yarn",
         [("local-cluster", "status", "--yarn"), ("local-cluster", "stop", "--yarn")]),
        ("./.ci/setup && .venv/bin/cobell demo --target-runtime 100",
         [("demo", "--target-runtime", "100")]),
        ("15 2 * * *  COBELL_RM_URL=http://rm1:8088 /opt/cobell/bin/cobell submit --json -- a.py"
         " >> /var/log/cobell.jsonl 2>&1", [("submit", "--json", "--", "a.py")]),
        ("cobell model eval --job sgd [-p nested|loso] [--json]   # MAPE",
         [("model", "eval", "--job", "sgd", "-p", "nested", "--json")]),
        ("cobell model whatif --event-log LOG [-x N ...] 2>&1",
         [("model", "whatif", "--event-log", "LOG", "-x", "N")]),
        ("mkdir -p ~/.zfunc && cp completions/_cobell ~/.zfunc/", []),
    ],
)
def test_commands_are_read_from_shell_lines(line: str, argvs: list[tuple[str, ...]]) -> None:
    assert doc_pages.command_argvs(line) == argvs


def runnable(shown: Shown) -> bool:
    """A shown command this test can run as shown: it needs no cluster and no Spark, and names
    no job the example history lacks. (One that does not parse is the parse test's failure.)"""
    if problem(shown.argv, mention=False) is not None:
        return False
    path, ctx = parse(shown.argv)
    cluster_flags = {"--from-yarn", "--from-spark-history", "--from-event-logs", "--rm-url"}
    return (
        path in RUNNABLE
        and ctx.params.get("job") in (None, *EXAMPLE_JOBS)
        and not cluster_flags & set(shown.argv)
    )


RUNNABLE_SHOWN = [s for s in SHOWN if runnable(s)]


@pytest.fixture
def example_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment of a reader who imported history/example.csv, in the repository root,
    with no cluster configured."""
    db = tmp_path / "history.db"
    assert cobell("--db", db, "history", "import", EXAMPLE).exit_code == 0
    monkeypatch.chdir(ROOT)
    return {"COBELL_DB": str(db), "COBELL_CLUSTER": "none"}


def test_some_shown_commands_are_run() -> None:
    assert len(RUNNABLE_SHOWN) >= 8
    assert {s.argv[0] for s in RUNNABLE_SHOWN} >= {"predict", "history", "model"}


@pytest.mark.parametrize("shown", RUNNABLE_SHOWN, ids=lambda s: s.where)
def test_the_commands_that_need_no_cluster_run_on_the_example_history(
    shown: Shown, example_history: dict[str, str]
) -> None:
    files = [a for a in shown.argv if a.endswith((".csv", ".json")) and not a.startswith("-")]
    for name in files:
        if not (ROOT / name).exists():
            pytest.skip(f"{name} is absent here (real data lives in ../shared/data)")
    argv = ["1" if PLACEHOLDER.fullmatch(a) else a for a in shown.argv]
    env = dict(example_history)
    if parse(shown.argv)[0] == ("history", "import"):  # into a history of its own
        env["COBELL_DB"] = str(Path(env["COBELL_DB"]).with_name("imported.db"))
    result = cobell(*argv, env=env)
    assert result.exit_code == 0, f"{shown.where}: `{shown.text}`:\n{result.stderr}"
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr


TRANSCRIPTS = doc_pages.transcripts()


def test_the_pages_show_a_transcript() -> None:
    assert any(t.where.startswith("docs/planning.md:") for t in TRANSCRIPTS)
    assert all(len(t.output) >= 2 for t in TRANSCRIPTS)


def matches(shown: tuple[str, ...], printed: list[str]) -> bool:
    """Line by line; a shown line ending in `...` stands for any line that starts like it."""
    return len(shown) == len(printed) and all(
        s == p or (s.endswith("...") and p.startswith(s[:-3]))
        for s, p in zip(shown, printed, strict=True)
    )


@pytest.mark.parametrize("transcript", TRANSCRIPTS, ids=lambda t: t.where)
def test_a_transcript_prints_what_it_shows(
    transcript: doc_pages.Transcript, example_history: dict[str, str]
) -> None:
    result = cobell(*transcript.argv, env=example_history)
    assert result.exit_code == 0, result.stderr
    printed = result.stdout.rstrip("\n").splitlines()
    assert matches(transcript.output, printed), (
        f"{transcript.where} shows other output than cobell prints today; paste this:\n"
        + "\n".join(printed)
    )


def test_a_transcript_line_with_dots_matches_its_start_only() -> None:
    assert matches(("decision: 12 (...",), ["decision: 12 (model, 267 s)"])
    assert not matches(("decision: 12 (...",), ["decision: 13 (model, 267 s)"])
    assert not matches(("a", "b"), ["a"])


# -- links, tables, names ------------------------------------------------------------------


def test_every_relative_link_lands_on_a_file_and_heading() -> None:
    wrong = []
    for page in (*PAGES, ROOT / "history" / "README.md"):
        for number, target in doc_pages.links(page):
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                wrong.append(f"{page.relative_to(ROOT)}:{number}: {target} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in doc_pages.anchors(file):
                wrong.append(f"{page.relative_to(ROOT)}:{number}: {target} (no such heading)")
    assert wrong == []


def test_the_anchor_of_a_heading_is_githubs() -> None:
    page = ROOT / "docs" / "model.md"
    assert {"cobell-model", "the-one-standard-error-rule", "co-runners-the-job-never-met"} <= (
        doc_pages.anchors(page)
    )


def test_every_page_in_docs_is_in_the_index_and_the_readme() -> None:
    index = (ROOT / "docs" / "README.md").read_text()
    readme = (ROOT / "README.md").read_text()
    for page in PAGES:
        if page.parent.name == "docs" and page.name != "README.md":
            assert f"]({page.name})" in index, page.name
            assert f"](docs/{page.name})" in readme, page.name


def test_the_settings_table_is_the_settings() -> None:
    rows = doc_pages.table((ROOT / "docs" / "configuration.md").read_text(), "| key |")
    documented: dict[str, tuple[str, str]] = {}
    for key_cell, env_cell, default_cell, _ in rows:
        keys, envs = re.findall(r"`(\w+)`", key_cell), re.findall(r"`(\w+)`", env_cell)
        defaults = re.findall(r"`([^`]+)`", default_cell) or [""] * len(keys)
        assert len(keys) == len(envs) == len(defaults), key_cell
        documented.update(zip(keys, zip(envs, defaults, strict=True), strict=True))
    assert set(documented) == {s.name for s in SETTINGS}
    for setting in SETTINGS:
        env, default = documented[setting.name]
        assert env == setting.env, setting.name
        if isinstance(setting.default, bool):
            assert default == str(setting.default).lower(), setting.name
        elif isinstance(setting.default, int | float):
            assert float(default) == setting.default, setting.name
        elif isinstance(setting.default, str):
            assert default == setting.default, setting.name


def test_the_tests_a_page_names_exist() -> None:
    """docs/development.md names the tests that check each YARN path (`C::test_...`)."""
    page = (ROOT / "docs" / "development.md").read_text()
    files = dict(re.findall(r"`([CSL])`\s+(?:is\s+)?`(tests/[\w/]+\.py)`", page))
    assert set(files) == {"C", "S", "L"}
    named = re.findall(r"`(?:([CSL])::|(tests/[\w/]+\.py)::)(test_\w+)`", page)
    assert len(named) >= 20
    for short, path, test in named:
        source = (ROOT / (files[short] if short else path)).read_text()
        assert re.search(rf"def {test}\(", source), f"{short or path}::{test}"


def test_the_python_on_the_pages_compiles_and_uses_the_api() -> None:
    python = [b for page in PAGES for b in doc_pages.code_blocks(page) if b.lang == "python"]
    assert any(b.page.name == "python-api.md" for b in python)
    for block in python:
        tree = ast.parse("\n".join(block.lines), filename=block.where)
        used = {n.attr for n in ast.walk(tree)
                if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                and n.value.id == "api"}
        assert used, block.where
        assert used <= set(api.__all__), used - set(api.__all__)


# -- the README ----------------------------------------------------------------------------


def test_the_readme_is_the_five_minute_page() -> None:
    """At most 300 lines; no benchmark figures (they live in docs/benchmarks.md)."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    assert "bench/results/" not in readme
    for marker in ("main-command", "test-command"):
        assert f"<!-- {marker} -->\n```\n" in readme and f"```\n<!-- /{marker} -->" in readme
