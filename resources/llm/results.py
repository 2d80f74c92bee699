"""What a call is and what comes back: the requests (:class:`LLMRequest`, :class:`ScoreRequest`),
the :class:`LLMResult` a step reads, and the reading of a reply into one (from the OpenAI SDK's
objects, plain JSON, a batch runner's answers or the cache's payloads)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

from resources.llm.faults import TransientError
from resources.llm.structured import FREE_TEXT, STRUCTURED, Output


class ParseError(ValueError):
    """Raised by a parse function when model output does not have the expected shape."""


@dataclasses.dataclass
class LLMRequest:
    """One call: ``key`` names the item it serves (question id, passage id) in errors and
    results; ``sample`` is the sample index, sent as the seed and part of the cache key;
    ``output`` is the prompt's declared answer shape (:attr:`Prompt.output`), which a
    ``vllm`` entry is asked to follow (:meth:`LLMResource.params`)."""

    key: str
    messages: list[dict]
    sample: int = 0
    params: dict = dataclasses.field(default_factory=dict)
    output: Output | None = None


@dataclasses.dataclass
class ScoreRequest:
    """How likely ``continuation`` is after ``prefix``: ``key`` names the item it serves."""

    key: str
    prefix: str
    continuation: str


@dataclasses.dataclass
class LLMResult:
    key: str
    text: str | None
    value: Any = None
    error: str | None = None
    cached: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # The first answer token's most likely alternatives (token -> log-probability), when
    # the request asked for ``logprobs``.
    top_logprobs: dict[str, float] | None = None
    # Every generated token and its alternatives, in order (``tokens[i]`` was chosen among
    # ``token_logprobs[i]``), when the request asked for ``logprobs``.
    tokens: list[str] | None = None
    token_logprobs: list[dict[str, float]] | None = None
    # How the answer was read: "structured" (a constrained reply, rendered into the text its
    # parser reads) or "free_text"; None without an answer.
    answered: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


_THINK = re.compile(r"<think>.*?</think>", re.S)


def strip_thinking(text: str) -> str:
    """Drop a reasoning block so parsers see only the answer."""
    return _THINK.sub("", text).strip()


def _check_reply(response: Any) -> None:
    """A reply with no choices is a server fault worth another try, not an answer."""
    if not _field(response, "choices"):
        raise TransientError("the reply has no choices")


def _check_chat_reply(response: Any) -> None:
    """A chat reply whose first choice has no message is a fault worth another try as well,
    on every path: litellm refuses one as a server error ("Invalid response object"), and the
    vLLM client and a batch answer must not read it as an empty answer."""
    _check_reply(response)
    message = _field(_field(response, "choices")[0], "message")
    if message is None or (isinstance(response, dict) and not isinstance(message, dict)):
        raise TransientError("the reply's first choice has no message")


def _batch_result(key: str, response: dict | None, error: str | None) -> tuple[LLMResult, dict | None]:
    """A batch runner's answer as the HTTP path would have made it (an empty answer kept
    but not cached, as there)."""
    if error is not None or response is None:
        return LLMResult(key, None, error=f"the batch runner answered with an error: {error or 'no body'}"), None
    try:
        _check_chat_reply(response)
        result, payload = _from_response(key, response)
    except Exception as e:  # an answer of the wrong shape stays with its item
        return LLMResult(key, None, error=f"unreadable batch answer: {type(e).__name__}: {e}"), None
    if not result.text.strip() and not result.token_logprobs:
        payload = None
    return result, payload


def _field(obj: Any, name: str) -> Any:
    """A reply's field, from the SDK's objects or from plain JSON (a batch runner's answers)."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _from_response(key: str, response: Any) -> tuple[LLMResult, dict]:
    """A result and what the cache keeps of it (plain JSON-able values)."""
    choice = _field(response, "choices")[0]
    usage = _field(response, "usage")
    tokens, alternatives = _token_logprobs(choice)
    content = _field(_field(choice, "message"), "content")
    if content is not None and not isinstance(content, str):
        raise ValueError(f"the reply's content is a {type(content).__name__}, not text")
    payload = {
        "text": content or "",
        "prompt_tokens": int(_field(usage, "prompt_tokens") or 0) if usage is not None else 0,
        "completion_tokens": int(_field(usage, "completion_tokens") or 0) if usage is not None else 0,
        "tokens": tokens,
        "token_logprobs": alternatives,
    }
    return _from_payload(key, payload, cached=False), payload


def _from_payload(key: str, payload: dict, cached: bool) -> LLMResult:
    alternatives = payload.get("token_logprobs")
    return LLMResult(
        key,
        payload["text"],
        cached=cached,
        prompt_tokens=payload["prompt_tokens"],
        completion_tokens=payload["completion_tokens"],
        top_logprobs=alternatives[0] if alternatives else None,
        tokens=payload.get("tokens"),
        token_logprobs=alternatives,
    )


def _finish(result: LLMResult, parse: Callable[[str], Any] | None, output: Output | None = None) -> LLMResult:
    """The result as its step reads it: a reply that follows the declared ``output`` (sent as
    a constraint) becomes the free-text form the step's parser reads; any other reply is
    read as it is. ``parse`` then gives the value (an unparsable reply keeps its text)."""
    if result.text is None:
        return result
    # the answer without its reasoning block, stripped once: this runs for every call
    answer = strip_thinking(result.text)
    rendered = output.read(answer) if output is not None else None
    if rendered is not None:
        result.text = answer = rendered
        result.answered = STRUCTURED
    else:
        result.answered = FREE_TEXT
    if parse is None:
        result.value = answer
        return result
    try:
        result.value = parse(answer)
    except ParseError as e:
        result.error = f"unparsable: {e}"
    return result


def _token_logprobs(choice: Any) -> tuple[list[str] | None, list[dict[str, float]] | None]:
    """Each generated token and its alternatives (the chosen token among them)."""
    logprobs = _field(choice, "logprobs")
    content = (
        (logprobs.get("content") if isinstance(logprobs, dict) else getattr(logprobs, "content", None))
        if logprobs is not None
        else None
    )
    if not content:
        return None, None
    tokens, alternatives = [], []
    for entry in content:
        get = entry.get if isinstance(entry, dict) else lambda k, e=entry: getattr(e, k, None)
        top = {
            (t["token"] if isinstance(t, dict) else t.token): float(t["logprob"] if isinstance(t, dict) else t.logprob)
            for t in (get("top_logprobs") or [])
        }
        top.setdefault(get("token"), float(get("logprob")))
        tokens.append(get("token"))
        alternatives.append(top)
    return tokens, alternatives


def continuation_from_echo(logprobs: Any, prefix_chars: int) -> tuple[list[float], int]:
    """The continuation's token log-probabilities from an echoed completion: the prompt
    tokens starting at or after the prefix's end, before the one generated token."""
    get = logprobs.get if isinstance(logprobs, dict) else lambda k: getattr(logprobs, k)
    offsets, values = get("text_offset"), get("token_logprobs")
    if not offsets or values is None:
        raise ValueError("the server returned no prompt log-probabilities (echo with logprobs)")
    # The last entry is the generated token; the first prompt token has no log-probability.
    picked = [float(v) for off, v in zip(offsets[:-1], values[:-1]) if off >= prefix_chars and v is not None]
    if not picked:
        raise ValueError("no continuation tokens in the echoed prompt")
    return picked, len(offsets) - 1
