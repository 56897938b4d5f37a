"""libcst codemods of a trainer's own P2P code, the three edits its findings call for, each
keeping every byte outside the calls it changes:

eager_init  `init_process_group(...)` without `device_id` gets `device_id=torch.device("cuda",
            LOCAL)`: LOCAL is the local-rank variable assigned before the call in its function
            (or at the module's top), else `int(os.environ["LOCAL_RANK"])`
pass_group  a P2P call on the default group gets `group=G`, G the one group expression its
            neighbours in the same function pass
batch_pairs back-to-back unbatched send/recv statements become one `batch_isend_irecv` of
            `P2POp`s: `a = isend(..); b = irecv(..)` -> `a, b = batch_isend_irecv([...])` (the
            code's own waits wait on its requests); a bare blocking `send`/`recv` gets its
            request waited right after the batch, as the blocking call did

Which keyword and which APIs are torch's facts, given by the remedy's rules entry (`name`,
`value`). A codemod that cannot make its edit raises `Refused` with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

# The P2P calls whose group a codemod reads or passes: the positional index of `group`.
GROUP_AT = {"send": 2, "recv": 2, "isend": 2, "irecv": 2, "P2POp": 3}
# An op -> its non-blocking form inside a P2POp; blocking ones were waited on by the call.
AS_OP = {"isend": "isend", "irecv": "irecv", "send": "isend", "recv": "irecv"}
BLOCKING = {"send", "recv"}
_PEER = {"dst", "src", "peer"}


class Refused(Exception):
    """The codemod does not make its edit here; the message says why."""


def _name(func: cst.BaseExpression) -> str | None:
    """`dist.isend`, `torch.distributed.isend`, `isend` -> "isend"."""
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else None


def _prefix(module: cst.Module, func: cst.BaseExpression) -> str:
    """The module expression a call goes through (`dist` of `dist.isend`), "" for a bare name."""
    return module.code_for_node(func.value) + "." if isinstance(func, cst.Attribute) else ""


def _parse(source: str) -> MetadataWrapper:
    try:
        return MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)
    except cst.ParserSyntaxError as exc:
        raise Refused(f"the script does not parse: {exc.message}") from None


def _keyword(call: cst.Call, name: str) -> cst.Arg | None:
    return next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def _starred(call: cst.Call) -> bool:
    return any(a.star for a in call.args)


def _append(call: cst.Call, arg: cst.Arg) -> cst.Call:
    """`call` with `arg` last, in the call's own layout: a trailing comma stays trailing, the
    separator the arguments already use separates the new one."""
    args = list(call.args)
    if not args:
        return call.with_changes(args=[arg])
    last = args[-1]
    between = args[-2].comma.whitespace_after if len(args) > 1 and isinstance(
        args[-2].comma, cst.Comma) else call.whitespace_before_args
    end = last.comma.whitespace_after if isinstance(last.comma, cst.Comma) else None
    if isinstance(end, cst.ParenthesizedWhitespace) and isinstance(
            between, cst.ParenthesizedWhitespace):  # one argument a line, a trailing comma
        assert isinstance(last.comma, cst.Comma)
        kept = last.comma.with_changes(whitespace_after=end.with_changes(
            empty_lines=[], last_line=between.last_line, indent=between.indent))
        closing = cst.Comma(whitespace_after=end.with_changes(first_line=cst.TrailingWhitespace()))
        return call.with_changes(args=[*args[:-1], last.with_changes(comma=kept),
                                       arg.with_changes(comma=closing)])
    if isinstance(between, cst.ParenthesizedWhitespace) and len(args) > 1:
        sep = cst.Comma(whitespace_after=between.with_changes(first_line=cst.TrailingWhitespace(),
                                                             empty_lines=[]))
    else:
        sep = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    # what precedes `)` (a newline and the indent of its line) now follows the new argument
    return call.with_changes(args=[
        *args[:-1], last.with_changes(comma=sep, whitespace_after_arg=cst.SimpleWhitespace("")),
        arg.with_changes(whitespace_after_arg=last.whitespace_after_arg)])


def _kwarg(name: str, value: str) -> cst.Arg:
    return cst.Arg(value=cst.parse_expression(value), keyword=cst.Name(name),
                   equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                         whitespace_after=cst.SimpleWhitespace("")))


class _Replace(cst.CSTTransformer):
    """Replaces the original nodes it is given (by identity) with their new forms."""

    def __init__(self, new: dict[cst.CSTNode, cst.CSTNode | cst.FlattenSentinel[cst.BaseStatement]
                                 | cst.RemovalSentinel]) -> None:
        super().__init__()
        self.new = new

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):
        return self.new.get(original, updated)


# -- eager_init ---------------------------------------------------------------------------------


@dataclass
class _Init:
    call: cst.Call
    line: int
    local: str | None  # the local-rank name assigned before it in its scope


class _FindInit(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, api: str, keyword: str) -> None:
        super().__init__()
        self.api, self.keyword = api, keyword
        self.scopes: list[list[tuple[int, str]]] = [[]]  # per open scope: (line, name) assigned
        self.found: list[_Init] = []
        self.given = 0  # calls that pass the keyword already
        self.imports: dict[str, str] = {}  # module -> the name `import X [as Y]` binds

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            if isinstance(alias.name, cst.Name):
                self.imports.setdefault(alias.name.value, alias.evaluated_alias or alias.name.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        line = self.get_metadata(PositionProvider, node).start.line
        self.scopes.append([(line, p.name.value) for p in node.params.params
                            if p.name.value in ("local_rank", "LOCAL_RANK")])

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.scopes.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        self._assigned(node, [t.target for t in node.targets], node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:  # `local_rank: int = ...`
        if node.value is not None:
            self._assigned(node, [node.target], node.value)

    def _assigned(self, node: cst.CSTNode, targets: list[cst.BaseExpression],
                  value: cst.BaseExpression) -> None:
        line = self.get_metadata(PositionProvider, node).start.line
        code = cst.Module([]).code_for_node(value)
        for t in targets:
            if isinstance(t, cst.Name) and (
                    "LOCAL_RANK" in code or t.value in ("local_rank", "LOCAL_RANK")):
                self.scopes[-1].append((line, t.value))

    def visit_Call(self, node: cst.Call) -> None:
        if _name(node.func) != self.api:
            return
        if _keyword(node, self.keyword) is not None:
            self.given += 1
            return
        if _starred(node):
            raise Refused(f"an {self.api} call passes *args or **kwargs: whether it gives "
                          f"{self.keyword} is not known here; add it by hand")
        line = self.get_metadata(PositionProvider, node).start.line
        names = [n for scope in (self.scopes[-1], self.scopes[0]) for at, n in scope if at < line]
        self.found.append(_Init(node, line, names[-1] if names else None))


def eager_init(source: str, api: str = "init_process_group", keyword: str = "device_id") -> str:
    """`source` with every `api(...)` call that lacks `keyword` given the local rank's GPU."""
    wrapper = _parse(source)
    finder = _FindInit(api, keyword)
    wrapper.visit(finder)
    if not finder.found:
        raise Refused(f"no {api}(...) call without {keyword} in the script"
                      + (f" ({finder.given} pass it already)" if finder.given else ""))
    torch = finder.imports.get("torch")
    if torch is None:
        raise Refused("the script has no `import torch` to build torch.device from")
    new: dict[cst.CSTNode, cst.CSTNode | cst.FlattenSentinel[cst.BaseStatement] | cst.RemovalSentinel] = {}
    for init in finder.found:
        local = init.local
        if local is None:
            if "os" not in finder.imports:
                raise Refused(f"line {init.line}: no local-rank variable before the call and no "
                              "`import os` to read LOCAL_RANK")
            local = f'int({finder.imports["os"]}.environ["LOCAL_RANK"])'
        new[init.call] = _append(init.call, _kwarg(keyword, f'{torch}.device("cuda", {local})'))
    return wrapper.module.visit(_Replace(new)).code


