"""An entry that generates text with a Megatron inference engine (or serves it) at a pipeline size
of 1 is NOT A PIPELINE RUN (rules `[inference_engine]`: megatron-core's megatron.core.inference,
rules/megatron-core.toml; the text_generation packages of Megatron-LM checkouts before it,
rules/megatron-lm.toml).

Megatron-Bridge scripts/inference/text_generation.py (067f987df0) imports StaticInferenceEngine
and MegatronLLM from megatron.core.inference (:33-37) and builds its model at `--pp` (:212-226);
examples/models/falcon_h1/inference.sh runs it with `--pp 1`. Megatron-LM's
tools/run_text_generation_server.py (d98e8a64dd) imports MegatronServer from
megatron.core.inference.text_generation_server (:26) and reads its sizes with Megatron-LM's own
parser; examples/mamba/run_text_gen_server_8b_gpt3.sh passes `--pipeline-model-parallel-size 1`.
Pai-Megatron-Patch's generate_text_megatron_llama.py reaches megatron.text_generation through its
local megatron_patch/generation package. The engine trains nothing, and at PP 1 no stage sends to
another. The note is given only where the entry or a local module it imports imports such a
module, the entry and its local modules were read and name no schedule entry
(config/entry_schedule.py `names_no_schedule`: a forward_backward function or a training loop,
which a script may run besides), and the pipeline size surely is the int 1: set by the entry's
own code (config/entry_assign.py, config/entry_library.py), or, where Megatron-LM's parser reads
the launch line (`builds_parser`), the literal `1` its `--pipeline-model-parallel-size` is given. An unquoted unknown value of a
flag the parser's table knows to take one (`--load $2`) is that value, as for every verdict; the
note names those that could override the size were they several words. An engine import the
checkout lacks, beside one it holds, is named too: the run stops there or generates.

An entry that imports no engine gets no note: what it calls outside the code read here (a
package no source holds, a module its release lacks, `Engine(...).generate()` of either) may
train, so "reaches no training step" cannot be read from the entry alone (turn-15 CI rehearsal).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from functools import cache, partial
from pathlib import Path

from auditor import rulebook
from auditor.config.checkpoint_args import checkpoint_sizes
from auditor.config.entry_schedule import names_no_schedule
from auditor.config import own_p2p
from auditor.config.entry_script import MAX_MODULES, iter_closure
from auditor.config.entry_stack import modeled_roots
from auditor.config.flags import listed, normalise
from auditor.config.model import LaunchConfig
from auditor.config.no_training import may_set, ran_unseen
from auditor.config.pyenv import entry_tree
from auditor.findings import Finding
from auditor.rulebook.frameworks import frameworks

TABLE = "inference_engine"
# The framework whose inference engine the entry generates with (rules `[inference_engine]`), None
# where it is not read as such an entry: the entry point its run starts from (rules/megatron-core.toml
# [[entry_point]] `when`), whatever its pipeline size.
KEY = "inference_engine"
PP = "pipeline_model_parallel_size"


def read_inference_entry(launch: LaunchConfig) -> None:
    """Add a `launch.not-pipeline` note where the entry generates with an inference engine at
    a pipeline size of 1 (see the module docstring)."""
    if any(d.kind == "launch.not-pipeline" for d in launch.diagnostics):
        return
    closure = cache(partial(_closure, launch))  # read once, by the size and the engine reader alike
    modules = closure()
    engine = _engine(modules, launch.checkouts.get("megatron-lm")) if modules is not None else None
    if modules is None or engine is None or not names_no_schedule(launch):
        return  # not read whole, no engine, or a schedule named besides (which a script may run)
    script = modules[0][0]
    module, server, where, lacked, (framework, at) = engine
    does = "serves text generation" if server else "generates text"
    if not lacked and _trains_nothing(modules, framework, list(launch.checkouts.values())):
        launch.entry_values[KEY] = (framework, f"{script.name} {does} with {framework}'s inference engine "
                                               f"({module}, {where}), names no schedule entry and imports "
                                               "nothing that trains", at)
    if _shadowed(launch):
        return  # words not seen (`"${ARGS[@]}"`, `$EXTRA_ARGS`) may give the size: not surely 1
    pp = _pipeline_size(launch, closure)
    if pp is None:
        return
    what = f"{script.name} {does} with an inference engine ({module}, {where}), which trains nothing"
    if lacked:
        what += (f" (it also imports {lacked[0]}, which the Megatron-LM checkout does not hold: the run "
                 "stops at that import unless another megatron on the path gives it)")
    one = _read_as_one(launch)
    read = "is read as one word, its flag's value" if len(one) == 1 else "are read as one word each, their flags' values"
    said = (f"; {listed(one, 3)} {read}: expanded to several, a later word naming a pipeline flag "
            "would set the size" if one else "")
    launch.diagnostics.append(Finding(
        "launch.not-pipeline", "info", f"{what}, at pipeline size 1 ({pp}): no stage sends to another{said}",
        where=f"{launch.path}:{launch.command_line}", detail={"command": launch.launcher}))


def _closure(launch: LaunchConfig) -> list[tuple[Path, ast.Module]] | None:
    """The entry and the local modules it imports (the closure stops at the packages the rules
    model), entry first; None where it cannot be read whole or is cut at MAX_MODULES: a module not
    read may set the size, train or send."""
    read = entry_tree(launch)
    if read is None:
        return None
    stop = modeled_roots()
    try:
        modules = list(iter_closure(Path(read[0].path), stop))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return None
    return modules if modules and len(modules) < MAX_MODULES else None


def _pipeline_size(launch: LaunchConfig, closure: Callable[[], list[tuple[Path, ast.Module]] | None]) -> str | None:
    """Where the run's pipeline size surely is the int 1, the words saying why; else None."""
    set_by_entry = launch.entry_values.get(PP)
    if set_by_entry is not None:
        value, why, where = set_by_entry
        return why.removeprefix(where + ": ") if type(value) is int and value == 1 else None
    if launch.builds_parser != "megatron-lm" or PP in checkpoint_sizes(launch):
        return None  # not Megatron-LM's parser, or the checkpoint gives the size (config/checkpoint_args.py)
    if any(name != PP and PP in name and f.value != "0" for name, f in launch.flags.items()):
        return None  # more stages besides (`--encoder-pipeline-model-parallel-size 1`, Megatron-LM core_r0.9)
    flag = launch.flags.get(PP)
    if flag is None:
        return None if _writes_pp(closure()) else "not given: Megatron-LM's parser default, and the entry writes it nowhere"
    if flag.value != "1" or len(flag.values) > 1:
        return None  # not the literal 1
    return f"{flag.spelling} 1, line {flag.line}, read by Megatron-LM's parser"


