"""Structured outputs: a prompt's declared answer shape is sent to ``vllm`` entries only, a
reply that follows it is rendered into the text the step's parser reads, one that does not
is read as free text, and the step's metadata counts answers per path."""

import glob
import os

import pytest

from assets.common.parsing import parse_list, parse_permutation, parse_yes_no
from assets.common.prompts import load_prompt
from assets.eval.wikiprofile.rules import parse_grades
from assets.quit.rules import parse_type_label
from assets.recor.rules import parse_aspects, parse_reasoning
from assets.wikiprofile.rules import parse_category, parse_markup, parse_names, parse_options, parse_reverse
from resources.llm import CallStats, LLMRequest, LLMResource
from resources.llm.structured import Output

ASPECTS = load_prompt("recor", "aspects").output


def user(text):
    return [{"role": "user", "content": text}]


def resource(tmp_path, registry: str) -> LLMResource:
    path = tmp_path / "models.yaml"
    path.write_text(registry)
    return LLMResource(registry_path=str(path), cache_dir=str(tmp_path / "cache"), backoff_seconds=0.01, max_retries=0)


def test_a_declaration_needs_one_valid_shape_and_names_its_file():
    with pytest.raises(ValueError, match="p.yaml: output needs exactly one of choices and schema"):
        Output.from_mapping({"choices": ["Yes"], "schema": {"type": "array"}}, "p.yaml")
    with pytest.raises(ValueError, match="p.yaml: output schema is not a JSON schema"):
        Output.from_mapping({"schema": {"type": "list"}}, "p.yaml")
    with pytest.raises(ValueError, match="quote numbers"):
        Output.from_mapping({"choices": [1, 2]}, "p.yaml")
    with pytest.raises(ValueError, match="each formats an array"):
        Output.from_mapping({"schema": {"type": "object"}, "each": "{item}"}, "p.yaml")


def test_a_reply_that_breaks_its_declaration_is_not_rendered():
    verdict = Output(choices=("Yes", "No"))
    assert verdict.read(" Yes\n") == "Yes" and verdict.read("Yes, it is") is None
    assert (
        ASPECTS.read('[{"title": "Heat", "sentence": "Heat moves from hot to cold."}]')
        == "Heat: Heat moves from hot to cold."
    )
    assert ASPECTS.read('[{"title": "Heat", "sentence": "Heat moves') is None  # cut off by its budget
    assert ASPECTS.read('[{"title": "Heat"}]') is None  # breaks the schema
    assert ASPECTS.read("Heat: Heat moves from hot to cold.") is None