# -- pass_group ---------------------------------------------------------------------------------


def _group_arg(call: cst.Call, api: str) -> cst.BaseExpression | None:
    """The group a P2P call passes, None for the default group (none given, or `None`)."""
    arg = _keyword(call, "group")
    if arg is None:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        arg = positional[GROUP_AT[api]] if len(positional) > GROUP_AT[api] else None
    if arg is None or (isinstance(arg.value, cst.Name) and arg.value.value == "None"):
        return None
    return arg.value


class _FindP2P(cst.CSTVisitor):
    """Per function, its P2P calls in order: (call, api, line)."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[list[tuple[cst.Call, str, int]]] = [[]]
        self.functions: list[list[tuple[cst.Call, str, int]]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stack.append([])

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.functions.append(self.stack.pop())

    def leave_Module(self, original_node: cst.Module) -> None:
        self.functions.append(self.stack.pop())

    def visit_Call(self, node: cst.Call) -> None:
        api = _name(node.func)
        if api in GROUP_AT:
            self.stack[-1].append((node, api, self.get_metadata(PositionProvider, node).start.line))


def pass_group(source: str, lines: set[int], keyword: str = "group") -> str:
    """`source` with each P2P call on the default group at `lines` given the group its
    neighbours in the same function pass (`keyword=G`)."""
    wrapper = _parse(source)
    finder = _FindP2P()
    wrapper.visit(finder)
    module = wrapper.module
    new: dict[cst.CSTNode, cst.CSTNode | cst.FlattenSentinel[cst.BaseStatement] | cst.RemovalSentinel] = {}
    for calls in finder.functions:
        targets = [(c, line) for c, api, line in calls
                   if line in lines and _group_arg(c, api) is None]
        if not targets:
            continue
        groups = {module.code_for_node(g) for c, api, _ in calls
                  if (g := _group_arg(c, api)) is not None}
        if len(groups) != 1:
            shown = ", ".join(sorted(groups)) or "none"
            raise Refused(f"line {targets[0][1]}: its neighbours in the function pass "
                          f"{len(groups)} groups ({shown}), not one to pass")
        (group,) = groups
        for call, line in targets:
            if _starred(call):
                raise Refused(f"line {line}: the call passes *args or **kwargs")
            arg = _keyword(call, keyword)
            new[call] = (call.with_changes(args=[a.with_changes(value=cst.parse_expression(group))
                                                 if a is arg else a for a in call.args])
                         if arg is not None else _append(call, _kwarg(keyword, group)))
    missing = sorted(lines - {line for calls in finder.functions for c, _, line in calls
                              if c in new})
    if missing:
        raise Refused(f"line {missing[0]}: no P2P call on the default group there")
    return module.visit(_Replace(new)).code


# -- batch_pairs --------------------------------------------------------------------------------


@dataclass
class _Op:
    stmt: cst.SimpleStatementLine
    call: cst.Call
    api: str
    target: str | None  # the name its request is assigned to, None for a bare call
    line: int


def _op_of(stmt: cst.BaseStatement, module: cst.Module, wrapper: MetadataWrapper) -> _Op | None:
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    target = None
    if isinstance(small, cst.Assign) and len(small.targets) == 1 \
            and isinstance(small.targets[0].target, cst.Name):
        target, value = small.targets[0].target.value, small.value
    elif isinstance(small, cst.Expr):
        value = small.value
    else:
        return None
    if not isinstance(value, cst.Call) or _name(value.func) not in AS_OP:
        return None
    line = wrapper.resolve(PositionProvider)[value].start.line
    return _Op(stmt, value, _name(value.func) or "", target, line)


def _descriptor(module: cst.Module, op: _Op, prefix: str) -> str:
    """`P2POp(isend, tensor, peer[, group][, tag])` of one op call, its arguments' code kept."""
    if _starred(op.call):
        raise Refused(f"line {op.line}: the call passes *args or **kwargs")
    parts = []
    for a in op.call.args:
        code = module.code_for_node(a.value)
        if a.keyword is None:
            parts.append(code)
        elif a.keyword.value in _PEER:
            parts.append(f"peer={code}")
        elif a.keyword.value in ("tensor", "group", "tag"):
            parts.append(f"{a.keyword.value}={code}")
        else:
            raise Refused(f"line {op.line}: {a.keyword.value}= has no P2POp counterpart")
    return f"{prefix}P2POp({prefix}{AS_OP[op.api]}, {', '.join(parts)})"


