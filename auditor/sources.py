"""Turns a TARGET into a SourceSet: the Python files of one distribution, never imported.

TARGET is an installed distribution name, a wheel or sdist path, a source directory or file,
`NAME==VERSION` (downloaded once with pip into the cache), or `NAME=PATH` (a path that is that
distribution, e.g. a git checkout). Unpacked archives and downloads are kept under `cache_dir()`
keyed by content, so a second run does no I/O beyond reading files.
"""

from __future__ import annotations

import ast
import email.parser
import functools
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.utils import (InvalidSdistFilename, InvalidWheelFilename, canonicalize_name,
                             parse_sdist_filename, parse_wheel_filename)
from packaging.version import InvalidVersion, Version

from auditor.errors import InputError
from auditor.progress import Progress

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

    def __post_init__(self) -> None:
        self.name = canonicalize_name(self.name)

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
        if self.kind != "dir":
            return release
        if self.recognised:
            return f"{release} at {self.root}"
        return f"{self.root} (not recognised: no dist-info, PKG-INFO, pyproject or version file)"

    def to_json(self) -> dict[str, str | None]:
        return {"name": self.name, "version": self.version, "source": self.kind, "origin": self.origin,
                "label": self.label}


def target_label(target: dict[str, Any]) -> str:
    """A document's target as reports name it (documents written before labels existed too)."""
    return target.get("label") or f"{target['name']} {target.get('version') or '(version unknown)'}"


def resolve(target: str) -> SourceSet:
    """Resolve one TARGET; raises InputError naming it and the cause."""
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
    pin = PIN.match(target)
    if pin:
        return _from_pin(pin.group(1), pin.group(2), target)
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
        name = re.search(r'(?m)^name\s*=\s*"([^"]+)"', text)
        version = re.search(r'(?m)^version\s*=\s*"([^"]+)"', text)
        if name:
            return name.group(1), version.group(1) if version else None, True
    return root.name, None, False


def _version_file(root: Path, name: str) -> str | None:
    """The release a checkout of `name` states in its version file, read without importing."""
    for rel, owner in VERSION_FILES.items():
        if owner == name and (root / rel).is_file():
            version = _module_version(root / rel)
            if version is not None:
                return version
    for folder, owner in VERSION_TXT.items():
        txt = root / "version.txt"
        if owner == name and (root / folder).is_dir() and txt.is_file():
            return txt.read_text(encoding="utf-8", errors="replace").strip() or None
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


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _unpack_once(archive: Path, origin: str, extract, digest: str | None = None) -> Path:
    """Extract into the cache under the archive's digest; concurrent runs race safely."""
    dest = cache_dir() / "unpacked" / (digest or _sha256(archive))[:20]
    if (dest / ".complete").exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=".tmp-"))
    try:
        extract(tmp)
        (tmp / ".complete").touch()
        try:
            tmp.rename(dest)
        except OSError:  # another process won the race
            shutil.rmtree(tmp, ignore_errors=True)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, ValueError) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise InputError(origin, f"corrupt or unreadable archive: {exc}") from None
    return dest


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
    root = Path(dist.locate_file("")).resolve()
    files = sorted(
        str(f).replace(os.sep, "/")
        for f in (dist.files or [])
        if str(f).endswith(".py") and not str(f).startswith("..")
    )
    if not files:
        raise InputError(name, "installed, but its RECORD lists no Python files")
    return SourceSet(dist.metadata["Name"], dist.version, "installed", root, name, files)


def _from_pin(name: str, version: str, origin: str) -> SourceSet:
    folder = cache_dir() / "downloads" / f"{name.lower().replace('_', '-')}-{version}"
    archives = _archives(folder)
    if not archives:
        _pip_download(name, version, folder, origin)
        archives = _archives(folder)
    if not archives:
        raise InputError(origin, f"pip downloaded nothing into {folder}")
    archive = archives[0]
    digest = _check_published(archive, name, origin)
    read = _from_wheel if archive.suffix == ".whl" else _from_sdist
    return read(archive, origin, digest)


def _archives(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.name.endswith((".whl", ".tar.gz", ".zip")))


# The package index's JSON listing of a project (PEP 691): every file with its sha256.
INDEX = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/") + "/"


def _check_published(archive: Path, name: str, origin: str) -> str:
    """The archive is the file the index publishes under its name: its sha256 against the one
    recorded beside it (`FILE.sha256`) when it was downloaded (pip checked it against its index's
    hash then), or, for a file cached before records were kept, against the index's (PEP 691
    `hashes.sha256`: PIP_INDEX_URL's index, else PyPI), recorded then. A truncated or replaced
    file in the cache is bad input, never read as the release."""
    record = archive.with_name(archive.name + ".sha256")
    expected = record.read_text().strip() if record.is_file() else _published_sha256(name, archive.name, origin)
    actual = _sha256(archive)
    if actual != expected:
        raise InputError(str(archive), f"sha256 {actual} is not the {expected} the package index "
                                       "publishes for this file (truncated or replaced?); delete it "
                                       "to download it again")
    if not record.is_file():
        _record_sha256(archive, expected)
    return actual


def _record_sha256(archive: Path, digest: str) -> None:
    record = archive.with_name(archive.name + ".sha256")
    tmp = record.with_name(f".{record.name}.{os.getpid()}")
    tmp.write_text(digest + "\n")
    tmp.replace(record)


