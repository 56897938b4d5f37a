"""Hydra-style command lines (`python3 -m verl.trainer.main_ppo a.b.c=value ...`): each
`KEY=VALUE` override is a setting named by its dotted key, as the trainer's config tree reads it.

Hydra's grammar (hydra.cc, "Override grammar"): `key=value` sets, `+key=value` adds, `++key=value`
adds or sets, `~key[=value]` deletes; `--config-path`/`-cp`, `--config-name`/`-cn` and the other
dash options are Hydra's own. Which dotted key means what (a pipeline size, a batching switch) is
the framework's rules file's business, not this reader's.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from auditor.bash.values import Field, Partial, Scalar, Symbolic, concat, segments
from auditor.config.configfiles import Unreadable, load_yaml
from auditor.config.model import Flag, LaunchConfig, UnknownWord
from auditor.config.flags import unresolved
from auditor.findings import Finding

_KEY = re.compile(r"(\+{0,2}|~)([A-Za-z_][\w\-/@]*(?:\.[\w\-/@]+)*)")


def read_overrides(config: LaunchConfig, args: list[Field], path: str) -> None:
    """`args` into `config.flags` (dotted key -> value; a deleted key -> None) and Hydra's own
    options into `config.launcher_flags`; anything else is a positional. A word not known
    statically may set any key not overridden after it (flags.open_settings)."""
    order: list[str] = []
    opened: list[tuple[UnknownWord, int]] = []
    k = 0
    while k < len(args):
        f = args[k]
        k += 1
        head = _known_head(f.value)
        if head.startswith("-"):
            option, eq, value = head.partition("=")
            if not eq and k < len(args) and "=" not in _known_head(args[k].value):
                value, k = str(args[k].value), k + 1
            config.launcher_flags[option.lstrip("-")] = Flag(option.lstrip("-"), value or True, f.line, option)
            continue
        m = _KEY.fullmatch(head.partition("=")[0]) if "=" in head or head.startswith("~") else None
        if m is None:
            config.positionals.append(f.value)
            word = unresolved(config, f, path, "overrides") if isinstance(f.value, Symbolic) else None
            if word is not None:
                opened.append((word, len(order)))
            continue
        key = m.group(2)
        setting = None if m.group(1) == "~" else _after_equals(f.value)
        previous = config.flags.get(key)
        if previous is not None and previous.value != setting:
            config.diagnostics.append(Finding(
                "launch.repeated-flag", "warning",
                f"`{key}` is overridden twice (line {previous.line}, then line {f.line}): the last value, "
                f"`{setting}`, wins", fix="keep one", where=f"{path}:{f.line}"))
        config.flags[key] = Flag(key, setting, f.line, head.partition("=")[0], (setting,))
        order.append(key)
        for inner, value in (hydra_dict(setting) or {}).items():
            dotted = f"{key}.{inner}"
            config.flags[dotted] = Flag(dotted, value, f.line, head.partition("=")[0], (value,))
            order.append(dotted)
    for word, at in opened:
        word.after = frozenset(order[at:])


def override(value: Scalar) -> tuple[str, Scalar | None] | None:
    """(dotted key, value) of one `key=value` word (None for `~key`: deleted); None for a word
    that is no override."""
    head = _known_head(value)
    m = _KEY.fullmatch(head.partition("=")[0]) if "=" in head or head.startswith("~") else None
    if m is None:
        return None
    return m.group(2), None if m.group(1) == "~" else _after_equals(value)


def _known_head(value: Scalar) -> str:
    """The known text a word starts with (all of it when known)."""
    if isinstance(value, Symbolic):
        first, unknown = segments(value)[0]
        return "" if unknown else first
    return str(value)


def _after_equals(value: Scalar) -> Scalar:
    """The value after the first `=`, unknown pieces kept unknown, Hydra's outer quotes removed."""
    pieces = [Symbolic(t) if unknown else t for t, unknown in segments(value)]
    first = str(pieces[0]).partition("=")[2]
    result = concat([first, *pieces[1:]])
    if isinstance(result, str) and len(result) >= 2 and result[0] == result[-1] and result[0] in "'\"":
        return result[1:-1]
    return result if not isinstance(result, Partial) or result.text else ""


def hydra_dict(value: Scalar | None) -> dict[str, str] | None:
    """The keys a Hydra dict value sets, flattened (`{a:1,b:{c:2}}` -> a: "1", b.c: "2"; each
    value's text as a dotted override would give it), so that `x={num_layers:24}` reads as
    `x.num_layers=24` (Hydra's grammar, "Dictionaries"). None for no dict, or one this reader
    cannot split (an unknown piece, an unbalanced bracket)."""
    if not isinstance(value, str) or not (value.startswith("{") and value.endswith("}")):
        return None
    out: dict[str, str] = {}
    for item in _split_top(value[1:-1].strip()):
        name, colon, text = item.partition(":")
        name, text = name.strip().strip("'\""), text.strip()
        if not colon or not re.fullmatch(r"[A-Za-z_]\w*", name) or not text:
            return None
        nested = hydra_dict(text) if text.startswith("{") else None
        if text.startswith("{") and nested is None:
            return None
        out.update({f"{name}.{k}": v for k, v in nested.items()} if nested is not None else {name: _unquoted(text)})
    return out


def _split_top(text: str) -> list[str]:
    """`text` split at its commas outside brackets and quotes (an empty text: no item)."""
    items, depth, quote, start = [], 0, "", 0
    for i, c in enumerate(text):
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        elif c == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    return [*items, text[start:]] if text else []


def _unquoted(text: str) -> str:
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" else text


def typed(text: str) -> Any:
    """An override's value as Hydra types it (`true`, `2`), else its text."""
    try:
        return load_yaml(text, Path("<override>")) if text else ""
    except Unreadable:
        return text


def set_key(data: dict[str, Any], dotted: str, value: Any) -> None:
    """One override applied to a composed config: the dotted key set (None: deleted)."""
    parts = dotted.split(".")
    node = data
    for part in parts[:-1]:
        node = node.setdefault(part, {}) if isinstance(node.get(part), dict) or part not in node else {}
    if value is None:
        node.pop(parts[-1], None)
    else:
        node[parts[-1]] = value
