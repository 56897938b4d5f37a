"""Megatron-Bridge's run_recipe.py front end (`torchrun scripts/training/run_recipe.py --recipe
NAME [--mode lora] [-pp N] KEY=VALUE ...`): its own options, its KEY=VALUE ConfigContainer
overrides (config/overrides.py), and the recipe function's values (bridge_recipe.py) under them.

What the options mean is rules/megatron-bridge.toml's `[recipe_runner]`: which options take a
value, the convenience options that stand for an override (a trailing KEY=VALUE wins over one),
how --model/--mode name a recipe, where the recipes are. The recipe's values reach
`config.flags` under their override keys, below every override the command line gives, so the
rules' [[arg]] aliases read command line and recipe alike, the command line winning.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from auditor import rulebook
from auditor.bash.values import Field, Symbolic
from auditor.config.frontend_parser import find_script
from auditor.config.frontends.bridge_recipe import RecipeReader, RecipeValue, unknown_fields
from auditor.config.frontends.reader import Reader
from auditor.config.launcher import fallbacks
from auditor.config.model import Flag, LaunchConfig
from auditor.config.overrides import read_overrides
from auditor.findings import Finding
from auditor.rulebook.launchers import Spelling

RULES = "megatron-bridge"


class BridgeRecipeReader(Reader):
    style = "megatron-bridge"

    def read(self, config: LaunchConfig, args: list[Field], launcher: dict, spelling: Spelling,
             path: str, parser_roots: tuple[Path, ...]) -> None:
        runner = rulebook.load(RULES).section("recipe_runner")
        options, rest = _options(args, runner)
        config.option_fallbacks = fallbacks(args)
        read_overrides(config, rest, path)
        for option, flag in options.items():
            config.launcher_flags[option.lstrip("-")] = flag
            key = runner["overrides"].get(option)
            if key is not None and key not in config.flags:  # a trailing KEY=VALUE wins
                config.flags[key] = Flag(key, flag.value, flag.line, option, (flag.value,))
        name, why = recipe_name(options.get, runner)
        reader = _reader(path, config.script, runner)
        line = next((f.line for f in options.values()), config.command_line)
        if reader is None:
            values = unknown_fields(runner["keys"], f"{config.script} is not in a Megatron-Bridge checkout here")
        elif name is None:
            values = reader.unknown(why)
        else:
            values = reader.read(name)
        values = _layout(values, config, runner)
        unread = [k for k, v in values.items() if isinstance(v.value, Symbolic) and k not in config.flags]
        for key, got in values.items():
            if key not in config.flags:
                shown = (f"--recipe {name}" if name else "the recipe") + (f" ({got.where})" if got.where else "")
                config.flags[key] = Flag(key, got.value, line, shown, (got.value,))
        if unread:
            first = values[unread[0]].value
            config.diagnostics.append(Finding(
                "launch.recipe-unread", "info",
                f"{', '.join(unread[:3])}{' and more' if len(unread) > 3 else ''} unknown: {first}",
                where=f"{path}:{line}"))


def _options(args: list[Field], runner: dict) -> tuple[dict[str, Flag], list[Field]]:
    """run_recipe.py's own options (argparse), and the rest (KEY=VALUE overrides)."""
    options: dict[str, Flag] = {}
    rest: list[Field] = []
    k = 0
    while k < len(args):
        f = args[k]
        k += 1
        text = f.value if isinstance(f.value, str) else None
        if text is None or not text.startswith("-"):
            rest.append(f)
            continue
        option, eq, value = text.partition("=")
        if option in runner["flag_options"]:
            options[option] = Flag(option.lstrip("-"), True, f.line, option)
            continue
        if not eq and k < len(args):
            value, k = args[k].value, k + 1  # type: ignore[assignment]
        options[option] = Flag(option.lstrip("-"), value, f.line, option, (value,))
    return options, rest


def recipe_name(option: Callable[[str], Flag | None], runner: dict) -> tuple[str | None, str]:
    """The recipe function run_recipe.py loads, or why it is not known (`option`: the command's
    value of one of run_recipe.py's options, by its spelling)."""
    recipe = option(runner["recipe_option"])
    if recipe is not None:
        if isinstance(recipe.value, str):
            return recipe.value, ""
        return None, f"{runner['recipe_option']} {recipe.value} is not known statically"
    model, mode = option(runner["model_option"]), option(runner["mode_option"])
    if model is None or mode is None:
        return None, f"neither {runner['recipe_option']} nor {runner['model_option']} with {runner['mode_option']} is given"
    task = runner["tasks"].get(str(mode.value))
    if not isinstance(model.value, str) or task is None:
        return None, f"{runner['model_option']} {model.value} {runner['mode_option']} {mode.value} is not known statically"
    return f"{model.value}_{task}_config", ""


def _reader(path: str, script: object, runner: dict) -> RecipeReader | None:
    root = checkout_root(path, script, runner)
    return RecipeReader(root, runner["recipe_dirs"], runner["keys"], runner["layout_keys"]) if root else None


def checkout_root(path: str, script: object, runner: dict) -> Path | None:
    """The checkout around run_recipe.py (the directory above it holding the recipe packages)."""
    found = find_script(path, script) if isinstance(script, str) else None
    if found is None:
        return None
    return next((d for d in found.parents if (d / runner["recipe_dirs"][0]).is_dir()), None)


def _layout(values: dict[str, RecipeValue], config: LaunchConfig, runner: dict) -> dict[str, RecipeValue]:
    """A recipe-owned layout (a layout builder, uneven first/last stages) that run_recipe.py
    rebuilds after a PP or VP override (recipe_runner.py sync_model_pipeline_layout, not where
    the layout itself is overridden): the virtual stages it makes are not read here."""
    out = {k: v for k, v in values.items() if k not in runner["layout_keys"]}
    rebuilt = (any(k in config.flags for k in runner["topology_keys"])
               and runner["layout_override"] not in config.flags)
    owned = [(k, v) for k, v in values.items() if k in runner["layout_keys"] and v.value != "None"]
    vpp = runner["topology_keys"][-1]
    if rebuilt and owned and vpp not in config.flags:
        key, got = owned[0]
        out[vpp] = RecipeValue(Symbolic(f"{got.where} sets {key}, and run_recipe.py rebuilds the recipe's "
                                        "pipeline layout after the PP/VP override: its virtual stages"), got.where)
    return out
