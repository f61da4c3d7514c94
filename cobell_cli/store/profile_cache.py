"""Event-log profiles decoded once: the JSON of run_profiles kept beside the model cache in
marshal's binary form.

A plan with profiles decodes each one's stored JSON on every `cobell predict` (~15 ms for a
profile of 26 000 tasks, mostly parsing floats; the job's newest three and up to twelve of
other jobs'); marshal reads the same values in ~2 ms. An entry is named by a hash of the JSON
text itself and of the interpreter (marshal's format is the interpreter's), so it only ever
answers for that very text, and marshal gives back exactly the floats, strings and lists
json.loads gave. Written atomically, newest MAX_PROFILES kept; a damaged file or one that
cannot be written is a miss, never an error. Deleting the directory is always safe.
"""

from __future__ import annotations

import contextlib
import json
import marshal
import sys
from pathlib import Path
from typing import Any

from cobell_cli.core.digest import blake2b
from cobell_cli.store.model_cache import write_bytes

MAX_PROFILES = 64  # newest kept; one is ~0.6 MB for 26 000 tasks
SUFFIX = ".marshal"


class ProfileCache:
    """`decode(summary)`: json.loads(summary), from `directory` when decoded before."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def decode(self, summary: str) -> Any:
        path = self.directory / f"profile-{_key(summary)}{SUFFIX}"
        with contextlib.suppress(OSError, ValueError, EOFError, TypeError):
            value = marshal.loads(path.read_bytes())
            if isinstance(value, dict):
                return value
        value = json.loads(summary)
        write_bytes(path, marshal.dumps(value), pattern=f"profile-*{SUFFIX}",
                    keep=MAX_PROFILES)
        return value


def _key(summary: str) -> str:
    digest = blake2b(repr((marshal.version, sys.version)).encode(), digest_size=20)
    digest.update(summary.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()
