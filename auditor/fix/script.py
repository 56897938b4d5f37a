"""A remedy option as edits of a launch script's lines, at the lines the scan read them from
(`EnvVar.line`, `Flag.line`): an assignment removed, changed or renamed in place; a flag's value
changed, or the flag added as a line of its own inside the command's `\\` continuations. A
variable the entry script sets from Python (`EnvVar.path`) is edited there, by the libcst codemod
(fix.pycode); a codemod of the trainer's P2P code, in the files fix.trainer names."""

from __future__ import annotations

import os
import re

from auditor.bash.values import EnvVar
from auditor.config.flags import normalise
from auditor.config.model import LaunchConfig
from auditor.errors import InputError
from auditor.fix.edits import TextEdit, between
from auditor.fix import trainer
from auditor.fix.remedies import Option
from auditor.fix.verify import read_text

_VALUE = r"""(?:"[^"\n]*"|'[^'\n]*'|[^\s;&|'"\\]*)"""


# The edits of an environment variable's settings.
ENV_EDITS = ("unset_env", "set_env", "rename_env")


class NotMechanical(Exception):
    """The option cannot be made as an edit of this script; the message says why."""


def edits_for(option: Option, launch: LaunchConfig, sources: dict[str, str],
              scene: trainer.Scene | None = None) -> list[TextEdit]:
    """The edits of each of the option's steps; insertions at one place as one, in the
    option's order. `sources`: the text of each file read (path -> text), the launch script's
    and the entry script's where it sets a variable; a trainer file a codemod edits joins it.
    `scene`: the finding and the scan's sites, for a codemod of the trainer."""
    out: list[TextEdit] = []
    for e in (e for step in option.steps for e in _step(step, launch, sources, scene)):
        if out and e.length == 0 and out[-1].length == 0 and out[-1].offset == e.offset:
            out[-1] = TextEdit(e.path, e.offset, 0, out[-1].text + e.text)
        else:
            out.append(e)
    return out


def _step(option: Option, launch: LaunchConfig, sources: dict[str, str],
          scene: trainer.Scene | None) -> list[TextEdit]:
    if option.edit in trainer.EDITS:
        if scene is None:
            raise NotMechanical(f"{option.says()}: the scan's sites are not at hand")
        try:
            return trainer.edits(option, scene, sources, read_text)
        except trainer.Unfit as exc:
            raise NotMechanical(str(exc)) from None
    source = sources[launch.path]
    var = launch.env.get(option.name)
    if option.edit == "set_env" and var is None:
        return _export(option, launch, source)
    if option.edit in ENV_EDITS:
        if var is None:
            return _env(option, var, launch, source)  # says why not
        out: list[TextEdit] = []
        for v in (var, *var.others):  # every setting of the name the run makes
            if not v.path:
                out += _env(option, v, launch, source)
            elif not any(e.path == v.path for e in out):  # the codemod edits all of a file's
                if os.path.isabs(str(launch.script)):
                    raise NotMechanical(f"the entry script {v.path} is named by an absolute "
                                        "path: a patched copy cannot be scanned in its place; "
                                        "edit it by hand")
                out += _python(option, v.path, sources[v.path])
        return out
    if option.edit == "set_flag":
        return _flag(option, launch, source)
    raise NotMechanical(f"{option.says()} is no edit of the script")


def _export(option: Option, launch: LaunchConfig, source: str) -> list[TextEdit]:
    """`export NAME=VALUE` on a line of its own: after the script's last `export` line before
    the command, else just before the command."""
    lines = _lines(source)
    if launch.command_line > len(lines):  # the command is in a file the script runs (sbatch JOB)
        raise NotMechanical(f"the training command (line {launch.command_line}) is not in "
                            f"{launch.path} but in a file it runs: export {option.name} there")
    before = lines[:launch.command_line - 1]
    exports = [n for n, (_, text) in enumerate(before)
               if re.match(r"\s*export\s", text) and not text.rstrip("\r\n").endswith("\\")]
    at = exports[-1] + 1 if exports else launch.command_line - 1
    if at > 0 and lines[at - 1][1].rstrip("\r\n").endswith("\\"):
        raise NotMechanical(f"{launch.path}:{at} continues onto the line where "
                            f"`export {option.name}` would go")
    offset = lines[at][0] if at < len(lines) else len(source)
    return [TextEdit(launch.path, offset, 0, f"export {option.name}={option.value}\n")]


