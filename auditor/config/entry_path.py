"""The training script a launch names by an absolute path of the authors' cluster, found in the
checkout the launch script sits in (issue 22 items 4, 6).

bigcode-project/Megatron-LM's examples/finetune_starcoderplus.slurm runs
`$SCRIPT_REPO/pretrain_gpt.py` with SCRIPT_REPO=/fsx/leandro/git/Megatron-LM-BC after `pushd
$SCRIPT_REPO`: the launch script lives in a checkout of the very repository whose entry it runs.
Where that path is not a file here, the file at the same tail path (the last parts of the path,
matched exactly, the longest first) in the launch script's directory or a directory above it,
up to the checkout's root (auditor.bash.absent.checkout_root: the nearest holding `.git`,
`setup.py` or `pyproject.toml`), is the
one read; the scan says so (launch.entry-in-checkout). No checkout around the launch script, or
no file at any tail: nothing is read in its place.
"""

from __future__ import annotations

from pathlib import Path

from auditor.bash.absent import checkout_root


def in_checkout(launch_path: str, script: str) -> Path | None:
    """The file read in place of the absolute `script`, which is not a file here; None where
    `script` is relative or a file, or the checkout holds no file at any of its tails."""
    given = Path(script)
    if not given.is_absolute() or given.exists():
        return None
    root = checkout_root(launch_path)
    if root is None:
        return None  # no checkout around the launch script
    here = Path(launch_path).resolve().parent
    dirs = [d for d in (here, *here.parents) if d.is_relative_to(root)]
    parts = given.parts[1:]
    for i in range(len(parts)):
        tail = Path(*parts[i:])
        found = next((d / tail for d in dirs if (d / tail).is_file()), None)
        if found is not None:
            return found
    return None
