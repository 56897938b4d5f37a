"""Turns a TARGET into a SourceSet: the Python files of one distribution, never imported.

TARGET is an installed distribution name, a wheel or sdist path, a source directory or file, or
`NAME==VERSION` (downloaded once with pip into the cache). Unpacked archives and downloads are
kept under `cache_dir()` keyed by content, so a second run does no I/O beyond reading files.
"""

from __future__ import annotations

import email.parser
import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import canonicalize_name

from auditor.errors import InputError

SKIP_DIRS = {"__pycache__", ".git", ".hg", ".tox", ".venv", "venv", "node_modules", "build", "dist"}
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)$")


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
    version: str | None
    kind: str  # "wheel" | "sdist" | "dir" | "installed"
    root: Path  # paths below are relative to this
    origin: str  # the TARGET as given
    files: list[str] = field(default_factory=list)  # .py files, posix, sorted

    def __post_init__(self) -> None:
        self.name = canonicalize_name(self.name)

    def module_name(self, relpath: str) -> str:
        parts = relpath[:-3].split("/") if relpath.endswith(".py") else relpath.split("/")
        if parts and parts[-1] == "__init__":
            parts.pop()
        return ".".join(parts)

    def to_json(self) -> dict[str, str | None]:
        return {"name": self.name, "version": self.version, "source": self.kind, "origin": self.origin}


def resolve(target: str) -> SourceSet:
    """Resolve one TARGET; raises InputError naming it and the cause."""
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


def _from_dir(path: Path, origin: str) -> SourceSet:
    root = path.resolve()
    name, version = _dir_metadata(root)
    files = sorted(
        p.relative_to(root).as_posix()
        for p in _walk_py(root)
    )
    return SourceSet(name, version, "dir", root, origin, files)


def _walk_py(root: Path):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for f in filenames:
            if f.endswith(".py"):
                yield Path(dirpath) / f


def _dir_metadata(root: Path) -> tuple[str, str | None]:
    """Name and version from an unpacked wheel's dist-info, an sdist's PKG-INFO, or pyproject."""
    for info in sorted(root.glob("*.dist-info/METADATA")) + [root / "PKG-INFO"]:
        if info.is_file():
            meta = email.parser.Parser().parsestr(info.read_text(encoding="utf-8", errors="replace"))
            if meta.get("Name"):
                return meta["Name"], meta.get("Version")
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        text = pyproject.read_text(encoding="utf-8", errors="replace")
        name = re.search(r'(?m)^name\s*=\s*"([^"]+)"', text)
        version = re.search(r'(?m)^version\s*=\s*"([^"]+)"', text)
        if name:
            return name.group(1), version.group(1) if version else None
    return root.name, None


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:20]


def _unpack_once(archive: Path, origin: str, extract) -> Path:
    """Extract into the cache under the archive's digest; concurrent runs race safely."""
    dest = cache_dir() / "unpacked" / _digest(archive)
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


def _from_wheel(path: Path, origin: str) -> SourceSet:
    def extract(dest: Path) -> None:
        with zipfile.ZipFile(path) as zf:
            bad = zf.testzip()
            if bad is not None:
                raise zipfile.BadZipFile(f"bad CRC for {bad}")
            _safe_members(zf.namelist(), origin)
            zf.extractall(dest)

    if not zipfile.is_zipfile(path):
        raise InputError(origin, "corrupt wheel: not a zip archive")
    root = _unpack_once(path, origin, extract)
    name, version = _dir_metadata(root)
    if not any(root.glob("*.dist-info")):
        raise InputError(origin, "corrupt wheel: no .dist-info directory")
    files = sorted(p.relative_to(root).as_posix() for p in _walk_py(root))
    return SourceSet(name, version, "wheel", root, origin, files)


def _from_sdist(path: Path, origin: str) -> SourceSet:
    def extract(dest: Path) -> None:
        if path.name.endswith(".zip"):
            with zipfile.ZipFile(path) as zf:
                _safe_members(zf.namelist(), origin)
                zf.extractall(dest)
        else:
            with tarfile.open(path) as tf:
                _safe_members(tf.getnames(), origin)
                tf.extractall(dest, filter="data") if hasattr(tarfile, "data_filter") else tf.extractall(dest)

    unpacked = _unpack_once(path, origin, extract)
    tops = [p for p in unpacked.iterdir() if p.is_dir()]
    top = tops[0] if len(tops) == 1 else unpacked
    name, version = _dir_metadata(top)
    root = top / "src" if (top / "src").is_dir() else top
    files = sorted(p.relative_to(root).as_posix() for p in _walk_py(root))
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
    src = _from_wheel(archive, origin) if archive.suffix == ".whl" else _from_sdist(archive, origin)
    return src


def _archives(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix == ".whl" or p.name.endswith(".tar.gz"))


# pip says why an index could not be read only at -vv; these mark a network failure.
NO_NETWORK = ("Could not fetch URL", "NewConnectionError", "Network is unreachable",
              "Temporary failure in name resolution", "Name or service not known", "ConnectTimeout",
              "ProxyError")


def _pip_download(name: str, version: str, folder: Path, origin: str) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="p2paudit-dl-"))
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--python-version", "3.12", "--disable-pip-version-check", "-vv", "-d", str(tmp),
           f"{name}=={version}"]
    print(f"p2paudit: downloading {name}=={version} (once, into {folder})", file=sys.stderr)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        shutil.rmtree(tmp, ignore_errors=True)
        raise InputError(origin, "pip download timed out after 600 s") from None
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        err = proc.stdout + proc.stderr
        if "(from versions: none)" in err and any(s in err for s in NO_NETWORK):
            cause = "no network: pip could not reach the package index"
        elif "No matching distribution" in err or "Could not find a version" in err:
            cause = f"no such release on the package index (pip: {_last_error_line(err)})"
        else:
            cause = f"pip download failed: {_last_error_line(err)}"
        raise InputError(origin, cause)
    folder.mkdir(parents=True, exist_ok=True)
    for p in tmp.iterdir():
        shutil.move(str(p), folder / p.name)
    shutil.rmtree(tmp, ignore_errors=True)


def _last_error_line(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip().startswith("ERROR")]
    return lines[-1] if lines else "no output"
