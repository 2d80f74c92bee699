"""Questions and options built by rule from the fact's own sentence, for a builder model whose
verdicts are advisory (the embedded 135M model): when its question fails the checks, the
sentence that states the fact, with the answer blanked, asks it instead.

A direct cloze blanks the object ("... reached the South Pole on ___."); a reverse cloze keeps
the object and blanks the subject, the page's topic ("___ reached the South Pole on 14
December 1911."). Pronouns that stand for the topic at the start of the sentence are
replaced by its name (direct) or by the blank (reverse). Every question built here is marked
``origin = rules``; a served builder with binding verdicts never uses them.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from assets.wikiprofile import entities as ent

BLANK = "___"
# Words the cloze keeps at most from the sentence, so that the question stays within the
# length filter's 40 words with its frame.
MAX_CLOZE_WORDS = 28
MIN_CLOZE_WORDS = 8
PRONOUNS = {"It": "", "He": "", "She": "", "They": "", "Its": "'s", "His": "'s", "Her": "'s", "Their": "'s"}
# Which opening pronouns can stand for the topic: a person's, or a thing's ("His son" on the
# Ming dynasty's page is its founder's son).
PERSONAL = {"He", "She", "His", "Her"}
NOUNS = {"DATE": "date", "NUMERIC_VALUE": "number", "PERSON": "person", "LOCATION": "place", "EVENT": "event",
         "ORGANIZATION": "organization"}
STOPWORDS = set("""a an the of in on at to for from by with and or but is are was were be been being this that these those
what which who whom whose when where why how does did do has have had it its his her their they he she as into than
then there answer question""".split())


def noun(entity_type: str) -> str:
    """How the question names what is missing: "date", "place", ... or "name"."""
    return NOUNS.get(entity_type, "name")


def sentence_span(text: str, start: int) -> tuple[int, int]:
    """The bounds of the sentence of ``text`` that holds offset ``start``."""
    starts = ent.sentence_starts(text)
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
    size = lambda a, b: len(sentence[cuts[a]:cuts[b]].split())  # noqa: E731
    if size(lo, hi) > MAX_CLOZE_WORDS:
        return None
    while size(lo, hi) < MIN_CLOZE_WORDS:
        wider = [(a, b) for a, b in ((lo - 1, hi), (lo, hi + 1)) if a >= 0 and b < len(cuts) and size(a, b) <= MAX_CLOZE_WORDS]
        if not wider:
            break
        lo, hi = min(wider, key=lambda ab: size(*ab))
    return f"... {sentence[cuts[lo]:cuts[hi]].strip(' ,;:.')} ..."


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
    blanked = sentence[:at] + BLANK + sentence[at + len(obj):]
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
    head, tail = pattern.sub(BLANK, sentence[:at]), pattern.sub(BLANK, sentence[at + len(obj):])
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


def pool_options(gold: str, pool: Sequence[str], seed: str, n: int = 3) -> list[str] | None:
    """``n`` distractors drawn from ``pool`` (names of the same type elsewhere in the
    sample), none equal to the gold or overlapping it, in a seeded order; None when the pool
    is too small."""
    g = gold.lower()
    usable = sorted({p for p in pool if p.lower() != g and p.lower() not in g and g not in p.lower()})
    if len(usable) < n:
        return None
    return random.Random(seed).sample(usable, n)
