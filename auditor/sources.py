"""Turns a TARGET into a SourceSet: the Python files of one distribution, never imported.

TARGET is an installed distribution name, a wheel or sdist path, a source directory or file,
`NAME==VERSION` (downloaded once with pip into the cache; always a release, never a path, even
where a directory of that name exists: `./NAME==VERSION` is the path), or `NAME=PATH` (a path
that is that distribution, e.g. a git checkout). Unpacked archives and downloads are kept under `cache_dir()`
keyed by content, so a second run does no I/O beyond reading files.
"""

from __future__ import annotations

import ast
import email.parser
import functools
import importlib.metadata
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from auditor import download
from auditor.checkout_version import stated_release
from auditor.errors import NO_SPACE, InputError

SKIP_DIRS = {"__pycache__", ".git", ".hg", ".tox", ".venv", "venv", "node_modules", "build", "dist"}
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)$")
NAMED_PATH = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)=([^=].*)$")

# Where a source tree (a git checkout has no dist-info) states which release it is: the file and
# the distribution it identifies. Megatron-LM's checkout is megatron-core at its package_info.
VERSION_FILES = {
    "megatron/core/package_info.py": "megatron-core",
    "swift/version.py": "ms-swift",
    "mcore_bridge/version.py": "mcore-bridge",
    "torch/version.py": "torch",
    "deepspeed/git_version_info.py": "deepspeed",
    "colossalai/version.py": "colossalai",
}
# A checkout's top-level version.txt (DeepSpeed, ColossalAI), named by the package beside it.
VERSION_TXT = {"deepspeed": "deepspeed", "colossalai": "colossalai"}


def cache_dir() -> Path:
    """$P2PAUDIT_CACHE, else the user cache dir; bad input when it cannot be a writable dir."""
    explicit = os.environ.get("P2PAUDIT_CACHE")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(explicit) if explicit else Path(base) / "p2paudit"
    existing = next((p for p in (path, *path.parents) if p.exists()), path)
    if not existing.is_dir():
        raise InputError(str(path), f"cannot use as the p2paudit cache ($P2PAUDIT_CACHE): "
                                    f"{existing} is not a directory")
    if not os.access(existing, os.W_OK):
        raise InputError(str(path), f"cannot use as the p2paudit cache ($P2PAUDIT_CACHE): "
                                    f"{existing} is not writable")
    return path


@dataclass
class SourceSet:
    name: str  # distribution name as published, e.g. "megatron-core"
    version: str | None  # None: the target does not say which release it is
    kind: str  # "wheel" | "sdist" | "dir" | "installed"
    root: Path  # paths below are relative to this
    origin: str  # the TARGET as given
    files: list[str] = field(default_factory=list)  # .py files, posix, sorted
    recognised: bool = True  # False: a directory whose name and version nothing states
    stated: bool = True  # False: the copy installed here, taken where neither script nor --target names one
    shown: str | None = None  # how reports name `root` below the scan's directory (relative to it)

    def __post_init__(self) -> None:
        self.name = canonicalize_name(self.name)

    @classmethod
    def folder(cls, name: str, root: Path, origin: str, files: list[str]) -> SourceSet:
        """A folder read as a sys.path entry (an entry script's own folder): its modules are named
        as an import from it spells them (`utils`, `model.layers`), never under the folder's own
        name, even where it holds an `__init__.py`."""
        src = cls(name, None, "dir", root, origin, files)
        src.__dict__["is_package_dir"] = False  # the cached_property, fixed
        return src

    def module_name(self, relpath: str) -> str:
        parts = relpath[:-3].split("/") if relpath.endswith(".py") else relpath.split("/")
        if parts and parts[-1] == "__init__":
            parts.pop()
        if self.is_package_dir:
            parts.insert(0, self.root.name)
        return ".".join(parts)

    @functools.cached_property
    def is_package_dir(self) -> bool:
        """A directory target that is itself a package (`mytrain/__init__.py`): its modules are
        `mytrain.*`, as `import mytrain` in the user's code names them."""
        return self.kind == "dir" and "__init__.py" in self.files

    @property
    def label(self) -> str:
        """How reports name the target: never a bare None; a directory also shows its path."""
        release = f"{self.name} {self.version}" if self.version else f"{self.name} (version unknown)"
        if not self.stated:  # this machine's copy: evidence about the laptop, not the cluster
            return f"{release} (installed here, none stated)"
        if self.kind != "dir":
            return release
        if self.recognised:
            return f"{release} at {self.shown or self.root}"
        return f"{self.shown or self.root} (not recognised: no dist-info, PKG-INFO, pyproject or version file)"

    @property
    def roots(self) -> list[str]:
        """The first part of the paths a recording names this target's files by (a module's
        path from the sys.path entry it is imported from: `torchtitan`, or `train.py` for a
        top-level module), so that the join knows a recorded line of these files."""
        tops = set()
        for f in self.files:
            parts = self.module_name(f).split(".")
            single = len(parts) == 1 and not f.endswith("__init__.py")
            tops.add(f"{parts[0]}.py" if single else parts[0])
        return sorted(tops)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "source": self.kind, "origin": self.origin,
                "label": self.label, "roots": self.roots}


