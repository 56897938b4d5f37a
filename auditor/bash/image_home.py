"""Where the checkout's own Dockerfiles put the checkout in the image they build, so that a file a
script opens there by its absolute path is read as the checkout's own file.

THUDM/slime@624b824a89 examples/retool/retool_qwen3_4b_sft.sh:27 sources
`/root/slime/scripts/models/qwen3-4B.sh`, which sets MODEL_ARGS; docker/Dockerfile:156 clones
slime to /root/slime (`git clone https://github.com/THUDM/slime.git /root/slime`), and
docker/Dockerfile.gb10:199 copies the build context there (`COPY . /root/slime`). Only a
Dockerfile of the checkout decides a place, never a guessed prefix: `COPY . DIR` / `ADD . DIR`
(the build context, the checkout; `COPY . .` under an absolute WORKDIR) or `git clone URL [DIR]`
of a repository named as the checkout names itself (its .git remote, setup.py or pyproject
name), never another one the image also clones (slime's clones Megatron-LM to /root/Megatron-LM).
"""

from __future__ import annotations

import os
import re
import shlex
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from auditor.bash.absent import checkout_root
from auditor.bash.textfile import read_bounded

_DOCKERFILE = re.compile(r"(?:.*\.)?[Dd]ockerfile(?:[._-].*)?")
_MAX_DIRS = 2000  # directories of the checkout looked through for Dockerfiles
_MAX_DEPTH = 3  # levels below the checkout root (docker/, docker/<variant>/)
# `git clone` options that take the next word as their value
_CLONE_VALUED = {"-b", "--branch", "--depth", "-o", "--origin", "-c", "--config", "--reference", "-j",
                 "--jobs", "--shallow-since", "--shallow-exclude", "--separate-git-dir", "--template",
                 "-u", "--upload-pack", "--filter", "--bundle-uri"}


@dataclass(frozen=True)
class Placement:
    """The directory `where` an image holds the checkout in, and the Dockerfile line that says so."""

    where: str
    said: str  # "docker/Dockerfile:156"


def checkout_name(root: Path) -> str | None:
    """The repository name the checkout gives itself, normalised (lower case, `_`/`.` as `-`): its
    .git remote's last path part, else setup.py's literal `name=`, else pyproject's [project] name."""
    try:
        config = (root / ".git" / "config").read_text(errors="replace")
    except OSError:
        config = ""
    remote = re.search(r'^\s*url\s*=\s*(\S+)', config, re.M)
    if remote:
        return _norm(_repo_of(remote.group(1)))
    try:
        setup = (root / "setup.py").read_text(errors="replace")
    except OSError:
        setup = ""
    named = re.search(r'\bname\s*=\s*["\']([A-Za-z0-9._-]+)["\']', setup)
    if named:
        return _norm(named.group(1))
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(errors="replace")).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    name = project.get("name") if isinstance(project, dict) else None
    return _norm(name) if isinstance(name, str) else None


@lru_cache(maxsize=64)  # asked at every absolute path a walk opens that is not here
def placements(root: Path) -> tuple[Placement, ...]:
    """Every directory a Dockerfile of the checkout at `root` puts the checkout in."""
    own = checkout_name(root)
    out: list[Placement] = []
    for count, (here, dirs, files) in enumerate(os.walk(root)):
        depth = len(Path(here).relative_to(root).parts)
        dirs[:] = sorted(d for d in dirs if d != ".git" and depth < _MAX_DEPTH)
        if count >= _MAX_DIRS:
            break
        for name in sorted(f for f in files if _DOCKERFILE.fullmatch(f)):
            path = os.path.join(here, name)
            try:
                text = read_bounded(path, "not a regular file")[1]
            except OSError:
                continue
            out += [Placement(where, f"{os.path.relpath(path, root)}:{line}")
                    for where, line in _placed(text, own)]
    return tuple(out)


