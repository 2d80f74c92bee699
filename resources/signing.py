"""Signatures on the files the project writes where others may write too, checked before the
project trusts what such a file says.

A folder of the storage root (a local disk or an S3 bucket) is writable by whoever may write
the root, so neither where a file sits nor a mark in its text says who wrote it. A file the
project signs carries an HMAC-SHA256 of its bytes under a key only the deployment holds: a
file written by hand, edited after it was signed, or signed under another key does not verify.

The key is the deployment's, never a run's config (whoever launches a run chooses its config):
``BENCHFOUNDRY_SIGNING_KEY`` where set, the one secret every worker of a cluster is given;
else a key file made on first use under the Dagster instance's home, readable by its owner
only, which the processes of one machine share.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import tempfile
from pathlib import Path

# A credential's name by resources.redact's pattern (``SIGNING_KEY``), so its value is masked
# in every message the project writes.
KEY_VARIABLE = "BENCHFOUNDRY_SIGNING_KEY"
KEY_FILE = Path(".benchfoundry", "signing.key")
# A password a person might pick is short enough to guess offline from one signed file; the
# key file's own key is 64 hex characters.
MIN_KEY_LENGTH = 32


def sign(data: bytes, key: bytes) -> str:
    """The HMAC-SHA256 of ``data`` under ``key``, in hex."""
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def verify(data: bytes, signature: str, key: bytes) -> bool:
    """Whether ``signature`` is :func:`sign`'s for ``data`` under ``key``, compared in constant
    time (how long a wrong guess takes says nothing of the right signature)."""
    return hmac.compare_digest(sign(data, key).encode(), signature.encode())


def key_file() -> Path:
    """Where the key file of this machine's Dagster instance is (or will be)."""
    return Path(os.environ.get("DAGSTER_HOME") or ".") / KEY_FILE


def key_source() -> str:
    """Where :func:`signing_key` takes the key from, for messages (never the key itself)."""
    return KEY_VARIABLE if os.environ.get(KEY_VARIABLE) else str(key_file())


def signing_key() -> bytes:
    """The deployment's key: ``BENCHFOUNDRY_SIGNING_KEY`` where set, else the key file under
    ``$DAGSTER_HOME`` (the current directory without one), made on first use."""
    value = os.environ.get(KEY_VARIABLE) or _read_or_create(key_file())
    if len(value) < MIN_KEY_LENGTH:
        raise ValueError(
            f"{key_source()}: the signing key has {len(value)} characters, fewer than {MIN_KEY_LENGTH}; "
            "make one with: python -c 'import secrets; print(secrets.token_hex(32))'"
        )
    return value.encode()


def _read_or_create(path: Path) -> str:
    if not path.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Written whole under another name (mkstemp makes it 0600) and linked into place: a
        # process that finds the key never reads half of it, and of two processes making it at
        # once, the second keeps the first one's key (a link never replaces a file).
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".signing-")
        try:
            with os.fdopen(descriptor, "w") as f:
                f.write(secrets.token_hex(32) + "\n")
            with contextlib.suppress(FileExistsError):
                os.link(temporary, path)
        finally:
            os.unlink(temporary)
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        raise PermissionError(f"{path}: the signing key may be read by others (mode {mode:o}); chmod 600 it")
    return path.read_text().strip()
