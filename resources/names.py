"""The one set of names an alias, a partition key or a retriever name may take.

Such a name becomes a file or folder name under the storage root, an S3 key segment and a
Dagster partition key, so it is checked where it enters (the registries, the dynamic
partitions, the IO manager) against one rule: no separator, no parent folder, nothing a shell
or a URI would read twice. A model registry entry's ``model`` (``hosted_vllm/...``) is no such
name: it never becomes a path.
"""

from __future__ import annotations

import re

MAX_LENGTH = 64
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
RULE = (
    f"a name is letters, digits, '.', '_' and '-', starts with a letter or digit, has no '..' "
    f"and at most {MAX_LENGTH} characters"
)


def check_name(name: object, what: str) -> str:
    """``name`` when it is in the allowed set; else a ValueError naming it as ``what`` (``path:
    retriever alias``) with the rule."""
    if isinstance(name, str) and len(name) <= MAX_LENGTH and _NAME.fullmatch(name) and ".." not in name:
        return name
    raise ValueError(f"{what} {name!r}: {RULE}")
