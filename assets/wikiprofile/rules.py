"""Entities and object candidates of a page summary (notes, steps 3-4): the inline markup the
NER prompt writes, the position rules an object must meet, and its left context.

The NER prompt rewrites the text with ``{{entity name; TYPE}}`` around each entity. Only the
names and types are taken from the rewrite: positions come from the original summary, so a
model that also edits the surrounding words cannot move an entity or invent one.

The readers of the model's other replies (a category, a list of names, a question, a reverse
question, an answer type, the options) are here too, with the checks of a question's words
against its answer and against the question it was edited from.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

import polars as pl

from assets.common.parsing import python_literal
from assets.common.text import words
from resources.llm import ParseError

ENTITY_TYPES = (
    "PERSON",
    "ORGANIZATION",
    "LOCATION",
    "EVENT",
    "WORK_OF_ART",
    "PRODUCT",
    "ORGANISM",
    "SUBSTANCE",
    "DATE",
    "NUMERIC_VALUE",
    "CONDITION",
    "TITLE",
    "LANGUAGE",
    "GROUP",
    "LAW",
    "IDEA",
    "CLASSIFICATION",
    "IDENTIFIER",
    "OTHER",
)
MAX_ENTITIES = 8
MAX_ENTITY_WORDS = 5
# Figure 11's coarse groups, for the balance of the downsampling and the plots.
TYPE_GROUPS = {
    "WORK_OF_ART": "ARTIFACT",
    "PRODUCT": "ARTIFACT",
    "ORGANISM": "BIO_CHEM",
    "CONDITION": "BIO_CHEM",
    "SUBSTANCE": "BIO_CHEM",
    "IDEA": "CONCEPT",
    "LANGUAGE": "CONCEPT",
    "LAW": "CONCEPT",
    "CLASSIFICATION": "DESCRIPTOR",
    "GROUP": "DESCRIPTOR",
    "IDENTIFIER": "DESCRIPTOR",
    "TITLE": "DESCRIPTOR",
    "NUMERIC_VALUE": "NUMBER",
}
# ``{{name; TYPE}}``: the name and the type each end on a character that is not a space, so
# that the spaces around them belong to one quantifier only (with two, a long run of spaces
# took quadratic time).
MARKUP = re.compile(r"\{\{\s*+([^{};]*?[^{};\s])\s*+;\s*+([A-Za-z_ ]*?[A-Za-z_])\s*+\}\}")
CLAUSE_END = re.compile(r"[,;:(]| [–—-] ")


def type_group(entity_type: str) -> str:
    return TYPE_GROUPS.get(entity_type, entity_type)


def parse_markup(rewrite: str, original: str) -> tuple[list[dict], list[str]]:
    """Entities ``{"name", "type", "start", "end"}`` found in ``original`` from the tags of
    ``rewrite``, in text order, and the problems with the tags that were dropped (unknown
    type, too long, not in the text, repeated, beyond the first eight)."""
    entities, problems, taken = [], [], set()
    for name, raw_type in MARKUP.findall(rewrite):
        etype = raw_type.strip().upper().replace(" ", "_")
        if etype not in ENTITY_TYPES:
            problems.append(f"{name!r}: unknown type {raw_type!r}")
            continue
        if len(name.split()) > MAX_ENTITY_WORDS:
            problems.append(f"{name!r}: longer than {MAX_ENTITY_WORDS} words")
            continue
        match = re.search(rf"(?<!\w){re.escape(name)}(?!\w)", original)
        if not match:
            problems.append(f"{name!r}: not in the text")
            continue
        if name.lower() in taken:
            problems.append(f"{name!r}: tagged twice")
            continue
        if len(entities) == MAX_ENTITIES:
            problems.append(f"{name!r}: beyond the first {MAX_ENTITIES} entities")
            continue
        taken.add(name.lower())
        entities.append({"name": name, "type": etype, "start": match.start(), "end": match.end()})
    return sorted(entities, key=lambda e: e["start"]), problems


def sentence_starts(text: str) -> list[int]:
    """Offsets at which sentences begin (after ``.``, ``!`` or ``?`` and a space, before a
    capital letter or digit)."""
    return [0] + [m.end() for m in re.finditer(r"(?<=[.!?])\s+(?=[A-Z0-9\"“(])", text)]


def first_clause_end(text: str) -> int:
    """Where the first clause of the first sentence ends: its first comma, semicolon, colon,
    parenthesis or dash, or the end of the sentence."""
    starts = sentence_starts(text)
    sentence_end = starts[1] if len(starts) > 1 else len(text)
    m = CLAUSE_END.search(text, 0, sentence_end)
    return m.start() if m else sentence_end


def position_problem(text: str, start: int, end: int) -> str | None:
    """Why an entity at ``text[start:end]`` cannot be an object (None when it can): it opens
    a sentence, it lies in the first clause of the first sentence, or it already appears
    in its own left context."""
    if start < first_clause_end(text):
        return "in the first clause of the first sentence"
    if start in sentence_starts(text):
        return "at the start of a sentence"
    name = text[start:end]
    if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text[:start], flags=re.I):
        return "named in its own left context"
    return None


def ends_clause(text: str, end: int) -> bool:
    """Whether the entity closes a sentence or clause (the paper's preferred position)."""
    return bool(re.match(r"\s*([.,;:!?)]|$)", text[end:]))


def left_context(text: str, start: int) -> str:
    """The summary cut immediately before the object."""
    return text[:start].rstrip()


# --- rule-based spotting, for a builder whose verdicts are advisory -----------------------------

MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
DATE = re.compile(
    rf"\b(?:\d{{1,2}} (?:{MONTHS})(?: \d{{3,4}})?|(?:{MONTHS}) \d{{1,2}}, \d{{3,4}}|(?:{MONTHS}) \d{{3,4}}|1\d{{3}}|20\d{{2}})\b"
)
UNITS = (
    "kilometres",
    "kilometers",
    "km",
    "miles",
    "metres",
    "meters",
    "feet",
    "tonnes",
    "tons",
    "kilograms",
    "kg",
    "people",
    "inhabitants",
    "species",
    "islands",
    "years",
    "days",
    "percent",
    "million",
    "billion",
    "degrees",
)
NUMBER = re.compile(rf"\b\d[\d,]*(?:\.\d+)?(?: (?:{'|'.join(UNITS)})\b)?")
# Runs of capitalised words, with the lower-case joiners names carry inside them.
NAME = re.compile(r"\b[A-Z](?:\.|[\w'’-]*)(?: (?:(?:of|the|for|de|von|van|del|da) )*[A-Z](?:\.|[\w'’-]*))*")
TYPE_WORDS = {
    "LOCATION": (
        "River",
        "Ocean",
        "Sea",
        "Island",
        "Islands",
        "Lake",
        "Mountains",
        "Mountain",
        "Desert",
        "City",
        "Valley",
        "Bay",
    ),
    "ORGANIZATION": (
        "University",
        "Company",
        "Party",
        "Society",
        "Institute",
        "Academy",
        "Museum",
        "Church",
        "Navy",
        "Army",
        "Congress",
        "Council",
        "Corporation",
        "Band",
    ),
    "EVENT": ("War", "Battle", "Revolution", "Games", "Olympics", "Expedition", "Treaty", "Peace", "Crisis"),
    "LAW": ("Act", "Statute", "Constitution", "Amendment"),
}


def _name_type(name: str) -> str:
    last = name.split()[-1]
    return next((t for t, words in TYPE_WORDS.items() if last in words), "OTHER")


def spot_entities(text: str, limit: int = MAX_ENTITIES) -> list[dict]:
    """Entities found by rules, for a builder model whose tags cannot be relied on: dates,
    numbers (with a unit that follows), and runs of capitalised words (types from a closing
    word such as River or University, else OTHER). A single capitalised word opening a
    sentence is dropped from its run. When there are more than ``limit``, the last ones are kept: they
    have the longer left contexts the length filter asks for."""
    found: list[dict] = []

    def add(start: int, end: int, etype: str) -> None:
        name = re.sub(r"['’]s$", "", text[start:end].rstrip("."))
        end = start + len(name)
        if (
            not name
            or len(name.split()) > MAX_ENTITY_WORDS
            or any(s < end and start < e for s, e in ((f["start"], f["end"]) for f in found))
        ):
            return
        if any(f["name"].lower() == name.lower() for f in found):
            return
        found.append({"name": name, "type": etype, "start": start, "end": end})

    for m in DATE.finditer(text):
        add(m.start(), m.end(), "DATE")
    for m in NUMBER.finditer(text):
        add(m.start(), m.end(), "NUMERIC_VALUE")
    starts = set(sentence_starts(text))
    for m in NAME.finditer(text):
        name, start = m.group(0), m.start()
        if start in starts:
            # A sentence's first word is capitalised anyway ("After the Nazis", "In Islam"):
            # drop it and the joiners after it.
            rest = re.sub(r"^(?:(?:of|the|for|de|von|van|del|da) )*", "", name.partition(" ")[2])
            if not rest:
                continue
            name, start = rest, m.end() - len(rest)
        add(start, m.end(), _name_type(name.rstrip(".")))
    found.sort(key=lambda e: e["start"])
    return found[-limit:]


# Questions and options built by rule from the fact's own sentence, for a builder model whose
# verdicts are advisory (the embedded 135M model): when its question fails the checks, the
# sentence that states the fact, with the answer blanked, asks it instead.
# A direct cloze blanks the object ("... reached the South Pole on ___."); a reverse cloze keeps
# the object and blanks the subject, the page's topic ("___ reached the South Pole on 14
# December 1911."). Pronouns that stand for the topic at the start of the sentence are
# replaced by its name (direct) or by the blank (reverse). Every question built here is marked
# ``origin = rules``; a served builder with binding verdicts never uses them.

BLANK = "___"
# Words the cloze keeps at most from the sentence, so that the question stays within the
# length filter's 40 words with its frame.
MAX_CLOZE_WORDS = 28
MIN_CLOZE_WORDS = 8
PRONOUNS = {"It": "", "He": "", "She": "", "They": "", "Its": "'s", "His": "'s", "Her": "'s", "Their": "'s"}
# Which opening pronouns can stand for the topic: a person's, or a thing's ("His son" on the
# Ming dynasty's page is its founder's son).
PERSONAL = {"He", "She", "His", "Her"}
NOUNS = {
    "DATE": "date",
    "NUMERIC_VALUE": "number",
    "PERSON": "person",
    "LOCATION": "place",
    "EVENT": "event",
    "ORGANIZATION": "organization",
}
STOPWORDS = set(
    """a an the of in on at to for from by with and or but is are was were be been being this that these those
what which who whom whose when where why how does did do has have had it its his her their they he she as into than
then there answer question""".split()
)


def noun(entity_type: str) -> str:
    """How the question names what is missing: "date", "place", ... or "name"."""
    return NOUNS.get(entity_type, "name")


def sentence_span(text: str, start: int) -> tuple[int, int]:
    """The bounds of the sentence of ``text`` that holds offset ``start``."""
    starts = sentence_starts(text)
    begin = max(s for s in starts if s <= start)
    later = [s for s in starts if s > start]
    return begin, later[0] if later else len(text)


def _trim(sentence: str, keep_from: int, keep_to: int) -> str | None:
    """The sentence, or when it is long the clauses that hold ``[keep_from, keep_to)``,
    widened clause by clause to at least MIN_CLOZE_WORDS words and at most MAX_CLOZE_WORDS;
    None when the clauses that must stay are already longer."""
    if len(sentence.split()) <= MAX_CLOZE_WORDS:
        return sentence.strip()
    cuts = [0] + [m.end() for m in re.finditer(r"[,;:]\s", sentence)] + [len(sentence)]
    lo = max(i for i, c in enumerate(cuts) if c <= keep_from)
    hi = min(i for i, c in enumerate(cuts) if c >= keep_to)
    size = lambda a, b: len(sentence[cuts[a] : cuts[b]].split())  # noqa: E731
    if size(lo, hi) > MAX_CLOZE_WORDS:
        return None
    while size(lo, hi) < MIN_CLOZE_WORDS:
        wider = [
            (a, b)
            for a, b in ((lo - 1, hi), (lo, hi + 1))
            if a >= 0 and b < len(cuts) and size(a, b) <= MAX_CLOZE_WORDS
        ]
        if not wider:
            break
        lo, hi = min(wider, key=lambda ab: size(*ab))
    return f"... {sentence[cuts[lo] : cuts[hi]].strip(' ,;:.')} ..."


def _stands_for_topic(word: str, person: bool) -> bool:
    return word in PRONOUNS and (word in PERSONAL) == person


def _named(sentence: str, title: str, person: bool) -> str:
    """The sentence with an opening pronoun that stands for the topic replaced by its name."""
    first, _, rest = sentence.partition(" ")
    if _stands_for_topic(first, person):
        return f"{title}{PRONOUNS[first]} {rest}"
    return sentence


def direct_cloze(title: str, summary: str, start: int, obj: str, person: bool = False) -> str | None:
    """The object's sentence with the object blanked and the topic named (an opening
    pronoun replaced, or the name put before a clause that lacks it); None when too long."""
    begin, end = sentence_span(summary, start)
    sentence = summary[begin:end].strip()
    at = start - begin
    blanked = sentence[:at] + BLANK + sentence[at + len(obj) :]
    named = _named(blanked, title, person)
    at += len(named) - len(blanked)
    cloze = _trim(named, at, at + len(BLANK))
    if cloze is not None and title.lower() not in cloze.lower():
        cloze = f"{title}: {cloze}"
    return cloze


def subject_pattern(title: str, person: bool) -> re.Pattern:
    """The topic's name (any case, with a leading "the"), and for a person the surname as
    written ("Shackleton" for "Ernest Shackleton")."""
    full = rf"(?i:(?:the )?{re.escape(title)})"
    parts = [full] + ([re.escape(title.split()[-1])] if person and len(title.split()) > 1 else [])
    return re.compile(rf"(?<!\w)(?:{'|'.join(parts)})(?:['’]s)?(?!\w)")


def reverse_cloze(title: str, summary: str, start: int, obj: str, person: bool = False) -> str | None:
    """The object's sentence with the topic blanked: its name, and an opening pronoun that
    stands for it. A sentence that leaves the topic implicit ("The Security Council has five
    permanent members ...", on the United Nations' page) gets the blank in front, as the
    topic the statement is about. None when the clause around the object is too long."""
    begin, end = sentence_span(summary, start)
    sentence = summary[begin:end].strip()
    first, _, rest = sentence.partition(" ")
    if _stands_for_topic(first, person):
        sentence = f"{BLANK}{PRONOUNS[first]} {rest}"
    # the object keeps its own words even when it shares one with the topic's name
    at = sentence.find(obj)
    if at < 0:
        return None
    pattern = subject_pattern(title, person)
    head, tail = pattern.sub(BLANK, sentence[:at]), pattern.sub(BLANK, sentence[at + len(obj) :])
    blanked = head + obj + tail
    at = len(head)
    blanks = [m.start() for m in re.finditer(re.escape(BLANK), blanked)]
    cloze = _trim(blanked, min(blanks + [at]), max([b + len(BLANK) for b in blanks] + [at + len(obj)]))
    if cloze is not None and BLANK not in cloze:
        cloze = f"{BLANK}: {cloze}"
    return cloze


def direct_question(cloze: str, entity_type: str) -> str:
    return f'What {noun(entity_type)} fills the blank in "{cloze}"?'


def direct_natural(cloze: str, title: str, entity_type: str) -> str:
    return f'In this statement about {title}, which {noun(entity_type)} is missing: "{cloze}"?'


def reverse_question(cloze: str, subject_type: str) -> str:
    return f'Which {noun(subject_type)} is the blank in "{cloze}"?'


def reverse_natural(cloze: str) -> str:
    return f'Who or what is described here, in place of the blank: "{cloze}"?'


def content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[\w'’-]+", text.lower()) if len(w) > 2 and w not in STOPWORDS}


def on_topic(question: str, sentence: str, title: str, least: int = 2) -> bool:
    """Whether a model's question shares at least ``least`` content words with the fact's
    sentence beyond the topic's name: the embedded model often asks something generic ("What
    is the answer to this question?") or another fact of the topic ("What year was Freddie
    Mercury born?" for his death)."""
    name = content_words(title)
    return len((content_words(question) - name) & (content_words(sentence) - name)) >= least


def overlaps_gold(option: str, gold: str) -> bool:
    """An option that is the gold, contains it or lies inside it: no distractor at all (a
    line like "The correct answer is: Mona Lisa" gives the answer away)."""
    o, g = option.lower(), gold.lower()
    return o == g or o in g or g in o


def pool_options(gold: str, pool: Sequence[str], seed: str, n: int = 3) -> list[str] | None:
    """``n`` distractors drawn from ``pool`` (names of the same type elsewhere in the
    sample), none equal to the gold or overlapping it, in a seeded order; None when the pool
    is too small."""
    usable = sorted({p for p in pool if not overlaps_gold(p, gold)})
    if len(usable) < n:
        return None
    return random.Random(seed).sample(usable, n)


# --- the LLM's replies (notes, steps 2, 4, 7-13 and 19) -------------------------------------------


# The categories a page is put in (notes, step 2).
CATEGORIES = (
    "People",
    "History",
    "Geography",
    "Arts",
    "Philosophy & Religion",
    "Everyday Life",
    "Society",
    "Science",
    "Technology",
)
OTHER_CATEGORY = "Other"
# Words a minimalism edit may add to mend grammar after its deletions.
MAX_GRAMMAR_WORDS = 2
# Distractors per closed-book question (step 19).
N_DISTRACTORS = 3


def parse_category(text: str) -> str | None:
    """The first category named in the reply (``Philosophy and Religion`` is accepted)."""
    reply = text.replace(" and ", " & ").lower()
    hits = [(reply.find(c.lower()), c) for c in (*CATEGORIES, OTHER_CATEGORY) if c.lower() in reply]
    return min(hits)[1] if hits else None


def parse_names(text: str) -> list[str]:
    """A Python list of names from the reply (the first bracketed list), else one per line.
    Only strings and numbers are names: a list of anything else is read line by line."""
    # The first "[" and the first "]" after it, found without a backtracking search.
    start = text.find("[")
    end = text.find("]", start) if start >= 0 else -1
    if end >= 0:
        value, _ = python_literal(text[start : end + 1])
        names = [_listed_name(v) for v in value] if isinstance(value, list) else [None]
        if None not in names:
            return [n for n in names if n]
    return [line.strip(" -*\"'") for line in text.splitlines() if line.strip(" -*\"'")]


def _listed_name(value) -> str | None:
    """A listed name: a string, or a number as written (a year); None for anything else,
    and for an integer too long to write (a hex literal can be)."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, float) or (
        isinstance(value, int) and not isinstance(value, bool) and value.bit_length() <= 64
    ):
        return str(value)
    return None


# A label such as "Question 2:". Possessive: the spaces on either side of the number cannot
# be traded back and forth, which took quadratic time on a long run of spaces.
_QUESTION_LABEL = re.compile(r"^\s*+(?:question|q)\s*+\d*+\s*+[:.]\s*+", flags=re.I)


def parse_question(text: str) -> str:
    """The first line ending in a question mark, without a ``Question:`` label or quotes."""
    for line in text.splitlines():
        line = _QUESTION_LABEL.sub("", line).strip().strip('"“”')
        if line.endswith("?") and len(line.split()) >= 3:
            return line
    raise ParseError(f"no question in {text[:80]!r}")


def only_deletions(original: str, revised: str, allowance: int = MAX_GRAMMAR_WORDS) -> bool:
    """Whether ``revised`` keeps ``original``'s words in order, adding at most ``allowance``
    words (a mended article or verb form)."""
    from difflib import SequenceMatcher

    a, b = words(original), words(revised)
    kept = sum(block.size for block in SequenceMatcher(a=a, b=b, autojunk=False).get_matching_blocks())
    return len(b) - kept <= allowance


def answer_leaks(question: str, target: str) -> bool:
    """The answer, or every word of a multi-word answer, appears in the question."""
    q, t = set(words(question)), [w for w in words(target) if len(w) > 2 or w.isdigit()]
    return bool(t) and all(w in q for w in t)


_SUBJECT = re.compile(r"subject\s*+:\s*+(.+)", flags=re.I)
_QUESTION = re.compile(r"question\s*+:\s*+", flags=re.I)


def parse_reverse(text: str) -> tuple[str, str] | None:
    """(subject, reverse question) from ``Subject: ...`` / ``Question: ...``; None for REJECT.
    The question runs from its label to the last question mark of that line."""
    if re.search(r"\bREJECT\b", text):
        return None
    subject = _SUBJECT.search(text)
    question, searched = None, 0
    # Each line is searched for its last "?" once: a label after one that found none on its
    # line finds none either (a pattern ``(.+\?)`` rescanned the line from every label).
    for label in _QUESTION.finditer(text):
        if label.start() < searched:
            continue
        end = text.find("\n", label.end())
        searched = len(text) if end < 0 else end
        mark = text.rfind("?", label.end() + 1, searched)
        if mark >= 0:
            question = text[label.end() : mark + 1]
            break
    if not subject or question is None:
        raise ParseError(f"no Subject and Question lines in {text[:80]!r}")
    return subject.group(1).strip().strip('".'), question.strip().strip('"')


def parse_entity_type(text: str) -> str | None:
    found = [(text.upper().find(t), t) for t in ENTITY_TYPES if re.search(rf"\b{t}\b", text.upper())]
    return min(found)[1] if found else None


def parse_options(text: str, gold: str) -> list[str]:
    """Three distractors from the reply's lines (numbering and bullets dropped; duplicates,
    and lines that are, contain or lie inside the gold, left out)."""
    seen, out = set(), []
    for line in text.splitlines():
        option = re.sub(r"^\s*(\d+[.)]|[A-Da-d][.)]|[-*•])\s*", "", line).strip().strip('"').rstrip(".")
        if option and option.lower() not in seen and not overlaps_gold(option, gold):
            seen.add(option.lower())
            out.append(option)
    if len(out) < N_DISTRACTORS:
        raise ParseError(f"{len(out)} distractors in {text[:80]!r} (needs {N_DISTRACTORS})")
    return out[:N_DISTRACTORS]


def passed(questions: pl.DataFrame, filtered: pl.DataFrame) -> pl.DataFrame:
    """The ``questions`` whose fact a search filter's table (``filtered``) kept."""
    return questions.filter(pl.col("fact_id").is_in(filtered.filter(pl.col("kept"))["fact_id"].implode()))
