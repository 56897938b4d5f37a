"""What the launcher takes for itself: its own options before the training script (torchrun's,
srun's, mpirun's; the environment they set is config.launcher_env's), and
the world size it gives (processes per node, nodes) from its flags, its environment variables
(ms-swift's `megatron`/`swift` read NPROC_PER_NODE and NNODES) or its defaults."""

from __future__ import annotations

import os
import re

from auditor.bash.getopt import Grammar, read
from auditor.bash.values import EnvVar, Field, OptionWords, Partial, Scalar, Symbolic
from auditor.config.flags import normalise, unresolved, wholly_unknown
from auditor.config.model import Flag, LaunchConfig, Written
from auditor.config.training_command import Candidate, is_interpreter
from auditor.findings import Finding
from auditor.rulebook.launchers import Spelling


def world_variables() -> frozenset[str]:
    """The variables that size the world, which the audit takes from its own environment: each
    launcher rule's (SLURM_NNODES, NPROC_PER_NODE, ...) and torchrun's PET_NPROC_PER_NODE, PET_NNODES."""
    launchers = Spelling.load(None).launchers
    names = {n for e in launchers for n in (e.get("env_nproc"), e.get("env_nnodes")) if n}
    names |= {f"{e['env_prefix']}{d}" for e in launchers if e.get("env_prefix") for d in ("NPROC_PER_NODE", "NNODES")}
    return frozenset(names)


def fallbacks(args: list[Field]) -> dict[str, tuple[str, ...]]:
    """Launcher options whose value is a `${NAME:-x}` fallback (NAME unset here), by option."""
    out = {}
    for f, g in zip(args, args[1:] + args[-1:]):
        if isinstance(f.value, str) and f.value.startswith("-"):
            taken = g.fallbacks if "=" not in f.value else f.fallbacks
            if taken:
                out[normalise(f.value.partition("=")[0])] = taken
    return out


def torchrun_options(config: LaunchConfig, launcher: dict, args: list[Field], path: str,
                     runners: tuple[tuple[str, ...], ...] = ()) -> tuple[list[Field], Scalar]:
    """The launcher's own options up to the training script; returns the script's arguments and the
    script, looking through a python runner (`torchrun -m coverage run [opts] pretrain_gpt.py`)."""
    rest, script = _launcher_options(config, launcher, args, path)
    words = [script] + [f.value for f in rest]
    runner = next((r for r in runners if [str(w) for w in words[:len(r)]] == list(r)), None)
    if runner is None:
        return rest, script
    k = len(runner) - 1
    while k < len(rest) and str(rest[k].value).startswith("-") and isinstance(rest[k].value, str):
        if rest[k].value == "-m" and k + 1 < len(rest):
            config.script_module = True
            return rest[k + 2:], rest[k + 1].value
        k += 1
    return (rest[k + 1:], rest[k].value) if k < len(rest) else ([], None)


def _launcher_options(config: LaunchConfig, launcher: dict, args: list[Field],
                      path: str) -> tuple[list[Field], Scalar]:
    k = 0
    while k < len(args):
        value = args[k].value
        if isinstance(value, Partial) and _known_option(value):  # `--container-image=${IMAGE}`
            option = value.segments[0][0].partition("=")[0]
            config.launcher_flags[normalise(option)] = Flag(normalise(option), value, args[k].line, option, (value,))
            k += 1
            continue
        if isinstance(value, Symbolic):
            if isinstance(value, OptionWords) or _script_follows(args[k + 1:], launcher):
                unresolved(config, args[k], path, f"{launcher.get('name', 'torchrun')}'s options")
                _opens_options(config, launcher, args[k])
                k += 1
                continue
            return args[k + 1:], value
        value = str(value)
        if not value.startswith("-") or value == "-":
            if is_interpreter(value.rsplit("/", 1)[-1], launcher):  # `srun python [-u] SCRIPT`
                k += 1
                while k < len(args) and isinstance(args[k].value, str) and str(args[k].value).startswith("-"):
                    config.script_module = config.script_module or args[k].value == "-m"
                    k += 1
                return args[k + 1:], (args[k].value if k < len(args) else None)
            return args[k + 1:], value
        split = _bundled(launcher, value)
        if split is not None and split != [value]:  # `srun -ln6`: `-l`, `-n`, `6`
            args = [*args[:k], *(Field(w, args[k].line) for w in split), *args[k + 1:]]
            value = split[0]
        option, eq, inline_value = value.partition("=")
        width = _option_width(launcher, args, k)
        if width == 3:  # `--mca pml ob1`: a key and its value
            pass
        elif option in launcher.get("boolean_options", ()):
            config.script_module = config.script_module or option in launcher.get("module_options", ())
            config.launcher_flags[normalise(option)] = Flag(normalise(option), True, args[k].line, option)
        elif eq:
            config.launcher_flags[normalise(option)] = Flag(
                normalise(option), inline_value, args[k].line, option, (inline_value,))
        elif width == 2:
            given = args[k + 1].value
            config.launcher_flags[normalise(option)] = Flag(normalise(option), given, args[k].line, option, (given,))
        k += width
    return [], None


