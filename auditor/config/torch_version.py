"""Which torch release the run uses: the one the user names, else the installed one, else the
launch script's `# torch==X` comment. torch itself is never imported."""

from __future__ import annotations

import importlib.metadata

from auditor.config.model import LaunchConfig


def installed_torch_version() -> str | None:
    """The installed torch's version from its metadata."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


def resolve_torch_version(explicit: str | None, launch: LaunchConfig) -> tuple[str | None, str]:
    """--torch VERSION, else the installed torch, else the script's `torch==X` pin comment."""
    if explicit:
        return explicit, "--torch"
    installed = installed_torch_version()
    if installed:
        return installed, "the torch installed where p2paudit runs (pass --torch for the cluster's)"
    if launch.torch_pin:
        return launch.torch_pin, f"{launch.path}: torch=={launch.torch_pin} comment"
    return None, "no --torch, no installed torch and no torch==X comment in the script"

