"""GPT-NeoX's `python ./deepy.py train.py [-d DIR] CONFIG.yml ...` (rules/gpt-neox.toml).

deepy.py merges its YAML config files and hands the run to DeepSpeed's launcher; the files'
`pipe_parallel_size` decides what runs. One stage or none (0: no PipelineModule; 1: a one-stage
PipelineEngine) issues no pipeline P2P: a `launch.not-pipeline` note, the verdict in
config.launch.refuse_not_pipeline. Two or more stages train GPT-NeoX's PipelineModule with
DeepSpeed's PipelineEngine, whose P2P rules/deepspeed.toml judges: the size and the backend the
files give become the run's settings (`entry_values`). A value not known statically (a file not
read, a value of the wrong type) is undecided: `launch.unknown-stack`, naming the files.
"""

from __future__ import annotations

import os
from pathlib import Path

from auditor import rulebook
from auditor.bash.values import Field
from auditor.config.configfiles import Unreadable, load_file
from auditor.config.flags import STARTUP
from auditor.config.frontends.reader import Reader
from auditor.config.model import LaunchConfig
from auditor.findings import Finding
from auditor.rulebook.launchers import Spelling

RULES = "gpt-neox"


class NeoxReader(Reader):
    style = "gpt-neox"

    def read(self, config: LaunchConfig, args: list[Field], launcher: dict, spelling: Spelling,
             path: str, parser_roots: tuple[Path, ...]) -> None:
        rule = rulebook.load(RULES).data["neox_pipeline"]
        where = f"{path}:{config.command_line}"
        read = _merged(rule, args[1:], path, config.workdir)
        if isinstance(read, str):
            self._unknown(config, rule, read, where)
            return
        data, files = read
        size, said = _setting(data, rule["key"], rule["default"], int, files)
        if size is None:
            self._unknown(config, rule, said, where)
        elif str(size) in rule["how"]:
            config.diagnostics.append(Finding(
                "launch.not-pipeline", "info",
                rule["one_stage"].format(launcher=f"`{config.launcher}`", size=size, where=said,
                                         how=rule["how"][str(size)]),
                where=where, detail={"command": config.launcher}))
        else:
            backend, why = _setting(data, rule["backend_key"], rule["backend_default"], str, files)
            if backend is None:
                self._unknown(config, rule, why, where, rule["backend_key"])
                return
            engine = (f"GPT-NeoX steps DeepSpeed's PipelineEngine ({rule['engine_source']}), the pipeline "
                      f"code of deepspeed {rule['fork_release']} in the {rule['fork']} it pins")
            config.entry_values[rule["setting"]] = (size, f"{said}: {engine}", where)
            config.entry_values[rule["backend_key"]] = (
                backend, f"{why} ({rule['backend_source']}): deepspeed.init_distributed's dist_backend", where)
            for stop in rulebook.load(RULES).data.get("neox_stop", []):
                value, found = _dotted(data, stop["key"], stop["default"])
                if value in stop["stops"]:
                    config.diagnostics.append(Finding(
                        "launch.neox-stop", "error",
                        stop["message"].format(key=stop["key"], value=value, where=found, size=size),
                        fix=stop["fix"], where=where, detail={**STARTUP, "source": stop["source"]}))

    @staticmethod
    def _unknown(config: LaunchConfig, rule: dict, why: str, where: str, key: str = "") -> None:
        key = key or rule["key"]
        config.diagnostics.append(Finding(
            "launch.unknown-stack", "warning",
            f"`{config.launcher}`: GPT-NeoX's {key} is not known ({why}), and with it "
            "whether DeepSpeed's pipeline engine runs stages at all" if key == rule["key"] else
            f"`{config.launcher}`: GPT-NeoX's {key} is not known ({why})",
            where=where, detail={"undecided": key, "decide": f"the `{key}` the config files give ({why})"}))


def _merged(rule: dict, words: list[Field], path: str, workdir: str | None) -> tuple[dict, list[str]] | str:
    """(the merged settings of the config files deepy.py reads, `-` in keys read as `_`; the
    files' names), or why they are not known. `words` follow the user script: `-d DIR` and the
    config files. argparse keeps the last `-d` and one run of files (conf_file, nargs="+"); the
    directory is joined onto each file after parsing, wherever `-d` stood (arguments.py:414)."""
    directory, files, runs = "", list[str](), 0
    k = 0
    while k < len(words):
        value = words[k].value
        if value in rule["dir_options"] and k + 1 < len(words):
            given = words[k + 1].value
            if not isinstance(given, str):
                return f"the config directory {given} is not known statically"
            directory, k = given, k + 2
            continue
        if not isinstance(value, str):
            return f"the argument {value} may name another config file"
        if value.startswith("-"):
            return f"{value} is no option this reader knows"
        runs += not files or words[k - 1].value != files[-1]
        files.append(value)
        k += 1
    if runs > 1:
        return "config files stand on both sides of an option: deepy.py's argparse takes one run of them"
    files = [os.path.join(directory, f) for f in files] if directory else files
    if not files or not all(f.endswith(tuple(rule["suffixes"])) for f in files):
        return "no config file is given as deepy.py reads them"
    merged: dict = {}
    names: list[str] = []
    for name in files:
        try:
            found, data = load_file(name, path, workdir)
        except Unreadable as exc:
            return f"{name} is not read: {exc}"
        names.append(os.path.basename(found))
        for key, value in data.items():
            merged[str(key).replace("-", "_")] = (value, os.path.basename(found))
    return merged, names


def _dotted(data: dict, key: str, default: object) -> tuple[object, str]:
    """(the value at the dotted `key` of the merged files, else `default`; the file that set it)."""
    head, *rest = key.split(".")
    if head not in data:
        return default, "the default"
    value, found = data[head]
    for part in rest:
        if not isinstance(value, dict):
            return None, found
        value = value.get(part, default)
    return value, f"{found} sets it"


def _setting(data: dict, key: str, default: object, kind: type, files: list[str]) -> tuple[object, str]:
    """(the value the merged files give `key`, else its default; where it was read), or (None,
    why) for a value of another type than `kind`."""
    if key not in data:
        return default, f"the default {default}: no config file sets it ({', '.join(files)})"
    value, found = data[key]
    if type(value) is not kind:
        return None, f"{found} sets it to {value!r}"
    return value, f"{found} sets it"
