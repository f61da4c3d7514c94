"""The two hashes cobell keys its caches and names by, without loading OpenSSL.

`import hashlib` loads `_hashlib` (OpenSSL's libcrypto) on its first import, ~4 ms of every
command, although blake2b always comes from CPython's own `_blake2` and sha1 gives the same
digest from `_sha1`. An interpreter without those modules takes hashlib's.
"""

from __future__ import annotations

try:
    from _blake2 import blake2b
    from _sha1 import sha1
except ImportError:  # pragma: no cover - CPython always has both
    from hashlib import blake2b, sha1

__all__ = ["blake2b", "sha1"]