def _writes_pp(modules: list[tuple[Path, ast.Module]] | None) -> bool:
    """Whether the entry or a local module it imports may set the pipeline size itself
    (config/no_training.py `may_set`: Megatron-LM d98e8a64dd tools/run_dynamic_text_generation_server.py:237-263
    injects flags into sys.argv), or cannot be read whole (`modules` None): then the parser's
    default is not known to hold."""
    return modules is None or any(may_set(tree, [PP]) for _, tree in modules)


def _engines() -> list[tuple[str, bool, str]]:
    """(module, whether it is a server, framework) of every rules file's `[inference_engine]`."""
    out: list[tuple[str, bool, str]] = []
    for framework in frameworks():
        table = rulebook.load(framework.name).data.get(TABLE)
        if table:
            servers = set(table.get("servers", []))
            out += [(m, m in servers, framework.name) for m in [*table.get("servers", []), *table["modules"]]
                    if (m, m in servers, framework.name) not in out]
    return out


def _engine(modules: list[tuple[Path, ast.Module]],
            checkout: Path | None) -> tuple[str, bool, str, list[str], tuple[str, str]] | None:
    """(module imported, whether it is a server, `file:line`, the engine imports the checkout
    lacks, (its framework, `path:line`)) of the first inference-engine import in the script or a
    local module it imports (a server's import preferred); None where there is none the Megatron-LM `checkout` the entry
    runs from holds, the closure cannot be read whole (or is cut at MAX_MODULES), or a module of
    it issues torch's P2P itself, or may (config.own_p2p). An engine module the
    checkout lacks beside one it holds (Megatron-LM d98e8a64dd
    examples/multimodal/run_text_generation.py:26 still imports megatron.inference.text_generation,
    gone from that tree, and megatron.core.inference.engines, :30) stops the run at its import
    unless another megatron on the path gives it: either way no training step runs, and the note
    says so; an entry whose only engine is such a module is not called inference."""
    engines = _engines()
    found: list[tuple[str, bool, str, tuple[str, str]]] = []
    lacked: list[str] = []
    for path, tree in modules:
        if own_p2p.of_tree(tree).may:
            return None  # its own sends (dist.isend, P2POp): not the engine's forward only
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if not node.level and node.module else [])
            for name in names:
                hit = next(((s, f) for m, s, f in engines if name == m or name.startswith(m + ".")), None)
                if hit is not None and not _held(name, checkout):
                    lacked.append(f"{name} ({path.name}:{node.lineno})")
                elif hit is not None:
                    found.append((name, hit[0], f"{path.name}:{node.lineno}", (hit[1], f"{path}:{node.lineno}")))
    first = next((f for f in found if f[1]), found[0] if found else None)
    return (*first[:3], list(dict.fromkeys(lacked)), first[3]) if first else None


