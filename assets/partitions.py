"""Partition definitions, named once. Model partitions come from the registry's roles, so
adding an alias to a role makes its partitions appear on the next definitions load."""

from __future__ import annotations

import dagster as dg

from assets.recor.sources import DOMAINS as RECOR_DOMAINS
from resources.llm import role_aliases

QUIT_LABELERS = role_aliases("quit.labelers")
QUIT_MODELS = sorted(set(role_aliases("quit.labelers")) | set(role_aliases("quit.readers")))

QUIT_READERS = role_aliases("quit.readers")

quit_reader_partitions = dg.StaticPartitionsDefinition(QUIT_READERS)
quit_labeler_partitions = dg.StaticPartitionsDefinition(QUIT_LABELERS)
quit_model_partitions = dg.StaticPartitionsDefinition(QUIT_MODELS)

# RECOR's eleven domains (six from BRIGHT, five from StackExchange).
recor_domain_partitions = dg.StaticPartitionsDefinition(RECOR_DOMAINS)
