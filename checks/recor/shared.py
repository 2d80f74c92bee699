"""What the checks of RECOR's construction share: the assets' keys, the domain partitions
and the inputs of one domain."""

import dagster as dg

from assets.partitions import domain_partitions
from assets.recor.assets import wiring

PARTS = dict(partitions_def=domain_partitions)
key = wiring.key


def same_domain(name: str) -> dg.AssetIn:
    """Another RECOR table of the same domain (the identity mapping of one partitions definition)."""
    return dg.AssetIn(key=key(name))
