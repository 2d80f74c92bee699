"""Entities and object candidates of a page summary (notes, steps 3-4): the inline markup the
NER prompt writes, the position rules an object must meet, and its left context.

The NER prompt rewrites the text with ``{{entity name; TYPE}}`` around each entity. Only the
names and types are taken from the rewrite: positions come from the original summary, so a
model that also edits the surrounding words cannot move an entity or invent one.
"""

from __future__ import annotations

import re

ENTITY_TYPES = (
    "PERSON", "ORGANIZATION", "LOCATION", "EVENT", "WORK_OF_ART", "PRODUCT", "ORGANISM", "SUBSTANCE", "DATE",
    "NUMERIC_VALUE", "CONDITION", "TITLE", "LANGUAGE", "GROUP", "LAW", "IDEA", "CLASSIFICATION", "IDENTIFIER", "OTHER",
)
MAX_ENTITIES = 8
MAX_ENTITY_WORDS = 5
# Figure 11's coarse groups, for the balance of the downsampling and the plots.
TYPE_GROUPS = {
    "WORK_OF_ART": "ARTIFACT", "PRODUCT": "ARTIFACT",
    "ORGANISM": "BIO_CHEM", "CONDITION": "BIO_CHEM", "SUBSTANCE": "BIO_CHEM",
    "IDEA": "CONCEPT", "LANGUAGE": "CONCEPT", "LAW": "CONCEPT",
    "CLASSIFICATION": "DESCRIPTOR", "GROUP": "DESCRIPTOR", "IDENTIFIER": "DESCRIPTOR", "TITLE": "DESCRIPTOR",
    "NUMERIC_VALUE": "NUMBER",
}
MARKUP = re.compile(r"\{\{\s*([^{};]+?)\s*;\s*([A-Za-z_ ]+?)\s*\}\}")
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
DATE = re.compile(rf"\b(?:\d{{1,2}} (?:{MONTHS})(?: \d{{3,4}})?|(?:{MONTHS}) \d{{1,2}}, \d{{3,4}}|(?:{MONTHS}) \d{{3,4}}|1\d{{3}}|20\d{{2}})\b")
UNITS = ("kilometres", "kilometers", "km", "miles", "metres", "meters", "feet", "tonnes", "tons", "kilograms", "kg",
         "people", "inhabitants", "species", "islands", "years", "days", "percent", "million", "billion", "degrees")
NUMBER = re.compile(rf"\b\d[\d,]*(?:\.\d+)?(?: (?:{'|'.join(UNITS)})\b)?")
# Runs of capitalised words, with the lower-case joiners names carry inside them.
NAME = re.compile(r"\b[A-Z](?:\.|[\w'’-]*)(?: (?:(?:of|the|for|de|von|van|del|da) )*[A-Z](?:\.|[\w'’-]*))*")
TYPE_WORDS = {
    "LOCATION": ("River", "Ocean", "Sea", "Island", "Islands", "Lake", "Mountains", "Mountain", "Desert", "City", "Valley", "Bay"),
    "ORGANIZATION": ("University", "Company", "Party", "Society", "Institute", "Academy", "Museum", "Church", "Navy", "Army",
                     "Congress", "Council", "Corporation", "Band"),
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
        if not name or len(name.split()) > MAX_ENTITY_WORDS or any(s < end and start < e for s, e in
                                                                    ((f["start"], f["end"]) for f in found)):
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