def image_file(name: str, script: str) -> tuple[str, Placement] | None:
    """(the checkout's file, the placement) that the absolute `name`, absent here, opens in the image
    of the checkout around `script`: `name` lies below a directory a Dockerfile puts the checkout in
    and its rest names a regular file of the checkout (links kept inside it). None where `name` is
    here, no placement holds it, or the placements that hold it name different files."""
    if not os.path.isabs(name) or os.path.lexists(name):
        return None
    root = checkout_root(script)
    if root is None:
        return None
    name = os.path.normpath(name)
    found: dict[str, Placement] = {}
    for placed in placements(root):
        if not name.startswith(placed.where.rstrip("/") + "/"):
            continue
        here = root / name[len(placed.where.rstrip("/")) + 1:]
        resolved = Path(os.path.realpath(here))
        if resolved.is_relative_to(root) and resolved.is_file():
            found.setdefault(str(here), placed)
    return next(iter(found.items())) if len(found) == 1 else None


def _placed(text: str, own: str | None) -> list[tuple[str, int]]:
    """(directory, line) of each instruction of a Dockerfile's `text` that puts the build context,
    or a clone of the repository named `own`, in an absolute directory."""
    out: list[tuple[str, int]] = []
    workdir = ""
    for line, instruction in _instructions(text):
        keyword, _, rest = instruction.partition(" ")
        keyword = keyword.upper()
        try:
            words = shlex.split(rest, comments=False)
        except ValueError:
            continue
        if keyword == "WORKDIR" and words:
            workdir = _absolute(words[0], workdir)
        elif keyword in ("COPY", "ADD"):
            paths = [w for w in words if not w.startswith("--")]
            if len(paths) == 2 and os.path.normpath(paths[0]) == ".":
                dest = _absolute(paths[1], workdir)
                if dest:
                    out.append((dest, line))
        elif keyword == "RUN" and own is not None:
            out += [(dest, line) for dest in _clones(words, workdir, own)]
    return out


def _clones(words: list[str], workdir: str, own: str) -> list[str]:
    """The absolute directories the `git clone`s of a RUN's `words` put the repository `own` in
    (`cd DIR &&` before one moves where a clone without a directory goes)."""
    out: list[str] = []
    here = workdir
    k = 0
    while k < len(words):
        if words[k] == "cd" and k + 1 < len(words):
            here = _absolute(words[k + 1], here)
            k += 2
            continue
        if words[k] == "git" and words[k + 1:k + 2] == ["clone"]:
            positional: list[str] = []
            k += 2
            while k < len(words) and words[k] not in ("&&", ";", "||", "|"):
                word = words[k].rstrip(";")
                if word in _CLONE_VALUED:
                    k += 1
                elif not word.startswith("-"):
                    positional.append(word)
                k += 1
            if positional and _norm(_repo_of(positional[0])) == own:
                dest = _absolute(positional[1] if len(positional) > 1 else _repo_of(positional[0]), here)
                if dest:
                    out.append(dest)
            continue
        k += 1
    return out


def _instructions(text: str) -> list[tuple[int, str]]:
    """(first line, text) of each Dockerfile instruction, continuation lines joined, comments out."""
    out: list[tuple[int, str]] = []
    current: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if stripped.startswith("#"):
            continue
        if not current:
            start = number
        current.append(stripped[:-1] if stripped.endswith("\\") else stripped)
        if not stripped.endswith("\\"):
            joined = " ".join(c for c in current if c)
            if joined:
                out.append((start, joined))
            current = []
    return out


def _absolute(path: str, workdir: str) -> str:
    """`path` made absolute against `workdir` ("" where a relative one cannot be: no known WORKDIR)."""
    if "$" in path:
        return ""
    if path.startswith("/"):
        return os.path.normpath(path)
    return os.path.normpath(os.path.join(workdir, path)) if workdir else ""


def _repo_of(url: str) -> str:
    """The repository name a clone URL ends with (`https://github.com/THUDM/slime.git`: slime)."""
    tail = re.split(r"[/:]", url.rstrip("/"))[-1]
    return tail[:-4] if tail.endswith(".git") else tail


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
