"""The offline batch path's file format and runner (``resources/llm/batch.py``): requests
written as an OpenAI batch file, answers read back defensively, the runner run as a
subprocess against the stand-in (``tests/standin_batch.py``) with its failures and timeout.
vLLM's own batch runner is run through the LLM resource (``test_llm_batch_mode.py``)."""

import json
import os
import sys
import time
from pathlib import Path

import pytest

from resources.llm.batch import BatchRunError, read_batch_output, run_batch, write_batch

ROOT = Path(__file__).resolve().parents[2]
STANDIN = [sys.executable, "-m", "tests.standin_batch", "-i", "{input}", "-o", "{output}"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def body(text: str, **extra) -> dict:
    return {
        "model": "smollm2",
        "messages": [{"role": "user", "content": text}],
        "temperature": 0.0,
        "max_tokens": 8,
        "seed": 0,
        **extra,
    }


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# --- write_batch ----------------------------------------------------------------------------


def test_write_batch_writes_the_openai_batch_format(tmp_path):
    bodies = {
        "k1": body("Hello there"),
        "k2": body(
            "Ünïcode – “quotes” and \\ slashes\n",
            logprobs=True,
            top_logprobs=5,
            chat_template_kwargs={"enable_thinking": False},
        ),
    }
    path = tmp_path / "in.jsonl"
    assert write_batch(path, ((k, b) for k, b in bodies.items())) == 2  # a generator streams
    assert lines(path) == [
        {"custom_id": k, "method": "POST", "url": "/v1/chat/completions", "body": b} for k, b in bodies.items()
    ]
    assert not list(tmp_path.glob("*.partial"))
    assert write_batch(tmp_path / "empty.jsonl", []) == 0
    assert (tmp_path / "empty.jsonl").read_bytes() == b""


@pytest.mark.parametrize("ids", [["a", "a"], ["a", ""], ["a", 7]])
def test_write_batch_refuses_ids_the_runner_could_not_tell_apart(tmp_path, ids):
    path = tmp_path / "in.jsonl"
    with pytest.raises(ValueError, match="custom_id"):
        write_batch(path, [(i, body("x")) for i in ids])
    assert not path.exists() and not list(tmp_path.iterdir())  # nothing half-written is left


def test_write_batch_leaves_no_partial_file_when_items_fail(tmp_path):
    def items():
        yield "a", body("x")
        raise RuntimeError("the chunk broke")

    with pytest.raises(RuntimeError):
        write_batch(tmp_path / "in.jsonl", items())
    assert not list(tmp_path.iterdir())


# --- read_batch_output ----------------------------------------------------------------------


def completion(text: str) -> dict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "smollm2",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    }


def entry(custom_id, body=None, status=200, error=None) -> dict:
    return {
        "id": "vllm-x",
        "custom_id": custom_id,
        "response": {"status_code": status, "request_id": "vllm-batch-x", "body": body},
        "error": error,
    }


def test_read_batch_output_reports_every_bad_line_without_raising(tmp_path):
    rows = [
        json.dumps(entry("ok", completion("Paris"))),  # 1
        json.dumps(
            entry("engine", None, 400, {"error": {"message": "too long", "type": "BadRequestError", "code": 400}})
        ),  # 2
        json.dumps(entry("string-error", None, 400, "bad request line")),  # 3
        json.dumps(entry("status", {"error": {"message": "overloaded"}}, 503)),  # 4
        '{"custom_id": "cut", "response": {"status_code": 200, "bo',  # 5
        "",  # 6
        "[1, 2, 3]",  # 7
        json.dumps(entry(None, completion("no id"))),  # 8
        json.dumps(entry("ok", completion("again"))),  # 9
        json.dumps(entry("no-choices", {"id": "x", "choices": []})),  # 10
        json.dumps({"custom_id": "no-response"}),  # 11
        json.dumps(entry("no-body", None)),  # 12
        "\x00\xff garbage",  # 13
    ]
    path = tmp_path / "out.jsonl"
    path.write_text("\n".join(rows) + "\n")
    got = list(read_batch_output(path))
    assert got[0] == ("ok", completion("Paris"), None)
    assert got[1:] == [
        ("engine", None, "too long (400)"),
        ("string-error", None, "bad request line"),
        ("status", None, "status 503: overloaded"),
        (None, None, got[4][2]),
        (None, None, "line 7: not a JSON object"),
        (None, None, "line 8: no custom_id"),
        (None, None, "line 9: custom_id 'ok' answered twice (the first answer stands)"),
        ("no-choices", None, "response body has no choices[0].message"),
        ("no-response", None, "no response"),
        ("no-body", None, "response has no body"),
        (None, None, got[11][2]),
    ]
    assert got[4][2].startswith("line 5: not JSON")
    assert got[11][2].startswith("line 13: not JSON")


# --- run_batch against the stand-in -----------------------------------------------------------


