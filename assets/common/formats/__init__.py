"""A built benchmark in the formats the community loads: a Hugging Face dataset folder with
its card (:mod:`.huggingface`), Croissant metadata (:mod:`.croissant`) and BEIR's layout,
written and read back defensively (:mod:`.beir`)."""

from assets.common.formats.beir import BeirData, read_beir, write_beir
from assets.common.formats.croissant import TableFile, croissant_metadata
from assets.common.formats.huggingface import Card, HfExport, write_hf_dataset

__all__ = [
    "BeirData",
    "Card",
    "HfExport",
    "TableFile",
    "croissant_metadata",
    "read_beir",
    "write_beir",
    "write_hf_dataset",
]