def _published_sha256(name: str, filename: str, origin: str) -> str:
    url = f"{INDEX}{canonicalize_name(name)}/"
    request = urllib.request.Request(url, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as resp:
            listing = json.load(resp)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise InputError(origin, f"cannot check {filename} against the sha256 {url} publishes: "
                                 f"{exc}") from None
    for entry in listing.get("files", []):
        if entry.get("filename") == filename and entry.get("hashes", {}).get("sha256"):
            return str(entry["hashes"]["sha256"])
    raise InputError(origin, f"{url} publishes no sha256 for {filename}: it cannot be checked")


# pip says why an index could not be read only at -vv; these mark a network failure.
NO_NETWORK = ("NewConnectionError", "Network is unreachable", "Temporary failure in name resolution",
              "Name or service not known", "ConnectTimeout", "ProxyError", "ConnectionError",
              "SSLError", "ReadTimeout")
# pip -vv names every file of the project it saw and why it skipped it (another wheel tag, an sdist
# under --only-binary): the fallbacks when no cp312 wheel exists.
SKIPPED_LINK = re.compile(r"Skipping link: .*?: (\S+) \(from \S+\)")
NOT_FOUND = re.compile(r"Could not fetch URL \S+: 404 ")


def _pip_download(name: str, version: str, folder: Path, origin: str) -> None:
    """The cp312 wheel with pip; else the release's best other file pip's index lists (a wheel of
    another CPython, then an sdist), fetched as is: nothing of the package is built or run."""
    tmp = Path(tempfile.mkdtemp(prefix="p2paudit-dl-"))
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--python-version", "3.12", "--disable-pip-version-check", "-vv", "-d", str(tmp),
           f"{name}=={version}"]
    print(f"p2paudit: downloading {name}=={version} (once, into {folder})", file=sys.stderr)
    try:
        try:
            with Progress(f"downloading {name}=={version}"):
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            raise InputError(origin, "pip download timed out after 600 s") from None
        checked = True  # pip checks what it downloads against its index's hash
        if proc.returncode != 0:
            err = proc.stdout + proc.stderr
            fallback = _fallback_link(err, name, version)
            if fallback is None:
                raise InputError(origin, _download_failure(err))
            checked = _fetch(fallback, tmp, origin)
        folder.mkdir(parents=True, exist_ok=True)
        for p in list(tmp.iterdir()):
            digest = _sha256(p) if checked else None
            shutil.move(str(p), folder / p.name)
            if digest:  # else _check_published asks the index before the file is read
                _record_sha256(folder / p.name, digest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _download_failure(err: str) -> str:
    if any(s in err for s in NO_NETWORK) or (
        "Could not fetch URL" in err and not NOT_FOUND.search(err)
    ):
        return "no network: pip could not reach the package index"
    if NOT_FOUND.search(err) and "(from versions: none)" in err:
        return "no such project on the package index"
    if "No matching distribution" in err or "Could not find a version" in err:
        return f"no such release on the package index (pip: {_last_error_line(err)})"
    return f"pip download failed: {_last_error_line(err)}"


def _fallback_link(pip_log: str, name: str, version: str) -> str | None:
    """The URL of the release's preferred non-cp312 file among the links pip skipped."""
    wanted = canonicalize_name(name)
    ranked: list[tuple[tuple[int, int], str]] = []
    for url in SKIPPED_LINK.findall(pip_log):
        filename = url.rsplit("/", 1)[-1].split("#", 1)[0]
        rank = _file_rank(filename, wanted, version)
        if rank is not None:
            ranked.append((rank, url))
    return min(ranked)[1] if ranked else None


def _file_rank(filename: str, name: str, version: str) -> tuple[int, int] | None:
    """Lower is preferred: Linux then other wheels, newest CPython first, then sdists."""
    try:
        if filename.endswith(".whl"):
            fname, fversion, _, tags = parse_wheel_filename(filename)
            pythons = [t.interpreter for t in tags]
            newest = max((int(p[3:]) for p in pythons if p.startswith("cp3") and p[3:].isdigit()),
                         default=0)
            linux = any("linux" in t.platform or t.platform == "any" for t in tags)
            rank = (0 if linux else 1, -newest)
        elif filename.endswith((".tar.gz", ".zip")):
            fname, fversion = parse_sdist_filename(filename)
            rank = (2, 0)
        else:
            return None
        if fname != name or fversion != Version(version):
            return None
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None
    return rank


def _fetch(url: str, dest: Path, origin: str) -> bool:
    filename = urllib.request.url2pathname(url.rsplit("/", 1)[-1].split("#", 1)[0])
    print(f"p2paudit: no cp312 wheel; fetching {filename}", file=sys.stderr)
    try:
        with urllib.request.urlopen(url, timeout=600) as resp, (dest / filename).open("wb") as out:
            shutil.copyfileobj(resp, out)
    except (urllib.error.URLError, OSError) as exc:
        raise InputError(origin, f"could not fetch {url}: {exc}") from None
    # A link from a simple HTML index carries the index's hash (`#sha256=...`): checked here; pip's
    # JSON-index links do not, and a file fetched from one is checked against the index on its read.
    published = re.search(r"#sha256=([0-9a-f]{64})", url)
    if published and _sha256(dest / filename) != published.group(1):
        raise InputError(origin, f"{url}: the fetched file's sha256 is not the index's (truncated?)")
    return published is not None


def _last_error_line(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip().startswith("ERROR")]
    return lines[-1] if lines else "no output"
