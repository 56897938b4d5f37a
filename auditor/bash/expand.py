"""Word expansion as bash does it: parameters with their `${...}` operators, arrays, arithmetic,
command substitutions (kept symbolic), assignments; over the variables a walk keeps."""

from __future__ import annotations

import os
import re

from auditor.bash.checkout_copy import printed
from auditor.bash.lexer import ASSIGN, MAX_NESTING, NAME, Heredoc, Lexer, Part, Word
from auditor.bash.read_builtin import as_double_quoted
from auditor.bash.written import cat_document
from auditor.bash.values import (
    Field,
    FieldBuilder,
    OptionWords,
    Partial,
    Scalar,
    Symbolic,
    Var,
    concat,
    integer_arithmetic,
    join,
    segments,
    unknown_rest,
)

_PARAM = re.compile(r"(#?)([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])(?:\[([^\]]*)\])?(.*)", re.DOTALL)
_PARAM_OP = re.compile(r"(:?[-=+?])(.*)", re.DOTALL)
# The command substitutions that give the directory of the running script (`$0`) or of the file
# being read (`${BASH_SOURCE[0]}`), as launch scripts spell them to find the files they ship with:
# `$(dirname "$0")`, `$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" &>/dev/null && pwd)`,
# `$(dirname $(readlink -f $0))`, `$(realpath "$(dirname "$0")")`. Quotes are removed first.
_SELF = r"\$(?:0|\{0\}|\{?BASH_SOURCE(?:\[0\])?\}?)"
_RESOLVED = rf"(?:{_SELF}|\$\((?:realpath|readlink -[fe])(?: --)? {_SELF}\))"
_DIRNAME = rf"dirname(?: --)? {_RESOLVED}"
_SCRIPT_DIR = re.compile(
    rf"{_DIRNAME}|(?:realpath|readlink -[fe])(?: --)? \$\({_DIRNAME}\)"
    rf"|cd(?: --)? \$\({_DIRNAME}\)(?: &> ?/dev/null| > ?/dev/null(?: 2>&1)?)? *(?:&&|;) *pwd(?: -P)?")
# `$(basename $(dirname $0))`: the name of that directory (ROLL's examples/*/run_*_pipeline.sh
# pass it as their Hydra config directory), whichever directory the script is run from.
_SCRIPT_DIR_NAME = re.compile(rf"basename(?: --)? \$\((?:{_DIRNAME})\)")
# `$(dirname $REPO)`, `$(dirname -- "${EXAMPLE_PATH}")`: the parent of a path the script already
# knows (nanotron's examples/train_tiny_llama.sh: `REPO_PATH=$(dirname $EXAMPLE_PATH)`).
_DIRNAME_OF_VAR = re.compile(r"dirname(?: --)? \$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})")
# `$(cd "${SCRIPT_DIR}/../../.." && pwd)`: a directory written from a variable holding one known
# absolute path (NVIDIA-NeMo/RL's super_omni_launch.sh finds its checkout's root so). bash's `cd`
# resolves `..` by the path's text, and `pwd` prints that path, where the directory is there.
_CD_PWD_OF_VAR = re.compile(
    r"cd(?: --)? \$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})((?:/[A-Za-z0-9._-]*)*)"
    r"(?: &>/dev/null| >/dev/null(?: 2>&1)?)? *&& *pwd(?: -L)?")
# `$(realpath "$(bash "${CODE_DIR}/tools/code_snapshot.sh" "${EXP_NAME}")")`: a tool of the
# checkout, at a path under a variable holding one known absolute path, run with bash and its
# arguments (no redirection), its output resolved or not (`_checkout_copy`).
_RESOLVED_OUTPUT = re.compile(r"(?:realpath|readlink -[fe])(?: --)? \$\((.*)\)")
_BASH_TOOL_OF_VAR = re.compile(
    r"bash \$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})((?:/[A-Za-z0-9._-]+)+) ([^()`;&|<>]+)")
