"""Secrets kept out of what the project writes: error messages, log excerpts, metadata.

Text from outside the project (a model server's log, an error a provider returned, the
output of a command a deployment runs) may carry credentials: a server that prints its
environment, a client error that echoes a header. Such text passes through :func:`redact`
before it reaches an event log, a table or an exception. Two rules, both needed:

- the value of every environment variable whose name looks like a credential (an API,
  access, secret or private key, a token, a secret, a password, a credential) is replaced
  wherever it appears, so a secret this process holds never leaves it in a message;
- ``NAME=value`` and ``"NAME": "value"`` with such a name, ``Bearer <token>``, and the
  password of a URL's ``user:password@host``, are masked whatever the value, so a secret only
  the other process held (a server's own environment) is masked too.

An exception is redacted whole (:func:`redact_chain`): Dagster writes a failed step's error
with every exception it links to (its cause and context) into the event log and the compute
logs, so a masked message over a driver's raw error would still leak.

The names are narrow on purpose: ``max_tokens``, ``cache_key`` or ``TOKENIZERS_PARALLELISM``
in a server's error are what a reader needs to see.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping

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
# A URL's userinfo, also without ``://``: libpq echoes a URL it cannot read
# (``postgresql//user:pw@host/db``) whole. A user is needed, except right after ``//``, and a
# host after the ``@``, so ``a:b`` and ``x@y.org`` are left alone.
_USERINFO = re.compile(
    r"(?P<user>(?:(?<=//)[\w.%~+-]*|(?<![\w.%~+:/-])(?!mailto:)[\w.%~+-]+):)(?P<password>[^\s/\"'<>]+)@(?=[\w\[])"
)
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

    text = _BEARER.sub(lambda m: m.group(1) + MASK, _ASSIGNED.sub(mask, text))
    return _USERINFO.sub(lambda m: f"{m.group('user')}{MASK}@", text)


class Redacted(Exception):
    """An exception that :func:`redact_chain` could not rebuild as its own type with a redacted
    message (one whose constructor takes more than a message), under its type's name."""


def redact_chain(exc: BaseException, secrets: Iterable[str] = ()) -> BaseException:
    """``exc`` rebuilt with its message, its notes and every exception it links to
    (``__cause__``, ``__context__``) redacted: each of ``secrets`` (a URL, its password)
    masked, then :func:`redact`. Each link keeps its type where the type takes a message
    alone (most do; else a :class:`Redacted` of the same name) and its traceback (frames name
    files, lines and code, not values). ``exc`` itself is left as it was.

    Raise the result outside the ``except`` block that caught ``exc``: raised inside it,
    Python links the raw exception back as the new one's context."""
    masked = sorted({s for s in secrets if s}, key=len, reverse=True)

    def clean(text: str) -> str:
        for secret in masked:
            text = text.replace(secret, MASK)
        return redact(text)

    rebuilt: dict[int, BaseException] = {}

    def rebuild(e: BaseException) -> BaseException:
        if id(e) in rebuilt:
            return rebuilt[id(e)]
        new = rebuilt[id(e)] = _same_kind(e, clean(str(e))).with_traceback(e.__traceback__)
        if getattr(e, "__notes__", None):
            new.__notes__ = [clean(note) for note in e.__notes__]
        new.__cause__ = None if e.__cause__ is None else rebuild(e.__cause__)
        new.__context__ = None if e.__context__ is None else rebuild(e.__context__)
        new.__suppress_context__ = e.__suppress_context__  # after __cause__, which sets it
        return new

    return rebuild(exc)


def _same_kind(e: BaseException, message: str) -> BaseException:
    try:
        new = type(e)(message)
        if str(new) == message:
            return new
    except Exception:  # noqa: BLE001 - a constructor that wants more than a message
        pass
    return _stand_in(type(e))(message)


@functools.cache
def _stand_in(kind: type[BaseException]) -> type[Redacted]:
    return type(kind.__name__, (Redacted,), {"__module__": kind.__module__, "__qualname__": kind.__qualname__})
