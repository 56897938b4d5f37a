"""The training command among the commands a launch script runs: the launcher rules of
rules/megatron-lm.toml matched against each command the script's walk (auditor.bash.walk) runs,
also behind wrappers (srun, env, nohup, ...) and inside `bash -c`, and the seed report's flags on
the lines after a command that lost its `\\`."""

from __future__ import annotations

import ast
import fnmatch
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from auditor.bash.absent import checkout_root
from auditor.bash.getopt import Grammar
from auditor.bash.getopt import read as read_words
from auditor.bash.lexer import ASSIGN, MAX_NESTING, NAME, Lexer, Word
from auditor.bash.parser import AndOr, Cmd, Node, Pipeline, ShellParser, children, simple_commands
from auditor.bash.sed_script import runs_command as sed_runs_command
from auditor.bash.values import EnvVar, Field, OptionWords, Partial, Scalar, Symbolic, Var, concat, join, segments
from auditor.bash.walk import CallerStop, Shell, join_workdir
from auditor.config.batch_job import allocation_options, in_checkout, job_file_at
from auditor.config.entry_copy import hydra_copy, is_copy
from auditor.config.entry_module import Root, module_file, module_roots
from auditor.config.export_option import effect, option_values
from auditor.config.fetch_target import STDOUT, copied, extracted, written
from auditor.config.input_words import through_input
from auditor.config.lightning_entry import builds
from auditor.errors import InputError
from auditor.findings import Finding
from auditor.rulebook.launchers import Spelling

_WRAP = "--wrap"  # `sbatch --wrap=TEXT`: TEXT is a script
# The script's own arguments as an unknown piece of a word: `$1`, `$@`, `${*}`, `${@:3}`, `${1:-x}` (a variable
# set only from them holds their text: `EXTRA_ARGS="$@"`).
_POSITIONAL = re.compile(r"\$(?:[1-9][0-9]*|[@*]|\{(?:[1-9][0-9]*|[@*])(?:[-:=?+#%/^,][^}]*)?\})")
# `A=1` after `env`: an assignment among a wrapper's words, no program
_ENV_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_STDIN = ("<", "<>", "<&", "<<", "<<-", "<<<")  # the redirections a command's standard input comes from


def _known_option(f: Field) -> bool:
    """A word that is one option whatever its unknown part (`--container-mounts="$DIR:/w"`): its
    known text starts with `-`, and bash does not split it (quoted), so no program hides in it."""
    pieces = segments(f.value)
    return not isinstance(f.value, str) and not f.unsplit and bool(pieces) and not pieces[0][1] \
        and pieces[0][0].startswith("-")


@dataclass(frozen=True)
class Unfollowed:
    """A command the walk ran but did not follow that may train (LaunchShell.may_train): the
    word that says so and why, for the message of an undecided run."""

    line: int
    program: Scalar
    why: str

    def said(self) -> str:
        return f"line {self.line} runs `{self.program}`, {self.why}"


@dataclass
class Candidate:
    """A command that starts training, as the walk met it: the launcher rule it matched, its
    arguments, wrappers and environment, and where it is."""

    launcher: dict
    invoked: str  # "megatron sft", "torchrun", "python -m torch.distributed.run"
    subcommand: str
    args: list[Field]
    wrapper: list[Field]
    inline: dict[str, EnvVar]
    env: dict[str, Var]
    line: int
    end_line: int
    conditional: bool
    word_line: int = 0  # the launcher word's own line (after `NAME=value \` prefix lines)
    cwd: str | None = None  # the directory it starts in, as the walk knows it (None after a `cd`)
    # where it runs, relative to the launch directory: "" not moved, None not known statically
    # (a `cd` or a runner's working-directory option before it: bash.walk.join_workdir)
    workdir: str | None = ""
    # the first word as written of the outermost command that runs it (`"${srun_cmd[@]}"` around
    # `bash -lc "$RUN_CMD"`): config.launcher._loop_built asks whether it runs a loop-built array
    first_word: str = ""
    # the command's redirections as written (`<path`, `2>&1`): (operator, target), in order
    redirects: list[tuple[str, Word]] = field(default_factory=list)
    # for each redirection, the directory the shell opening it stands in (before any wrapper's
    # working-directory option, `srun --container-image`, moves the command): None where not known
    opened_in: list[str | None] = field(default_factory=list)
    # in a container (`docker run`): "" not, else the folder here that is its working directory
    # through a mount, None where none is: a relative entry there is not the file beside the script
    inside: str | None = ""
    # the stops before it, past an earlier training command, that the caller's variables decide
    # (bash.walk `_stops`): it runs only where the caller gives them
    after: tuple[CallerStop, ...] = ()
    # the variables of its environment that the shell a starter runs on each task set (`srun ...
    # bash -c "export WORLD_SIZE=$SLURM_NTASKS; python ..."`), expanded where the starter's own
    # SLURM_* are the task's: config.launcher `_env_world`
    in_task: frozenset[str] = frozenset()
    # the files fetched before it (LaunchShell.fetched as the walk met it): its entry may be one
    fetched: tuple[tuple[int, str, str, str, str | None, str | None], ...] = ()
    # the `eval` that runs it, where its unknown words run only after it (`eval ${run_cmd}`): that
    # warning's place in LaunchShell.opaque (bash.walk `unknowable`, config.no_training `ran_unseen`)
    evaluated: int | None = None


def _known_tail(value: Symbolic) -> str | None:
    """The whole path parts a word known in part ends in (`$CKPT/zero_to_fp32.py`:
    `/zero_to_fp32.py`), None where its last piece is unknown or no `/` starts the known rest."""
    pieces = segments(value)
    last = max((k for k, (_, unknown) in enumerate(pieces) if unknown), default=-1)
    known = "".join(text for text, _ in pieces[last + 1:])
    return known if known.startswith("/") else None


def python_rule(spelling: Spelling) -> dict | None:
    """The one-process launcher rule, whose interpreters (`python`, `python3.11`) run a Python
    program (rules [launchers]); None where the rules give none."""
    return next((e for e in spelling.launchers if e.get("one_process")), None)


def prints_only(words: list[object], python: dict | None, tree: Path | None, path_set: bool) -> bool:
    """`python -c 'print(1)'`: a Python interpreter of the rule `python` (python_rule) whose `-c`
    text, known statically, only prints literals to stdout (`print` of constants, no `file=`) or
    passes: it runs no code of the run's and writes no file, so it neither trains nor may write a
    file a later command opens (entry_absent.unread_before). Any other text may. The interpreter
    must be a real one: a bare name looked up on a PATH the script leaves as it is (`path_set`:
    the script assigns PATH, so `./bin` may come first), or an absolute path outside `tree` (the
    launch script's checkout, else its folder); `./python` is a file of the checkout, any program."""
    if python is None or not words or not is_interpreter(os.path.basename(str(words[0])), python):
        return False
    program = str(words[0])
    if "/" not in program and path_set or "/" in program and (
            not os.path.isabs(program) or tree is None or Path(os.path.normpath(program)).is_relative_to(tree)
            or Path(program).resolve().is_relative_to(tree)):
        return False
    j = 1
    while j < len(words) and isinstance(flag := words[j], str) and flag.startswith("-") and flag != "-c":
        j += 2 if flag in ("-X", "-W") else 1
    text = words[j + 1] if j + 1 < len(words) and words[j] == "-c" else None
    if not isinstance(text, str):
        return False
    try:
        body = ast.parse(text).body
    except (SyntaxError, ValueError):
        return False
    return all(isinstance(stmt, ast.Pass) or isinstance(stmt, ast.Expr) and isinstance(call := stmt.value, ast.Call)
               and isinstance(call.func, ast.Name) and call.func.id == "print" and not call.keywords
               and all(isinstance(a, ast.Constant) for a in call.args) for stmt in body)


def launch_tree(path: str) -> Path | None:
    """The tree whose files a launch script's relative or absolute program words may name: its
    checkout, else its own folder (prints_only); None where the script is no file here."""
    if not Path(path).is_file():
        return None
    return checkout_root(path) or Path(path).resolve().parent


def is_interpreter(base: str, launcher: dict) -> bool:
    """`python3.10` is `python3` for a launcher whose rule lists `python3` among its interpreters."""
    return re.sub(r"[0-9.]+$", "", base) in {re.sub(r"[0-9.]+$", "", i) for i in launcher.get("interpreters", ())}


