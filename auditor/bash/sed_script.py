"""Whether a sed command runs another program: GNU sed(1) "e command: Executes command and sends
its output to the output stream" (also `e` alone: the pattern space as a command line), and the
`s` command's `e` flag ("the command that is found in pattern space is executed"). Its script is
the first operand, or each `-e`/`--expression` value; a `-f`/`--file` script is not read here, so it
may hold one. Read on the words as written: text not known statically may hold one where a
command letter or the `s` flags are read, not inside an address or an `s` pattern or replacement
(`s|DATA_DIR|${DATA_DIR}|g`, `/^${KEY}:/d`), read as data there."""

from __future__ import annotations

import re

from auditor.bash.values import Scalar, segments

# An address (a line number, `$`, `/re/` with its flags, `\%re%`, a `first~step`), a range of two,
# then `!`: what may stand before a command letter.
_ADDRESS = r"(?:\d+(?:~\d+)?|\$|/(?:[^/\\\n]|\\.)*/[IM]*|\\[^\n\\][^\n]*?[IM]*)"
_AT = rf"(?:^|[;\n{{}}])\s*(?:{_ADDRESS}\s*(?:,\s*(?:{_ADDRESS}|[+~]\d+))?\s*!?\s*)?"
_E_COMMAND = re.compile(rf"{_AT}e(?:\s|;|}}|$)")
# `s` with any delimiter, its flags after the third delimiter
_SUBSTITUTE = re.compile(rf"{_AT}s(?P<d>.)(?:(?!(?P=d))[^\\\n]|\\.)*(?P=d)(?:(?!(?P=d))[^\\\n]|\\.)*(?P=d)"
                         r"(?P<flags>[0-9a-zA-Z]*)")
# an address before a command letter other than `e` (`/^${KEY}:/d`)
_ADDRESSED = re.compile(rf"{_AT}(?=[a-df-zA-Z=#:{{}}])")
_UNKNOWN = "\0"  # stands for text not known statically in the script read
_VALUE_OPTIONS = ("-l", "--line-length")
_FILE = "script file `{}` (not read here: an `e` command there)"


def runs_command(args: list[Scalar]) -> str:
    """What of a sed command's arguments runs a command, or may ("" where none may)."""
    scripts: list[Scalar] = []
    operands: list[Scalar] = []
    k = 0
    while k < len(args):
        word = args[k]
        text = word if isinstance(word, str) else None
        name, eq, value = (text or "").partition("=")
        if text in ("-e", "--expression", "-f", "--file") or text in _VALUE_OPTIONS:
            given = args[k + 1] if k + 1 < len(args) else ""
            if text in ("-f", "--file"):
                return _FILE.format(given)
            if text in ("-e", "--expression"):
                scripts.append(given)
            k += 2
            continue
        if name in ("--expression", "--file") and eq:
            if name == "--file":
                return _FILE.format(value)
            scripts.append(value)
        elif text is not None and re.fullmatch(r"-[a-zA-Z]*[ef].+", text) and not text.startswith("--"):
            flag = re.match(r"-[a-zA-Z]*?([ef])", text)
            assert flag is not None
            rest = text[flag.end():]
            if flag.group(1) == "f":
                return _FILE.format(rest)
            scripts.append(rest)  # `-e'1e cmd'`: the script glued to -e
        elif text is None or not text.startswith("-") or text == "-":
            operands.append(word)
        k += 1
    if not scripts and operands:
        scripts = operands[:1]
    for script in scripts:
        text = "".join(_UNKNOWN if unknown else piece for piece, unknown in segments(script))
        if _E_COMMAND.search(text) or any("e" in m.group("flags") for m in _SUBSTITUTE.finditer(text)):
            return f"`e` command in the script `{script}`"
        data = {k for m in (*_SUBSTITUTE.finditer(text), *_ADDRESSED.finditer(text)) for k in range(*m.span())}
        if any(c == _UNKNOWN and k not in data for k, c in enumerate(text)):
            return f"script `{script}` (not known statically: an `e` command there)"
    return ""
