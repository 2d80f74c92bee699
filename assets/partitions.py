"""Every partition definition, named once. Model partitions come from the registry's roles and
retriever and reranker partitions from their registries, so adding an alias there makes its
partitions appear on the next definitions load."""

from __future__ import annotations

import dagster as dg

from resources.llm import role_aliases
from resources.retrieval import load_rerankers, load_retrievers

# QUIT: labelers label passages, readers answer from them; the parametric (closed-book)
# answers are asked of both.
QUIT_LABELERS = role_aliases("quit.labelers")
QUIT_READERS = role_aliases("quit.readers")
QUIT_MODELS = sorted(set(QUIT_LABELERS) | set(QUIT_READERS))

quit_reader_partitions = dg.StaticPartitionsDefinition(QUIT_READERS)
quit_labeler_partitions = dg.StaticPartitionsDefinition(QUIT_LABELERS)
quit_model_partitions = dg.StaticPartitionsDefinition(QUIT_MODELS)

# RECOR's eleven domains: six from BRIGHT, five from StackExchange.
BRIGHT_DOMAINS = ["biology", "earth_science", "economics", "psychology", "robotics", "sustainable_living"]
STACKEXCHANGE_DOMAINS = ["drones", "hardware", "law", "medical_sciences", "politics"]
DOMAINS = BRIGHT_DOMAINS + STACKEXCHANGE_DOMAINS

recor_domain_partitions = dg.StaticPartitionsDefinition(DOMAINS)

# Retrieval evaluation: one partition per retriever (QUIT) and per retriever x reranker.
retriever_partitions = dg.StaticPartitionsDefinition(sorted(load_retrievers()))
rerank_partitions = dg.MultiPartitionsDefinition({
    "retriever": retriever_partitions,
    "reranker": dg.StaticPartitionsDefinition(sorted(load_rerankers())),
})

# RECOR's evaluation: domain x retriever; the oracle is not a retriever of conversations.
recor_retriever_partitions = dg.StaticPartitionsDefinition(
    sorted(a for a, s in load_retrievers().items() if s.kind != "oracle"))
recor_eval_partitions = dg.MultiPartitionsDefinition({"domain": recor_domain_partitions, "retriever": recor_retriever_partitions})

# WikiProfile's subject models: dynamic, so that the sensor adds an alias put in the
# registry's ``wikiprofile.subjects`` without a code change.
subject_partitions = dg.DynamicPartitionsDefinition(name="wikiprofile_subjects")

# Every partitions definition by a short name (job names, the UI).
NAMED = {
    "quit_readers": quit_reader_partitions, "quit_labelers": quit_labeler_partitions, "quit_models": quit_model_partitions,
    "domains": recor_domain_partitions, "retrievers": retriever_partitions, "rerankers": rerank_partitions,
    "domain_retrievers": recor_eval_partitions, "subjects": subject_partitions,
}
