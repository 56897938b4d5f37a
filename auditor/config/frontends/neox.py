"""GPT-NeoX's `python ./deepy.py train.py [-d DIR] CONFIG.yml ...` (rules/gpt-neox.toml).

deepy.py merges its YAML config files and hands the run to DeepSpeed's launcher; the files'
`pipe_parallel_size` decides what runs. One stage or none (0: no PipelineModule; 1: a one-stage
PipelineEngine) issues no pipeline P2P: a `launch.not-pipeline` note. Two or more stages run
DeepSpeed's engine under GPT-NeoX's own training loop, which no rules model: `launch.not-covered`
with the step that decides it. A size not known statically (a file not read, a value that is no
integer) is undecided: `launch.unknown-stack`, naming the files that hold it. Each becomes the
verdict in config.launch.refuse_not_pipeline.
"""

from __future__ import annotations

import os
from pathlib import Path

from auditor import rulebook
from auditor.bash.values import Field
from auditor.config.configfiles import Unreadable, load_file
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
        size, said = _pipe_size(rule, args[1:], path)
        if isinstance(size, int) and str(size) in rule["how"]:
            config.diagnostics.append(Finding(
                "launch.not-pipeline", "info",
                rule["one_stage"].format(launcher=f"`{config.launcher}`", size=size, where=said,
                                         how=rule["how"][str(size)]),
                where=where, detail={"command": config.launcher}))
        elif isinstance(size, int):
            config.diagnostics.append(Finding(
                "launch.not-covered", "warning",
                f"{rule['what'].format(size=size, where=said)}: {rule['covers']}", where=where,
                detail={"stack": RULES, "decide": rule["decide"], "source": rule["source"]}))
        else:
            config.diagnostics.append(Finding(
                "launch.unknown-stack", "warning",
                f"`{config.launcher}`: GPT-NeoX's {rule['key']} is not known ({said}), and with it "
                "whether DeepSpeed's pipeline engine runs stages at all",
                where=where, detail={"undecided": rule["key"],
                                     "decide": f"the `{rule['key']}` the config files give ({said})"}))


def _pipe_size(rule: dict, words: list[Field], path: str) -> tuple[int | None, str]:
    """(pipe_parallel_size as the merged files give it, else None; where it was read, or why
    not). `words` follow the user script: `-d DIR` and the config files."""
    directory, files = "", []
    k = 0
    while k < len(words):
        value = words[k].value
        if value in rule["dir_options"] and k + 1 < len(words):
            given = words[k + 1].value
            if not isinstance(given, str):
                return None, f"the config directory {given} is not known statically"
            directory, k = given, k + 2
            continue
        if not isinstance(value, str):
            return None, f"the argument {value} may name another config file"
        if value.startswith("-"):
            return None, f"{value} is no option this reader knows"
        files.append(os.path.join(directory, value) if directory else value)
        k += 1
    if not files or not all(f.endswith(tuple(rule["suffixes"])) for f in files):
        return None, "no config file is given as deepy.py reads them"
    size, said = rule["default"], f"the default {rule['default']}: no config file sets it"
    for name in files:
        try:
            found, data = load_file(name, path)
        except Unreadable as exc:
            return None, f"{name} is not read: {exc}"
        for key, value in data.items():
            if str(key).replace("-", "_") == rule["key"]:
                if type(value) is not int:
                    return None, f"{found} sets it to {value!r}"
                size, said = value, f"{os.path.basename(found)} sets it"
    return size, said
