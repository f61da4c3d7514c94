"""History files in and out: cobell's own CSV/JSON (what `export` writes) and Bell's CSV.

Both directions stream, so a history of a million runs costs the memory of a few runs:

- `HistoryFile` reads a file run by run, validating each (a dict, or a Problem naming the
  line or record and the field), and can be read again: `history import` reads it twice, a
  validating pass that writes nothing, then a pass that inserts into one transaction, which
  commits only when every run was valid (all or nothing). CSV goes through the csv module
  line by line; JSON through `_JsonStream`, which hands the stdlib's C scanner one run at a
  time (`raw_decode`) while it walks the documented frame (`{"cobell_history": 1, "runs":
  [...]}` or a bare list) itself: no dependency, the same numbers and strings as json.loads.
- `write_csv` / `write_json` write runs as they come from `History.iter_runs`; `write_json`
  gives exactly what `json.dumps(..., indent=1)` of the whole document would.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from cobell_cli.errors import ImportFileError
from cobell_cli.store.history import RUN_COLUMNS, validate_run

EXPORT_COLUMNS: tuple[str, ...] = (*RUN_COLUMNS, "colocations")
BELL_HEADER = ["Nodes", "Runtime"]
FORMAT_TAG = "cobell_history"
FORMAT_VERSION = 1
READ_CHARS = 1 << 16  # one read of a JSON file; a run larger than this grows the buffer
CSV_HINT = "fields longer than {limit} characters are not supported"


@dataclass
class Problem:
    where: str  # "line 7" or "record 3"
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


Raw = tuple[str, dict[str, Any]] | Problem  # (where, a record not validated yet) or a Problem


@dataclass
class Parsed:
    kind: str  # "cobell-csv", "cobell-json", "bell-csv"
    records: list[dict[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def default_job_name(path: Path) -> str:
    """`sgd.spark.csv` -> `sgd`: Bell's files are named <job>.<framework>.csv."""
    return path.name.split(".", 1)[0]


class HistoryFile:
    """A history file read run by run, as many times as needed (module doc).

    `open_text` returns a new text stream on the file's start each time it is called (opened
    with newline=""). Iterating yields validated runs and Problems in file order; what cannot
    be read at all (no known header, broken JSON, NUL bytes) raises ImportFileError.
    """

    def __init__(
        self,
        path: Path,
        open_text: Callable[[], IO[str]],
        *,
        job: str | None = None,
        runtime_unit: str | None = None,
    ) -> None:
        self.path = path
        self.open_text = open_text
        self.job = job
        self.runtime_unit = runtime_unit
        self.kind: str | None = None  # known once iteration has begun

    @classmethod
    def at(cls, path: Path, **options: Any) -> HistoryFile:
        return cls(path, lambda: path.open(encoding="utf-8-sig", newline=""), **options)

    def __iter__(self) -> Iterator[dict[str, Any] | Problem]:
        return self._items(redact=True)

    def check(self) -> Iterator[dict[str, Any] | Problem]:
        """Like iterating, for validation only: commands are not redacted, which is a good
        part of the work and cannot change whether a run is valid."""
        return self._items(redact=False)

    def _items(self, *, redact: bool) -> Iterator[dict[str, Any] | Problem]:
        with self.open_text() as fh:
            try:
                for item in self._read(fh):
                    yield item if isinstance(item, Problem) else _validated(*item, redact=redact)
            except UnicodeDecodeError as exc:
                raise ImportFileError(
                    f"not UTF-8 text (byte {exc.start} of a read: {exc.reason})",
                    hint="give a CSV or JSON history file in UTF-8",
                ) from None

    def _read(self, fh: IO[str]) -> Iterator[Raw]:
        if _first_char(fh) in ("[", "{"):
            self.kind = "cobell-json"
            self._check_unit()
            for where, record in _json_runs(_JsonStream(fh)):
                yield _json_record(record, where, self.job)
            return
        lines = _text_lines(fh)
        reader = csv.reader(lines)
        header = _csv_header(reader)
        if header == BELL_HEADER:
            self.kind = "bell-csv"
            job = self.job or default_job_name(self.path)
            yield from _bell_rows(reader, job, self.runtime_unit or "ms")
            return
        self.kind = "cobell-csv"
        self._check_unit()
        yield from _cobell_rows(reader, header, self.job)

    def _check_unit(self) -> None:
        if self.runtime_unit not in (None, "s"):
            raise ImportFileError(
                "--runtime-unit applies to Bell's Nodes,Runtime files only",
                hint="cobell's own files store runtime_s in seconds",
            )