_LOADERS = frozenset({"importlib", "runpy", "pkgutil"})


def _trains_nothing(modules: list[tuple[Path, ast.Module]], framework: str, checkouts: list[Path]) -> bool:
    """Whether the entry and its local modules certainly start no training loop: each import of a
    package the rules model (modeled_roots) lies in the engine framework's `trains_nothing`
    allowlist and is held by the checkouts that hold its top package, and nothing loads code
    unread (a star import, importlib/runpy/pkgutil, exec, eval, __import__). Naming no schedule
    entry is not enough: Megatron-Bridge's `finetune`/`pretrain` (megatron.bridge.training) and
    ms-swift's `megatron_sft_main` run megatron-core's schedule under names of their own."""
    allowed = rulebook.load(framework).data[TABLE].get("trains_nothing", [])
    roots = modeled_roots()
    for _, tree in modules:
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in ("exec", "eval", "__import__"):
                return False
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
                if any(n.split(".")[0] in _LOADERS for n in names):
                    return False
                if any(n.split(".")[0] in roots and not (_allowed(n, allowed, whole=True) and _in(n, checkouts))
                       for n in names):
                    return False
            elif isinstance(node, ast.ImportFrom):
                if any(a.name == "*" for a in node.names):
                    return False  # a star import, relative or not, binds names unread
                top = node.module.split(".")[0] if not node.level and node.module else None
                if top in _LOADERS:
                    return False
                if top in roots and not (_in(str(node.module), checkouts) and all(
                        _allowed(f"{node.module}.{a.name}", allowed, whole=False) for a in node.names)):
                    return False
    return True


def _allowed(name: str, allowed: list[str], whole: bool) -> bool:
    """Whether `name` (a module imported whole, or `module.member` of a from-import) lies in the
    allowlist: under an "X.*" entry, or, imported whole, an "X" entry itself."""
    return any(name == a[:-2] or name.startswith(a[:-1]) if a.endswith(".*") else whole and name == a
               for a in allowed)


