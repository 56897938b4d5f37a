"""The tree-sitter-bash front end of the spike in bench_bash_frontend.py: tree-sitter-bash's
syntax tree converted into auditor.bash's nodes (`auditor.bash.parser`) and words
(`auditor.bash.lexer`), the shape `auditor.bash.walk.Shell` walks; and the input that crashes it.
"""

from __future__ import annotations

import subprocess
import sys

from auditor.bash.lexer import MAX_NESTING, Part, Word
from auditor.bash.parser import AndOr, Branches, Cmd, Function, CommandGroup, ShellLoop, Node, Pipeline
from auditor.errors import InputError
from auditor.findings import Finding

try:
    import tree_sitter
    import tree_sitter_bash
except ImportError:  # the spike is optional: bench_bash_frontend.py says what is missing
    tree_sitter = None

Comments = list[tuple[int, str]]  # (line, text from `#`), as `Lexer.comments`

_WORDLIKE = {"word", "string", "raw_string", "ansi_c_string", "translated_string", "simple_expansion",
             "expansion", "command_substitution", "arithmetic_expansion", "concatenation", "number",
             "variable_name", "special_variable_name", "extglob_pattern", "test_operator", "regex",
             "brace_expression", "process_substitution"}
_SKIP = {"comment", "file_redirect", "heredoc_redirect", "herestring_redirect", "heredoc_body"}
_CLOSERS = {('"', "string"): "unterminated double quote", ("`", "command_substitution"): "unterminated backquote",
            (")", "command_substitution"): "unterminated $(", (")", "array"): "unterminated array (",
            ("}", "expansion"): "unterminated ${"}
_OPENERS = [("'", "unterminated single quote"), ('"', "unterminated double quote"), ("`", "unterminated backquote"),
            ("${", "unterminated ${"), ("$(", "unterminated $(")]
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "e": "\x1b",
            "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


