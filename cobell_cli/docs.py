"""Man pages and shell completions, generated from the CLI's own definitions.

    python -m cobell_cli.docs            # rewrite man/ and completions/ in the repository
    python -m cobell_cli.docs --check    # exit 1 listing the files that are stale

The pages and scripts are derived from whatever the typer app registers at run time (commands,
options, help texts and their "Example:" lines), `cobell_cli.config.SETTINGS` (ENVIRONMENT)
and the EXIT_* constants of `cobell_cli.errors` (EXIT STATUS), so a new command or option
only needs a rerun; the staleness test (tests/test_docs.py) fails until it happens.

Completions are static scripts written here, not typer's runtime completion (which re-runs
Python on every TAB through environment variables). Static scripts answer instantly, work when
the virtualenv is not active, can be reviewed and diffed, and are what packagers install. The
one dynamic part is job names: on `--job`/`-j` the scripts run
`cobell [--db FILE] history jobs --format csv` quietly and offer the first column.

Output is deterministic (no dates; the package version instead), so the check can compare bytes.
"""

from __future__ import annotations

import argparse
import enum
import inspect
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
HELP_KINDS = ("flag", "value", "choice", "file", "job", "command")
_CHOICE_METAVAR = re.compile(r"^[a-z0-9_-]+(\|[a-z0-9_-]+)+$")
_FILE_METAVARS = {"FILE", "PATH", "DIR", "DIRECTORY"}


# -- the CLI as data ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """One option or argument, reduced to what pages and completions need."""

    name: str
    opts: tuple[str, ...]  # short first; for arguments: empty
    secondary_opts: tuple[str, ...]  # the "off" side of --x/--no-x flags
    is_option: bool
    kind: str  # one of HELP_KINDS: how a value is completed
    metavar: str
    help: str
    required: bool
    multiple: bool  # repeatable option or variadic argument
    choices: tuple[str, ...]
    notes: tuple[str, ...]  # "Default: table.", "At least 1.", ...

    @property
    def all_opts(self) -> tuple[str, ...]:
        return self.opts + self.secondary_opts


@dataclass(frozen=True)
class Command:
    path: tuple[str, ...]  # ("cobell", "history", "list")
    summary: str  # first sentence, for listings and NAME
    paragraphs: tuple[str, ...]  # help text without the examples; "\b" paragraphs kept verbatim
    examples: tuple[str, ...]
    params: tuple[Param, ...]
    help_opts: tuple[str, ...]
    subcommands: tuple[Command, ...]

    @property
    def name(self) -> str:
        return " ".join(self.path)

    @property
    def is_group(self) -> bool:
        return bool(self.subcommands)

    def walk(self) -> Iterator[Command]:
        yield self
        for sub in self.subcommands:
            yield from sub.walk()


def _summary(text: str) -> str:
    first = " ".join(text.split("\n\n", 1)[0].split())
    sentence = re.split(r"(?<=[.!?])\s+(?=[A-Z`$])", first, maxsplit=1)[0]
    return sentence.rstrip(".")


def split_help(text: str) -> tuple[list[str], list[str]]:
    """Help text -> (paragraphs, examples); an example is a line starting with "Example:"."""
    paragraphs: list[str] = []
    examples: list[str] = []
    for block in re.split(r"\n\s*\n", inspect.cleandoc(text or "")):
        if not block.strip():
            continue
        if block.startswith("\b"):
            paragraphs.append(block)
            continue
        kept: list[str] = []
        for line in block.splitlines():
            stripped = line.strip()
            if stripped.startswith("Example:"):
                examples.append(stripped.removeprefix("Example:").strip())
            elif examples and not kept and stripped and block.lstrip().startswith("Example:"):
                examples[-1] += " " + stripped  # an example wrapped onto the next line
            else:
                kept.append(stripped)
        if any(kept):
            paragraphs.append(" ".join(k for k in kept if k))
    return paragraphs, examples


def _choice_text(value: Any) -> str:
    return str(value.value) if isinstance(value, enum.Enum) else str(value)


def _sorted_opts(opts: Iterable[str]) -> tuple[str, ...]:
    """Short options first; sorted, because click keeps some option names in a set."""
    return tuple(sorted(opts, key=lambda o: (o.startswith("--"), o)))


