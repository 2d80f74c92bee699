"""What RECOR's evaluation assets share: their key prefix and group, and the benchmark as
they read it."""

import dagster as dg

from assets.common.wiring import Wiring

PREFIX = "eval"
GROUP = "eval"
wiring = Wiring(PREFIX, GROUP)
# The benchmark as the evaluation reads it: built or released (assets.eval.sources).
BENCHMARK = wiring.input("recor_turns")
CORPUS = wiring.input("recor_corpus")
BY_DOMAIN = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="domain")
