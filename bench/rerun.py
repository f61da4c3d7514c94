"""Make the stale results files again, unattended: `python -m bench rerun`.

    python -m bench rerun [--jobs 2] [--only NAME ...] [--all] [--dry-run]

A change to cobell_cli/core makes every stamped results file stale (bench/staleness.py), and
making them again by hand took an hour or more of reading each file's protocol. Each file's
commands are in bench/recipes.py; this runs those of the stale files (`--all`: of every
stamped one; `--only`: of those named), each file's commands in order in a fresh directory
($RERUN_TMP), up to `--jobs` files at a time, longest first. A recipe that times wall or
CPU time (`quiet`) runs after the others, alone, once the 1-minute load average is below
bench.quiet's bar (1.5), which its log and the summary keep. Each file's output goes to a log
(~/.cache/cobell/rerun/NAME.log); the summary names the files still stale afterwards.

What it cannot do: rewrite the prose of README.md and docs/ that quotes a figure which
moved. tests/test_published_numbers.py names each such number; a person rewrites it.

Exit 0: every chosen file is current; 1: a command failed or a file is still stale; 2: a
chosen file has no recipe, or an unknown name.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bench.quiet import wait_for_quiet
from bench.recipes import RECIPES, Recipe
from bench.staleness import ROOT, survey

OK, FAILED, CANNOT_RUN = 0, 1, 2


@dataclass(frozen=True)
class Outcome:
    """One file's rerun: whether every command succeeded, how long it took, its log."""

    name: str
    ok: bool
    seconds: float
    log: Path
    failed_command: str | None = None


def argv_of(command: str, tmp: Path) -> tuple[list[str], dict[str, str]]:
    """A recipe's command as argv and the environment it sets: `python` is this interpreter,
    $RERUN_TMP the fresh dir, leading NAME=value words the environment."""
    words = shlex.split(command.replace("$RERUN_TMP", str(tmp)))
    env: dict[str, str] = {}
    while words and "=" in words[0] and words[0].split("=")[0].isidentifier():
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    return [sys.executable if w == "python" else w for w in words], env


def log_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "cobell" / "rerun"


def run_recipe(name: str, recipe: Recipe, logs: Path, root: Path = ROOT) -> Outcome:
    """Run the recipe's commands in order (stopping at the first that fails), output to a log."""
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{Path(name).stem}.log"
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cobell-rerun-") as tmp, log.open("w") as out:
        for command in recipe.commands:
            out.write(f"$ {command}\n")
            out.flush()
            argv, env = argv_of(command, Path(tmp))
            done = subprocess.run(argv, cwd=root, env={**os.environ, "RERUN_TMP": tmp, **env},
                                  stdout=out, stderr=subprocess.STDOUT, check=False)
            if done.returncode != 0:
                return Outcome(name, False, time.perf_counter() - started, log, command)
        _name_the_tmp(root / "bench" / "results" / name, tmp)
    return Outcome(name, True, time.perf_counter() - started, log)


def _name_the_tmp(path: Path, tmp: str) -> None:
    """The results file says `$RERUN_TMP` where its command line held the temporary dir, which
    is gone: the recipe, not a path, says where the intermediate files were."""
    if path.is_file() and tmp in (text := path.read_text()):
        path.write_text(text.replace(tmp, "$RERUN_TMP"))


def order(names: Iterable[str], recipes: Mapping[str, Recipe] = RECIPES,
          ) -> tuple[list[str], list[str]]:
    """The shared files longest first, then the quiet ones (run alone), longest first; not
    the ones made by hand."""
    ranked = sorted((n for n in names if not recipes[n].by_hand), key=lambda n: -recipes[n].minutes)
    return ([n for n in ranked if not recipes[n].quiet], [n for n in ranked if recipes[n].quiet])


def by_hand(names: Iterable[str], recipes: Mapping[str, Recipe] = RECIPES) -> list[str]:
    """What a person makes: each file assembled by hand, why, and the commands to start from."""
    return [f"{n}: by hand ({recipes[n].by_hand}): " + " && ".join(recipes[n].commands)
            for n in names if recipes[n].by_hand]


def chosen(only: Sequence[str] | None, every: bool) -> list[str]:
    """The files to make again: named, every stamped one, or the stale ones."""
    if only:
        return [n if n.endswith(".md") else f"{n}.md" for n in only]
    return [s.name for s in survey() if s.state == "stale" or (every and s.state == "current")]


def rerun(names: Sequence[str], jobs: int, logs: Path, root: Path = ROOT,
          recipes: Mapping[str, Recipe] = RECIPES, say: Callable[[str], object] = print,
          quiet_load: Callable[[], float] = wait_for_quiet) -> list[Outcome]:
    """Every named file's recipe: `jobs` at a time, then the quiet ones one by one, each once
    `quiet_load` (which waits for an idle machine) returns."""
    shared, quiet = order(names, recipes)

    def one(name: str) -> Outcome:
        count = len(recipes[name].commands)
        load = f", load {quiet_load():.2f} before" if recipes[name].quiet else ""
        say(f"rerun: {name}: {count} command{'s' * (count > 1)}, ~{recipes[name].minutes:g} min"
            + load)
        outcome = run_recipe(name, recipes[name], logs, root)
        say(f"rerun: {name} {'done' if outcome.ok else 'FAILED'} in {outcome.seconds:.0f} s"
            + ("" if outcome.ok else f" at `{outcome.failed_command}` (log: {outcome.log})"))
        return outcome

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        outcomes = list(pool.map(one, shared))
    return outcomes + [one(name) for name in quiet]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench rerun",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="files at a time (default 2)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="these results files")
    parser.add_argument("--all", action="store_true", help="every stamped file, not only stale")
    parser.add_argument("--dry-run", action="store_true", help="say what would run, run nothing")
    args = parser.parse_args(argv)
    names = chosen(args.only, args.all)
    missing = [n for n in names if n not in RECIPES]
    if missing:
        print(f"bench rerun: no recipe for {', '.join(missing)} (bench/recipes.py)",
              file=sys.stderr)
        return CANNOT_RUN
    if not names:
        print("bench rerun: nothing to make again (no results file is stale)")
        return OK
    manual = by_hand(names)
    if args.dry_run:
        shared, quiet = order(names)
        for name in shared + quiet:
            recipe = RECIPES[name]
            print(f"{name}: ~{recipe.minutes:g} min{' (alone)' if recipe.quiet else ''}: "
                  + " && ".join(recipe.commands))
        for line in manual:
            print(line)
        return OK
    outcomes = rerun(names, args.jobs, log_dir())
    for line in manual:
        print(line)
    still = [s.name for s in survey() if s.name in names and s.state != "current"]
    failed = [o.name for o in outcomes if not o.ok]
    print(f"bench rerun: {len(outcomes) - len(failed)} of {len(outcomes)} files made again"
          + (f"; failed: {', '.join(failed)}" if failed else "")
          + (f"; still not current: {', '.join(still)}" if still else ""))
    return FAILED if failed or still else OK


if __name__ == "__main__":
    raise SystemExit(main())
