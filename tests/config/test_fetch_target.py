"""fetch_target.written on the words of one fetch: which file each URL goes to (GNU Wget manual
"Invoking", curl(1)), as rules/megatron-lm.toml [wrappers] fetchers gives the options."""

from __future__ import annotations

import pytest

from auditor.bash.values import Field
from auditor.config.fetch_target import STDOUT, UNKNOWN, braces, written
from auditor.rulebook.launchers import Spelling

URL = "https://example.com/x/prep.py"
RULES = Spelling.load(None).fetchers


def _written(line: str, redirect: str | None = None) -> list[tuple[str, str]]:
    words = line.split()
    fields = [Field(w, 1) for w in words]
    return written(fields, [(">", redirect)] if redirect else [], RULES[words[0]])


@pytest.mark.parametrize(("line", "path"), [
    (f"wget {URL}", "prep.py"),  # the remote name
    (f"wget -O out.py {URL}", "out.py"),
    (f"wget -qO out.py {URL}", "out.py"),  # a getopt cluster ending in -O: the next word
    (f"wget -qOout.py {URL}", "out.py"),  # the rest of the cluster
    (f"wget -P dl {URL}", "dl/prep.py"),
    (f"curl -o out.py {URL}", "out.py"),
    (f"curl -sSLO {URL}?raw=1", "prep.py"),  # -O in a cluster: the file part, no query
    # curl 7.88, checked: `--output-dir od -o x.txt` and `-o y.txt --output-dir od` write od/...
    (f"curl --output-dir dl -o out.py {URL}", "dl/out.py"),
    (f"curl -o out.py --output-dir dl {URL}", "dl/out.py"),
    (f"curl --output-dir dl -O {URL}", "dl/prep.py"),
    (f"curl -i -o out.py {URL}", "out.py"),  # `-i, --include`: headers in the output, no file named
])
def test_the_file_a_fetch_writes(line: str, path: str) -> None:
    assert _written(line) == [(URL + ("?raw=1" if "raw" in line else ""), path)]


@pytest.mark.parametrize("line", [f"curl -sSL {URL}", f"wget -O - {URL}", f"wget -qO- {URL}"])
def test_standard_output_writes_no_file_but_its_redirect(line: str) -> None:
    assert _written(line) == [(URL, STDOUT)]  # a later part of its pipeline may write it (`| tee`)
    assert _written(line, "got.py") == [(URL, "got.py")]


@pytest.mark.parametrize("line", [f"wget --content-disposition {URL}", f"curl -OJ {URL}", "wget -i urls.txt"])
def test_a_file_the_server_or_a_list_names_is_not_known(line: str) -> None:
    assert [path for _, path in _written(line)] == [UNKNOWN]


@pytest.mark.parametrize(("text", "words"), [
    ("https://h/{a,b}.py", ["https://h/a.py", "https://h/b.py"]),  # bash(1) Brace Expansion
    ("https://h/{x,y}/{a,b}.py", ["https://h/x/a.py", "https://h/x/b.py", "https://h/y/a.py", "https://h/y/b.py"]),
    ("https://h/{a,{b,c}}.py", ["https://h/a.py", "https://h/b.py", "https://h/c.py"]),
    ("https://h/{a}.py", ["https://h/{a}.py"]),  # no comma: left as it is
])
def test_a_url_stands_for_the_words_of_its_braces(text: str, words: list[str]) -> None:
    assert braces(text) == words