def _type_facts(param: Any) -> tuple[tuple[Any, ...], bool, Any, Any]:
    """(choices, is a path or file, min, max) across typer's two parameter models: a resolved
    type descriptor (typer >= 0.29) or a click-style ParamType on `param.type` (earlier)."""
    desc = getattr(param, "type_descriptor", None)
    if desc is not None:
        return tuple(desc.choices or ()), bool(desc.is_path or desc.is_file), param.min, param.max
    kind = param.type
    is_path = type(kind).__name__ in {"Path", "File", "TyperPath", "TyperFile"}
    low, high = getattr(kind, "min", None), getattr(kind, "max", None)
    return tuple(getattr(kind, "choices", None) or ()), is_path, low, high


def _describe_param(param: Any) -> Param:
    raw_choices, is_path, low, high = _type_facts(param)
    is_option = param.param_type_name == "option"
    choices = tuple(_choice_text(c) for c in raw_choices)
    metavar = param.metavar or ""
    if not choices and _CHOICE_METAVAR.match(metavar):
        choices = tuple(metavar.split("|"))
    is_flag = bool(is_option and param.is_flag)
    if is_flag:
        kind = "flag"
    elif is_option and "--job" in param.opts:
        kind = "job"
    elif choices:
        kind = "choice"
    elif is_path or metavar.upper() in _FILE_METAVARS:
        kind = "file"
    elif not is_option and param.nargs == -1 and metavar.startswith("--"):
        kind = "command"  # everything after `--` is the job's own command line
    else:
        kind = "value"
    if not metavar and not is_flag:
        metavar = "|".join(choices) if choices else param.name.upper()
    multiple = bool(param.multiple or param.nargs == -1)
    notes: list[str] = []
    if low is not None and high is not None:
        notes.append(f"Between {low} and {high}.")
    elif low is not None:
        notes.append(f"At least {low}.")
    elif high is not None:
        notes.append(f"At most {high}.")
    default = param.default
    if (
        is_option
        and not is_flag
        and param.show_default is not False
        and default is not None
        and not callable(default)
        and default not in ((), [])
    ):
        notes.append(f"Default: {_choice_text(default)}.")
    if is_option and multiple and "repeat" not in (param.help or "").lower():
        notes.append("Repeatable.")
    if param.required and is_option:
        notes.append("Required.")
    opts = _sorted_opts(param.opts) if is_option else ()
    return Param(
        name=param.name,
        opts=opts,
        secondary_opts=tuple(param.secondary_opts) if is_option else (),
        is_option=is_option,
        kind=kind,
        metavar=metavar,
        help=" ".join((getattr(param, "help", None) or "").split()),
        required=bool(param.required),
        multiple=multiple,
        choices=choices,
        notes=tuple(notes),
    )


def describe(app: Any = None) -> Command:
    """The command tree of the typer app (default: cobell's), in `--help` order."""
    import typer.main

    if app is None:
        from cobell_cli.cli import app
    root = typer.main.get_command(app)

    def build(cmd: Any, path: tuple[str, ...], parent: Any) -> Command:
        ctx = cmd.context_class(
            cmd, info_name=path[-1], parent=parent, **cmd.context_settings
        )
        help_option = cmd.get_help_option(ctx)
        params = [
            _describe_param(p)
            for p in cmd.get_params(ctx)
            if p is not help_option and not getattr(p, "hidden", False)
        ]
        paragraphs, examples = split_help(cmd.help or "")
        _, epilog_examples = split_help(cmd.epilog or "")
        subs: list[Command] = []
        if hasattr(cmd, "list_commands"):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    subs.append(build(sub, (*path, name), ctx))
        return Command(
            path=path,
            summary=(cmd.short_help or _summary(cmd.help or "")).rstrip("."),
            paragraphs=tuple(paragraphs),
            examples=tuple(examples + epilog_examples),
            params=tuple(params),
            help_opts=_sorted_opts(help_option.opts) if help_option is not None else (),
            subcommands=tuple(subs),
        )

    return build(root, ("cobell",), None)


# -- environment, files and exit codes -----------------------------------------------------------

