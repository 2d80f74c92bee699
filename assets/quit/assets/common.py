"""The wiring the QUIT construction assets share: their key prefix and group, the judge the
registry names, and inputs read in part."""

import dagster as dg

from assets.common.wiring import Wiring
from resources.llm import LLMResource
from resources.storage import STREAMED

PREFIX = "quit"
GROUP = "quit"
wiring = Wiring(PREFIX, GROUP)


def judge_alias(llm: LLMResource) -> str:
    return llm.role("quit.judge")[0]


def is_binding(llm: LLMResource) -> bool:
    """Whether the judge's verdicts may decide: an advisory judge's verdicts are recorded and
    only exact matches count (see steps)."""
    return llm.binding(judge_alias(llm))


def verdicts(llm: LLMResource) -> str:
    return llm.spec(judge_alias(llm)).verdicts


def info_log(context):
    return context.log.info


def only_columns(name: str, *columns: str) -> dg.AssetIn:
    """``quit/<name>`` loaded with only ``columns`` (the IO manager reads no other): at 2.4M
    passages a step that needs the ids of passages or answers must not hold their texts."""
    return dg.AssetIn(key=[PREFIX, name], metadata={"columns": list(columns)})


def streamed(name: str) -> dg.AssetIn:
    """``quit/<name>`` as a :class:`StoredTable`: read a few columns or a batch at a time."""
    return dg.AssetIn(key=[PREFIX, name], metadata=STREAMED)