def parse(
    path: Path,
    text: str,
    *,
    job: str | None = None,
    runtime_unit: str | None = None,
) -> Parsed:
    """Every record of a history held in memory (tests, small files); never touches the store."""
    source = HistoryFile(path, lambda: io.StringIO(text), job=job, runtime_unit=runtime_unit)
    records: list[dict[str, Any]] = []
    problems: list[Problem] = []
    for item in source:
        (problems if isinstance(item, Problem) else records).append(item)  # type: ignore[arg-type]
    return Parsed(source.kind or "cobell-csv", records, problems)


def _first_char(fh: IO[str]) -> str:
    """The first character that is not white space ("" for none); the stream is rewound."""
    while chunk := fh.read(READ_CHARS):
        stripped = chunk.lstrip()
        if stripped:
            fh.seek(0)
            return stripped[0]
    fh.seek(0)
    return ""


def _text_lines(fh: IO[str]) -> Iterator[str]:
    """The file's lines; NUL bytes mean a binary file, not a history."""
    for number, line in enumerate(fh, start=1):
        if "\0" in line:
            raise ImportFileError(
                f"line {number}: binary data (NUL bytes), not a history file",
                hint="give a CSV or JSON history file",
            )
        yield line


def _csv_error(exc: csv.Error, line: int) -> ImportFileError:
    return ImportFileError(
        f"line {line}: not readable as CSV ({exc})",
        hint=CSV_HINT.format(limit=csv.field_size_limit()),
    )


def _csv_header(reader: Any) -> list[str]:
    try:
        header = [h.strip() for h in next(reader, [])]
    except csv.Error as exc:  # a field over the csv module's limit
        raise _csv_error(exc, reader.line_num or 1) from None
    if header == BELL_HEADER or "job" in header or "scale_out" in header:
        return header
    if not header:
        raise ImportFileError("the file is empty", hint="give a CSV or JSON history file")
    raise ImportFileError(
        f"line 1: unrecognised header {','.join(header)[:200]!r}",
        hint="expected cobell's CSV (see history/README.md), JSON, or Bell's Nodes,Runtime",
    )


def command_argv(stored: str) -> list[str] | None:
    """A stored command (the JSON text of its arguments) as its list, None if it is not one."""
    try:
        argv = json.loads(stored)
    except ValueError:
        return None
    return argv if isinstance(argv, list) and all(isinstance(a, str) for a in argv) else None


def _redacted_command(record: dict[str, Any]) -> None:
    """An imported command is stored like a recorded one: without its secrets."""
    from cobell_cli.redact import redact, scrub

    command = record.get("command")
    if isinstance(command, str):
        argv = command_argv(command)
        if argv is not None:
            record["command"] = json.dumps(redact(argv))
        else:
            record["command"] = scrub(command)
    elif isinstance(command, list):
        record["command"] = redact([str(a) for a in command])


def _validated(where: str, record: dict[str, Any], *, redact: bool) -> dict[str, Any] | Problem:
    if redact:
        _redacted_command(record)
    try:
        return validate_run(record)
    except ValueError as exc:
        return Problem(where, str(exc))


def _bell_rows(reader: Any, job: str, unit: str) -> Iterator[Raw]:
    scale = {"ms": 1e-3, "s": 1.0}[unit]
    for row in _rows(reader):
        where = f"line {reader.line_num}"
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != 2:
            yield Problem(where, f"expected 2 fields (Nodes,Runtime), got {len(row)}")
            continue
        nodes, runtime = (c.strip() for c in row)
        try:
            runtime_s = float(runtime) * scale
        except ValueError:
            yield Problem(where, f"Runtime: expected a number, got {runtime!r}")
            continue
        if not runtime_s > 0:
            yield Problem(where, f"Runtime: must be > 0, got {runtime!r}")
            continue
        yield where, {"job": job, "scale_out": nodes, "runtime_s": runtime_s, "status": "succeeded"}


