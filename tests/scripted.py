"""A deterministic scripted LLM, registered as the litellm provider ``scripted``.

Replies come from rules over the last user message, so parsing and control flow can be
tested without a model. Every call that reaches the provider (not served from litellm's
cache) is appended to the file named by ``SCRIPTED_LLM_LOG`` when set.

The model name picks the tokenizer: ``scripted/digits`` writes every digit as its own token
(as Qwen's, Llama 2's and SmolLM's tokenizers do), any other name writes words and numbers
whole. A prompt holding ``Scripted distribution: 9=0.5 10=0.5`` is answered as a model
with that distribution over whole answers would answer greedily, each position's
alternatives the exact next-token probabilities.
"""

from __future__ import annotations

import json
import math
import os
import re
import time

import litellm

from resources.llm import register_provider


def reply(prompt: str) -> str:
    """Rules keyed on the project's prompt wording."""
    recor = recor_reply(prompt)
    if recor is not None:
        return recor
    wikiprofile = wikiprofile_reply(prompt)
    if wikiprofile is not None:
        return wikiprofile
    if "Does the candidate give the correct answer" in prompt:
        gold = re.search(r"Correct answer: (.*)", prompt).group(1).lower()
        cand = re.search(r"Candidate answer: (.*)", prompt).group(1).lower()
        return "Yes" if cand.split()[0] in gold else "No"
    if "Does the phrase name the answer itself" in prompt:
        return "Yes" if "everest" in prompt.lower().split("phrase from a clue:")[-1] else "No"
    if "List " in prompt and "other answers" in prompt:
        return "Alpha\nBeta\nGamma\nDelta"
    if "Is the hint true of the candidate" in prompt:
        hint = re.search(r"Hint: (.*)", prompt).group(1)
        cand = re.search(r"Candidate: (.*)", prompt).group(1)
        return "No" if cand in {"Alpha", "Beta"} and len(hint) % 2 else "Yes"
    if "Does the passage help find the answer" in prompt:
        passage = re.search(r"Passage: (.*)", prompt).group(1)
        return "yes" if "Everest" in passage else "no"
    if "Rank the" in prompt and "passages above" in prompt:
        n = int(re.search(r"Rank the (\d+) passages", prompt).group(1))
        return " > ".join(f"[{i}]" for i in range(n, 0, -1))
    if "Classify the question" in prompt:
        return "ENTY:other"
    if "Context:" in prompt:
        context = prompt.rsplit("Context:", 1)[1]
        if "GARBLE" in context:
            return ""
        # Enough clues name the answer: three or more sentences.
        return "Mount Everest" if context.count(".") >= 3 and "Everest" not in context else "NO ANSWER"
    if "Answer in a few words" in prompt:
        return "Paris" if "France" in prompt else "NO ANSWER"
    return "NO ANSWER"


def _field(prompt: str, name: str) -> str:
    m = re.search(rf"{name}: (.*)", prompt)
    return m.group(1).strip() if m else ""


def recor_reply(prompt: str) -> str | None:
    """RECOR's construction prompts: aspects are the answer's sentences, facts the aspect
    itself, documents score high when they share a long word with the facts."""
    if "short search queries about the same subject" in prompt:
        topic = " ".join(_field(prompt, "Question").split()[:6])
        return f"{topic} history\n{topic} other cases\n{topic} unrelated rules"
    if "Does the document contain information that the expert answer uses" in prompt:
        return "no" if "UNRELATED" in prompt else "yes"
    if "distinct points of this answer" in prompt:
        answer = _field(prompt, "Expert answer")
        return "\n".join(f"Point {i}: {s.strip()}" for i, s in enumerate(answer.split(". "), start=1) if s.strip())
    if "Could a curious person ask one natural" in prompt:
        return "no" if "consult" in _field(prompt, "Point") else "yes"
    if "Order the points the way a conversation" in prompt:
        n = len(re.findall(r"^\[\d+\]", prompt, re.M))
        return " > ".join(f"[{i}]" for i in range(n, 0, -1))
    if "atomic facts that this point states" in prompt:
        return _field(prompt, "Point")
    if "Is the fact stated in the document" in prompt:
        return "yes"
    if "Write the person's first question" in prompt:
        return f"What should I know about {' '.join(_field(prompt, 'The first thing they want to understand').split()[:8])}?"
    if "Write a question whose answer is the following statement" in prompt:
        return f"Which statement says that {' '.join(_field(prompt, 'Statement').split()[:8])}?"
    if "Write the person's next question" in prompt:
        return f"And how does {' '.join(_field(prompt, 'The next thing they want to understand').split()[:8])} fit in?"
    if (
        "Does the question ask about the intended point" in prompt
        or "Could a person naturally ask this next question" in prompt
    ):
        return "yes"
    if "Rate the document on this criterion" in prompt:
        facts = prompt.split("Facts the answer must contain:")[1].split("Document:")[0]
        document = prompt.split("Document:")[1].split("Criterion --")[0].lower()
        shared = any(len(w) > 6 and w.lower().strip(".,") in document for w in facts.split())
        criterion = re.search(r"Criterion -- (\w+)", prompt).group(1)
        good, bad = (
            {"support": 8, "completeness": 7, "clarity": 7, "misleading": 0},
            {"support": 2, "completeness": 1, "clarity": 5, "misleading": 3},
        )
        return str((good if shared else bad)[criterion])
    if "Reply in exactly three lines" in prompt:
        return (
            f"Target: {_field(prompt, 'Question')[:40]}\n"
            "Relevant signals: mechanism; evidence; example\nIrrelevant signals: history; trivia"
        )
    if "using these facts and nothing else" in prompt:
        return " ".join(
            line.strip("- ")
            for line in prompt.split("Facts:")[1].split("Answer the question")[0].splitlines()
            if line.strip()
        )
    if "Does each question follow sensibly" in prompt:
        return "yes"
    if "Reply with the number only." in prompt and "Rate from 1" in prompt:
        return "5" if "Groundedness" in prompt else "4"
    if "Grade the answer on this dimension" in prompt:
        return "4"
    if "Rewrite the last question as one self-contained search query" in prompt:
        return _field(prompt, "Last question").replace("that", "the search")
    if "say what information would answer the question" in prompt:
        return "A useful document explains the legal rule and its exceptions."
    if "Answer the current question in two to four sentences" in prompt:
        return "From the passages: " + _field(prompt, "Current question")
    if "coreference -- " in prompt:
        return "Self-contained" if "No previous conversation." in prompt else "coreference"
    if "compare -- differences" in prompt:
        return "why" if _field(prompt, "Question").lower().startswith("why") else "How"
    return None