class TreeSitterFrontEnd:
    """Converts tree-sitter-bash's tree into auditor.bash's nodes; what the grammar parses that
    ours has no node for is counted in `unhandled` (by node type)."""

    def __init__(self) -> None:
        self.parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
        self.unhandled: dict[str, int] = {}

    def __call__(self, text: str, path: str, diagnostics: list[Finding],
                 line_base: int = 0) -> tuple[list[Node], Comments]:
        self.src = text.encode()
        self.path, self.diagnostics, self.base = path, diagnostics, line_base
        self._starts: dict[int, int] = {}  # byte span of each Word made, by id, for `_adjacent`
        self._ends: dict[int, int] = {}
        root = self.parser.parse(self.src).root_node
        self.depth = 0
        if root.has_error:
            self._unterminated(root)
        comments: Comments = []
        self._comments(root, comments)
        return self._statements(root.children), comments

    # helpers

    def _line(self, node) -> int:
        return node.start_point[0] + 1 + self.base

    def _end_line(self, node) -> int:
        row, col = node.end_point
        return row + 1 + self.base - (col == 0 and row > node.start_point[0])

    def _text(self, node) -> str:
        return self.src[node.start_byte:node.end_byte].decode(errors="replace")

    def _comments(self, node, out: Comments) -> None:
        if node.type == "comment":
            out.append((self._line(node), self._text(node)))
        elif node.type not in ("array", "heredoc_body"):
            for child in node.children:
                self._comments(child, out)

    def _unterminated(self, node) -> None:
        """Fail closed as ours does: an unterminated quote or expansion refuses the script."""
        for child in node.children:
            cause = None
            if child.is_missing and child.parent is not None:
                cause = _CLOSERS.get((child.type, child.parent.type))
                at = child.parent
            elif child.type == "ERROR":
                text = self._text(child)
                cause = next((why for opener, why in _OPENERS if text.startswith(opener)), None)
                at = child
            if cause:
                raise InputError(self.path, cause, self._line(at))
            if child.has_error:
                self._unterminated(child)

    def _error(self, node) -> None:
        what = "missing `" + node.type + "`" if node.is_missing else f"cannot read `{self._text(node)[:20]}`"
        self.diagnostics.append(Finding(
            "launch.syntax", "warning", f"bash syntax error: {what}; bash stops here, read on as best as possible",
            fix="run `bash -n` on the script", where=f"{self.path}:{self._line(node)}"))

    # statements

    def _statements(self, children) -> list[Node]:
        out: list[Node] = []
        for child in children:
            if child.is_missing or child.type == "ERROR":
                self._error(child)
                out += self._statements(child.children)  # read on, as ours does after a syntax error
            elif child.is_named and child.type not in _SKIP:
                node = self._statement(child)
                if node is not None:
                    out.append(node)
        return out

    def _statement(self, node) -> Node | None:
        self.depth += 1
        try:
            if self.depth > MAX_NESTING:
                raise InputError(self.path, f"commands nested more than {MAX_NESTING} levels deep", self._line(node))
            return self._convert(node)
        finally:
            self.depth -= 1

    def _convert(self, node) -> Node | None:
        kind = node.type
        if kind == "command":
            return self._command(node)
        if kind in ("variable_assignment", "variable_assignments", "declaration_command", "unset_command",
                    "test_command"):
            words = [self._word(c) for c in ([node] if kind == "variable_assignment" else self._flat(node))]
            if kind == "test_command":
                words = self._adjacent(words)
            line = self._line(node)
            return Cmd(words, words[0].line if words else line, max((w.end_line for w in words), default=line))
        if kind == "redirected_statement":
            body = node.child_by_field_name("body")
            if body is None:
                return Cmd([], self._line(node), self._line(node))
            return self._statement(body)
        if kind == "list":
            parts = self._and_or(node)
            return AndOr(parts[0][1], parts[1:])
        if kind == "pipeline":
            return Pipeline(self._statements(node.children))
        if kind == "negated_command":
            inner = self._statements(node.children)
            return inner[0] if inner else None
        if kind == "subshell":
            return CommandGroup(self._statements(node.children), subshell=True)
        if kind == "compound_statement":
            if node.children and node.children[0].type == "((":
                return Cmd([], self._line(node), self._line(node))
            return CommandGroup(self._statements(node.children), subshell=False)
        if kind == "if_statement":
            return self._if(node)
        if kind in ("for_statement", "select_statement", "c_style_for_statement"):
            var = node.child_by_field_name("variable")
            body = node.child_by_field_name("body")
            return ShellLoop(self._line(node), self._text(var) if var else None, [], self._body(body))
        if kind in ("while_statement", "until_statement"):
            body = node.child_by_field_name("body")
            condition = [c for c in node.children if c.is_named and c != body]
            return ShellLoop(self._line(node), None, self._statements(condition), self._body(body))
        if kind == "case_statement":
            return self._case(node)
        if kind == "function_definition":
            name = node.child_by_field_name("name")
            body = node.child_by_field_name("body")
            return Function(self._text(name) if name else "", self._statement(body) if body else Cmd([], 0, 0))
        if kind == "arithmetic_expansion":  # `((x++))` read as a statement
            return Cmd([], self._line(node), self._line(node))
        self.unhandled[kind] = self.unhandled.get(kind, 0) + 1
        return None

    def _body(self, node) -> list[Node]:
        if node is None:
            return []
        return self._statements(node.children)

    def _command(self, node) -> Cmd:
        words = []
        for child in node.children:
            if child.type in _SKIP or not child.is_named:
                continue
            if child.type == "command_name":
                child = child.children[0]
            words.append(self._word(child))
        line = words[0].line if words else self._line(node)
        return Cmd(words, line, max((w.end_line for w in words), default=line))

    def _and_or(self, node) -> list[tuple[str, Node]]:
        left, op, right = node.children[0], node.children[1], node.children[-1]
        first = self._and_or(left) if left.type == "list" else [("", self._statement(left))]
        return first + [(op.type, self._statement(right))]

    def _flat(self, node):
        """The word nodes of a test or declaration, in order (`[`, `-z`, `"$A"`, `]`)."""
        for child in node.children:
            if child.type in _WORDLIKE or child.type in ("variable_assignment", "subscript"):
                yield child
            elif child.is_named and child.type not in _SKIP:
                yield from self._flat(child)
            elif not child.is_named and child.type not in ("&&", "||", "(", ")", "<", ">", ";", "\n"):
                yield child

    def _adjacent(self, words: list[Word]) -> list[Word]:
        """Tokens with no blank between them as one word: the grammar reads `[ x = --cpu ]` as a
        decrement `--` of `cpu`, bash as the word `--cpu`."""
        out: list[Word] = []
        for w in words:
            if out and self._ends[id(out[-1])] == self._starts[id(w)]:
                prev = out.pop()
                merged = Word(prev.parts + w.parts, prev.line, w.end_line, prev.raw + w.raw)
                self._starts[id(merged)], self._ends[id(merged)] = self._starts[id(prev)], self._ends[id(w)]
                w = merged
            out.append(w)
        return out

    def _if(self, node) -> Branches:
        conditions: list[list[Node]] = []
        bodies: list[list[Node]] = []
        current: list = []
        exhaustive = False
        for child in node.children:
            if child.type in ("if", "elif"):
                current = []
            elif child.type == "then":
                conditions.append(self._statements(current))
                current = []
            elif child.type in ("elif_clause", "else_clause", "fi"):
                if current or len(bodies) < len(conditions):
                    bodies.append(self._statements(current))
                    current = []
                if child.type == "elif_clause":
                    sub = self._if(child)
                    conditions += sub.conditions
                    bodies += sub.bodies
                elif child.type == "else_clause":
                    exhaustive = True
                    conditions.append([])
                    bodies.append(self._statements(child.children))
            else:
                current.append(child)
        if len(bodies) < len(conditions):
            bodies.append(self._statements(current))
        return Branches(self._line(node), conditions, bodies, exhaustive)

    def _case(self, node) -> Branches:
        bodies, catch_all = [], False
        for item in node.children:
            if item.type != "case_item":
                continue
            values = {id(v) for v in item.children_by_field_name("value")}
            catch_all |= any(self._text(item.children[k]) == "*" for k in range(item.child_count)
                             if id(item.children[k]) in values or item.children[k].type == "extglob_pattern")
            split = next((k for k, c in enumerate(item.children) if c.type == ")"), -1)
            bodies.append(self._statements(item.children[split + 1:]))
        return Branches(self._line(node), [[] for _ in bodies], bodies, exhaustive=catch_all)

    # words

    def _word(self, node) -> Word:
        raw = self._text(node)
        if node.type == "variable_assignment":
            parts = self._assignment(node)
        else:
            parts = self._parts(node, quoted=False)
        word = Word(parts, self._line(node), self._end_line(node), raw)
        self._starts[id(word)], self._ends[id(word)] = node.start_byte, node.end_byte
        return word

    def _assignment(self, node) -> list[Part]:
        value = node.child_by_field_name("value")
        head_end = value.start_byte if value is not None else node.end_byte
        head = Part("lit", self.src[node.start_byte:head_end].decode(errors="replace"), False, self._line(node))
        if value is None:
            return [head]
        if value.type == "array":
            elements = [self._word(c) for c in value.children if c.is_named and c.type != "comment"]
            return [head, Part("array", "", False, self._line(value), elements=elements)]
        return [head] + self._parts(value, quoted=False)

    def _parts(self, node, quoted: bool) -> list[Part]:
        kind, line, text = node.type, self._line(node), self._text(node)
        if kind == "raw_string":
            return [Part("lit", text[1:-1], True, line)]
        if kind == "ansi_c_string":
            return [Part("lit", _ansi_c(text[2:-1]), True, line)]
        if kind in ("string", "translated_string"):
            inner = self._between(node, node.start_byte + (2 if kind == "translated_string" else 1),
                                  node.end_byte - 1, quoted=True)
            return inner or [Part("lit", "", True, line)]
        if kind == "simple_expansion":  # the grammar may start the node at a blank before the `$`
            lead = text.index("$")
            blank = [Part("lit", text[:lead], quoted, line)] if lead else []
            return blank + [Part("param", text[lead + 1:], quoted, line, text[lead:])]
        if kind == "expansion":
            return [Part("param", text[2:-1], quoted, line, text)]
        if kind == "command_substitution":
            inner = text[1:-1] if text.startswith("`") else text[2:-1]
            return [Part("cmd", inner, quoted, line, text)]
        if kind == "arithmetic_expansion":
            return [Part("arith", text[3:-2], quoted, line, text)]
        if kind == "concatenation":
            return self._between(node, node.start_byte, node.end_byte, quoted)
        if kind not in _WORDLIKE and node.is_named:
            self.unhandled[kind] = self.unhandled.get(kind, 0) + 1
        return [Part("lit", _unescape(text, quoted), quoted, line)] if text else []

    def _between(self, node, start: int, end: int, quoted: bool) -> list[Part]:
        """The parts of node's children from byte start to end; text between them is literal."""
        parts: list[Part] = []
        at = start
        for child in node.children:
            if child.start_byte < start or child.end_byte > end or child.type == "string_content":
                continue
            if child.start_byte > at:
                parts += self._literal(at, child.start_byte, quoted)
            if child.is_named:
                parts += self._parts(child, quoted)
            else:
                parts += self._literal(child.start_byte, child.end_byte, quoted)
            at = child.end_byte
        if end > at:
            parts += self._literal(at, end, quoted)
        return parts

    def _literal(self, start: int, end: int, quoted: bool) -> list[Part]:
        text = self.src[start:end].decode(errors="replace")
        line = self.src.count(b"\n", 0, start) + 1 + self.base
        value = _unescape(text, quoted)
        return [Part("lit", value, quoted, line)] if value or not quoted else []


def _unescape(text: str, quoted: bool) -> str:
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "\n":
                pass
            elif quoted and nxt not in '$`"\\':
                out.append("\\" + nxt)
            else:
                out.append(nxt)
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _ansi_c(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            out.append(_ESCAPES.get(text[i + 1], "\\" + text[i + 1]))
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


# `{` then a 4-byte UTF-8 character: tree-sitter-bash's parser reads past its tables and the
# process dies (SIGSEGV on Linux), https://github.com/tree-sitter/tree-sitter-bash/issues/337.
CRASHER = "{\U000fdcff@"


def crashes(text: str, runs: int = 10) -> int:
    """In how many of `runs` fresh processes parsing text with tree-sitter-bash kills the process
    (whether the read past the tables faults depends on the memory layout of the run)."""
    probe = ("import sys, tree_sitter, tree_sitter_bash; tree_sitter.Parser(tree_sitter.Language("
             "tree_sitter_bash.language())).parse(sys.stdin.buffer.read())")
    return sum(subprocess.run([sys.executable, "-c", probe], input=text.encode(), capture_output=True).returncode < 0
               for _ in range(runs))