EXTRA_ENVIRONMENT = (
    ("COBELL_CONFIG", "config file to read instead of $XDG_CONFIG_HOME/cobell/config.toml"),
    (
        "HADOOP_CONF_DIR",
        "directory whose yarn-site.xml names the ResourceManager(s) when no RM URL is set",
    ),
    ("YARN_CONF_DIR", "like HADOOP_CONF_DIR, looked at first"),
    ("XDG_DATA_HOME", "base of the history and local cluster directories (default ~/.local/share)"),
    ("XDG_CONFIG_HOME", "base of the config directory (default ~/.config)"),
    ("XDG_CACHE_HOME", "base of the model cache directory (default ~/.cache)"),
)

FILES = (
    ("$XDG_DATA_HOME/cobell/history.db", "the run history (SQLite); --db or COBELL_DB override it"),
    (
        "$XDG_CONFIG_HOME/cobell/config.toml",
        "settings, one key per setting below ENVIRONMENT without the COBELL_ prefix, in lower "
        "case; --config or COBELL_CONFIG override the path",
    ),
    (
        "$XDG_CACHE_HOME/cobell/models/",
        "fitted runtime models, one JSON file per set of runs they were fitted on; always safe "
        "to delete (COBELL_MODEL_CACHE=off stops using it)",
    ),
    (
        "$XDG_DATA_HOME/cobell/local-cluster/",
        "pid files and logs of `cobell local-cluster`",
    ),
)


def environment() -> list[tuple[str, str]]:
    """(variable, meaning); each COBELL_* setting also names its config key and default."""
    from cobell_cli.config import SETTINGS

    rows = []
    for s in SETTINGS:
        default = s.default if not isinstance(s.default, list | dict) or s.default else None
        extra = f"config key {s.name}" + (f", default {default}" if default is not None else "")
        rows.append((s.env, f"{s.help} ({extra})"))
    seen = {name for name, _ in rows}
    rows += [(name, text) for name, text in EXTRA_ENVIRONMENT if name not in seen]
    return rows


def exit_codes() -> list[tuple[int, str]]:
    """(code, meaning) from the EXIT_* constants and the comment beside each."""
    from cobell_cli import errors

    comments = dict(
        re.findall(r"^(EXIT_\w+)\s*=\s*\d+\s*#\s*(.+)$", inspect.getsource(errors), re.MULTILINE)
    )
    rows = []
    for name, value in vars(errors).items():
        if name.startswith("EXIT_") and isinstance(value, int):
            text = comments.get(name) or name.removeprefix("EXIT_").lower().replace("_", " ")
            rows.append((value, "success" if name == "EXIT_OK" else text))
    return sorted(rows)


def submit_exit_note() -> str:
    from cobell_cli.run.child import CommandNotExecutable, CommandNotFound

    return (
        "Once the job has started, `cobell submit` exits with the job's own exit code (128+N "
        f"when a signal N ended it); {CommandNotFound.exit_code} when the command is not "
        f"found and {CommandNotExecutable.exit_code} when it is not executable, as a shell "
        "reports them."
    )


# -- roff ------------------------------------------------------------------------------------------


def roff_escape(text: str) -> str:
    """Escape roff specials: backslashes, hyphens (as \\-), non-ASCII, and leading . or '."""
    out = []
    for ch in text.replace("\\", "\\e").replace("-", "\\-"):
        out.append(ch if ord(ch) < 128 else f"\\[u{ord(ch):04X}]")
    return "".join(out)


def _sentence_case(text: str) -> str:
    """Capitalise a leading plain word ("success"), not an identifier ("user.name")."""
    return text[:1].upper() + text[1:] if re.match(r"[a-z]+(\s|,|$)", text) else text


def roff_line(text: str) -> str:
    """One input line of running text; `code` becomes bold."""
    escaped = re.sub(r"`([^`]+)`", r"\\fB\1\\fR", roff_escape(text))
    return "\\&" + escaped if escaped.startswith((".", "'")) else escaped


def _roff_paragraphs(paragraphs: Iterable[str]) -> list[str]:
    lines: list[str] = []
    for para in paragraphs:
        if para.startswith("\b"):
            lines += [".PP", ".nf"] + [roff_line(x) for x in para[1:].strip("\n").splitlines()]
            lines.append(".fi")
        else:
            lines += [".PP", roff_line(para)]
    return lines


def _option_tag(param: Param) -> str:
    flags = ", ".join(f"\\fB{roff_escape(o)}\\fR" for o in param.opts)
    if param.secondary_opts:
        flags += " / " + ", ".join(f"\\fB{roff_escape(o)}\\fR" for o in param.secondary_opts)
    if param.kind != "flag":
        flags += f" \\fI{roff_escape(param.metavar)}\\fR"
    return flags