def target_label(target: dict[str, Any]) -> str:
    """A document's target as reports name it (documents written before labels existed too)."""
    return target.get("label") or f"{target['name']} {target.get('version') or '(version unknown)'}"


def resolve(target: str) -> SourceSet:
    """Resolve one TARGET; raises InputError naming it and the cause."""
    pin = PIN.match(target)
    if pin:  # a release, never a path: a directory of that name in the cwd is not read
        return _from_pin(pin.group(1), pin.group(2), target)
    named = NAMED_PATH.match(target)
    if named and not Path(target).exists():
        return _named(named.group(1), named.group(2), target)
    path = Path(target)
    if path.exists():
        if path.is_dir():
            return _from_dir(path, target)
        if path.suffix == ".whl":
            return _from_wheel(path, target)
        if path.name.endswith((".tar.gz", ".tgz", ".zip")):
            return _from_sdist(path, target)
        if path.suffix == ".py":
            return SourceSet(path.stem, None, "dir", path.resolve().parent, target, [path.name])
        raise InputError(target, "not a wheel, sdist, directory or .py file")
    if "/" in target or target.endswith((".whl", ".py", ".tar.gz")):
        raise InputError(target, "no such file or directory")
    return _from_installed(target)


# --- kinds -------------------------------------------------------------------------------------


def _named(name: str, where: str, origin: str) -> SourceSet:
    """`NAME=PATH`: the path is that distribution, whatever its files say it is."""
    if not Path(where).exists():
        raise InputError(origin, f"no such file or directory: {where}")
    src = resolve(where)
    wanted = canonicalize_name(name)
    if src.name != wanted:
        src.version = _version_file(src.root, wanted) if src.kind == "dir" else None
        src.name = wanted
    src.recognised = True
    src.origin = origin
    return src


def _from_dir(path: Path, origin: str) -> SourceSet:
    root = path.resolve()
    files, top = _walk(root)
    if not files:  # nothing analysed is never "0 sites"
        archives = [n for n in top if n.endswith((".whl", ".tar.gz", ".zip"))]
        hint = f": give the archive itself ({archives[0]})" if archives else ""
        raise InputError(origin, f"no Python files under {root}: nothing to analyse{hint}")
    name, version, recognised = _dir_metadata(root, top)
    return SourceSet(name, version, "dir", root, origin, files, recognised)


