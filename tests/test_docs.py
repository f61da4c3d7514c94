"""Man pages and completions: current with the CLI, render cleanly, and actually complete."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cobell_cli import docs, errors
from cobell_cli.config import SETTINGS

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_HISTORY = REPO / "history" / "example.csv"
BIN_DIR = Path(sys.executable).parent  # where the editable install put the `cobell` script


@pytest.fixture(scope="module")
def tree() -> docs.Command:
    return docs.describe()


@pytest.fixture(scope="module")
def generated() -> dict[str, str]:
    return docs.render_all()


# -- staleness ---------------------------------------------------------------------------------


def test_committed_files_match_the_cli() -> None:
    """The committed man/ and completions/ are what the generator writes for today's CLI."""
    proc = subprocess.run(
        [sys.executable, "-m", "cobell_cli.docs", "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, (
        f"stale generated files; run `python -m cobell_cli.docs` and commit:\n{proc.stdout}"
    )


def test_check_reports_changed_missing_and_orphaned_files(tmp_path: Path) -> None:
    lines: list[str] = []
    assert docs.main(["--output-dir", str(tmp_path)], echo=lines.append) == 0
    assert docs.main(["--check", "--output-dir", str(tmp_path)], echo=lines.append) == 0

    page = tmp_path / "man" / "cobell-history.1"
    page.write_text(page.read_text().replace("Only runs of this job", "Only runs of that job"))
    (tmp_path / "completions" / "cobell.fish").unlink()
    (tmp_path / "man" / "cobell-removed.1").write_text(".TH X 1\n")

    lines.clear()
    assert docs.main(["--check", "--output-dir", str(tmp_path)], echo=lines.append) == 1
    stale = sorted(line.removeprefix("stale: ") for line in lines if line.startswith("stale: "))
    assert stale == ["completions/cobell.fish", "man/cobell-history.1", "man/cobell-removed.1"]

    assert docs.main(["--output-dir", str(tmp_path)], echo=lines.append) == 0
    assert not (tmp_path / "man" / "cobell-removed.1").exists()
    assert docs.main(["--check", "--output-dir", str(tmp_path)], echo=lines.append) == 0


def test_output_does_not_depend_on_hash_seed(tmp_path: Path) -> None:
    """Click keeps some option names in sets; two processes must still write the same bytes."""
    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / seed
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run(
            [sys.executable, "-m", "cobell_cli.docs", "--output-dir", str(out)],
            check=True,
            capture_output=True,
            env=env,
            timeout=120,
        )
        outputs.append({p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()})
    assert outputs[0] == outputs[1]


def test_one_page_per_top_level_command(tree: docs.Command, generated: dict[str, str]) -> None:
    pages = {name for name in generated if name.startswith("man/")}
    expected = {"man/cobell.1"} | {f"man/cobell-{c.path[-1]}.1" for c in tree.subcommands}
    assert pages == expected
    for name in ("submit", "predict", "history", "cluster", "config"):
        assert f"man/cobell-{name}.1" in pages


# -- roff --------------------------------------------------------------------------------------


def test_roff_escape_handles_specials() -> None:
    assert docs.roff_escape("--job") == "\\-\\-job"
    assert docs.roff_escape("a\\b") == "a\\eb"
    assert docs.roff_escape("±") == "\\[u00B1]"
    assert docs.roff_line(".hidden").startswith("\\&.")
    assert docs.roff_line("'quote").startswith("\\&'")
    assert docs.roff_line("see `cobell x`") == "see \\fBcobell x\\fR"


GROFF = shutil.which("groff")
needs_groff = pytest.mark.skipif(
    GROFF is None, reason="groff is not installed (Debian package groff-base)"
)


def render(source: str) -> subprocess.CompletedProcess[str]:
    """Render like man(1) does, as plain text (-P-cbou: no bold/underline escapes)."""
    assert GROFF is not None
    return subprocess.run(
        [GROFF, "-man", "-Tutf8", "-ww", "-P-cbou"],
        input=source,
        capture_output=True,
        text=True,
        timeout=60,
    )


@needs_groff
def test_escaped_text_renders_back_verbatim() -> None:
    tricky = ".starts with a dot", "'starts with a quote", "back\\slash --opt ±5 ≥ 1"
    source = ".TH T 1\n.SH NAME\n" + "\n.br\n".join(docs.roff_line(t) for t in tricky) + "\n"
    proc = render(source)
    assert proc.stderr == ""
    for text in tricky:
        assert text in proc.stdout


def _flags(cmd: docs.Command) -> list[str]:
    return [o for c in cmd.walk() for p in c.params for o in p.all_opts]


@needs_groff
@pytest.mark.parametrize(
    "page", sorted(p.name for p in (REPO / "man").glob("cobell*.1")), ids=str
)
def test_man_page_renders_without_warnings(page: str, tree: docs.Command) -> None:
    proc = render((REPO / "man" / page).read_text())
    assert proc.returncode == 0
    assert proc.stderr == "", proc.stderr
    text = proc.stdout
    for section in (
        "NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "ENVIRONMENT", "FILES", "EXIT STATUS",
        "SEE ALSO",
    ):
        assert f"\n{section}\n" in text, f"{page} lacks {section}"
    cmd = tree if page == "cobell.1" else next(
        c for c in tree.subcommands if f"cobell-{c.path[-1]}.1" == page
    )
    words = text.split()
    for flag in _flags(cmd) if cmd is not tree else [o for p in tree.params for o in p.all_opts]:
        assert any(w.strip(",") == flag for w in words), f"{page} does not show {flag}"
    for setting in SETTINGS:
        assert setting.env in words
    for example in (ex for c in cmd.walk() for ex in c.examples):
        assert " ".join(example.split()) in " ".join(words)


@needs_groff
def test_exit_status_lists_every_code(tree: docs.Command) -> None:
    codes = {v for k, v in vars(errors).items() if k.startswith("EXIT_")}
    text = render((REPO / "man" / "cobell-submit.1").read_text()).stdout
    section = text.split("\nEXIT STATUS\n", 1)[1].split("\nEXAMPLES\n", 1)[0]
    shown = {int(w) for w in section.split() if w.isdigit()}
    assert codes <= shown
    assert {126, 127} <= shown  # the submitted command not found / not executable


@pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed (Debian: man-db)")
def test_man_dash_l_reads_the_page() -> None:
    env = {**os.environ, "MANPAGER": "cat", "PAGER": "cat", "MANWIDTH": "80"}
    proc = subprocess.run(
        ["man", "-l", str(REPO / "man" / "cobell.1")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "cobell-history(1)" in proc.stdout


# -- completions -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def history_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[str]]:
    """A real history database imported from the committed example history."""
    db = tmp_path_factory.mktemp("hist") / "history.db"
    proc = subprocess.run(
        [str(BIN_DIR / "cobell"), "--db", str(db), "history", "import", str(EXAMPLE_HISTORY)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    with EXAMPLE_HISTORY.open(newline="") as fh:
        jobs = {row["job"] for row in csv.DictReader(fh)}
    return db, jobs


def completion_env(db: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COBELL_")}
    env["PATH"] = f"{BIN_DIR}{os.pathsep}{env.get('PATH', '')}"
    if db is not None:
        env["COBELL_DB"] = str(db)
    return env


def bash_complete(*words: str, env: dict[str, str]) -> list[str]:
    """Source the script and call its function as bash's programmable completion would."""
    script = textwrap.dedent(
        """
        source "$1"; shift
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
        _cobell
        printf '%s\\n' "${COMPREPLY[@]}"
        """
    )
    proc = subprocess.run(
        ["bash", "-c", script, "bash", str(REPO / "completions" / "cobell.bash"), *words],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return [line for line in proc.stdout.splitlines() if line]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
class TestBash:
    def test_commands_and_subcommands(self, tree: docs.Command) -> None:
        env = completion_env()
        got = bash_complete("cobell", "", env=env)
        assert "history" in got
        assert got == [c.path[-1] for c in tree.subcommands]
        assert bash_complete("cobell", "history", "", env=env) == [
            "list", "show", "jobs", "import", "export", "rm", "exclude", "include"
        ]
        # global options and their values are skipped when finding the command
        assert "list" in bash_complete("cobell", "--db", "x.db", "history", "l", env=env)

    def test_options_and_choices(self) -> None:
        env = completion_env()
        assert "--target-runtime" in bash_complete("cobell", "submit", "--t", env=env)
        assert "--target-runtime" in bash_complete("cobell", "submit", "-", env=env)
        assert bash_complete("cobell", "history", "list", "--format", "", env=env) == [
            "table", "json", "csv"
        ]
        assert bash_complete("cobell", "predict", "--cluster", "s", env=env) == ["standalone"]

    def test_job_names_come_from_the_history(self, history_db: tuple[Path, set[str]]) -> None:
        db, jobs = history_db
        got = bash_complete("cobell", "predict", "--job", "", env=completion_env(db))
        assert set(got) == jobs
        assert "sgd" in got
        prefix = sorted(jobs)[0][:1]
        got = bash_complete("cobell", "history", "list", "-j", prefix, env=completion_env(db))
        assert got and all(j.startswith(prefix) for j in got)
        # --db on the command line wins over the environment
        got = bash_complete(
            "cobell", "--db", str(db), "submit", "-j", "", env=completion_env(Path("/nonexistent"))
        )
        assert set(got) == jobs

    def test_no_history_means_no_candidates_and_no_noise(self, tmp_path: Path) -> None:
        env = completion_env(tmp_path / "absent.db")
        assert bash_complete("cobell", "predict", "--job", "", env=env) == []
        assert not (tmp_path / "absent.db").exists()

    def test_files_and_the_submitted_command(self, tmp_path: Path) -> None:
        (tmp_path / "runs.csv").write_text("id\n")
        env = completion_env()
        got = bash_complete("cobell", "history", "import", str(tmp_path / "ru"), env=env)
        assert got == [str(tmp_path / "runs.csv")]
        got = bash_complete("cobell", "submit", "-j", "x", "-t", "9", "--", "bas", env=env)
        assert "bash" in got
        got = bash_complete("cobell", "submit", "-j", "x", "--", "bash", str(tmp_path / "r"),
                            env=env)
        assert got == [str(tmp_path / "runs.csv")]


FISH = shutil.which("fish")


def fish_complete(line: str, env: dict[str, str]) -> list[str]:
    assert FISH is not None
    script = f"source {REPO / 'completions' / 'cobell.fish'}; complete -C {line!r}"
    proc = subprocess.run(
        [FISH, "--no-config", "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return [row.split("\t", 1)[0] for row in proc.stdout.splitlines()]


@pytest.mark.skipif(FISH is None, reason="fish is not installed (Debian package fish)")
class TestFish:
    def test_syntax(self) -> None:
        subprocess.run([FISH, "-n", str(REPO / "completions" / "cobell.fish")], check=True)

    def test_completes(self, tree: docs.Command, history_db: tuple[Path, set[str]]) -> None:
        db, jobs = history_db
        env = completion_env(db)
        assert set(fish_complete("cobell ", env)) == {c.path[-1] for c in tree.subcommands}
        assert "--target-runtime" in fish_complete("cobell submit --t", env)
        assert set(fish_complete("cobell history list --format ", env)) == {"table", "json", "csv"}
        assert set(fish_complete("cobell predict --job ", env)) == jobs
        assert "bash" in fish_complete("cobell submit -j x -- bas", env)


ZSH = shutil.which("zsh")

# Drives an interactive zsh on a pseudo-terminal: type the line, press TAB, and read the screen
# until every expected word has shown up (or 30 s passed). Clearing the line only after that
# matters: zsh skips drawing the list when more keys are already waiting.
ZSH_DRIVER = r"""
zmodload zsh/zpty
zpty z 'TERM=dumb zsh -f -i'
zpty -w z "PS1='%% '; fpath=($1 \$fpath); autoload -U compinit; compinit -u -D"
zpty -w z "zstyle ':completion:*' menu no; LISTMAX=1000; print READY"
local line out="" w missing
while zpty -r z line; do [[ $line == READY* ]] && break; done
zpty -w -n z "$2"$'\t'
local deadline=$(( SECONDS + 30 ))
while (( SECONDS < deadline )); do
  if zpty -r -t z line; then out+=$line; else sleep 0.05; fi
  missing=0
  for w in ${=3}; do [[ $out == *$w* ]] || missing=1; done
  (( missing )) || break
done
zpty -w -n z $'\C-u'
zpty -d z
print -r -- "$out"
"""


def zsh_complete(line: str, expected: list[str], env: dict[str, str]) -> str:
    """The screen after TAB; reading stops early once all of `expected` is on it."""
    assert ZSH is not None
    proc = subprocess.run(
        [ZSH, "-f", "-c", ZSH_DRIVER, "zsh", str(REPO / "completions"), line, " ".join(expected)],
        capture_output=True,
        text=True,
        env=env,
        timeout=90,
    )
    return proc.stdout.replace("\r", "")


@pytest.mark.skipif(ZSH is None, reason="zsh is not installed (Debian package zsh)")
class TestZsh:
    def test_syntax_and_registration(self) -> None:
        script = REPO / "completions" / "_cobell"
        subprocess.run([ZSH, "-n", str(script)], check=True)
        proc = subprocess.run(
            [ZSH, "-f", "-c", f"autoload -U compinit; compinit -u -D; source {script}; "
             "print -r -- $_comps[cobell]"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.stdout.strip() == "_cobell", proc.stderr

    def test_completes_commands_and_job_names(self, history_db: tuple[Path, set[str]]) -> None:
        db, jobs = history_db
        env = completion_env(db)
        screen = zsh_complete("cobell hist", ["history "], env)
        assert "cobell history " in screen
        screen = zsh_complete("cobell history list --format ", ["table", "json", "csv"], env)
        assert {"table", "json", "csv"} <= set(screen.split()), screen
        screen = zsh_complete("cobell predict --job ", sorted(jobs), env)
        assert jobs <= set(screen.split()), screen


# -- help texts (issue 7, part 5) --------------------------------------------------------------


def test_every_command_has_an_example(tree: docs.Command) -> None:
    missing = [c.name for c in tree.walk() if not c.is_group and not c.examples]
    assert missing == [], f"commands whose help has no 'Example:' line: {missing}"


def test_every_command_has_a_summary(tree: docs.Command) -> None:
    for cmd in tree.walk():
        assert cmd.summary, f"{cmd.name} has no help text"