def _option_width(launcher: dict, args: list[Field], k: int) -> int:
    """How many words the launcher's option at `k` takes, as its parser reads them: a key and its
    value (`pair_options`: `--mca pml ob1`), the option alone (`boolean_options`, `--nnodes=2`),
    else the option and the next word, its value (not the launcher's interpreter, which starts
    the program: `srun --exclusive python train.py`); one at the end of the words."""
    option, eq, _ = str(args[k].value).partition("=")
    if option in launcher.get("pair_options", ()):
        return 3
    if option in launcher.get("boolean_options", ()) or eq or k + 1 >= len(args) or _short_flag(launcher, option):
        return 1
    return 1 if is_interpreter(str(args[k + 1].value).rsplit("/", 1)[-1], launcher) else 2


def _bundled(launcher: dict, word: str) -> list[str] | None:
    """A word of short options as the program's getopt reads it (auditor.bash.getopt, with rules
    [wrappers] option_grammar), one word per option: `srun -ln6` is `-l`, `-n`, `6` (a value
    attached is the next word), `-I60` is `-I=60` (srun's `-I[secs]`, `-K[0|1]`: a value only
    attached, split as `--immediate=60` is) and `-I` alone takes none. None where the word is no
    such option, one split so already (`-I=60`), or no grammar is given."""
    grammar = _grammar(launcher)
    if grammar is None or len(word) < 2 or word[0] != "-" or word[1] == "-" or word[2:3] == "=":
        return None
    words: list[str] = []
    for option in read([word], grammar).options:
        if option.value is None or option.value == "":
            words.append(option.name)
        elif option.name[1] in grammar.optional:
            words.append(f"{option.name}={option.value}")
        else:
            words += [option.name, str(option.value)]
    return words


def _short_flag(launcher: dict, option: str) -> bool:
    """A short option its program's grammar gives no next word (srun's `-l`; `-I`, whose value is
    only attached)."""
    grammar = _grammar(launcher)
    return grammar is not None and len(option) == 2 and option[0] == "-" and option[1] not in grammar.value + "-"


def _grammar(launcher: dict) -> Grammar | None:
    """The short options of the launcher's programs as getopt reads them (rules [wrappers]
    option_grammar); None where no grammar is given."""
    grammar = Spelling.load(None).option_grammar
    programs = [grammar[p] for p in launcher.get("programs", ()) if p in grammar]
    if not programs:
        return None
    return Grammar.of({"value": "".join(g.get("value", "") for g in programs),
                       "optional": "".join(g.get("optional", "") for g in programs)})


def _opens_options(config: LaunchConfig, launcher: dict, word: Field) -> None:
    """An unknown word among the launcher's options may give any of them: the sizes read before
    it (the last one wins) and, where the launcher's rule names options that set the run's
    environment (srun --export) and the word may be any text (flags.wholly_unknown), every
    variable a rule reads."""
    config.options_opened = word
    config.options_before = dict(config.launcher_flags)
    if not wholly_unknown(word.value, config):  # an array some branch extends: read as written
        return
    for option in launcher.get("env_options", ()):
        for name in Spelling.load(None).env_names:
            config.env[name] = EnvVar(name, Symbolic(
                f"${name}, which {word.value} among {launcher.get('name')}'s options may set ({option})"),
                word.line, "export")