def test_a_batch_round_trip_through_the_standin(tmp_path):
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    texts = {f"key{i}": f"question number {i} about the capital of France" for i in range(50)}
    write_batch(
        inp, ((k, body(t, logprobs=True, top_logprobs=2) if k == "key3" else body(t)) for k, t in texts.items())
    )
    logged = []
    seconds = run_batch([*STANDIN, "--name", "batchy"], inp, out, timeout=60, log=logged.append, env=ENV, cwd=ROOT)
    assert seconds > 0
    assert logged[-1] == "answered 50 requests"
    got = {cid: (b, e) for cid, b, e in read_batch_output(out)}
    assert set(got) == set(texts) and all(e is None for _, e in got.values())
    for k, t in texts.items():
        assert got[k][0]["choices"][0]["message"]["content"] == "batchy: " + " ".join(t.split()[:5])
    content = got["key3"][0]["choices"][0]["logprobs"]["content"]
    assert [c["token"] for c in content] == list("batchy: question number 3 about the")[:8]
    assert got["key4"][0]["choices"][0].get("logprobs") is None
    # the shape vLLM writes, entry by entry
    first = lines(out)[0]
    assert set(first) == {"id", "custom_id", "response", "error"} and first["error"] is None
    assert set(first["response"]) == {"status_code", "request_id", "body"}
    assert first["response"]["body"]["object"] == "chat.completion"


def test_failed_requests_come_back_as_errors_for_their_ids(tmp_path):
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_batch(inp, ((f"k{i}", body(f"q {i}")) for i in range(1, 11)))
    run_batch([*STANDIN, "--fail-every", "3"], inp, out, timeout=60, env=ENV, cwd=ROOT)
    got = list(read_batch_output(out))
    failed = {cid: e for cid, b, e in got if e is not None}
    assert failed == {f"k{i}": f"stand-in failure for request {i} (400)" for i in (3, 6, 9)}
    assert all(b is not None for cid, b, e in got if cid not in failed) and len(got) == 10


def test_a_failing_runner_raises_with_its_exit_code_and_log(tmp_path):
    inp = tmp_path / "in.jsonl"
    write_batch(inp, [("a", body("x"))])
    logged = []
    with pytest.raises(BatchRunError) as e:
        run_batch(
            [*STANDIN, "--exit-code", "3"],
            inp,
            tmp_path / "out.jsonl",
            timeout=60,
            log=logged.append,
            env=ENV,
            cwd=ROOT,
        )
    message = str(e.value)
    assert "exited with code 3" in message
    assert "RuntimeError: the stand-in engine failed on purpose" in message
    assert "RuntimeError: the stand-in engine failed on purpose" in logged


def test_a_runner_that_writes_nothing_or_cannot_start_raises(tmp_path):
    inp = tmp_path / "in.jsonl"
    write_batch(inp, [("a", body("x"))])
    with pytest.raises(BatchRunError, match="wrote no"):
        run_batch([sys.executable, "-c", "print('{input} {output}')"], inp, tmp_path / "out.jsonl", timeout=60)
    with pytest.raises(BatchRunError, match="could not start"):
        run_batch([str(tmp_path / "no-such-runner"), "{input}"], inp, tmp_path / "out.jsonl", timeout=60)


def test_the_log_of_a_failing_runner_is_trimmed_to_its_last_lines(tmp_path):
    script = "import sys\nfor i in range(500): print(f'line {i} ' + 'x' * 2000)\nsys.exit(2)"
    with pytest.raises(BatchRunError) as e:
        run_batch([sys.executable, "-c", script], tmp_path / "in", tmp_path / "out", timeout=60)
    message = str(e.value)
    assert "line 499 " in message and "line 400 " not in message
    assert len(message) < 20_000


def test_a_runner_past_its_timeout_is_killed_with_its_children(tmp_path):
    inp, pidfile = tmp_path / "in.jsonl", tmp_path / "child.pid"
    write_batch(inp, [("a", body("x"))])
    # the runner forks a child that would outlive it, as vLLM's engine core process does
    script = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(child.pid))\n"
        "print('engine started', flush=True)\n"
        "time.sleep(300)\n"
    )
    logged = []
    started = time.monotonic()
    with pytest.raises(BatchRunError, match="ran past its 3s timeout") as e:
        run_batch([sys.executable, "-c", script], inp, tmp_path / "out.jsonl", timeout=3, log=logged.append, grace=2)
    assert time.monotonic() - started < 20
    assert "engine started" in str(e.value) and logged == ["engine started"]
    assert not alive(int(pidfile.read_text()))


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for a parent that never reaps it does not)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        if state in "ZX":
            return False
        time.sleep(0.1)
    return True


def test_a_standin_runner_that_sleeps_past_the_timeout_is_killed(tmp_path):
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_batch(inp, [("a", body("x"))])
    with pytest.raises(BatchRunError, match="timeout"):
        run_batch([*STANDIN, "--sleep", "120"], inp, out, timeout=3, env=ENV, cwd=ROOT, grace=2)
    assert not out.exists()


# --- vLLM's own batch runner ------------------------------------------------------------------