def _roff_params(params: Iterable[Param]) -> list[str]:
    lines: list[str] = []
    for param in params:
        if param.is_option:
            tag = _option_tag(param)
        else:
            tag = f"\\fI{roff_escape(param.metavar)}\\fR" + (" ..." if param.multiple else "")
            tag = tag.replace("... ...", "...")
        body = " ".join(x for x in (param.help, *param.notes) if x)
        lines += [".TP", tag, roff_line(body or "(no description)")]
    return lines


def _synopsis(cmd: Command) -> list[str]:
    words = ["\\fBcobell\\fR", "[\\fIGLOBAL OPTIONS\\fR]"]
    if len(cmd.path) > 1:
        words += [f"\\fB{roff_escape(' '.join(cmd.path[1:]))}\\fR", "[\\fIOPTIONS\\fR]"]
    if cmd.is_group:
        words.append("\\fICOMMAND\\fR [\\fIARGS\\fR]...")
    for param in cmd.params:
        if param.is_option:
            continue
        meta = f"\\fI{roff_escape(param.metavar)}\\fR"
        if param.multiple and not param.metavar.endswith("..."):
            meta += "..."
        words.append(meta if param.required else f"[{meta}]")
    return [" ".join(words), ".br"]


def _page_name(cmd: Command) -> str:
    return "-".join(cmd.path)


def _common_sections(cmd: Command, root: Command, version: str) -> list[str]:
    lines = [".SH ENVIRONMENT"]
    for name, text in environment():
        lines += [".TP", f"\\fB{roff_escape(name)}\\fR", roff_line(_sentence_case(text))]
    lines.append(".SH FILES")
    for name, text in FILES:
        lines += [".TP", f"\\fI{roff_escape(name)}\\fR", roff_line(_sentence_case(text))]
    lines.append(".SH EXIT STATUS")
    for code, text in exit_codes():
        lines += [".TP", f"\\fB{code}\\fR", roff_line(_sentence_case(text))]
    if cmd.path == ("cobell",) or cmd.path[:2] == ("cobell", "submit"):
        lines += [".PP", roff_line(submit_exit_note())]
    examples = [(c, ex) for c in cmd.walk() for ex in c.examples]
    if examples:
        lines.append(".SH EXAMPLES")
        for owner, ex in examples:
            lines += [".PP", roff_line(owner.summary + ":"), ".PP", ".RS 4", ".nf"]
            lines += [roff_line(ex), ".fi", ".RE"]
    lines.append(".SH SEE ALSO")
    pages = [_page_name(c) for c in (root, *root.subcommands) if c.path != cmd.path]
    lines.append(",\n".join(f".BR {p} (1)" for p in pages))
    lines += [
        ".PP",
        roff_line(
            f"`cobell COMMAND --help` prints the same options; this page is for cobell {version}."
        ),
    ]
    return lines


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if re.match(r"[A-Z][a-z]+\b", text) else text


def man_page(cmd: Command, root: Command, version: str) -> str:
    """The roff source of cobell(1) (cmd is root) or of one top-level command's page."""
    title = _page_name(cmd).upper()
    lines = [
        f'.\\" Generated by `python -m cobell_cli.docs` from cobell {version}; do not edit.',
        f'.TH "{roff_escape(title)}" "1" "" "cobell {roff_escape(version)}" "User Commands"',
        ".nh",  # no hyphenation: option names and paths must stay whole
        ".ad l",
        ".SH NAME",
        f"{roff_escape(_page_name(cmd))} \\- {roff_line(_lower_first(cmd.summary))}",
        ".SH SYNOPSIS",
    ]
    targets = [cmd] if not cmd.is_group or cmd is root else list(cmd.subcommands)
    for target in targets:
        lines += _synopsis(target)
    lines.append(".SH DESCRIPTION")
    lines += _roff_paragraphs(cmd.paragraphs)
    if cmd.is_group:
        lines += [".PP", "Commands:" if cmd is root else "Subcommands:"]
        for sub in cmd.subcommands:
            page = f" See \\fB{_page_name(sub)}\\fR(1)." if cmd is root else ""
            lines += [".TP", f"\\fB{roff_escape(sub.path[-1])}\\fR", roff_line(sub.summary + ".")
                      + page]
    lines.append(".SH OPTIONS")
    if cmd is root:
        lines.append(roff_line("Global options go before the command."))
        lines += _roff_params(cmd.params)
        help_param = Param(
            "help", cmd.help_opts, (), True, "flag", "", "Show help for cobell or any command "
            "(also after a command, e.g. `cobell history list --help`) and exit.",
            False, False, (), (),
        )
        lines += _roff_params([help_param])
    elif not cmd.is_group:
        lines += _roff_params(cmd.params) or [roff_line("This command takes no options.")]
    else:
        lines.append(roff_line("Global options (see cobell(1)) go before the command name."))
        for sub in cmd.subcommands:
            lines.append(f'.SS "{roff_escape(sub.name)}"')
            lines += _roff_paragraphs(sub.paragraphs)
            lines += _roff_params(sub.params) or [".PP", "This command takes no options."]
    lines += _common_sections(cmd, root, version)
    return "\n".join(lines) + "\n"


