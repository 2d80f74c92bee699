import json
import math
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import polars as pl
import pytest

from assets.eval import rerankers
from assets.eval.runs import oracle_run
from resources.llm import CallStats, LLMResource, ScoreRequest, continuation_from_echo
from resources.retrieval import RerankerSpec


def test_yes_probability_by_hand():
    top = {"Yes": math.log(0.6), "No": math.log(0.2), "The": math.log(0.1)}
    assert rerankers.yes_probability(top) == pytest.approx(0.75)
    # case and spacing variants of one answer add up
    top = {" yes": math.log(0.3), "Yes": math.log(0.3), "no": math.log(0.2), "TRUE": math.log(0.1)}
    assert rerankers.yes_probability(top) == pytest.approx(0.7 / 0.9)
    # an unlisted side gets the smallest listed probability
    assert rerankers.yes_probability({"No": math.log(0.5), "I": math.log(0.1)}) == pytest.approx(0.1 / 0.6)
    assert rerankers.yes_probability({"The": -1.0}) is None
    assert rerankers.yes_probability(None) is None


def test_order_by_scores_keeps_ties_and_sinks_unscored():
    ids = ["a", "b", "c", "d", "e"]
    assert rerankers.order_by_scores(ids, [0.1, None, 0.9, 0.1, 0.5]) == ["c", "e", "a", "d", "b"]
    assert rerankers.mean_logprob([-1.0, -2.0, -3.0]) == -2.0
    assert rerankers.mean_logprob([]) is None


def test_pointwise_reranks_by_yes_probability(scripted_llm):
    # the scripted model says yes (0.8) to passages naming Everest and no otherwise
    texts = {"p1": "A river in Asia.", "p2": "Everest is the highest.", "p3": "A lake.", "p4": "Everest again."}
    stats = CallStats()
    out = rerankers.rerank(
        RerankerSpec("pw", "pointwise", model="smollm2"),
        scripted_llm,
        {"q": "Which mountain?"},
        {"q": ["p1", "p2", "p3", "p4"]},
        texts,
        stats,
    )
    assert out.lists["q"] == ["p2", "p4", "p1", "p3"]
    assert out.unscored == 0 and stats.calls == 4


def test_upr_prefers_the_passage_that_predicts_the_question(tmp_path):
    llm = LLMResource(cache_dir=str(tmp_path / "cache"))
    texts = {
        "fruit": "Bananas are long yellow fruit that grow in bunches.",
        "paris": "Paris is the capital and largest city of France.",
    }
    stats = CallStats()
    out = rerankers.rerank(
        RerankerSpec("upr", "upr", model="smollm2"),
        llm,
        {"q": "What is the capital of France?"},
        {"q": ["fruit", "paris"]},
        texts,
        stats,
    )
    assert out.lists["q"] == ["paris", "fruit"] and out.unscored == 0
    again = llm.score("smollm2", [ScoreRequest("k", "Passage: x\nQuestion:", " What is the capital of France?")])
    first = llm.score("smollm2", [ScoreRequest("k", "Passage: x\nQuestion:", " What is the capital of France?")])
    assert first[0].cached and first[0].value == again[0].value
    # one log-probability per question token, each a probability below 1
    assert len(first[0].value) >= 7 and all(v < 0 for v in first[0].value)


def test_continuation_from_echo_takes_the_tokens_after_the_prefix():
    echo = {
        "tokens": ["Passage", ":", " x", " Who", " won", "?", " The"],
        "token_logprobs": [None, -1.0, -2.0, -0.5, -0.25, -0.125, -3.0],
        "text_offset": [0, 7, 8, 10, 14, 18, 19],
    }
    # prefix "Passage: x" has 10 characters; the last entry is the generated token
    assert continuation_from_echo(echo, 10) == ([-0.5, -0.25, -0.125], 6)
    with pytest.raises(ValueError, match="no prompt log-probabilities"):
        continuation_from_echo({"tokens": [], "token_logprobs": None, "text_offset": []}, 3)


