"""A site as the finder first records it: found in the tree, before the module's data flow
decides whether it stays a site and before its ordinal is known (`sites.py` numbers them)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Pending:
    node: ast.expr
    function: str
    rank: int  # order of discovery: CST pre-order, i.e. source order
    fields: dict[str, Any] = field(default_factory=dict)  # the Site's fields the finder decided