def opened_size(config: LaunchConfig, launcher: dict, what: str) -> tuple[Scalar, str] | None:
    """A size (`what`: "nproc", "nnodes" or srun's "ntasks") the unknown launcher word may give:
    unknown, unless one of its flags is written after that word."""
    word = config.options_opened
    if word is None:
        return None
    for spelling in launcher.get(f"{what}_flags", ()):
        flag = config.launcher_flags.get(normalise(spelling))
        if flag is not None and config.options_before.get(normalise(spelling)) is not flag:
            return None
    dest = {"nproc": "nproc_per_node", "nnodes": "nnodes"}.get(what, "world_size")
    return Symbolic(str(word.value)), (f"{word.value} among {launcher.get('name')}'s options (line {word.line}) "
                                       f"may set it: give it as --set {dest}=N")


def _script_follows(rest: list[Field], launcher: dict) -> bool:
    """Whether the first word of `rest` that is neither an option nor an option's value (read as
    `_launcher_options` reads them: `_option_width`) is a `.py` script or this launcher's
    interpreter (`srun ${SRUN_OPTS[@]} --nodes=1 python train.py`, `mpirun ${MPI_ARGS:-} -np 8
    python train.py`), or any word after a module option (`torchrun $DISTRIBUTED_ARGS -m
    examples.inference.gpt.gpt_static_inference`): an unknown word before it is read as the
    launcher's options, not its program; so is an array's rest of options (`OptionWords`)."""
    k, module = 0, False
    while k < len(rest):
        f = rest[k]
        if isinstance(f.value, OptionWords) or (isinstance(f.value, Partial) and _known_option(f.value)):
            k += 1
            continue
        if not isinstance(f.value, str):
            return False
        if f.value.startswith("-") and f.value != "-":
            module = module or f.value in launcher.get("module_options", ())
            k += _option_width(launcher, rest, k)
            continue
        return module or f.value.endswith(".py") or is_interpreter(f.value.rsplit("/", 1)[-1], launcher)
    return False


def _known_option(value: Partial) -> bool:
    first, unknown = value.segments[0]
    return not unknown and first.startswith("--") and "=" in first


def world_size(config: LaunchConfig, launcher: dict, chosen: Candidate, spelling: Spelling, path: str) -> None:
    """Sets `config.nproc_per_node` and `config.nnodes`, each with where it came from."""
    env = {name: var for name, var in config.env.items() if var.how != "assign"}
    if launcher.get("program"):
        nproc_var, nnodes_var = env.get(launcher["env_nproc"]), env.get(launcher["env_nnodes"])
        if chosen.subcommand not in launcher["torchrun_subcommands"] or (nproc_var is None and nnodes_var is None):
            config.nproc_per_node, config.nnodes = 1, 1
            config.world_source = {"nproc_per_node": f"{launcher['env_nproc']} and {launcher['env_nnodes']} unset",
                                   "nnodes": f"{launcher['env_nproc']} and {launcher['env_nnodes']} unset"}
            unexported = [config.env[n] for n in (launcher["env_nproc"], launcher["env_nnodes"]) if n in config.env]
            config.diagnostics.append(Finding(
                "launch.single-process", "warning",
                f"neither {launcher['env_nproc']} nor {launcher['env_nnodes']} reaches `{config.launcher}`: "
                "it runs one process, not torchrun"
                + "".join(f"; {v.name} is assigned at line {v.line} but not exported" for v in unexported),
                fix=f"export {launcher['env_nproc']} and {launcher['env_nnodes']}, or put them before "
                    f"`{config.launcher}` on the same line", where=f"{path}:{chosen.line}"))
            return
        # ms-swift's `megatron`/`swift` start torchrun themselves: its defaults, by name (another
        # launcher, e.g. deepspeed, also has size flags).
        torchrun = next((entry for entry in spelling.launchers if entry.get("name") == "torchrun"), {})
        nproc = _sourced(nproc_var, path) or _torchrun_default(torchrun, "nproc", env)
        nnodes = _sourced(nnodes_var, path) or _torchrun_default(torchrun, "nnodes", env)
    elif launcher.get("entry_builds"):  # Lightning: the script's Trainer(devices, num_nodes)
        for key in ("nproc_per_node", "nnodes"):
            setattr(config, key, Symbolic(f"the {key} the training script's Trainer asks for"))
            config.world_source[key] = f"{config.script}: its Trainer(...) call is not read"
        return
    elif launcher.get("nproc_keys") or launcher.get("nnodes_keys"):  # Hydra: trainer.n_gpus_per_node=8
        nproc = _setting(config, launcher.get("nproc_keys", ()), path) or _torchrun_default(launcher, "nproc", env)
        nnodes = _setting(config, launcher.get("nnodes_keys", ()), path) or _torchrun_default(launcher, "nnodes", env)
    else:
        taken = fallbacks(chosen.args)
        nproc = (opened_size(config, launcher, "nproc") or _launcher_flag(config, launcher["nproc_flags"], path, taken)
                 or _torchrun_default(launcher, "nproc", env))
        nnodes = (opened_size(config, launcher, "nnodes") or _launcher_flag(config, launcher["nnodes_flags"], path, taken)
                  or _torchrun_default(launcher, "nnodes", env))
        total = _step_tasks(config, launcher, path, taken)
        if total is not None:  # `srun -n 16`: the step's every task, on however many nodes
            nproc, nnodes = total, ("1", Written(f"{launcher.get('name')} counts every task of its step in {total[1]}"))
    device_values: list[str] = next((e["device_count_values"] for e in spelling.launchers if e.get("device_count_values")), [])
    config.nproc_per_node, config.world_source["nproc_per_node"] = _nproc(nproc, device_values, env, path)
    config.nnodes, config.world_source["nnodes"] = _nnodes(config, nnodes, path)
    _loop_built(config, chosen)
    _env_world(config, launcher, chosen, path)


