"""Megatron-LM's front end (`torchrun pretrain_gpt.py --pipeline-model-parallel-size 2`): its
argparse spellings (rules/megatron-lm.toml [[flag]]), checked against the parser the training
script builds where it is found (config/frontend_parser.py)."""

from __future__ import annotations

import os
from pathlib import Path

from auditor.bash.values import Field
from auditor.config.configfiles import read_config_files
from auditor.config.flags import listed, read_flags
from auditor.config.frontend_parser import find_script, locate, with_front_end
from auditor.config.hf_config_file import read_positional_file, unread_positional
from auditor.config.frontends.reader import Reader, flags_as_written, label_front_end
from auditor.config.model import LaunchConfig
from auditor.config.parser_entry import builds_none, calls_parser_entry
from auditor.config.validate_stops import check_stops
from auditor.findings import Finding
from auditor.rulebook.launchers import Spelling
from auditor.sources import version_file_release


class MegatronReader(Reader):
    style = "megatron-lm"

    def read(self, config: LaunchConfig, args: list[Field], launcher: dict, spelling: Spelling,
             path: str, parser_roots: tuple[Path, ...]) -> None:
        builds = own = False
        front = found = None
        if isinstance(config.script, str):
            front = locate(path, config.script_read or config.script, parser_roots, config.workdir)
            spelling = with_front_end(spelling, front)
            found = find_script(path, config.script_read or config.script, entry=True, workdir=config.workdir)
            if front is not None and front.root is not None:
                config.checkouts[self.style] = front.root
                builds = True
            else:  # no checkout around it: what the script calls says whose parser it builds
                builds = found is not None and calls_parser_entry(found)
                own = found is not None and not builds and builds_none(found)
        if read_positional_file(config, args, spelling, path):
            return  # an entry reading its first argument as a config file: its front end's
        if own or flags_as_written(config, args, spelling):
            # an entry found here that surely builds no Megatron-LM parser (every call it imports
            # read) parses its command line itself (its own argparse, a click or typer CLI):
            # Megatron-LM's spellings say nothing of it
            read_flags(config, args, spelling, path, checked=False)
        else:
            read_flags(config, args, spelling, path, checked=True)
            _unread_front_end(config, spelling, path)
            if builds and front is not None and found is not None:
                check_stops(config, front, found, path)
        read_config_files(config, args, launcher, path)
        unread_positional(config, args, path, spelling)
        launched = config.launcher
        label_front_end(config, spelling, path)
        # Megatron-LM's parser, read from the script, makes its stages run; not where the run is
        # another stack's front end (Megatron-DeepSpeed with --deepspeed), which relabels it.
        config.builds_parser = self.style if builds and config.launcher == launched else ""


def _unread_front_end(config: LaunchConfig, spelling: Spelling, path: str) -> None:
    """A training script that cannot be found: the parser it builds was not read, so whether it
    accepts a flag no table here has is unknown, and argparse exits on one it lacks. Such flags
    leave the run undecided (`detail.decide`), never clean; a found script is read (locate)."""
    script = config.script
    unknown = [f for f in config.flags.values() if f.spelling.startswith("--")
               and f.spelling not in spelling.flags and f.spelling not in spelling.no_flags]
    found = (find_script(path, config.script_read or script, entry=True, workdir=config.workdir)
             if isinstance(script, str) else None)
    if not unknown or (found is not None and not config.script_module) or config.script_absent:
        return  # read, or never run (config.entry_absent): nothing to ask of its parser
    if found is not None:
        _foreign_module(config, found, unknown, path)
        return
    module = f"{script}".replace(".", "/") + ".py"  # `-m pkg.mod`, looked up as config.entry_module does
    why = (f"the module {script} ({module}) is on no sys.path entry known here" if config.script_module
           else f"{script} is not a file here" if isinstance(script, str)
           else f"its path, {script}, is not known statically")
    name = os.path.basename(str(script)) if script is not None else "the training script"
    entry = module if config.script_module else name
    config.diagnostics.append(Finding(
        "launch.front-end-unread", "warning",
        f"the training script is not found ({why}), so the parser it builds was not read: "
        f"{listed([f.spelling for f in unknown], 6)} {'is' if len(unknown) == 1 else 'are'} in no parser "
        "or table read here; argparse exits on a flag its parser lacks, and the run does not start",
        fix="run p2paudit from the directory the job is launched from, or give the command with "
            "the script's real path (--command)",
        where=f"{path}:{unknown[0].line}",
        detail={"undecided": f"whether {name}'s parser accepts {listed([f.spelling for f in unknown], 3)} "
                             f"(the training script is not found: {why})",
                "decide": f"--command 'python PATH/{entry} ...' (the entry script where it is)",
                "flags": [f.spelling for f in unknown]}))


def judge_on_checkout(config: LaunchConfig, path: str) -> None:
    """A training script run from a Megatron-LM checkout imports `megatron` from it: the run is
    that checkout's megatron-core release. Stated nowhere else (no `# megatron-core==X`), that
    release is the one judged where the schedules' rules (megatron-core's) verify it; the front
    end's rules are confirmed against the checkout itself (rulebook.checkout)."""
    root = config.checkouts.get("megatron-lm")
    if root is None or "megatron-core" in config.pins:
        return
    stated = version_file_release(root, "megatron-core")
    schedules = [f for f in config.stack.chain if f.distribution == "megatron-core" and f.name != "megatron-lm"]
    if stated is None or not schedules:
        return
    release, version_file = stated
    if any(release not in f.verified for f in schedules):
        # A fork or an old tag (bigcode's Megatron-LM says 0.1.0): its code is not what the rules
        # were checked on, and the covered releases judged stand in for it; said, not hidden.
        config.diagnostics.append(Finding(
            "launch.checkout-uncovered", "info",
            f"{config.script_read or config.script} runs from the Megatron-LM checkout {root}, which "
            f"states megatron-core {release} ({version_file}), a release the rules do not cover: the "
            "covered releases judged stand in for its megatron/core code",
            fix="--target megatron-core==VERSION names the release its code matches",
            where=f"{path}:{config.command_line}", detail={"distribution": "megatron-core"}))
        return
    config.pins["megatron-core"] = release
    config.diagnostics.append(Finding(
        "launch.checkout-release", "info",
        f"{config.script} runs from the Megatron-LM checkout {root}, megatron-core {release} "
        f"({version_file}): judged on that release",
        where=f"{path}:{config.command_line}"))


def _foreign_module(config: LaunchConfig, found: Path, unknown: list, path: str) -> None:
    """A `-m pkg.mod` entry read (config.entry_module) that builds no Megatron-LM parser here:
    its own code parses the flags Megatron-LM's tables lack, so the settings read from them (and
    the defaults standing for what they do not say) are not known to be what it runs."""
    if "megatron-lm" in config.checkouts:
        return  # its Megatron-LM parser was read, flags and all
    flags = listed([f.spelling for f in unknown], 3)
    config.diagnostics.append(Finding(
        "launch.front-end-foreign", "warning",
        f"`-m {config.script}` runs {found}, which builds no Megatron-LM parser here: its own code "
        f"parses {flags}, and what it runs at which pipeline size is not read from them",
        fix="--set pipeline_model_parallel_size=N gives the pipeline size the module runs",
        where=f"{path}:{unknown[0].line}",
        detail={"undecided": f"what {found.name} (`-m {config.script}`) runs with {flags}: its own parser, "
                             "not Megatron-LM's, reads them",
                "decide": "--set pipeline_model_parallel_size=N (the pipeline size the module runs)",
                "flags": [f.spelling for f in unknown]}))
