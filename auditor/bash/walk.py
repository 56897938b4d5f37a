"""Walks a parsed script in order as bash runs it: builtins, assignments, functions and the
branches of if/case/loops (a variable the branches disagree on becomes symbolic)."""

from __future__ import annotations

import fnmatch
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Literal

from auditor.bash.absent import surely_absent
from auditor.bash.choices import Choice, case_choice, if_choice
from auditor.bash.conditions import case_branch, condition, constant, outcome
from auditor.bash.errexit import errexit_change, failing_substitution
from auditor.bash.expand import Expander
from auditor.bash.image_home import Placement, image_file
from auditor.bash.lexer import ASSIGN, MAX_NESTING, NAME, Lexer, Part, Word
from auditor.bash.read_builtin import as_double_quoted, read_array, read_options, read_partial, read_text
from auditor.bash.written import output
from auditor.bash.textfile import read_bounded
from auditor.bash.parser import (
    AndOr,
    Branches,
    Cmd,
    Function,
    CommandGroup,
    ShellLoop,
    Node,
    ShellParser,
    Pipeline,
)
from auditor.bash.values import (
    EnvVar,
    Field,
    FieldBuilder,
    OptionWords,
    Partial,
    Scalar,
    Symbolic,
    Var,
    concat,
    join,
    segments,
    unknown_rest,
)
from auditor.errors import InputError
from auditor.findings import Finding


def join_workdir(base: str | None, directory: Scalar) -> str | None:
    """The directory `cd DIR` (or a runner's `--cwd DIR`) moves to from `base` (join_workdir's
    own kind of value); None where it is not known statically: DIR unknown, empty, `-` or `~...`
    (another directory's value), or a relative DIR from a directory not known."""
    if not isinstance(directory, str) or directory in ("", "-") or directory.startswith(("~", "-")):
        return None
    if os.path.isabs(directory):
        return os.path.normpath(directory)
    return None if base is None else os.path.normpath(os.path.join(base, directory))


# the most texts a value known in part is read as (Shell._partial_texts)
MAX_ALTERNATIVES = 64


