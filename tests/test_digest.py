"""core/digest.py: hashlib's digests, without loading hashlib (and OpenSSL) in a command."""

from __future__ import annotations

import hashlib
import subprocess
import sys

from cobell_cli.core import digest


def test_the_digests_are_hashlibs() -> None:
    for data in (b"", b"sgd", "jöb-名".encode(), bytes(range(256)) * 100):
        for size in (16, 20, 64):
            assert (digest.blake2b(data, digest_size=size).hexdigest()
                    == hashlib.blake2b(data, digest_size=size).hexdigest())
        assert digest.sha1(data).hexdigest() == hashlib.sha1(data).hexdigest()
    incremental = digest.blake2b(digest_size=20)
    incremental.update(b"a")
    incremental.update(b"b")
    assert incremental.hexdigest() == hashlib.blake2b(b"ab", digest_size=20).hexdigest()


def test_a_cached_predicts_hashing_modules_leave_hashlib_unloaded() -> None:
    code = ("import sys\n"
            "import cobell_cli.core.job_name, cobell_cli.store.model_cache, "
            "cobell_cli.store.intact\n"
            "print('hashlib' in sys.modules, '_hashlib' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout.split()
    assert out == ["False", "False"]
