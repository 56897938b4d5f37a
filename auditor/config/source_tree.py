"""A framework whose distribution ships inside the repository the entry script is in (ROLL's
mcore_adapter/, installed from there with `pip install -e`): the run imports that directory, so
it is the release judged, read from its own pyproject (auditor.checkout_version), and the source
the scan reads for it (`config.source_dirs`, used by scan.resolve_targets and releases.Plan).
Where the rules say so (`[source_tree] dir, marker`); a tree not found, or one stating no release,
leaves the release to --target, as a script stating none does.
"""

from __future__ import annotations

from pathlib import Path

from auditor import rulebook
from auditor.checkout_version import stated_release
from auditor.config.model import LaunchConfig
from auditor.findings import Finding


def judge_on_source_tree(config: LaunchConfig, entry: Path, path: str) -> None:
    """Pins each framework of the stack with a `[source_tree]` found above `entry` (the entry
    script) to the release that tree states, and records the tree as its source."""
    for framework in config.stack.chain:
        tree = rulebook.load(framework.name).section("source_tree")
        name = framework.distribution
        if not tree or name is None or name in config.pins:
            continue
        root = next((d for d in entry.resolve().parents if (d / tree["marker"]).is_file()), None)
        if root is None:
            continue
        source = root / tree["dir"]
        stated = stated_release(source, name, name.replace("-", "_"))
        where = f"{path}:{config.command_line}"
        if stated.version is None:
            config.diagnostics.append(Finding(
                "launch.checkout-unversioned", "warning",
                f"the run imports {name} from {source}, which states no release ({stated.how})",
                fix=f"pass --target {source} (the tree the run imports)", where=where,
                detail={"undecided": f"which {name} release {source} is", "decide": f"--target {source}",
                        "distribution": name}))
            continue
        config.pins[name] = stated.version
        config.source_dirs[name] = source
        config.checkouts[framework.name] = source
        config.diagnostics.append(Finding(
            "launch.checkout-release", "info",
            f"the run imports {name} from {source} ({tree.get('about', 'the checkout of the entry script')}), "
            f"which states {stated.version} ({stated.how}): judged on that tree",
            fix=f"--target {name}==VERSION judges another", where=where, detail={"distribution": name}))