# -- bash ------------------------------------------------------------------------------------------


def _sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _bash_value_case(node: Command) -> list[str]:
    arms = []
    for p in node.params:
        if not p.is_option or p.kind == "flag":
            continue
        pattern = "|".join(p.all_opts)
        if p.kind == "job":
            action = "_cobell_complete_jobs"
        elif p.kind == "choice":
            action = f'COMPREPLY=($(compgen -W {_sh_quote(" ".join(p.choices))} -- "$cur"))'
        elif p.kind == "file":
            action = "_cobell_complete_files"
        else:
            action = "COMPREPLY=()"
        arms.append(f"                    {pattern}) {action} ;;")
    return arms


def bash_script(root: Command, version: str) -> str:
    nodes = list(root.walk())
    walk_arms: list[str] = []
    value_arms: list[str] = []
    word_arms: list[str] = []
    for node in nodes:
        value_opts = [o for p in node.params if p.is_option and p.kind != "flag"
                      for o in p.all_opts]
        walk_arms.append(f'            "{node.name}")')
        walk_arms.append('                case "$w" in')
        if value_opts:
            walk_arms.append(f"                    {'|'.join(value_opts)}) skip=1; opt=$w ;;")
        if node.subcommands:
            subs = "|".join(s.path[-1] for s in node.subcommands)
            walk_arms.append(f'                    {subs}) node="$node $w"; npos=0 ;;')
        walk_arms.append("                    -*) ;;")
        walk_arms.append("                    *) npos=$((npos + 1)) ;;")
        walk_arms.append("                esac ;;")
        arms = _bash_value_case(node)
        if arms:
            value_arms += [f'            "{node.name}")', '                case "$opt" in']
            value_arms += [*arms, "                esac ;;"]
        options = " ".join(o for p in node.params if p.is_option for o in p.all_opts)
        options = " ".join(x for x in (options, " ".join(node.help_opts)) if x)
        if node.subcommands:
            names = _sh_quote(" ".join(s.path[-1] for s in node.subcommands))
            positional = f'COMPREPLY=($(compgen -W {names} -- "$cur"))'
        else:
            args = [p for p in node.params if not p.is_option]
            positional = "COMPREPLY=()"
            branches = []
            for i, arg in enumerate(args):
                cond = f"npos >= {i}" if arg.multiple else f"npos == {i}"
                if arg.kind == "file":
                    branches.append(f"(({cond})) && _cobell_complete_files")
                elif arg.kind == "command":
                    branches.append(f'(({cond})) && COMPREPLY=($(compgen -W "--" -- "$cur"))')
            if branches:
                positional = "; ".join(branches)
        word_arms.append(f'            "{node.name}")')
        word_arms.append('                if [[ $cur == -* ]]; then')
        word_arms.append(
            f'                    COMPREPLY=($(compgen -W {_sh_quote(options)} -- "$cur"))'
        )
        word_arms.append(f"                else {positional}; fi ;;")
    command_nodes = [
        n.name for n in nodes if any(p.kind == "command" for p in n.params)
    ]
    dashdash = "|".join(f'"{n}"' for n in command_nodes) or '"-none-"'
    return BASH_TEMPLATE.format(
        version=version,
        walk="\n".join(walk_arms),
        values="\n".join(value_arms),
        words="\n".join(word_arms),
        dashdash=dashdash,
    )