def _walk(root: Path) -> tuple[list[str], list[str]]:
    """One walk of `root`: its .py files (posix, relative, sorted) and the names at its top,
    which `_dir_metadata` reads the release from, so that no directory is listed twice."""
    files: list[str] = []
    top: list[str] = []
    for n, (dirpath, dirnames, filenames) in enumerate(os.walk(root)):
        if n == 0:
            top = sorted(dirnames + filenames)
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        rel = Path(dirpath).relative_to(root)
        files += [(rel / f).as_posix() for f in filenames if f.endswith(".py")]
    return sorted(files), top


def _dir_metadata(root: Path, top: Iterable[str]) -> tuple[str, str | None, bool]:
    """(name, version, recognised) from an unpacked wheel's dist-info, an sdist's PKG-INFO, a
    checkout's version file, or pyproject; else the directory's own name, unrecognised. `top`:
    the names at the top of `root`, as `_walk` listed them."""
    infos = [root / n / "METADATA" for n in top if n.endswith(".dist-info")]
    for info in infos + [root / "PKG-INFO"]:
        if info.is_file():
            meta = email.parser.Parser().parsestr(info.read_text(encoding="utf-8", errors="replace"))
            if meta.get("Name"):
                return meta["Name"], meta.get("Version"), True
    for name in dict.fromkeys(VERSION_FILES.values()):
        version = _version_file(root, name)
        if version is not None:
            return name, version, True
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        text = pyproject.read_text(encoding="utf-8", errors="replace")
        name_m = re.search(r'(?m)^name\s*=\s*"([^"]+)"', text)
        version_m = re.search(r'(?m)^version\s*=\s*"([^"]+)"', text)
        if name_m:
            version = version_m.group(1) if version_m else _checkout_version(root, name_m.group(1))
            return name_m.group(1), version, True
    if "__init__.py" in top and (root.parent / "pyproject.toml").is_file():
        # a package folder of a checkout (`--target torchtitan` in torchtitan's clone)
        name, version, recognised = _dir_metadata(root.parent, os.listdir(root.parent))
        if recognised and canonicalize_name(name) == canonicalize_name(root.name):
            return name, version, True
    return root.name, None, False


def _checkout_version(root: Path, name: str) -> str | None:
    """The release a checkout whose pyproject gives no literal version states (a dynamic one read
    from a file, git's release tag at HEAD: auditor.checkout_version)."""
    return stated_release(root, name, name.replace("-", "_")).version


def _version_file(root: Path, name: str) -> str | None:
    """The release a checkout of `name` states in its version file, read without importing."""
    stated = version_file_release(root, name)
    return stated[0] if stated else None


def version_file_release(root: Path, name: str) -> tuple[str, str] | None:
    """(release, the file that states it) for a checkout of distribution `name` at `root`."""
    for rel, owner in VERSION_FILES.items():
        if owner == name and (root / rel).is_file():
            version = _module_version(root / rel)
            if version is not None:
                return version, rel
    for folder, owner in VERSION_TXT.items():
        txt = root / "version.txt"
        if owner == name and (root / folder).is_dir() and txt.is_file():
            version = txt.read_text(encoding="utf-8", errors="replace").strip()
            return (version, "version.txt") if version else None
    return None


def _module_version(path: Path) -> str | None:
    """`__version__` of a module made of literal assignments, or megatron's MAJOR/MINOR/PATCH."""
    try:
        tree = ast.parse(path.read_bytes())
    except (SyntaxError, ValueError, OSError):
        return None
    consts: dict[str, object] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            try:
                consts[stmt.targets[0].id] = ast.literal_eval(stmt.value)
            except (ValueError, TypeError, SyntaxError, RecursionError):
                continue
    if isinstance(consts.get("__version__"), str):
        return consts["__version__"]  # type: ignore[return-value]
    if isinstance(consts.get("version"), str):
        return consts["version"]  # type: ignore[return-value]
    parts = [consts.get(k) for k in ("MAJOR", "MINOR", "PATCH")]
    if all(isinstance(p, int) for p in parts):
        return ".".join(map(str, parts)) + str(consts.get("PRE_RELEASE") or "")
    return None


