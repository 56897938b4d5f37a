"""Line numbers for CST nodes, paired with CPython's own parser.

libcst's PositionProvider regenerates the whole module's code and costs about 4.5 s on the 37
files of megatron-core/ms-swift/mcore-bridge that hold P2P calls; `ast` knows every line in
milliseconds. A node is paired with the ast node of the same type, in the same function, with the
same source text, in source order. Should CPython's parser reject the file (syntax newer than the
running interpreter) or a pairing fail, the PositionProvider is the fallback.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from auditor.static.names import qualname


@dataclass(frozen=True)
class Span:
    line: int
    end_line: int
    col: int


def _strip_parens(node: cst.CSTNode) -> cst.CSTNode:
    if getattr(node, "lpar", None) or getattr(node, "rpar", None):
        return node.with_changes(lpar=[], rpar=[])
    return node


class _Index(ast.NodeVisitor):
    """Spans of the wanted (kind, function, text) keys, in source order."""

    def __init__(self, source: bytes, wanted: set[tuple[str, str, str]]) -> None:
        self.lines = source.splitlines(keepends=True)
        self.wanted = wanted
        self.functions = {f for _, f, _ in wanted}
        self.stack: list[tuple[str, str]] = []
        self.spans: dict[tuple[str, str, str], list[Span]] = {}

    def _function(self) -> str:
        return qualname(self.stack)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for child in (*node.decorator_list, *node.bases, *node.keywords):
            self.visit(child)
        self.stack.append(("class", node.name))
        for stmt in node.body:
            self.visit(stmt)
        self.stack.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for d in node.decorator_list:
            self.visit(d)
        self.stack.append(("function", node.name))
        for stmt in node.body:
            self.visit(stmt)
        self.stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.stack.append(("function", "<lambda>"))
        self.visit(node.body)
        self.stack.pop()

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        # Annotations are skipped by the CST walk too.
        self.visit(node.target)
        if node.value is not None:
            self.visit(node.value)

    def generic_visit(self, node: ast.AST) -> None:
        kind = type(node).__name__
        if kind in ("Call", "Attribute", "Name") and self._function() in self.functions:
            key = (kind, self._function(), self._segment(node))
            if key in self.wanted:
                span = Span(node.lineno, node.end_lineno or node.lineno, node.col_offset)
                self.spans.setdefault(key, []).append(span)
        super().generic_visit(node)

    def _segment(self, node: ast.AST) -> str:
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        start, end = node.col_offset, node.end_col_offset
        if first == last:
            chunk = self.lines[first][start:end]
        else:
            chunk = self.lines[first][start:] + b"".join(self.lines[first + 1:last])
            chunk += self.lines[last][:end]
        return chunk.decode("utf-8", errors="replace")


Item = tuple[str, str, cst.CSTNode]  # (ast node type, enclosing function, CST node)


def locate(text: str, tree: cst.Module, items: list[Item], seen: list[Item]) -> list[Span]:
    """Spans of `items`, given `seen`: every Call/Attribute/Name expression the CST walk visited,
    in source order, so an item's rank among nodes of the same text is known."""
    if not items:
        return []
    code = tree.code_for_node
    keys = [(kind, fn, code(_strip_parens(node))) for kind, fn, node in items]
    wanted = set(keys)
    tails = {(kind, fn, _tail_of(node)) for kind, fn, node in items}
    rank: dict[int, int] = {}
    counts: dict[tuple[str, str, str], int] = {}
    for kind, fn, node in seen:
        if (kind, fn, _tail_of(node)) not in tails:
            continue
        key = (kind, fn, code(_strip_parens(node)))
        if key in wanted:
            rank[id(node)] = counts.get(key, 0)
            counts[key] = rank[id(node)] + 1
    try:
        index = _Index(text.encode("utf-8"), wanted)
        index.visit(ast.parse(text))
    except (SyntaxError, ValueError):
        return _fallback(tree, items)
    spans: list[Span] = []
    for key, (_, _, node) in zip(keys, items):
        candidates = sorted(index.spans.get(key, []), key=lambda s: (s.line, s.col))
        n = rank.get(id(node), -1)
        if not 0 <= n < len(candidates) or len(candidates) != counts.get(key):
            return _fallback(tree, items)
        spans.append(candidates[n])
    return spans


def _tail_of(node: cst.CSTNode) -> str:
    if isinstance(node, cst.Call):
        node = node.func
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Name):
        return node.value
    return ""


def _fallback(tree: cst.Module, items: list[tuple[str, str, cst.CSTNode]]) -> list[Span]:
    positions = MetadataWrapper(tree, unsafe_skip_copy=True).resolve(PositionProvider)
    out = []
    for _, _, node in items:
        pos = positions[node]
        out.append(Span(pos.start.line, pos.end.line, pos.start.column))
    return out