class Shell(Expander, ABC):
    """Walks a parsed script in order, keeping variables as bash would; builtins, assignments and
    functions are run here, every other command goes to `external`."""

    def __init__(self, path: str, environ: dict[str, str], diagnostics: list[Finding]) -> None:
        super().__init__(path, environ)
        self.diagnostics = diagnostics
        self.functions: dict[str, Node] = {}
        # every name a function or alias took anywhere the walk went, whatever branch (so never a
        # builtin's fixed status for it: conditions.constant)
        self.redefined: set[str] = set()
        self.conditional = 0  # how many if/case/loop bodies the walk is inside
        self.looping = 0  # how many loop bodies: a later pass runs after an earlier pass's command
        # Where the commands run, relative to the launch directory (or absolute): "" where no `cd`
        # moved them, None after one whose directory is not known statically (join_workdir)
        self.workdir: str | None = ""
        # the directories `pushd` left to, the last on top (`popd` goes back there); None where
        # that is not known
        self.dirstack: list[str | None] | None = []
        self.opaque: list[tuple[int, str]] = []  # (line, what): code unseen here that may set anything
        self.clobbered: frozenset[str] = frozenset()
        self.sourced: list[str] = []  # the files `source`/`.` named, read or not
        self.image_read: set[str] = set()  # absolute paths read as the checkout's (`_in_image`)
        self.uncertain = 0  # how many branches that may not run (if/case/loop bodies, `a && b`) the walk is in
        self.subshells = 0  # how many subshells (`( ... )`, a pipeline's parts, `bash -c`) the walk is in
        # (uncertain, subshells) where the shell the walk is in began (`own_shell`): a `cd` of that
        # shell's own path of commands is sure there, whatever branch started the shell
        self._shell_base = (0, 0)
        # how many texts the walk reads again whose unknown pieces are the caller's `$1`, `$@` as
        # written (`bash -c "bash -c '... $1' a 3"`: the calling shell expanded them): no binding
        # of $1 $2 ... inside gives them their value, so none is known there (`rebound`)
        self.caller_text = 0
        self.exited: Exit | None = None  # the `exit` the script surely reaches: nothing after it runs
        # the stops past a training command that the caller's variables decide (`_stops`): the
        # walk goes on as the run where the caller gives them
        self.guards: tuple[CallerStop, ...] = ()
        self.tested: list[int] = []  # the lines of the decided tests (if/case/&&) around the walk
        # per decided test on `tested`: the variables the caller gives that it read through an
        # empty default (`[ -z "${X:-}" ]`), and through any default (`[ "${V:-0}" = 1 ]`): an
        # `exit` it leads to is no sure stop (`_exit`)
        self.caller_tested: list[tuple[list[str], list[str]]] = []
        self.operand_required: frozenset[str] = frozenset()  # programs failing on no operand (errexit)
        self.environment_set: tuple[str, ...] = ()  # variables a job's environment sets (fnmatch)
        self.errexit = 0  # the line of the `set -e` surely in force; 0: off, or not certain
        self._level = 0  # how many `run`s deep: 1 is the script's own list of commands
        self._listed: Node | None = None  # the node `run` runs as one of its list (see `_errexit_ends`)
        # the `run` level whose list is the script's own: 1, or deeper inside a `{ ...; }` or a
        # loop of known items listed there (bash runs those commands as its own: `_surely_runs`)
        self._own = 1
        # how many subshells deep that list is: a `( ... )` listed there is a list of its own whose
        # failing command ends it, and then the script (`set -e` holds in it: `_surely_runs`)
        self._own_subshells = 0
        # a `trap CMD ERR` / `EXIT` was set: a subshell's failure may end in CMD's `exit 0` and the
        # script go on (`( trap "exit 0" ERR; false )`), so none is decided (`_errexit_ends`)
        self._trapped = False
        self._before: Node | None = None  # the command before the one `run` runs in its list, if any
        # the files the script wrote whose text is known, by their path as expanded: (text, line, file)
        self.written: dict[str, tuple[str | Symbolic, int, str]] = {}
        # Undecided if/case statements (auditor.bash.choices): the branch a walk is told to take
        # (by key), and those that made a value unknown (by its text, `${cmd}`)
        self.forced: dict[str, int] = {}
        self.chosen_by: dict[str, set[Choice]] = {}
        # A string the branches of an undecided if/case disagree on, by the text of the unknown
        # value it became (`${pr_options}`): its value at each branch's end ("" where one leaves it
        # unset), or None where one is not known text or the name was merged again (`alternatives`)
        self.branch_values: dict[str, tuple[str, ...] | None] = {}
        # how many function calls deep the walk is: their `$1` is the call's, not known here, so
        # a test in them is no choice of the script's (a call may go one way, the next another)
        self.in_function = 0
        self.called: tuple[int, str] | None = None  # (line, name) of the outermost function call walked
        # Variables the script sets only where the caller left them empty or unset, read where a
        # test it could not decide leaves the caller's value (`_branches` `read`), and those that
        # hold words not known (`unknown_words`: a branch's or a loop's, a `read` of input not
        # known): any text
        self.callers_values: set[str] = set()
        # the text the command before this one in a pipeline writes, where it is known (`_piped`)
        self.piped: str | None = None
        self.in_pipe = False  # the command walked reads the output of the one before it in a pipeline

    @abstractmethod
    def external(self, fields: list[Field], inline: dict[str, EnvVar], cmd: Cmd,
                 siblings: list[Node], at: int) -> int:
        """A program the script runs (`fields` expanded, `inline` its `VAR=x` prefix); it leaves
        the shell's variables alone. `cmd` is `siblings[at]`; returns how many of the commands
        after it the reader takes as part of it (0 for a command inside a pipeline or `&&`)."""

    def trained(self) -> bool:
        """Whether the walk has met a training command so far (`_exit`)."""
        return False

    # -- walking

    def run(self, nodes: list[Node]) -> None:
        k = 0
        self._level += 1
        try:
            while k < len(nodes) and self.exited is None:
                node = nodes[k]
                self._before = nodes[k - 1] if k else None
                if isinstance(node, Cmd):
                    self._listed = node
                    self._errexit(node)
                    if self.exited is not None:
                        break
                    ends = self._errexit_ends(node)
                    before = dict(self.vars) if ends else {}
                    k += self._command(node, nodes, k)
                    if ends:
                        self._failed(node, before)
                else:
                    self._listed = node
                    self._node(node)
                k += 1
        finally:
            self._level -= 1

    def unseen_value(self, name: str) -> Symbolic | None:
        if not self.opaque or name.isdigit() or NAME.fullmatch(name) is None or not self._unset(name):
            return None
        line, what = self.opaque[-1]
        return Symbolic(f"${name}, which {what} at line {line} may set")

    def _unset(self, name: str) -> bool:
        """Unset as far as the script says: never set in it, not given by the audit's environment,
        and none of those a job's environment or bash itself sets (`environment_set`)."""
        return name not in self.vars and name not in self.environ and not any(
            fnmatch.fnmatchcase(name, p) for p in self.environment_set)

    def _errexit(self, cmd: Cmd) -> None:
        """`set -e` surely in force, and an assignment whose last command substitution surely
        fails (bash.errexit): the script ends there, as `exit 1` would. Only on the script's own
        list of commands, on the path the walk is certain of, where no unseen code ran."""
        words = cmd.words
        if not words or isinstance(cmd, _Evaluated):
            return
        if words[0].raw == "set":
            change = errexit_change([w.raw for w in words[1:]])
            certain = self._level == self._own and not (self.uncertain or self.subshells or self.conditional)
            if change is False:  # `set +e`, even on a path not certain: not surely in force
                self.errexit = 0
            elif change and certain:
                self.errexit = self.errexit or cmd.line
            return
        if not self._errexit_ends(cmd) or not all(ASSIGN.match(w.raw) for w in words):
            return
        last = [p for w in words for p in w.parts if p.kind == "cmd"][-1:]
        found = failing_substitution(last[0].text, self.operand_required, self._unset) if last else None
        if found is None:
            return
        program, names = found
        why = (f"`{program}` with no operand fails (unquoted, an unset variable is no word) and `set -e` "
               f"(line {self.errexit}) ends the script")
        self._stops(cmd.line, "1", [], why, tuple(dict.fromkeys(names)))

    def _required(self, before: int, line: int) -> bool:
        """A command at `line` expanded `${X:?msg}` of an X unset or empty (`required` past
        `before`): bash prints msg and the shell exits there, `set -e` or not. On the path the walk
        is certain of, a sure stop where the script left X empty; where X is the caller's, a check
        of the caller's environment: the walk goes on. Whether a stop was met."""
        found, self.required[before:] = self.required[before:], []
        if not found or self.uncertain or self.subshells or self.opaque:
            return False
        empty = [name for name, sure in found if sure]
        if empty:  # else the caller's: the walk goes on, X read where used as the caller's, not known
            self._stops(line, "1", [], f"`${{{empty[0]}:?}}` of an empty {empty[0]} makes bash exit")
        return self.exited is not None

    def _failed(self, cmd: Cmd, before: dict[str, Var]) -> None:
        """`cmd`, whose failing surely ends the script (`_errexit_ends`), surely fails: `false`, a
        test decided false (`[ -n "$X" ]`), or a function whose last command is such a list
        (`log() { [ -n "${VERBOSE:-}" ] && echo "$@"; }`, then `log starting`: bash returns the
        `[`'s 1, and `set -e` ends the script there). Where that rests on a caller's empty default
        the caller may give the variable: whether the script goes on is undecided (a finding the
        verdict names, `launch.may-stop`), and the walk goes on; else the script ends there. A
        function's `$1` ... `$#` `$@` are the call's words (`log() { [ -n "${1:-}" ]; }; log hi`
        goes on); where its body shifts them, or sets a variable its last command reads (walked
        with the script's `$1`, not the call's: `x=${1:-}`; `vars` `before` the call), the
        outcome is undecided and the walk goes on."""
        caller: list[str] = []
        head = cmd.words[0].raw if cmd.words else ""
        body = self.functions.get(head)
        if constant(cmd, self.redefined) is False:
            status: bool | None = False
        elif head in _FUNCTION_ONLY and not self.in_function and self.reading == self.path:
            status = False  # bash: "local: can only be used in a function", "can only `return' from ..."
        elif head in ("[", "[[", "test"):
            status = outcome(cmd, self._noting(caller, caller), self.redefined)
        elif isinstance(body, CommandGroup) and not body.subshell and body.body and not _runs(body.body, {"return"}):
            last = body.body[-1]
            given = None if any(map(_countless, cmd.words[1:])) else _arguments(
                [f for w in cmd.words[1:] for f in self.expand(w)])
            shifted = _shift_fails(last, body.body, given)
            if isinstance(last, Cmd) and constant(last, self.redefined) is False:
                status = False
            elif shifted is not None:
                status = not shifted
            elif _runs(body.body, {"shift", "set"}) or any(
                    self.vars.get(n) is not before.get(n) for n in _names_read([last])):
                return
            else:  # its $1 $2 ... $# $@ are the call's words, never the script's
                saved, self.positional = self.positional, [f for w in cmd.words[1:] for f in self.expand(w)]
                try:
                    status = outcome(last, self._noting(caller, caller), self.redefined)
                finally:
                    self.positional = saved
        else:
            return
        if status is False:
            code, outside = _FUNCTION_ONLY.get(head, ("1", ""))
            what = (f"`{' '.join(w.raw for w in cmd.words)}` returns {code}{outside} and `set -e` (line {self.errexit}) "
                    "ends the script")
            self._stops(cmd.line, code, caller, what)

    def _errexit_ends(self, cmd: Cmd) -> bool:
        """Whether `cmd` failing surely ends the script: `set -e` surely in force, `cmd` one of
        the script's own list of commands (not in `a || b`, `! a`, a pipeline or a function), on
        the path the walk is certain of, where no unseen code ran (it may have run `set +e`)."""
        return (bool(self.errexit) and self._level == self._own and self._listed is cmd
                and self.subshells == self._own_subshells and not (self.subshells and self._trapped)
                and not (self.uncertain or self.conditional or self.opaque))

    def _node(self, node: Node) -> None:
        if isinstance(node, Cmd):
            self._command(node, [node], 0)
        elif (isinstance(node, AndOr) and (default := _default_set([node.first], node.rest)) is not None
              and self._as_default(default)):
            pass
        elif isinstance(node, AndOr):
            self._node(node.first)
            caller: list[str] = []
            defaulted: list[str] = []
            status = outcome(node.first, self._noting(caller, defaulted), self.redefined)
            if caller and not _guards(node):  # the caller's empty value decides it: no sure choice
                status = None
            for op, right in node.rest:
                if status is not None:  # the left side's status is certain: the right runs or not
                    if (op == "&&") == status:
                        with self._test_decided(_line_of(node.first), caller, defaulted):
                            self._node(right)
                        status = outcome(right, self._noting(caller, defaulted), self.redefined)
                    continue
                self._branches([[right]], exhaustive=False, block=False, read=_names_read([node.first]))
        elif isinstance(node, Pipeline) and len(node.commands) == 1:  # `! cmd` runs in this shell
            self._node(node.commands[0])
        elif isinstance(node, Pipeline):
            for k, command in enumerate(node.commands):
                saved, texts = dict(self.vars), dict(self.branch_values)
                before = node.commands[k - 1] if k else None
                self.piped = self._piped(before) if isinstance(before, Cmd) and isinstance(command, Cmd) else None
                self.in_pipe = k > 0
                with self.own_shell():
                    self._node(command)
                self.vars, self.branch_values, self.piped, self.in_pipe = saved, texts, None, False
        elif isinstance(node, Branches):
            self._if_or_case(node)
        elif isinstance(node, ShellLoop):
            self.looping += 1
            try:
                self._loop(node)
            finally:
                self.looping -= 1
        elif isinstance(node, CommandGroup):
            saved, texts, functions = dict(self.vars), dict(self.branch_values), dict(self.functions)
            if node.subshell:  # `set -e` holds in it: a command that fails there ends it, then the script
                # (not a job run with `&`: bash never checks its status, `wait` with no job returns 0)
                with self.own_shell(), self._own_list(
                        not node.background and self._listed is node and self._level == self._own):
                    self.run(node.body)
            else:
                with self._surely_runs(node):
                    self.run(node.body)
            if node.subshell:  # its variables, functions and the texts its ifs left them end with it
                self.vars, self.branch_values, self.functions = saved, texts, functions
        elif isinstance(node, Function):
            self.functions[node.name] = node.body
            self.redefined.add(node.name)

    @contextmanager
    def own_shell(self) -> Iterator[None]:
        """Walk a subshell or a child shell (`( ... )`, a pipeline's part, `bash -c`): a `cd` on
        its own path of commands moves the commands after it there, wherever that shell was
        started from (`srun ... bash -c "cd /opt/x && python y.py"` in a loop body runs y.py in
        /opt/x), and never the commands after it in this shell."""
        saved = self.workdir, self.cwd, self._shell_base, self.dirstack
        self.subshells += 1
        self._shell_base = (self.uncertain, self.subshells)
        try:
            yield
        finally:
            self.subshells -= 1
            self.workdir, self.cwd, self._shell_base, self.dirstack = saved

    def _loop(self, node: ShellLoop) -> None:
        """A `for`/`while`/`until` loop: unrolled over known items, else its body read once."""
        items = self._loop_items(node)
        if items is not None and node.var:
            self._unrolled(node, node.var, items)
            return
        if node.var:
            self.vars[node.var] = Var(Symbolic(f"${node.var}"), node.line, False)
            if node.items is not None and any(self.unknown_words(f.value, self.vars)
                                              for w in node.items for f in self.expand(w)):
                self.callers_values.add(node.var)  # `for a in $EXTRA`: each of the caller's words
        self.run(node.condition)
        if node.var is None and condition(node.condition, self._noting([]), self.redefined) is node.until:
            return  # `while [[ "$X" == */ ]]` of an X that does not end in `/`: no pass runs
        self._branches([node.body], exhaustive=False, passes=node.line)

    def _loop_items(self, node: ShellLoop) -> list[Field] | None:
        """The values a `for VAR in WORDS` loop surely takes, in order: every word known, at most
        MAX_ITERATIONS of them, and no `break`/`continue` in its body that could skip the rest;
        else None (the body is read once, its variable unknown)."""
        if node.items is None or _may_leave(node.body):
            return None
        fields = [f for w in node.items for f in self.expand(w)]
        if len(fields) > MAX_ITERATIONS or any(not isinstance(f.value, str) for f in fields):
            return None
        return fields

    def _unrolled(self, node: ShellLoop, var: str, items: list[Field]) -> None:
        """Run the body once per item, as bash does: each iteration sees what the ones before it set."""
        exported = self.vars[var].exported if var in self.vars else False
        with self._surely_runs(node):
            for item in items:
                if self.exited is not None:
                    return
                self.vars[var] = Var(item.value, item.line, exported)
                self.run(node.body)

    @contextmanager
    def _surely_runs(self, node: Node) -> Iterator[None]:
        """Walk the body of `node`, a `{ ...; }` or a pass of a loop of known items: where `node`
        is one of the script's own list of commands, so is each command of its body (`set -e`
        then `for i in 1; do local X=$i; done` ends the script as a bare `local` would)."""
        with self._own_list(self._listed is node and self._level == self._own):
            yield

    @contextmanager
    def _own_list(self, listed: bool) -> Iterator[None]:
        """Where `listed` (the node walked is one of the script's own list of commands, and
        surely runs its body), the body's commands are the script's own too (`_errexit_ends`)."""
        own, subshells = self._own, self._own_subshells
        if listed:
            self._own, self._own_subshells = self._level + 1, self.subshells
        try:
            yield
        finally:
            self._own, self._own_subshells = own, subshells

    def _if_or_case(self, node: Branches) -> None:
        """Run the branch the values tested decide, or every branch still possible, merged."""
        caller: list[str] = []
        defaulted: list[str] = []  # read through any default: an exit it leads to rests on it
        listed = self._listed is node and self._level == self._own
        if (node.subject is None and len(node.conditions) == len(node.bodies) == 1 and len(node.bodies[0]) == 1
                and (default := _default_set(node.conditions[0], [("&&", node.bodies[0][0])])) is not None
                and self._as_default(default)):
            return
        if node.subject is not None:
            taken = None if node.fallthrough else case_branch(node.subject, node.patterns, self._noting(caller, defaulted))
            body = node.bodies[taken] if taken is not None and taken < len(node.bodies) else []
            if taken is not None and caller and not _exits(body):  # see `_undecided`
                taken = None
            if taken is not None:
                self._decided(node.line, node.bodies[taken] if taken < len(node.bodies) else [], caller, defaulted,
                              listed)
            elif not self._chosen(self._choice(case_choice, node), node.bodies, caller):
                self._branches(node.bodies, node.exhaustive, choice=self._choice(case_choice, node),
                               read=frozenset(caller))
            return
        first = None  # the first condition the caller's empty value decided
        for k, (cond, body) in enumerate(zip(node.conditions, node.bodies)):
            decided = condition(cond, self._noting(caller, defaulted), self.redefined) if cond else True
            first = k if first is None and caller else first
            if decided is None or (decided and first is not None and not _exits(body)):
                self._undecided(node, k if first is None else first, caller)
                return
            self.run(cond)
            if decided:
                self._decided(node.line, body, caller, defaulted, listed)
                return
        if first is not None:  # no branch runs only where the caller leaves its variables empty
            self._undecided(node, first, caller)

    def _as_default(self, default: tuple[str, list[Node]]) -> bool:
        """Read `[ -z "${X:-}" ] && X=LITERAL` (or its `if`) as `X=${X:-LITERAL}` is read, where
        the script has not set X (the caller's): the text set, its fallbacks record naming X (the
        header says it came from a default). False where the script set X: the test decides."""
        name, body = default
        if name in self.vars or name in self.environ:
            return False
        self.run(body)
        var = self.vars.get(name)
        if var is not None and not isinstance(var.value, list):
            self.vars[name] = Var(var.value, var.line, var.exported, tuple(dict.fromkeys((name, *var.fallbacks))))
        return True

    def _undecided(self, node: Branches, k: int, caller: list[str]) -> None:
        """The branches of an if from its `k`th condition on, none of them sure: the test is not
        decided, or decided only through the empty default of a variable the caller gives (`[ -n
        "${X:-}" ]`): the caller may give it (`then ARGS="$ARGS $X"`: its words), so the branch
        an empty value takes is no sure choice, as for `[ -n "$X" ]`. A guard that exits where the
        caller left it empty is a check of the caller's environment (`_exit`), read as decided."""
        rest = [c + b for c, b in zip(node.conditions[k:], node.bodies[k:])]
        if not self._chosen(self._choice(if_choice, node, k), rest, caller):
            self._branches(rest, node.exhaustive, choice=self._choice(if_choice, node, k),
                           read=_names_read([n for c in node.conditions[k:] for n in c]))

    def _choice(self, make: Callable[..., Choice | None], *args: object) -> Choice | None:
        """The choice an undecided if/case makes (auditor.bash.choices), outside functions."""
        return None if self.in_function else make(*args)

    def _chosen(self, choice: Choice | None, bodies: list[list[Node]], caller: list[str]) -> bool:
        """Take the branch this walk was told to take at `choice` (`forced`; past the last
        branch: none runs); False where it was told nothing."""
        taken = None if choice is None else self.forced.get(choice.key)
        if choice is None or taken is None:
            return False
        self._decided(choice.line, bodies[taken] if taken < len(bodies) else [], caller)
        return True

    def _noting(self, caller: list[str], defaulted: list[str] | None = None) -> Callable[[Word], list[Field]]:
        """`expand` for a test, noting in `caller` what it reads of the caller's environment
        through an empty default, in `defaulted` through any default (`expand_noting_caller`)."""
        return lambda word: self.expand_noting_caller(word, caller, defaulted)

    def _decided(self, line: int, body: list[Node], caller: list[str], defaulted: list[str] | None = None,
                 listed: bool = False) -> None:
        """Run the branch a test at `line` surely takes. Where the if/case is `listed` on the
        script's own list of commands and the test read nothing the caller gives, so is each
        command of the branch (`set -e`, then `case $M in a) { local X; } ;; esac` of a set M ends
        the script: `_errexit_ends`)."""
        with self._test_decided(line, caller, defaulted), self._own_list(listed and not caller and not defaulted):
            self.run(body)

    @contextmanager
    def _test_decided(self, line: int, caller: list[str], defaulted: list[str] | None = None) -> Iterator[None]:
        """The walk inside what the test at `line` surely runs (`caller`, and `defaulted`, the
        caller's variables it read through a default with text: see `caller_tested`). A
        caller's variable the test read through its empty default and the branch sets empty
        (`if [ -z "${X:-}" ]; then X=""; fi`) is that empty default still (`X=${X:-}`): where it
        gives words, the caller's (bash.expand `_param`)."""
        self.tested.append(line)
        self.caller_tested.append((caller, defaulted or []))
        before = {name: self.vars.get(name) for name in caller}
        try:
            yield
        finally:
            self.tested.pop()
            self.caller_tested.pop()
        for name, was in before.items():
            now = self.vars.get(name)
            if now is not None and now is not was and now.value == "":
                self.vars[name] = Var("", now.line, now.exported, (name,))

    def _branches(self, bodies: list[list[Node]], exhaustive: bool, block: bool = True, passes: int = 0,
                  choice: Choice | None = None, read: frozenset[str] = frozenset()) -> None:
        """Run each branch from the same state; a variable the branches disagree on becomes symbolic,
        an array the words they all begin with and then an unknown one (`_array_merged`).

        `block`: an if/case/loop body (counted in `conditional`), not the right side of
        `cd dir && torchrun ...`. `passes`: the line of a loop whose body, read once here, runs an
        unknown number of times. `choice`: the if/case the branches are, noted in `chosen_by` for
        each value it leaves unknown. `read`: the variables the undecided test reads; one the script
        has not set nor the audit's environment given, which a branch sets and another way leaves
        unset, holds the caller's value where it is left (`if [ -z "$X" ]; then X=--bf16; fi`, `[ -z
        "$X" ] && X=2`: not empty there, the test says so): unknown, any text (`callers_values`).
        """
        before = dict(self.vars)
        ends = []
        self.conditional += block
        self.uncertain += 1
        try:
            for body in bodies:
                self.vars = dict(before)
                self.run(body)
                ends.append(self.vars)
        finally:
            self.conditional -= block
            self.uncertain -= 1
        if not exhaustive:
            ends.append(before)
        merged: dict[str, Var] = {}
        for name in set().union(*ends):
            seen = [end.get(name) for end in ends]
            known = [v for v in seen if v is not None]
            if name in read and name not in before and name not in self.environ and None in seen:
                merged[name] = Var(Symbolic(f"${{{name}}}"), max(v.line for v in known),
                                   any(v.exported for v in known))
                self.callers_values.add(name)
                self.branch_values[f"${{{name}}}"] = None  # the caller's text among them: not known
                continue
            array = _array_merged(name, seen, passes) or _appended(seen, passes)
            if len(known) == len(seen) and all(v.value == known[0].value for v in known):
                merged[name] = Var(known[0].value, max(v.line for v in known), any(v.exported for v in known),
                                   _caller_fallbacks(known))
                continue
            if any(self.unknown_words(v.value, before) for v in known):
                self.callers_values.add(name)
            if array is not None:
                merged[name] = Var(array, max(v.line for v in known), any(v.exported for v in known))
                if choice is not None and isinstance(array, list):
                    self.chosen_by.setdefault(f"${{{name}[@]}}", set()).add(choice)
                if passes and array is known[0].value:
                    self.diagnostics.append(Finding(
                        "launch.loop-once", "info",
                        f"the loop at line {passes} runs an unknown number of times: `{name}`, which "
                        "each pass appends to, is read after one pass (with none, what it appends would not run)",
                        fix="give the loop's values in the script, or the command with --command",
                        where=f"{self.reading}:{passes}",
                        detail={"array" if isinstance(array, list) else "string": name, "line": passes,
                                "options": _passes_add_options(array, seen[-1])}))
            else:
                text = f"${{{name}}}"
                ways = self.alternatives([v.value if v is not None else "" for v in seen])
                extended = _extended(name, seen) if ways is None and not passes else None
                if extended is not None and extended[1]:  # `ARGS="$ARGS --pp=${PP}"`: the caller's words
                    self.callers_values.add(name)
                merged[name] = Var(extended[0] if extended is not None else Symbolic(text),
                                   max(v.line for v in known), any(v.exported for v in known))
                prior = self.branch_values.get(text, ways)
                # merged again: its texts now, where they hold every text it was (an if that
                # appends to it, `EXTRA_ARGS+=" --pixel-shuffle"`, or leaves it): a reading of an
                # earlier use still sees each text it may be
                self.branch_values[text] = ways if prior == ways or (
                    ways is not None and prior is not None and set(prior) <= set(ways)) else None
                if choice is not None:
                    self.chosen_by.setdefault(f"${{{name}}}", set()).add(choice)
        self.vars = merged

    def unknown_words(self, value: Scalar | list[tuple[Scalar, int]], before: dict[str, Var]) -> bool:
        """Whether a value holds words of text not known here, standing on their own (blanks or
        its ends on both sides): a command's output (`$(...)`), or a variable the script had not
        set (`before`: the caller's, `ARGS="$ARGS $X"` under `[ -n "$X" ]`) or that holds any
        words (`callers_values`). A value merged from branches where one holds them holds them:
        where it splits it may add any argument (config.flags `wholly_unknown`), as `$X` does."""
        for element in ([e for e, _ in value] if isinstance(value, list) else [value]):
            pieces = segments(element)
            for k, (text, unknown) in enumerate(pieces):
                if (not unknown or (k and not pieces[k - 1][0][-1:].isspace())
                        or (k + 1 < len(pieces) and not pieces[k + 1][0][:1].isspace())):
                    continue
                named = _READ.match(text)
                if text.startswith(("$(", "`")) or (named is not None and not named.group(1).isdigit() and (
                        named.group(1) in self.callers_values
                        or (named.group(1) not in before and named.group(1) not in self.environ))):
                    return True
        return False

    def alternatives(self, values: list[str | Symbolic | list[tuple[Scalar, int]]]) -> tuple[str, ...] | None:
        """Every text the values may be, a value merged before (`${NAME}` of `branch_values`)
        standing for each of its own; None where one is an array or holds text not known."""
        out: list[str] = []
        for value in values:
            if isinstance(value, str):
                out.append(value)
            elif isinstance(value, Partial):
                texts = self._partial_texts(value)
                if texts is None:
                    return None
                out += texts
            elif isinstance(value, Symbolic) and self.branch_values.get(value.text):
                out += self.branch_values[value.text] or ()
            else:
                return None
        return tuple(dict.fromkeys(out))

    def _partial_texts(self, value: Partial) -> list[str] | None:
        """Every text a value known in part may be, where each unknown piece is a value merged
        before (`${EXTRA_ARGS} --pixel-shuffle` after an if that set EXTRA_ARGS: NVIDIA/Megatron-LM
        d98e8a64dd examples/multimodal/nvlm/run_text_generation_qwen20_72b_internvit_6b.sh:70-78);
        None where a piece is not such a value, or they are more than MAX_ALTERNATIVES."""
        texts = [""]
        for text, unknown in value.segments:
            ways = self.branch_values.get(text) if unknown else (text,)
            if not ways or len(texts) * len(ways) > MAX_ALTERNATIVES:
                return None
            texts = [t + w for t in texts for w in ways]
        return texts

    def _command(self, cmd: Cmd, siblings: list[Node], at: int) -> int:
        """Run one simple command; how many following siblings it took (see `external`)."""
        words = cmd.words
        if not words or words[0].raw == "[[":
            return 0
        k = 0
        while (not isinstance(cmd, _Evaluated) and k < len(words) and ASSIGN.match(words[k].raw)
               and words[k].parts[0].kind == "lit"):
            k += 1
        required = len(self.required)
        fields = cmd.fields if isinstance(cmd, _Evaluated) else [f for w in words[k:] for f in self.expand(w)]
        if not fields:
            for w in words[:k]:
                self.assign(w, exported=False)
        if self._required(required, cmd.line):
            return 0
        for op, _ in cmd.redirects:  # `exec {lock_fd}>FILE`: NAME holds a descriptor's number, not known
            if op.startswith("{"):
                name = op[1:op.index("}")]
                self.vars[name] = Var(Symbolic(f"${name}, a file descriptor opened at line {cmd.line}"), cmd.line, False)
        if not fields:
            return 0
        inline = {}
        for w in words[:k]:
            name, value = self.assignment_value(w)
            inline[name] = EnvVar(name, value if not isinstance(value, list) else join(value), w.line, "inline")
        head = fields[0].value
        if head == "alias":  # `alias true=false` (under `shopt -s expand_aliases`)
            self.redefined.update(str(f.value).split("=")[0] for f in fields[1:] if "=" in str(f.value))
        if head in ("export", "declare", "typeset", "local", "readonly"):
            self._declare(head, words[k + 1:])
            return 0
        if head == "unset":
            for f in fields[1:]:
                self._unset_word(f.value, cmd.line)
            return 0
        if head in ("source", ".") and len(fields) > 1:
            self._source(fields[1], cmd, fields[2:])
            return 0
        if head == "exit":
            self._exit(fields[1:], cmd)
            return 0
        if head == "eval" and not inline:
            self._eval(fields[1:], cmd)
            return 0
        if head == "trap" and any(not isinstance(f.value, str) or f.value.upper().removeprefix("SIG") in _ENDING
                                  for f in fields[2:]):
            self._trapped = True
        if head in ("cd", "pushd", "popd"):  # from here on `pwd` is not the launch directory
            self._chdir(str(head), fields[1:])
        if cmd.stdout is not None and head in ("printf", "echo", "cat"):
            self._write(str(head), fields[1:], cmd)
        if head in _SETTERS:
            self._setter(str(head), fields[1:], cmd, inline)
            return 0
        if head in ("shift", "set"):
            self._reposition(str(head), fields[1:])
        if isinstance(head, str) and head in self.functions and self.depth < MAX_NESTING:
            self.depth += 1
            self.in_function += 1
            outer, self.called = self.called, self.called or (cmd.line, head)
            # its $1 $2 ... are the call's words while it runs (bash(1) FUNCTIONS), then the caller's again
            saved_positional, self.positional = self.positional, self.rebound(_arguments(fields[1:]))
            try:
                self._node(self.functions[head])
            finally:
                self.depth -= 1
                self.in_function -= 1
                self.called = outer
                self.positional = saved_positional
            return 0
        return self.external(fields, inline, cmd, siblings, at)

    def _chdir(self, head: str, args: list[Field]) -> None:
        """`cd DIR`, `pushd DIR` (the directory before it kept on the stack) and `popd` (back to
        the one on top): the commands after them run there, where the shell surely runs them and
        DIR is known (`join_workdir`); else the directory is not known from here on, nor the
        stack. `pwd` is not the launch directory after any of them."""
        where, stack = self.workdir, self.dirstack
        self.cwd = None
        sure = (self.uncertain, self.subshells) == self._shell_base
        if head == "popd":
            self.workdir, self.dirstack = (stack[-1], stack[:-1]) if sure and not args and stack else (None, None)
            return
        named = args[0].value if len(args) == 1 else None
        moved = join_workdir(where, named) if sure and isinstance(named, str) and not named.startswith("+") else None
        self.workdir = moved
        if head == "pushd":
            self.dirstack = [*stack, where] if moved is not None and stack is not None else None

    def rebound(self, given: list[Field] | None) -> list[Field] | None:
        """$1 $2 ... bound to `given` (None: not known), unless the walk reads a text whose
        unknown pieces are the caller's `$1` as written (`caller_text`): those are not `given`."""
        return None if self.caller_text else given

    def _reposition(self, head: str, args: list[Field]) -> None:
        """`shift [N]` and `set -- WORDS` / `set WORDS` change $1 $2 ... (bash(1) SHELL BUILTIN
        COMMANDS): exact where the shell surely runs them (not in a branch, loop or subshell it may
        skip), else not known from here on; a word of `set -- $X` not known stays so (its $N, and
        `${N:-d}`, are not known). `shift N` past $# changes nothing; `set` with options only (`set
        -euo pipefail`) keeps them."""
        if head == "shift":
            if self.positional is None:
                return
            count = args[0].value if args else "1"
            if not (isinstance(count, str) and count.isascii() and count.isdigit()) or len(args) > 1:
                new: list[Field] | None = None
            elif many := [f for f in self.positional[:int(count)] if f.unsplit]:
                new = [many[0], *self.positional[int(count):]]  # `set -- $X 4; shift`: $1 not known, nor $#
            else:
                new = self.positional[int(count):] if int(count) <= len(self.positional) else self.positional
        else:
            words = _set_operands(args)
            if words is False:
                return
            new = words  # a word not known stays so: $N past it is not known, nor its default (`${1:-2}`)
        sure = (self.uncertain, self.subshells) == self._shell_base and not self.opaque
        self.positional = self.rebound(new if sure else None)

    def _unset_word(self, word: Scalar, line: int) -> None:
        """`unset NAME`, or `unset 'NAME[i]'`: one element gone. Exact for the last one; bash
        keeps the indices of the elements after any other (a gap a list cannot hold), so from
        there on the array is the words it surely begins with, then an unknown rest, as where
        branches disagree on it (`_array_merged`); an index not known statically: from 0."""
        element = _ELEMENT.fullmatch(word) if isinstance(word, str) else None
        if element is None:
            self.vars.pop(str(word), None)
            return
        name, subscript = element.groups()
        var = self.vars.get(name)
        if var is None:
            return
        value: list[tuple[Scalar, int]] = var.value if isinstance(var.value, list) else [(var.value, var.line)]
        n = len(value)
        found = self._arith(Part("arith", subscript, True, line))
        index = int(found) if found is not None else None
        rest = next((k for k, (v, _) in enumerate(value) if unknown_rest(v)), None)
        unknown = (Symbolic(f"${{{name}[@]}}"), line)
        if rest is None:
            index = index + n if index is not None and index < 0 else index
            if index is not None and not 0 <= index < n:
                return  # no such element: bash unsets nothing (or rejects the subscript)
            kept = value[:-1] if index == n - 1 else [*value[:index or 0], unknown]
        elif index is not None and index < 0 and -index <= n - rest - 1:  # a word known after the rest
            kept = value[:n + index] + value[n + index + 1:]
        elif index is not None:  # in the known words, or anywhere from the rest on
            start = min(index, rest) if index >= 0 else max(0, rest - (-index - (n - rest - 1)))
            kept = [*value[:start], unknown]
        else:
            kept = [unknown]
        if kept or isinstance(var.value, list):
            self.vars[name] = Var(kept, line, var.exported)
        else:  # `unset 'X[0]'` of a scalar unsets it
            self.vars.pop(name)

    def _eval(self, fields: list[Field], cmd: Cmd) -> None:
        """`eval $cmd`: bash reads its arguments, joined by spaces, as script text. Words with no
        shell syntax in their known text read back as themselves, so they are run as they are
        (keeping the lines their text came from); anything else is read again as a script."""
        if not fields:
            return
        if self.depth >= MAX_NESTING:
            raise InputError(self.path, f"`eval` nested more than {MAX_NESTING} deep", cmd.line)
        head = fields[0].value
        plain = (all(not any(_SYNTAX.search(text) for text, unknown in segments(f.value) if not unknown)
                     for f in fields) and isinstance(head, str) and not ASSIGN.match(head)
                 and head not in _BUILTINS and head not in self.functions)
        unknown = [text for f in fields for text, is_unknown in segments(f.value) if is_unknown]
        if not isinstance(head, str):  # `eval "$SETUP"`: what runs is itself unknown
            self.unknowable(cmd.line, f"`eval` of text not known statically ({', '.join(unknown[:3])})")
        self.depth += 1
        try:
            if plain:
                again = FieldBuilder()  # the arguments joined by spaces, split again into words
                for f in fields:
                    for text, is_unknown in segments(f.value):
                        if is_unknown:
                            again.symbolic(text, f.line, unsplit=True)
                        else:
                            again.split(text, f.line)
                    again.end()
                self.run([_Evaluated(cmd.words, cmd.line, cmd.end_line, fields=again.fields)])
            else:
                text = str(concat([f.value for f in fields], " "))
                tokens = Lexer(text, self.path, cmd.line - 1).tokens()
                self.run(ShellParser(tokens, self.path, self.diagnostics).parse())
        finally:
            self.depth -= 1
        if unknown and isinstance(head, str):  # `eval cmd $X`: $X may end the command and set more
            self.unknowable(cmd.line, f"`eval` of text not known statically ({', '.join(unknown[:3])}), "
                                      "for what runs after it,", after=plain and not self.looping)

    def _exit(self, args: list[Field], cmd: Cmd) -> None:
        """`exit` on the path the walk is certain of (no undecided branch or loop around it, not
        in a subshell) ends the script: bash runs nothing after it, so neither does the walk,
        unless a test of the caller's environment leads to it (`caller_tested`: `_stops`)."""
        if self.uncertain or self.subshells:
            return
        caller = list(dict.fromkeys(n for empty, defaulted in self.caller_tested for n in (*empty, *defaulted)))
        status = str(args[0].value) if args else ""
        read: list[str] = []
        if (status in ("", "$?", "${?}") and self._before is not None  # `false; exit`: bash exits 1
                and outcome(self._before, self._noting(read, read), self.redefined) is False and not read):
            status = "1"
        self._stops(cmd.line, status, caller)

    def _stops(self, line: int, status: str, caller: list[str], failed: str | None = None,
               unless: tuple[str, ...] = ()) -> None:
        """The one place that decides the script surely ends at `line`: an `exit` (`failed`
        None) or a command whose failing `set -e` ends it (`failed`: why it fails). Where the
        test that leads there read `caller`, variables the caller gives that the script never sets
        but through a default (`${X:-}`, `${VERBOSE:-0}`), the stop rests on the caller leaving
        them unset: no sure stop. Past a training command (`trained`) it ends the default run,
        whose command that was; what follows runs only where the caller gives them (`[
        "${RUN_EVAL:-0}" = 1 ] || exit 0` between two commands: bash runs the second with
        RUN_EVAL=1), so the walk goes on as that run, each command after it noting the stop
        (`guards`: config.launch judges it as one the caller's value chooses). Before any, an
        `exit` so guarded is a check of the caller's environment (`[ "${CONFIRM:-no}" = yes ] ||
        exit 1`): the walk goes on past it with each the caller's value, not known here
        (`launch.caller-guard`); a failing command is undecided (`launch.may-stop`, which the
        verdict names). `unless`: the variables the script never sets whose being unset makes it
        fail (`Exit.unless`)."""
        if not caller:
            self.exited = Exit(line, status, self.reading, self.tested[-1] if self.tested else None, failed or "",
                               unless, self.called)
            return
        names = " and ".join(caller)
        if self.trained():
            self.guards = (*self.guards, CallerStop(line, self.reading, tuple(caller), failed or ""))
            for name in caller:  # past the stop: what the caller gives, not known
                self.vars[name] = Var(Symbolic(f"${name}"), line, True)
            return
        if failed is None:
            self.diagnostics.append(Finding(
                "launch.caller-guard", "info",
                f"the `exit` at line {line} runs only where the caller leaves {names} unset or empty "
                f"(the script reads {'it' if len(caller) == 1 else 'them'} through a default and "
                "sets no value of its own): read as a check of the caller's environment, the walk goes on "
                f"past it with {names} the caller's value, not known here",
                where=f"{self.reading}:{line}"))
            for name in caller:  # past the guard: what the caller gives, not known
                self.vars[name] = Var(Symbolic(f"${name}"), line, True)
            return
        self.diagnostics.append(Finding(
            "launch.may-stop", "warning",
            f"line {line}: {failed} where the caller leaves {names} unset or empty (bash, with no "
            f"{names}, stops before the training command); with {names} given it may go on",
            fix="make the command succeed (`|| true`, a function's `return 0`), or give the run's command with --command",
            where=f"{self.reading}:{line}",
            detail={"undecided": f"whether the script reaches its training command ({failed} where {names} "
                                 "is empty)", "decide": "--command 'THE TRAINING LINE' (the run where the caller "
                                                        f"gives {names}), or a script whose line {line} succeeds"}))

    def _piped(self, cmd: Cmd) -> str | None:
        """What `cmd`, a command with a pipe after it, writes where known (`echo 3 | xargs ...`:
        auditor.bash.written), which the command after the pipe reads."""
        fields = [f for w in cmd.words for f in self.expand(w)]
        if not fields or cmd.stdout is not None or not isinstance(fields[0].value, str):
            return None
        document = self.document_text(cmd.stdin, cmd.stdin.line) if cmd.stdin is not None else None
        text = output(fields[0].value, fields[1:], document)
        return text if isinstance(text, str) else None

    def _write(self, program: str, args: list[Field], cmd: Cmd) -> None:
        """`printf '%s' "$C" > "$F"`, `echo ... > F`, `cat > F <<EOF`: F's text, where known
        (auditor.bash.written); any other write leaves F unknown."""
        assert cmd.stdout is not None
        target = join([f.value for f in self.expand(cmd.stdout)])
        document = self.document_text(cmd.stdin, cmd.stdin.line) if cmd.stdin is not None else None
        text = output(program, args, document)
        if text is None or isinstance(text, (bool, int, float)):
            self.written.pop(str(target), None)
        elif cmd.stdin is not None:  # the document's own lines
            self.written[str(target)] = (text, cmd.stdin.line, self.reading)
        else:  # a value's text, read as at the line it was set on (as `bash -c "$CMD"` reads it)
            self.written[str(target)] = (text, args[-1].line if args else cmd.line, self.path)

    def written_file(self, path: object) -> tuple[str, str, int] | None:
        """(file, text, line) of a file the script wrote at `path` (as expanded), with the line of
        the write; None where it wrote none there, or not known."""
        found = self.written.get(str(path))
        return (found[2], str(found[0]), found[1]) if found is not None else None

    def unknowable(self, line: int, what: str, after: bool = False) -> None:
        """Code this reader cannot see ran at `line` and may have set any variable: the ones in
        `clobbered` (those the caller's verdicts read) become unknown and exported from here on.
        `after`: it runs only after the command the `eval` runs (`eval cmd $X`, outside a loop):
        marked with its place in `opaque`, which that command carries (config.no_training)."""
        self.opaque.append((line, what))
        for name in sorted(self.clobbered):  # one order, whatever the string hashing
            self.vars[name] = Var(Symbolic(f"${name}, which {what} at line {line} may set"), line, True)
        self.diagnostics.append(Finding(
            "launch.unknown-settings", "warning",
            f"{what} may set any variable, exported ones included: the environment the training command "
            "gets is unknown here for every variable the script does not set again after it",
            fix="set the variables the run depends on (e.g. TORCH_DISTRIBUTED_DEBUG) in the script itself",
            where=f"{self.path}:{line}", detail={"after_command": len(self.opaque) - 1} if after else {}))

    def _source(self, target: Field, cmd: Cmd, args: list[Field]) -> None:
        """`source FILE [ARGS]`: the file bash reads (see `locate`) is part of the launch and is read
        in this shell; one that cannot be read may set anything. ARGS, where given, are its $1 $2
        ... while it runs (bash(1) `source`: "they become the positional parameters when filename
        is executed"; `source ./train_dpo_llama.sh slurm`): an unknown one is an unknown word there,
        and past one that may split, $# and $N are unknown."""
        self.sourced.append(str(target.value))
        def what(why: str) -> str:
            return f"`source {target.value}` (not read: {why})"

        written = self.written_file(target.value)
        if written is not None:  # `cat > F <<EOF` earlier, then `source F`
            path, text, base = written[0], written[1], written[2] - 1
        elif not isinstance(target.value, str):
            self.unknowable(cmd.line, what("its path is not known statically"))
            return
        else:
            base = 0
            try:
                path, text = self.locate(target.value, sourced=True)
            except OSError as exc:
                # a path built from `pwd`/$PWD rests on where this audit runs: not judged
                absent = None if self.cwd_read else surely_absent(target.value, self.path)
                if absent is not None and self._errexit_ends(cmd):
                    self._stops(cmd.line, "1", [], f"`{cmd.words[0].raw}` of {absent}, which the checkout around "
                                f"the script does not hold, fails and `set -e` (line {self.errexit}) ends the script")
                    return
                self.unknowable(cmd.line, what("no such file: bash goes on without it" if absent else str(exc)))
                return
        self.diagnostics.append(Finding(
            "launch.sourced", "info", f"`source {target.value}` read from {path}", where=f"{self.path}:{cmd.line}"))
        self.depth += 1
        saved, self.reading = self.reading, path  # ${BASH_SOURCE[0]} is the sourced file
        positional, given = self.positional, bool(args)
        if given:  # the file's $@ is ARGS, known or not, never the caller's (expand._param)
            self.positional = self.rebound(args)
        try:
            self.run(ShellParser(Lexer(text, path, base).tokens(), path, self.diagnostics).parse())
        except InputError as exc:
            self.unknowable(cmd.line, f"`source {target.value}` (cannot be read: {exc.cause})")
        finally:
            self.depth -= 1
            self.reading = saved
            if given:
                self.positional = positional

    def locate(self, name: str, sourced: bool) -> tuple[str, str]:
        """(path, text) of the file bash opens for `source NAME` (`sourced`) or `bash NAME`: an
        absolute path as it is; a relative one from the launch directory (`cwd`: where this audit
        runs, unknown after a `cd`), and a NAME without a slash also on $PATH, before the launch
        directory for `source` and after it for `bash`. OSError saying why not."""
        if self.depth >= MAX_NESTING:
            raise OSError("nested too deep")
        if os.path.isabs(name):
            placed = image_file(name, self.path)
            if placed is None:
                return read_bounded(name, "not a regular file")
            self._in_image(name, *placed)
            return read_bounded(placed[0], "not a regular file")
        here = [] if self.cwd is None else [os.path.join(self.cwd, name)]
        on_path = [] if "/" in name else [os.path.join(d or ".", name) for d in self._path_dirs()]
        for path in (on_path + here if sourced else here + on_path):
            if os.path.isfile(path):
                return read_bounded(path, "not a regular file")
        if self.cwd is None:
            raise OSError("a relative path, and after a `cd` the launch directory is not known statically")
        raise OSError(f"no regular file {name} in the launch directory {self.cwd}"
                      + ("" if "/" in name else " or on $PATH"))

    def _in_image(self, name: str, here: str, placed: Placement) -> None:
        """Say, once per name, that the absolute `name` the script opens, absent here, is read as
        the checkout's file `here` because a Dockerfile of the checkout puts it at `placed`."""
        if name in self.image_read:
            return
        self.image_read.add(name)
        self.diagnostics.append(Finding(
            "launch.image-path", "info",
            f"`{name}` is not on this machine: read as the checkout's {here}, since {placed.said} puts the "
            f"checkout at {placed.where} in its image (an image that puts it elsewhere opens another file)",
            fix=f"run p2paudit where {placed.where} holds the run's checkout", where=self.path))

    def _path_dirs(self) -> list[str]:
        """$PATH's directories as the script has it (its own value, else its caller's)."""
        var = self.vars.get("PATH")
        value = var.value if var is not None else self.environ.get("PATH", "")
        return str(value).split(":") if isinstance(value, str) and value else []

    def _setter(self, builtin: str, args: list[Field], cmd: Cmd, inline: dict[str, EnvVar]) -> None:
        """`read NAME`, `printf -v NAME`, `mapfile NAME`: NAME gets a value known only at run time,
        except `read` from a here-string or here-document whose text is known (`IFS=, read -r TP
        PP <<< "$config"`, `read -r -d '' SCRIPT <<'EOF'`)."""
        names = _set_names(builtin, args)
        if names is None:
            self.unknowable(cmd.line, f"`{builtin}` with a variable name not known statically")
            return
        values, status = self._read_input(cmd, args, names, inline) if builtin == "read" and names else (None, None)
        for k, name in enumerate(names):
            current = self.vars.get(name)
            exported = current.exported if current else name in self.environ
            value = values[k] if values is not None else Symbolic(f"${{{name}}} (set by `{builtin}` at line {cmd.line})")
            self.vars[name] = Var(value, cmd.line, exported)
            if values is None and builtin != "printf":  # input not known: any words
                self.callers_values.add(name)
        if status and self._errexit_ends(cmd):
            self._stops(cmd.line, str(status), [], f"`read` reaches the end of its input before its delimiter and "
                                                   f"returns {status}, and `set -e` (line {self.errexit}) ends the script")

    def _read_input(self, cmd: Cmd, args: list[Field], names: list[str], inline: dict[str, EnvVar]
                    ) -> tuple[list[str | Symbolic | list[tuple[Scalar, int]]] | None, int | None]:
        """(values, status) of `read NAMES` (`read -a NAME`: one array) from the here-string or
        here-document of `cmd` (auditor.bash.read_builtin), each None where not known: `-d ''`
        returns 1 whatever its text, since no shell string holds a NUL. `read` splits its
        here-string: a caller's empty default there (`<<< "${X:-}"`) is the caller's words."""
        options = read_options([str(f.value) for f in args])
        if options is None or any(not isinstance(f.value, str) for f in args):
            return None, None
        text: str | Symbolic | None = None
        if cmd.herestring is not None:
            self.splitting += 1
            try:
                value = join([f.value for f in self.expand(cmd.herestring)]) if cmd.herestring.parts else ""
            finally:
                self.splitting -= 1
            text = concat([value, "\n"])
        elif cmd.stdin is not None:
            text = cmd.stdin.body
            if cmd.stdin.expands:  # an unquoted delimiter: expanded as a double-quoted word
                words = [t for t in Lexer(as_double_quoted(text), self.path, cmd.stdin.line - 1).tokens()
                         if isinstance(t, Word)]
                text = join([f.value for w in words for f in self.expand(w)]) if len(words) == 1 else None
        if text is None:
            return None, None
        nul = 1 if options.delimiter == "\0" else None
        ifs = inline["IFS"].value if "IFS" in inline else (self.vars["IFS"].value if "IFS" in self.vars else " \t\n")
        if not isinstance(ifs, str):
            return None, nul
        if isinstance(text, Symbolic) and options.array:  # split as unquoted text is: its unknown words stay
            if not set(ifs) <= set(" \t\n") or options.delimiter != "\n":
                return None, nul
            out = FieldBuilder()
            self._emit(text, cmd.line, False, out)
            out.end()
            return [[(f.value, cmd.line) for f in out.fields]], 0
        if isinstance(text, Symbolic):
            partial = read_partial(text, options, names, ifs)
            return (list(partial) if partial is not None else None), nul
        if options.array:
            split = read_array(text, options, ifs)
            return ([[(w, cmd.line) for w in split[0]]], split[1]) if split is not None else (None, nul)
        read = read_text(text, options, names, ifs)
        return (list(read[0]), read[1]) if read is not None else (None, nul)

    def _declare(self, builtin: str, words: list[Word]) -> None:
        options = "".join(w.raw[1:] for w in words if w.raw.startswith("-"))
        if builtin == "export" and "n" in options or any(w.raw.startswith("+") and "x" in w.raw for w in words):
            for w in words:  # `export -n NAME`, `declare +x NAME`: NAME stays, no longer exported
                current = self.vars.get(w.raw) if NAME.fullmatch(w.raw) else None
                if current is not None:
                    self.vars[w.raw] = Var(current.value, current.line, False, current.fallbacks)
                elif NAME.fullmatch(w.raw) and w.raw in self.environ:
                    self.vars[w.raw] = Var(self.environ[w.raw], w.line, False)
            return
        exported = builtin == "export" or "x" in options
        for w in words:
            if w.raw.startswith("-"):
                continue
            if ASSIGN.match(w.raw) and w.parts[0].kind == "lit":
                self.assign(w, exported=exported)
            elif not NAME.match(w.raw) and w.parts and w.parts[0].kind != "lit":  # export "$X"=...
                self.unknowable(w.line, f"`{builtin} {w.raw}`, whose variable name is not known statically,")
            elif NAME.fullmatch(w.raw) and exported:
                current = self.vars.get(w.raw)
                if current is not None:
                    self.vars[w.raw] = Var(current.value, current.line, True, _caller_fallbacks([current]))
                elif w.raw in self.environ:
                    self.vars[w.raw] = Var(self.environ[w.raw], w.line, True)