BASH_TEMPLATE = """\
# bash completion for cobell                                          -*- shell-script -*-
# Generated by `python -m cobell_cli.docs` from cobell {version}; do not edit.
# Install: copy to ~/.local/share/bash-completion/completions/cobell (bash-completion loads it
# on demand), or add `source /path/to/cobell.bash` to ~/.bashrc.

# Job names from the history (first CSV column); silent when there is no history yet.
_cobell_jobs() {{
    local -a args=()
    [[ -n $1 ]] && args=(--db "$1")
    command cobell "${{args[@]}}" history jobs --format csv 2>/dev/null |
        tail -n +2 | cut -d, -f1 | tr -d '"'
}}

_cobell_complete_jobs() {{
    local IFS=$'\\n'
    COMPREPLY=($(compgen -W "$(_cobell_jobs "$db")" -- "$cur"))
}}

_cobell_complete_files() {{
    local IFS=$'\\n'
    compopt -o filenames 2>/dev/null
    COMPREPLY=($(compgen -f -- "$cur"))
}}

_cobell() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" node="cobell" db="" opt="" w i
    local skip=0 npos=0 dashdash=-1
    for ((i = 1; i < COMP_CWORD; i++)); do
        w="${{COMP_WORDS[i]}}"
        if ((skip)); then
            [[ $w == "=" ]] && continue     # --opt=value is split at "=" by bash
            skip=0
            [[ $node == cobell && $opt == --db ]] && db="${{w/#\\~/$HOME}}"
            continue
        fi
        [[ $w == "=" ]] && continue
        if [[ $w == -- ]]; then
            dashdash=$i
            break
        fi
        case "$node" in
{walk}
        esac
    done
    if ((dashdash >= 0)); then
        case "$node" in
            {dashdash})
                if ((COMP_CWORD == dashdash + 1)); then
                    local IFS=$'\\n'
                    COMPREPLY=($(compgen -c -- "$cur"))
                else
                    _cobell_complete_files
                fi
                return 0 ;;
        esac
    fi
    [[ $cur == "=" ]] && cur=""
    if ((skip)); then
        COMPREPLY=()
        case "$node" in
{values}
        esac
        return 0
    fi
    case "$node" in
{words}
    esac
    return 0
}}

complete -F _cobell cobell
"""


# -- zsh -------------------------------------------------------------------------------------------


def _zsh_func(node: Command) -> str:
    return "_cobell" + "".join("__" + re.sub(r"\W", "_", p) for p in node.path[1:])


def _zsh_desc(text: str) -> str:
    return re.sub(r"([\[\]:\\])", r"\\\1", text)


def _zsh_action(p: Param) -> str:
    if p.kind == "job":
        return "_cobell_jobs"
    if p.kind == "choice":
        return "(" + " ".join(re.sub(r"([^\w.-])", r"\\\1", c) for c in p.choices) + ")"
    if p.kind == "file":
        return "_files"
    return " "


def _zsh_specs(node: Command) -> list[str]:
    specs: list[str] = []
    for p in node.params:
        if not p.is_option:
            continue
        group = " ".join(p.all_opts)
        desc = _zsh_desc(_summary(p.help) if p.help else p.name)
        for opt in p.all_opts:
            prefix = "*" if p.multiple else f"({group})"
            value = "" if p.kind == "flag" else f":{_zsh_desc(p.metavar)}:{_zsh_action(p)}"
            specs.append(f"{prefix}{opt}[{desc}]{value}")
    for opt in node.help_opts:
        specs.append(f"(- *){opt}[Show help and exit]")
    if node.subcommands:
        specs += [f"1: :{_zsh_func(node)}_commands", "*:: :->args"]
        return specs
    for i, p in enumerate(x for x in node.params if not x.is_option):
        meta = _zsh_desc(p.metavar)
        if p.kind == "command":
            specs.append("*::command:_normal")
        elif p.multiple:
            specs.append(f"*:{meta}:{_zsh_action(p)}")
        else:
            specs.append(f"{i + 1}:{meta}:{_zsh_action(p)}")
    return specs


