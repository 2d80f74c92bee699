"""Secrets kept out of errors (issue 44, finding 5): a URL's password is masked even in a URL
libpq could not read, and an exception is redacted with every exception it links to."""

import traceback

import pytest

from resources.redact import MASK, Redacted, redact, redact_chain

PASSWORD = "s3cretpw"


@pytest.mark.parametrize(
    "text",
    [
        'missing "=" after "postgresql//user:s3cretpw@127.0.0.1/db" in connection info string',
        "postgresql://user:s3cretpw@127.0.0.1:5432/db",
        "postgresql://:s3cretpw@db.internal/answers",
        "redis://default:s3cretpw@[::1]:6379/0",
        "user:s3cretpw@db.internal",
    ],
)
def test_a_urls_password_is_masked_with_or_without_its_scheme(text):
    masked = redact(text, environ={})
    assert PASSWORD not in masked and f":{MASK}@" in masked
    assert masked.replace(MASK, PASSWORD) == text  # nothing else changed


@pytest.mark.parametrize(
    "text",
    [
        "a:b",
        "x@y.org",
        "write to x@y.org or mailto:x@y.org",
        "http://127.0.0.1:8000/v1/chat/completions",
        "git@github.com:org/repo.git",
        "ratio 3:4 at 10:30, bob@example.com said",
        "postgresql://user@host/db",
    ],
)
def test_ordinary_text_is_left_alone(text):
    assert redact(text, environ={}) == text


class Wordy(Exception):
    """An exception whose constructor wants more than a message (as litellm's do)."""

    def __init__(self, message: str, model: str):
        super().__init__(message)
        self.model = model


def failing_driver(url: str):
    raise ValueError(f"invalid dsn: {url}")


def chained(url: str) -> BaseException:
    """An error raised from a driver's error, while handling another, each naming ``url``."""
    try:
        try:
            raise Wordy(f"lookup of {url} failed", model="m")
        except Wordy:
            try:
                failing_driver(url)
            except ValueError as e:
                error = RuntimeError(f"the cache at {url} could not be reached")
                error.add_note(f"url: {url}")
                raise error from e
    except RuntimeError as e:
        return e


def linked(exc: BaseException) -> list[BaseException]:
    seen, todo = [], [exc]
    while todo:
        e = todo.pop(0)
        if e is not None and all(e is not s for s in seen):
            seen.append(e)
            todo += [e.__cause__, e.__context__]
    return seen


def test_an_exception_is_redacted_with_its_whole_chain_keeping_types_and_tracebacks():
    url = "postgresql//user:s3cretpw@127.0.0.1/db"
    original = chained(url)
    clean = redact_chain(original, secrets=[url])
    chain = linked(clean)
    text = "".join("".join(traceback.format_exception(e)) + repr(e.args) for e in chain)
    assert PASSWORD not in text and url not in text
    # the same shape: a cause, the exception handled when it was raised, their types and frames
    assert [type(e).__name__ for e in chain] == ["RuntimeError", "ValueError", "Wordy"]
    assert type(clean) is RuntimeError and isinstance(clean.__cause__, ValueError)
    assert isinstance(chain[2], Redacted)  # Wordy wants a model: a stand-in of the same name
    assert clean.__suppress_context__ and clean.__cause__.__context__ is chain[2]
    assert "failing_driver" in "".join(traceback.format_exception(clean.__cause__))
    assert str(clean) == f"the cache at {MASK} could not be reached" and clean.__notes__ == [f"url: {MASK}"]
    # the original is left as it was
    assert url in str(original) and url in str(original.__cause__)


def test_an_error_raised_outside_its_handler_keeps_only_the_redacted_chain():
    url = "postgresql://user:s3cretpw@127.0.0.1/db"

    def fail():
        try:
            failing_driver(url)
        except ValueError as e:
            failure = redact_chain(e)
        raise failure

    with pytest.raises(ValueError) as caught:
        fail()
    assert all(PASSWORD not in "".join(traceback.format_exception(e)) for e in linked(caught.value))