def test_every_declared_prompt_renders_what_its_parser_reads():
    """One JSON answer per declared list or object prompt, rendered and read by the step's own
    free-text parser: the constrained path needs no parser of its own."""

    def render(name, reply):
        text = load_prompt(*name.split("/")).output.read(reply)
        assert text is not None, name
        return text

    assert parse_list(render("quit/distractors", '["Venus", "Mercury"]'), 8) == ["Venus", "Mercury"]
    assert parse_list(render("recor/facts", '["Water boils at 100 C.", "Ice melts at 0 C."]'), 5) == [
        "Water boils at 100 C",
        "Ice melts at 0 C",
    ]
    assert parse_list(render("recor/negative_queries", '["boiling history"]'), 3) == ["boiling history"]
    assert parse_aspects(render("recor/aspects", '[{"title": "Cause", "sentence": "Heat makes water boil."}]'), 5) == [
        ("Cause", "Heat makes water boil")
    ]
    assert parse_permutation(render("eval/rankgpt", "[3, 1, 2]"), 3) == ([2, 0, 1], False)
    assert parse_permutation(render("recor/aspect_order", "[2, 1]"), 2) == ([1, 0], False)
    assert parse_grades(render("eval/grade_answers", '["CORRECT", "OTHER"]'), 2) == ["CORRECT", "OTHER"]
    assert parse_grades(render("eval/grade_completions", '["INCORRECT"]'), 1) == ["INCORRECT"]
    assert parse_reasoning(
        render(
            "recor/retrieval_reasoning",
            '{"target": "boiling point", "relevant_signals": "pressure; altitude", "irrelevant_signals": "tea"}',
        )
    ) == {"target": "boiling point", "relevance_signals": ["pressure", "altitude"], "irrelevance_signals": ["tea"]}
    assert parse_reverse(
        render(
            "wikiprofile/reverse_question", '{"subject": "Glasgow", "question": "Which city hosted the 1985 games?"}'
        )
    ) == ("Glasgow", "Which city hosted the 1985 games?")
    assert parse_reverse(render("wikiprofile/reverse_question", '{"subject": "x", "question": "REJECT"}')) is None
    assert parse_names(render("wikiprofile/select_objects", '["Bobby Paterson", "1985"]')) == ["Bobby Paterson", "1985"]
    assert parse_options(render("wikiprofile/distractors", '["Paris", "Lyon", "Nice", "Lille"]'), "Paris") == [
        "Lyon",
        "Nice",
        "Lille",
    ]
    found, problems = parse_markup(
        render("wikiprofile/ner", '[{"name": "Glasgow", "type": "LOCATION"}, {"name": "1985", "type": "DATE"}]'),
        "Born in Glasgow in 1985.",
    )
    assert [(e["name"], e["type"], e["start"]) for e in found] == [("Glasgow", "LOCATION", 8), ("1985", "DATE", 19)]
    assert problems == []
    # every choice of a choice prompt is read as itself by the step's parser
    assert [parse_yes_no(c) for c in load_prompt("quit", "judge").output.choices] == [True, False]
    assert all(parse_type_label(c) == tuple(c.split(":")) for c in load_prompt("quit", "question_type").output.choices)
    assert [parse_category(c) for c in load_prompt("wikiprofile", "categorize").output.choices] == list(
        load_prompt("wikiprofile", "categorize").output.choices
    )


def test_every_prompt_file_with_a_declaration_loads():
    declared = []
    for path in sorted(glob.glob("assets/*/prompts/*.yaml")):
        benchmark, name = path.split(os.sep)[1], os.path.basename(path)[:-5]
        output = load_prompt(benchmark, name).output
        if output is not None:
            declared.append(f"{benchmark}/{name}")
            assert set(output.constraint()) <= {"choice", "json"}
    assert len(declared) == 21


def test_only_vllm_entries_are_sent_the_constraint_and_not_with_logprobs(tmp_path):
    llm = resource(
        tmp_path,
        "models:\n"
        "  served: {model: hosted_vllm/m, backend: vllm, api_base: 'http://127.0.0.1:9/v1'}\n"
        "  api: {model: openai/m, backend: api}\n"
        "  local: {model: local/smollm2-135m-instruct, backend: embedded}\n",
    )
    declared = LLMRequest(
        "k", user("Is it? Reply Yes or No."), params={"max_tokens": 3}, output=Output(choices=("Yes", "No"))
    )
    plain = LLMRequest("k", declared.messages, params={"max_tokens": 3})
    assert llm.params(llm.spec("served"), declared)["structured_outputs"] == {"choice": ["Yes", "No"]}
    # the embedded model and the APIs are asked what they were asked before: their cached answers still hit
    for alias in ("api", "local"):
        assert llm.params(llm.spec(alias), declared) == llm.params(llm.spec(alias), plain)
    # a verdict read from log-probabilities is asked unconstrained: the mask would reshape them
    with_logprobs = LLMRequest(
        "k", declared.messages, params={"logprobs": True, "max_tokens": 1}, output=declared.output
    )
    assert "structured_outputs" not in llm.params(llm.spec("served"), with_logprobs)