def _in(module: str, checkouts: list[Path]) -> bool:
    """Whether a checkout holding the module's top package holds the module (_held), or none holds
    that package (megatron: the Megatron-LM and the Bridge's trees alike)."""
    holders = [c for c in checkouts if (c / module.split(".")[0]).is_dir()]
    return not holders or any(_held(module, c) for c in holders)


def _held(module: str, checkout: Path | None) -> bool:
    """Whether the checkout holds the imported module, as a package or a file (True where no
    checkout holding its top package is known)."""
    if checkout is None or not (checkout / module.split(".")[0]).is_dir():
        return True
    path = checkout.joinpath(*module.split("."))
    return path.is_dir() or path.with_suffix(".py").is_file()


def _shadowed(launch: LaunchConfig) -> bool:
    """Whether a word of the command not known statically may give the pipeline size (config/flags.py's
    findings): an unresolved word, unless every text it may be is known (a string the script sets
    in the branches of an if it cannot decide: Pai-Megatron-Patch a098ca5acb
    examples/llama/run_evaluate_huggingface_llama.sh:55-61 sets `pr_options` to " --fp16" or
    " --bf16") and none names a pipeline flag; an unknown value of a flag the parser's table does
    not know to take one (`--fp16 $MORE_ARGS`), which may be further flags. An unknown value of a
    flag known to take one (`--load $1`) is that value (see _read_as_one). Code not read that ran
    before the command (config/no_training.py `ran_unseen`) may have changed any of its words."""
    if ran_unseen(launch):
        return True  # `source "$1"` after the command's variables were set: any may be other words
    for d in launch.diagnostics:
        if d.kind == "launch.unknown-values" and d.detail.get("unchecked") and (PP not in launch.flags or any(
                _sets_pp(s) for s in d.detail.get("unread_before", []))):
            return True  # `--fp16 $MORE_ARGS`: a value only if --fp16 takes one, which is not known
        if d.kind == "launch.unresolved-args":
            ways = d.detail.get("alternatives", {})
            if any(v not in ways or any(_sets_pp(w) for text in ways[v] for w in text.split())
                   for v in d.detail.get("values", [])):
                return True
    return False


def _read_as_one(launch: LaunchConfig) -> list[str]:
    """The unquoted unknown values of flags known to take one (`--load $2`, `--sample-input-file $1`:
    bigcode-project/Megatron-LM 7c325cd34a examples/detxoify_lm/generate-1.3b.sh:24, :35, the
    caller's arguments) that could override the size were they several words: where no size is
    written, or one is written before them. Each is read as its flag's one value, as config/flags.py
    reads it for every verdict; expanded to no word it leaves its flag without a value, which
    argparse rejects (the run does not start), and to several, a later word would be an argument
    of its own: the note says so. An arithmetic expansion (`$(($RANDOM))`) is one word."""
    out: list[str] = []
    for d in launch.diagnostics:
        if d.kind == "launch.unknown-values" and (PP not in launch.flags or any(
                _sets_pp(s) for s in d.detail.get("one_word_before", []))):
            out += [w for w in d.detail.get("one_word", []) if not _ARITHMETIC.fullmatch(w.partition(" ")[2])]
    return out


_ARITHMETIC = re.compile(r"\$\(\([^()]*(\([^()]*\)[^()]*)*\)\)")


def _sets_pp(word: str) -> bool:
    """Whether a word is a flag that may set the pipeline size: one naming it
    (`--encoder-pipeline-model-parallel-size=2` too), or the one that takes the sizes from the
    checkpoint (rules/megatron-lm.toml `[checkpoint_args]`)."""
    name = normalise(word.split("=")[0])
    return word.startswith("-") and (PP in name or name in _checkpoint_flags())


def _checkpoint_flags() -> tuple[str, str]:
    """The flags by which Megatron-LM takes the sizes from the checkpoint."""
    data = rulebook.load("megatron-lm").data["checkpoint_args"]
    return data["flag"], data["gate"]
