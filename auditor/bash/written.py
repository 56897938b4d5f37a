"""What a script writes to a file and then runs or reads back: `printf '%s' "$COMMAND" >
"$FILE"` then `bash "$FILE"` (NVIDIA-NeMo/RL 7ea279abfb ray.sub:224-228, :824), `cat > F <<EOF`
then `source F` (:501-585), and `X=$(cat <<EOF ... EOF)`, a here-document's text as a value
(:599-834). Only output this reader knows exactly is kept; anything else is not written here."""

from __future__ import annotations

import re

from auditor.bash.lexer import Heredoc
from auditor.bash.values import Field, Scalar, concat

# `cat <<EOF` (or `<<-`, a quoted delimiter) and its document, the whole of a command substitution
_CAT_DOCUMENT = re.compile(r"\s*cat\s*<<(-?)[ \t]*([\"']?)([^\s;&|()<>\"']+)\2[ \t]*\n(.*)", re.DOTALL)
_ECHO_OPTIONS = re.compile(r"-[neE]+")
_FORMATS = {"%s": "", "%s\\n": "\n"}  # printf formats whose output is the one argument (and a newline)


def cat_document(command: str) -> Heredoc | None:
    """The here-document `$(cat <<EOF ... EOF)` outputs: `command` is the substitution's text; None
    for any other command."""
    m = _CAT_DOCUMENT.fullmatch(command)
    if m is None:
        return None
    strip, delimiter, rest = m.group(1) == "-", m.group(3), m.group(4)
    lines = rest.split("\n")
    ends = [k for k, line in enumerate(lines) if (line.lstrip("\t") if strip else line) == delimiter]
    if not ends or any(line.strip() for line in lines[ends[0] + 1:]):
        return None  # no delimiter line, or more commands after the document
    body = "".join(f"{line.lstrip(chr(9)) if strip else line}\n" for line in lines[:ends[0]])
    return Heredoc(body, 0, not m.group(2))


def output(program: str, args: list[Field], document: Scalar | None) -> Scalar | None:
    """What `printf '%s' X`, `echo X` or `cat` (reading `document`, its here-document as
    expanded) writes to standard output; None where not known here (other formats, options)."""
    values: list[Scalar] = [f.value for f in args]
    if program == "printf" and len(values) == 2 and values[0] in _FORMATS:
        return concat([values[1], _FORMATS[str(values[0])]])
    if program == "echo" and not any(isinstance(v, str) and _ECHO_OPTIONS.fullmatch(v) for v in values[:1]):
        return concat([concat(values, " "), "\n"])  # bash's echo reads -n, -e, -E alone as options
    if program == "cat" and not values and document is not None:
        return document
    return None
