"""Secrets kept out of what the project writes: error messages, log excerpts, metadata.

Text from outside the project (a model server's log, an error a provider returned, the
output of a command a deployment runs) may carry credentials: a server that prints its
environment, a client error that echoes a header. Such text passes through :func:`redact`
before it reaches an event log, a table or an exception. Two rules, both needed:

- the value of every environment variable whose name looks like a credential (an API,
  access, secret or private key, a token, a secret, a password, a credential) is replaced
  wherever it appears, so a secret this process holds never leaves it in a message;
- ``NAME=value`` and ``"NAME": "value"`` with such a name, and ``Bearer <token>``, are
  masked whatever the value, so a secret only the other process held (a server's own
  environment) is masked too.

The names are narrow on purpose: ``max_tokens``, ``cache_key`` or ``TOKENIZERS_PARALLELISM``
in a server's error are what a reader needs to see.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

SECRET_NAME = re.compile(
    r"(API|ACCESS|SECRET|PRIVATE|AUTH|SIGNING|ENCRYPTION)[_-]?KEY|TOKEN(?![A-Za-z])|SECRET"
    r"|PASSW(OR)?D|CREDENTIAL",
    re.I,
)
# Values shorter than this are too likely to be ordinary words or numbers ("1", "none").
MIN_SECRET_LENGTH = 6
# NAME=value (shell, .env, `env` output) and "NAME": "value" (JSON, YAML); NAME a credential's.
_ASSIGNED = re.compile(
    r"""(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)(?P<sep>\s*=\s*|["']?\s*:\s*["']?)(?P<value>[^\s"',;&]+)"""
)
_BEARER = re.compile(r"(Bearer\s+)[^\s\"',;]+", re.I)
MASK = "[redacted]"


def secret_values(environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """``(name, value)`` of the environment's credentials, longest value first (so a value
    that contains another is masked whole)."""
    env = os.environ if environ is None else environ
    found = [
        (name, value) for name, value in env.items() if SECRET_NAME.search(name) and len(value) >= MIN_SECRET_LENGTH
    ]
    return sorted(found, key=lambda nv: -len(nv[1]))


def redact(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with every credential masked (see the module's two rules)."""
    if not text:
        return text
    for name, value in secret_values(environ):
        if value in text:
            text = text.replace(value, f"[redacted {name}]")

    def mask(m: re.Match) -> str:
        if not SECRET_NAME.search(m.group("name")) or m.group("value").startswith("[redacted"):
            return m.group(0)
        return f"{m.group('name')}{m.group('sep')}{MASK}"

    return _BEARER.sub(lambda m: m.group(1) + MASK, _ASSIGNED.sub(mask, text))