def _step_tasks(config: LaunchConfig, launcher: dict, path: str,
                taken: dict[str, tuple[str, ...]]) -> tuple[Scalar, str] | None:
    """The step's whole task count (`ntasks_flags`: srun -n), which replaces its nodes and tasks per
    node; `-n $SLURM_NTASKS` is the allocation's count, which those give (`directive_options`). An
    unknown word among the options opens it only where it opens those too (sizes written after it
    stand: `${SRUN_CMD} --nodes=2 --ntasks-per-node=8`)."""
    if not launcher.get("ntasks_flags"):
        return None
    for spelling in launcher["ntasks_flags"]:
        flag = config.launcher_flags.get(normalise(spelling))
        text = str(flag.value).strip().removeprefix(f"{flag.spelling}=") if flag is not None else ""
        if _names(text, launcher.get("directive_options", {}).get(spelling, ())):
            return None
    opened = all(opened_size(config, launcher, what) for what in ("nproc", "nnodes"))
    return ((opened_size(config, launcher, "ntasks") if opened else None)
            or _launcher_flag(config, launcher["ntasks_flags"], path, taken))


def _env_world(config: LaunchConfig, launcher: dict, chosen: Candidate, path: str) -> None:
    """A launcher that starts its processes but tells them no world (srun, mpirun: the rule's
    `world_size_env`, the variable torch's env:// takes the world size from, which it leaves as
    the caller set it): a value the script sets for the command decides torch's world, not the
    launcher's count of processes. Where it is the launcher's own count (that count written out,
    or its variable, `WORLD_SIZE=$SLURM_NTASKS`: `world_size_agrees`) nothing changes; else the
    world is unknown, with where the value came from (`export WORLD_SIZE=2` around a one-task
    `srun python relay.py`: rank 0 waits on a rank 1 the launcher never starts, or joins processes
    started elsewhere). The variable is the launcher's own count only where the launcher set it:
    expanded in the shell it runs on each task (`chosen.in_task`), or where the launcher is given
    no size of its own (`step_size_options`) and its step is the whole allocation; a batch
    script's `$SLURM_NTASKS` is the allocation's count, not that of `srun --ntasks-per-node=2`."""
    name = launcher.get("world_size_env")
    var = config.env.get(name) if name else None
    if var is None or var.how == "assign":
        return
    text = str(var.value).strip()
    if text.isdigit() and int(text) == config.world_size:
        return
    sized = _step_sizes(config, launcher)
    if config.options_opened is not None and not sized:
        sized = [str(config.options_opened.value)]
    agrees = next((n for n in launcher.get("world_size_agrees", ()) if _names(text, (n,))), None)
    if agrees is not None and (name in chosen.in_task or not sized):
        return
    where = "the caller's environment" if var.how == "environ" else f"{path}:{var.line}"
    counted = (f"{var.name}={var.value} is set for `{config.launcher}` ({where}) where {agrees} is the "
               f"allocation's task count, not that of the step {launcher.get('name')} starts with its own "
               f"{', '.join(sized)}" if agrees is not None else
               f"{var.name}={var.value} is set for `{config.launcher}` ({where})")
    why = (f"{counted}, and {launcher.get('name')} leaves it as "
           f"set: torch's env:// takes the world size from it, not from the processes "
           f"{launcher.get('name')} starts ({config.world_source.get('nproc_per_node', 'unknown')}); give it as "
           "--set world_size=N")
    config.nproc_per_node, config.nnodes = Symbolic(f"${var.name}"), Symbolic(f"${var.name}")
    config.world_source = {"nproc_per_node": why, "nnodes": why}