@dataclass(frozen=True)
class CallerStop:
    """A stop past a training command that rests on the caller's variables (bash.walk `_stops`):
    the default run ends at `line` of file `path`; the commands after it run only where the
    caller gives `names`. `what`: why a command fails under `set -e` ("" for an `exit`)."""

    line: int
    path: str
    names: tuple[str, ...]
    what: str


@dataclass(frozen=True)
class Exit:
    """Where the script surely exits (`exit STATUS` at `line` of file `path`)."""

    line: int
    status: str
    path: str
    tested: int | None  # the line of the decided test that leads there, if any
    why: str = ""  # where no `exit` stops it: what does (a failing command under `set -e`)
    unless: tuple[str, ...] = ()  # variables the script never sets whose being unset stops it
    called: tuple[int, str] | None = None  # (line, name) of the function call it ends in, if any


@dataclass
class _Evaluated(Cmd):
    """A command `eval` runs, its words already expanded (`fields`)."""

    fields: list[Field] = dc_field(default_factory=list)


_SETTERS = ("read", "printf", "mapfile", "readarray")
# Words `eval` must read again as a script, not run as a plain command: builtins that set variables.
# Builtins that fail outside a function (bash 5: `local` returns 1, "can only be used in a
# function"; `return` returns 2 where no function or sourced file runs): their status, and why.
_FUNCTION_ONLY = {"local": ("1", " outside a function"), "return": ("2", " outside a function or sourced file")}
_BUILTINS = frozenset({"export", "declare", "typeset", "local", "readonly", "unset", "source", ".", "eval",
                       *_SETTERS})
