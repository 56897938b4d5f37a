"""Where the checkout's own Dockerfiles put the checkout in the image they build, so that a file a
script opens there by its absolute path is read as the checkout's own file.

THUDM/slime@624b824a89 examples/retool/retool_qwen3_4b_sft.sh:27 sources
`/root/slime/scripts/models/qwen3-4B.sh`, which sets MODEL_ARGS; docker/Dockerfile:156 clones
slime to /root/slime (`git clone https://github.com/THUDM/slime.git /root/slime`), and
docker/Dockerfile.gb10:199 copies the build context there (`COPY . /root/slime`). Only a
Dockerfile of the checkout decides a place, never a guessed prefix, and never one inside a nested
project (a directory with its own checkout marker, or a .gitmodules path: a vendored
third_party/Megatron-LM/Dockerfile builds that project). Two instructions place it:
- `COPY . DIR` / `ADD . DIR` (`COPY . .` under an absolute WORKDIR of the stage), only in a
  Dockerfile at the checkout root or directly under docker/, whose build context is the checkout;
  elsewhere the context may be the Dockerfile's own directory. `COPY --from=` copies another stage
  or image.
- `git clone URL [DIR]` of the checkout's own repository, from any of its Dockerfiles: the URL's
  owner/name is the .git remote's; where no remote is known (an archive), its name is the one
  setup.py or pyproject gives (slime's tree, no .git) -- a same-named fork's archive would be
  taken as the clone, accepted since nothing else there names the repository. Never another
  repository the image also clones (slime's clones Megatron-LM to /root/Megatron-LM).
"""

from __future__ import annotations

import os
import re
import shlex
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from auditor.bash.absent import CHECKOUT_MARKERS, checkout_root
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


def checkout_name(root: Path) -> tuple[str | None, str] | None:
    """(owner, name) the checkout gives itself, normalised (lower case, `_`/`.` as `-`): its .git
    remote's (origin's, else the first), else (None, setup.py's literal `name=`, else pyproject's
    [project] name); None where it names itself nowhere."""
    try:
        config = (root / ".git" / "config").read_text(errors="replace")
    except OSError:
        config = ""
    remote = (re.search(r'^\[remote "origin"\][^\[]*?^\s*url\s*=\s*(\S+)', config, re.M)
              or re.search(r'^\s*url\s*=\s*(\S+)', config, re.M))
    if remote:
        return _owner_repo(remote.group(1))
    try:
        setup = (root / "setup.py").read_text(errors="replace")
    except OSError:
        setup = ""
    named = re.search(r'\bname\s*=\s*["\']([A-Za-z0-9._-]+)["\']', setup)
    if named:
        return None, _norm(named.group(1))
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(errors="replace")).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    name = project.get("name") if isinstance(project, dict) else None
    return (None, _norm(name)) if isinstance(name, str) else None


@lru_cache(maxsize=64)  # asked at every absolute path a walk opens that is not here
def placements(root: Path) -> tuple[Placement, ...]:
    """Every directory a Dockerfile of the checkout at `root` (none inside a nested project) puts
    the checkout in."""
    own = checkout_name(root)
    nested = _submodules(root)
    out: list[Placement] = []
    for count, (here, dirs, files) in enumerate(os.walk(root)):
        rel = Path(here).relative_to(root)
        dirs[:] = sorted(d for d in dirs if len(rel.parts) < _MAX_DEPTH and not _nested(root, rel / d, nested))
        if count >= _MAX_DIRS:
            break
        context = rel.parts in ((), ("docker",))  # the build context is the checkout
        for name in sorted(f for f in files if _DOCKERFILE.fullmatch(f)):
            path = os.path.join(here, name)
            try:
                text = read_bounded(path, "not a regular file")[1]
            except OSError:
                continue
            out += [Placement(where, f"{os.path.relpath(path, root)}:{line}")
                    for where, line in _placed(text, own, context)]
    return tuple(out)


def _submodules(root: Path) -> frozenset[Path]:
    """The paths .gitmodules names, relative to `root`."""
    try:
        text = (root / ".gitmodules").read_text(errors="replace")
    except OSError:
        return frozenset()
    return frozenset(Path(os.path.normpath(p)) for p in re.findall(r"^\s*path\s*=\s*(.+?)\s*$", text, re.M))


def _nested(root: Path, rel: Path, submodules: frozenset[Path]) -> bool:
    """Whether the directory `rel` of the checkout is another project's: a submodule path, or one
    holding a checkout marker of its own."""
    return rel in submodules or any((root / rel / marker).exists() for marker in CHECKOUT_MARKERS)


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


def _placed(text: str, own: tuple[str | None, str] | None, context: bool) -> list[tuple[str, int]]:
    """(directory, line) of each instruction of a Dockerfile's `text` that puts the build context
    (only where `context`: it is the checkout), or a clone of the repository `own`, in an absolute
    directory. Each FROM starts with its base stage's WORKDIR, or none."""
    out: list[tuple[str, int]] = []
    workdir = ""
    stage = ""
    stages: dict[str, str] = {}
    for line, instruction in _instructions(text):
        keyword, _, rest = instruction.partition(" ")
        keyword = keyword.upper()
        try:
            words = shlex.split(rest, comments=False)
        except ValueError:
            continue
        paths = [w for w in words if not w.startswith("--")]
        if keyword == "FROM":
            workdir = stages.get(paths[0].lower(), "") if paths else ""
            stage = paths[2].lower() if len(paths) == 3 and paths[1].upper() == "AS" else ""
        elif keyword == "WORKDIR" and words:
            workdir = _absolute(words[0], workdir)
        elif keyword in ("COPY", "ADD") and context and not any(w.startswith("--from") for w in words):
            if len(paths) == 2 and os.path.normpath(paths[0]) == ".":
                dest = _absolute(paths[1], workdir)
                if dest:
                    out.append((dest, line))
        elif keyword == "RUN" and own is not None:
            out += [(dest, line) for dest in _clones(words, workdir, own)]
        if stage:
            stages[stage] = workdir
    return out


def _clones(words: list[str], workdir: str, own: tuple[str | None, str]) -> list[str]:
    """The absolute directories the `git clone`s of a RUN's `words` put the repository `own` in
    (owner/name; its name alone where its owner is None)
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
            if positional and _same(_owner_repo(positional[0]), own):
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


def _owner_repo(url: str) -> tuple[str | None, str]:
    """(owner, name) of a clone URL, normalised (`git@github.com:THUDM/slime.git`: thudm, slime)."""
    parts = re.split(r"[/:]", url.rstrip("/"))
    return (parts[-2].lower() if len(parts) > 1 and parts[-2] else None), _norm(_repo_of(url))


def _same(url: tuple[str | None, str], own: tuple[str | None, str]) -> bool:
    """Whether a clone URL's (owner, name) is the checkout's: both, where the checkout's owner is known."""
    return url[1] == own[1] and (own[0] is None or url[0] == own[0])


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
