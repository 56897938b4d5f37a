"""What bash's `read` assigns from input whose text is known (a here-string or here-document),
and the status it returns: `read -r -d '' VAR <<'EOF'` holds a whole script in VAR and returns 1
(no NUL before the end of the input), which ends a script under `set -e`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from auditor.bash.values import Symbolic, concat, segments

_BLANKS = " \t\n"


@dataclass(frozen=True)
class ReadOptions:
    """The options of one `read`: -r (backslashes are plain), -d DELIM ('' is NUL) and -a NAME
    (the words go to the array NAME)."""

    raw: bool
    delimiter: str
    array: bool = False


def read_options(words: list[str]) -> ReadOptions | None:
    """-r, -d DELIM and -a NAME (also bundled: `-rd ''`, `-ra NAME`) among `read`'s words; None
    where any other option is given (-p, -n, -t, ...: what they do is not modelled)."""
    raw, delimiter, array, k = False, "\n", False, 0
    while k < len(words):
        word = words[k]
        k += 1
        if not word.startswith("-") or word == "-":
            continue
        letters = word[1:]
        if not letters or set(letters) - {"r", "d", "a"} or any(c in letters[:-1] for c in "da"):
            return None
        raw = raw or "r" in letters
        if letters[-1] in "da":
            if k >= len(words):
                return None
            if letters[-1] == "d":
                delimiter = words[k][:1] or "\0"
            array, k = array or letters[-1] == "a", k + 1
    return ReadOptions(raw, delimiter, array)


def read_array(text: str, options: ReadOptions, ifs: str) -> tuple[list[str], int] | None:
    """(the words, the exit status) of `read -a` on input `text`: its line split on IFS blanks;
    None for an IFS of other characters (its empty fields are not modelled)."""
    if not set(ifs) <= set(_BLANKS):
        return None
    read = read_text(text, options, ["_"], ifs)
    if read is None:
        return None
    line = read[0][0]
    return ([w for w in re.split(f"[{re.escape(ifs)}]+", line) if w] if ifs else ([line] if line else [])), read[1]


def read_text(text: str, options: ReadOptions, names: list[str], ifs: str) -> tuple[list[str], int] | None:
    """(the values of `names`, the exit status) of `read` on input `text`, as bash assigns
    them: up to the delimiter (status 1 where the input ends first), without -r a backslash
    escapes the next character and a backslash-newline is dropped, then split on IFS, the last
    name taking the rest, IFS blanks trimmed at both ends. None where an IFS mixing blanks and
    other characters, or an escaped IFS character, would need more than this models."""
    line: list[str] = []
    status, k = 1, 0
    while k < len(text):
        c = text[k]
        if c == "\\" and not options.raw and k + 1 < len(text):
            if text[k + 1] != "\n":
                if text[k + 1] in ifs:
                    return None  # an escaped IFS character is no separator: not modelled
                line.append(text[k + 1])
            k += 2
            continue
        if c == options.delimiter:
            status = 0
            break
        line.append(c)
        k += 1
    got = "".join(line)
    if not ifs:
        return [got] + [""] * (len(names) - 1), status
    if set(ifs) <= set(_BLANKS):
        parts: list[str] = []
        rest = got.lstrip(ifs)
        while len(parts) < len(names) - 1 and rest:
            m = re.search(f"[{re.escape(ifs)}]+", rest)
            if m is None:
                break
            parts.append(rest[:m.start()])
            rest = rest[m.end():]
        parts.append(rest.rstrip(ifs))
    elif not set(ifs) & set(_BLANKS):
        # each IFS character ends one field; the last name takes the rest, less one trailing
        # IFS character where that rest is a single field (bash: `a,b,` -> B=b, `a,b,c,` -> B=b,c,)
        delimiter = re.compile(f"[{re.escape(ifs)}]")
        parts, rest = [], got
        while len(parts) < len(names) - 1 and (m := delimiter.search(rest)) is not None:
            parts.append(rest[:m.start()])
            rest = rest[m.end():]
        if rest and rest[-1] in ifs and delimiter.search(rest[:-1]) is None:
            rest = rest[:-1]
        parts.append(rest)
    else:
        return None
    return parts + [""] * (len(names) - len(parts)), status


def read_partial(value: Symbolic, options: ReadOptions, names: list[str], ifs: str) -> list[str | Symbolic] | None:
    """What one name gets from `read -r -d ''` of text known in part (`<<EOF` around `$EXTRA`):
    the whole text, IFS blanks trimmed at its known ends; None for any other `read`."""
    if len(names) != 1 or not options.raw or options.delimiter != "\0" or not set(ifs) <= set(_BLANKS):
        return None
    pieces = list(segments(value))
    if ifs and not pieces[0][1]:
        pieces[0] = (pieces[0][0].lstrip(ifs), False)
    if ifs and not pieces[-1][1]:
        pieces[-1] = (pieces[-1][0].rstrip(ifs), False)
    return [concat([Symbolic(text) if unknown else text for text, unknown in pieces])]


def as_double_quoted(body: str) -> str:
    """A here-document body with an unquoted delimiter, as a double-quoted word with the same
    expansion: in the body `"` is plain and `\\"` two plain characters, where inside double
    quotes both need a backslash."""
    out: list[str] = []
    k = 0
    while k < len(body):
        c = body[k]
        if c == "\\" and k + 1 < len(body) and body[k + 1] in '$`\\\n':
            out.append(body[k:k + 2])
            k += 2
            continue
        out.append('\\\\' if c == "\\" else '\\"' if c == '"' else c)
        k += 1
    return '"' + "".join(out) + '"'
