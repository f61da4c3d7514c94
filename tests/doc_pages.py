"""What the README and docs/ show, read back as data: their code blocks, the `cobell` commands
in them, transcripts, links and tables (tests/test_doc_pages.py checks them against the code)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
FENCE = re.compile(r"^\s*```")
SHELL_OPERATORS = {";", "&&", "||", "|", ">", ">>", "<", "&", ">&", "2>&1"}
ALTERNATIVES = re.compile(r"(?<=[\w-])(?:\\?\|[\w-]+)+")  # `show|eval|plot` -> `show`
ENV_ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")


@dataclass(frozen=True)
class Block:
    """A code block: the page it is on, the line it starts at, its lines (indent removed)."""

    page: Path
    line: int
    lines: tuple[str, ...]
    lang: str = ""  # a fenced block's language (```python)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


@dataclass(frozen=True)
class Shown:
    """One `cobell` command a page shows: where, as written, and its arguments after `cobell`."""

    where: str
    text: str
    argv: tuple[str, ...]


def code_blocks(page: Path) -> Iterator[Block]:
    """Fenced blocks, and indented ones (four spaces after a blank line: Markdown's rule, so a
    list item's wrapped lines are not taken for code)."""
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        if FENCE.match(lines[i]):
            end = next(j for j in range(i + 1, len(lines)) if FENCE.match(lines[j]))
            lang = lines[i].strip().removeprefix("```").strip()
            yield Block(page, i + 2, tuple(lines[i + 1 : end]), lang)
            i = end + 1
        elif lines[i].startswith("    ") and (i == 0 or not lines[i - 1].strip()):
            end = i
            while end < len(lines) and (lines[end].startswith("    ") or not lines[end].strip()):
                end += 1
            body = [line[4:] for line in lines[i:end]]
            while body and not body[-1].strip():
                body.pop()
            yield Block(page, i + 1, tuple(body))
            i = end
        else:
            i += 1


def logical_lines(block: Block) -> Iterator[tuple[int, str]]:
    """The block's lines with backslash continuations joined, each with its line number."""
    pending, start = "", block.line
    for offset, line in enumerate(block.lines):
        if not pending:
            start = block.line + offset
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        yield start, pending + line
        pending = ""
    if pending:
        yield start, pending


def command_argvs(text: str) -> list[tuple[str, ...]]:
    """The arguments after `cobell` of each cobell command in one shell line (`a; b`, `a && b`
    and pipes are split; redirections end a command). Cron's time fields, `VAR=value` prefixes,
    `$ ` prompts and `#` comments are dropped; `[optional]` brackets are opened, `a|b|c` choices
    take the first and `...` stands for whatever the reader adds."""
    text = ALTERNATIVES.sub("", text.replace("[", "").replace("]", ""))
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|<>")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        tokens = list(lexer)
    except ValueError:
        return []
    found, segment = [], []
    for token in [*tokens, ";"]:
        if token not in SHELL_OPERATORS and not set(token) <= set(";&|<>"):
            segment.append(token)
            continue
        if token.startswith((">", "<")) and segment and segment[-1].isdigit():
            segment.pop()  # the 2 of 2>&1
        start = next((i for i, t in enumerate(segment) if Path(t).name == "cobell"), None)
        if start is not None and all(_prefix(t) for t in segment[:start]):
            found.append(tuple(t for t in segment[start + 1 :] if t not in {"...", "…"}))
        segment = []
        if token.startswith((">", "<")):
            break  # what follows a redirection is its file, then the rest of the line
    return found


def _prefix(token: str) -> bool:
    """What may stand before `cobell` on a line: a prompt, cron's fields, an env assignment."""
    return token == "$" or bool(ENV_ASSIGNMENT.match(token)) or re.fullmatch(r"[\d*/,-]+", token)


def shown_commands() -> list[Shown]:
    """Every cobell command in a code block of the README or a docs/ page."""
    found = []
    for page in PAGES:
        for block in code_blocks(page):
            for line_no, text in logical_lines(block):
                for argv in command_argvs(text):
                    where = f"{page.relative_to(ROOT)}:{line_no}"
                    found.append(Shown(where, text.strip(), argv))
    return found


@dataclass(frozen=True)
class Transcript:
    """A block that starts with `$ cobell ...`: the command and the output it shows."""

    where: str
    argv: tuple[str, ...]
    output: tuple[str, ...]


def transcripts() -> list[Transcript]:
    found = []
    for page in PAGES:
        for block in code_blocks(page):
            if block.lines and block.lines[0].startswith("$ cobell "):
                output = []
                for line in block.lines[1:]:
                    if not line.strip():
                        break
                    output.append(line)
                [argv] = command_argvs(block.lines[0])
                found.append(Transcript(block.where, argv, tuple(output)))
    return found


LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def links(page: Path) -> Iterator[tuple[int, str]]:
    """The relative link targets of a page (outside code), with their line numbers."""
    in_fence = False
    for number, line in enumerate(page.read_text().splitlines(), 1):
        if FENCE.match(line):
            in_fence = not in_fence
        if in_fence:
            continue
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if not re.match(r"[a-z]+:", target):
                yield number, target


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces to '-'."""
    found = set()
    in_fence = False
    for line in page.read_text().splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
        if not in_fence and (heading := re.match(r"#{1,6} (.+)", line)):
            text = heading.group(1).strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", text).replace(" ", "-"))
    return found


def table(text: str, header: str) -> list[list[str]]:
    """The body rows of the Markdown table whose header row starts with `header`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
        rows.append([cell.strip() for cell in cells])
    return rows
