"""How a program's words split into its options and its operands, as GNU getopt_long(3) reads
them: short options bundled (`-ne SCRIPT` is `-n -e SCRIPT`), a short option's value attached
(`-n1`) or the next word, an optional value only attached (sed's `-i.bak`; `-i` alone has none),
`--name=value` or `--name value`, a long name by any prefix that names one option (`--expr=...`),
`--` ending the options; options after operands too, unless the first operand ends them (a `+`
optstring: xargs, whose command starts there). Which options take a value is the program's, given
as a Grammar (rules [wrappers] option_grammar)."""

from __future__ import annotations

from dataclasses import dataclass

from auditor.bash.values import Scalar, Symbolic, concat, segments


@dataclass(frozen=True)
class Grammar:
    """A program's options: the short letters that take a value (`value`) and those whose value
    is only attached (`optional`), the long names likewise (`long_value`, `long_optional`,
    `long_flags` taking none), and whether the first operand ends the options (`in_order`)."""

    value: str = ""
    optional: str = ""
    long_value: tuple[str, ...] = ()
    long_optional: tuple[str, ...] = ()
    long_flags: tuple[str, ...] = ()
    in_order: bool = False

    @staticmethod
    def of(entry: dict) -> Grammar:
        return Grammar(entry.get("value", ""), entry.get("optional", ""), tuple(entry.get("long_value", ())),
                       tuple(entry.get("long_optional", ())), tuple(entry.get("long_flags", ())),
                       bool(entry.get("in_order", False)))


@dataclass(frozen=True)
class ParsedOption:
    """One option as read: `-e`, or `--expression` by its full name; `value` None where it has
    none. `name` "" for a word whose option is not known statically (`-$X`, `--${OPT}=1`)."""

    name: str
    value: Scalar | None
    at: int  # the index of the word it starts in


@dataclass(frozen=True)
class Words:
    """A program's words read: its options, and the indexes of its operands in order (with
    `in_order`, the first is where the program's own words end)."""

    options: tuple[ParsedOption, ...]
    operands: tuple[int, ...]


def read(words: list[Scalar], grammar: Grammar) -> Words:
    """Split `words`, the arguments after the program's name, as getopt_long does. A word whose
    start is not known statically is an operand, unless it starts with a known `-` (an option,
    its letters past the known text not known: `ParsedOption.name` "")."""
    options: list[ParsedOption] = []
    operands: list[int] = []
    k = 0
    while k < len(words):
        word = words[k]
        head, unknown = segments(word)[0]
        start = "" if unknown else head
        if start == "--" and isinstance(word, str):
            operands += range(k + 1, len(words))
            break
        if not start.startswith("-") or start == "-":
            operands.append(k)
            if grammar.in_order:
                operands += range(k + 1, len(words))
                break
            k += 1
            continue
        following = words[k + 1] if k + 1 < len(words) else None
        took = (_long if start.startswith("--") else _short)(word, start, following, grammar, k, options)
        k += 1 + took
    return Words(tuple(options), tuple(operands))


def _long(word: Scalar, start: str, following: Scalar | None, grammar: Grammar, k: int,
          options: list[ParsedOption]) -> int:
    """`--name[=value]`: the option, and how many words after it it took (its value)."""
    known = isinstance(word, str)
    text = start if known or "=" in start else ""
    if not text:  # `--${OPT}`: which option is not known
        options.append(ParsedOption("", word, k))
        return 0
    name, eq, _ = text[2:].partition("=")
    value = _after(word, len(name) + 3) if eq else None
    full = _full_name(name, grammar)
    if full in grammar.long_value and not eq:
        options.append(ParsedOption(f"--{full}", following, k))
        return 1 if following is not None else 0
    options.append(ParsedOption(f"--{full}", value, k))
    return 0


def _full_name(name: str, grammar: Grammar) -> str:
    """The long option `name` abbreviates (getopt_long takes any prefix naming one), else itself."""
    names = (*grammar.long_value, *grammar.long_optional, *grammar.long_flags)
    if name in names:
        return name
    found = [n for n in names if n.startswith(name)]
    return found[0] if len(found) == 1 else name


def _short(word: Scalar, start: str, following: Scalar | None, grammar: Grammar, k: int,
           options: list[ParsedOption]) -> int:
    """`-abc`, `-n1`, `-e SCRIPT`: the options bundled in the word, and how many words after it
    the last one took."""
    known = isinstance(word, str)
    for j in range(1, len(start)):
        letter = start[j]
        rest = _after(word, j + 1)
        if letter in grammar.value:
            if rest != "":
                options.append(ParsedOption(f"-{letter}", rest, k))
                return 0
            options.append(ParsedOption(f"-{letter}", following, k))
            return 1 if following is not None else 0
        if letter in grammar.optional:
            options.append(ParsedOption(f"-{letter}", rest if rest != "" else None, k))
            return 0
        options.append(ParsedOption(f"-{letter}", None, k))
    if not known:  # `-n$X`: more letters, not known
        options.append(ParsedOption("", word, k))
    return 0


def _after(word: Scalar, at: int) -> Scalar:
    """What of `word` follows its first `at` characters of known text ("" where nothing does)."""
    if isinstance(word, str):
        return word[at:]
    pieces: list[Scalar] = []
    skip = at
    for text, unknown in segments(word):
        if skip >= len(text) and not unknown:
            skip -= len(text)
            continue
        pieces.append(Symbolic(text) if unknown else text[skip:])
        skip = 0
    return concat(pieces) if pieces else ""