def _array_merged(name: str, seen: list[Var | None], passes: int) -> list[tuple[Scalar, int]] | None:
    """An array the branches' ends (`seen`, the state before them last where they need not run)
    disagree on: the elements every end begins with, then one unknown element standing for the
    rest (`${NAME[@]}`), so that the words surely there stay known (`srun_base=(srun -l ...)`,
    then `--container-mounts` added under a test). A loop body of unknown passes (`passes`, its
    line) that only appends is read after one pass, then the unknown rest: what its pass appends
    (`srun_cmd+=(... bash -lc "$RUN_CMD")` per node) is what the script runs where the loop runs
    at all. Where every end only adds options past the shared head (`_options_only`), the rest
    is `OptionWords`: a runner's options stay options (srun's program still found after them),
    and the flags they may set are known (config.flags `_branch_flags`). None where not every end
    is an array, or they share no first element and one adds more than options."""
    arrays = [v.value for v in seen if v is not None and isinstance(v.value, list)]
    if len(arrays) != len(seen):
        return None
    if passes and len(arrays) == 2:
        after, before = arrays
        if len(after) > len(before) and after[:len(before)] == before:
            return after
    common = 0
    while all(len(a) > common and a[common][0] == arrays[0][common][0] for a in arrays):  # words, not lines
        common += 1
    line = max((e[1] for a in arrays for e in a), default=0)
    text = f"${{{name}[@]}}"
    tails = [[w for w, _ in a[common:]] for a in arrays]
    if all(map(_options_only, tails)):  # `ARGS=()`, then `ARGS=(--pp 4)` on a branch: some options
        return [*arrays[0][:common], (OptionWords(text, tuple(w for t in tails for w in t)), line)]
    return [*arrays[0][:common], (Symbolic(text), line)] if common else None


