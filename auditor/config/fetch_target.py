"""Which file a fetcher's command line writes (`wget`, `curl`; rules [wrappers] fetchers), so that
an entry is called fetched only where it is that file: the options naming the file or its folder,
the URL's remote name by default or by option, else standard output and the command's own `>`;
standard output into a pipe is the file a later part of the pipeline writes (`| tee FILE`, `> FILE`)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from auditor.bash.values import Field, Scalar, segments

# A written path not known statically (`-O "$OUT"`): any entry may be it.
UNKNOWN = ""
# The fetch goes to standard output, with no file redirect (`wget -O - URL | tee x.py`).
STDOUT = "-"


def written(fields: list[Field], redirects: Sequence[tuple[str, Scalar]], rule: dict) -> list[tuple[str, str]]:
    """(url, path written) for each URL of `fields` (the fetcher's words, each URL's braces expanded:
    `wget URL/{a,b}.py` fetches a.py and b.py): the path as given, relative to the cwd of the line;
    UNKNOWN where an option's value is not known; STDOUT where it goes to standard output with no
    file redirect (curl's default, `-O -`)."""
    output = rule.get("output", ())
    folder_options = rule.get("folder", ())
    remote = rule.get("remote", ())
    named: Scalar | None = None
    folder: str | None = ""  # None: not known
    by_remote = rule.get("default") == "remote"
    urls: list[str] = []
    naming = rule.get("naming", ())
    opaque = False  # a file named by the server or a list (`--content-disposition`, `-J`, `-i`)
    k = 1
    while k < len(fields):
        value = fields[k].value
        head, unknown = segments(value)[0]
        name, eq, rest = head.partition("=")
        text = "" if unknown else name
        letters = _cluster(text)
        opaque |= text in naming or any(f"-{c}" in naming for c in letters)
        given = (rest if isinstance(value, str) else UNKNOWN) if eq else (fields[k + 1].value if k + 1 < len(fields) else None)
        at = next((i for i, c in enumerate(letters) if f"-{c}" in (*output, *folder_options)), None)
        by_remote |= len(letters) > 1 and any(f"-{c}" in remote for c in letters[:at])  # curl `-sSLO`
        attached = ""  # `-Ofile`, `-qOfile`: the value in the word itself
        if at is not None and len(letters) > 1:  # `-Ofile`, `-qO file`, `-qOfile`
            attached = letters[at + 1:]
            given = (attached if isinstance(value, str) else UNKNOWN) if attached else given
            text = f"-{letters[at]}"
        if text in output:
            named = given if isinstance(given, str) else UNKNOWN
        elif text in folder_options:
            folder = given if isinstance(given, str) and given != UNKNOWN else None
        elif text in remote:
            by_remote = True
        elif isinstance(value, str) and "://" in value:
            urls += braces(value)
        k += 1 + (not eq and text in (*output, *folder_options) and not attached)
    stdout = next((t for op, t in reversed(redirects) if op.lstrip("1") in (">", ">>", ">|")), None)
    if named == "-":  # wget `-O -`: the file is standard output
        named, by_remote = None, False
    if opaque:
        return [(url, UNKNOWN) for url in urls or ["(a URL the command names at run time)"]]
    return [(url, _path(url, named, folder, by_remote, stdout, rule)) for url in urls]


def copied(fields: list[Field], redirects: Sequence[tuple[str, Scalar]], copier: bool) -> list[str]:
    """The files a command reading a fetch on its standard input writes it to: a copier's
    operands (`tee [OPTION]... [FILE]...`, GNU coreutils tee(1); rules [wrappers] copiers) and any
    command's own `>` (`| gunzip > x.py`); UNKNOWN for a name not known statically."""
    operands = [f.value for f in fields[1:] if not str(f.value).startswith("-")] if copier else []
    targets = [t for op, t in redirects if op.lstrip("1") in (">", ">>", ">|")]
    return [v if isinstance(v, str) else UNKNOWN for v in (*operands, *targets)]


# The last piece of a path an extraction writes (`DIR/*`): any file under DIR may be written.
ANY = "*"


def extracted(fields: list[Field], rule: dict) -> list[str]:
    """The files an extractor reading a fetch on its standard input writes (`curl URL | tar -xz -C
    DIR`; rules [wrappers] extractors): any file under its folder, `DIR/*` (`ANY`), the line's own
    folder where none is named; UNKNOWN where the folder is not known statically. None (an empty
    list) where it does not extract, reads an archive other than its input (`-f x.tgz`), or
    writes the files to standard output (`-O`)."""
    extract, valued = tuple(rule.get("extract", ())), {o: key for key in ("folder", "file") for o in rule.get(key, ())}
    piped = tuple(rule.get("stdout", ()))  # `tar -xzO`: the files go to standard output, none written
    given: dict[str, Scalar | None] = {"folder": "", "file": "-"}
    extracting = False
    words = [f.value for f in fields[1:]]
    k = 0
    while k < len(words):
        word = words[k]
        text = word if isinstance(word, str) else ""
        k += 1
        if text.startswith("--"):
            name, eq, rest = text.partition("=")
            extracting |= name in extract
            if name in piped:
                return []
            if name in valued:
                given[valued[name]] = rest if eq else (words[k] if k < len(words) else None)
                k += not eq
            continue
        if not text.startswith("-") and k != 1:
            continue
        letters = text.lstrip("-")  # `-xzf -`, or bundled as tar's first word (`tar xzf -`)
        for i, c in enumerate(letters):
            extracting |= f"-{c}" in extract
            if f"-{c}" in piped:
                return []
            if f"-{c}" in valued:
                attached = letters[i + 1:] if text.startswith("-") else ""
                given[valued[f"-{c}"]] = attached or (words[k] if k < len(words) else None)
                k += not attached
                if attached:
                    break
    if not extracting or given["file"] != "-":
        return []
    folder = given["folder"]
    return [os.path.join(folder, ANY) if isinstance(folder, str) else UNKNOWN]


def braces(text: str) -> list[str]:
    """`text` after bash's brace expansion of its first `{a,b}` (and, recursively, the rest): the
    words a literal URL stands for (`https://host/{a,b}.py`); `text` alone where it has none."""
    depth, start = 0, -1
    commas: list[int] = []
    for i, c in enumerate(text):
        if c == "{":
            depth, start, commas = (depth + 1, i, []) if depth == 0 else (depth + 1, start, commas)
        elif c == "," and depth == 1:
            commas.append(i)
        elif c == "}" and depth:
            depth -= 1
            if depth == 0 and commas:
                cuts = [start, *commas, i]
                head, tail = text[:start], text[i + 1:]
                return [w for a, b in zip(cuts, cuts[1:]) for w in braces(head + text[a + 1:b] + tail)]
    return [text]


def _cluster(text: str) -> str:
    """The letters of a short-option word (`-qO` -> "qO", `-O` -> "O"); "" for a long option,
    `-`, `--` or an operand: getopt reads `-qO FILE` and `-sSLO` letter by letter."""
    return text[1:] if len(text) > 1 and text[0] == "-" and text[1] != "-" else ""


def _path(url: str, named: Scalar | None, folder: str | None, by_remote: bool, stdout: Scalar | None,
          rule: dict) -> str:
    """The one file a URL goes to (see written)."""
    if named is not None:
        if not isinstance(named, str) or rule.get("folder_output") and folder is None:
            return UNKNOWN
        return f"{folder}/{named}" if rule.get("folder_output") and folder else named  # curl `--output-dir D -o F`
    if by_remote:
        if folder is None:
            return UNKNOWN
        tail = url.partition("#")[0] if rule.get("query") else url.partition("?")[0].partition("#")[0]
        name = tail.rstrip("/").rpartition("/")[2]
        return os.path.join(folder, name) if folder else name
    if stdout is None:
        return STDOUT
    return stdout if isinstance(stdout, str) else UNKNOWN
