"""Reads a bash launch script into a LaunchConfig without running anything.

The script is read as bash reads it (auditor.bash); this module picks out the training
command among the commands it runs (also behind srun/env/nohup and inside `bash -c`) and reads
its flags, the environment it gets and the world size its launcher gives it.

Which commands train, how launchers size the world and how Megatron-LM spells its flags is
framework knowledge kept in rules/megatron-lm.toml. Only unreadable input raises InputError
(bad bytes, an unterminated quote, no training command); everything else becomes a diagnostic.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from auditor.bash.lexer import ASSIGN, MAX_NESTING, NAME, Lexer
from auditor.bash.parser import Cmd, Node, Parser
from auditor.bash.values import Field, Var, join
from auditor.bash.walk import Shell
from auditor.config.model import EnvVar, Flag, LaunchConfig, Scalar, Symbolic
from auditor.errors import InputError
from auditor.findings import Finding
from auditor.rulebook.launchers import Spelling

# `# torch==2.10.0`, `# megatron-core==0.17.0`: the versions a script was written for.
_PIN = re.compile(r"(?<![\w.-])([A-Za-z][A-Za-z0-9_.-]*)\s*==\s*([0-9][0-9A-Za-z.+_-]*)")
_NUMBER = re.compile(r"-\.?[0-9]")


# --- entry points --------------------------------------------------------------------------------


def read_launch(
    path: str | Path,
    *,
    environ: Mapping[str, str] | None = None,
    megatron_version: str | None = None,
) -> LaunchConfig:
    """Read a launch script from disk; see parse_launch."""
    name = str(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(name, "no such launch script") from None
    except IsADirectoryError:
        raise InputError(name, "is a directory, not a launch script") from None
    except OSError as exc:
        raise InputError(name, f"cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(name, f"not UTF-8 text (byte 0x{raw[exc.start]:02x})", line) from None
    return parse_launch(text, name, environ=environ, megatron_version=megatron_version)


def parse_launch(
    text: str,
    path: str = "<string>",
    *,
    environ: Mapping[str, str] | None = None,
    megatron_version: str | None = None,
) -> LaunchConfig:
    """Find the training command in `text` and read its flags, environment and world size.

    `environ`: variables the script inherits from the caller (the cluster's environment), used
    where the script reads a variable it never assigns. `megatron_version`: the megatron-core
    release the training script comes from, to check Megatron-LM flag spellings against it.
    """
    diagnostics: list[Finding] = []
    if "\r\n" in text:
        line = text[: text.index("\r\n")].count("\n") + 1
        diagnostics.append(Finding(
            "launch.crlf", "warning",
            "the script has Windows (CRLF) line endings: bash reads the `\\r` as part of each line, "
            "so `\\` at a line end does not continue the command and values end in `\\r`; "
            "read here as if the line endings were LF",
            fix=f"dos2unix {path}", where=f"{path}:{line}"))
        text = text.replace("\r\n", "\n")
    spelling = Spelling.load(megatron_version)
    lexer = Lexer(text, path)
    tokens = lexer.tokens()
    nodes = Parser(tokens, path, diagnostics).parse()
    shell = _LaunchShell(path, spelling, dict(environ or {}), diagnostics, text.split("\n"))
    shell.run(nodes)
    config = _build(shell, spelling, path)
    pins = _pins(lexer.comments)
    for name, version, _ in pins:
        config.pins.setdefault(name, version)
    torch_pins = [(v, ln) for name, v, ln in pins if name == "torch"]
    if torch_pins:
        config.torch_pin = torch_pins[0][0]
        if len({pin for pin, _ in torch_pins}) > 1:
            config.diagnostics.append(Finding(
                "launch.torch-pin", "warning",
                "several torch pins in comments: "
                + ", ".join(f"torch=={p} (line {ln})" for p, ln in torch_pins)
                + f"; using torch=={config.torch_pin}",
                fix="keep one `# torch==X.Y.Z` comment", where=f"{path}:{torch_pins[1][1]}"))
    return config


def _pins(comments: list[tuple[int, str]]) -> list[tuple[str, str, int]]:
    """(distribution, version, line) for every `name==X` written in a comment."""
    return [(pin.group(1).lower().replace("_", "-"), pin.group(2).rstrip("."), line)
            for line, text in comments for pin in _PIN.finditer(text)]


# --- training commands among those the script runs -----------------------------------------------


@dataclass
class _Candidate:
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


class _LaunchShell(Shell):
    """The script's walk, collecting every command that starts training, in order."""

    def __init__(self, path: str, spelling: Spelling, environ: dict[str, str],
                 diagnostics: list[Finding], lines: list[str]) -> None:
        super().__init__(path, environ, diagnostics)
        self.lines = lines  # the script's text, to say why a line ends a command
        self.spelling = spelling
        self.candidates: list[_Candidate] = []
        self.unresolved_commands: list[Field] = []  # commands whose name is itself unknown

    def external(self, fields: list[Field], inline: dict[str, EnvVar], cmd: Cmd,
                 siblings: list[Node], at: int) -> int:
        candidate = self._launch(fields, inline, cmd)
        if candidate is None:
            return 0
        return self._join_broken_continuation(siblings, at, candidate) - at

    def _launch(self, fields: list[Field], inline: dict[str, EnvVar], cmd: Cmd) -> _Candidate | None:
        """The training command in `fields`, possibly behind wrappers (srun, env, nohup, ...)."""
        wrapped = isinstance(fields[0].value, str) and os.path.basename(fields[0].value) in self.spelling.wrappers
        for k, f in enumerate(fields):
            if not isinstance(f.value, str):
                if k == 0:
                    self.unresolved_commands.append(f)
                if wrapped:
                    continue
                return None
            base = os.path.basename(f.value)
            if base in self.spelling.shells:
                return self._shell_c(fields[:k + 1], fields[k + 1:], cmd)
            launcher, invoked, sub, start = self._match_launcher(fields, k)
            if launcher is not None:
                wrapper = fields[:k]
                if wrapper and os.path.basename(str(wrapper[0].value)) == "env":
                    for w in wrapper[1:]:
                        name, eq, value = str(w.value).partition("=")
                        if eq and NAME.fullmatch(name):
                            inline[name] = EnvVar(name, value, w.line, "inline")
                candidate = _Candidate(
                    launcher, invoked, sub, fields[start:], wrapper, inline, dict(self.vars),
                    cmd.line, cmd.end_line, self.conditional > 0)
                self.candidates.append(candidate)
                return candidate
            if not wrapped:
                return None
        return None

    def _match_launcher(self, fields: list[Field], k: int) -> tuple[dict | None, str, str, int]:
        """(launcher rule, how it was invoked, subcommand, index of its first argument)."""
        base = os.path.basename(str(fields[k].value))
        after = fields[k + 1].value if k + 1 < len(fields) else None
        module, j = None, k + 1
        if re.fullmatch(r"python[0-9.]*", base):
            while j < len(fields) and isinstance(fields[j].value, str) and fields[j].value.startswith("-"):
                if fields[j].value == "-m" and j + 1 < len(fields):
                    module, j = fields[j + 1].value, j + 2
                    break
                j += 2 if fields[j].value in ("-X", "-W") else 1
        for launcher in self.spelling.launchers:
            if launcher.get("program") == base and isinstance(after, str) and after in launcher["subcommands"]:
                return launcher, f"{base} {after}", after, k + 2
            if base in launcher.get("programs", ()):
                return launcher, base, "", k + 1
            if module is not None and module in launcher.get("python_modules", ()):
                return launcher, f"python -m {module}", "", j
        return None, "", "", k

    def _shell_c(self, prefix: list[Field], fields: list[Field], cmd: Cmd) -> _Candidate | None:
        """`bash -c "torchrun ..."`: read the string as a script of its own, in this shell."""
        scripts = [f for f in fields if isinstance(f.value, str) and f.value.endswith(".sh")]
        if scripts and not any(f.value == "-c" for f in fields):
            self.diagnostics.append(Finding(
                "launch.unread-file", "info",
                f"`{scripts[0].value}` runs as a separate script and is not read here; audit it directly "
                "if it holds the training command", where=f"{self.path}:{cmd.line}"))
        for k, f in enumerate(fields[:-1]):
            if f.value == "-c":
                if self.depth >= MAX_NESTING:
                    raise InputError(self.path, f"`bash -c` nested more than {MAX_NESTING} deep", cmd.line)
                # A symbolic string keeps its unknown parts as written (`$SLURM_NNODES`), so reading
                # it again leaves exactly those parts symbolic.
                text = str(fields[k + 1].value)
                before = len(self.candidates)
                self.depth += 1
                try:
                    tokens = Lexer(text, self.path, fields[k + 1].line - 1).tokens()
                    self.run(Parser(tokens, self.path, self.diagnostics).parse())
                except InputError as exc:  # the inner shell fails at run time; the script itself is fine
                    self.diagnostics.append(Finding(
                        "launch.syntax", "warning", f"the `{f.value}` string cannot be read: {exc.cause}",
                        where=f"{self.path}:{exc.line or cmd.line}"))
                finally:
                    self.depth -= 1
                for candidate in self.candidates[before:]:
                    candidate.wrapper = prefix + fields[:k + 1] + candidate.wrapper
                return None
        return None

    def _join_broken_continuation(self, nodes: list[Node], k: int, candidate: _Candidate) -> int:
        """The seed report's shape: flags on the lines after `megatron sft`, without `\\`."""
        j = k + 1
        while (j < len(nodes) and isinstance(nodes[j], Cmd) and nodes[j].words
               and nodes[j].words[0].raw.startswith("--")):
            j += 1
        if j == k + 1:
            return k
        command = nodes[k]
        for node in nodes[k + 1:j]:
            candidate.args.extend(f for w in node.words for f in self.expand(w))
        candidate.end_line = nodes[j - 1].end_line
        prefix_lines = []
        q, expected = k - 1, command.line - 1
        while (q >= 0 and isinstance(nodes[q], Cmd) and nodes[q].words and nodes[q].end_line == expected
               and all(ASSIGN.match(w.raw) for w in nodes[q].words)):
            for w in nodes[q].words:
                name, value = self.assignment_value(w)
                if not isinstance(value, list):
                    candidate.inline.setdefault(name, EnvVar(name, value, w.line, "inline"))
            prefix_lines.append(nodes[q].line)
            q, expected = q - 1, nodes[q].line - 1
        end, following = command.end_line, nodes[k + 1]
        span = f"line {end}" if command.line == end else f"lines {command.line}-{end}"
        text = self.lines[end - 1] if 0 < end <= len(self.lines) else ""
        why = ""
        if re.search(r"\\[ \t]+$", text):
            why = f" (line {end} ends in `\\` and a space: the `\\` escapes the space, not the line end)"
        elif re.search(r"#.*\\\s*$", text):
            why = f" (the `\\` at the end of line {end} is inside a comment)"
        prefix = (f"; the assignments on lines {min(prefix_lines)}-{max(prefix_lines)} are read as that "
                  "command's environment (as written they are unexported shell variables)") if prefix_lines else ""
        self.diagnostics.append(Finding(
            "launch.broken-continuation", "error",
            f"the `{candidate.invoked}` command stops at line {end}, which does not end in `\\`{why}: as written, "
            f"bash runs {span} as the whole command, then fails on line {following.line} with "
            f"`{following.words[0].raw}: command not found`; lines {following.line}-{candidate.end_line} are "
            f"read here as its continuation{prefix}",
            fix="end every line of the command except the last with ` \\` (nothing after it)",
            where=f"{self.path}:{end}",
            detail={"command_lines": [command.line, end], "continuation_lines": [following.line, candidate.end_line]}))
        return j - 1

# --- from the training command to a LaunchConfig -------------------------------------------------


def _build(shell: Shell, spelling: Spelling, path: str) -> LaunchConfig:
    if not shell.candidates:
        unknown = "".join(f"; line {f.line} runs `{f.value}`, which is not known statically"
                          for f in shell.unresolved_commands[:3])
        raise InputError(path, f"no training command found: looked for {spelling.looked_for()}, "
                               f"also behind srun/env/nohup and inside `bash -c`{unknown}")
    chosen = shell.candidates[0]
    launcher = chosen.launcher
    config = LaunchConfig(path=path, launcher="", command_line=chosen.line, end_line=chosen.end_line,
                          diagnostics=shell.diagnostics)
    config.wrapper = [f.value for f in chosen.wrapper]
    config.env = _environment(shell, chosen)
    args = chosen.args
    style = launcher["style"]
    if launcher.get("program"):
        config.launcher = f"{launcher['program']} {chosen.subcommand}"
    else:
        args, script = _torchrun_options(config, launcher, args, path)
        config.script = script
        config.launcher = chosen.invoked + (f" {os.path.basename(str(script))}" if script is not None else "")
        if isinstance(script, str) and any(fnmatch.fnmatch(script, "*" + s["pattern"]) or
                                           fnmatch.fnmatch(script, s["pattern"]) for s in spelling.swift_scripts):
            style = "ms-swift"
    config.style = style
    _read_flags(config, args, spelling, path)
    _world_size(config, launcher, chosen, spelling, path)
    for other in shell.candidates[1:]:
        config.diagnostics.append(Finding(
            "launch.several-commands", "warning",
            f"another training command at line {other.line}; this audit reads the first one, at line {chosen.line}",
            fix="audit one launch script per training command", where=f"{path}:{other.line}"))
    if chosen.conditional:
        config.diagnostics.append(Finding(
            "launch.conditional-command", "info",
            f"the training command at line {chosen.line} is inside an if/case/loop: "
            "variables set differently on other branches are read as symbolic",
            where=f"{path}:{chosen.line}"))
    _report_unexported(config, launcher, path)
    return config


def _environment(shell: Shell, chosen: _Candidate) -> dict[str, EnvVar]:
    env: dict[str, EnvVar] = {
        name: EnvVar(name, value, 0, "environ") for name, value in shell.environ.items()}
    for name, var in chosen.env.items():
        if isinstance(var.value, list):
            continue
        if var.exported:
            env[name] = EnvVar(name, var.value, var.line, "export")
        elif name not in shell.referenced:
            env[name] = EnvVar(name, var.value, var.line, "assign")
    env.update(chosen.inline)
    return env


def _torchrun_options(config: LaunchConfig, launcher: dict, args: list[Field],
                      path: str) -> tuple[list[Field], Scalar]:
    """torchrun's own options up to the training script; returns the script's arguments and the script."""
    k = 0
    while k < len(args):
        value = args[k].value
        if isinstance(value, Symbolic):
            if k + 1 < len(args) and str(args[k + 1].value).endswith(".py"):
                _unresolved(config, args[k], path, "torchrun's options")
                k += 1
                continue
            return args[k + 1:], value
        if not value.startswith("-") or value == "-":
            return args[k + 1:], value
        option, eq, inline_value = value.partition("=")
        if option in launcher.get("boolean_options", ()):
            config.launcher_flags[_normalise(option)] = Flag(_normalise(option), True, args[k].line, option)
            k += 1
            continue
        if eq:
            config.launcher_flags[_normalise(option)] = Flag(
                _normalise(option), inline_value, args[k].line, option, (inline_value,))
            k += 1
        elif k + 1 < len(args):
            given = args[k + 1].value
            config.launcher_flags[_normalise(option)] = Flag(_normalise(option), given, args[k].line, option, (given,))
            k += 2
        else:
            k += 1
    return [], None


def _normalise(spelling: str) -> str:
    return spelling.lstrip("-").replace("-", "_")


def _is_option(value: Scalar) -> bool:
    return (isinstance(value, str) and value.startswith("-") and value not in ("-", "--")
            and not _NUMBER.match(value))


def _unresolved(config: LaunchConfig, f: Field, path: str, where: str) -> None:
    config.diagnostics.append(Finding(
        "launch.unresolved-args", "warning",
        f"`{f.value}` is not known statically and may add {where} that this audit cannot see",
        fix="set the variable in the script, or pass its value to the audit", where=f"{path}:{f.line}"))


def _read_flags(config: LaunchConfig, args: list[Field], spelling: Spelling, path: str) -> None:
    megatron = config.style == "megatron-lm"
    single: str | None = None  # the last Megatron-LM flag that took its one value, as written
    k = 0
    while k < len(args):
        f = args[k]
        k += 1
        if isinstance(f.value, Symbolic):
            _unresolved(config, f, path, "flags")
            config.positionals.append(f.value)
            single = None
            continue
        if f.value == "--":
            config.positionals.extend(a.value for a in args[k:])
            break
        if not _is_option(f.value):
            config.positionals.append(f.value)
            if single is not None:
                config.diagnostics.append(Finding(
                    "launch.extra-argument", "error",
                    f"`{f.value}` follows `{single}`, which takes one value: Megatron-LM's parser rejects "
                    "it as an unrecognized argument", where=f"{path}:{f.line}"))
            single = None
            continue
        written, eq, inline_value = f.value.partition("=") if f.value.startswith("--") else (f.value, "", "")
        entry = spelling.flags.get(written) if megatron else None
        if megatron:
            _check_megatron_spelling(config, spelling, written, entry, f, path)
        values: list[Scalar] = [inline_value] if eq else []
        takes_value = entry is None or entry["action"] == "store"
        if not eq and takes_value:
            while k < len(args) and not _is_option(args[k].value):
                if isinstance(args[k].value, Symbolic) and args[k].unsplit and values:
                    break
                values.append(args[k].value)
                k += 1
                if entry is not None and "nargs" not in entry:
                    break
        name = entry["dest"] if entry else _normalise(written)
        if entry is not None and entry["action"] != "store":
            value: Scalar = entry["action"] == "store_true"
            if eq or (k < len(args) and not _is_option(args[k].value) and not isinstance(args[k].value, Symbolic)):
                given = inline_value if eq else args[k].value
                config.diagnostics.append(Finding(
                    "launch.flag-takes-no-value", "error",
                    f"Megatron-LM's `{written}` takes no value: argparse rejects `{given}`"
                    + (" as an explicit argument" if eq else " as an unrecognized argument"),
                    fix=f"write `{written}` alone" + (" (or drop it to keep the default)" if str(given).lower()
                                                       in ("false", "0") else ""),
                    where=f"{path}:{f.line}"))
        elif not values:
            value = True
            if entry is not None:
                config.diagnostics.append(Finding(
                    "launch.flag-needs-value", "error",
                    f"Megatron-LM's `{written}` expects a value and none follows", where=f"{path}:{f.line}"))
        else:
            value = values[0] if len(values) == 1 else join(values)
        previous = config.flags.get(name)
        if previous is not None:
            same = previous.value == value
            config.diagnostics.append(Finding(
                "launch.repeated-flag", "info" if same else "warning",
                f"`{name}` is given twice (line {previous.line}, then line {f.line}): the last value, "
                f"`{value}`, wins" + ("" if same else f" over `{previous.value}`"),
                fix="keep one", where=f"{path}:{f.line}"))
        config.flags[name] = Flag(name, value, f.line, written, tuple(values))
        single = (f"{written} {values[0]}" if entry is not None and entry["action"] == "store" and not eq
                  and "nargs" not in entry and values else None)
    if config.style == "ms-swift" and config.positionals and str(config.positionals[0]).endswith(
            (".yaml", ".yml", ".json")):
        config.diagnostics.append(Finding(
            "launch.unread-file", "info",
            f"ms-swift reads further flags from `{config.positionals[0]}`; they are not read here",
            where=f"{path}:{config.command_line}"))


def _check_megatron_spelling(config: LaunchConfig, spelling: Spelling, written: str,
                             entry: dict | None, f: Field, path: str) -> None:
    where = f"{path}:{f.line}"
    if entry is None and "_" in written and written.replace("_", "-") in spelling.flags:
        config.diagnostics.append(Finding(
            "launch.megatron-spelling", "error",
            f"Megatron-LM spells it `{written.replace('_', '-')}`; its parser (allow_abbrev=False) "
            f"rejects `{written}` as an unrecognized argument",
            fix=f"write `{written.replace('_', '-')}`", where=where))
    elif entry is None and written in spelling.no_flags:
        missing = spelling.no_flags[written]
        config.diagnostics.append(Finding(
            "launch.megatron-spelling", "error",
            f"Megatron-LM has no `{written}` flag: argparse rejects it ({missing['why']})",
            fix=f"drop `{written}`", where=where, detail={"dest": missing["dest"]}))
    elif entry is not None and spelling.version is None and spelling.outdated(entry):
        config.diagnostics.append(Finding(
            "launch.megatron-spelling", "info",
            f"`{written}` exists only in Megatron-LM versions {entry['versions']}; later releases reject it",
            where=where))
    elif entry is None and spelling.version is not None and written in Spelling.load(None).flags:
        config.diagnostics.append(Finding(
            "launch.megatron-spelling", "error",
            f"`{written}` does not exist in megatron-core {spelling.version}: argparse rejects it",
            where=where))


def _world_size(config: LaunchConfig, launcher: dict, chosen: _Candidate, spelling: Spelling, path: str) -> None:
    env = {name: var for name, var in config.env.items() if var.how != "assign"}
    if launcher.get("program"):
        nproc_var, nnodes_var = env.get(launcher["env_nproc"]), env.get(launcher["env_nnodes"])
        if chosen.subcommand not in launcher["torchrun_subcommands"] or (nproc_var is None and nnodes_var is None):
            config.nproc_per_node, config.nnodes = 1, 1
            config.world_source = {"nproc_per_node": f"{launcher['env_nproc']} and {launcher['env_nnodes']} unset",
                                   "nnodes": f"{launcher['env_nproc']} and {launcher['env_nnodes']} unset"}
            unexported = [config.env[n] for n in (launcher["env_nproc"], launcher["env_nnodes"]) if n in config.env]
            config.diagnostics.append(Finding(
                "launch.single-process", "warning",
                f"neither {launcher['env_nproc']} nor {launcher['env_nnodes']} reaches `{config.launcher}`: "
                "it runs one process, not torchrun"
                + "".join(f"; {v.name} is assigned at line {v.line} but not exported" for v in unexported),
                fix=f"export {launcher['env_nproc']} and {launcher['env_nnodes']}, or put them before "
                    f"`{config.launcher}` on the same line", where=f"{path}:{chosen.line}"))
            return
        # ms-swift's `megatron`/`swift` start torchrun themselves: its defaults, by name (another
        # launcher, e.g. deepspeed, also has size flags).
        torchrun = next((entry for entry in spelling.launchers if entry.get("name") == "torchrun"), {})
        nproc = _sourced(nproc_var, path) or _torchrun_default(torchrun, "nproc", env)
        nnodes = _sourced(nnodes_var, path) or _torchrun_default(torchrun, "nnodes", env)
    else:
        nproc = _launcher_flag(config, launcher["nproc_flags"], path) or _torchrun_default(launcher, "nproc", env)
        nnodes = _launcher_flag(config, launcher["nnodes_flags"], path) or _torchrun_default(launcher, "nnodes", env)
    device_values = next((e["device_count_values"] for e in spelling.launchers if e.get("device_count_values")), [])
    config.nproc_per_node, config.world_source["nproc_per_node"] = _nproc(nproc, device_values, env, path)
    config.nnodes, config.world_source["nnodes"] = _nnodes(config, nnodes, path)


def _sourced(var: EnvVar | None, path: str) -> tuple[Scalar, str] | None:
    if var is None:
        return None
    where = "the caller's environment" if var.how == "environ" else f"{path}:{var.line}"
    return var.value, f"{var.name}={var.value} ({where})"


def _launcher_flag(config: LaunchConfig, spellings: list[str], path: str) -> tuple[Scalar, str] | None:
    for spelling in spellings:
        flag = config.launcher_flags.get(_normalise(spelling))
        if flag is not None:
            return flag.value, f"{flag.spelling} {flag.value} ({path}:{flag.line})"
    return None


def _torchrun_default(torchrun: dict, what: str, env: dict[str, EnvVar]) -> tuple[Scalar, str]:
    dest = "nproc_per_node" if what == "nproc" else "nnodes"
    prefix = torchrun.get("env_prefix")  # torchrun's PET_*; other launchers read none
    var = env.get(f"{prefix}{dest.upper()}") if prefix else None
    if var is not None:
        return var.value, f"{var.name}={var.value} (line {var.line})"
    default = torchrun.get(f"{what}_default", "1")
    flag = torchrun[f"{what}_flags"][0] if torchrun.get(f"{what}_flags") else f"--{dest.replace('_', '-')}"
    return default, f"{torchrun.get('name', 'torchrun')}'s default {flag} {default}"


def _nproc(given: tuple[Scalar, str], device_values: list[str], env: dict[str, EnvVar],
           path: str) -> tuple[int | Symbolic, str]:
    value, source = given
    if isinstance(value, str) and value.strip().isdigit():
        return int(value), source
    if value in device_values:
        visible = env.get("CUDA_VISIBLE_DEVICES")
        if visible is not None and isinstance(visible.value, str):
            count = len([d for d in visible.value.split(",") if d.strip()])
            return count, f"{source}: {count} devices in CUDA_VISIBLE_DEVICES ({path}:{visible.line})"
        return Symbolic(f"{value} (the visible GPU count)"), source
    return Symbolic(str(value)), source


def _nnodes(config: LaunchConfig, given: tuple[Scalar, str], path: str) -> tuple[int | Symbolic, str]:
    value, source = given
    if isinstance(value, str):
        low, _, high = value.strip().partition(":")
        if low.isdigit() and (not high or high == low):
            return int(low), source
        if low.isdigit() and high.isdigit():
            config.diagnostics.append(Finding(
                "launch.elastic-nnodes", "info",
                f"elastic node range {value}: the world size is decided at rendezvous", where=f"{path}:{config.command_line}"))
    return Symbolic(str(value)), source


def _report_unexported(config: LaunchConfig, launcher: dict, path: str) -> None:
    read_by_launcher = {launcher.get("env_nproc"), launcher.get("env_nnodes"), "CUDA_VISIBLE_DEVICES"}
    for var in config.env.values():
        if var.how != "assign":
            continue
        important = var.name in read_by_launcher or var.name.startswith("PET_")
        config.diagnostics.append(Finding(
            "launch.not-exported", "warning" if important else "info",
            f"{var.name} is set at line {var.line} but not exported: the training command sees it only "
            f"if the calling environment already exports {var.name}",
            fix=f"export {var.name}=... (or put it before the command on the same line)",
            where=f"{path}:{var.line}"))
