"""A training command that surely never runs its training script (issue 22: a run that cannot
start), told from the tree itself: the script's file is not where the run opens it, or the word
taken for the program is a piece of a placeholder that bash read as redirections.

A missing file. alibaba/Pai-Megatron-Patch@a098ca5acb examples/deepseek_v3/
run_mcore_deepseek_lite.sh:203 runs `torchrun ... pretrain_deepseek_250624.py`, relative, with no
`cd`; the tree holds no such file (commit 6a7c390 folded it into pretrain_deepseek.py), so every
worker's python exits 2 ("can't open file"). Said only where that is certain: the command starts
in the directory this audit stands in (config.launch_dir, the walk's; no `cd`, no runner's
working-directory option: config.workdir "", the guards read_entry_imports takes for "another
copy may run"), inside the checkout around the launch script and holding Python scripts (a scan
run from outside it, or from a directory no script is run from, says nothing of where the job
starts: a launch script kept in a repository of configs is run from another tree), its launcher opens the script from there (a launcher rule's `script_in_cwd`) and
not in a container image (whose files are not these), the file is no `.py` found where this audit
looks for one (frontend_parser.find_script: that directory, the launch script's and those above),
nor opened from any directory of the checkout around the launch script (a run started elsewhere
in it finds none either), and nothing before the command may make it: no code unread here
(Shell.opaque), no other word of the script naming it, no command that fetches or unpacks files,
no build of the checkout (entry_imports.built). Otherwise nothing is said, and the scan asks for
the command (--command) as before.

A placeholder. NVIDIA/Megatron-LM@d98e8a64dd examples/multimodal/llama_3p1_nemotron_nano_vl_8b_v1/
sft_llama_3p1_nemotron_nano_vl_8b_v1.sh:170 writes `srun ... --container-image <path to docker
image> \\`: bash reads `<path` as standard input from a file named `path` and `image>` as
standard output to a file named by the next word; `to docker image` stay words, so srun's
`--container-image` takes `to` and srun runs `docker`. The training command is an argument of
that program, and where `path` is missing bash runs nothing at all: train.py never starts.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

from auditor.bash.absent import checkout_root, nowhere_in_checkout
from auditor.bash.lexer import Word
from auditor.config.entry_imports import built
from auditor.config.flags import STARTUP
from auditor.config.frontend_parser import find_script
from auditor.config.model import LaunchConfig
from auditor.findings import Finding

# Commands that may write files into the directory they run in without naming them: a clone, a
# download, an archive unpacked, a copy or link of a tree, a build
_MAKES_FILES = re.compile(r"(?:^|[;&|(`{]|\bthen\b|\bdo\b|\belse\b)\s*(?:sudo\s+)?(?:[\w./-]*/)?"
                          r"(git|wget|curl|tar|unzip|rsync|cp|scp|mv|ln|patch|make|pip3?|hf|"
                          r"huggingface-cli|modelscope|ossutil\w*|aws|gsutil|hdfs|"
                          r"(?:bash|sh|python[\d.]*)(?![\w.-]|\s+-c\b))(?![\w.-])", re.M)
_CONTAINER = re.compile(r"--container-image\b")


def read_absent_entry(config: LaunchConfig, launcher: dict, invoked: str,
                      redirects: list[tuple[str, Word]], opaque: list[tuple[int, str]], path: str) -> None:
    """An error (a start-up failure) where the command surely never runs its training script;
    config.script_absent says why, so that no reader asks for the script's parser."""
    script = config.script
    if not isinstance(script, str) or config.script_module or config.script_read:
        return
    where = _placeholder(config, invoked, redirects, path)
    if where is None and launcher.get("script_in_cwd"):
        where = _missing(config, opaque, path)
    if where is not None:
        config.script_absent = where