_VAR_WORD = re.compile(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})")
# `pwd`, $(pwd), $(pwd -L): the directory the script is run from.
_PWD = re.compile(r"(?:`|\$\()\s*pwd(?:\s+-[LP])?\s*(?:`|\))")


# `$(seq LAST)`, `$(seq FIRST LAST)`, `$(seq FIRST INCR LAST)` on integer literals: known text
# (slime's `--sglang-cuda-graph-bs 1 2 4 8 $(seq 16 8 256)`), at most this many numbers.
_SEQ = re.compile(r"\s*seq((?:\s+-?[0-9]+){1,3})\s*")
SEQ_MOST = 4096


def _seq(command: str) -> str | None:
    """What `$(seq ...)` gives for integer literals, one number a line; None for any other command."""
    m = _SEQ.fullmatch(command)
    if m is None:
        return None
    numbers = [int(n) for n in m.group(1).split()]
    first, step, last = (1, 1, numbers[0]) if len(numbers) == 1 else (
        (numbers[0], 1, numbers[1]) if len(numbers) == 2 else tuple(numbers))
    if step == 0 or (last - first) // step + 1 > SEQ_MOST:
        return None
    # bash drops a command substitution's trailing newlines
    return "\n".join(str(n) for n in range(first, last + (1 if step > 0 else -1), step))


def _trailing_newlines_dropped(value: str | Symbolic) -> str | Symbolic:
    """A command substitution's output as bash gives it: without its trailing newlines."""
    if not isinstance(value, Symbolic):
        return value.rstrip("\n")
    pieces = list(segments(value))
    if not pieces[-1][1]:
        pieces[-1] = (pieces[-1][0].rstrip("\n"), False)
    return concat([Symbolic(text) if unknown else text for text, unknown in pieces])


def _document_line(word: Word) -> int:
    """The line a `NAME=$(cat <<EOF ...)` value's text begins on (0: any other value), so that a
    script read from it (`bash -lc "$NAME"`) is placed where its lines are written."""
    cmds = [p for p in word.parts if p.kind == "cmd"]
    if len(cmds) != 1 or cat_document(cmds[0].text) is None:
        return 0
    return cmds[0].line + _document_offset(cmds[0].text)


def _document_offset(command: str) -> int:
    """How many lines below the `$(` of `$(cat <<EOF ...)` the document's text begins."""
    return command.count("\n", 0, command.index("<<")) + 1