def _batched(module: cst.Module, run: list[_Op], batch: str, op_type: str,
             names: set[str]) -> cst.FlattenSentinel[cst.BaseStatement]:
    """The run as one batch statement, then a wait on each request a blocking call (`send`,
    `recv`) waited for; a request the code kept keeps its name, one it dropped stays dropped.
    libcst indents the lines as the block it puts them in. `names`: those the module uses."""
    func = run[0].call.func
    prefix = _prefix(module, func)
    if not prefix and batch not in _bound(module):
        raise Refused(f"line {run[0].line}: the ops are imported by name and {batch} is not")
    lines = []
    for op in run:
        comment = op.stmt.trailing_whitespace.comment
        lines.append(f"    {_descriptor(module, op, prefix).replace('P2POp', op_type)},"
                     + (f"  {comment.value}" if comment else ""))
    call = f"{prefix}{batch}([\n" + "\n".join(lines) + "\n])"
    blocking = [op for op in run if op.target is None and op.api in BLOCKING]
    if not any(op.target for op in run):
        if len(blocking) == len(run):
            text = f"for work in {call}:\n    work.wait()\n"
        elif not blocking:
            text = f"{call}\n"  # the requests were dropped: still dropped
        else:
            raise Refused(f"line {run[0].line}: blocking and non-blocking calls whose requests "
                          "are all dropped")
    else:
        targets, waits = [], []
        for op in run:
            if op.target is None and op.api in BLOCKING:
                waits.append(_fresh(f"{op.api}_work", names))
            targets.append(op.target or (waits[-1] if op.api in BLOCKING else "_"))
        text = f"{', '.join(targets)} = {call}\n" + "".join(f"{w}.wait()\n" for w in waits)
    stmts = cst.parse_module(text, config=module.config_for_parsing).body
    return cst.FlattenSentinel([stmts[0].with_changes(leading_lines=run[0].stmt.leading_lines),
                                *stmts[1:]])