def wikiprofile_reply(prompt: str) -> str | None:
    """WikiProfile's construction prompts: the reference category is not known, so pages
    about people are People and the rest Science; entities are capitalised names and years
    after the first word; the first three candidates are chosen; verdicts say yes."""
    if "Which one of these categories" in prompt:
        summary = _field(prompt, "Opening paragraph")
        return (
            "People"
            if re.search(
                r"\b(was|is) an? [\w -]*(player|writer|scientist|painter|composer|politician|explorer|singer)", summary
            )
            else "Science"
        )
    if "wrapping each of its most important entities" in prompt:
        paragraph = _field(prompt, "Paragraph")
        head, _, rest = paragraph.partition(" ")
        tagged = re.sub(r"\b(1[0-9]{3}|20[0-9]{2})\b", r"{{\1; DATE}}", rest)
        tagged = re.sub(
            r"(?<=[a-z,] )((?:[A-Z][a-z]+ ?){1,3})(?=[ ,.])", lambda m: "{{" + m.group(1).strip() + "; OTHER}}", tagged
        )
        return head + " " + tagged
    if "Pick up to" in prompt and "Candidate entities" in prompt:
        names = _field(prompt, "Candidate entities \\(in order of appearance\\)").split("; ")
        return repr(names[:3])
    if "Reply yes or no." in prompt and ("fill-in-the-blank" in prompt or "Text before the blank" in prompt):
        return "yes"
    if "Write one question whose answer is" in prompt:
        kind = _field(prompt, "The text continues with").split("(")[-1].rstrip(")").lower()
        return f"Which {kind} follows the text about {_field(prompt, 'Text').split()[0]}?"
    if "Reply with the question or REJECT only." in prompt:
        return "REJECT" if "Text" in _field(prompt, "Question") else _field(prompt, "Question")
    if "First name the subject" in prompt:
        return (
            f"Subject: {_field(prompt, 'Text').split()[0]}\nQuestion: Which page mentions {_field(prompt, 'Answer')}?"
        )
    if "Which type is the answer" in prompt:
        return "OTHER"
    if "Is this a good pair" in prompt:
        return "yes"
    if "Ask the same question in everyday words" in prompt:
        return "Tell me, " + _field(prompt, "Question")[0].lower() + _field(prompt, "Question")[1:]
    if "Write three wrong answers of the same kind" in prompt:
        gold = _field(prompt, "Correct answer").rsplit(" (", 1)[0]
        # the gold first and a line that names it, as small models write: neither is a distractor
        return "\n".join([gold, f"The correct answer is {gold}", "First decoy", "Second decoy", "Third decoy"])
    if (
        "Respond only with the letter of the correct answer" in prompt
        or "followed by the letter of the correct answer" in prompt
    ):
        return "A"
    if (
        "Respond only with the completion of the last sentence" in prompt
        or "Respond only with the answer to the question" in prompt
        or 'End your response with "Answer: "' in prompt
    ):
        names = re.findall(r"\b[A-Z][a-z]+\b", prompt.split("\n\n")[0])
        guess = names[-1] if names else "nothing"
        return f"Let me think. Answer: {guess}" if "Think step by step" in prompt else guess
    if "Answers to grade:" in prompt or "Completions to grade:" in prompt:
        gold = _field(prompt, "Gold (?:answer|continuation)").lower()
        lines = re.findall(r"^(Answer|Completion) (\d+): (.*)$", prompt, flags=re.M)
        labels = [
            "OTHER" if text == "(no answer)" else "CORRECT" if gold and gold in text.lower() else "INCORRECT"
            for _, _, text in lines
        ]
        return "\n".join(f"{kind} {n}: {label}" for (kind, n, _), label in zip(lines, labels))
    if "Answer the question from the search results" in prompt:
        first = re.search(r"\[1\] (.*)", prompt)
        return first.group(1).split(".")[0] + "." if first else "Nothing was found."
    if "Does this answer give one definite answer" in prompt:
        return "yes"
    if "Delete any words that are not needed" in prompt:
        return _field(prompt, "Question").replace(" the text", "")
    return None


