"""A pinned release's archive (`NAME==VERSION`), downloaded once into its cache folder and
checked before it is read: the cp312 wheel with pip, else the release's best other file pip's
index lists, fetched as is (nothing of the package is built or run). Each archive's sha256 is
checked against the package index's on every read (the record beside it, made when pip or a
link's `#sha256=` checked it, stands in only where the index cannot be reached)."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from packaging.utils import (InvalidSdistFilename, InvalidWheelFilename, canonicalize_name,
                             parse_sdist_filename, parse_wheel_filename)
from packaging.version import InvalidVersion, Version

from auditor.errors import InputError
from auditor.progress import Progress

STALE_S = 3600  # a temporary folder this old belongs to a run that was interrupted


def release_archive(name: str, version: str, folder: Path, origin: str) -> tuple[Path, str]:
    """The release's archive in `folder` (downloaded there first if absent) and its sha256,
    checked; InputError naming the file where it is not the published one."""
    remove_stale(Path(tempfile.gettempdir()), ("p2paudit-dl-",))  # of interrupted downloads
    archives = _archives(folder)
    if not archives:
        _pip_download(name, version, folder, origin)
        archives = _archives(folder)
    if not archives:
        raise InputError(origin, f"pip downloaded nothing into {folder}")
    return archives[0], _check_published(archives[0], name, origin)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()



def _archives(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.name.endswith((".whl", ".tar.gz", ".zip")))


def remove_stale(folder: Path, prefixes: tuple[str, ...]) -> None:
    """Remove what interrupted runs left in `folder` (entries named with one of `prefixes`, older
    than STALE_S); a concurrent run's are younger and stay."""
    now = time.time()
    try:
        entries = list(folder.iterdir())
    except OSError:
        return
    for entry in entries:
        try:
            if entry.name.startswith(prefixes) and now - entry.lstat().st_mtime > STALE_S:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink()
        except OSError:
            continue


# The package index's JSON listing of a project (PEP 691): every file with its sha256.
INDEX = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/") + "/"


def _check_published(archive: Path, name: str, origin: str) -> str:
    """The archive is the file the index publishes under its name: its sha256 against the index's
    (PEP 691 `hashes.sha256`: PIP_INDEX_URL's index, else PyPI), asked on every first read in a
    process; only where the index cannot be reached, against the one recorded beside it
    (`FILE.sha256`) when it was downloaded (pip checked it against its index's hash then), as a
    record beside a file cannot vouch for it against whoever replaced both. A truncated or
    replaced file in the cache is bad input, never read as the release."""
    record = archive.with_name(archive.name + ".sha256")
    expected = _published_sha256(name, archive.name, origin)
    if expected is None:  # the index cannot be reached: the record made at download
        if not record.is_file():
            raise InputError(origin, f"cannot check {archive.name} against the sha256 "
                                     f"{INDEX}{canonicalize_name(name)}/ publishes: no network, "
                                     f"and no record of it from its download")
        expected = record.read_text().strip()
    actual = _sha256_once(archive)
    if actual != expected:
        raise InputError(str(archive), f"sha256 {actual} is not the {expected} the package index "
                                       "publishes for this file (truncated or replaced?); delete it "
                                       "to download it again")
    if not record.is_file() or record.read_text().strip() != expected:
        _record_sha256(archive, expected)
    return actual


@functools.cache
def _sha256_cached(path: str, size: int, mtime_ns: int) -> str:
    return sha256(Path(path))


def _sha256_once(path: Path) -> str:
    st = path.stat()
    return _sha256_cached(str(path), st.st_size, st.st_mtime_ns)


def _record_sha256(archive: Path, digest: str) -> None:
    record = archive.with_name(archive.name + ".sha256")
    tmp = record.with_name(f".{record.name}.{os.getpid()}")
    tmp.write_text(digest + "\n")
    tmp.replace(record)


@functools.cache
def _published_sha256(name: str, filename: str, origin: str) -> str | None:
    """The index's sha256 of `filename`; None when the index cannot be reached. InputError when
    it answers without a sha256 for that file."""
    url = f"{INDEX}{canonicalize_name(name)}/"
    request = urllib.request.Request(url, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=20) as resp:
            listing = json.load(resp)
    except (urllib.error.URLError, OSError, ValueError):
        return None
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
        checked = True  # pip checks a download against the hash its index publishes (PyPI's always)
        if proc.returncode != 0:
            err = proc.stdout + proc.stderr
            fallback = _fallback_link(err, name, version)
            if fallback is None:
                failure = _download_failure(err)
                raise (NoSuchRelease if failure.startswith("no such") else InputError)(origin, failure)
            checked = _fetch(fallback, tmp, origin)
        folder.mkdir(parents=True, exist_ok=True)
        for p in list(tmp.iterdir()):
            digest = sha256(p) if checked else None
            shutil.move(str(p), folder / p.name)
            if digest:  # else _check_published asks the index before the file is read
                _record_sha256(folder / p.name, digest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class NoSuchRelease(InputError):
    """The package index answered and has no such release (or project): not a network failure.
    A caller that chose the release itself (config.releases) says so as undecided, not bad input."""


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
    if published and sha256(dest / filename) != published.group(1):
        raise InputError(origin, f"{url}: the fetched file's sha256 is not the index's (truncated?)")
    return published is not None


def _last_error_line(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip().startswith("ERROR")]
    return lines[-1] if lines else "no output"
