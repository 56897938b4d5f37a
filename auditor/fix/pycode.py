"""A remedy option as a libcst codemod of a Python script: the statements that set an
environment variable from Python (`os.environ["X"] = "v"`, `os.environ.setdefault("X", "v")`,
`os.putenv("X", "v")`, `environ[...]` after `from os import environ`) removed, changed or
renamed, and every byte outside them kept: libcst's tree holds the user's comments and layout.
A removed statement's own leading comments stay, on the statement that follows.

The scan reads these settings from the run's entry script (auditor.config.pyenv); this is the
edit `fix` makes of them, and tests/fix/test_fix_pycode.py holds it to byte-for-byte.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import libcst as cst

from auditor.errors import InputError


def _string(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _is_environ(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Name):
        return node.value == "environ"
    return (isinstance(node, cst.Attribute) and node.attr.value == "environ"
            and isinstance(node.value, cst.Name) and node.value.value == "os")


def _setting(stmt: cst.BaseSmallStatement, name: str) -> tuple[cst.SimpleString, cst.BaseExpression] | None:
    """(the key's string node, the value node) when `stmt` sets `name` in the environment."""
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0].target
        if (isinstance(target, cst.Subscript) and _is_environ(target.value)
                and len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index)):
            key = target.slice[0].slice.value
            if isinstance(key, cst.SimpleString) and _string(key) == name:
                return key, stmt.value
    if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
        call = stmt.value
        func = call.func
        sets = isinstance(func, cst.Attribute) and (
            (func.attr.value == "setdefault" and _is_environ(func.value))
            or (func.attr.value == "putenv" and isinstance(func.value, cst.Name)
                and func.value.value == "os"))
        if sets and len(call.args) == 2 and isinstance(call.args[0].value, cst.SimpleString) \
                and _string(call.args[0].value) == name:
            return call.args[0].value, call.args[1].value
    return None


def _quoted(like: cst.SimpleString, text: str) -> cst.SimpleString:
    """`text` as a string literal with `like`'s prefix and quotes."""
    quote = like.quote
    if quote in text or "\\" in text:
        raise InputError(text, "cannot be written as a plain string literal")
    return cst.SimpleString(f"{like.prefix}{quote}{text}{quote}")


class _EnvCodemod(cst.CSTTransformer):
    def __init__(self, name: str, edit: str, value: str | None) -> None:
        super().__init__()
        self.name, self.edit, self.value = name, edit, value
        self.changed = 0

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine,
                                  updated: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
        if self.edit == "unset_env" or len(updated.body) != 1:
            return updated
        found = _setting(updated.body[0], self.name)
        if found is None:
            return updated
        key, value = found
        self.changed += 1
        if self.edit == "set_env" and isinstance(value, cst.SimpleString):
            assert self.value is not None
            return cast(cst.SimpleStatementLine,
                        updated.deep_replace(value, _quoted(value, self.value)))
        if self.edit == "rename_env":
            assert self.value is not None
            return cast(cst.SimpleStatementLine, updated.deep_replace(key, _quoted(key, self.value)))
        raise InputError(self.name, "its value is no string literal: change it by hand")

    def _body(self, body: Sequence[cst.BaseStatement]) -> tuple[list[cst.BaseStatement], list[cst.EmptyLine]]:
        """`body` without the statements that set the variable; the comments left over."""
        out: list[cst.BaseStatement] = []
        carried: list[cst.EmptyLine] = []
        for stmt in body:
            if (self.edit == "unset_env" and isinstance(stmt, cst.SimpleStatementLine)
                    and len(stmt.body) == 1 and _setting(stmt.body[0], self.name)):
                self.changed += 1
                carried += stmt.leading_lines
                continue
            if carried:
                lines = cast(cst.SimpleStatementLine, stmt).leading_lines  # every statement has them
                stmt = stmt.with_changes(leading_lines=[*carried, *lines])
                carried = []
            out.append(stmt)
        return out, carried

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        body, carried = self._body(updated.body)
        return updated.with_changes(body=body, footer=[*carried, *updated.footer])

    def leave_IndentedBlock(self, original: cst.IndentedBlock,
                            updated: cst.IndentedBlock) -> cst.IndentedBlock:
        body, carried = self._body(updated.body)
        if not body:  # a block must keep a statement
            body = [cst.SimpleStatementLine([cst.Pass()], leading_lines=carried)]
        elif carried:
            return updated.with_changes(body=body, footer=[*carried, *updated.footer])
        return updated.with_changes(body=body)


def env_codemod(source: str, name: str, edit: str, value: str | None = None) -> tuple[str, int]:
    """`source` with every statement that sets `name` in the environment removed (`unset_env`),
    given the value `value` (`set_env`) or renamed to `value` (`rename_env`); and how many."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        raise InputError(name, f"the script does not parse: {exc.message}") from None
    codemod = _EnvCodemod(name, edit, value)
    return module.visit(codemod).code, codemod.changed
