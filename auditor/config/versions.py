"""Version strings read as the release they build on.

Rules are keyed by releases (`>=2.7,<2.10`). Builds in the wild carry more: a local segment
(`2.10.0+cu128`, NGC's `2.10.0a0+b465a5843b.nv25.10`), a pre-release or dev segment
(`2.11.0.dev20260101`, `2.11.0rc1`), a post segment. A local or post segment changes nothing the
rules know about: the build is its release. A pre-release or dev build of R comes from the branch
before R was cut: it may or may not carry what R changed, so it is read as both the release before R
and R, and whatever those two disagree on stays unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from auditor.errors import InputError


@dataclass(frozen=True)
class Reading:
    """How a version string is read: the release(s) its rules are evaluated for, and why."""

    text: str
    releases: tuple[str, ...]  # one release, or (the one before, the one it precedes)
    note: str  # "" when the text is a plain release

    @property
    def exact(self) -> bool:
        return len(self.releases) == 1


def read_release(text: str, subject: str) -> Reading:
    """InputError (exit 2) when `text` is not a version at all."""
    try:
        v = Version(text.strip())
    except InvalidVersion:
        raise InputError(subject, f"{text!r} is not a version (expected e.g. 2.10.0, "
                                  "2.10.0+cu128, 2.11.0a0+git1234)") from None
    release = ".".join(str(p) for p in (v.release + (0, 0))[:max(3, len(v.release))])
    if v.pre is None and v.dev is None:
        if v.local is None and v.post is None and str(v) == release:
            return Reading(text, (release,), "")
        return Reading(text, (release,), f"{text} read as release {release} (a local or post "
                                         "build carries its release's code)")
    before = _release_before(v)
    if before is None:
        return Reading(text, (release,), f"{text} is a pre-release of {release}; no earlier "
                                         f"release line to compare with, read as {release}")
    return Reading(text, (before, release),
                   f"{text} is a pre-release or dev build of {release}, made before {release} was "
                   f"cut: read as both {shown(before)} and {release}; what they disagree on is unknown "
                   f"(pass --torch with the release this build matches to decide it)")


def shown(release: str) -> str:
    """A release as the output names it: the X.Y-1 line read as X.Y-1.99 is shown as X.Y-1.x."""
    return release.replace(".99", ".x") if release.endswith(".99") else release


def _release_before(v: Version) -> str | None:
    """The newest release before `v`'s release: X.Y.Z-1 for a patch; for X.Y.0 the X.Y-1 line
    (as X.Y-1.99, which every range that admits that line's last release admits)."""
    major, minor, micro = (v.release + (0, 0))[:3]
    if micro > 0:
        return f"{major}.{minor}.{micro - 1}"
    if minor > 0:
        return f"{major}.{minor - 1}.99"
    return None
