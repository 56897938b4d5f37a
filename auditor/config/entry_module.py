"""The file a `-m MODULE` entry runs, found as Python finds it (issue 22 items 4, 10).

`torchrun -m torchtitan.models.flux.inference.infer` (pytorch/torchtitan@b5bcd76c66
torchtitan/models/flux/run_infer.sh), `python -m pkg.mod` behind srun, `deepspeed --module
pkg.mod`: the launcher hands the name to `python -m` (torch/distributed/run.py `--module`:
"interpret the script as a Python module, executing with the same behavior as 'python -m'").
Python looks the module up on sys.path: the working directory first (runpy puts it there for
`-m`), then each PYTHONPATH entry (the script's own `export PYTHONPATH=...`; a relative entry
against the working directory), then the installed packages. `a.b.c` is the file `a/b/c.py`, or
`a/b/c/__main__.py` where `a/b/c` is a package; the first root whose top-level package holds it
is the one Python runs (a regular package, one with `__init__.py`, shadows the roots after it).
The job's working directory is taken to be this audit's (as `pwd` is, config.launch); beside
the launch script is looked at last, where a job that `cd`s to it runs. Installed packages are
this machine's, not the cluster's: not looked at. Not found, the entry stays unknown.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from auditor.bash.values import EnvVar, segments
from auditor.config.model import LaunchConfig
from auditor.findings import Finding


@dataclass(frozen=True)
class Root:
    path: Path
    why: str  # how the run gets it on sys.path, in words


def module_roots(env: dict[str, EnvVar], launch_path: str) -> list[Root]:
    """sys.path as `python -m` builds it for the run, in order, as far as known here: the
    working directory, the known PYTHONPATH entries, then beside the launch script."""
    cwd = Path.cwd()
    roots = [Root(cwd, f"the working directory {cwd}, first on sys.path under `python -m` "
                       "(the job's is taken to be this audit's)")]
    var = env.get("PYTHONPATH")
    if var is not None:
        where = "the caller's environment" if var.how == "environ" else f"line {var.line}"
        for entry in _known_entries(var):
            path = Path(entry) if os.path.isabs(entry) else cwd / entry
            roots.append(Root(path, f"the PYTHONPATH entry {entry} ({where})"))
    here = Path(launch_path).resolve().parent
    roots.append(Root(here, f"the launch script's directory {here} (a job that `cd`s there)"))
    return roots


def _known_entries(var: EnvVar) -> list[str]:
    """The PYTHONPATH entries whose text is known (`$PWD/src:$PYTHONPATH`: `$PWD/src` where
    PWD is known; an unknown piece makes only its own entry unknown). An empty entry is the
    working directory, already first."""
    entries, current, unknown = [], "", False
    for text, is_unknown in segments(var.value):
        parts = text.split(os.pathsep) if not is_unknown else [text]
        for k, part in enumerate(parts):
            if k:
                entries.append("" if unknown else current)
                current, unknown = "", False
            current += part
            unknown = unknown or is_unknown
    entries.append("" if unknown else current)
    return [e for e in entries if e]


def module_file(module: str, roots: list[Root]) -> tuple[Path, Root] | None:
    """The file `python -m module` runs and the sys.path root it is found under; None where no
    root gives it (or the module name is no dotted name)."""
    parts = module.split(".")
    if not all(p.isidentifier() for p in parts):
        return None
    for root in roots:
        top = root.path / parts[0]
        regular = (top / "__init__.py").is_file()
        found = _in_root(root.path, parts)
        if found is not None:
            return found, root
        if regular or (root.path / f"{parts[0]}.py").is_file():
            return None  # Python stops at the first root giving the top-level name
    return None


def _in_root(root: Path, parts: list[str]) -> Path | None:
    base = root.joinpath(*parts)
    if (base / "__init__.py").is_file():  # a package: python -m runs its __main__
        return base / "__main__.py" if (base / "__main__.py").is_file() else None
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    main = base / "__main__.py"  # a namespace package's __main__
    return main if main.is_file() else None


def read_entry_module(config: LaunchConfig, path: str) -> None:
    """Where the entry is a module (`config.script_module`), the file it runs becomes
    `config.script_read`, said in an info finding; not found, nothing is read in its place."""
    if not config.script_module or not isinstance(config.script, str) or config.script_read:
        return
    found = module_file(config.script, module_roots(config.env, path))
    if found is None:
        return
    file, root = found
    config.script_read = str(file)
    config.diagnostics.append(Finding(
        "launch.entry-module", "info",
        f"`-m {config.script}` runs {file}, found under {root.why}",
        fix=f"--command 'torchrun ... {file} ...' gives another entry",
        where=f"{path}:{config.command_line}", detail={"script": config.script, "read": str(file)}))

