"""Spark event logs, streamed event by event: a log is never loaded whole (they reach gigabytes).

A path is what `spark.eventLog.dir` holds (a directory of logs), one rolling log directory
(`eventlog_v2_<app>` with `events_<N>_<app>[.<codec>]` parts, read in N order), or one log file.
The codec is the file's suffix, as Spark names it: none, `.zstd` (Spark's default since 3.0;
standard zstd frames), `.lz4` (lz4-java's LZ4BlockOutputStream blocks) and `.snappy`
(snappy-java's SnappyOutputStream chunks); `.lzf` is not supported. The compressed codecs need
the `eventlog` extra (`pip install 'cobell[eventlog]'`: zstandard, cramjam). A `.inprogress`
suffix (the app was running, or its driver died) is read like a finished log; the caller decides
what a log without an end event means.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from cobell_cli.errors import ImportFileError

CHUNK_BYTES = 1 << 20
ZSTD_INPUT_BYTES = 1 << 16  # compressed bytes per step: ~1 MiB of events at 15x, bounded memory
ROLLING_PREFIX = "eventlog_v2_"
_PART = re.compile(r"events_(\d+)_")
CODECS = ("zstd", "lz4", "snappy")
_LZ4_MAGIC = b"LZ4Block"
_SNAPPY_MAGIC = b"\x82SNAPPY\x00"

Events = Callable[[], Iterator[dict[str, Any]]]


class EventLogError(ImportFileError):
    """An event log that cannot be read: corrupt, truncated, or in an unsupported codec."""


class _Truncated(EventLogError):
    """The data ends mid-record: an error, except at the tail of a log still being written."""

    def __init__(self, path: Path, codec: str, why: str) -> None:
        super().__init__(
            f"event log {path}: corrupt or truncated {codec} data ({why})",
            hint="copy the log again, or leave it out",
        )


def discover(paths: Iterable[str | Path]) -> list[tuple[str, Events]]:
    """Every log under `paths`, as (name, function that streams its events), in name order."""
    found: list[tuple[str, Events]] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists():
            raise EventLogError(f"no event log at {path}", hint="pass a log file or directory")
        for log in _logs_in(path):
            found.append((str(log), _streamer(log)))
    return found


def _streamer(log: Path) -> Events:
    return lambda: iter_events(log)


def _logs_in(path: Path) -> list[Path]:
    if path.is_file() or path.name.startswith(ROLLING_PREFIX):
        return [path]
    return sorted(
        p
        for p in path.iterdir()
        if not p.name.startswith(".")
        and (p.name.startswith(ROLLING_PREFIX) if p.is_dir() else not p.name.endswith(".crc"))
    )


def iter_events(path: str | Path) -> Iterator[dict[str, Any]]:
    """The events of one log file or rolling log directory, in order."""
    path = Path(path)
    for part in _parts(path):
        yield from _events_of_file(part)


def _parts(path: Path) -> list[Path]:
    if not path.is_dir():
        return [path]
    parts = [p for p in path.iterdir() if _PART.match(p.name)]
    if not parts:
        raise EventLogError(
            f"rolling event log {path} has no events_N_ files",
            hint="pass the eventlog_v2_* directory Spark wrote, or one log file",
        )
    return sorted(parts, key=lambda p: int(_PART.match(p.name).group(1)))  # type: ignore[union-attr]


def codec_of(path: Path) -> str | None:
    """The compression codec named by the file's suffix (None: plain JSON lines)."""
    suffix = Path(path.name.removesuffix(".inprogress")).suffix.lstrip(".")
    if suffix in ("", "json"):
        return None
    if suffix == "zst":
        return "zstd"
    if suffix not in CODECS:
        raise EventLogError(
            f"event log {path}: unsupported compression codec {suffix!r}",
            hint=f"cobell reads plain, {', '.join(CODECS)} logs; set "
            "spark.eventLog.compression.codec to one of them, or decompress the file first",
        )
    return suffix


def _events_of_file(path: Path) -> Iterator[dict[str, Any]]:
    """A log still being written (`.inprogress`) may end mid-record: its tail is dropped."""
    codec = codec_of(path)
    in_progress = path.name.endswith(".inprogress")
    try:
        with path.open("rb") as raw:
            lines = _lines(_decompressed(raw, codec, path))
            for number, (line, last) in enumerate(_with_last(lines), start=1):
                if not line.strip():
                    continue
                try:
                    yield _event(line, path, number)
                except EventLogError:
                    if not (in_progress and last):
                        raise
    except _Truncated:
        if not in_progress:
            raise
    except OSError as exc:
        raise EventLogError(f"cannot read event log {path}: {exc.strerror or exc}") from None


