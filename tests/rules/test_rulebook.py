"""The rules files as data: every shipped file passes the schema, a mistyped key or table is
refused, and every list of frameworks (stages, stacks, coverage) follows the `[framework]` tables,
so that a framework is added by adding its rules file."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor import rulebook
from auditor.analysis.undecided import undecided_inputs
from auditor.errors import InputError
from auditor.rulebook import files, interpreter
from auditor.rulebook.apis import batch_wrappers
from auditor.rulebook.frameworks import Stack, audited_packages, frameworks, owner_of, pin_option, versioned
from auditor.rulebook.launchers import Spelling
from auditor.rulebook.stages import load_rulebook

FRAMEWORK = '[framework]\nname = "demo"\ndistribution = "demo"\n'

# Files that load: (text of rules/demo.toml).
VALID = [
    FRAMEWORK,
    FRAMEWORK + '\n[[stage]]\nname = "demo-args"\norder = 50\n',
    FRAMEWORK + '\n[[stage]]\nname = "s"\norder = 1\n\n[[rule]]\nid = "r"\nstage = "s"\nkey = "k"\n'
                'value = 1\nversions = ">=1.0,<2"\n',
    FRAMEWORK + '\n[[rule]]\nid = "r"\nstage = "s"\nversions = "*"\n',
    '[framework]\nname = "demo"\n\n[[model]]\nnames = ["org/model"]\nvalues = { anything = 1 }\n',    FRAMEWORK + '\n[[batch_wrapper]]\nmodules = ["m"]\nkey = "k"\nversions = ">=2.4"\n',
]

# Files that are refused: (text, what the one-line error names).
INVALID = [
    (FRAMEWORK + '\n[[rule]]\nid = "r"\nstage = "s"\nvesions = "<2"\n', "unknown key 'vesions'"),
    (FRAMEWORK + '\n[[rules]]\nid = "r"\nstage = "s"\n', "unknown table [rules]"),
    (FRAMEWORK.replace("distribution", "distrbution"), "unknown key 'distrbution'"),
    (FRAMEWORK + '\n[[rule]]\nstage = "s"\n', "missing key 'id'"),
    (FRAMEWORK + '\n[[rule]]\nid = "r"\nstage = "s"\nversions = "0.16+"\n', "not a PEP 440 specifier"),
    (FRAMEWORK + '\n[stage]\nname = "s"\norder = 1\n', "[stage] must be written [[stage]]"),
    ('[[stage]]\nname = "s"\norder = 1\n', "no [framework] table"),
    (FRAMEWORK.replace('name = "demo"', 'name = "other"'), "is not the file's name"),
    ('[framework\nname = "demo"\n', "invalid rules file"),
    (FRAMEWORK + 'launchers = "megatron *"\n', "launchers must be a list"),
    (FRAMEWORK + 'position = "100"\n', "position must be an integer"),
    (FRAMEWORK + '\n[[entry_point]]\nname = "e"\ncode = ""\nlaunchers = "deepspeed *"\n',
     "launchers must be a list"),
    (FRAMEWORK + '\n[[stage]]\nname = "s"\norder = 1\nlaunchers = "demo *"\n', "launchers must be a list"),
    (FRAMEWORK + '\n[[batch_wrapper]]\nmodules = "torch.distributed.pipelining"\nkey = "k"\n',
     "modules must be a list"),
    ('stage = [1, 2]\n' + FRAMEWORK, "[[stage]] #1 must be a table"),    # nothing reads a wrapper's function: the file must not suggest something checks it
    (FRAMEWORK + '\n[[batch_wrapper]]\nfunction = "f"\nmodules = ["m"]\nkey = "k"\n',
     "unknown key 'function'"),
]


@pytest.mark.parametrize("text", VALID)
def test_valid_rules_file_loads(tmp_path: Path, text: str) -> None:
    (tmp_path / "demo.toml").write_text(text)
    assert files.load("demo", None, tmp_path).section("framework")["name"] == "demo"


@pytest.mark.parametrize("text,error", INVALID)
def test_invalid_rules_file_is_refused(tmp_path: Path, text: str, error: str) -> None:
    (tmp_path / "demo.toml").write_text(text)
    with pytest.raises(InputError, match="demo.toml") as exc:
        files.load("demo", None, tmp_path)
    assert error in str(exc.value)


@pytest.mark.parametrize("name", files.names())
def test_shipped_rules_file_passes_the_schema(name: str) -> None:
    assert rulebook.load(name).section("framework")["name"] == name


def test_the_rules_directory_is_found_once_per_process() -> None:
    """A scan loads rules tens of thousands of times; each search resolved the package's path
    through the file system (about a tenth of a realscripts test's CPU). The answer is the
    checkout's rules/ (tests/test_wheel.py checks the wheel's), the same object each time."""
    first = files.rules_dir()
    assert first == Path(__file__).resolve().parents[2] / "rules"
    assert files.rules_dir() is first


def test_framework_tables_name_known_frameworks_and_real_launchers() -> None:
    """`runs_on` names a rules file; every launcher the launch reader knows, spelled as it reports
    it, is the front end of exactly one framework (Stack.of(...).distributions raises otherwise)."""
    known = {f.name for f in frameworks()}
    assert all(f.runs_on in known for f in frameworks() if f.runs_on)
    # A front end that is no PyPI distribution (slime: a git checkout) selects nothing by release;
    # its stack is what it runs on.
    assert all(f.distribution or f.runs_on for f in frameworks() if f.launchers or f.packages)
    spelled = []
    for launcher in Spelling.load(None).launchers:
        spelled += [f"{launcher['program']} {sub}" for sub in launcher.get("subcommands", ())]
        spelled += [f"{p} pretrain_gpt.py" for p in launcher.get("programs", ())]
        spelled += [f"python -m {m} pretrain_gpt.py" for m in launcher.get("python_modules", ())]
    assert spelled
    for launch in spelled:
        stack = Stack.of(launch).distributions
        assert stack and set(stack) <= {f.distribution for f in versioned()}, launch


def test_stacks_follow_runs_on() -> None:
    assert Stack.of("megatron sft").distributions == ["ms-swift", "mcore-bridge", "megatron-core"]
    assert Stack.of("torchrun pretrain_gpt.py").distributions == ["megatron-core"]
    assert Stack.of("deepspeed train.py").distributions == ["deepspeed"]
    assert Stack.of("python -m verl.trainer.main_ppo").distributions == ["verl", "mbridge", "megatron-core"]
    assert Stack.of("python entrypoint.py").distributions == ["megatron-core"]  # ChatLearn on Megatron-LM
    # rules/torchtitan.toml names its launch exactly; megatron-lm's `torchrun*` matches it too
    assert Stack.of("torchrun torchtitan.train").distributions == ["torchtitan"]
    assert Stack.of("lightning gpt_finetuning.py").distributions == ["megatron-core"]  # NeMo 2
    assert audited_packages() == ["slime", "chatlearn", "nemo", "roll", "mcore_adapter", "deepspeed", "megatron", "swift",
                                  "torchtitan", "verl", "mbridge", "mcore_bridge"]
    with pytest.raises(InputError, match="no rules file"):
        _ = Stack.of("accelerate train.py").distributions


def test_needs_follow_the_stack():
    """The batching rule's settings come from the frameworks a run goes through: Megatron's for
    every stack that ends in megatron-core, none for DeepSpeed (it has no batching setting)."""
    megatron = ["pipeline_model_parallel_size", "batch_p2p_comm"]
    assert Stack.of("megatron sft").needs == megatron
    assert Stack.of("torchrun pretrain_gpt.py").needs == megatron
    assert Stack.of("deepspeed train.py").needs == []



@pytest.mark.parametrize("launcher,foreign", [
    ("deepspeed train.py", {"pipeline_model_parallel_size": ["megatron-core"],
                            "batch_p2p_comm": ["megatron-core"]}),
    ("megatron sft", {}),
    ("torchrun pretrain_gpt.py", {}),
    ("accelerate train.py", {}),  # no stack: which settings it has is unknown, none is foreign
])
def test_foreign_settings_are_another_stacks_needs(launcher: str, foreign: dict) -> None:
    assert Stack.of(launcher).foreign_settings == foreign


def _copy_shipped(directory: Path) -> None:
    for name in files.names():
        (directory / f"{name}.toml").write_bytes((files.rules_dir() / f"{name}.toml").read_bytes())


def test_a_new_rules_file_is_a_new_framework(tmp_path: Path) -> None:
    """Adding rules/demo.toml adds its stack, its stages and its packages; no code names it."""
    _copy_shipped(tmp_path)
    (tmp_path / "demo.toml").write_text(
        '[framework]\nname = "demo"\ndistribution = "demo-dist"\nposition = 100\n'
        'launchers = ["demo *"]\nruns_on = "torch"\npackages = ["demo"]\n\n'
        '[[stage]]\nname = "demo-args"\norder = 60\nlaunchers = ["demo *"]\nflags = true\n\n'
        '[[arg]]\nstage = "demo-args"\nkey = "pipeline_model_parallel_size"\ntype = "int"\n'
        'versions = ">=1"\n')
    assert Stack.of("demo run", tmp_path).distributions == ["demo-dist", "torch"]
    assert Stack.of("megatron sft", tmp_path).distributions == ["ms-swift", "mcore-bridge", "megatron-core"]
    assert "demo" in audited_packages(tmp_path)
    book = load_rulebook({"demo-dist": "1.2"}, tmp_path)
    assert [s.framework for s in book.stages if s.name == "demo-args"] == ["demo"]
    assert [e.id for e in book.entries["demo-args"]] == ["arg:demo-args:pipeline_model_parallel_size"]
    assert "arg:demo-args:pipeline_model_parallel_size" in load_rulebook({"demo-dist": "0.9"}, tmp_path).uncovered


def test_runs_on_an_unknown_framework_fails_closed(tmp_path: Path) -> None:
    _copy_shipped(tmp_path)
    (tmp_path / "demo.toml").write_text(FRAMEWORK + 'launchers = ["demo *"]\nruns_on = "tourch"\n')
    with pytest.raises(InputError, match="runs_on names 'tourch'"):
        _ = Stack.of("demo run", tmp_path).distributions


def test_two_claims_on_one_launcher_fail_closed(tmp_path: Path) -> None:
    _copy_shipped(tmp_path)
    (tmp_path / "demo.toml").write_text(FRAMEWORK + 'launchers = ["megatron *"]\n')
    with pytest.raises(InputError, match="ms-swift, demo"):
        _ = Stack.of("megatron sft", tmp_path).distributions


# Launchers as the launch reader reports them, and the entry points of the shipped rules each
# one takes (`[[entry_point]] launchers`, matched like `[framework]` and `[[stage]]` launchers).
SHIPPED_VERSIONS = {"ms-swift": "4.3.0", "mcore-bridge": "1.4.1", "megatron-core": "0.17.0",
                    "deepspeed": "0.16.0", "torch": "2.13.0"}
ENTRY_VALID = [
    ("megatron sft", ["ms-swift Megatron trainer"]),
    ("megatron rlhf", ["ms-swift Megatron trainer"]),
    ("deepspeed train.py", ["deepspeed pipeline engine"]),
    ("deepspeed", ["deepspeed pipeline engine"]),
    # megatron-core's two generic ones: their `when` (the entry's `inference_engine`) picks one in scan
    ("torchrun pretrain_gpt.py", ["megatron-core pipeline schedule", "megatron-core inference engine"]),
]
# Launchers no bound entry point claims: they get the generic one (megatron-core's schedule).
ENTRY_INVALID = [
    "deepspeedx train.py",  # a prefix is not a pattern match
    "Megatron sft",  # the command line is case-sensitive
    "megatron export",  # ms-swift's front end, but no training step
]


@pytest.mark.parametrize("launcher,entry", ENTRY_VALID)
def test_a_launcher_takes_its_frameworks_entry_point(launcher: str, entry: list[str]) -> None:
    rules, bound, generic = interpreter.load(SHIPPED_VERSIONS)
    assert [e.name for e in interpreter.entries_for(launcher, bound, generic)] == entry


@pytest.mark.parametrize("launcher", ENTRY_INVALID)
def test_an_unclaimed_launcher_takes_the_generic_entry_point(launcher: str) -> None:
    rules, bound, generic = interpreter.load(SHIPPED_VERSIONS)
    assert interpreter.entries_for(launcher, bound, generic) == generic


@pytest.mark.parametrize("launcher", [launcher for launcher, _ in ENTRY_VALID])
def test_entry_points_stages_and_stacks_match_launchers_alike(launcher: str) -> None:
    """One matcher: the framework of a bound entry point a launcher takes is on the stack its
    `[framework]` launchers give, and the front end's stages run for it."""
    rules, bound, generic = interpreter.load(SHIPPED_VERSIONS)
    taken = {e.framework for e in interpreter.entries_for(launcher, bound, generic) if e in bound}
    stack = {f.name for f in frameworks() if f.distribution in Stack.of(launcher).distributions}
    assert taken <= stack
    book = load_rulebook(SHIPPED_VERSIONS)
    assert {s.framework for s in book.stages if s.launchers and s.runs_for(launcher)} <= stack