def _step_sizes(config: LaunchConfig, launcher: dict) -> list[str]:
    """The launcher's own step sizes (`step_size_options`) that may differ from the allocation:
    `srun -n $SLURM_NTASKS`, `srun -N 2` under `#SBATCH --nodes=2` or `srun -n 16` where the
    allocation counts 16 tasks size the step as the allocation, so the batch script's
    `$SLURM_NTASKS` is the step's count too; a size whose allocation is not stated differs."""
    out = []
    for option in launcher.get("step_size_options", ()):
        flag = config.launcher_flags.get(normalise(option))
        if flag is None:
            continue
        text = str(flag.value).strip().removeprefix(f"{flag.spelling}=")  # `--ntasks=${SLURM_NTASKS}`
        names = launcher.get("directive_options", {}).get(option, ())
        if _names(text, names):
            continue
        if any(n in config.env and str(config.env[n].value) == text for n in names):
            continue
        counts = set(names) & set(launcher.get("world_size_agrees", ()))
        if counts and text.isdigit() and int(text) == _allocation(config, launcher):
            continue  # the tasks the allocation's nodes and tasks per node make up
        out.append(str(flag.spelling))
    return out


def _allocation(config: LaunchConfig, launcher: dict) -> int | None:
    """The allocation's task count, its nodes times tasks per node (`env_nnodes`, `env_nproc`)."""
    sizes = [str(config.env[n].value) if n in config.env else "" for n in (launcher["env_nproc"], launcher["env_nnodes"])]
    return int(sizes[0]) * int(sizes[1]) if all(s.isdigit() for s in sizes) else None


def _names(text: str, names: tuple[str, ...] | list[str]) -> bool:
    """Whether `text` is one of the variables `names`, unexpanded (`$SLURM_NTASKS`, `${SLURM_NTASKS}`)."""
    return any(re.fullmatch(rf"\$(?:{re.escape(n)}|\{{{re.escape(n)}\}})", text) for n in names)


def _loop_built(config: LaunchConfig, chosen: Candidate) -> None:
    """The training command run as an array (`"${srun_cmd[@]}"`) or a string (`${SRUN_CMD}`), its
    first word as written, that a loop of unknown passes appends to (bash.walk `launch.loop-once`)
    is read after one pass; each pass may add a group (srun's `:`-separated heterogeneous
    components) or sizes of its own: the counts are unknown. A pass that appends options only
    (bash.walk `_passes_add_options`) leaves them to the options (`opened_size`)."""
    for d in config.diagnostics:
        if d.kind != "launch.loop-once" or d.detail.get("options"):  # options only: no group of its own
            continue
        array, string = d.detail.get("array"), d.detail.get("string")
        name = str(array or string)
        word = (rf'"?\$\{{{re.escape(name)}\[[@*]\]\}}"?' if array else
                rf'"?\$(?:{re.escape(name)}|\{{{re.escape(name)}\}})"?')
        if (array or string) and re.fullmatch(word, chosen.first_word):
            why = (f"`{name}` is read after one pass of the loop at line {d.detail['line']}, which runs an "
                   "unknown number of times: give it as --set world_size=N")
            shown = f"${{{name}[@]}}" if array else f"${{{name}}}"
            config.nproc_per_node, config.nnodes = Symbolic(shown), Symbolic(shown)
            config.world_source = {"nproc_per_node": why, "nnodes": why}
            return


def _sourced(var: EnvVar | None, path: str) -> tuple[Scalar, str] | None:
    if var is None:
        return None
    where = "the caller's environment" if var.how == "environ" else f"{path}:{var.line}"
    return var.value, f"{var.name}={var.value} ({where})"


