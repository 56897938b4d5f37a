"""A Hydra config composed as `compose(config_name=NAME)` composes it, read without Hydra.

What is read: the primary file `NAME.yaml` of the config directory, its `defaults:` list (a
name `x` or `group/x` is `x.yaml` merged at the top; `group: option` is `group/option.yaml`
merged under `group`, or at the top with `# @package _global_`; `_self_` is where the file's own
keys go, last where the list does not name it, as Hydra 1.1 does), and `${a.b}` interpolations
of a literal value, resolved after the command line's overrides are applied to the composed
tree (Hydra composes, applies the overrides, then resolves: `pp=2` reaches
`pipeline_model_parallel_size: ${pp}`). A name that climbs out of the config directory (`../config/x`, ROLL) is
read as Hydra's file config source reads it, `realpath(join(CONFIG_DIR, NAME.yaml))`, where it
lands inside the checkout `root`; elsewhere (or with no checkout) it stays unknown. A package
`@_here_` is the including file's own. A resolver (`${oc.env:X}`), a relative or missing key stays unknown
(`Unresolved`), never a guess. Which keys of the composed tree are roles is the framework's
rules (`[[hydra_compose]]`), not this module's.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.config.configfiles import Unreadable, load_yaml
from auditor.config.overrides import set_key
from auditor.config.located import shown

_REF = re.compile(r"\$\{([^{}]*)\}")
_RANGE = re.compile(r"\s*list\(\s*range\(\s*(\d+)\s*,\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)\s*\)\s*")
_MAX_DEPTH = 16


class MissingConfig(Unreadable):
    """The primary config, or a defaults entry not `optional`, that no config directory holds
    (one climbing out with `../` landing inside the checkout): Hydra's compose raises
    MissingConfigException for it, unless a search path or a ConfigStore this module does not
    read supplies it (the reader decides that). `name`: the config's path in the config
    directory (`group/option`); `primary`: whether it is the primary config itself."""

    def __init__(self, message: str, name: str, primary: bool = False) -> None:
        super().__init__(message)
        self.name = name
        self.primary = primary


@dataclass(frozen=True)
class Unresolved:
    """A value the composition leaves unknown, and why."""

    text: str
    why: str


@dataclass
class Composed:
    data: dict[str, Any]
    files: list[Path]  # the YAML files read, the primary first


def compose(config_dir: Path, name: str, search: tuple[Path, ...] = (), root: Path | None = None,
            overrides: Iterable[tuple[str, Any]] = ()) -> Composed:
    """The config `name` of `config_dir`, its defaults merged, then the command line's
    `overrides` (dotted key, value; None deletes it; an `Unresolved` value is one not known
    statically) applied in order, then its interpolations resolved;
    a defaults entry not in `config_dir` is looked for in `search` (Hydra's searchpath), in order;
    one that climbs out of it (`../x`) is read only where it lands inside the checkout `root`."""
    files: list[Path] = []
    if not name.startswith("..") and not any((d / f"{name}.yaml").is_file() for d in (config_dir, *search)):
        raise MissingConfig(f"Cannot find primary config '{name}' (no {shown(config_dir / f'{name}.yaml', root)})",
                            name, primary=True)
    data = _load_with_defaults((config_dir, *search), name, files, 0, root)
    for dotted, value in overrides:
        set_key(data, dotted, value)
    return Composed(_resolve_all(data, data), files)


def _load_with_defaults(config_dir: tuple[Path, ...], name: str, files: list[Path], depth: int,
                        root: Path | None, required_by: Path | None = None) -> dict[str, Any]:
    """`required_by`: the file whose defaults entry Hydra fails on where it is missing (MissingConfig)."""
    if depth > _MAX_DEPTH:
        raise Unreadable(f"defaults lists nested more than {_MAX_DEPTH} deep at {name}")
    own = _load(config_dir, name, files, root, required_by)
    this = files[-1]
    defaults = own.pop("defaults", None)
    if defaults is None:
        return own
    if not isinstance(defaults, list):
        raise Unreadable(f"{files[-1]}: `defaults` is not a list")
    merged: dict[str, Any] = {}
    placed = False
    here = posixpath.dirname(name)  # a group's file names others relative to its group (Hydra 1.1)
    for item in defaults:
        if item == "_self_":
            _merge(merged, own)
            placed = True
            continue
        if isinstance(item, str):  # `name` or `name@package`
            file, _, package = item.removesuffix(".yaml").partition("@")
            sub = _load_with_defaults(config_dir, _relative(here, file), files, depth + 1, root, this)
            _merge(merged, _nest(package, sub))
            continue
        if not isinstance(item, dict) or len(item) != 1:
            raise Unreadable(f"{files[0]}: defaults entry {item!r} is not `name` or `group: option`")
        (group, option), = item.items()
        group = str(group).removeprefix("override ").strip()
        required = not group.startswith("optional ")
        group = group.removeprefix("optional ").strip()
        # `hydra/...` groups (job_logging, launcher, sweeper) are Hydra's own or its plugins',
        # shipped inside the installed package: absent from the config directory is no miss
        required = required and posixpath.normpath(group.lstrip("/")).split("/")[0] != "hydra"
        if option is None:
            continue  # `group: null` selects nothing
        path = _relative(here, f"{group.split('@')[0]}/{option}")
        sub = _load_with_defaults(config_dir, path, files, depth + 1, root, this if required else None)
        package = (group.split("@", 1)[1] if "@" in group
                   else posixpath.normpath(group.split("@")[0]).lstrip("./").replace("/", "."))
        if _global(config_dir, path) or package == "_global_":
            _merge(merged, sub)
        else:
            _merge(merged, _nest(package, sub))
    if not placed:
        _merge(merged, own)
    return merged


def _relative(group: str, name: str) -> str:
    """`name` (`actor`, `../optim/fsdp`) as the config dir's path, from the group `group`; a
    leading `/` (`/strategy`, `/common@_here_`) is from the config root, not the file system's."""
    if name.startswith("/"):
        return posixpath.normpath(name.lstrip("/"))
    return posixpath.normpath(posixpath.join(group, name))


def _load(config_dir: tuple[Path, ...], name: str, files: list[Path], root: Path | None,
          required_by: Path | None = None) -> dict[str, Any]:
    path = next((d / f"{name}.yaml" for d in config_dir if (d / f"{name}.yaml").is_file()),
                config_dir[0] / f"{name}.yaml")
    if name.startswith(".."):
        path = _inside_checkout(path, name, root)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if required_by is not None:
            raise MissingConfig(f"{shown(required_by, root)} names `{name}` in its defaults, and "
                                f"{shown(path, root)} does not exist",
                                name) from None
        raise Unreadable(f"{path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise Unreadable(f"{path}: {exc}") from None
    data = load_yaml(text, path)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise Unreadable(f"{path} holds no mapping")
    files.append(path)
    return data


def _inside_checkout(path: Path, name: str, root: Path | None) -> Path:
    """`path`, resolved as Hydra's file source resolves it (links followed, `..` taken), where
    it lies inside the checkout `root`; a name that climbs elsewhere stays unknown."""
    if root is None:
        raise Unreadable(f"defaults entry {name} leads out of the config directory")
    resolved = Path(os.path.realpath(path))
    if not resolved.is_relative_to(os.path.realpath(root)):
        raise Unreadable(f"defaults entry {name} leads out of the checkout {root}")
    return resolved


def _global(config_dir: tuple[Path, ...], name: str) -> bool:
    """`# @package _global_` in the file's header: its keys go to the top."""
    path = next((d / f"{name}.yaml" for d in config_dir if (d / f"{name}.yaml").is_file()), None)
    if path is None:
        return False
    try:
        head = path.read_text(encoding="utf-8").split("\n", 5)[:5]
    except OSError:
        return False
    return any(line.strip().replace(" ", "") == "#@package_global_" for line in head)


def _nest(package: str, data: dict[str, Any]) -> dict[str, Any]:
    """`data` under `package` (`a.b`); `_here_` (or none) is the including file's own package."""
    if package == "_here_":
        return data
    for part in reversed([p for p in package.split(".") if p]):
        data = {part: data}
    return data


def _merge(into: dict[str, Any], other: dict[str, Any]) -> None:
    """OmegaConf.merge: mappings merge key by key, anything else is replaced."""
    for key, value in other.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


# --- interpolation ------------------------------------------------------------------------------


def resolve(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with its `${a.b}` interpolations resolved (an `Unresolved` leaf stays one)."""
    resolved: dict[str, Any] = _resolve_all(data, data)
    return resolved


def _resolve_all(node: Any, root: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        return {k: _resolve_all(v, root) for k, v in node.items()}
    if isinstance(node, list):
        return [_resolve_all(v, root) for v in node]
    if isinstance(node, str) and "${" in node:
        return _interpolate(node, root, 0)
    return node


def _interpolate(text: str, root: dict[str, Any], depth: int) -> Any:
    """`${a.b}` alone is the value at a.b (typed); inside text, its string."""
    if depth > _MAX_DEPTH:
        return Unresolved(text, "interpolations nested too deep (a cycle?)")
    whole = _REF.fullmatch(text)
    if whole is not None:
        return _lookup(whole.group(1).strip(), root, depth)
    pieces: list[str] = []
    last = 0
    for m in _REF.finditer(text):
        value = _lookup(m.group(1).strip(), root, depth)
        if isinstance(value, Unresolved):
            return Unresolved(text, value.why)
        pieces += [text[last:m.start()], str(value)]
        last = m.end()
    return "".join(pieces) + text[last:]


def _lookup(key: str, root: dict[str, Any], depth: int) -> Any:
    if ":" in key or key.startswith(".") or not key:
        return Unresolved(f"${{{key}}}", f"`${{{key}}}` is a resolver or a relative key, not read here")
    node: Any = root
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return Unresolved(f"${{{key}}}", f"`${{{key}}}` names no key of the composed config")
        node = node[part]
    if isinstance(node, str) and "${" in node:
        return _interpolate(node, root, depth + 1)
    return node


# --- values as the framework reads them ----------------------------------------------------------


def at(data: dict[str, Any], dotted: str) -> Any:
    """The value at a dotted key; None where a part is missing; the `Unresolved` value met on
    the way where a part above the key is not known statically (what lies under it is unknown)."""
    node: Any = data
    for part in dotted.split("."):
        if isinstance(node, Unresolved):
            return node
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def device_count(value: Any) -> int | Unresolved | None:
    """How many devices a `device_mapping` names: a list, or the text `list(range(a, b[, s]))`
    that ROLL evaluates; None where none is given."""
    if value is None:
        return None
    if isinstance(value, list):
        return len(value)
    m = _RANGE.fullmatch(str(value)) if isinstance(value, str) else None
    if m is not None:
        start, stop, step = int(m.group(1)), int(m.group(2)), int(m.group(3) or 1)
        return len(range(start, stop, step)) if step else Unresolved(str(value), "a range of step 0")
    return Unresolved(str(value), f"device mapping `{value}` is no list and no list(range(...))")
