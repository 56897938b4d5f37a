"""What a sed command runs: GNU sed(1) "e command: Executes command and sends its output to the
output stream" (the command is the rest of the script's line), `e` alone and the `s` command's
`e` flag run the pattern space instead ("If a substitution was made, the command that is found in
pattern space is executed": each line of the input that the `s` changed, text the script does not
state). `--sandbox` ("disable e/r/w commands") and `--posix` ("disable all GNU extensions") make
sed refuse a script with one: it runs nothing. The script is each `-e`/`--expression` value, else
the first operand; a `-f`/`--file` script is not read here, so it may hold one. The words split as
GNU sed's getopt reads them (auditor.bash.getopt: `-ne SCRIPT` is `-n -e SCRIPT`, `-ie` is `-i`
with the suffix `e`). Text not known statically may hold an `e` where a command letter or the `s`
flags are read, not inside an address or an `s` pattern or replacement (`s|DATA_DIR|${DATA_DIR}|g`,
`/^${KEY}:/d`), read as data there."""

from __future__ import annotations

import re

from auditor.bash.getopt import Grammar, read
from auditor.bash.values import Scalar, Symbolic, segments

# An address (a line number, `$`, `/re/` with its flags, `\%re%`, a `first~step`), a range of two,
# then `!`: what may stand before a command letter.
_ADDRESS = r"(?:\d+(?:~\d+)?|\$|/(?:[^/\\\n]|\\.)*/[IM]*|\\[^\n\\][^\n]*?[IM]*)"
_AT = rf"(?:^|[;\n{{}}])\s*(?:{_ADDRESS}\s*(?:,\s*(?:{_ADDRESS}|[+~]\d+))?\s*!?\s*)?"
# the `e` command and its command, the rest of its line
_E_COMMAND = re.compile(rf"{_AT}e(?=\s|;|}}|$)[ \t]*(?P<command>[^\n]*)")
# `s` with any delimiter, its flags after the third delimiter (a `w` flag's file name ends them)
_SUBSTITUTE = re.compile(rf"{_AT}s(?P<d>.)(?:(?!(?P=d))[^\\\n]|\\.)*(?P=d)(?:(?!(?P=d))[^\\\n]|\\.)*(?P=d)"
                         r"(?P<flags>[0-9a-vx-zA-Z]*)")
# an address before a command letter other than `e` (`/^${KEY}:/d`)
_ADDRESSED = re.compile(rf"{_AT}(?=[a-df-zA-Z=#:{{}}])")
_UNKNOWN = "\0"  # stands for text not known statically in the script read
_REFUSING = ("--sandbox", "--posix")  # options under which sed refuses a script that has an `e`
_PATTERN_SPACE = "the pattern space (the text of the line read)"


def runs_command(args: list[Scalar], grammar: Grammar) -> list[tuple[str, Scalar]]:
    """What a sed command's arguments run: (what runs it, its command line) per `e`, the line a
    str where the script states it (`1e date`), Symbolic where it is the pattern space or not
    known statically; [] where none can run."""
    words = read(args, grammar)
    scripts: list[Scalar] = []
    for option in words.options:
        if option.name in _REFUSING:
            return []
        if option.name == "":
            return [(f"option `{option.value}` (not known statically: a script there)", Symbolic(str(option.value)))]
        if option.name in ("-f", "--file"):
            return [(f"script file `{option.value}` (not read here: an `e` command there)",
                     Symbolic(f"a command of {option.value}"))]
        if option.name in ("-e", "--expression"):
            scripts.append(option.value if option.value is not None else "")
    if not scripts and words.operands:
        scripts = [args[words.operands[0]]]
    runs: list[tuple[str, Scalar]] = []
    for script in scripts:
        text = "".join(_UNKNOWN if unknown else piece for piece, unknown in segments(script))
        for found in _E_COMMAND.finditer(text):
            command = found.group("command").strip()
            known = command and _UNKNOWN not in command
            runs.append((f"`e` command in the script `{script}`",
                         command if known else Symbolic(command.replace(_UNKNOWN, "...") or _PATTERN_SPACE)))
        if any("e" in m.group("flags") for m in _SUBSTITUTE.finditer(text)):
            runs.append((f"`s` command's `e` flag in the script `{script}` (it runs each line it changes)",
                         Symbolic(_PATTERN_SPACE)))
        data = {k for m in (*_SUBSTITUTE.finditer(text), *_ADDRESSED.finditer(text)) for k in range(*m.span())}
        taken = {k for m in _E_COMMAND.finditer(text) for k in range(*m.span())}
        if any(c == _UNKNOWN and k not in data and k not in taken for k, c in enumerate(text)):
            runs.append((f"script `{script}` (not known statically: an `e` command there)", Symbolic(str(script))))
    return runs
