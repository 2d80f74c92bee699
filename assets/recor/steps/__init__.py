"""RECOR's Decomposition-and-Verification steps (paper section 3.2) as functions of frames.

Each step takes the previous step's tables, asks the LLM through the resource (prompts in
``assets/recor/prompts``), applies the rules of :mod:`assets.recor.rules`, and returns the
kept rows and the rejected ones with their step and reason. Semantic similarity is cosine
similarity of the configured encoder's normalised embeddings.

The steps live in one module per stage: :mod:`.decomposition` (alignment, aspects, facts),
:mod:`.dialogue` (turns, conversations), :mod:`.negatives` (hard-negative mining) and
:mod:`.quality` (the quality analysis), with what they share in :mod:`.shared`; this package
is their one face.
"""

from assets.recor.steps.decomposition import (
    ALIGNMENT_REASONS,
    ASPECT_REASONS,
    ASPECT_SCHEMA,
    FACT_REASONS,
    FACT_SCHEMA,
    alignment,
    aspects,
    facts,
)
from assets.recor.steps.dialogue import (
    CONVERSATION_REASONS,
    CRITERIA,
    TURN_REASONS,
    TURN_SCHEMA,
    conversations,
    score_documents,
    turns,
)
from assets.recor.steps.negatives import NEGATIVE_REASONS, mining_queries, select_negatives
from assets.recor.steps.quality import (
    DIMENSION_ABBREVIATIONS,
    DIMENSIONS,
    TABLE_31_DEFINITIONS,
    conversation_scores,
    domain_table,
    turn_labels,
)
from assets.recor.steps.shared import REJECTS, Similarity, recor_prompt

__all__ = [
    "ALIGNMENT_REASONS",
    "ASPECT_REASONS",
    "ASPECT_SCHEMA",
    "CONVERSATION_REASONS",
    "CRITERIA",
    "DIMENSIONS",
    "DIMENSION_ABBREVIATIONS",
    "FACT_REASONS",
    "FACT_SCHEMA",
    "NEGATIVE_REASONS",
    "REJECTS",
    "TABLE_31_DEFINITIONS",
    "TURN_REASONS",
    "TURN_SCHEMA",
    "Similarity",
    "alignment",
    "aspects",
    "conversation_scores",
    "conversations",
    "domain_table",
    "facts",
    "mining_queries",
    "recor_prompt",
    "score_documents",
    "select_negatives",
    "turn_labels",
    "turns",
]