class LaunchShell(Shell):
    """The script's walk, collecting every command that starts training, in order."""

    def __init__(self, path: str, spelling: Spelling, environ: dict[str, str],
                 diagnostics: list[Finding], lines: list[str]) -> None:
        super().__init__(path, environ, diagnostics)
        self.lines = lines  # the script's text, to say why a line ends a command
        self.spelling = spelling
        self.candidates: list[Candidate] = []
        self.unresolved_commands: list[Field] = []  # commands whose name is itself unknown
        # Every command that may train and was not followed (may_train: `python chatlearn/
        # entrypoint.py`, `$LAUNCHER`, `bash missing.sh`, `ssh host "..."`, `colossalai run`):
        # the one list config.launch asks whether the script may run a command it did not read.
        # An `exit` after one is no proof the run never starts.
        self.unfollowed: list[Unfollowed] = []
        self.shelled = 0  # how many commands `_shell_c` took (a script read, or said not read)
        # the entries of `opaque` that are an `eval`'s unknown words where every one is the
        # script's own arguments and the eval ran a command followed: that command's arguments
        self.callers_words: set[int] = set()
        self.starter: tuple[dict, list[Field]] | None = None  # srun around a `bash -c` being read
        self.clobbered = spelling.env_names  # what unseen code (`source`, `eval`) makes unknown
        self.operand_required = spelling.operand_required  # `set -e` + `X=$(dirname)` (bash.errexit)
        self.checkout_copies = spelling.checkout_copies  # `cd "$(bash $ROOT/tools/code_snapshot.sh X)"`
        self.environment_set = (*spelling.environment_set, *spelling.env_names, *(  # never taken as unset
            n for e in spelling.launchers for n in (e.get("env_nproc"), e.get("env_nnodes")) if n))
        self.allocation: dict[str, int] = {}  # variables a `#SBATCH` line sets, and that line
        self.submitted: set[str] = set()  # those the options of the `sbatch` being read set
        self.by_sbatch: set[str] = set()  # those an `sbatch` command's own options set
        self.allocation_file: dict[str, str] = {}  # the job file of such a `#SBATCH` line, if not the script
        self.hidden_from_job: list[str] = []  # variables a job file reads that were set but not exported
        # `python SCRIPT.py` with no launcher around it (a `one_process` launcher rule): the run's
        # command only where the script runs no launcher (config.launch._build)
        self.last_resort: list[Candidate] = []
        self.given = False  # the training command is the one `--command` gives (config.launch)
        # (line, program) of each command run that surely trains nothing (may_train): what a
        # script that starts no training process runs (config.launch `_no_launch`)
        self.inert: list[tuple[int, str]] = []
        # (line, program, URL) of each file a fetcher (`wget URL`) gets at run time: an entry of
        # that name is then a file not read here (config.launch `_last_resort` names it)
        # (line, fetcher, URL, the file it writes or fetch_target.UNKNOWN, its workdir and cwd there or None)
        self.fetched: list[tuple[int, str, str, str, str | None, str | None]] = []
        # (line, fetcher, URL, path) of each fetch the command walked writes to its pipe (`_fetches`)
        self.streamed: list[tuple[int, str, str, str]] = []

    def trained(self) -> bool:
        return bool(self.candidates or self.last_resort)

    def allocate(self, lexer: Lexer, tokens: list) -> None:
        """The allocation a job script's directives ask for (`#SBATCH --nodes=128`), as every
        variable the job gets from each option (SLURM_JOB_NUM_NODES and SLURM_NNODES), unless
        the audit's environment gives it."""
        first = next((t.line for t in tokens if isinstance(t, Word)), None)
        for launcher in self.spelling.launchers:
            prefix, options = launcher.get("directive"), launcher.get("directive_options", {})
            for line, text in lexer.comments:
                if not prefix or not text.startswith(prefix) or (first is not None and line > first):
                    continue
                words = text[len(prefix):].split()
                for k, word in enumerate(words):
                    option, eq, value = word.partition("=")
                    value = value if eq else (words[k + 1] if k + 1 < len(words) else "")
                    for name in options.get(option, ()) if value.isdigit() else ():
                        if name in self.submitted:  # sbatch's own options beat the job file's lines
                            continue
                        if name not in self.environ or name in self.allocation:
                            self.environ[name] = value  # what the job inherits from its allocation
                            self.allocation[name] = line
                            self.allocation_file[name] = lexer.path if lexer.path != self.path else ""

    def external(self, fields: list[Field], inline: dict[str, EnvVar], cmd: Cmd,
                 siblings: list[Node], at: int) -> int:
        before = len(self.last_resort), self.shelled
        streamed, self.streamed = (self.streamed if self.in_pipe else []), []  # read once, as `piped`
        piped, self.piped = self.piped, None  # `echo 3 | xargs CMD`: this command's input, read once
        fields = through_input(fields, self.spelling, self._stdin(cmd, piped), self._written_text)  # CMD with the words read
        candidate = self._launch(fields, inline, cmd)
        if candidate is None:
            if (len(self.last_resort), self.shelled) == before and (why := self.may_train(fields, inline)):
                self.unfollowed.append(Unfollowed(why[0].line, why[0].value, why[1]))
            elif (len(self.last_resort), self.shelled) == before:
                self.inert.append((cmd.line, self._named(fields)))
                self._fetches(fields, cmd, streamed)
            return 0
        return self._join_broken_continuation(siblings, at, cmd, candidate) - at

    def _fetches(self, fields: list[Field], cmd: Cmd, streamed: list[tuple[int, str, str, str]]) -> None:
        """Record the files a fetcher (`wget URL`) writes, and those a later part of its pipeline
        writes its standard output to (`wget -O - URL | tee x.py`: `streamed`, the fetches the
        command before it passed down the pipe); keep those this command passes on in `streamed`."""
        program = os.path.basename(str(fields[0].value))
        targets = [(op, join([f.value for f in self.expand(t)])) for op, t in cmd.redirects]
        if (rule := self.spelling.fetchers.get(program)) is not None:
            got = [(cmd.line, program, url, path) for url, path in written(fields, targets, rule)]
        elif (rule := self.spelling.extractors.get(program)) is not None:  # `curl URL | tar -xz -C DIR`
            got = [(line, fetcher, url, path) for line, fetcher, url, _ in streamed for path in extracted(fields, rule)]
        else:
            got = [(line, fetcher, url, path) for line, fetcher, url, _ in streamed
                   for path in copied(fields, targets, program in self.spelling.copiers) or [STDOUT]]
        self.fetched += [(line, fetcher, url, path, self.workdir, self.cwd) for line, fetcher, url, path in got
                         if path != STDOUT]
        self.streamed = [g for g in got if g[3] == STDOUT or program in self.spelling.copiers]

    def _stdin(self, cmd: Cmd, piped: str | None) -> str | None:
        """The text `cmd` reads on its standard input, where known: its own last `<`, here-document
        or here-string, which bash applies after the pipe, so it wins over it (`echo 3 | xargs ...
        < pp.txt` reads pp.txt: the file's text where the script wrote it, else not known); the
        pipe's text where it has none."""
        own = [(op.lstrip("0"), target) for op, target in cmd.redirects if op.lstrip("0") in _STDIN]
        if not own:
            return piped
        op, target = own[-1]
        if op in ("<<", "<<-"):
            text = self.document_text(cmd.stdin, cmd.stdin.line) if cmd.stdin is not None else None
        elif op == "<<<":
            text = join([f.value for f in self.expand(target)])
            text = text + "\n" if isinstance(text, str) else None
        else:  # `< FILE`, `<> FILE`; `<&3` reads what is not known here
            text = self._written_text(join([f.value for f in self.expand(target)])) if op != "<&" else None
        return text if isinstance(text, str) else None

    def _written_text(self, path: object) -> str | None:
        """The text of a file the script wrote at `path`, where known (`xargs -a FILE`)."""
        found = self.written_file(path)
        return found[1] if found is not None else None

    def _eval(self, fields: list[Field], cmd: Cmd) -> None:
        """`eval $cmd`, as the shell reads it; where its command is known, it ran a command followed
        and every unknown word is the script's own arguments (`$1`, `"$@"`, a variable set only
        from them), the unseen code it leaves is that command's arguments (`callers_words`), not
        another command: `$(cat x)` or `$POST` may be anything."""
        ran, seen = len(self.candidates), len(self.opaque)
        super()._eval(fields, cmd)
        after = self.diagnostics[-1].detail.get("after_command") if len(self.opaque) > seen else None
        for candidate in self.candidates[ran:] if after == len(self.opaque) - 1 else ():
            candidate.evaluated = after
        unknown = [text for f in fields for text, is_unknown in segments(f.value) if is_unknown]
        if (fields and isinstance(fields[0].value, str) and len(self.candidates) > ran and len(self.opaque) > seen
                and all(_POSITIONAL.fullmatch(text) for text in unknown)):
            self.callers_words.add(len(self.opaque) - 1)  # the eval's own entry, added last

    def may_train(self, fields: list[Field], inline: dict[str, EnvVar] | None = None) -> tuple[Field, str] | None:
        """Where a command the walk did not follow may train: the word that says so and why;
        None where it surely trains nothing. The one place that decides it: any program but those
        the rules say train nothing (`[wrappers] no_training`: `mkdir`, `pip`, `nvidia-smi`; and
        `no_training_subcommands`: `ray stop`) may, a Python interpreter, a launcher or a word not known statically first of all;
        behind a wrapper (`srun -N 2 hostname`, `command -v rsync`), the first word after the
        wrapper's own options and their numbers decides, and a wrapper with no program runs none.
        `inline`: the command's own `VAR=x` prefix (`PYTHONPATH=$X python -m http.server`)."""
        ran = self._runner(fields)
        if ran is not None:  # `conda run -n env COMMAND`: the command it runs
            return self._runner_trains(fields, *ran[:3])
        wrapped = False
        unknown: Field | None = None  # an unknown word after a wrapper's option: its value, or the program
        for i, f in enumerate(fields):
            if wrapped and (_known_option(f) or isinstance(f.value, OptionWords)):
                continue  # `srun --container-mounts="$DIR:/w" bash -c ...`: an option, its value unknown
            if not isinstance(f.value, str):
                after = fields[i - 1].value if i else None
                if wrapped and unknown is None and isinstance(after, str) and after.startswith("--") \
                        and "=" not in after:
                    unknown = f  # `srun --container-image ${IMAGE} bash -c ...`: decided by what follows
                    continue
                return f, "which is not known statically"
            base = os.path.basename(f.value)
            if base in self.spelling.shells and _reads_c_text(fields[i + 1:], self._options_of(base)):
                return None  # `bash -c "..."` known: the walk reads its commands on their own (_shell_c)
            if base in self.spelling.wrapper_operands:  # `flock -n "$fd"`: a lock taken, no command
                grammar = self._options_of(base)
                first = (read_words([g.value for g in fields[i + 1:]], grammar).operands or [len(fields)])[0]
                odd = next((g for g in fields[i + 1:i + 1 + first] if isinstance(g.value, str) and g.value.startswith("--")
                            and g.value[2:].partition("=")[0] not in (*grammar.long_value, *grammar.long_flags)), None)
                if odd is not None:  # `flock --command CMD FILE`: an option not read (flock rejects it)
                    return f, f"whose option `{odd.value}` is not read here"
                at = self._operands_end(base, fields[i + 1:])
                if isinstance(at, Field):
                    return at, "which is not known statically"
                command = fields[i + 1 + at:] if at is not None else []
                if command and str(command[0].value).startswith("-"):  # `flock FILE -c CMD`
                    return f, f"whose `{command[0].value}` runs a command string not read here"
                return self.may_train(command) if command else None
            if base in self.spelling.wrappers:
                wrapped = True
            elif wrapped and (f.value.startswith("-") or f.value.isdigit() or _ENV_WORD.match(f.value)):
                continue  # a wrapper's option, its number or an assignment (`env A=1`)
            elif base in self.spelling.no_training:
                if unknown is not None:  # `srun --exclusive ${CMD} hostname`: ${CMD} may be the program
                    return unknown, "which is not known statically"
                if (word := self._unknown_option(base, fields[i + 1:])):
                    return f, word
                runs = self._runs_command(base, fields[i + 1:])
                return (f, f"whose {runs} runs another program") if runs else None
            elif fields[i + 1:i + 2] and fields[i + 1].value in self.spelling.no_training_subcommands.get(base, ()):
                if base in self.spelling.operand_variables:  # `make html SPHINXBUILD=...`, `make html train`
                    rest = next((g for g in fields[i + 2:] if not isinstance(g.value, str) or not g.value.startswith(
                        "-") and g.value not in self.spelling.no_training_subcommands[base]), None)
                    if rest is not None:
                        return rest, "a target or a variable of a recipe not read here"
                return None  # `ray stop --force`: a subcommand that runs no program of the run's
            elif self._names_launcher(fields):
                return fields[0], "which starts a launcher this reader does not follow"
            elif (module := self._python_module(fields[i:])) is not None:
                return self._module_trains(module, fields[i:], inline or {})
            elif self._prints_only(fields[i:]):
                return None
            else:
                return f, self._python_text(fields[i:]) or "which is not followed"
        return (unknown, "which is not known statically") if unknown is not None else None

    def _python_text(self, fields: list[Field]) -> str:
        """For the message, where a Python interpreter runs program text, not an entry file
        (`python -c TEXT`, `python - <<EOF`: Python docs, "Command line and environment"): that
        text is not read as an entry here; "" for any other command."""
        if not self._is_python(fields[0]):
            return ""
        for f in fields[1:]:
            if f.value in ("-c", "-"):
                return ("whose program text given with `-c` is not read here" if f.value == "-c"
                        else "whose program text on its standard input is not read here")
            if not isinstance(f.value, str) or not f.value.startswith("-"):
                return ""
        return ""

    def _operands_end(self, base: str, args: list[Field]) -> int | None | Field:
        """Where the command a wrapper with operands of its own runs starts among `args` (util-linux
        flock(1): `flock [options] FILE|DIR COMMAND [ARGS]`, `flock [options] FILE|DIR -c COMMAND`,
        `flock [options] NUMBER`; [wrappers] operands); None where no word follows its operands:
        it runs no command. A word before that, unquoted and not known statically, may be several
        words, a command among them: that word."""
        grammar = self._options_of(base)
        operands = read_words([a.value for a in args], grammar).operands
        own = self.spelling.wrapper_operands[base]
        end = operands[own] if len(operands) > own else len(args)
        split = next((a for a in args[:end] if a.unsplit), None)
        if split is not None:
            return split
        return end if end < len(args) else None

    def _python_module(self, fields: list[Field]) -> str | None:
        """The module of `python [options] -m MODULE ...` (an interpreter of the one-process
        launcher rule), None for any other command or a module not known statically."""
        if not self._is_python(fields[0]):
            return None
        for k, f in enumerate(fields[1:], 1):
            if f.value == "-m" and k + 1 < len(fields):
                module = fields[k + 1].value
                return module if isinstance(module, str) else None
            if not isinstance(f.value, str) or not f.value.startswith("-") or f.value in ("-c", "-"):
                return None
        return None

    def _prints_only(self, fields: list[Field]) -> bool:
        return prints_only([f.value for f in fields], python_rule(self.spelling), launch_tree(self.path), "PATH" in self.vars)

    def _module_trains(self, module: str, fields: list[Field], inline: dict[str, EnvVar]) -> tuple[Field, str] | None:
        """Whether `python -m MODULE`, its module not found here (LaunchShell._one_process), may
        train: not a standard-library module the rules say runs no code of the run's (`[wrappers]
        inert_python_modules`: `http.server`, `json.tool`, `venv`), given none of its options that
        run code (`http.server --cgi`) and nothing that may shadow it: a PYTHONPATH not known
        statically (exported or the command's own), or a module of its name first on sys.path
        (`python -m` puts the working directory first: `cd tools` with tools/http/ here, or a
        `cd $DIR` not known); any other module is code not read here, which the
        message names."""
        said = Field(f"{os.path.basename(str(fields[0].value))} -m {module}", fields[0].line)
        inert = self.spelling.inert_python_modules.get(module)
        env = {n: EnvVar(n, v.value, v.line, "export") for n, v in self.vars.items()
               if v.exported and not isinstance(v.value, list)} | inline  # a list: an array, no path
        path = env.get("PYTHONPATH")
        if inert is None and module.partition(".")[0] in sys.stdlib_module_names:
            return said, "a standard-library module that runs code not read here"
        if inert is None:
            return said, ("whose module is not found here (not under the working directory, a known "
                          "PYTHONPATH entry or beside the script; an installed package is not read)")
        if path is not None and not isinstance(path.value, str):
            return said, "whose module a PYTHONPATH not known statically may shadow"
        if self.workdir is None:
            return said, "run in a directory not known statically (after a `cd`), whose own module may shadow it"
        top = module.partition(".")[0]
        shadow = next((r for r in [*self._workdir_roots(), *module_roots(env, self.path)]
                       if (r.path / top / "__init__.py").is_file() or (r.path / f"{top}.py").is_file()), None)
        if shadow is not None:
            return said, f"whose name {shadow.why} gives a module of its own, not read here"
        named = next((g.value for g in fields if isinstance(g.value, str) and g.value.partition("=")[0] in inert), None)
        if named is not None:
            return said, f"whose `{named.partition('=')[0]}` runs code of the run's"
        if any(not isinstance(g.value, str) and g.unsplit for g in fields):
            return said, "whose words not known statically may name an option that runs code"
        return None

    def _workdir_roots(self) -> list[Root]:
        """The directory a `cd` moved the commands to (`workdir`), first on sys.path under `python
        -m`: a relative one from this audit's directory and from the script's (module_roots)."""
        if not self.workdir:
            return []
        why = f"the directory the script moved to ({self.workdir}), first on sys.path under `python -m`,"
        if os.path.isabs(self.workdir):
            return [Root(Path(self.workdir), why)]
        return [Root(base / self.workdir, why) for base in (Path.cwd(), Path(self.path).resolve().parent)]

    def _runs_command(self, base: str, args: list[Field]) -> str:
        """How a program the rules say trains nothing runs a command after all, for the message ("" where
        it runs none): an option naming one (`find -exec`, `tar --to-command=CMD`, `git bisect run`),
        its command operand (`trap CMD EXIT`, a function of the script's included, whose body
        the walk does not run; not `trap - EXIT`, `trap '' INT`, nor one command the rules say
        trains nothing: `trap "rm -rf DIR" EXIT`), or program text that starts one (awk's `system(`)."""
        for k, g in enumerate(args):
            named = self._names_option(base, g.value, self.spelling.program_options.get(base, ()))
            if named and self._option_command_may_train(base, args[k + 1:]):
                return f"`{named}`"
        if (given := self._command_option(base, args)):
            return given
        if base in self.spelling.command_operand:  # `trap [-lp] [[ARG] SIGNAL ...]`
            operands = [g for g in args if g.value not in ("-l", "-p", "--")]
            operand = operands[0].value if len(operands) > 1 else "-"  # one operand: a signal reset
            if operand in ("-", ""):
                return ""
            if not isinstance(operand, str) or self._may_run(operand, operands[0].line):
                return f"command `{operand}`"
        if base in self.spelling.sed_scripts:  # `sed -n '1e torchrun ...'`, `sed 's/^/cmd /e'`
            grammar = self._options_of("sed")
            return next((what for what, line in sed_runs_command([g.value for g in args], grammar)
                         if not isinstance(line, str) or self._may_run(line, args[0].line)), "")
        texts = self.spelling.command_text.get(base, ())
        started = next((t for g in args for t in texts if t in str(g.value)), None)
        return f"program text `{started}`" if started else ""

    def _unknown_option(self, base: str, args: list[Field]) -> str:
        """Why a program whose options may run a command (rules `option_words`) may run one after
        all, "" where it surely does not: an unquoted word not known statically where getopt may
        read an option (`split $OPTS in.txt`: $OPTS may be `--filter=CMD`), before `--` and not
        the value of an option its grammar gives one (`split -l $N`); `-$X` alike."""
        if base not in self.spelling.option_words:
            return ""
        values: list[Scalar] = [g.value for g in args]
        end = values.index("--") if "--" in values else len(values)
        words = read_words(values[:end], self._options_of(base))
        found = [o.at for o in words.options if o.name == ""]
        found += [k for k in words.operands if args[k].unsplit and all(u for _, u in segments(args[k].value))]
        if not found:
            return ""
        named = (*self.spelling.program_options.get(base, ()), *self.spelling.command_options.get(base, ()))
        return (f"whose word `{args[min(found)].value}`, not known statically, "
                f"may be an option that runs another program ({', '.join(f'`{o}`' for o in named)})")

    def _names_option(self, base: str, word: Scalar, options: tuple[str, ...]) -> str:
        """Which of `options` a word of `base` names ("" none), by its known text before `=` (its value
        may be unknown: `--filter="$CMD"`, which may start anything): exactly, or a long one by a prefix
        getopt_long takes for it (`--filt`: GNU split runs it as `--filter`), unless the word is exactly
        another long option of the program's (rules option_grammar: tar's `--checkpoint[=N]`)."""
        head, unknown = segments(word)[0]
        if unknown or not (isinstance(word, str) or "=" in head):
            return ""  # `$OPT`, `--${NAME}=...`: which option is not known
        name = head.partition("=")[0]
        if name in options:
            return name
        grammar = self._options_of(base)
        own = (*grammar.long_value, *grammar.long_optional, *grammar.long_flags)
        if len(name) < 3 or not name.startswith("--") or name[2:] in own:
            return ""
        return next((o for o in options if o.startswith(name)), "")

    def _option_command_may_train(self, base: str, after: list[Field]) -> bool:
        """Whether the command an option of `base` starts may train: where the rules say which words
        end it (`command_ends`: find's `-exec cat {} +`), the words before the first of them, judged
        as any command the walk does not run (may_train; a shell's `-c` text included, which no walk
        reads here); elsewhere, or with no end word, any may."""
        ends = self.spelling.command_ends.get(base)
        end = next((k for k, g in enumerate(after) if g.value in ends), None) if ends else None
        if end is None or end == 0:
            return True
        command = after[:end]
        if os.path.basename(str(command[0].value)) in self.spelling.shells:
            return True  # `find -exec sh -c 'TEXT' {} \;`: text the walk does not read
        return self.may_train(command) is not None

    def _may_run(self, line: str, at: int) -> bool:
        """Whether a command line a program runs (`trap CMD`, sed's `e CMD`, `--rsync-path=CMD`)
        may train: each simple command of its lists, as the shell reader parses it, decides
        (may_train: `mkdir -p /data && rsync` trains nothing); anything more (a loop, a group,
        a function, a word not literal: `$(...)`, `$X`; a here-document; text that does not
        parse) may."""
        broken: list[Finding] = []
        try:
            nodes = ShellParser(Lexer(line, self.path, at - 1).tokens(), self.path, broken).parse()
        except InputError:
            return True
        if broken or not all(_plain_list(n) for n in nodes):
            return True
        return any(self.may_train(command_fields(c, at)) is not None for c in simple_commands(nodes) if c.words)

    def _command_option(self, base: str, args: list[Field]) -> str:
        """An option's command line that may train (rules `command_options`: `rsync -e CMD`), read
        as any command line a program runs (_may_run: shell syntax in it may, `--rsync-path="cd
        /opt && torchrun ..."` runs through the remote shell), "" where none may: a remote shell
        first (`-e "ssh -p 2222"`) runs only the program's own command on the other host."""
        options = self.spelling.command_options.get(base, ())
        for k, g in enumerate(args):
            pieces = segments(g.value)
            name, eq, value = pieces[0][0].partition("=") if not pieces[0][1] else ("", "", "")
            short = next((o for o in options if len(o) == 2 and re.fullmatch(rf"-[a-zA-Z]*{o[1]}", name)), None)
            if not eq and (name in options or short) and k + 1 < len(args):
                given = args[k + 1].value
                line: str | Symbolic = given if isinstance(given, Symbolic) else str(given)
            elif eq and name in options:
                line = concat([value, *(Symbolic(t) if unknown else t for t, unknown in pieces[1:])])
            else:
                continue
            words = [Field(w, g.line) for w in line.split()] if isinstance(line, str) else [Field(line, g.line)]
            if not words or os.path.basename(str(words[0].value)) in self.spelling.remote_shells:
                continue
            if self._may_run(line, g.line) if isinstance(line, str) else self.may_train(words):
                return f"`{short or name}` command `{line}`"
        return ""

    def _runner_trains(self, fields: list[Field], runner: dict, prefix: list[Field],
                       command: list[Field]) -> tuple[Field, str] | None:
        """may_train of a runner's command (`docker run IMAGE CMD`, `runner` the rule it matched): an
        option that replaces its program (`--entrypoint`), no command where the runner then runs one
        of its own (the image's CMD) may train; else its command decides."""
        replaced = next((f for f in prefix if isinstance(f.value, str)
                         and f.value.partition("=")[0] in runner.get("program_options", ())), None)
        if replaced is not None:
            return replaced, "which replaces the program the runner starts"
        if not command:
            return (fields[0], runner["own_command"]) if runner.get("own_command") else None
        if runner.get("script_program") and isinstance(command[0].value, str) and command[0].value.endswith(".py"):
            return command[0], runner["script_program"]  # `docker run img train.py`: its ENTRYPOINT's
        return self.may_train(command)

    def _named(self, fields: list[Field]) -> str:
        """A command's program as a reader names it: `docker build`, `make html`, `pip` (its
        subcommand where the rules judge the program by it), past wrappers and their options."""
        words = [str(f.value) for f in fields]
        k = next((i for i, w in enumerate(words) if os.path.basename(w) not in self.spelling.wrappers
                  and not w.startswith("-") and not _ENV_WORD.match(w)), 0)
        held = next((i for i, w in enumerate(words[:k]) if os.path.basename(w) in self.spelling.wrapper_operands), None)
        if held is not None:  # `flock -n "$fd"`: the lock's wrapper, or the command after its operands
            at = self._operands_end(os.path.basename(words[held]), fields[held + 1:])
            return self._named(fields[held + 1 + at:]) if isinstance(at, int) else os.path.basename(words[held])
        if (module := self._python_module(fields[k:])) is not None:
            return f"{os.path.basename(words[k])} -m {module}"
        base = os.path.basename(words[k]) if words else ""
        sub = words[k + 1] if k + 1 < len(words) else ""
        judged = base in self.spelling.no_training_subcommands or any(r["program"] == base for r in self.spelling.runners)
        return f"{base} {sub}" if judged and sub else base

    def _names_launcher(self, fields: list[Field]) -> bool:
        """A program not followed whose words name a launcher (`debugpy-run -m torch.distributed.run
        -- train.py`): a plain `python` command elsewhere in the script is then not the run."""
        programs = {p for e in self.spelling.launchers for p in (e.get("programs") or [e.get("program")]) if p}
        modules = [m for e in self.spelling.launchers for m in e.get("python_modules", ())]
        return any(isinstance(f.value, str) and (os.path.basename(f.value) in programs or any(
            fnmatch.fnmatchcase(f.value, m) for m in modules)) for f in fields[1:])

    def _launch(self, fields: list[Field], inline: dict[str, EnvVar], cmd: Cmd) -> Candidate | None:
        """The training command in `fields`, possibly behind wrappers (srun, env, nohup, ...)."""
        # An unknown first word (`${PROFILE_CMD} python ...`, empty unless profiling) is read as a
        # wrapper: a launcher after it is still the command, with a note.
        wrapped = not isinstance(fields[0].value, str) or os.path.basename(fields[0].value) in self.spelling.wrappers
        ran = self._runner(fields)
        if ran is not None:  # `uv run [options] python -m torch.distributed.run ...`
            rule, prefix, command, moved = ran
            where = self.workdir, self.cwd
            if rule.get("workdir_unknown"):  # `docker run IMAGE`: in the container's own files, at
                # `-w DIR` or where the image's WORKDIR puts it (a `bash -c` script's `cd` from there)
                self.workdir, self.cwd = moved, moved
            elif moved != "":  # `uv run --directory DIR`: the command runs in DIR
                self.workdir, self.cwd = join_workdir(self.workdir, moved), join_workdir(self.cwd, moved)
            ran_before = len(self.candidates), len(self.last_resort)
            try:
                candidate = self._launch(command, inline, cmd) if command else None
            finally:
                self.workdir, self.cwd = where
            if candidate is not None:
                candidate.wrapper = prefix + candidate.wrapper
            if rule.get("workdir_unknown"):  # each command it runs, a `bash -c` script's included
                inner = [candidate] if candidate is not None else []
                for c in inner + self.candidates[ran_before[0]:] + self.last_resort[ran_before[1]:]:
                    c.inside = self._host_folder(rule, prefix, c.workdir)
            return candidate
        for k, f in enumerate(fields):
            if not isinstance(f.value, str):
                if k == 0:
                    self.unresolved_commands.append(f)
                if wrapped:
                    continue
                return None
            base = os.path.basename(f.value)
            if base in self.spelling.separated:  # `ray job submit ... -- python3 train.py ...`
                end = next((j for j in range(k + 1, len(fields)) if fields[j].value == "--"), None)
                if end is None or end + 1 >= len(fields):
                    return None
                # `ray job submit -- python3 train.py`: a launcher naming ray starts the script
                runner = next((e for e in self.spelling.launchers
                               if e.get("interpreters") and base in e.get("programs", ())), None)
                saved, self.starter = self.starter, (runner, []) if runner is not None else self.starter
                try:
                    candidate = self._launch(fields[end + 1:], inline, cmd)
                finally:
                    self.starter = saved
                if candidate is not None:
                    candidate.wrapper = fields[:end + 1] + candidate.wrapper
                return candidate
            if base in self.spelling.shells or base in self.spelling.batch:
                self._unknown_prefix(fields[:k], f"`{base}` command", cmd)
                return self._shell_c(fields[:k + 1], fields[k + 1:], cmd, inline)
            launcher, invoked, sub, start = self._match_launcher(fields, k)
            if launcher is None and "/" in f.value and (shell := self._shebang(f.value)) is not None:
                return self._shell_c(fields[:k] + [Field(shell, f.line)], fields[k:], cmd)  # `srun ./job.sh`
            args = fields[start:]
            if (launcher is None and self.starter is not None and is_interpreter(base, self.starter[0])
                    and not _code_string(fields, k)):
                # `srun ... bash -c "python pretrain_gpt.py ..."`: srun starts each process of the script
                launcher, options = self.starter
                invoked, sub, args = launcher["name"], "", options + fields[k:]
            if launcher is None and (built := self._builds_entry(fields, k)) is not None:
                launcher, invoked, sub, args = built, built["name"], "", fields[k:]
            if launcher is None and (plain := self._one_process(fields, k, inline)) is not None:
                launcher, invoked, sub, args = plain, base, "", fields[k:]
            if launcher is not None:
                wrapper = fields[:k]
                self._unknown_prefix(wrapper, f"`{invoked}` command", cmd)
                if wrapper and os.path.basename(str(wrapper[0].value)) == "env":
                    for w in wrapper[1:]:
                        name, eq, value = str(w.value).partition("=")
                        if eq and NAME.fullmatch(name):
                            inline[name] = EnvVar(name, value, w.line, "inline")
                candidate = Candidate(
                    launcher, invoked, sub, args, wrapper, inline, dict(self.vars),
                    cmd.line, cmd.end_line, self.conditional > 0, fields[0].line, self.cwd, self.workdir,
                    cmd.words[0].raw if cmd.words else "", list(cmd.redirects), [self.cwd] * len(cmd.redirects),
                    after=self.guards, fetched=tuple(self.fetched))
                moved = self._wrapper_workdir(fields[:k + 1] + args)
                if moved != "":  # `srun --container-workdir=DIR python x.py`: the command runs in DIR
                    candidate.workdir = join_workdir(candidate.workdir, moved)
                    candidate.cwd = join_workdir(candidate.cwd, moved)
                if launcher.get("one_process"):
                    self.last_resort.append(candidate)
                    return None
                self.candidates.append(candidate)
                return candidate
            if not wrapped:
                return None
        return None

    def _unknown_prefix(self, wrapper: list[Field], what: str, cmd: Cmd) -> None:
        """A first word not known statically before the command read (`${PROFILE_CMD} python
        ...`, `${SRUN_CMD} ... bash -c "..."`: a string a loop or a caller's words made unknown):
        read as empty or a wrapper that runs it, it may as well be a command of its own that
        trains, so it is one the walk did not follow (`unfollowed`): a plain `python` command
        read behind it is then no guess of the run's (config.launch `_last_resort`)."""
        if wrapper and not isinstance(wrapper[0].value, str):
            self.unfollowed.append(Unfollowed(wrapper[0].line, wrapper[0].value, "which is not known statically"))
            self.diagnostics.append(Finding(
                "launch.unknown-prefix", "info",
                f"`{wrapper[0].value}` before the {what} is not known statically; read "
                "as empty or a wrapper that runs the command", where=f"{self.path}:{cmd.line}"))

    def _shebang(self, name: str) -> str | None:
        """The shell a script file run by its path (`./job.sh`, `srun scripts/run.sh`) names on its
        `#!` line (`#!/bin/bash`, `#!/usr/bin/env bash`); None for any other program, or a file
        not found."""
        try:
            text = self.locate(name, sourced=False)[1]
        except OSError:
            return None
        first = text.split("\n", 1)[0]
        words = first[2:].split() if first.startswith("#!") else []
        if words and os.path.basename(words[0]) == "env":
            words = [w for w in words[1:] if not w.startswith("-")]
        shell = os.path.basename(words[0]) if words else ""
        return shell if shell in self.spelling.shells else None

    def _builds_entry(self, fields: list[Field], k: int) -> dict | None:
        """The launcher of `python [options] SCRIPT` (or behind a python runner: `coverage run
        [options] SCRIPT`) whose SCRIPT builds one of a launcher rule's `entry_builds`
        (`nl.MegatronStrategy(...)`: Lightning starts the processes, rules/nemo.toml)."""
        words = [os.path.basename(str(f.value)) for f in fields]
        runner = next((r for r in self.spelling.python_runners if words[k:k + len(r)] == list(r)), None)
        j = k + (len(runner) if runner else 1)
        while j < len(fields) and isinstance(flag := fields[j].value, str) and flag.startswith("-"):
            if flag in ("-m", "-c"):
                return None  # a module or a command string, not a script beside the launch script
            j += 2 if flag in ("-X", "-W") else 1
        script = fields[j].value if j < len(fields) else None
        if not isinstance(script, str) or not script.endswith(".py"):
            return None
        for launcher in self.spelling.launchers:
            if launcher.get("entry_builds") and (runner is not None or is_interpreter(words[k], launcher)) \
                    and builds(script, self.path, tuple(launcher["entry_builds"])):
                return launcher
        return None

    def _one_process(self, fields: list[Field], k: int, inline: dict[str, EnvVar]) -> dict | None:
        """The `one_process` launcher rule of `python [options] SCRIPT.py` (`-m MODULE`: a module
        found under the script's module roots, config.entry_module), or None: a command string
        (`-c`), stdin, a word not known statically."""
        rule = python_rule(self.spelling)
        if rule is None or not is_interpreter(os.path.basename(str(fields[k].value)), rule):
            return None
        j = k + 1
        while j < len(fields) and isinstance(flag := fields[j].value, str) and flag.startswith("-"):
            if flag == "-m" and j + 1 < len(fields) and isinstance(module := fields[j + 1].value, str):
                env = {n: EnvVar(n, v.value, v.line, "export") for n, v in self.vars.items()
                       if v.exported and isinstance(v.value, str)} | inline
                return rule if module_file(module, module_roots(env, self.path)) else None
            if flag in ("-c", "-"):
                return None
            j += 2 if flag in ("-X", "-W") else 1
        script = fields[j].value if j < len(fields) else None
        return rule if isinstance(script, str) and script.endswith(".py") else None

    def _wrapper_workdir(self, words: list[Field]) -> str | None:
        """The directory a wrapper's option (`srun --container-workdir=DIR`, [wrappers]
        cwd_options) runs the command in: "" where none is given, None where one is not known
        statically. Only the options right after a wrapper program are read."""
        moved: str | None = ""
        options = self.spelling.cwd_options
        inside = False
        for k, word in enumerate(words):
            value = word.value
            if isinstance(value, str) and os.path.basename(value) in self.spelling.wrappers:
                inside = True
                continue
            head = segments(value)[0][0]
            if inside and not isinstance(value, str) and head.partition("=")[0] in options and "=" in head:
                moved = None  # `--chdir=${DIR}`: a directory not known statically
                continue
            if inside and isinstance(value, OptionWords) and any(
                    segments(w)[0][0].partition("=")[0] in options for w in value.words):
                moved = None  # a branch may add `--chdir DIR`: where the command runs is not known
                continue
            if not inside or not isinstance(value, str) or not value.startswith("-"):
                inside = inside and not isinstance(value, str)
                continue
            name, eq, given = value.partition("=")
            if name in options:
                after = words[k + 1].value if k + 1 < len(words) else None
                moved = given if eq else after if isinstance(after, str) else None
        return moved

    def _host_folder(self, runner: dict, prefix: list[Field], workdir: str | None) -> str | None:
        """The folder here that a container's working directory `workdir` is, through a bind mount
        of the runner's options (`-v HOST:/workspace`, `--mount type=bind,source=HOST,target=DIR`;
        the innermost holding it); None where no mount maps it or either side is not known."""
        if workdir is None or not os.path.isabs(workdir):
            return None
        best: tuple[str, str] | None = None
        for k, f in enumerate(prefix):
            word = f.value if isinstance(f.value, str) else ""
            option, eq, given = word.partition("=")
            if option not in runner.get("mount_options", ()):
                continue
            value = given if eq else prefix[k + 1].value if k + 1 < len(prefix) else None
            if not isinstance(value, str):
                continue
            if option == "--mount":
                parts = dict(p.partition("=")[::2] for p in value.split(","))
                host = parts.get("source") or parts.get("src") or ""
                inner = parts.get("target") or parts.get("destination") or parts.get("dst") or ""
            else:
                host, _, rest = value.partition(":")
                inner = rest.partition(":")[0]
            folder = join_workdir(self.cwd, host) if host.startswith(("/", ".")) else None  # else a named volume
            inner = os.path.normpath(inner) if inner.startswith("/") else ""
            if folder is not None and inner and (workdir == inner or workdir.startswith(inner.rstrip("/") + "/")) \
                    and (best is None or len(inner) > len(best[1])):
                best = folder, inner
        return None if best is None else os.path.normpath(os.path.join(best[0], os.path.relpath(workdir, best[1])))

    def _runner(self, fields: list[Field]) -> tuple[dict, list[Field], list[Field], str | None] | None:
        """(the rule matched, the runner's words, the command it runs, the directory it runs it in: "" where no
        `cwd_options` option moves it, None where that is not known statically) for `uv run
        [options] COMMAND`; `uv run -m MODULE` and `uv run script.py` run python. None when
        `fields` is no such runner. A word not known statically where the options stand may be
        such an option (`conda run $CONDA_OPTS python ...`): the directory is not known."""
        head = os.path.basename(str(fields[0].value))
        runner = next((r for r in self.spelling.runners if r["program"] == head and len(fields) > 1
                       and fields[1].value == r["subcommand"]), None)
        if runner is None:
            return None
        k = 2
        # `docker run IMAGE CMD`: in the image's WORKDIR unless an option names one
        moved: str | None = None if runner.get("workdir_unknown") else ""
        moves = runner.get("cwd_options", ())
        while k < len(fields) and isinstance(option := fields[k].value, str) and option.startswith("-"):
            name, eq, value = option.partition("=")
            if name in moves:
                given = value if eq else fields[k + 1].value if k + 1 < len(fields) else None
                moved = given if isinstance(given, str) else None
            if option in runner.get("module_options", ()):
                python = Field("python", fields[k].line)
                return runner, fields[:k], [python, Field("-m", fields[k].line), *fields[k + 1:]], moved
            k += 2 if option in runner.get("value_options", ()) else 1
        if k < len(fields) and not isinstance(fields[k].value, str):
            moved = None
        k += runner.get("operands", 0)  # the image or container the command runs in
        command = fields[k:]
        if command and runner.get("python_scripts") and isinstance(command[0].value, str) \
                and command[0].value.endswith(".py"):  # `uv run train.py` is `python train.py`
            command = [Field("python", command[0].line), *command]
        return runner, fields[:k], command, moved

    def _match_launcher(self, fields: list[Field], k: int) -> tuple[dict | None, str, str, int]:
        """(launcher rule, how it was invoked, subcommand, index of its first argument)."""
        base = os.path.basename(str(fields[k].value))
        after = fields[k + 1].value if k + 1 < len(fields) else None
        module, j = None, k + 1
        runner = next((r for r in self.spelling.python_runners
                       if [os.path.basename(str(f.value)) for f in fields[k:k + len(r)]] == list(r)), None)
        if runner is not None:  # `coverage run -m torch.distributed.run ...` is python's
            j = k + len(runner)
        python = bool(re.fullmatch(r"python[0-9.]*", base))  # `echo x/run_x.py` names a script, runs none
        if runner is not None or python:
            while j < len(fields) and isinstance(flag := fields[j].value, str) and flag.startswith("-"):
                if fields[j].value == "-m" and j + 1 < len(fields):
                    module, j = fields[j + 1].value, j + 2
                    break
                j += 2 if fields[j].value in ("-X", "-W") else 1
        copy = self._copy_word(fields, j, module)
        for launcher in self.spelling.launchers:
            if launcher.get("program") == base and isinstance(after, str) and (
                    after in launcher["subcommands"] or after in launcher.get("not_pipeline", {})):
                return launcher, f"{base} {after}", after, k + 2
            if base in launcher.get("programs", ()) and (
                    not launcher.get("interpreters") or self._runs_script(fields, k, launcher)):
                return launcher, base, "", k + 1
            if isinstance(module, str) and any(fnmatch.fnmatchcase(module, p) for p in launcher.get("python_modules", ())):
                return launcher, f"python -m {module}", "", j
            if module is None and runner is None and python and self._python_script(fields, j, launcher):
                return launcher, base, "", j
            # a copy of the launcher's Hydra main, a script or a `-m` module (config/entry_copy.py):
            # the module's run with the copy its first argument, or the script's run (the reader
            # composes the copy's own config)
            if runner is None and python and hydra_copy(launcher, copy, self.path):
                modules = launcher.get("python_modules")
                at = j - 1 if isinstance(module, str) else j
                if modules:
                    return launcher, f"python -m {modules[0]}", "", at
                if module is None:
                    return launcher, base, "", j
        return None, "", "", k

    def _copy_word(self, fields: list[Field], j: int, module: Scalar) -> Scalar:
        """What python runs that may be a copy of a launcher's Hydra main: the script at `j`, or
        the `-m` module no launcher names itself (`verl.trainer.main_generation` is its own)."""
        if module is None:
            return fields[j].value if j < len(fields) else None
        named = any(fnmatch.fnmatchcase(str(module), p) for other in self.spelling.launchers
                    for p in other.get("python_modules", ()))
        return None if named or not isinstance(module, str) else module

    def _python_script(self, fields: list[Field], j: int, launcher: dict) -> bool:
        """`python examples/start_rlvr_pipeline.py ...`: python runs a script the launcher names
        (`python_scripts`, fnmatch over its file name, or over as many trailing path parts as a
        pattern has: `chatlearn/entrypoint.py`), or a copy of it (`script_copies`,
        config/entry_copy.py), which starts the workers itself. A tool that trains nothing
        (`trains = false`: its name says what it is, its file is not read) is known by the path
        parts after the last unknown piece of the word."""
        patterns = launcher.get("python_scripts", ())
        value = fields[j].value if j < len(fields) else None
        if isinstance(value, Symbolic) and launcher.get("trains") is False:
            value = _known_tail(value)  # `python $CKPT/zero_to_fp32.py`: a tool known by its name
        return bool(patterns) and isinstance(value, str) and (any(
            fnmatch.fnmatchcase("/".join(os.path.normpath(value).split("/")[-(p.count("/") + 1):]), p)
            for p in patterns) or is_copy(launcher, value, self.path))

    def _runs_script(self, fields: list[Field], k: int, launcher: dict) -> bool:
        """`srun [options] python SCRIPT`: the program starts the training script itself, no other
        launcher (`srun torchrun ...`, `srun python -m torch.distributed.run ...`) in between."""
        for j in range(k + 1, len(fields)):
            base = os.path.basename(str(fields[j].value))
            if is_interpreter(base, launcher):
                return self._match_launcher(fields, j)[0] is None
            if base in self.spelling.shells or self._match_launcher(fields, j)[0] is not None:
                return False
        return False

    def _options_of(self, program: str) -> Grammar:
        """A program's options as the rules give them (`option_grammar`)."""
        return Grammar.of(self.spelling.option_grammar.get(program, {}))

    def _is_python(self, word: Field) -> bool:
        """Whether a command's first word is a Python interpreter of the one-process rule (python_rule)."""
        rule = python_rule(self.spelling)
        return rule is not None and is_interpreter(os.path.basename(str(word.value)), rule)

    def _shell_c(self, prefix: list[Field], fields: list[Field], cmd: Cmd,
                 inline: dict[str, EnvVar] | None = None) -> Candidate | None:
        """`bash -c "torchrun ..."`: read the string as a script of its own, in this shell.
        `inline`: the command's `VAR=x` prefix, which a job that sbatch submits gets (`COMMAND=$COMMAND
        sbatch ray.sub`) as it gets the exported variables."""
        shell = os.path.basename(str(prefix[-1].value))
        c_text = _c_text_at(fields, self._options_of(shell) if shell in self.spelling.shells else None)
        if c_text is not None:
            k, t = c_text
            option, _, inline_text = str(fields[k].value).partition("=")
            text = fields[t].value if t > k else inline_text
            saved_positional, callers = self.positional, _callers_positional(text)
            if shell in self.spelling.shells:
                self.positional = self.rebound(None if callers else _c_positional(fields[t + 1:]))
            self.caller_text += callers
            try:
                self._inner(prefix + fields[:k + 1], option, text, fields[t].line, cmd)
            finally:
                self.positional = saved_positional
                self.caller_text -= callers
            return None
        self.shelled += 1
        batch = os.path.basename(str(prefix[-1].value)) in self.spelling.batch
        at = (job_file_at(fields, self.spelling) if batch
              else next((k for k, f in enumerate(fields) if not str(f.value).startswith("-")), None))
        later = _c_text_at(fields[at + 1:], self._options_of(shell)) if not batch and at is not None else None
        if at is not None and later is not None and not isinstance(fields[at].value, str):
            self.unfollowed.append(Unfollowed(cmd.line, prefix[-1].value,
                                              self._before_c(fields[at], fields[at + 1 + later[1]].value)))
            return None
        if at is None:
            if cmd.stdin is not None:  # `sbatch <<EOF`, `bash <<EOF`: the script is stdin
                self._inner(prefix + fields, "<<", cmd.stdin.body, cmd.stdin.line, cmd)
            else:  # `... | bash`, `bash < f`, `curl URL | sh`: commands from a pipe or a file, not read
                self.unfollowed.append(Unfollowed(cmd.line, prefix[-1].value,
                                                  "which reads its commands from stdin (a pipe or a file), not read here"))
            return None
        script = fields[at]
        line = 1
        try:  # `mpirun ... bash entry.sh pretrain.py <flags>`: entry.sh as bash opens it, with its arguments
            written = self.written_file(script.value)  # `printf '%s' "$COMMAND" > F` earlier: its text
            if written is not None:
                path, text, line = written
            elif not isinstance(script.value, str):
                raise OSError("its path is not known statically")
            else:
                path, text = self._open(script.value, batch, cmd)
        except OSError as exc:
            self.diagnostics.append(Finding(
                "launch.unread-file", "info",
                f"`{script.value}` runs as a separate script and is not read here ({exc}); audit it directly "
                "if it holds the training command", where=f"{self.path}:{cmd.line}"))
            self.unfollowed.append(Unfollowed(cmd.line, f"{prefix[-1].value} {script.value}",
                                              f"a script not read here ({exc})"))
            return None
        saved = self.positional, self.vars, self.functions, self.referenced
        self.positional = fields[at + 1:]
        if batch:  # the job gets the environment, not the submitting shell's variables and functions
            self._submit(fields[:at], path, cmd, inline or {})
            self.referenced = set()
        try:
            self._inner(prefix + fields[:at + 1], str(script.value), text, line, cmd, path)
        finally:
            read, self.referenced = self.referenced, saved[3] | self.referenced
            if batch:
                self._not_exported(saved[1], read - set(inline or {}), path, cmd)
            self.positional, self.vars, self.functions = saved[:3]
            self.submitted.clear()
        return None

    def _before_c(self, word: Field, text: Scalar) -> str:
        """Why `bash $OPTS -c "torchrun ..."` is not followed: a word not known statically before
        `-c` is an option or the script bash runs (`-c` then the script's), unknown here; unset or
        empty, unquoted, it vanishes (bash(1) Word Splitting) and bash runs the text. The script
        may not set it and its caller still may: the text is named for --command."""
        name = _VARIABLE.fullmatch(str(word.value))
        unset = " (the script never sets it; unset, it vanishes)" if name and name.group(1) not in self.vars else ""
        return (f"whose word `{word.value}` before `-c` is not known statically{unset}: whether bash runs "
                f"the `-c` text `{text}` or a script is unknown")

    def _not_exported(self, caller: dict[str, Var], read: set[str], path: str, cmd: Cmd) -> None:
        """The variables a job file reads, and never sets but through their own fallback
        (`COMMAND=${COMMAND:-}`; `self.vars` are still the job's), that the submitting script sets
        without `export`: the job does not get them (sbatch passes the environment)."""
        for name in sorted(n for n in read if n in caller and not caller[n].exported
                           and (n not in self.vars or n in self.vars[n].fallbacks)):
            message = (f"the job file {path} reads {name}, which the script sets at line {caller[name].line} "
                       f"without `export`: the job submitted at line {cmd.line} does not get it")
            self.hidden_from_job.append(message)
            self.diagnostics.append(Finding("launch.not-exported-to-job", "warning", message,
                                            fix=f"export {name}", where=f"{self.path}:{caller[name].line}"))

    def _open(self, name: str, batch: bool, cmd: Cmd) -> tuple[str, str]:
        """(path, text) of the script `bash NAME` or `sbatch NAME` opens; a job file that the
        launch directory, unknown after a `cd`, may hold is read from the checkout (said)."""
        try:
            return self.locate(name, sourced=False)
        except OSError:
            found = in_checkout(name, self.path) if batch and self.cwd is None else None
            if found is None:
                raise
        self.diagnostics.append(Finding(
            "launch.job-file-in-checkout", "info",
            f"`{name}` is opened from the directory the job is submitted from, not known here after a `cd`; "
            f"read from the checkout around the launch script: {found}",
            fix="run p2paudit from the directory the job is submitted from", where=f"{self.path}:{cmd.line}"))
        return self.locate(found, sourced=False)

    def _submit(self, options: list[Field], path: str, cmd: Cmd, inline: dict[str, EnvVar]) -> None:
        """Start the walk of a job file as sbatch runs it: with the variables the script exports and
        those its `VAR=x` prefix sets (bash(1) "Environment": they are in the environment of the
        command, which sbatch passes on), and the allocation its options ask for, which the file's
        `#SBATCH` lines do not change."""
        self.vars = {n: v for n, v in self.vars.items() if v.exported and not isinstance(v.value, list)}
        for name, var in inline.items():
            self.vars[name] = Var(var.value if isinstance(var.value, (str, Symbolic)) else str(var.value),
                                  var.line, True)
        self._batch_export(options)
        submit = self.cwd if self.cwd is not None else self.workdir
        if submit and os.path.isabs(submit) and "SLURM_SUBMIT_DIR" not in self.environ:
            # sbatch(1): "the directory from which sbatch was invoked", where a job's
            # `srun --container-workdir=$SLURM_SUBMIT_DIR bash -c ...` starts (NeMo-RL ray.sub:255)
            self.vars["SLURM_SUBMIT_DIR"] = Var(submit, cmd.line, True)
        self.functions = {}
        given = allocation_options(options, self.spelling)
        for name, value in given.items():
            if name not in self.environ or name in self.allocation:  # the audit's environment wins
                self.environ[name] = value
                self.allocation[name] = cmd.line
                self.allocation_file[name] = ""
                self.submitted.add(name)
                self.by_sbatch.add(name)
        self.diagnostics.append(Finding(
            "launch.job-file", "info",
            f"`{cmd.words[0].raw}` at line {cmd.line} submits the job file {path}: read with the variables the "
            "script exports" + (f" and {', '.join(sorted(inline))}, which its prefix sets" if inline else "")
            + (f"; its options set {', '.join(sorted(given))}, over the file's #SBATCH lines"
                                if given else ""), where=f"{self.path}:{cmd.line}"))

    def _batch_export(self, options: list[Field]) -> None:
        """sbatch's `--export=...` (read as srun's, sbatch(1) gives it the same grammar): the
        variables the job file starts with (config.export_option)."""
        rule = next((e for e in self.spelling.launchers if e.get("directive") == "#SBATCH"), {})
        for value, line in option_values(rule, options):
            drops, sets, note = effect(rule, value, f"sbatch's --export={value} (line {line})",
                                       {n: v.value for n, v in self.vars.items()},
                                       self.spelling.env_names)
            if note:
                self.diagnostics.append(Finding("launch.export-option", "info", note, where=f"{self.path}:{line}"))
            for name in drops:
                del self.vars[name]
            for name, setting in sets.items():
                self.vars[name] = Var(setting if isinstance(setting, (str, Symbolic)) else str(setting), line, True)
            default = rule.get("env_default")
            if default and default not in self.vars and str(value).upper() != rule.get("env_keep_all"):
                self.vars[default] = Var(value if isinstance(value, (str, Symbolic)) else str(value), line, True)

    def _inner(self, prefix: list[Field], how: str, value: object, line: int, cmd: Cmd,
               path: str | None = None) -> None:
        """Read `value`, a script that `prefix` runs (from file `path`), in this shell. It starts
        where the prefix's working-directory option puts it (`_wrapper_workdir`: `srun --chdir`,
        `-D`), not known where that option's value is not; else where this shell is."""
        reading = path or self.reading  # ${BASH_SOURCE[0]} of a script file is that file
        path = path or self.path
        if self.depth >= MAX_NESTING:
            raise InputError(self.path, f"`{how}` scripts nested more than {MAX_NESTING} deep", cmd.line)
        # A symbolic string keeps its unknown parts as written (`$SLURM_NNODES`), so reading
        # it again leaves exactly those parts symbolic.
        text = str(value)
        before = len(self.candidates)
        outer = self.cwd  # where this shell opens the redirections of the command running `value`
        outside = dict(self.vars)  # what the task's own shell sets differs from these
        saved, saved_reading = self.starter, self.reading
        starts = self._starter(prefix)
        self.starter = starts or saved
        self.reading = reading
        self.depth += 1
        moved = self._wrapper_workdir(prefix)
        try:
            with self.own_shell():  # a shell of its own: its `exit` ends it, not this script
                if moved != "":  # `srun --chdir=DIR bash -c "cd tools && ..."`: it starts in DIR
                    self.workdir, self.cwd = join_workdir(self.workdir, moved), join_workdir(self.cwd, moved)
                lexer = Lexer(text, path, line - 1)
                tokens = lexer.tokens()
                self.allocate(lexer, tokens)
                self.run(ShellParser(tokens, path, self.diagnostics).parse())
        except InputError as exc:  # the inner shell fails at run time; the script itself is fine
            self.diagnostics.append(Finding(
                "launch.syntax", "warning", f"the `{how}` script cannot be read: {exc.cause}",
                where=f"{path}:{exc.line or cmd.line}"))
        finally:
            self.depth -= 1
            self.starter, self.reading = saved, saved_reading
        for candidate in self.candidates[before:]:
            if starts is not None:  # set in the task's shell, inline on its command included
                candidate.in_task |= frozenset(candidate.inline) | frozenset(
                    n for n, v in candidate.env.items() if outside.get(n) is not v)
            candidate.wrapper = prefix + candidate.wrapper
            candidate.first_word = cmd.words[0].raw if cmd.words else candidate.first_word
            candidate.opened_in = [outer] * len(cmd.redirects) + candidate.opened_in
            candidate.redirects = list(cmd.redirects) + candidate.redirects  # the outer ones apply first

    def _starter(self, prefix: list[Field]) -> tuple[dict, list[Field]] | None:
        """A program in `prefix` that starts the processes of the script it runs (srun), and its
        options: `srun -N 2 bash -c "python pretrain_gpt.py"` runs the python once per task."""
        for i, f in enumerate(prefix):
            base = os.path.basename(str(f.value))
            for launcher in self.spelling.launchers:
                if launcher.get("interpreters") and base in launcher.get("programs", ()):
                    options = []
                    for g in prefix[i + 1:]:
                        if os.path.basename(str(g.value)) in self.spelling.shells:
                            break
                        options.append(g)
                    return launcher, options
        return None

    def _join_broken_continuation(self, nodes: list[Node], k: int, command: Cmd, candidate: Candidate) -> int:
        """The seed report's shape: flags on the lines after `megatron sft`, without `\\`; also
        lines whose first field is a flag only after expansion (`${MODEL_ARGS[@]} \\`). A line
        whose first field is not known statically, indented under a command of several lines,
        may be either: read as the continuation (its flags unknown) with a warning, never as
        nothing. `command` is `nodes[k]`."""
        j = k + 1
        continuation: list[Cmd] = []
        shown: list[str] = []  # what bash says is not found, per continuation line
        known = True
        while j < len(nodes) and isinstance(node := nodes[j], Cmd) and node.words:
            if not re.search(r"[$`]", node.words[0].raw) and not node.words[0].raw.startswith("--"):
                break  # a literal command name: a command of its own, left to the walk
            fields = [f for w in node.words for f in self.expand(w)]
            first = self._first_field(node, fields, command, j == k + 1)
            if first is None:
                break
            known = known and first is not _UNKNOWN
            shown.append(first)
            continuation.append(node)
            candidate.args.extend(fields)
            j += 1
        if j == k + 1:
            return k
        candidate.end_line = continuation[-1].end_line
        prefix_lines = []
        q, expected = k - 1, command.line - 1
        while (q >= 0 and isinstance(before := nodes[q], Cmd) and before.words and before.end_line == expected
               and all(ASSIGN.match(w.raw) for w in before.words)):
            for w in before.words:
                name, value = self.assignment_value(w)
                if not isinstance(value, list):
                    candidate.inline.setdefault(name, EnvVar(name, value, w.line, "inline"))
            prefix_lines.append(before.line)
            q, expected = q - 1, before.line - 1
        end, following = command.end_line, continuation[0]
        span = f"line {end}" if command.line == end else f"lines {command.line}-{end}"
        text = self.lines[end - 1] if 0 < end <= len(self.lines) else ""
        why = ""
        if re.search(r"\\[ \t]+$", text):
            why = f" (line {end} ends in `\\` and a space: the `\\` escapes the space, not the line end)"
        elif re.search(r"#.*\\\s*$", text):
            why = f" (the `\\` at the end of line {end} is inside a comment)"
        prefix = (f"; the assignments on lines {min(prefix_lines)}-{max(prefix_lines)} are read as that "
                  "command's environment (as written they are unexported shell variables)") if prefix_lines else ""
        raw = following.words[0].raw
        lines = f"lines {following.line}-{candidate.end_line}"
        if not known:
            self.diagnostics.append(Finding(
                "launch.broken-continuation", "warning",
                f"the `{candidate.invoked}` command stops at line {end}, which does not end in `\\`{why}, and "
                f"line {following.line} begins with `{raw}`, not known statically: if it holds flags, bash runs "
                f"{span} as the whole command without them and then fails on line {following.line}; "
                f"{lines} are read here as its continuation, with the flags `{raw}` may hold unknown{prefix}",
                fix=f"end line {end} with ` \\` if {lines} continue the command",
                where=f"{self.path}:{end}",
                detail={"command_lines": [command.line, end], "continuation_lines": [following.line, candidate.end_line]}))
            return j - 1
        expanded = "" if shown[0] == raw else f" (`{raw}` expands to flags)"
        self.diagnostics.append(Finding(
            "launch.broken-continuation", "error",
            f"the `{candidate.invoked}` command stops at line {end}, which does not end in `\\`{why}: as written, "
            f"bash runs {span} as the whole command, then fails on line {following.line} with "
            f"`{shown[0]}: command not found`{expanded}; {lines} are read here as its continuation{prefix}",
            fix="end every line of the command except the last with ` \\` (nothing after it)",
            where=f"{self.path}:{end}",
            detail={"command_lines": [command.line, end], "continuation_lines": [following.line, candidate.end_line]}))
        return j - 1

    def _first_field(self, node: Cmd, fields: list[Field], command: Cmd, right_after: bool) -> str | None:
        """The word bash would run `node` as, where it is a flag (`--num-layers`, literal or after
        expansion), so `node` was meant to continue the command before it; `_UNKNOWN` where it is
        not known statically but `node`, indented under a command of several lines right before
        it, reads as such a continuation; None where `node` is a command of its own. `fields`
        are its words expanded."""
        if node.words[0].raw.startswith("--"):
            return node.words[0].raw
        if not fields:
            return None
        if isinstance(fields[0].value, str):
            return fields[0].value if fields[0].value.startswith("--") else None
        after = next((f.value for f in fields if isinstance(f.value, str)), "--")
        return _UNKNOWN if (right_after and command.end_line > command.line and after.startswith("-")
                            and _indent(self.lines, node.line) > _indent(self.lines, command.line)) else None


