"""What a launch script says: the data `launch.py` produces and `derive.py` consumes.

Unresolved shell values stay symbolic (`Symbolic`), never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auditor.bash.values import EnvVar, Scalar, Symbolic
from auditor.findings import Finding
from auditor.rulebook.frameworks import Stack


class Written(str):
    """A world source the script itself writes: the job's allocation (`#SBATCH --nodes=1`), a
    launcher option (`--nproc_per_node=1`) that is no `${NAME:-x}` fallback, or the one-process
    command (`python train.py`). A launcher's default (torchrun's `--nproc-per-node 1`, which
    the caller's PET_NPROC_PER_NODE replaces) or a variable's fallback is a plain str: a reader
    that must know the world as the script fixes it (config/trains_nothing.py) trusts only these."""

    __slots__ = ()


@dataclass
class Flag:
    name: str  # normalised: dashes to underscores, no leading dashes; Megatron-LM spellings
    # resolved through rules/megatron-lm.toml (`--no-overlap-p2p-communication` -> overlap_p2p_comm)
    value: Scalar  # raw text as the shell would pass it; True for a bare boolean flag, False for
    # a Megatron-LM store_false spelling; several value tokens joined by one space
    line: int  # 1-based line in the launch script
    spelling: str  # as written, e.g. "--pipeline-model-parallel-size"
    values: tuple[Scalar, ...] = ()  # each value token as passed (`--dataset a b` -> ("a", "b"))
    # given only where a branch the reading could not decide ran (config.flags `_branch_flags`:
    # `if [ "$DS" = 1 ]; then A="--deepspeed"; fi; ... $A`): its value is not known, and whether
    # it is given at all is not either; a reader that asks whether it is given cannot tell
    maybe: bool = False


@dataclass
class UnknownWord:
    """A word of the training command not known statically where an argument may stand
    (`${EXTRA_ARGS}`, `$(cat args.txt)`, `$1`), and the settings written after it on the same
    command (`after`, its reader's keys), which it cannot override (argparse and Hydra: the
    last wins)."""

    text: str
    line: int
    after: frozenset[str] = frozenset()


@dataclass
class EarlierCommand:
    """A command the script runs before the launch that another launcher rule matched (`convert.sh
    import` writing the checkpoint a generate command loads: config/generate_entry.py)."""

    program: str  # the launcher rule's program (`convert.sh`), else how it was invoked
    subcommand: str
    line: int
    conditional: bool  # inside an if/case/loop: it may not have run
    words: tuple[Scalar, ...]  # its arguments as the shell passes them


@dataclass
class LaunchConfig:
    path: str
    launcher: str  # e.g. "megatron sft", "swift sft", "torchrun pretrain_gpt.py"
    command_line: int  # line where the training command starts
    flags: dict[str, Flag] = field(default_factory=dict)  # the training script's flags, by name
    flag_repeats: dict[str, list[Flag]] = field(default_factory=dict)  # earlier givings of a repeated flag
    env: dict[str, EnvVar] = field(default_factory=dict)  # what the training command's environment gets from the script
    nproc_per_node: int | Symbolic | None = None
    nnodes: int | Symbolic | None = None
    pins: dict[str, str] = field(default_factory=dict)  # every `name==X` written in a comment
    bounds: dict[str, str] = field(default_factory=dict)  # `name>=X` (or <, <=, >, ~=) in a comment, joined by ","
    diagnostics: list[Finding] = field(default_factory=list)
    # Whose argument parser reads `flags`: "ms-swift" (dataclass field names) or "megatron-lm".
    style: str = ""
    end_line: int = 0  # last line of the training command
    launcher_line: int = 0  # the line of its first word (`megatron sft`), where a flag is added
    script: Scalar = None  # what torchrun runs (`pretrain_gpt.py`, a module with -m); None otherwise
    # the file read in place of `script`, an absolute path not here (config.entry_path); "" none
    script_read: str = ""
    script_module: bool = False  # `script` is a module name (`-m pkg.mod`): config.entry_module
    # why `script` surely never runs (config.entry_absent): no file where the run opens it, or a
    # word of a placeholder bash read as redirections; "" where it may
    script_absent: str = ""
    launcher_flags: dict[str, Flag] = field(default_factory=dict)  # torchrun's own options
    wrapper: list[Scalar] = field(default_factory=list)  # words before the launcher: srun, env, ...
    positionals: list[Scalar] = field(default_factory=list)  # training arguments that are no flag
    # Where nproc_per_node / nnodes came from, for provenance: "NPROC_PER_NODE=8 (run.sh:3)"; a
    # `Written` where the script itself fixes it, not a default or fallback the caller may replace.
    world_source: dict[str, str] = field(default_factory=dict)
    text: str = ""  # the script as read (what it states about its torch: config.torch_version)
    # Config keys the entry script's own code decides (config.pyenv): key -> (value, why, file:line)
    entry_values: dict[str, tuple[Any, str, str]] = field(default_factory=dict)
    # framework -> the source checkout its front end was read from (a Megatron-LM tree around the
    # training script): its rules are confirmed against that code (rulebook.checkout)
    checkouts: dict[str, Path] = field(default_factory=dict)
    # The framework whose argument parser the training script was read to build, whatever its
    # name ("megatron-lm": examples/mimo/train.py calls megatron.training's pretrain); "" unread
    builds_parser: str = ""
    commands: int = 1  # how many training commands the script runs (a loop over sizes: one per size)
    # the entry script's own options whose value is a `${NAME:-x}` fallback (NAME unset here), by
    # option (config.launcher.fallbacks): a verdict resting on one assumes the caller leaves NAME unset
    option_fallbacks: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # or, for a front end that runs several configurations (a Hydra config's megatron roles), how many
    case: int = 0  # which of the front end's configurations is read (frontends/hydra_compose.py)
    case_name: str = ""  # what that configuration is called ("actor_train")
    # distribution -> the source directory the run imports it from (config/source_tree.py)
    source_dirs: dict[str, Path] = field(default_factory=dict)
    # The directory the training command starts in, as the walk knows it (the audit's own, until a
    # `cd`; None after one): where the trainer opens a relative config file (frontends/chatlearn.py)
    launch_dir: str | None = None
    # Where the training command runs relative to the launch directory (or absolute): "" where no
    # `cd` or runner option moved it, None where that is not known (config/configfiles.load_file)
    workdir: str | None = ""
    # New copies of a checkout made by its own tool (bash.checkout_copy): the directory, as the
    # walk knows it, the checkout root whose files it holds (configfiles.load_file)
    copies: dict[str, str] = field(default_factory=dict)
    # Words of the training command not known statically that may add arguments (`${EXTRA}`):
    # what they may set is unknown (config.flags.open_settings), in the order written
    unknown_words: list[UnknownWord] = field(default_factory=list)
    # A string set in the branches of an undecided if/case, by the text of the unknown word it is
    # (`${pr_options}`): each text it may be, or None where one is not known (bash.walk `branch_values`)
    branch_values: dict[str, tuple[str, ...] | None] = field(default_factory=dict)
    # Variables the script sets only where the caller left them empty (`if [ -z "$X" ]; then
    # X=--bf16; fi`): the caller's value where it gave one; or that hold words not known (a branch
    # appends `$X`, a loop over `$EXTRA`, `read -ra A <<< "$X"`): any text (bash.walk `callers_values`)
    callers_values: frozenset[str] = frozenset()
    # A word among the launcher's own options not known statically (`srun ${SRUN_ARGS} ...`), and
    # the launcher options read before it, which it may override (config.launcher.opened_size)
    options_opened: Any = None
    options_before: dict[str, Flag] = field(default_factory=dict)
    earlier: list[EarlierCommand] = field(default_factory=list)  # see EarlierCommand
    # Code of the script not read here (Shell.opaque: `eval` of text not known), by line: with
    # the commands before the launch, what entry_absent.unread_before judges may make a file
    opaque: list[tuple[int, str]] = field(default_factory=list)
    # the `eval` running the command whose unknown words run only after it (Candidate.evaluated)
    command_eval: int | None = None
    _stack: Stack | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def stack(self) -> Stack:
        """The frameworks that run this launch (rulebook.frameworks.Stack): derived once from
        the launcher as read, and again only if the reading changes it."""
        if self._stack is None or self._stack.launcher != self.launcher:
            self._stack = Stack.of(self.launcher)
        return self._stack

    @property
    def world_size(self) -> int | None:
        if isinstance(self.nproc_per_node, int) and isinstance(self.nnodes, int):
            return self.nproc_per_node * self.nnodes
        return None