def _passes_add_options(after: str | Symbolic | list[tuple[Scalar, int]], before: Var | None) -> bool:
    """Whether what a loop's pass appends (`after` past `before`'s value) is options only
    (`SRUN_CMD="${SRUN_CMD} --container-mounts=${mount}"`): no srun `:` group, so the command's
    counts are its options' (config.launcher `_loop_built`)."""
    if before is None:
        return False
    if isinstance(after, list):
        prior = before.value if isinstance(before.value, list) else []
        return _options_only([w for w, _ in after[len(prior):]])
    return _options_only(list(str(after)[len(str(before.value)):].split()))


def _options_only(words: list[Scalar]) -> bool:
    """Whether array elements are options only: each an option whose name is known (its value
    may be unknown: `--container-mounts=${mount}`; not `--$a`), is the value of the option before it
    (`--nodelist "$NODE"`), or is itself such a rest (`OptionWords`); the script's own `"$@"`
    adds nothing to the script run as written (config.flags `SCRIPT_ARGUMENTS`)."""
    after_option = False
    for word in words:
        head, unknown = segments(word)[0]
        if unknown and str(word) in ("$@", "${@}"):
            after_option = False
            continue
        option = isinstance(word, OptionWords) or (not unknown and head.startswith("-") and head not in ("-", "--")
                                                   and (isinstance(word, str) or "=" in head))
        if not option and not after_option:
            return False
        after_option = option and not isinstance(word, OptionWords) and "=" not in head
    return True