@pytest.mark.parametrize("torch,wrapped", [("2.13.0", True), ("2.4.0", True), ("2.3.1", False),
                                           (None, True)])
def test_batch_wrappers_follow_the_torch_release(torch: str | None, wrapped: bool) -> None:
    """torch.distributed.pipelining (2.4+) issues its stages' batches in `_batch_p2p`; before
    2.4 there is no such wrapper. An unknown release keeps it: its key is then unknown too."""
    modules = [w.modules for w in batch_wrappers(torch)]
    assert modules == ([("torch.distributed.pipelining",)] if wrapped else [])


@pytest.mark.parametrize("rule_id, distribution", [
    ("swift.extra-kwargs", "ms-swift"),  # VALID: the id's prefix is not the distribution's name
    ("mcore.world-divisible", "megatron-core"),
    ("torch.lazy-init-unbounded", "torch"),
    ("deepspeed.comm-isend-blocking", "deepspeed"),
    ("swift.no-such-rule", None),  # INVALID: a prefix alone names no rule
])
def test_a_rule_is_owned_by_its_file_framework(rule_id, distribution):
    owner = owner_of(rule_id)
    assert (owner.distribution if owner else None) == distribution


def test_an_undecided_check_names_the_distribution_or_option_that_decides_it():
    """verdict reads the owner of each undecided rule: ms-swift's checks are pinned with
    --target ms-swift==VERSION (not `swift==`), torch's releases with --torch."""
    config = {"effective": {"torch_version": "1.9.0"}, "outside_rules": {"torch 1.9.0": ["torch_eager_init"]},
              "undecided": ["swift.extra-kwargs: --megatron_extra_kwargs at run.sh:3 is not read"]}
    config["effective"]["torch_eager_init"] = "unknown"
    decides = [u.decide for u in undecided_inputs({"config": config})]
    assert decides[0].startswith("--torch X.Y.Z for a covered release")
    assert decides[1].startswith("--target ms-swift==VERSION")


@pytest.mark.parametrize("name, option", [
    ("ms-swift", "--target ms-swift==VERSION"),
    ("megatron-lm", "--target megatron-core==VERSION"),  # its rules select on megatron-core's release
    ("torch", "--torch X.Y.Z"),  # the cluster's torch: not a source to --target
])
def test_what_pins_a_framework_release(name, option):
    assert pin_option(name) == option