class _EchoServer(BaseHTTPRequestHandler):
    """An OpenAI-compatible completions endpoint that echoes with made-up log-probabilities,
    as vLLM does for ``echo`` with ``logprobs``."""

    seen: list = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append(body)
        prompt = body["prompt"] if isinstance(body["prompt"], str) else body["prompt"][0]
        words = prompt.split(" ")
        offsets, pos = [], 0
        for w in words:
            offsets.append(pos)
            pos += len(w) + 1
        reply = {
            "id": "x",
            "object": "text_completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "text": prompt + " !",
                    "finish_reason": "length",
                    "logprobs": {
                        "tokens": words + ["!"],
                        "text_offset": offsets + [pos],
                        "token_logprobs": [None] + [-float(i) for i in range(1, len(words))] + [-9.0],
                        "top_logprobs": None,
                    },
                }
            ],
            "usage": {"prompt_tokens": len(words), "completion_tokens": 1, "total_tokens": len(words) + 1},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_served_upr_scores_through_litellm_prompt_logprobs(tmp_path):
    server = HTTPServer(("127.0.0.1", 0), _EchoServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        registry = tmp_path / "models.yaml"
        registry.write_text("models:\n  served: {model: hosted_vllm/some/model, backend: vllm}\n")
        llm = LLMResource(
            registry_path=str(registry),
            cache_dir=str(tmp_path / "cache"),
            api_base=f"http://127.0.0.1:{server.server_port}/v1",
            backoff_seconds=0.01,
        )
        # prompt words: "Passage:" "a" "b" "Question:" "who" "won?" -> the last two follow the prefix
        out = llm.score("served", [ScoreRequest("q p", "Passage: a b Question:", " who won?")])
        assert out[0].ok, out[0].error
        assert out[0].value == [-4.0, -5.0]
        body = _EchoServer.seen[-1]
        assert body["echo"] is True and body["logprobs"] == 1 and body["max_tokens"] == 1
    finally:
        server.shutdown()


def tiny_t5(path):
    """A randomly initialised two-layer T5 and a word-level tokenizer, saved like a release."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    words = [
        "<pad>",
        "</s>",
        "<unk>",
        "true",
        "false",
        "Query:",
        "Document:",
        "Relevant:",
        "which",
        "mountain",
        "is",
        "highest",
        "everest",
        "a",
        "river",
        "lake",
        "in",
        "asia",
    ]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")
    fast.save_pretrained(path)
    import torch

    torch.manual_seed(0)
    config = T5Config(
        vocab_size=len(words),
        d_model=16,
        d_ff=32,
        d_kv=8,
        num_layers=2,
        num_heads=2,
        decoder_start_token_id=0,
        pad_token_id=0,
        eos_token_id=1,
    )
    T5ForConditionalGeneration(config).save_pretrained(path)
    return str(path)


def test_seq2seq_scores_are_consistent_between_monot5_and_rankt5_modes(tmp_path):
    from resources import seq2seq

    path = tiny_t5(tmp_path / "t5")
    inputs = [
        "Query: which mountain is highest Document: everest Relevant:",
        "Query: which mountain is highest Document: a river in asia Relevant:",
        "Query: which mountain is highest Document: a lake Relevant:",
    ]
    soft = seq2seq.score(path, inputs)
    yes = seq2seq.score(path, inputs, "true", mode="logit", batch_size=2)
    no = seq2seq.score(path, inputs, "false", mode="logit")
    # monoT5's P(true) is the two-way softmax of the same logits RankT5 mode reads
    for p, a, b in zip(soft, yes, no):
        assert p == pytest.approx(1 / (1 + math.exp(b - a)), rel=1e-4)
    assert len(set(soft)) == 3
    with pytest.raises(ValueError, match="not a single token"):
        seq2seq.score(path, inputs, true_token="true false")

    spec = RerankerSpec("monot5", "seq2seq", model=path)
    texts = {"e": "everest", "r": "a river in asia", "l": "a lake"}
    out = rerankers.rerank(spec, None, {"q": "which mountain is highest"}, {"q": ["e", "r", "l"]}, texts, CallStats())
    expected = [pid for _, pid in sorted(zip(soft, "erl"), key=lambda t: -t[0])]
    assert out.lists["q"] == expected


def test_oracle_run_is_every_relevant_passage_in_a_seeded_shuffle():
    qrels = pl.DataFrame(
        {
            "question_id": ["q1"] * 6 + ["q2"] * 2,
            "passage_id": [f"p{i}" for i in range(6)] + ["x1", "x2"],
            "label": [2, 1, 0, 2, 1, 1, 0, 2],
        }
    )
    run = oracle_run(qrels, "oracle")
    q1 = run.filter(pl.col("question_id") == "q1").sort("rank")
    assert sorted(q1["passage_id"]) == ["p0", "p1", "p3", "p4", "p5"]
    assert q1["rank"].to_list() == [1, 2, 3, 4, 5]
    assert run.filter(pl.col("question_id") == "q2")["passage_id"].to_list() == ["x2"]
    assert oracle_run(qrels, "oracle").equals(run)
    shuffles = {
        tuple(oracle_run(qrels, "oracle", seed=s).filter(pl.col("question_id") == "q1")["passage_id"]) for s in range(6)
    }
    assert len(shuffles) > 1