# shell syntax in a command string (`trap "cleanup; exit" EXIT`): more than one simple command
_UNKNOWN = "?"  # a first field not known statically (LaunchShell._first_field)


def _code_string(fields: list[Field], k: int) -> bool:
    """`python -c CODE` at `k`: a program in a string (a warm-up: NeMo-RL's COMMAND runs `python -c
    "...AutoConfig.from_pretrained(...)"` before its trainer), no training script."""
    for f in fields[k + 1:]:
        if not isinstance(f.value, str) or not f.value.startswith("-"):
            return False
        if f.value == "-c":
            return True
    return False


def _indent(lines: list[str], line: int) -> int:
    """How far line `line` (1-based) of the script is indented; 0 where the text is not at hand."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return len(text) - len(text.lstrip(" \t"))


def _reads_c_text(args: list[Field], grammar: Grammar) -> bool:
    """Whether a shell's arguments are options with `-c` (`-x -c`, `-lc`, `-o pipefail -c`) and
    then a text known: `srun ... bash -x -c "${RUN_CMD}"` (Megatron-LM d98e8a64dd
    examples/megatron_fsdp/sbatch_checkpoint_convert.sh:47) is read as `bash -c` is. A word not an
    option before it (`bash job.sh -c X`: bash runs job.sh) leaves the command unfollowed."""
    at = _c_text_at(args, grammar)
    return at is not None and isinstance(args[at[1]].value, (str, Partial))


def _c_positional(after: list[Field]) -> list[Field] | None:
    """The positional parameters of `bash -c TEXT NAME ARG...`: the words after NAME, which is
    $0 (bash(1) INVOCATION: "the first argument is assigned to $0 and any remaining arguments are
    assigned to the positional parameters"); none where no word follows TEXT, never the calling
    script's. Megatron-Bridge 067f987df0 examples/models/exaone/exaone_moe/slurm_inference.sh:108-122
    passes its sizes so (`bash -c '... --pp "$6" ...' bash "$WORKDIR" ... "$PP"`). None (not
    known) where the word that would be $0 may be several or none, which shifts every later one."""
    if after and after[0].unsplit:
        return None
    return after[1:]


def _callers_positional(text: Scalar) -> bool:
    """Whether a part of a shell's TEXT not known statically is the calling script's own `$1`,
    `$*`, `${1:-x}` (NeMo 8cfedd7203 nemo/collections/diffusion/vae/train_vae.sh: `bash -c "...
    --yes $*"`): the calling shell expanded it, so read again it names the caller's words, not
    the inner shell's, nor those of a function or `set --` inside (`Shell.caller_text`)."""
    return any(unknown and _POSITIONAL.search(piece) for piece, unknown in segments(text))


def _c_text_at(args: list[Field], grammar: Grammar | None) -> tuple[int, int] | None:
    """Where the script text of a shell's (`grammar`: its options, rules `option_grammar`) or
    sbatch's (None) arguments is, the one place that decides it (the walk reads it, _shell_c;
    may_train leaves it to the walk): (the option's index, the text's); the same index twice for
    `--wrap=TEXT`; None where no option gives one. A shell's `-c` takes no value: its text is the
    first operand, and after an operand (the script: `bash job.sh -c X`) `-c` is the script's
    (bash(1) INVOCATION); a word not known before it may be either, so none. sbatch's `-c` is
    --cpus-per-task, its text only `--wrap`."""
    if grammar is None:
        for k, f in enumerate(args):
            option, eq, _ = str(f.value).partition("=")
            if option == _WRAP and (eq or k + 1 < len(args)):
                return (k, k) if eq else (k, k + 1)
        return None
    c, k = None, 0
    while k < len(args):
        word = args[k].value
        if not isinstance(word, str) or len(word) < 2 or word[0] not in "-+" or word == "--":
            break
        if word.startswith("--"):
            k += 2 if word[2:] in grammar.long_value else 1
            continue
        if word[0] == "-" and "c" in word[1:]:
            c = k
        k += 1 + sum(letter in grammar.value for letter in word[1:])  # `-eo pipefail`: o takes a word
    k += k < len(args) and args[k].value in ("-", "--")  # bash(1): `-` and `--` end the options
    return (c, k) if c is not None and k < len(args) else None


_VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


def command_fields(cmd: Cmd, line: int) -> list[Field]:
    """A parsed command's words as may_train reads them, with no walk expanding them: a wholly
    literal word's text, any other unknown (`$X`, `$(...)`)."""
    return [Field("".join(p.text for p in w.parts) if all(p.kind == "lit" for p in w.parts) else Symbolic(w.raw), line)
            for w in cmd.words]


def _plain_list(node: Node) -> bool:
    """Whether a command line holds only simple commands joined by `;`, `&&`, `||` and `|`,
    each word and redirection target literal and no here-document: what _may_run can judge
    command by command."""
    if isinstance(node, (AndOr, Pipeline)):
        return all(_plain_list(n) for n in children(node))
    return (isinstance(node, Cmd) and node.stdin is None and node.herestring is None
            and all(p.kind == "lit" for w in [*node.words, *(t for _, t in node.redirects)] for p in w.parts))