# How the end of the answer is listed among a position's alternatives (Qwen's end of turn).
END = "<|im_end|>"


def tokenize(text: str, model: str) -> list[str]:
    """The scripted model's tokens of ``text``: with ``digits`` each digit is a token and a
    space before a number is one too (Qwen's split of " 10" is " ", "1", "0"); otherwise a
    word or number is one token with the spaces before it."""
    pattern = r"[0-9]|\s*[^\s0-9]+|\s+" if model == "digits" else r"\s*\S+|\s+"
    return re.findall(pattern, text)


def distribution(prompt: str) -> dict[str, float] | None:
    """The answers a test asked for with ``Scripted distribution: a=p b=q``, or None."""
    m = re.search(r"Scripted distribution: (.*)", prompt)
    if not m:
        return None
    pairs = (item.rsplit("=", 1) for item in m.group(1).split())
    return {answer: float(p) for answer, p in pairs}


def greedy(answers: dict[str, float], model: str, top: int, max_tokens: int) -> tuple[str, list[dict]]:
    """The greedy answer of a model whose whole answers follow ``answers``, and each
    generated token with its ``top`` alternatives: P(token | tokens before), the end of the
    answer listed as :data:`END` but, as OpenAI reports, never generated. Ties go to the
    token that sorts first."""
    split = {a: tokenize(a, model) + [END] for a in answers}
    path: list[str] = []
    content = []
    while len(path) < max_tokens:
        following: dict[str, float] = {}
        for a, toks in split.items():
            if toks[: len(path)] == path:
                following[toks[len(path)]] = following.get(toks[len(path)], 0.0) + answers[a]
        total = sum(following.values())
        ranked = sorted(following.items(), key=lambda kv: (-kv[1], kv[0]))
        token, p = ranked[0]
        if token == END:
            break
        content.append(
            {
                "token": token,
                "logprob": math.log(p / total),
                "bytes": None,
                "top_logprobs": [{"token": t, "logprob": math.log(q / total), "bytes": None} for t, q in ranked[:top]],
            }
        )
        path.append(token)
    return "".join(path), content


def ruled_logprobs(text: str, model: str) -> list[dict]:
    """A ruled reply's tokens: the first at probability 0.8 with its opposite at 0.15 (a
    word at 0.05), the rest certain."""
    tokens = tokenize(text, model) or [""]
    first = tokens[0]
    other = {"yes": "no", "no": "yes"}.get(first.strip().lower(), "The")
    top = [
        {"token": first, "logprob": math.log(0.8), "bytes": None},
        {"token": other, "logprob": math.log(0.15), "bytes": None},
        {"token": "The", "logprob": math.log(0.05), "bytes": None},
    ]
    rest = [
        {"token": t, "logprob": 0.0, "bytes": None, "top_logprobs": [{"token": t, "logprob": 0.0, "bytes": None}]}
        for t in tokens[1:]
    ]
    return [{"token": first, "logprob": math.log(0.8), "bytes": None, "top_logprobs": top}, *rest]


class Scripted(litellm.CustomLLM):
    delay = float(os.environ.get("SCRIPTED_LLM_DELAY", "0"))

    def completion(self, *args, **kwargs) -> litellm.ModelResponse:
        messages = kwargs["messages"]
        prompt = messages[-1]["content"]
        params = kwargs.get("optional_params") or {}
        model = kwargs["model"]
        answers = distribution(prompt)
        if answers:
            text, content = greedy(
                answers, model, int(params.get("top_logprobs") or 20), int(params.get("max_tokens") or 16)
            )
        else:
            text = reply(prompt)
            content = ruled_logprobs(text, model)
        if self.delay:
            time.sleep(self.delay)
        log = os.environ.get("SCRIPTED_LLM_LOG")
        if log:
            with open(log, "a") as f:
                f.write(json.dumps({"prompt": prompt, "seed": params.get("seed")}) + "\n")
        choice = {"message": {"role": "assistant", "content": text}, "finish_reason": "stop", "index": 0}
        if params.get("logprobs"):
            choice["logprobs"] = {"content": content}
        return litellm.ModelResponse(
            choices=[choice],
            usage={"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split()), "total_tokens": 0},
            model=kwargs["model"],
        )

    async def acompletion(self, *args, **kwargs) -> litellm.ModelResponse:
        return self.completion(*args, **kwargs)


def install() -> None:
    register_provider("scripted", Scripted())