class Expander:
    """The variables of a script (assigned, inherited through `environ`, read) and the expansion
    of words against them."""

    def __init__(self, path: str, environ: dict[str, str]) -> None:
        self.path = path
        self.environ = environ  # what the script inherits from its caller
        self.vars: dict[str, Var] = {}
        self.referenced: set[str] = set()  # variables the script reads
        self.depth = 0
        self._lexer = Lexer("", path)
        self._taken: list[str] = []  # fallbacks taken in the expansion under way
        # in a test (`_testing`), the variables whose default the test itself spells out and takes
        # (`[ "${VERBOSE:-0}" = 1 ]`), not one an assignment stated before (`X=${X:-0}`)
        self._inline: list[str] = []
        self._testing = 0  # inside `expand_noting_caller`: a test reads an empty default as empty
        self.splitting = 0  # expanding text a builtin splits into words (`read`'s here-string)
        self.positional: list[Field] | None = None  # $1 $2 ... of a script read with its arguments
        self.reading = path  # the file being read: the script, or a file it sources
        # `pwd` and $PWD: the directory the job is launched from, taken to be the one this audit
        # runs in (its authors run it from where the audit is asked to look); None after a `cd`.
        self.cwd: str | None = os.getcwd()
        self.cwd_read: list[int] = []  # the lines that read it
        # Tools a checkout ships that print a directory holding a copy of its files (rules
        # [[checkout_copy]]: script, root, marks); set by the launch reader.
        self.checkout_copies: tuple[dict, ...] = ()
        self.copies: dict[str, str] = {}  # a new copy's directory, as printed: the root it copies
        # the `${X:?msg}` expanded with X unset or empty (bash exits there), and whether X is
        # surely so (the script set it empty) rather than the caller's (bash.walk `_required`)
        self.required: list[tuple[str, bool]] = []

    def assignment_value(self, word: Word) -> tuple[str, str | Symbolic | list[tuple[Scalar, int]]]:
        m = ASSIGN.match(word.raw)
        assert m is not None, "callers pass assignment words"
        name, index, append = m.group(1), m.group(2), m.group(3)
        first = word.parts[0]
        rest = [Part("lit", first.text[len(m.group(0)):], first.quoted, first.line)] + word.parts[1:]
        if any(p.kind == "array" for p in rest):
            elements: list[tuple[Scalar, int]] = [(f.value, f.line) for p in rest if p.kind == "array"
                                                  for w in p.elements for f in self.expand(w)]
            current = self.vars.get(name)
            if append and current is not None and isinstance(current.value, list):
                elements = current.value + elements
            return name, elements
        value = self._join_parts(rest, word.line)
        current = self.vars.get(name)
        if index is not None:
            return name, Symbolic(word.raw) if current is None else current.value
        if append and current is not None:
            if isinstance(current.value, list):
                return name, current.value + [(value, word.line)]
            return name, concat([current.value, value])
        return name, value

    def assign(self, word: Word, exported: bool) -> None:
        saved, self._taken = self._taken, []
        try:
            name, value = self.assignment_value(word)
            taken = tuple(dict.fromkeys(self._taken))
        finally:
            self._taken = saved
        current = self.vars.get(name)
        inherited = current.exported if current else name in self.environ
        # `COMMAND=${COMMAND:-}` of a set COMMAND keeps its value, and the line that set it
        same = re.fullmatch(rf'"?\$(?:{name}|\{{{name}(?::?[-=][^}}]*)?\}})"?', word.raw[len(name) + 1:])
        line = current.line if current is not None and same and value == current.value else word.line
        self.vars[name] = Var(value, line, exported or inherited, taken, _document_line(word))

    # -- expansion

    def expand(self, word: Word) -> list[Field]:
        builder = FieldBuilder()
        saved, self._taken = self._taken, []
        try:
            self._expand_parts(word.parts, builder, word.line)
            builder.end()
            taken = tuple(dict.fromkeys(self._taken))
        finally:
            self._taken = saved + self._taken
        if taken:
            for f in builder.fields:
                f.fallbacks = taken
        return builder.fields

    def expand_noting_caller(self, word: Word, names: list[str], defaulted: list[str] | None = None) -> list[Field]:
        """`expand` for a test, adding to `names` the variables an empty result rests on that the
        caller gives (`_caller_names`): `${X:-}`, or `$X` after `X=${X:-}`. That empty default
        states no value, only keeps `set -u` quiet: a test of it reads the caller's environment,
        as `[ -z "$X" ]` does (here it reads empty, the caller's names noted). `defaulted`: those
        read through a default the test itself spells out, text or empty (`${VERBOSE:-0}`; not `$X`
        after the script's own `X=${X:-0}`, a value it states), for a reader that must not rest a
        sure stop on the caller leaving the variable unset (bash.walk `_stops`)."""
        before, inline = len(self._taken), len(self._inline)
        self._testing += 1
        try:
            fields = self.expand(word)
        finally:
            self._testing -= 1
        if all(f.value == "" for f in fields):
            names += [n for n in self._caller_names(self._taken[before:]) if n not in names]
        if defaulted is not None:
            defaulted += [n for n in self._caller_names(self._inline[inline:]) if n not in defaulted]
        del self._inline[inline:]
        return fields

    def unseen_value(self, name: str) -> Symbolic | None:
        """What a test reads for `$name`, a variable the script never sets, where code it did not
        read ran before (bash.walk `Shell`): that code may have set it, so neither unset nor the
        caller's; None where no such code ran."""
        return None

    def _caller_names(self, names: list[str] | tuple[str, ...]) -> list[str]:
        """Of the variables whose empty fallback was taken, those the caller gives: not in the
        environment given, and never set by the script but through its own default (`X=${X:-}`);
        not `$1`..., the script's arguments (it is read run with none)."""
        return list(dict.fromkeys(n for n in names if not n.isdigit() and n not in self.environ and
                                  (n not in self.vars or n in self.vars[n].fallbacks)))

    def document_text(self, document: Heredoc, line: int) -> str | Symbolic | None:
        """A here-document's text as bash gives it: expanded as a double-quoted word where its
        delimiter is unquoted; None where it does not read as one word."""
        if not document.expands:
            return document.body
        words = [t for t in Lexer(as_double_quoted(document.body), self.path, line - 1).tokens()
                 if isinstance(t, Word)]
        return self._join_parts(words[0].parts, line) if len(words) == 1 else None

    def _join_parts(self, parts: list[Part], line: int) -> str | Symbolic:
        """Expansion without word splitting, as in an assignment's value."""
        builder = FieldBuilder()
        quoted = [Part(p.kind, p.text, True, p.line, p.src, p.elements) for p in parts]
        builder.text("", line)
        self._expand_parts(quoted, builder, line)
        builder.end()
        values = [f.value for f in builder.fields]
        return join(values) if len(values) != 1 else values[0]

    def _expand_parts(self, parts: list[Part], out: FieldBuilder, line: int) -> None:
        for k, part in enumerate(parts):
            if part.kind == "lit":
                out.text(part.text, part.line)
            elif part.kind == "cmd" and self.cwd is not None and _PWD.fullmatch(part.src):
                self.cwd_read.append(part.line)
                self._emit(self.cwd, part.line, part.quoted, out)
            elif part.kind == "cmd" and (numbers := _seq(part.text)) is not None:
                self._emit(numbers, part.line, part.quoted, out)
            elif part.kind == "cmd" and (document := cat_document(part.text)) is not None:
                text = self.document_text(document, part.line + 1)
                if text is None:
                    out.symbolic(part.src, part.line, unsplit=not part.quoted)
                else:
                    self._emit(_trailing_newlines_dropped(text), part.line + _document_offset(part.text),
                               part.quoted, out)
            elif part.kind == "cmd":
                where = self._script_dir(part.text)
                if where is None:
                    where = self._dirname_of_var(part.text)
                if where is None:
                    where = self._cd_pwd_of_var(part.text)
                if where is None:
                    where = self._checkout_copy(part.text)
                if where is None:
                    out.symbolic(part.src, part.line, unsplit=not part.quoted)
                else:
                    self._emit(where, part.line, part.quoted, out)
            elif part.kind == "arith":
                value = self._arith(part)
                if isinstance(value, str):
                    out.text(value, part.line)
                else:
                    out.symbolic(part.src, part.line, unsplit=False)
            elif part.kind == "array":  # `A=(...)` outside an assignment: bash refuses it
                out.text(f"({' '.join(w.raw for w in part.elements)})", part.line)
            else:
                self._expand_param(part, out, self._own_words(parts, k))

    def _own_words(self, parts: list[Part], k: int) -> bool:
        """Whether the expansion `parts[k]` gives words of its own where its text is split, now
        or later: outside a test, blanks or the word's ends on both sides, and unquoted or in a
        quoted text holding more (`EXTRA=(${X:-})`, `ARGS="--bf16 ${X:-}"`, `ARGS+=" ${X:-}"`,
        `bash -c "torchrun ... ${X:-}"`); not the whole of a quoted word or value (`"${X:-}"`,
        `OPTS=${X:-}`, read where it is expanded; but `read` splits its here-string, `splitting`)
        nor glued to other text (`"${HOME:-}/x"`)."""
        if self._testing:
            return False
        before, after = parts[k - 1] if k else None, parts[k + 1] if k + 1 < len(parts) else None
        if before is not None and not (before.kind == "lit" and (before.text[-1:].isspace() or
                                                                 (k == 1 and not before.text))):
            return False
        if after is not None and not (after.kind == "lit" and after.text[:1].isspace()):
            return False
        return bool(self.splitting) or not parts[k].quoted or any(p.text for j, p in enumerate(parts) if j != k)

    def _expand_param(self, part: Part, out: FieldBuilder, own: bool = False) -> None:
        value, line = self._param(part, own)
        if isinstance(value, Symbolic) and part.text in ("@", "*"):  # the caller's arguments: any number of words
            out.symbolic(value.text, line, unsplit=True)
            return
        # `"${ARR[@]}"` of an array not known (branches that disagree on it, one with the caller's
        # "$@"), or its unknown rest: any number of words, never glued to the word before
        if isinstance(value, Symbolic) and not isinstance(value, OptionWords) and part.text.endswith("[@]"):
            out.symbolic(value.text, line, unsplit=True)
            return
        if isinstance(value, list):
            at = part.quoted and not any(star in part.src for star in ("[*]", "$*", "{*"))
            for k, (element, element_line) in enumerate(value):
                if k and (at or not part.quoted):
                    out.end()
                elif k:
                    out.text(" ", element_line)
                if at and unknown_rest(element) and not isinstance(element, OptionWords):
                    out.symbolic(str(element), element_line, unsplit=True)
                    continue
                self._emit(element, element_line, part.quoted, out)
            return
        self._emit(value, line, part.quoted, out)

    @staticmethod
    def _emit(value: Scalar, line: int, quoted: bool, out: FieldBuilder) -> None:
        if isinstance(value, Partial):  # split the known text, keep only the unknown pieces unknown
            for text, unknown in value.segments:
                Expander._emit(Symbolic(text) if unknown else text, line, quoted, out)
                line += text.count("\n")  # the next piece starts that many lines further
        elif isinstance(value, Symbolic):
            out.symbolic(value.text, line, unsplit=not quoted, whole=value if isinstance(value, OptionWords) else None)
        elif quoted:
            out.text(str(value), line)
        else:
            out.split(str(value), line)

    def _param(self, part: Part, own: bool = False) -> tuple[Scalar | list[tuple[Scalar, int]], int]:
        """The value of one `$NAME` / `${...}` expansion and the line it was assigned on. Where it
        gives words of its own (`own`: see `_own_words`), an empty value resting only on the
        empty fallback of variables the caller gives (`${EXTRA_ARGS:-}`, or `$OPTS` after
        `OPTS=${EXTRA_ARGS:-}`) stands for what the caller may set there, unknown (`_callers_words`),
        as `$EXTRA_ARGS` unset does: that default states no value, only keeps `set -u` quiet. A
        default with text (`${EXTRA_ARGS:-"--bf16"}`) is the script's own statement."""
        unknown = Symbolic(part.src), part.line
        m = _PARAM.fullmatch(part.text)
        if m and self.positional is not None and m.group(2) in ("@", "*", "#") and not m.group(3):
            if m.group(2) == "#" or m.group(1):  # `$#`, `${#@}`: how many (unknown past a word that may split)
                return (unknown if any(f.unsplit for f in self.positional)
                        else (str(len(self.positional)), part.line))
            return ([(f.value, f.line) for f in self.positional], part.line) if not m.group(4) else unknown
        if not m or not (NAME.fullmatch(m.group(2)) or m.group(2).isdigit()) or self.depth >= MAX_NESTING:
            return unknown
        length, name, index, rest = m.groups()
        self.referenced.add(name)
        var = self.vars.get(name)
        if var is None and name.isdigit() and self.positional is not None and name != "0":
            if any(f.unsplit for f in self.positional[:int(name)]):
                return unknown  # past a word that may be several, $N is not known
            given = self.positional[int(name) - 1] if int(name) <= len(self.positional) else None
            var = Var(given.value if given else "", given.line if given else part.line, False)
        if var is None and name in self.environ:
            var = Var(self.environ[name], 0, True)
        if var is None and self._testing and (unseen := self.unseen_value(name)) is not None:
            var = Var(unseen, part.line, True)  # `source ./stage2.env; [ "${RUN_EVAL:-0}" = 1 ]`: not the caller's
        if var is None and name == "PWD" and self.cwd is not None:
            self.cwd_read.append(part.line)
            var = Var(self.cwd, part.line, True)
        value: Scalar | list[tuple[Scalar, int]] | None = None
        line = (var.starts or var.line) if var else part.line
        if var is not None:
            value = var.value
            self._taken += var.fallbacks
            if isinstance(value, list):
                if index in ("@", "*"):
                    if length:  # past an unknown rest (`unknown_rest`) the count is not known
                        return (str(len(value)), line) if not any(unknown_rest(v) for v, _ in value) else unknown
                    return (value, line) if not rest else unknown
                position = int(index) if index and index.isdigit() else 0 if index is None else None
                if position is None:
                    return unknown
                if any(unknown_rest(v) for v, _ in value[:position + 1]):
                    return unknown  # past an unknown number of elements: its index is not known
                value, line = value[position] if position < len(value) else ("", line)
            elif index not in (None, "0", "@", "*"):
                value = ""
        if length:
            return (str(len(value)), line) if isinstance(value, str) else unknown
        if not rest:
            if own and value == "" and var is not None and var.fallbacks:
                return self._callers_words(list(var.fallbacks), value, part.line)
            return (value, line) if value is not None else unknown
        op_match = _PARAM_OP.fullmatch(rest)
        # a value known in part (`export COMMAND="python ${X} ..."`) is surely set and not empty
        if not op_match or (isinstance(value, Symbolic) and not any(t for t, u in segments(value) if not u)):
            return unknown
        op, argument = op_match.groups()
        is_set = value is not None and (value != "" or not op.startswith(":"))
        if op.endswith(("-", "=")):
            if is_set:
                return value, line
            self._taken.append(name)
            if self._testing:
                self._inline.append(name)
            fallback = self._fallback(argument, part)
            if op.endswith("="):
                self.vars[name] = Var(fallback, part.line, name in self.environ, (name,))
            elif own and fallback == "":
                return self._callers_words([name, *(var.fallbacks if var else ())], fallback, part.line)
            return fallback, part.line
        if op.endswith("+"):
            if value is None:
                return unknown
            return (self._fallback(argument, part), part.line) if is_set else ("", part.line)
        if not is_set and op.endswith("?"):  # bash prints the message and the shell exits
            self.required.append((name, var is not None and not var.fallbacks and not name.isdigit()))
        return (value, line) if is_set else unknown

    def _callers_words(self, names: list[str], value: str, line: int) -> tuple[Scalar, int]:
        """An empty value resting on empty fallbacks: unknown (`${NAME:-}` for each of `names`
        the caller gives, `_caller_names`), as it is where the caller sets them; else `value`."""
        callers = self._caller_names(names)
        return (Symbolic(" ".join(f"${{{n}:-}}" for n in callers)) if callers else value), line

    def _script_dir(self, command: str) -> str | None:
        """The directory a script-directory idiom gives (`_SCRIPT_DIR`; its name for
        `_SCRIPT_DIR_NAME`): that of the script for
        `$0`, of the file being read for `${BASH_SOURCE[0]}`; None for any other command, or a
        script that is no file here (`--command` text)."""
        # quotes removed, blanks as one space, none inside `$( ... )` (slime docs/serve.sh:3)
        text = re.sub(r"\$\( | \)", lambda m: m.group().strip(), " ".join(re.sub(r"[\"']", "", command).split()))
        name_only = _SCRIPT_DIR_NAME.fullmatch(text) is not None
        if _SCRIPT_DIR.fullmatch(text) is None and not name_only:
            return None
        path = self.reading if "BASH_SOURCE" in text else self.path
        if not os.path.isfile(path):
            return None
        where = os.path.dirname(os.path.abspath(path))
        return os.path.basename(where) if name_only else where

    def _known_path(self, name: str) -> str | None:
        """The one path a variable holds; None where it is unknown, empty or several words."""
        self.referenced.add(name)
        var = self.vars.get(name)
        value = var.value if var is not None else self.environ.get(name)
        if not isinstance(value, str) or not value or any(c.isspace() for c in value):
            return None
        return value

    def _cd_pwd_of_var(self, command: str) -> str | None:
        """`cd $NAME/rel && pwd` of a variable holding one known absolute path: that path with
        `rel` joined and `..` resolved by its text, as bash's `cd` does, where that directory is
        here; None for anything else."""
        m = _CD_PWD_OF_VAR.fullmatch(" ".join(re.sub(r"[\"']", "", command).split()))
        if m is None:
            return None
        value = self._known_path(m.group(1) or m.group(2))
        if value is None or not os.path.isabs(value):
            return None  # relative: from a directory the substitution's shell may not be in
        where = os.path.normpath(value + m.group(3))
        return where if os.path.isdir(where) else None  # not here: whether `cd` fails is not known

    def _checkout_copy(self, command: str) -> str | None:
        """`bash $ROOT/tools/code_snapshot.sh NAME` (resolved or not) of a tool the rules know
        ([[checkout_copy]]): the directory it prints, a new copy of its checkout recorded in
        `copies` (a relative file opened there is the checkout's), or a kept one read as it is;
        None where that is not known (bash.checkout_copy.printed)."""
        text = " ".join(re.sub(r"[\"']", "", command).split())
        resolved = _RESOLVED_OUTPUT.fullmatch(text)
        m = _BASH_TOOL_OF_VAR.fullmatch(resolved.group(1) if resolved else text)
        if m is None or not self.checkout_copies:
            return None
        value = self._known_path(m.group(1) or m.group(2))
        if value is None or not os.path.isabs(value):
            return None
        tool = os.path.normpath(value + m.group(3))
        first = m.group(4).split()[0]
        ref = _VAR_WORD.fullmatch(first)
        name = (self._known_path(ref.group(1) or ref.group(2)) if ref else None if "$" in first else first)
        for copy in self.checkout_copies:
            found = printed(copy, tool, name, self._tool_env(copy["folder_var"]), resolved is not None)
            if found is not None:
                if found[1] is not None:
                    self.copies[found[0]] = found[1]
                return found[0]
        return None

    def _tool_env(self, name: str) -> str | None:
        """The value a program the script runs sees of `name`: the script's where exported, else
        the environment's; "" where unset (a variable the script does not export); None where it
        is not known statically."""
        self.referenced.add(name)
        var = self.vars.get(name)
        if var is not None and not var.exported:
            return ""
        value = var.value if var is not None else self.environ.get(name, "")
        return value if isinstance(value, str) else None

    def _dirname_of_var(self, command: str) -> str | None:
        """`dirname $NAME` of a variable holding one known path, as coreutils' dirname gives it
        (trailing slashes dropped; `.` for a bare name); None for anything else."""
        m = _DIRNAME_OF_VAR.fullmatch(" ".join(re.sub(r"[\"']", "", command).split()))
        if m is None:
            return None
        value = self._known_path(m.group(1) or m.group(2))
        if value is None:
            return None  # unknown, empty or split into several words: not one path
        trimmed = value.rstrip("/") or "/"
        head = trimmed.rpartition("/")[0] if "/" in trimmed else "."
        return head.rstrip("/") or "/"

    def _fallback(self, text: str, part: Part) -> str | Symbolic:
        self.depth += 1
        try:
            parts = self._lexer.fragment(text, part.line)
            return self._join_parts(parts, part.line)
        finally:
            self.depth -= 1

    def _arith(self, part: Part) -> str | None:
        expression = self._fallback(part.text, part)
        if isinstance(expression, Symbolic) or len(expression) > 200:
            return None
        unresolved = False

        def lookup(m: re.Match[str]) -> str:
            nonlocal unresolved
            var = self.vars.get(m.group(0))
            self.referenced.add(m.group(0))
            value = var.value if var else self.environ.get(m.group(0))
            if isinstance(value, str) and re.fullmatch(r"\s*-?[0-9]+\s*", value):
                return f"({value.strip()})"
            unresolved = True
            return "0"

        expression = re.sub(r"[A-Za-z_][A-Za-z0-9_]*", lookup, expression)
        if unresolved:
            return None
        result = integer_arithmetic(expression)
        return None if result is None else str(result)
