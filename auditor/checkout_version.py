"""Which release a source checkout says it is, read from its own files and never imported.

A checkout (`git clone` of torchtitan, run as its README says: `cd torchtitan && ./run_train.sh`)
has no dist-info. It states its release in its pyproject (`version = "X"`, or a dynamic version
read from a file, torchtitan's `assets/version.txt`) or its package's literal `__version__`. Where
a `.git` is there, git decides: a version file is bumped when a release is cut and stays until the
next, so a checkout between two releases states the older one while running newer code; only a
HEAD that a release tag names is that release. git is read from its files, not run (a repository's
config can make git run its commands).
"""

from __future__ import annotations

import ast
import re
import tomllib
import zlib
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

_SHA = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class Stated:
    """What a checkout says about its release: `version` None where it does not say one, `how`
    the files that say it (or why none decides)."""

    version: str | None
    how: str


def stated_release(root: Path, distribution: str, package: str, development: bool = False) -> Stated:
    """The release of `distribution` that the checkout at `root` (holding `package/`) states.
    `development`: a version file naming a development release (verl's `0.8.0.dev`) states it at
    a HEAD no release tag names, the commit being on that line (where the checkout is read
    itself: nothing is fetched for it)."""
    files = _file_version(root, distribution, package)
    git = _git_tags_at_head(root)
    if git is None:
        if files is None:
            return Stated(None, f"no version in {root} (pyproject.toml, {package}/__init__.py) and no .git")
        return Stated(files[0], files[1])
    head, tags = git
    releases = sorted({r for r in map(_release, tags) if r is not None})
    said = f"; {files[1]} says {files[0]}" if files else ""
    if not releases:
        if development and files is not None and _is_dev(files[0]):
            return Stated(files[0], f"{files[1]} names the development release {files[0]}, and its git "
                                    f"HEAD {head[:12]} is at no release tag")
        return Stated(None, f"its git HEAD {head[:12]} is at no release tag{said}: a commit between releases")
    if files is not None and not _same(files[0], releases[0]):
        return Stated(None, f"its git HEAD {head[:12]} is tagged {', '.join(tags)}{said}: they disagree")
    return Stated(releases[0], f"git HEAD {head[:12]} is tag {', '.join(tags)}"
                               f"{f', and {files[1]} says {files[0]}' if files else ''}")


def _release(tag: str) -> str | None:
    """`v0.2.2` / `0.2.2` as a release; other tags (`ciflow/...`) name none."""
    try:
        return str(Version(tag.removeprefix("v"))) if re.match(r"^v?\d", tag) else None
    except InvalidVersion:
        return None


def _is_dev(version: str) -> bool:
    try:
        return Version(version).is_devrelease
    except InvalidVersion:
        return False


def _same(a: str, b: str) -> bool:
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


# --- the checkout's files -----------------------------------------------------------------------


def _file_version(root: Path, distribution: str, package: str) -> tuple[str, str] | None:
    """(version, where) from pyproject.toml naming `distribution`, else `package/__init__.py`."""
    pyproject = root / "pyproject.toml"
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        data = {}
    project = data.get("project")
    project = project if isinstance(project, dict) else {}
    if canonicalize_name(str(project.get("name", ""))) == canonicalize_name(distribution):
        if isinstance(project.get("version"), str):
            return project["version"], "pyproject.toml"
        dynamic: object = data
        for key in ("tool", "setuptools", "dynamic", "version"):
            dynamic = dynamic.get(key) if isinstance(dynamic, dict) else None
        found = _dynamic(root, dynamic) if isinstance(dynamic, dict) else None
        if found is not None:
            return found
    init = root / package / "__init__.py"
    version = _literal_version(init)
    return (version, f"{package}/__init__.py") if version else None


def _dynamic(root: Path, spec: dict) -> tuple[str, str] | None:
    """setuptools' `version = {file = "..."}` or `{attr = "pkg.__version__"}`, inside `root`."""
    if isinstance(spec.get("file"), str):
        path = (root / spec["file"]).resolve()
        if path.is_relative_to(root.resolve()) and path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace").strip()
            return (text, spec["file"]) if text and "\n" not in text else None
    if isinstance(spec.get("attr"), str) and spec["attr"].endswith(".__version__"):
        rel = spec["attr"].removesuffix(".__version__").replace(".", "/")
        for path in (root / f"{rel}.py", root / rel / "__init__.py"):
            version = _literal_version(path)
            if version:
                return version, path.relative_to(root).as_posix()
    return None


def _literal_version(path: Path) -> str | None:
    """A module's `__version__ = "X"` at top level (torchtitan's asks importlib: no literal)."""
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__version__"
                                                 for t in stmt.targets) \
                and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            return stmt.value.value
    return None


# --- git, read from its files -------------------------------------------------------------------


def _git_tags_at_head(root: Path) -> tuple[str, list[str]] | None:
    """(HEAD's commit, the tags naming it); None where `root` has no readable .git."""
    gitdir = _gitdir(root)
    if gitdir is None:
        return None
    common = gitdir
    if (gitdir / "commondir").is_file():  # a `git worktree`: refs live in the main repository
        common = (gitdir / _read(gitdir / "commondir")).resolve()
    refs = _refs(common)
    head = _read(gitdir / "HEAD")
    while head.startswith("ref: "):
        name = head.removeprefix("ref: ")
        loose = _read(gitdir / name) or _read(common / name)
        head = loose or refs.get(name, "")
        if head == "":
            return None  # an unborn branch
    if not _SHA.match(head):
        return None
    tags = sorted(n.removeprefix("refs/tags/") for n, sha in refs.items()
                  if n.startswith("refs/tags/") and _peel(common, sha) == head)
    return head, tags


def _gitdir(root: Path) -> Path | None:
    dot = root / ".git"
    if dot.is_dir():
        return dot
    text = _read(dot)
    if text.startswith("gitdir: "):  # a submodule or worktree: .git names the real directory
        path = (root / text.removeprefix("gitdir: ")).resolve()
        return path if path.is_dir() else None
    return None


def _refs(common: Path) -> dict[str, str]:
    """Every ref to the commit or tag object it names (packed-refs' peeled `^` lines peel)."""
    out: dict[str, str] = {}
    last = ""
    for line in _read(common / "packed-refs").splitlines():
        if line.startswith("^") and last:
            out[last] = line[1:].strip()  # the commit an annotated tag points to
        elif not line.startswith("#") and " " in line:
            sha, last = line.split(" ", 1)
            out[last] = sha
    tags = common / "refs" / "tags"
    if tags.is_dir():
        for path in tags.rglob("*"):
            sha = _read(path) if path.is_file() else ""
            if _SHA.match(sha):
                out[path.relative_to(common).as_posix()] = sha
    return out


def _peel(common: Path, sha: str) -> str:
    """The commit an annotated tag object names, where the object is loose; else `sha`."""
    obj = common / "objects" / sha[:2] / sha[2:]
    try:
        data = zlib.decompress(obj.read_bytes())
    except (OSError, zlib.error):
        return sha
    if not data.startswith(b"tag "):
        return sha
    body = data.split(b"\0", 1)[-1]
    first = body.split(b"\n", 1)[0].decode("ascii", "replace")
    return first.removeprefix("object ") if first.startswith("object ") else sha


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""