def _cobell_rows(reader: Any, header: list[str], job: str | None) -> Iterator[Raw]:
    unknown = [c for c in header if c not in EXPORT_COLUMNS]
    if unknown:
        raise ImportFileError(
            f"line 1: unknown column(s) {', '.join(unknown)}",
            hint="see history/README.md for the columns",
        )
    for row in _rows(reader):
        where = f"line {reader.line_num}"
        if not row:
            continue  # a blank line
        if len(row) > len(header):
            yield Problem(where, "more fields than the header has")
            continue
        if len(row) < len(header):  # a short row: the rest is unknown (or cut off)
            where += f" ({len(row)} of {len(header)} fields)"
            row += [""] * (len(header) - len(row))
        record: dict[str, Any] = {
            k: (v if v != "" else None) for k, v in zip(header, row, strict=True)
        }
        raw = record.pop("colocations", None)
        if raw:
            try:
                colocations = json.loads(raw)
                if not isinstance(colocations, list):
                    raise ValueError
            except (ValueError, RecursionError):
                yield Problem(where, "colocations: expected a JSON list")
                continue
            record["colocations"] = colocations
        if job is not None:
            record["job"] = job
        yield where, record


def _rows(reader: Any) -> Iterator[list[str]]:
    """The reader's rows; a csv.Error becomes the import error naming its line."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise _csv_error(exc, reader.line_num) from None
        yield row


def _json_record(record: Any, where: str, job: str | None) -> Raw:
    if not isinstance(record, Mapping):
        return Problem(where, "expected an object")
    colocations = record.get("colocations")
    if colocations is not None and not isinstance(colocations, list):
        return Problem(where, "colocations: expected a list")
    record = dict(record)
    if job is not None:
        record["job"] = job
    return where, record


def _json_runs(stream: _JsonStream) -> Iterator[tuple[str, Any]]:
    """("record N", value) for each run of `[...]` or `{"cobell_history": 1, "runs": [...]}`;
    the frame's keys may come in any order, other keys are ignored as json.loads would."""
    if stream.peek() == "[":
        yield from stream.items()
        stream.end()
        return
    stream.expect("{")
    runs_seen = False
    if stream.peek() == "}":
        stream.expect("}")
    else:
        while True:
            key = stream.value()
            stream.expect(":")
            if key == "runs" and stream.peek() == "[":
                if runs_seen:
                    raise ImportFileError("`runs` given twice", hint="give one list of runs")
                runs_seen = True
                yield from stream.items()
            elif key == FORMAT_TAG:
                _check_version(stream.value())
            else:
                stream.value()  # an unknown key, or `runs` that is not a list (said below)
            if stream.peek() == ",":
                stream.expect(",")
                continue
            stream.expect("}")
            break
    stream.end()
    if not runs_seen:
        raise ImportFileError("expected a list of runs (or an object with a `runs` list)")


def _check_version(version: Any) -> None:
    if isinstance(version, bool) or not isinstance(version, int):
        raise ImportFileError(
            f"{FORMAT_TAG}: expected a format number, got {str(version)[:40]!r}",
            hint=f"files `history export` writes have \"{FORMAT_TAG}\": {FORMAT_VERSION}",
        )
    if version > FORMAT_VERSION:
        raise ImportFileError(
            f"written by a newer cobell (format {version})", hint="upgrade cobell"
        )


LONGEST_INTEGER_DIGITS = 100  # far beyond SQLite's 19; far below Python's int-from-text limit


def _json_integer(text: str) -> int | str:
    """A JSON integer; one too long to be any column's value stays text, refused by the
    field's check like a CSV cell (Python refuses to convert more than 4300 digits at all)."""
    return int(text) if len(text) <= LONGEST_INTEGER_DIGITS else text


