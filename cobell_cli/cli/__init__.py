"""The `cobell` command line: a thin layer over the Python API.

Sub-command modules import only typer and the standard library at module level, so that
`cobell --help` stays fast; numpy, requests and sqlite-utils load inside commands. A command
line that names its command imports only that command's module (`_app_for`), the root's
help and --version none; `app`, the whole app with every command (completions, man pages),
is built on first use.
"""

from __future__ import annotations

import copy
import importlib
import sys
from typing import Any

import typer

from cobell_cli import __version__
from cobell_cli.cli.common import state
from cobell_cli.threads import limit_blas_threads

_root = typer.Typer(
    name="cobell",
    help=(
        "Turn a runtime target into a resource reservation for recurring Spark/Flink jobs "
        "on shared clusters, using the job's history and the co-runners on the cluster."
    ),
    epilog="Example: cobell history import ../shared/data/bell/sgd.spark.csv --job sgd",
    no_args_is_help=True,
    add_completion=False,  # completions/ holds generated scripts that also complete job names
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"cobell {__version__}")
        raise typer.Exit()


@_root.callback()
def root(
    ctx: typer.Context,
    db: str | None = typer.Option(
        None, "--db", metavar="FILE", help="History database file. [env: COBELL_DB]"
    ),
    config: str | None = typer.Option(
        None,
        "--config",
        metavar="FILE",
        help="Config file (default: $XDG_CONFIG_HOME/cobell/config.toml). [env: COBELL_CONFIG]",
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors."),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    st = state(ctx)
    st.db, st.config_path, st.debug = db, config, debug


# Every command, in --help order: (name, module in cobell_cli.cli, its function or its group's
# Typer `app`, short help). A module is imported only when its command is registered.
COMMANDS = (
    ("submit", "submit", "submit", "Run a job at the scale-out meeting its target."),
    ("predict", "predict", "predict", "Show the plan submit would follow."),
    ("history", "history", "app", "Inspect, import, export the history."),
    ("model", "model", "app", "Show, evaluate, plot a runtime model."),
    ("cluster", "cluster", "app", "What cobell sees on the cluster."),
    ("local-cluster", "local_cluster", "app", "A Spark cluster on this machine."),
    ("config", "config_cmd", "app", "Show the effective configuration."),
    ("demo", "demo", "demo", "Try cobell on a local Spark cluster."),
)


def _with_commands(names: set[str]) -> typer.Typer:
    """The root app with the named commands registered (a copy: the root stays bare)."""
    out = copy.copy(_root)
    out.registered_commands, out.registered_groups = [], []
    for name, module, attribute, short_help in COMMANDS:
        if name not in names:
            continue
        target = getattr(importlib.import_module(f"cobell_cli.cli.{module}"), attribute)
        if isinstance(target, typer.Typer):
            out.add_typer(target, name=name, short_help=short_help)
        else:
            out.command(name, short_help=short_help)(target)
    return out


def __getattr__(name: str) -> Any:
    """`app`, the whole app, built (every command module imported) on first use only."""
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    whole = globals()["app"] = _with_commands({c[0] for c in COMMANDS})
    return whole


def main(argv: list[str] | None = None) -> None:
    """Entry point: map every expected failure to one stderr line and an exit code."""
    from cobell_cli import interrupts

    limit_blas_threads()  # before any command imports numpy (cobell_cli/threads.py)
    args = sys.argv[1:] if argv is None else argv
    with interrupts.handled(exiting=argv is None):  # SIGINT, SIGTERM, SIGHUP by phase
        code = _run(args)
    if argv is None:  # the process ends here
        skip_exit_collection()
    sys.exit(code if isinstance(code, int) else 0)


def skip_exit_collection() -> None:
    """Spare the interpreter's exit a garbage collection over every object the command
    left: the process's memory goes back whole anyway. A predict that fitted has ~50 000
    (numpy, the model), and exit's collections of them cost ~35 ms CPU, a tenth of it.

    gc.freeze() moves them where no collection looks; exit still joins threads, runs atexit
    handlers (temporary directories), flushes the streams and frees every object not in a
    reference cycle. What it skips are cycles' finalizers, which Python never promises to
    run at exit: the history is closed and every file written before this point."""
    import gc

    gc.freeze()


def _run(args: list[str]) -> int | None:
    from cobell_cli import interrupts
    from cobell_cli.errors import EXIT_INTERRUPTED, EXIT_RUNTIME, CobellError

    debug = "--debug" in args
    try:
        with interrupts.raising():
            return _app_for(args)(args=args, prog_name="cobell", standalone_mode=False)
    except interrupts.Interrupted as exc:
        return _interrupted(exc.signum)
    except typer.Abort:
        typer.echo("cobell: aborted", err=True)
        return EXIT_INTERRUPTED
    except CobellError as exc:
        if debug:  # the traceback as well, but the same documented exit code
            import traceback

            traceback.print_exc()
        typer.echo(f"cobell: error: {exc.line()}", err=True)
        return exc.exit_code
    except KeyboardInterrupt:
        return _interrupted(2)
    except BrokenPipeError:
        sys.stderr.close()
        return EXIT_RUNTIME
    except Exception as exc:  # the last line of defence: one line, not a traceback
        if interrupts.received() is not None and not debug:
            # a signal turned into another error inside a library (numpy's import makes it
            # an ImportError): it is still the signal
            return _interrupted(interrupts.received() or 2)
        if hasattr(exc, "format_message") and isinstance(getattr(exc, "exit_code", None), int):
            # click's own errors (typer vendors click, so match by shape): one line plus a pointer
            ctx = getattr(exc, "ctx", None)
            where = ctx.command_path if ctx is not None else "cobell"
            typer.echo(f"cobell: error: {_click_message(exc, where)}; see `{where} --help`",
                       err=True)
            return exc.exit_code
        if debug:
            raise
        typer.echo(
            f"cobell: internal error: {type(exc).__name__}: {exc} (rerun with --debug for the "
            "traceback, and please report it)",
            err=True,
        )
        return EXIT_RUNTIME


def _click_message(exc: Exception, where: str) -> str:
    """Click's one-line message, with what to do where a user commonly goes wrong: a root
    option after the command, or the job's own options without `--` before them."""
    message = exc.format_message().rstrip(".")  # type: ignore[attr-defined]
    if not message.startswith("No such option"):
        return message
    option = getattr(exc, "option_name", None)
    if option in (*ROOT_OPTIONS_WITH_VALUE, "--debug") and where != "cobell":
        value = " FILE" if option in ROOT_OPTIONS_WITH_VALUE else ""
        command = where.removeprefix("cobell ")
        return (f"No such option: {option}; it is an option of cobell itself, so it goes "
                f"before the command: cobell {option}{value} {command} ...")
    if where.endswith(" submit"):
        message += "; the job's command goes after `--`: cobell submit -j JOB -t S -- CMD"
    return message


ROOT_OPTIONS_WITH_VALUE = ("--db", "--config")
ROOT_ONLY = ("-h", "--help", "--version")  # answered by the root: it lists every command


def _app_for(args: list[str]) -> typer.Typer:
    """The app with only the sub-command `args` name: typer builds click's command for every
    registered function in every process (inspecting and evaluating their annotations, ~8 ms
    of a ~0.13 s cached predict), and the other commands' modules need not be imported; for
    one command or group it is ~1.5 ms. The root's own help and --version are answered by
    stand-ins with the same names and short help (`_listing`); without a known command name
    otherwise (a typo, `--` first) the whole app answers, so click's "No such command" stays
    as it is."""
    name = _command_name(args)
    whole = globals().get("app")  # once built (and perhaps extended), the whole app decides
    if whole is not None:
        commands = [c for c in whole.registered_commands if c.name == name]
        groups = [g for g in whole.registered_groups if g.name == name]
        if name is None or not (commands or groups):
            return whole
        one = copy.copy(whole)
        one.registered_commands, one.registered_groups = commands, groups
        return one
    if name is None and _asks_root(args):
        return _listing()
    if name not in {c[0] for c in COMMANDS}:
        return __getattr__("app")
    return _with_commands({name})


def _asks_root(args: list[str]) -> bool:
    """Nothing but root options, at least one of them -h, --help or --version, or no
    arguments at all (the root's help): the root answers before any command would run."""
    return not args or any(arg in ROOT_ONLY for arg in args[:args.index("--")
                                                              if "--" in args else None])


def _listing() -> typer.Typer:
    """The root with a stand-in for every command, for its help and --version: they show
    only each command's name and short help, and importing every command's module to build
    them was ~40 % of `cobell --help`. Commands first, then groups, as typer lists them."""
    out = copy.copy(_root)
    out.registered_commands, out.registered_groups = [], []
    for group in (False, True):
        for name, _module, attribute, short_help in COMMANDS:
            if (attribute == "app") is group:
                out.command(name, short_help=short_help)(_stand_in)
    return out


def _stand_in() -> None:
    """Never runs: the root's eager --help and --version exit first (`_asks_root`)."""
    raise RuntimeError("a command's stand-in ran; the root should have answered")


def _command_name(args: list[str]) -> str | None:
    """The first argument that is neither a root option nor a root option's value."""
    value_next = False
    for arg in args:
        if value_next:
            value_next = False
        elif arg in ROOT_ONLY or arg == "--":
            return None
        elif arg in ROOT_OPTIONS_WITH_VALUE:
            value_next = True
        elif not arg.startswith("-"):
            return arg
    return None


def _interrupted(signum: int) -> int:
    import contextlib
    import signal

    with contextlib.suppress(OSError):  # a terminal that hung up takes no more lines
        typer.echo(f"cobell: interrupted by {signal.Signals(signum).name}", err=True)
    return 128 + signum