def zsh_script(root: Command, version: str) -> str:
    out = [
        "#compdef cobell",
        f"# zsh completion for cobell, generated by `python -m cobell_cli.docs` from cobell "
        f"{version}; do not edit.",
        "# Install: copy to a directory in $fpath as _cobell (e.g. ~/.zfunc, with",
        "# `fpath=(~/.zfunc $fpath)` before `compinit` in ~/.zshrc), or source it after compinit.",
        "",
        "# Job names from the history (first CSV column); silent when there is no history yet.",
        "_cobell_jobs() {",
        "  local -a jobs args",
        "  [[ -n $_cobell_db ]] && args=(--db ${~_cobell_db})",
        '  jobs=(${(f)"$(_call_program jobs cobell $args history jobs --format csv 2>/dev/null)"})',
        "  jobs=(${${jobs[2,-1]}%%,*})",
        "  jobs=(${jobs//\\\"/})",
        "  _wanted jobs expl 'job' compadd -a jobs",
        "}",
        "",
    ]
    for node in root.walk():
        func = _zsh_func(node)
        specs = " \\\n    ".join(_sh_quote(s) for s in _zsh_specs(node))
        if node.subcommands:
            entries = " \\\n    ".join(
                _sh_quote(f"{s.path[-1]}:{s.summary}") for s in node.subcommands
            )
            out += [
                f"{func}_commands() {{",
                "  local -a commands",
                f"  commands=(\n    {entries}\n  )",
                f"  _describe -t commands {_sh_quote(node.name + ' command')} commands",
                "}",
                "",
                f"{func}() {{",
                '  local curcontext="$curcontext" state line ret=1',
                "  typeset -A opt_args",
                f"  _arguments -C -s -S \\\n    {specs} && ret=0",
                "  case $state in",
                "    args)",
            ]
            if node is root:
                out.append("      local _cobell_db=${opt_args[--db]}")
            out += [
                f'      curcontext="${{curcontext%:*:*}}:{_page_name(node)}-$words[1]:"',
                "      case $words[1] in",
            ]
            out += [f"        {s.path[-1]}) {_zsh_func(s)} && ret=0 ;;" for s in node.subcommands]
            out += ["      esac ;;", "  esac", "  return ret", "}", ""]
        else:
            out += [f"{func}() {{", f"  _arguments -s -S \\\n    {specs}", "}", ""]
    out += [
        'if [[ "${funcstack[1]}" == _cobell ]]; then',
        '  _cobell "$@"',
        "else",
        "  compdef _cobell cobell",
        "fi",
    ]
    return "\n".join(out) + "\n"


# -- fish ------------------------------------------------------------------------------------------


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish_script(root: Command, version: str) -> str:
    nodes = list(root.walk())
    walk: list[str] = []
    for node in nodes:
        value_opts = [o for p in node.params if p.is_option and p.kind != "flag"
                      for o in p.all_opts]
        walk.append(f"            case {_fish_quote(node.name)}")
        walk.append("                switch $w")
        if value_opts:
            walk += [
                f"                    case {' '.join(value_opts)}",
                "                        set skip 1",
            ]
        if node.subcommands:
            walk += [
                f"                    case {' '.join(s.path[-1] for s in node.subcommands)}",
                '                        set node "$node $w"',
            ]
        walk.append("                end")
    out = [
        f"# fish completion for cobell, generated by `python -m cobell_cli.docs` from cobell "
        f"{version}; do not edit.",
        "# Install: copy to ~/.config/fish/completions/cobell.fish",
        "",
        "# The command path on the line so far (\"cobell history list\"), or \"NODE --\" after --.",
        "function __cobell_node",
        "    set -l tokens (commandline -opc)",
        "    set -l node cobell",
        "    set -l skip 0",
        "    for w in $tokens[2..-1]",
        "        if test $skip = 1",
        "            set skip 0",
        "            continue",
        "        end",
        "        if test \"$w\" = --",
        "            echo \"$node --\"",
        "            return",
        "        end",
        "        switch $node",
        *walk,
        "        end",
        "    end",
        "    echo $node",
        "end",
        "",
        "function __cobell_at",
        "    test (__cobell_node) = \"$argv[1]\"",
        "end",
        "",
        "# Job names from the history (first CSV column); silent when there is no history yet.",
        "function __cobell_jobs",
        "    set -l tokens (commandline -opc)",
        "    set -l args",
        "    set -l i (contains -i -- --db $tokens)",
        "    and set args --db $tokens[(math $i + 1)]",
        "    command cobell $args history jobs --format csv 2>/dev/null | "
        "tail -n +2 | string replace -r ',.*' '' | string trim -c '\"'",
        "end",
        "",
        "# The job's own command line after --, for completing it as a command of its own.",
        "function __cobell_after_dashdash",
        "    set -l tokens (commandline -opc)",
        "    set -l i (contains -i -- -- $tokens)",
        "    and printf '%s\\n' $tokens[(math $i + 1)..-1]",
        "    commandline -ct",
        "end",
        "",
        "complete -c cobell -f",
    ]
    for node in nodes:
        cond = f"-n {_fish_quote('__cobell_at ' + _fish_quote(node.name))}"
        for sub in node.subcommands:
            out.append(
                f"complete -c cobell {cond} -a {sub.path[-1]} -d {_fish_quote(sub.summary)}"
            )
        for p in node.params:
            if p.is_option:
                flags = []
                for o in p.all_opts:
                    flags.append(f"-l {o[2:]}" if o.startswith("--") else f"-s {o[1:]}")
                if p.kind == "job":
                    value = " -x -a '(__cobell_jobs)'"
                elif p.kind == "choice":
                    value = f" -x -a {_fish_quote(' '.join(p.choices))}"
                elif p.kind == "file":
                    value = " -r -F"
                elif p.kind == "flag":
                    value = ""
                else:
                    value = " -x"
                desc = _fish_quote(_summary(p.help) if p.help else p.name)
                out.append(f"complete -c cobell {cond} {' '.join(flags)}{value} -d {desc}")
            elif p.kind == "file":
                out.append(f"complete -c cobell {cond} -F")
            elif p.kind == "command":
                after = _fish_quote("__cobell_at " + _fish_quote(node.name + " --"))
                out.append(
                    f"complete -c cobell -n {after} "
                    "-a '(__fish_complete_subcommand --commandline (__cobell_after_dashdash))'"
                )
        flags = " ".join(f"-l {o[2:]}" if o.startswith("--") else f"-s {o[1:]}"
                         for o in node.help_opts)
        if flags:
            out.append(f"complete -c cobell {cond} {flags} -d 'Show help and exit'")
    return "\n".join(out) + "\n"


