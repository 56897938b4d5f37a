"""A run launched from a framework's checkout is that checkout's release (issue 27).

torchtitan's README launches from its clone (`cd torchtitan && CONFIG_FILE=... ./run_train.sh`):
`-m torchtitan.train` imports the `torchtitan/` package of the working directory, not an
installed release. Where the rules name the package a checkout holds (`[checkout] package`) and
it is beside the launch script or in the working directory, the release the checkout states
(auditor.checkout_version) is the one judged, as a `# torchtitan==X` comment would say; a
checkout that states none leaves the release unknown, with the step that decides it.
verl's examples run from the clone's root (`bash examples/grpo_trainer/run_*.sh`), so a script
anywhere inside it is that checkout's (`within`), and a clone between releases (0.8.0.dev) is
read itself (`tree`): its own code, and the rules its code confirms (rulebook.checkout).
"""

from __future__ import annotations

import os
from pathlib import Path

from auditor import rulebook
from auditor.checkout_version import stated_release
from auditor.config.model import LaunchConfig
from auditor.findings import Finding
from auditor.sources import SourceSet

CHECKOUT_KINDS = ("launch.checkout-release", "launch.checkout-unversioned", "launch.checkout-uncovered")


def judge_on_framework_checkout(config: LaunchConfig, path: str) -> None:
    """Pins each framework of the stack whose checkout the run imports to the release it states
    (an info finding says so); an unstated one is an undecided input naming `--target`. A
    framework no release selects (slime) is its checkout's code: its rules apply where that code
    has them (rulebook.stages), and without a checkout what they decide is unknown."""
    where = f"{path}:{config.command_line}"
    for framework in config.stack.chain:
        section = rulebook.load(framework.name).section("checkout")
        package = section.get("package")
        name = framework.distribution
        if not package or (name is not None and name in config.pins):
            continue
        root = _checkout(path, package, bool(section.get("within")))
        if root is None:
            continue
        if name is None:
            config.checkouts[framework.name] = root
            config.diagnostics.append(Finding(
                "launch.checkout-code", "info",
                f"the run imports {package} from the checkout {root}: rules/{framework.name}.toml "
                f"is judged by that code (a rule whose code is not there is unknown)", where=where))
            continue
        stated = stated_release(root, name, package, development=bool(section.get("tree")))
        if stated.version is not None:
            config.pins[name] = stated.version
            if section.get("tree"):  # read the checkout itself: its own code is the release
                config.source_dirs[name] = root / package
                config.checkouts[framework.name] = root
            config.diagnostics.append(Finding(
                "launch.checkout-release", "info",
                f"the run imports {package} from the checkout {root}, which states {name} "
                f"{stated.version} ({stated.how}): judged on that release",
                fix=f"--target {name}==VERSION judges another", where=where,
                detail={"distribution": name}))
            continue
        config.diagnostics.append(Finding(
            "launch.checkout-unversioned", "warning",
            f"the run imports {package} from the checkout {root}, which states no release ({stated.how}): "
            f"which {name} it runs is unknown, and the releases judged below stand in for it",
            fix=f"pass --target {name}==VERSION (the release the checkout is), or write "
                f"`# {name}==VERSION` in the script",
            where=where,
            detail={"undecided": f"which {name} release the checkout {root} is ({stated.how})",
                    "decide": f"--target {name}==VERSION", "distribution": name}))


def settled_by_targets(config: LaunchConfig, srcs: list[SourceSet]) -> None:
    """`--target` decides the release of what it gives: a checkout's word on a distribution that a
    target gives with its version is not the run's (said neither as judged nor as unknown)."""
    given = {s.name for s in srcs if s.version}
    config.diagnostics = [d for d in config.diagnostics if d.kind not in CHECKOUT_KINDS
                          or d.detail.get("distribution") not in given]


def _checkout(path: str, package: str, within: bool) -> Path | None:
    """The directory holding `package/__init__.py` that the run imports: beside the launch
    script (where a job that `cd`s to it runs), else the working directory (python's sys.path[0]
    for `-m`); `within`: also a directory above the script, the checkout's root its examples are
    run from. A folder without `__init__.py` is a namespace portion an installed release wins over."""
    here = os.path.dirname(os.path.abspath(path))
    above = [str(p) for p in Path(here).parents] if within else []
    for where in (here, os.getcwd(), *above):
        if os.path.isfile(os.path.join(where, package, "__init__.py")):
            return Path(where).resolve()
    return None
