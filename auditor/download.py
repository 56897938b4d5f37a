"""A pinned release's archive (`NAME==VERSION`), downloaded once into its cache folder and
checked before it is read: the cp312 wheel with pip, else the release's best other file pip's
index lists, fetched as is (nothing of the package is built or run). Each archive's sha256 is
recorded beside it when pip (or a link's `#sha256=`) checked it, and checked on every read; a
file cached without a record is checked against the package index once."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from packaging.utils import (InvalidSdistFilename, InvalidWheelFilename, canonicalize_name,
                             parse_sdist_filename, parse_wheel_filename)
from packaging.version import InvalidVersion, Version

from auditor.errors import InputError
from auditor.progress import Progress


def release_archive(name: str, version: str, folder: Path, origin: str) -> tuple[Path, str]:
    """The release's archive in `folder` (downloaded there first if absent) and its sha256,
    checked; InputError naming the file where it is not the published one."""
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
    actual = sha256(archive)
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
        checked = True  # pip checks a download against the hash its index publishes (PyPI's always)
        if proc.returncode != 0:
            err = proc.stdout + proc.stderr
            fallback = _fallback_link(err, name, version)
            if fallback is None:
                raise InputError(origin, _download_failure(err))
            checked = _fetch(fallback, tmp, origin)
        folder.mkdir(parents=True, exist_ok=True)
        for p in list(tmp.iterdir()):
            digest = sha256(p) if checked else None
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
    if published and sha256(dest / filename) != published.group(1):
        raise InputError(origin, f"{url}: the fetched file's sha256 is not the index's (truncated?)")
    return published is not None


def _last_error_line(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip().startswith("ERROR")]
    return lines[-1] if lines else "no output"