def _fresh(base: str, names: set[str]) -> str:
    """`base`, or `base_2`, ... : a name the module does not use yet (then taken)."""
    name, n = base, 1
    while name in names:
        n += 1
        name = f"{base}_{n}"
    names.add(name)
    return name


def _bound(module: cst.Module) -> set[str]:
    """Names the module imports from a module (`from torch.distributed import X`)."""
    return {a.evaluated_alias or a.evaluated_name for s in module.body
            if isinstance(s, cst.SimpleStatementLine) for small in s.body
            if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar)
            for a in small.names}


def _names(module: cst.Module) -> list[cst.Name]:
    found: list[cst.Name] = []

    class Names(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            found.append(node)

    module.visit(Names())
    return found


class _Blocks(cst.CSTVisitor):
    """Every statement list: the module's body and each indented block's."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        super().__init__()
        self.bodies: list[Sequence[cst.BaseStatement]] = []

    def visit_Module(self, node: cst.Module) -> None:
        self.bodies.append(node.body)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.bodies.append(node.body)


def batch_pairs(source: str, lines: set[int], batch: str = "batch_isend_irecv",
                op_type: str = "P2POp") -> str:
    """`source` with each run of back-to-back unbatched P2P statements at `lines` (two or more)
    made one `batch(...)` of `op_type` descriptors."""
    wrapper = _parse(source)
    blocks = _Blocks()
    wrapper.visit(blocks)
    module = wrapper.module
    names = {n.value for n in _names(module)}
    new: dict[cst.CSTNode, cst.CSTNode | cst.FlattenSentinel[cst.BaseStatement] | cst.RemovalSentinel] = {}
    done: set[int] = set()
    for body in blocks.bodies:
        run: list[_Op] = []
        for stmt in [*body, None]:
            op = _op_of(stmt, module, wrapper) if stmt is not None else None
            if op is not None and op.line in lines:
                run.append(op)
                continue
            if len(run) > 1:
                new[run[0].stmt] = _batched(module, run, batch, op_type, names)
                for op in run[1:]:
                    new[op.stmt] = cst.RemovalSentinel.REMOVE
                done |= {op.line for op in run}
            run = []
    missing = sorted(lines - done)
    if missing:
        raise Refused(f"line {missing[0]}: no unbatched send/recv statement with a partner "
                      "right before or after it to batch with")
    return module.visit(_Replace(new)).code
