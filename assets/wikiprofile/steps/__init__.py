"""WikiProfile's fact extraction and question building (notes, steps 2-19) as functions of
frames and the builder model (a :class:`resources.llm.Model`). Each returns its table and
the rejected records with the step and the reason; the assets only wire them.

The steps live in one module per stage: :mod:`.facts` (categorization, entity tagging, object
selection, the three verifications and the balanced downsampling, steps 2-6),
:mod:`.questions` (direct, reverse, natural and contextual questions, steps 7-9, 11-13 and
15-16) and :mod:`.filters` (the search-grounded filter, the length filter and the options,
steps 10, 14 and 17-19), with what they share in :mod:`.shared`; this package is their one
face. The readers of the model's replies are rules (:mod:`assets.wikiprofile.rules`).
"""

from assets.wikiprofile.steps.facts import (
    ENTITY_REASONS,
    ENTITY_SCHEMA,
    OBJECT_REASONS,
    OBJECT_SCHEMA,
    VERIFICATION_REASONS,
    VERIFICATIONS,
    categorize,
    downsample,
    select_objects,
    tag_entities,
    verify,
)
from assets.wikiprofile.steps.filters import (
    MAX_QUESTION_WORDS,
    MIN_LEFT_CONTEXT_WORDS,
    SEARCH_K,
    SEARCH_REASONS,
    SEARCH_SCHEMA,
    TOO_FEW_DISTRACTORS,
    distractors,
    length_problems,
    search_filter,
)
from assets.wikiprofile.steps.questions import (
    DIRECT_QUESTION_REASONS,
    NATURAL_QUESTION_REASONS,
    NATURAL_SCHEMA,
    QUESTION_SCHEMA,
    REVERSE_QUESTION_REASONS,
    REVERSE_SCHEMA,
    contextual_question,
    direct_questions,
    natural_questions,
    reverse_questions,
)
from assets.wikiprofile.steps.shared import REJECTS

__all__ = [
    "DIRECT_QUESTION_REASONS",
    "ENTITY_REASONS",
    "ENTITY_SCHEMA",
    "MAX_QUESTION_WORDS",
    "MIN_LEFT_CONTEXT_WORDS",
    "NATURAL_QUESTION_REASONS",
    "NATURAL_SCHEMA",
    "OBJECT_REASONS",
    "OBJECT_SCHEMA",
    "QUESTION_SCHEMA",
    "REJECTS",
    "REVERSE_QUESTION_REASONS",
    "REVERSE_SCHEMA",
    "SEARCH_K",
    "SEARCH_REASONS",
    "SEARCH_SCHEMA",
    "TOO_FEW_DISTRACTORS",
    "VERIFICATIONS",
    "VERIFICATION_REASONS",
    "categorize",
    "contextual_question",
    "direct_questions",
    "distractors",
    "downsample",
    "length_problems",
    "natural_questions",
    "reverse_questions",
    "search_filter",
    "select_objects",
    "tag_entities",
    "verify",
]