def _python(option: Option, path: str, source: str) -> list[TextEdit]:
    """The codemod of every statement of the entry script that sets the variable, as one edit."""
    from auditor.fix.pycode import env_codemod  # libcst, only where a codemod runs (fix.trainer)
    try:
        new, changed = env_codemod(source, option.name, option.edit, option.value)
    except InputError as exc:
        raise NotMechanical(f"{path}: {exc.cause}") from None
    if not changed:
        raise NotMechanical(f"{path} sets {option.name} in a form the codemod does not edit")
    return between(path, source, new)


def _lines(source: str) -> list[tuple[int, str]]:
    """(offset, text with its newline) of each line."""
    out, at = [], 0
    for text in source.splitlines(keepends=True):
        out.append((at, text))
        at += len(text)
    return out


def _env(option: Option, var: EnvVar | None, launch: LaunchConfig, source: str) -> list[TextEdit]:
    if var is None or var.line < 1:
        raise NotMechanical(f"{option.name} is not set in {launch.path} (it comes from the caller's "
                            "environment): unset it there")
    lines = _lines(source)
    if var.line > len(lines):  # its line is one of a file the script runs or sources
        raise NotMechanical(f"{option.name} is set at line {var.line} of a file {launch.path} "
                            "runs or sources, not in it: change it there")
    offset, text = lines[var.line - 1]
    if var.how == "option":  # one element of a launcher's list: srun --export=ALL,NAME=VALUE,...
        return _listed(option, var, launch, offset, text)
    match = re.search(rf"(?<![\w$]){re.escape(option.name)}={_VALUE}", text)
    if match is None:
        raise NotMechanical(f"{launch.path}:{var.line} does not spell {option.name}=VALUE")
    if option.edit == "set_env":
        new = f"{option.name}={option.value}"
    elif option.edit == "rename_env":
        new = f"{option.value}{match[0][len(option.name):]}"
    else:
        rest = (text[:match.start()] + text[match.end():]).strip()
        if rest in ("", "export", "\\", "export \\"):  # the line sets only this variable
            return [TextEdit(launch.path, offset, len(text), "")]
        end = match.end() + len(text[match.end():]) - len(text[match.end():].lstrip(" \t"))
        return [TextEdit(launch.path, offset + match.start(), end - match.start(), "")]
    return [TextEdit(launch.path, offset + match.start(), match.end() - match.start(), new)]


def _listed(option: Option, var: EnvVar, launch: LaunchConfig, offset: int, text: str) -> list[TextEdit]:
    """The edit of NAME=VALUE given in a launcher's environment option (config.launcher_env): its
    value ends at a comma; removed with one comma beside it, never leaving the option empty."""
    match = re.search(rf"(?<![\w$]){re.escape(option.name)}=[^\s,;&|'\"\\]*", text)
    if match is None:
        raise NotMechanical(f"{launch.path}:{var.line} does not spell {option.name}=VALUE")
    start, end = match.start(), match.end()
    if option.edit == "set_env":
        return [TextEdit(launch.path, offset + start, end - start, f"{option.name}={option.value}")]
    if option.edit == "rename_env":
        return [TextEdit(launch.path, offset + start, len(option.name), str(option.value))]
    if text[start - 1:start] == ",":
        start -= 1
    elif text[end:end + 1] == ",":
        end += 1
    else:
        raise NotMechanical(f"{launch.path}:{var.line}: {option.name} is the only variable its launcher option "
                            "sets; remove the option by hand")
    return [TextEdit(launch.path, offset + start, end - start, "")]


def _flag(option: Option, launch: LaunchConfig, source: str) -> list[TextEdit]:
    key = normalise(option.name)
    lines = _lines(source)
    given = next((f for f in launch.flags.values()
                  if f.name == key or normalise(f.spelling) == key), None)
    if given is not None:
        offset, text = lines[given.line - 1]
        match = re.search(rf"(?<![\w-]){re.escape(given.spelling)}(?:=|[ \t]+){_VALUE}", text)
        if match is None or given.value is True:
            raise NotMechanical(f"{launch.path}:{given.line}: {given.spelling}'s value is not "
                                "on its line")
        return [TextEdit(launch.path, offset + match.start(), match.end() - match.start(),
                         f"{option.name} {option.value}")]
    # A new line after the command's last line that continues (`\`), indented as the next.
    last = max((n for n in range(launch.command_line, launch.end_line)
                if lines[n - 1][1].rstrip("\r\n").endswith("\\")), default=None)
    if last is None:
        raise NotMechanical(f"the command at {launch.path}:{launch.command_line} has no `\\` "
                            f"continuation to add {option.name} on a line of its own")
    following = lines[last][1]
    indent = following[:len(following) - len(following.lstrip(" \t"))]
    offset = lines[last][0]
    return [TextEdit(launch.path, offset, 0, f"{indent}{option.name} {option.value} \\\n")]