# -- writing and checking --------------------------------------------------------------------------


def render_all(app: Any = None) -> dict[str, str]:
    """Relative path -> content of every generated file."""
    from cobell_cli import __version__

    root = describe(app)
    files = {f"man/{_page_name(root)}.1": man_page(root, root, __version__)}
    for cmd in root.subcommands:
        files[f"man/{_page_name(cmd)}.1"] = man_page(cmd, root, __version__)
    files["completions/cobell.bash"] = bash_script(root, __version__)
    files["completions/_cobell"] = zsh_script(root, __version__)
    files["completions/cobell.fish"] = fish_script(root, __version__)
    return files


def _owned(out_dir: Path) -> set[str]:
    """Files already there that the generator owns (so a removed command's page is noticed)."""
    found = {f"man/{p.name}" for p in (out_dir / "man").glob("cobell*.1")}
    for name in ("cobell.bash", "_cobell", "cobell.fish"):
        if (out_dir / "completions" / name).exists():
            found.add(f"completions/{name}")
    return found


def stale_files(files: dict[str, str], out_dir: Path) -> list[str]:
    stale = []
    for rel, content in files.items():
        path = out_dir / rel
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            stale.append(rel)
    stale += sorted(_owned(out_dir) - set(files))
    return sorted(stale)


def write_files(files: dict[str, str], out_dir: Path) -> list[str]:
    changed = stale_files(files, out_dir)
    for rel in changed:
        path = out_dir / rel
        if rel in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(files[rel], encoding="utf-8")
        else:
            path.unlink()
    return changed


def main(argv: list[str] | None = None, echo: Callable[[str], None] = print) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cobell_cli.docs",
        description="Generate man/ and completions/ from the cobell CLI.",
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 listing stale files"
    )
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=REPO_ROOT,
        help="directory holding man/ and completions/ (default: the repository)",
    )
    args = parser.parse_args(argv)
    files = render_all()
    if args.check:
        stale = stale_files(files, args.output_dir)
        for rel in stale:
            echo(f"stale: {rel}")
        if stale:
            echo("run `python -m cobell_cli.docs` and commit the result")
            return 1
        echo(f"{len(files)} generated files are up to date")
        return 0
    for rel in write_files(files, args.output_dir):
        echo(f"{'wrote' if rel in files else 'removed'} {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