def test_a_vllm_reply_is_rendered_and_an_api_one_read_as_free_text(tmp_path, standins):
    reply = '[{"title": "Heat", "sentence": "Heat moves from hot to cold."}]'
    vllm, api = standins("vllm", reply=reply), standins("api", reply="Heat: Heat moves from hot to cold.")
    llm = resource(
        tmp_path,
        "models:\n"
        f"  served: {{model: hosted_vllm/m, backend: vllm, api_base: '{vllm.url}'}}\n"
        f"  api: {{model: openai/m, backend: api, api_base: '{api.url}'}}\n",
    )
    reqs = [LLMRequest(str(i), user(f"Split answer {i}"), output=ASPECTS) for i in range(3)]
    served, by_api = CallStats(), CallStats()
    got = llm.run("served", reqs, parse=lambda s: parse_aspects(s, 5), stats=served)
    assert [r.value for r in got] == [[("Heat", "Heat moves from hot to cold")]] * 3
    assert got[0].text == "Heat: Heat moves from hot to cold."
    [body] = vllm.seen()["bodies"][:1]
    assert body["structured_outputs"] == {"json": ASPECTS.schema}
    assert [r.value for r in llm.run("api", reqs, parse=lambda s: parse_aspects(s, 5), stats=by_api)] == [
        [("Heat", "Heat moves from hot to cold")]
    ] * 3
    assert all("structured_outputs" not in b for b in api.seen()["bodies"])
    assert (served.answers_structured, served.answers_free_text) == (3, 0)
    assert (by_api.answers_structured, by_api.answers_free_text) == (0, 3)
    # answers served from the cache are counted on the path they were read by
    again = CallStats()
    llm.run("served", reqs, parse=lambda s: parse_aspects(s, 5), stats=again)
    assert (again.cached, again.answers_structured) == (3, 3)
    assert again.as_metadata()["llm/answers_structured"] == 3 and again.as_metadata()["llm/answers_free_text"] == 0


def test_a_constrained_reply_that_is_not_valid_json_falls_back_to_the_free_text_parser(tmp_path, standins):
    cut = standins("cut", reply='Heat: Heat moves from hot to cold.\n[{"title": "Cold", "sent')
    llm = resource(tmp_path, f"models:\n  served: {{model: hosted_vllm/m, backend: vllm, api_base: '{cut.url}'}}\n")
    stats = CallStats()
    [r] = llm.run(
        "served", [LLMRequest("k", user("Split"), output=ASPECTS)], parse=lambda s: parse_aspects(s, 1), stats=stats
    )
    assert r.ok and r.value == [("Heat", "Heat moves from hot to cold")]
    assert (stats.answers_structured, stats.answers_free_text, stats.parse_failures) == (0, 1, 0)
    merged = stats.merge(CallStats(answers_structured=2))
    assert (merged.answers_structured, merged.answers_free_text) == (2, 1)


@pytest.mark.slow
def test_with_the_constraint_every_answer_of_the_served_model_parses(tmp_path, vllm_server):
    """The embedded SmolLM2 served by vLLM, asked prompts of each kind (choices, lists, an
    order, an object) as the steps ask them: with the declaration sent every answer follows
    it and the step's own parser reads it; without, the same model's free text often fails."""
    from bench.structured_outputs import CASES, parse_shares

    path = tmp_path / "models.yaml"
    path.write_text(
        f"models:\n  served: {{model: hosted_vllm/smollm2, backend: vllm, api_base: '{vllm_server.url}'}}\n"
    )
    llm = LLMResource(registry_path=str(path), cache_dir=str(tmp_path / "cache"))
    free = parse_shares(llm, "served", 2, constrained=False)
    held = parse_shares(llm, "served", 2, constrained=True)
    # every constrained answer was counted on one path, nearly all on the structured one (a
    # list cut off by its token budget is read as free text)
    assert all(structured + text == 2 and structured >= 1 for _, structured, text in held.values()), held
    assert all(structured == 0 for _, structured, _ in free.values())
    # choices and lists parse every time; an order or an object can follow the schema and
    # still be refused by the step (an item repeated, a question without its "?")
    must = (
        "quit/judge",
        "quit/question_type",
        "wikiprofile/categorize",
        "recor/dependency_type",
        "recor/aspects",
        "wikiprofile/select_objects",
    )
    assert {name: held[name][0] for name in must} == dict.fromkeys(must, 1.0), held
    assert sum(share for share, *_ in held.values()) > sum(share for share, *_ in free.values()), (free, held)
    assert {name for name, *_ in CASES} >= set(must)
