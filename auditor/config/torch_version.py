"""Which torch the run uses: the cluster's, as the user or the launch script states it.

- `--torch X` is the user's word. Where the script states another release, a note says so.
- Else what the script states: a `torch==X` pin (in a comment or a `pip install` line) and the
  NGC PyTorch image it runs in (`nvcr.io/nvidia/pytorch:YY.MM-py3`, wherever the script names
  it: a comment, `srun --container-image=`, `#SBATCH`, `docker run`), whose torch build is
  rules data (rules/torch.toml [[container_image]], from NVIDIA's release notes). Statements
  that read as different releases are all evaluated: what they disagree on stays unknown.
- Nothing stated (or only an image no rule maps): every release of rules/torch.toml
  `[framework] releases`; what they all agree on is decided, the rest is unknown, naming the
  releases that differ.
- A release the rules do not list (2.10.1, wherever it is stated: --torch, a pin, an image's
  build) is judged by the rules' ranges, and the header says so (`by_range`: "judged as 2.10.x
  by range >= 2.10, < 2.11" for a patch on a listed line). Where no variant of a rule admits it
  (older than the ranges reach), that rule's setting is unknown and the verdict names
  --torch X.Y.Z (config.derive's outside-the-rules unknowns). One newer than every listed
  release is judged by no range (rulebook.files: nobody checked the open-ended ones against it):
  every setting that depends on the release is unknown, and the header says that.

The torch installed where p2paudit runs never decides: it is this machine's build (a `+cpu`
build on a laptop), not evidence of the cluster's. A note names it with the `--torch` that
uses it. torch itself is never imported.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
from dataclasses import dataclass

from packaging.version import Version

from auditor.config.model import LaunchConfig
from auditor.config.versions import read_release, shown
from auditor.rulebook import files

# `torch==2.10.0` as a pin (a comment, `pip install torch==2.10.0+cu128`, `"torch==2.10.0"`).
_PIN = re.compile(r"(?<![\w.-])torch\s*==\s*([0-9][0-9A-Za-z.+_-]*[0-9A-Za-z])")
# An NGC PyTorch image: registry path, then the YY.MM tag (`-py3`, `-py3-igpu`, ...).
_IMAGE = re.compile(r"(nvcr\.io/nvidia/pytorch):(\d\d\.\d\d)(-[\w.-]+)?")
# A container or a working directory given to the run, wherever the script names it (a comment,
# `#SBATCH --chdir=`, `srun --container-image=`, `docker run -w`): its files or its directory
# are not the tree this audit reads (config/entry_absent.py).
_ELSEWHERE = re.compile(r"--container[\w-]*|\b(?:docker|podman|apptainer|singularity|enroot|nvidia-docker)\b"
                        r"|--(?:chdir|workdir|wdir|cwd)\b|-cwd\b|(?:\bsbatch|\bsrun|\bsalloc|#\s*SBATCH|#\s*PBS)\b"
                        r".*\s-[Dd](?:\s|=|$|/)")
# srun's (pyxis') container options that leave the working directory where it is
_PYXIS = re.compile(r"--(?:no-)?container-(?!workdir)[\w-]+")
_MOUNTS = re.compile(r"--container-mounts(?:=|\s+)(\"[^\"]*\"|'[^']*'|\S+)|--container-mounts\s*$")


@dataclass(frozen=True)
class Statement:
    """One thing the launch script says about its torch."""

    version: str | None  # as stated; None: an image whose torch no rule gives
    where: str  # "run.sh:12: pip install torch==2.10.0"


@dataclass(frozen=True)
class TorchBasis:
    """The torch release(s) the rules are evaluated for, and why."""

    version: str | None  # the version the run is judged on; None: judged across `releases`
    releases: tuple[str, ...]  # each evaluated; what they disagree on is unknown
    origin: str  # the provenance sentence of torch_version
    notes: tuple[str, ...] = ()
    why_across: str = ""  # where judged across releases, why in a few words (the header's)
    by_range: str = ""  # a release the rules do not list, decided by their ranges: how (the header's)

    @property
    def across(self) -> bool:
        """Judged across releases because nothing states which one runs."""
        return self.version is None


def installed_torch_version() -> str | None:
    """The installed torch's version from its metadata (named in a note, never used)."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


def covered_releases() -> tuple[str, ...]:
    """The torch releases a run that states none is judged on (rules/torch.toml)."""
    return tuple(files.load("torch").section("framework").get("releases", ()))


def stated(launch: LaunchConfig) -> list[Statement]:
    """What the script's text says about its torch, in line order."""
    images = {(e["image"], e["tag"]): e for e in files.load("torch").table("container_image")}
    out = []
    for n, line in enumerate(launch.text.split("\n"), 1):
        where = f"{launch.path}:{n}: {line.strip()[:80]}"
        out += [Statement(m.group(1), where) for m in _PIN.finditer(line)]
        for m in _IMAGE.finditer(line):
            entry = images.get((m.group(1), m.group(2)))
            out.append(Statement(entry["torch"] if entry else None, where))
    return out


def runs_elsewhere(launch: LaunchConfig, *, images: bool = True) -> str | None:
    """Where the script's text, comments included, names a container image (an NGC one or any
    other) or a working directory for the run: "path:line: text"; None where it names none.
    `images` False: srun's container options but its working directory's (pyxis'
    --container-image, --container-mounts) are not counted, for a command whose own `cd` names
    the directory it runs in: another root file system, not another directory; a mount that may
    put other files there (`_mounted_over`) still counts."""
    for n, line in enumerate(launch.text.split("\n"), 1):
        if images and (_IMAGE.search(line) or _ELSEWHERE.search(line)) \
                or not images and (_ELSEWHERE.search(_PYXIS.sub("", line)) or _mounted_over(line, launch.workdir)):
            return f"{launch.path}:{n}: {line.strip()[:80]}"
    return None