def _appended(seen: list[Var | None], passes: int) -> str | Symbolic | None:
    """A string a loop body of unknown passes (`passes`, its line) appends to, read after one
    pass as an array is (`_array_merged`): `SRUN_CMD="${SRUN_CMD} --container-mounts=${mount}"`
    per word of a caller's CONTAINER_MOUNTS (NVIDIA-NeMo/Megatron-Bridge 067f987df0
    examples/models/stepfun/step37/slurm_pretrain.sh:143-146) keeps the srun it begins with.
    None where the body does more than append to a string."""
    if not passes or len(seen) != 2 or seen[0] is None or seen[1] is None:
        return None
    after, before = seen[0].value, seen[1].value
    if isinstance(after, list) or isinstance(before, list):
        return None
    head, tail = segments(after), segments(before)
    if len(str(after)) <= len(str(before)) or len(head) < len(tail) or head[:len(tail) - 1] != tail[:-1]:
        return None
    (text, unknown), (mine, its) = tail[-1], head[len(tail) - 1]  # `before`'s last piece: begun the same
    return after if its == unknown and mine.startswith(text) and (not unknown or mine == text) else None


def _extended(name: str, seen: list[Var | None]) -> tuple[str | Symbolic, bool] | None:
    """A string the branches of an undecided test leave as it was or extend, where what they add
    is not all known (`COMMAND="$COMMAND ${EXTRA_HYDRA_ARGS}"` under `[[ -n "${EXTRA_HYDRA_ARGS:-}"
    ]]`: NVIDIA-NeMo/RL 7ea279abfb examples/nemo_gym/nemotron-3-super/super_launch.sh:187-189):
    the text they all begin with, then what the longer one adds where that is only unknown words
    (they may be empty, as where the branch did not run), else one unknown word standing for it
    (`${NAME}`, the script's text on a branch), and whether that word holds the caller's: text
    not known glued to the script's (`ARGS="$ARGS --pp=${PP}"`, `-$EXTRA`) splits as the caller's
    words may, so the flags it sets are not known (review r38-inner 1). None where they do more
    than extend it."""
    values = [v.value for v in seen if v is not None]
    if len(values) != len(seen) or any(isinstance(v, list) for v in values):
        return None
    shortest = min(values, key=lambda v: len(str(v)))
    base = str(shortest)
    added = {str(v): v for v in values if str(v) != base}
    if len(added) != 1 or isinstance(shortest, list):
        return None
    [longer] = added.values()
    if isinstance(longer, list) or not str(longer).startswith(base) or not str(longer)[len(base)].isspace():
        return None
    head: list[Scalar] = []
    rest: list[tuple[str, bool]] = []
    at = 0
    for text, unknown in segments(longer):
        if at + len(text) <= len(base):
            head.append(Symbolic(text) if unknown else text)
        elif at >= len(base):
            rest.append((text, unknown))
        elif unknown:
            return None  # an unknown piece across the end of the text they share
        else:
            head.append(text[:len(base) - at])
            rest.append((text[len(base) - at:], False))
        at += len(text)
    if segments(concat(head)) != segments(shortest):
        return None
    if all(unknown or not text.strip() for text, unknown in rest):
        return longer, False
    return concat([shortest, " ", Symbolic(f"${{{name}}}")]), any(unknown for _, unknown in rest)


