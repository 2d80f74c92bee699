"""The wiring the QUIT construction assets share: their key prefix and group, the judge the
registry names, and inputs read in part."""

import dagster as dg

from assets.common.wiring import Wiring
from resources.llm import LLMResource, Model
from resources.storage import STREAMED

PREFIX = "quit"
GROUP = "quit"
wiring = Wiring(PREFIX, GROUP)


def judge(llm: LLMResource) -> Model:
    """The registry's ``quit.judge``. Its ``binding`` says whether its verdicts may decide: an
    advisory judge's verdicts are recorded and only exact matches count (see steps)."""
    return llm.model("quit.judge")


def info_log(context):
    return context.log.info


def only_columns(name: str, *columns: str) -> dg.AssetIn:
    """``quit/<name>`` loaded with only ``columns`` (the IO manager reads no other): at 2.4M
    passages a step that needs the ids of passages or answers must not hold their texts."""
    return dg.AssetIn(key=[PREFIX, name], metadata={"columns": list(columns)})


def streamed(name: str) -> dg.AssetIn:
    """``quit/<name>`` as a :class:`StoredTable`: read a few columns or a batch at a time."""
    return dg.AssetIn(key=[PREFIX, name], metadata=STREAMED)