def _placeholder(config: LaunchConfig, invoked: str, redirects: list[tuple[str, Word]], path: str) -> str | None:
    """The program is a word between a `<WORD` redirection and the `>` closing it on one line
    (`<path to docker image>`): what bash does with it, said as an error."""
    lines = config.text.split("\n")
    program = str(config.script)
    for k, (op, target) in enumerate(redirects):
        if op not in ("<", "0<") or target.line > len(lines):
            continue
        m = re.search(rf"<{re.escape(target.raw)}((?:[ \t]+[^\s<>|&;()'\"]+)+)>", lines[target.line - 1])
        if m is None or program not in m.group(1).split():
            continue
        out = next((t for o, t in redirects[k + 1:] if o in (">", "1>", ">|")), None)
        placeholder = f"<{target.raw}{m.group(1)}>"
        writes = (f" and `{m.group(1).split()[-1]}>` writes its standard output to a file named by the next "
                  f"word, `{out.raw}`" if out is not None else "")
        why = (f"`{placeholder}` (line {target.line}) is no value to bash: `<{target.raw}` reads standard input "
               f"from a file named `{target.raw}`{writes}, and the words between stay arguments, so "
               f"{invoked.split()[0]} runs `{program}`, not the training command; where no file `{target.raw}` "
               "is in the directory it starts in, bash runs nothing at all. Either way the training "
               "script never starts")
        config.diagnostics.append(Finding(
            "launch.placeholder-program", "error", why,
            fix=f"replace `{placeholder}` with the value it stands for (quoted if it holds spaces)",
            where=f"{path}:{target.line}", detail={**STARTUP, "program": program, "placeholder": placeholder}))
        return why
    return None


def _missing(config: LaunchConfig, opaque: list[tuple[int, str]], path: str) -> str | None:
    """The relative `.py` training script no directory the run may open it from holds."""
    script = str(config.script)
    if (os.path.isabs(script) or not script.endswith(".py") or config.workdir != ""
            or config.launch_dir is None or "no_python" in config.launcher_flags):
        return None
    text = _code(config.text)
    before = "\n".join(text.split("\n")[: config.command_line - 1])
    if (any(line < config.command_line for line, _ in opaque) or _CONTAINER.search(text)
            or text.count(os.path.basename(script)) != 1 or _MAKES_FILES.search(before)):
        return None  # unread code, a container's files, another word naming it, a command making files
    looked = Path(config.launch_dir, script)
    if looked.exists() or find_script(path, script, entry=True) is not None:
        return None
    checkout = checkout_root(path) if Path(path).is_file() else None
    if checkout is None or not looked.resolve().is_relative_to(checkout) or not _scripts(looked.parent):
        return None  # the audit stands outside the tree, or where no script is run from
    if built(looked.parent, looked.stem, "") or nowhere_in_checkout(script, path) is None:
        return None  # a build makes it, or a directory of the checkout holds it
    near = _near(looked)
    why = (f"`{config.launcher}` (line {config.command_line}) opens {script} in the directory this audit "
           "runs in (the script moves it nowhere): no such file there, nor from any directory of the "
           "checkout; python exits 2 (can't open file) on every rank" + (f" ({near} is there)" if near else ""))
    config.diagnostics.append(Finding(
        "launch.entry-missing", "error", why,
        fix=(f"run {near} (the file the tree has), or " if near else "")
            + "launch from the directory that holds the training script (--command gives that command)",
        where=f"{path}:{config.command_line}", detail={**STARTUP, "looked_for": str(looked)}))
    return why


def _scripts(directory: Path) -> list[str]:
    """The Python scripts a directory holds (setup.py is none): a directory jobs are run from."""
    try:
        return sorted(p.name for p in directory.glob("*.py") if p.is_file() and p.name != "setup.py")
    except OSError:
        return []


def _near(looked: Path) -> str:
    """The closest name among the `.py` files beside where the script was looked for."""
    close = difflib.get_close_matches(looked.name, _scripts(looked.parent), n=1, cutoff=0.6)
    return close[0] if close else ""


def _code(text: str) -> str:
    """The script less its comment lines."""
    return "\n".join("" if line.lstrip().startswith("#") else line for line in text.split("\n"))