MAX_ITERATIONS = 16  # a `for` loop over more known items than this is read once, its variable unknown


def _caller_fallbacks(known: list[Var]) -> tuple[str, ...]:
    """The caller's variables a scalar's empty-default value rests on, kept across a merge or an
    export (a test of it reads the caller's environment); not an array's, whose expansion would
    pin them on every element (config.launcher.fallbacks)."""
    return tuple(dict.fromkeys(f for v in known if not isinstance(v.value, list) for f in v.fallbacks))


def _set_names(builtin: str, args: list[Field]) -> list[str] | None:
    """The variables `read`/`printf -v`/`mapfile` set; None when a name is not known statically."""
    values = [f.value for f in args]
    if builtin == "printf":
        at = values.index("-v") if "-v" in values else None
        if at is None:
            return []
        name = values[at + 1] if at + 1 < len(values) else None
        return [name.split("[")[0]] if isinstance(name, str) and NAME.fullmatch(name.split("[")[0]) else None
    if any(not isinstance(v, str) for v in values):
        return None
    with_value = "adeinNptu" if builtin == "read" else "dnOsuCc"
    names: list[str] = []
    k = 0
    while k < len(values):
        text = str(values[k])
        k += 1
        if text.startswith("-") and len(text) > 1:
            if text[-1] in with_value and k < len(values):
                if builtin == "read" and text[-1] == "a":
                    names.append(str(values[k]))
                k += 1
            continue
        names.append(text)
    names = names or (["REPLY"] if builtin == "read" else ["MAPFILE"])
    return names if all(NAME.fullmatch(n) for n in names) else None


_ELEMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\[(.+)\]", re.S)  # `unset 'NAME[i]'`
_SYNTAX = re.compile(r"[\\\"'`$;&|<>(){}\n#]")  # text that `eval` would read as more than words


_ENDING = ("ERR", "EXIT", "0")  # the signals whose trap runs as a failing (sub)shell ends
_MANY = re.compile(r"\$(?:[@*]|\{[@*]\}|\{[A-Za-z_][A-Za-z0-9_]*\[[@*]\]\})")  # `"$@"`, `"${A[@]}"`


def _arguments(fields: list[Field]) -> list[Field] | None:
    """A call's words as $1 $2 ...; None (not known) where one not known may be several words or
    none (`f "$@"` with the caller's unknown: `$2` is no empty word)."""
    if any(f.unsplit or (not isinstance(f.value, str) and _MANY.search(f.value.text)) for f in fields):
        return None
    return fields


def _set_operands(args: list[Field]) -> list[Field] | None | Literal[False]:
    """The words `set ARGS` makes $1 $2 ...: those after its options (`--` or `-` ends them, `-o`
    takes a name); False where it gives none (options only), None where that is not known."""
    k = 0
    while k < len(args):
        value = args[k].value
        if not isinstance(value, str):
            return None
        if value in ("--", "-"):
            return args[k + 1:]
        if value[:1] not in ("-", "+"):
            return args[k:]
        k += 2 if "o" in value[1:] else 1  # `-euo pipefail`: the name after a cluster with `o`
    return False


def _runs(body: list[Node], heads: set[str]) -> bool:
    """Whether a function's body may run one of `heads`: `return` (its status then not its last
    command's), `shift` or `set` (its positional parameters then not the call's words)."""
    def has(node: Node) -> bool:
        if isinstance(node, Cmd):
            return bool(node.words) and node.words[0].raw in heads
        if isinstance(node, AndOr):
            return has(node.first) or any(has(r) for _, r in node.rest)
        if isinstance(node, Pipeline):
            return any(has(c) for c in node.commands)
        if isinstance(node, CommandGroup):
            return any(map(has, node.body))
        if isinstance(node, Branches):
            return any(has(n) for b in node.bodies for n in b) or any(has(n) for c in node.conditions for n in c)
        if isinstance(node, ShellLoop):
            return any(map(has, node.body))
        return False
    return any(map(has, body))


def _countless(word: Word) -> bool:
    """Whether bash may make `word` any number of words, which the walk does not: an unquoted
    glob (`*.cfg`, `a?`, `[ab]`: the files that match, if any), a brace expansion (`{a,b}`) or
    an unquoted `$@` / `$*` (split again on IFS)."""
    return any(not p.quoted and (p.kind == "lit" and any(c in p.text for c in "*?[{")
                                 or p.kind == "param" and p.text in ("@", "*")) for p in word.parts)


def _shift_fails(last: Node, body: list[Node], given: list[Field] | None) -> bool | None:
    """Whether a function's last command, `shift N` of a number it states, fails: bash's shift
    returns 1 past $# (`f() { shift 2; }; f a`), the call's words (`given`) when nothing before
    it shifts or sets them; None where that is not known."""
    if not isinstance(last, Cmd) or [w.raw for w in last.words][:1] != ["shift"] or len(last.words) > 2 \
            or given is None or any(f.unsplit or not isinstance(f.value, str) for f in given) \
            or _runs(body[:-1], {"shift", "set"}) or last.redirects:
        return None
    count = last.words[1].raw if len(last.words) == 2 else "1"
    return int(count) > len(given) if count.isascii() and count.isdigit() else None


def _exits(body: list[Node]) -> bool:
    """Whether a branch surely reaches `exit` (on its own list of commands, or a `{ ...; }` group
    of it): the guard `if [ -z "${X:-}" ]; then echo ...; exit 1; fi`."""
    return any((isinstance(n, Cmd) and bool(n.words) and n.words[0].raw == "exit")
               or (isinstance(n, CommandGroup) and not n.subshell and _exits(n.body)) for n in body)


_EMPTY_DEFAULT = re.compile(r'"?\$\{([A-Za-z_][A-Za-z0-9_]*):?-\}"?')  # `"${X:-}"`
_LITERAL_SET = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=([^$`\\}]*)")  # `X=4`, `X="--bf16"`: no expansion


def _default_set(test: list[Node], rest: list[tuple[str, Node]]) -> tuple[str, list[Node]] | None:
    """(X, what sets it) where `[ -z "${X:-}" ] && X=LITERAL` (`[[ ]]`, `test`, the `if` with no
    else; its branch a `case` whose branches only set X so) only sets the variable it tests to
    text it states: bash's spelling of `X=${X:-LITERAL}`. None for any other test or branch (those
    stay undecided: `_undecided`)."""
    if len(test) != 1 or len(rest) != 1 or rest[0][0] != "&&" or not isinstance(test[0], Cmd):
        return None
    words = [w.raw for w in test[0].words]
    if words[:1] == ["test"]:
        words = ["["] + words[1:] + ["]"]
    if len(words) != 4 or (words[0], words[3]) not in (("[", "]"), ("[[", "]]")) or words[1] != "-z":
        return None
    tested = _EMPTY_DEFAULT.fullmatch(words[2])
    if tested is None or not _only_sets(tested.group(1), [rest[0][1]]):
        return None
    return tested.group(1), [rest[0][1]]


def _only_sets(name: str, body: list[Node]) -> bool:
    """Whether a branch only sets `name` to text it states (`X=4`; a `case` of such branches)."""
    def sets(node: Node) -> bool:
        if isinstance(node, Cmd):
            assigned = _LITERAL_SET.fullmatch(node.words[0].raw) if len(node.words) == 1 else None
            return (assigned is not None and assigned.group(1) == name and not node.redirects
                    and node.stdout is None and node.stdin is None and node.herestring is None)
        return (isinstance(node, Branches) and node.subject is not None and not node.fallthrough
                and all(_only_sets(name, b) for b in node.bodies))
    return bool(body) and all(sets(n) for n in body)


def _guards(node: AndOr) -> bool:
    """Whether a test's `&&`/`||` list runs `exit` on one side: `[ -z "${X:-}" ] && exit 1`."""
    return any(_exits([right]) for _, right in node.rest)


def _may_leave(nodes: list[Node]) -> bool:
    """Whether a loop body holds `break` or `continue` (anywhere, conservatively)."""
    def words(node: object) -> bool:
        if isinstance(node, Cmd):
            return bool(node.words) and node.words[0].raw in ("break", "continue")
        if isinstance(node, list):
            return any(words(n) for n in node)
        if isinstance(node, (Branches, ShellLoop, CommandGroup, AndOr, Pipeline, Function)):
            return any(words(v) for v in vars(node).values() if isinstance(v, (list, tuple, Cmd)) or
                       isinstance(v, (Branches, ShellLoop, CommandGroup, AndOr, Pipeline, Function)))
        if isinstance(node, tuple):
            return any(words(n) for n in node)
        return False
    return words(nodes)


def _line_of(node: Node) -> int:
    """The first line of a command list's node (a pipeline's first command's)."""
    while isinstance(node, (Pipeline, AndOr)):
        node = node.commands[0] if isinstance(node, Pipeline) else node.first
    return int(getattr(node, "line", 0))


def _names_read(nodes: list[Node]) -> frozenset[str]:
    """The variables a test's commands expand (`[ -z "${X:-}" ]`: X)."""
    names: set[str] = set()
    for node in nodes:
        while isinstance(node, (Pipeline, AndOr)):
            if isinstance(node, AndOr):
                names |= _names_read([right for _, right in node.rest])
                node = node.first
            else:
                names |= _names_read(node.commands[1:])
                node = node.commands[0]
        if isinstance(node, Cmd):
            names.update(m.group(1) for w in node.words for m in _READ.finditer(w.raw))
    return frozenset(names)


_READ = re.compile(r"\$\{?[#!]?([A-Za-z_][A-Za-z0-9_]*)")