def _mounted_over(line: str, workdir: str | None) -> bool:
    """Whether a pyxis `--container-mounts SRC:DST[:FLAGS],...` of `line` may show other files at
    `workdir` (the command's `cd` target): a mount of another source whose destination is not
    certain (`${DIR}`, relative) or lies above, at or under it. A mount of a path onto itself
    shows the same files."""
    for m in _MOUNTS.finditer(line):
        value = (m.group(1) or "").strip("\"'")
        if not value:
            return True
        for mount in value.split(","):
            src, colon, rest = mount.partition(":")
            dst = rest.split(":")[0] or src
            uncertain = any(c in mount for c in "$`")
            if src == dst and not (uncertain and not colon):  # `$MOUNTS` alone may be any list
                continue
            if uncertain or not dst.startswith("/") or workdir is None:
                return True
            a, b = os.path.normpath(dst), os.path.normpath(workdir)
            if os.path.commonpath([a, b]) in (a, b):
                return True
    return False


def resolve(explicit: str | None, launch: LaunchConfig) -> TorchBasis:
    """The torch basis of a run: --torch, else what the script states, else the covered releases."""
    statements = stated(launch)
    known = [s for s in statements if s.version]
    notes = [_installed_note()] if explicit is None and not known and installed_torch_version() else []
    notes += [f"{s.where}: an NGC image no rules/torch.toml [[container_image]] maps to its torch "
              "build (add its tag from NVIDIA's release notes)" for s in statements if not s.version]
    if explicit:
        other = [s for s in known if _releases(s.version) != _releases(explicit)]
        notes += [f"--torch {explicit} decides, although the script states torch {s.version} "
                  f"({s.where})" for s in other]
        return _one(explicit, "--torch", notes)
    if not known:
        releases = covered_releases()
        what = "no torch stated in the script" + (" (an image whose torch is unknown)"
                                                   if statements else "")
        origin = (f"{what}: judged across torch {span(releases)}, the releases rules/torch.toml "
                  "covers; --torch X.Y.Z gives the cluster's")
        why = "an image whose torch the rules do not map" if statements else "none stated"
        return TorchBasis(None, releases, origin, tuple(notes), why)
    distinct = list(dict.fromkeys(s.version for s in known if s.version))
    if len(distinct) == 1:
        first = known[0]
        return _one(distinct[0], first.where, notes)
    releases = tuple(dict.fromkeys(r for v in distinct for r in _releases(v)))
    disagree = "; ".join(f"torch {s.version} ({s.where})" for s in known)
    notes.append(f"the script states different torch builds: {disagree}; each is evaluated, and "
                 "what they disagree on is unknown (--torch X.Y.Z decides)")
    notes += [f"torch {v}: {u}" for v in distinct if (u := by_range(_releases(v)))]
    return TorchBasis(None, releases, f"the script states {len(distinct)} torch builds: "
                      f"{', '.join(distinct)}; --torch X.Y.Z gives the cluster's", tuple(notes),
                      f"the script states {len(distinct)} builds")


def _one(version: str, origin: str, notes: list[str]) -> TorchBasis:
    reading = read_release(version, f"torch version ({origin})")
    unlisted = by_range(reading.releases)
    said = [w for w in (reading.note, unlisted) if w]
    origin = f"torch {version} ({origin})" + "".join(f"; {w}" for w in said)
    notes += [reading.note] if not reading.exact else []
    notes += [f"torch {version}: {unlisted}"] if unlisted else []
    return TorchBasis(version, reading.releases, origin, tuple(notes), by_range=unlisted)


def by_range(releases: tuple[str, ...]) -> str:
    """How a release rules/torch.toml does not list is judged, in words; "" where it is listed
    (a pre-release build's earlier line, read as X.Y.99, is judged by range on purpose: its own
    note says so). Either way its rules are those whose ranges admit it: one that admits no
    variant leaves its setting unknown (config.derive: outside the releases the rules cover)."""
    listed = covered_releases()
    release = releases[-1]
    if not listed or release in listed:
        return ""
    v, known = Version(release), [Version(r) for r in listed]
    major, minor = v.release[:2]
    if known[0] < v < known[-1] and any(k.release[:2] == (major, minor) and k < v for k in known):
        return (f"not a release the rules list; judged as {major}.{minor}.x by range "
                f">= {major}.{minor}, < {major}.{minor + 1}")
    if Version(v.base_version) > known[-1]:  # rulebook.files: no open-ended range was checked
        return (f"newer than every release the rules list ({span(listed)}): no rule's range "
                "was checked against it, so every setting that depends on the torch release is "
                "unknown (--torch X.Y.Z gives a listed release)")
    where = ("older than every release the rules list" if v < known[0] else
             "on a line no release the rules list is on")
    return (f"{where} ({span(listed)}): judged by the rules' ranges; what none admits is "
            "unknown (--torch X.Y.Z gives a listed release)")


def _releases(version: str | None) -> tuple[str, ...]:
    return read_release(version, "torch version").releases if version else ()


def _installed_note() -> str:
    installed = installed_torch_version()
    return (f"torch {installed} is installed where p2paudit runs: it was not used, being this "
            f"machine's build, not evidence of the cluster's (--torch {installed} uses it if the "
            "run does)")


def span(releases: tuple[str, ...] | list[str]) -> str:
    """Releases as the output names them: `2.4.0-2.15.0` (in order), or the one release."""
    shown_ = [shown(r) for r in releases]
    return shown_[0] if len(shown_) == 1 else f"{shown_[0]}-{shown_[-1]}"