# An archive expands at most this much (declared sizes): Python sources compress 4-6x, a torch
# wheel 2-3x; a zip bomb (612 KB -> 601 MB: 1,000x) is refused before anything is written.
MAX_RATIO = 100
MAX_UNPACKED = 16 << 30
MANIFEST = ".manifest.json"  # what was unpacked: the archive's digest, every read file's sha256
# What the analysis reads from an unpacked tree, so what its manifest vouches for.
READ_NAMES = ("METADATA", "PKG-INFO", "pyproject.toml", "version.txt")


# What reading a damaged archive raises: each is "corrupt or unreadable archive" (bad input).
UNREADABLE = (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, ValueError)


def _unpack_once(archive: Path, origin: str, extract, digest: str | None = None) -> Path:
    """Extract into the cache under the archive's digest; concurrent runs race safely. A tree
    whose files no longer match the manifest written at unpack (edited, added, removed) is
    unpacked again from the archive, which was checked against its sha256. The archive's
    declared member sizes are bounded before anything is written."""
    digest = digest or download.sha256(archive)
    dest = cache_dir() / "unpacked" / f"{digest[:20]}-m"  # -m: trees with a manifest
    if (dest / ".complete").exists():
        if _matches_manifest(dest, digest):
            return dest
        _set_aside(dest)
    _bound_expansion(archive, origin, _member_sizes(archive, origin))
    dest.parent.mkdir(parents=True, exist_ok=True)
    download.remove_stale(dest.parent, (".tmp-", ".stale-"))
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=".tmp-"))
    try:
        extract(tmp)
        manifest = {"archive": digest, "files": _tree_digests(tmp)}
        (tmp / MANIFEST).write_text(json.dumps(manifest, sort_keys=True), encoding="utf-8")
        (tmp / ".complete").touch()
        try:
            tmp.rename(dest)
        except OSError:  # another process won the race
            shutil.rmtree(tmp, ignore_errors=True)
    except UNREADABLE as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError) and exc.errno in NO_SPACE:
            raise InputError(str(dest.parent), f"disk full while unpacking {archive.name} into "
                                               f"the cache ($P2PAUDIT_CACHE): free space and run "
                                               f"again (the archive is fine)") from None
        raise _unreadable(origin, exc) from None
    return dest


def _member_sizes(archive: Path, origin: str) -> list[int]:
    """The sizes the archive declares for its members (a wheel and a .zip sdist are zips)."""
    try:
        if archive.name.endswith((".whl", ".zip")):
            with zipfile.ZipFile(archive) as zf:
                return [i.file_size for i in zf.infolist()]
        with tarfile.open(archive) as tf:
            return [m.size for m in tf.getmembers()]
    except UNREADABLE as exc:
        raise _unreadable(origin, exc) from None


def _unreadable(origin: str, exc: Exception) -> InputError:
    return InputError(origin, f"corrupt or unreadable archive: {exc}")


def _bound_expansion(archive: Path, origin: str, sizes: list[int]) -> None:
    total = sum(sizes)
    packed = max(archive.stat().st_size, 1)
    if total > MAX_UNPACKED or total > MAX_RATIO * packed:
        raise InputError(origin, f"{archive.name} would expand {packed:,} bytes to {total:,} "
                                 f"({total // packed:,}x; at most {MAX_RATIO}x and "
                                 f"{MAX_UNPACKED >> 30} GiB are unpacked): not unpacked")


