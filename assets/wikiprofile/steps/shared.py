"""What WikiProfile's steps share: the rejects table's keys, the prompts and the output budget."""

from __future__ import annotations

from collections.abc import Mapping

from assets.common.prompts import load_prompt
from assets.common.rejects import Rejects

# What a step drops: the page and the item (entity, object, fact).
REJECTS = Rejects(("page_id", "item"))
SHORT = {"max_tokens": 60}
# Pages by id: (title, summary), for the questions built by rule (``cloze``).
Pages = Mapping[str, tuple[str, str]]


def wikiprofile_prompt(name: str):
    return load_prompt("wikiprofile", name)