def _with_last(items: Iterator[bytes]) -> Iterator[tuple[bytes, bool]]:
    previous: bytes | None = None
    for item in items:
        if previous is not None:
            yield previous, False
        previous = item
    if previous is not None:
        yield previous, True


def _event(line: bytes, path: Path, number: int) -> dict[str, Any]:
    try:
        event = json.loads(line)
    except ValueError:
        raise EventLogError(
            f"event log {path}, line {number}: not a JSON event (the file is corrupt or "
            "truncated)",
            hint="copy the log again, or leave it out",
        ) from None
    if not isinstance(event, dict) or not isinstance(event.get("Event"), str):
        raise EventLogError(
            f"event log {path}, line {number}: not a Spark listener event",
            hint="pass a Spark event log (spark.eventLog.dir)",
        )
    return event


def _lines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Lines across chunk boundaries; a last line without a newline is still yielded."""
    rest = b""
    for chunk in chunks:
        rest += chunk
        *lines, rest = rest.split(b"\n")
        yield from lines
    if rest:
        yield rest


def _decompressed(raw: BinaryIO, codec: str | None, path: Path) -> Iterator[bytes]:
    if codec is None:
        yield from iter(lambda: raw.read(CHUNK_BYTES), b"")
    elif codec == "zstd":
        yield from _zstd(raw, path)
    elif codec == "lz4":
        yield from _lz4_blocks(raw, path)
    else:
        yield from _snappy_chunks(raw, path)


def _codec_module(name: str, codec: str) -> Any:
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        raise EventLogError(
            f"reading {codec} event logs needs the {name} package",
            hint="pip install 'cobell[eventlog]'",
        ) from None


def _zstd(raw: BinaryIO, path: Path) -> Iterator[bytes]:
    """Frame after frame (Spark flushes often); a frame cut short is an error, not an end."""
    zstandard = _codec_module("zstandard", "zstd")
    context = zstandard.ZstdDecompressor()
    frame, fed = context.decompressobj(), False
    try:
        while data := raw.read(ZSTD_INPUT_BYTES):
            while data:
                fed = True
                if out := frame.decompress(data):
                    yield out
                data = frame.unused_data if frame.eof else b""
                if frame.eof:
                    frame, fed = context.decompressobj(), False
    except zstandard.ZstdError as exc:
        raise _corrupt(path, "zstd", exc) from None
    if fed and not frame.eof:
        raise _Truncated(path, "zstd", "the last frame is cut short")


def _lz4_blocks(raw: BinaryIO, path: Path) -> Iterator[bytes]:
    """lz4-java's block stream: magic, token, compressed and original length, checksum, data."""
    cramjam = _codec_module("cramjam", "lz4")
    while header := raw.read(21):
        if len(header) < 21:
            raise _Truncated(path, "lz4", "block header cut short")
        if header[:8] != _LZ4_MAGIC:
            raise _corrupt(path, "lz4", "bad block header")
        method = header[8] & 0xF0
        size, original = struct.unpack_from("<ii", header, 9)
        if size == 0 and original == 0:
            continue  # the end-of-stream marker (streams may be concatenated)
        data = _read_exactly(raw, size, path, "lz4")
        if method == 0x10:  # stored raw
            yield data
            continue
        try:
            yield bytes(cramjam.lz4.decompress_block(data, output_len=original))
        except Exception as exc:  # cramjam raises its own DecompressionError
            raise _corrupt(path, "lz4", exc) from None


def _snappy_chunks(raw: BinaryIO, path: Path) -> Iterator[bytes]:
    """snappy-java's stream: an 8-byte magic and two version ints, then length-prefixed blocks."""
    cramjam = _codec_module("cramjam", "snappy")
    header = raw.read(16)
    if header[:8] != _SNAPPY_MAGIC:
        raise _corrupt(path, "snappy", "no SnappyOutputStream header")
    while prefix := raw.read(4):
        if len(prefix) < 4:
            raise _Truncated(path, "snappy", "block length cut short")
        (size,) = struct.unpack(">i", prefix)
        data = _read_exactly(raw, size, path, "snappy")
        try:
            yield bytes(cramjam.snappy.decompress_raw(data))
        except Exception as exc:  # cramjam raises its own DecompressionError
            raise _corrupt(path, "snappy", exc) from None


def _read_exactly(raw: BinaryIO, size: int, path: Path, codec: str) -> bytes:
    if size < 0:
        raise _corrupt(path, codec, "negative block length")
    data = raw.read(size)
    if len(data) != size:
        raise _Truncated(path, codec, "block cut short")
    return data


def _corrupt(path: Path, codec: str, why: object) -> EventLogError:
    return EventLogError(
        f"event log {path}: corrupt or truncated {codec} data ({why})",
        hint="copy the log again, or leave it out",
    )