def _setting(config: LaunchConfig, keys: list[str], path: str) -> tuple[Scalar, str] | None:
    """A world-size setting the trainer reads from its own configuration (`trainer.nnodes=2`)."""
    for key in keys:
        flag = config.flags.get(key)
        if flag is not None:
            return flag.value, f"{flag.spelling}={flag.value} ({path}:{flag.line})"
    return None


def _launcher_flag(config: LaunchConfig, spellings: list[str], path: str,
                   taken_by: dict[str, tuple[str, ...]]) -> tuple[Scalar, str] | None:
    for spelling in spellings:
        flag = config.launcher_flags.get(normalise(spelling))
        if flag is not None:
            source = f"{flag.spelling} {flag.value} ({path}:{flag.line})"
            taken = taken_by.get(normalise(spelling))
            if not taken:
                return flag.value, Written(source)
            names = ", ".join(taken)
            known = world_variables()
            settable = [n for n in taken if n in known]
            how = f"`{settable[0]}=N p2paudit ...` or " if settable else ""
            return flag.value, (f"{source}, the script's fallback for {names}, unset here: the job's own "
                                f"value is unknown; give it as {how}`--set world_size=N`")
    return None



def _torchrun_default(torchrun: dict, what: str, env: dict[str, EnvVar]) -> tuple[Scalar, str]:
    dest = "nproc_per_node" if what == "nproc" else "nnodes"
    prefix = torchrun.get("env_prefix")  # torchrun's PET_*; srun its allocation's SLURM_*
    name = f"{prefix}{dest.upper()}" if prefix else torchrun.get(f"env_{what}")
    var = env.get(name) if name else None
    if var is not None:
        where = (f"line {var.line}" if var.how != "environ" else "the environment of this audit" if not var.line
                 else f"the job's allocation, #SBATCH at line {var.line}"
                 + (f" of {os.path.basename(var.path)}" if var.path else ""))
        said = f"{var.name}={var.value} ({where})"
        return var.value, Written(said) if var.how == "environ" and var.line else said  # #SBATCH: written
    if f"{what}_default" not in torchrun:  # srun: the allocation decides; mpirun: its hosts' slots
        if name:
            return Symbolic(f"${name}"), (f"{torchrun.get('name')} takes it from the job's allocation ({name}), "
                                           f"unknown here: give it as `{name}=N p2paudit ...`")
        flags = " or ".join(torchrun.get(f"{what}_flags", ()))
        return Symbolic(f"{torchrun.get('name')} default"), (
            f"{torchrun.get('name')}{f' without {flags}' if flags else ''} runs as many processes as its "
            "hosts have slots, unknown here: give --set world_size=N")
    default = torchrun.get(f"{what}_default", "1")
    if f"{what}_flags" in torchrun and not torchrun[f"{what}_flags"]:  # mpirun -np: the whole world
        return default, Written(f"{torchrun.get('name')} counts every process in its process-count flag")
    flag = torchrun[f"{what}_flags"][0] if torchrun.get(f"{what}_flags") else f"--{dest.replace('_', '-')}"
    return default, f"{torchrun.get('name', 'torchrun')}'s default {flag} {default}"


def _nproc(given: tuple[Scalar, str], device_values: list[str], env: dict[str, EnvVar],
           path: str) -> tuple[int | Symbolic, str]:
    value, source = given
    if isinstance(value, str) and value.strip().isdigit():
        return int(value), source
    if value in device_values:
        visible = env.get("CUDA_VISIBLE_DEVICES")
        if visible is not None and isinstance(visible.value, str):
            count = len([d for d in visible.value.split(",") if d.strip()])
            return count, f"{source}: {count} devices in CUDA_VISIBLE_DEVICES ({path}:{visible.line})"
        return Symbolic(f"{value} (the visible GPU count)"), source
    return Symbolic(str(value)), source


def _nnodes(config: LaunchConfig, given: tuple[Scalar, str], path: str) -> tuple[int | Symbolic, str]:
    value, source = given
    if isinstance(value, str):
        low, _, high = value.strip().partition(":")
        if low.isdigit() and (not high or high == low):
            return int(low), source
        if low.isdigit() and high.isdigit():
            config.diagnostics.append(Finding(
                "launch.elastic-nnodes", "info",
                f"elastic node range {value}: the world size is decided at rendezvous", where=f"{path}:{config.command_line}"))
    return Symbolic(str(value)), source