class _JsonStream:
    """A JSON text read from a stream one value at a time, by the stdlib's scanner.

    `value()` decodes the next complete value with `raw_decode`, reading more of the stream
    while the buffer ends inside it; the buffer holds the unread rest and the value being
    read, never the whole file. Errors name the line, as json.loads's do.
    """

    WHITE = " \t\n\r"

    def __init__(self, fh: IO[str]) -> None:
        self.fh = fh
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.lines_before = 0  # newlines in the text dropped from the front of buf
        self.decoder = json.JSONDecoder(parse_int=_json_integer)

    def _more(self, at_least: int = READ_CHARS) -> bool:
        """Read on (dropping what was consumed); False, buffer untouched, at the stream's end."""
        if self.eof:
            return False
        chunk = self.fh.read(max(at_least, READ_CHARS))
        if not chunk:
            self.eof = True
            return False
        if "\0" in chunk:
            raise self._invalid("binary data (NUL bytes), not a history file", len(self.buf))
        self.lines_before += self.buf.count("\n", 0, self.pos)
        self.buf = self.buf[self.pos :] + chunk
        self.pos = 0
        return True

    def _line(self, pos: int) -> int:
        return self.lines_before + self.buf.count("\n", 0, pos) + 1

    def _invalid(self, message: str, pos: int) -> ImportFileError:
        return ImportFileError(f"line {self._line(pos)}: not valid JSON ({message})")

    def peek(self) -> str:
        """The next character that is not white space ("" at the end)."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in self.WHITE:
                self.pos += 1
            if self.pos < len(self.buf) or not self._more():
                return self.buf[self.pos : self.pos + 1]

    def expect(self, char: str) -> None:
        if self.peek() != char:
            found = self.buf[self.pos : self.pos + 1]
            what = f"found {found!r}" if found else "the text ends"
            raise self._invalid(f"expected {char!r}, {what}", self.pos)
        self.pos += 1

    def end(self) -> None:
        if self.peek():
            raise self._invalid("extra data after the document", self.pos)

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                cut = exc.pos >= len(self.buf) - 6 or exc.msg.startswith("Unterminated string")
                if not (cut and self._more(len(self.buf) - self.pos)):
                    raise self._invalid(exc.msg, exc.pos) from None
                continue
            except RecursionError:
                raise ImportFileError(
                    "JSON nested too deeply to be a history",
                    hint="give a file `history export` wrote",
                ) from None
            if end < len(self.buf) or not self._more():  # a number may go on in the next read
                self.pos = end
                return value

    def items(self) -> Iterator[tuple[str, Any]]:
        """("record N", value) for each element of the array that starts here."""
        self.expect("[")
        if self.peek() == "]":
            self.expect("]")
            return
        index = 0
        while True:
            index += 1
            yield f"record {index}", self.value()
            if self.peek() == ",":
                self.expect(",")
                continue
            self.expect("]")
            return


def export_record(run: Mapping[str, Any]) -> dict[str, Any]:
    return {c: run.get(c) for c in EXPORT_COLUMNS if c != "colocations"} | {
        "colocations": list(run.get("colocations") or [])
    }


def export_records(runs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [export_record(run) for run in runs]


def write_csv(runs: Iterable[Mapping[str, Any]], out: IO[str]) -> int:
    """Runs as cobell's CSV, one row at a time; how many were written."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(EXPORT_COLUMNS)
    count = 0
    for run in runs:
        cells = ["" if run.get(c) is None else run.get(c) for c in EXPORT_COLUMNS[:-1]]
        colocations = run.get("colocations") or []
        cells.append(json.dumps(colocations, separators=(",", ":")) if colocations else "")
        writer.writerow(cells)
        count += 1
    return count


def write_json(runs: Iterable[Mapping[str, Any]], out: IO[str]) -> int:
    """Runs as cobell's JSON document, one run at a time: the exact text of json.dumps(
    {"cobell_history": 1, "runs": [...]}, indent=1) (no final newline); how many runs."""
    out.write(f'{{\n "{FORMAT_TAG}": {FORMAT_VERSION},\n "runs": [')
    count = 0
    for run in runs:
        text = json.dumps(export_record(run), indent=1, allow_nan=False)
        out.write(("\n  " if count == 0 else ",\n  ") + text.replace("\n", "\n  "))
        count += 1
    out.write("\n ]\n}" if count else "]\n}")
    return count


def to_csv(runs: Iterable[Mapping[str, Any]]) -> str:
    buf = io.StringIO()
    write_csv(runs, buf)
    return buf.getvalue()


def to_json(runs: Iterable[Mapping[str, Any]]) -> str:
    buf = io.StringIO()
    write_json(runs, buf)
    return buf.getvalue()