def _tree_digests(root: Path) -> dict[str, str]:
    """sha256 of every file the analysis reads under `root` (.py and the metadata files)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in filenames:
            if name.endswith(".py") or name in READ_NAMES:
                path = Path(dirpath) / name
                out[path.relative_to(root).as_posix()] = download.sha256(path)
    return out


def _matches_manifest(dest: Path, digest: str) -> bool:
    try:
        manifest = json.loads((dest / MANIFEST).read_bytes())
        ok = (isinstance(manifest, dict) and manifest.get("archive") == digest
              and manifest.get("files") == _tree_digests(dest))
    except (OSError, ValueError):
        ok = False
    if not ok:
        print(f"p2paudit: {dest} no longer matches the archive it was unpacked from: unpacking "
              f"it again", file=sys.stderr)
    return ok


def _set_aside(dest: Path) -> None:
    """Move a tree that cannot be trusted out of the way (a reader holding it keeps its files)."""
    stale = dest.with_name(f".stale-{dest.name}-{os.getpid()}")
    try:
        dest.rename(stale)
    except OSError:
        return
    shutil.rmtree(stale, ignore_errors=True)


def _safe_members(names: list[str], origin: str) -> None:
    for n in names:
        p = Path(n)
        if p.is_absolute() or ".." in p.parts:
            raise InputError(origin, f"archive member escapes the archive: {n}")


def _from_wheel(path: Path, origin: str, digest: str | None = None) -> SourceSet:
    def extract(dest: Path) -> None:
        with zipfile.ZipFile(path) as zf:
            bad = zf.testzip()
            if bad is not None:
                raise zipfile.BadZipFile(f"bad CRC for {bad}")
            _safe_members(zf.namelist(), origin)
            zf.extractall(dest)

    if not zipfile.is_zipfile(path):
        raise InputError(origin, "corrupt wheel: not a zip archive")
    root = _unpack_once(path, origin, extract, digest)
    files, top = _walk(root)
    if not any(n.endswith(".dist-info") for n in top):
        raise InputError(origin, "corrupt wheel: no .dist-info directory")
    name, version, _ = _dir_metadata(root, top)
    return SourceSet(name, version, "wheel", root, origin, files)


def _from_sdist(path: Path, origin: str, digest: str | None = None) -> SourceSet:
    def extract(dest: Path) -> None:
        if path.name.endswith(".zip"):
            with zipfile.ZipFile(path) as zf:
                _safe_members(zf.namelist(), origin)
                zf.extractall(dest)
        else:
            with tarfile.open(path) as tf:
                _safe_members(tf.getnames(), origin)
                tf.extractall(dest, filter="data") if hasattr(tarfile, "data_filter") else tf.extractall(dest)

    unpacked = _unpack_once(path, origin, extract, digest)
    tops = [p for p in unpacked.iterdir() if p.is_dir()]
    top = tops[0] if len(tops) == 1 else unpacked
    root = top / "src" if (top / "src").is_dir() else top
    files, names = _walk(root)
    name, version, _ = _dir_metadata(top, names if root == top else os.listdir(top))
    return SourceSet(name, version, "sdist", root, origin, files)


def _from_installed(name: str) -> SourceSet:
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        raise InputError(
            name, "not a path, not NAME==VERSION, and no installed distribution of that name"
        ) from None
    root = Path(str(dist.locate_file(""))).resolve()
    # RECORD is the distribution's own word: an entry that is absolute or climbs out of the
    # install folder (`/abs/x.py`, `pkg/../../x.py`) names what is not the distribution's file.
    files = sorted(
        str(f).replace(os.sep, "/")
        for f in (dist.files or [])
        if str(f).endswith(".py") and not Path(str(f)).is_absolute()
        and ".." not in Path(str(f)).parts
    )
    if not files:
        raise InputError(name, "installed, but its RECORD lists no Python files")
    return SourceSet(dist.metadata["Name"], dist.version, "installed", root, name, files)


def _from_pin(name: str, version: str, origin: str) -> SourceSet:
    folder = cache_dir() / "downloads" / f"{name.lower().replace('_', '-')}-{version}"
    archive, digest = download.release_archive(name, version, folder, origin)
    read = _from_wheel if archive.suffix == ".whl" else _from_sdist
    return read(archive, origin, digest)
