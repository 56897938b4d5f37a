"""A Hydra defaults entry whose file the checkout does not hold stops the run: alibaba/ROLL
(commit 8eb27cc2dc34c4d1310b169d9b86d339004d811a) examples/agentic_demo/run_atropos_gsm8k.sh
starts examples/start_agentic_pipeline.py on atropos_gsm8k_grpo_qwen25_0.5b.yaml, whose
`defaults:` is `- ../config/deepspeed_zero2@_here_` (:4-5); commit 7f9d4d38 deleted
examples/config/deepspeed_zero2.yaml, so Hydra's compose raises MissingConfigException before any
worker starts. A search path, a ConfigStore or an `optional` entry may supply or excuse it: unknown.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.analysis.undecided import undecided_inputs
from auditor.config.frontends.hydra_compose import missing_default
from auditor.config.hydra_compose import MissingConfig
from tests.realscripts.test_roll import SFT, _read, roll_tree

ZERO2 = "defaults:\n  - ../config/deepspeed_zero2@_here_\n\n" + SFT


def _tree(tmp_path: Path, config: str = ZERO2) -> Path:
    script = roll_tree(tmp_path, "agentic_demo", config, "atropos_gsm8k_grpo_qwen25_0.5b", kind="agentic")
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "examples" / "config").mkdir()
    (tmp_path / "examples" / "config" / "traj_envs.yaml").write_text("max_steps: 3\n")
    return script


def _missing(script: Path) -> list[str]:
    return [d.message for d in _read(script).diagnostics if d.kind == "launch.config-file-missing"]


def test_a_defaults_file_the_checkout_lacks_does_not_start(tmp_path: Path):
    found = _missing(_tree(tmp_path))
    assert len(found) == 1 and "deepspeed_zero2" in found[0] and "MissingConfigException" in found[0], found


def test_a_group_entry_the_checkout_lacks_does_not_start(tmp_path: Path):
    assert _missing(_tree(tmp_path, "defaults:\n  - strategy: zero9\n\n" + SFT))


def test_an_optional_entry_is_no_stop(tmp_path: Path):
    assert not _missing(_tree(tmp_path, "defaults:\n  - optional strategy: zero9\n\n" + SFT))


def test_a_search_path_may_hold_it(tmp_path: Path):
    search = "hydra:\n  searchpath:\n    - pkg://roll.configs\n"
    assert not _missing(_tree(tmp_path, ZERO2 + search))


def test_a_config_store_may_hold_it(tmp_path: Path):
    script = _tree(tmp_path)
    (tmp_path / "roll").mkdir()
    (tmp_path / "roll" / "store.py").write_text("from hydra.core.config_store import ConfigStore\n")
    assert not _missing(script)


# Review r45-scan: Hydra's own groups ship inside the installed package (hydra/job_logging/disabled)
# or a plugin of the image (hydra/launcher/submitit_slurm): the config directory lacking them is
# no miss. A leading `/` names the config root, not the file system's.


@pytest.mark.parametrize("entry", ["override hydra/job_logging: disabled", "override hydra/launcher: submitit_slurm",
                                   "hydra/sweeper: basic"])
def test_a_group_of_hydra_itself_is_never_missing(tmp_path: Path, entry: str):
    script = _tree(tmp_path, f"defaults:\n  - strategy: zero2\n  - _self_\n  - {entry}\n\n" + SFT)
    _group(tmp_path, "strategy", "zero2", "zero: 2\n")
    assert not _missing(script)


def test_an_absolute_group_is_from_the_config_root(tmp_path: Path):
    script = _tree(tmp_path, "defaults:\n  - /strategy: zero2\n\n" + SFT)
    _group(tmp_path, "strategy", "zero2", "zero: 2\n")
    config = _read(script)
    assert not _missing(script) and not [d for d in config.diagnostics if d.kind == "launch.config-file-unread"]


def test_an_absolute_group_the_checkout_lacks_still_does_not_start(tmp_path: Path):
    assert _missing(_tree(tmp_path, "defaults:\n  - /strategy: zero9\n\n" + SFT))


def test_an_absolute_name_in_a_group_file_is_from_the_config_root(tmp_path: Path):
    script = _tree(tmp_path, "defaults:\n  - strategy: zero2\n\n" + SFT)
    _group(tmp_path, "strategy", "zero2", "defaults:\n  - /common@_here_\nzero: 2\n")
    (script.parent / "common.yaml").write_text("x: 1\n")
    config = _read(script)
    assert not _missing(script) and not [d for d in config.diagnostics if d.kind == "launch.config-file-unread"]


def test_a_command_line_choice_of_its_group_may_pick_another(tmp_path: Path):
    """`strategy=zero3` on a copy's command line picks another option of the group."""
    config = _read(_tree(tmp_path))
    exc = MissingConfig("cfg.yaml names `strategy/zero9` in its defaults", "strategy/zero9")
    primary = tmp_path / "examples" / "agentic_demo" / "atropos_gsm8k_grpo_qwen25_0.5b.yaml"
    entry = tmp_path / "examples" / "start_agentic_pipeline.py"
    before = len(config.diagnostics)
    missing_default(config, exc, primary, entry, "run.sh:5", ["strategy"])
    assert len(config.diagnostics) == before
    missing_default(config, exc, primary, entry, "run.sh:5", ["trainer.lr"])
    assert len(config.diagnostics) == before + 1


def _group(root: Path, group: str, option: str, text: str) -> None:
    folder = root / "examples" / "agentic_demo" / group
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{option}.yaml").write_text(text)


# Review h46-misses: the primary config itself missing is the same fact. alibaba/ROLL (commit
# 8eb27cc2dc34c4d1310b169d9b86d339004d811a) examples/agentic_deepeyes/run_agentic_pipeline.sh:4-5
# passes `--config_name deepeyes_2gpus`, but examples/agentic_deepeyes/ holds only deepeyes.yaml:
# examples/start_agentic_pipeline.py:21-22 `compose(config_name=...)` raises
# MissingConfigException (Cannot find primary config) before Ray or any worker starts.


def _no_primary(tmp_path: Path) -> Path:
    script = _tree(tmp_path, SFT)
    script.write_text(script.read_text().replace("--config_name atropos_gsm8k_grpo_qwen25_0.5b",
                                                 "--config_name deepeyes_2gpus"))
    return script


def test_a_primary_config_the_checkout_lacks_does_not_start(tmp_path: Path):
    found = _missing(_no_primary(tmp_path))
    assert len(found) == 1 and "primary config 'deepeyes_2gpus'" in found[0], found


def test_the_missing_files_are_named_from_the_checkout_root(tmp_path: Path):
    """The cause names the files as the checkout does, not by the auditing machine's absolute path:
    test27's ROLL distill row wrapped that path past the first screen (benchmarks first_screen)."""
    primary = _missing(_no_primary(tmp_path / "a"))
    default = _missing(_tree(tmp_path / "b"))
    assert "(no examples/agentic_demo/deepeyes_2gpus.yaml)" in primary[0], primary
    assert "examples/config/deepspeed_zero2.yaml does not exist" in default[0], default
    assert not any(str(tmp_path) in m for m in primary + default), primary + default


def test_a_config_store_may_hold_the_primary(tmp_path: Path):
    script = _no_primary(tmp_path)
    (tmp_path / "roll").mkdir()
    (tmp_path / "roll" / "store.py").write_text("from hydra.core.config_store import ConfigStore\n")
    assert not _missing(script)


def test_a_package_config_path_is_not_read(tmp_path: Path):
    """`--config_path pkg://roll.configs`: the configs are a package's, not the directory's."""
    script = _no_primary(tmp_path)
    script.write_text(script.read_text().replace("--config_path $CONFIG_PATH", "--config_path pkg://roll.configs"))
    assert not _missing(script)


def test_a_command_line_search_path_may_hold_the_primary(tmp_path: Path):
    config = _read(_tree(tmp_path))
    exc = MissingConfig("Cannot find primary config 'x_cfg'", "x_cfg", primary=True)
    primary = tmp_path / "examples" / "agentic_demo" / "x_cfg.yaml"
    entry = tmp_path / "examples" / "start_agentic_pipeline.py"
    before = len(config.diagnostics)
    missing_default(config, exc, primary, entry, "run.sh:5", ["hydra.searchpath"])
    assert len(config.diagnostics) == before
    missing_default(config, exc, primary, entry, "run.sh:5", ["x"])
    assert len(config.diagnostics) == before + 1


# Review r46-b: the primary config found at run time after all. An earlier command of the script
# may write it (`cp`, `python gen.py > F`, a heredoc, `wget -O`, `NAME=gen` then a path built
# from it); a config folder outside the checkout (`../../shared/cfgs`, /mnt) is no tree this
# machine reads; Hydra 1.1 loads `--config_name x.yml` as written (hydra/plugins/config_source.py
# `_normalize_file_name`), 1.2 looks for x.yml.yaml: which applies is the run's version_base.


@pytest.mark.parametrize("pre", [
    "cp examples/agentic_demo/atropos_gsm8k_grpo_qwen25_0.5b.yaml examples/agentic_demo/deepeyes_2gpus.yaml",
    "python tools/make_cfg.py > examples/agentic_demo/deepeyes_2gpus.yaml",
    "cat > examples/agentic_demo/deepeyes_2gpus.yaml <<YAML\nexp_name: y\nYAML",
    "wget -O examples/agentic_demo/deepeyes_2gpus.yaml https://example.com/c.yaml",
    "NAME=deepeyes_2gpus\nenvsubst < base.yaml > examples/agentic_demo/$NAME.yaml",
    "rsync -a /shared/cfgs/ examples/agentic_demo/",
    # h48-screen: known writers by a path built from $0 (checked with bash: the file is there,
    # Hydra composes it); LaunchConfig.unread_before, a second decider, counted none of them
    "cp /shared/cfgs/*.yaml $(dirname $0)/",
    "tar xf /shared/cfgs.tar -C examples/$CONFIG_PATH",
    "cp -r /shared/examples .",
    # h48-screen2 (review r48-screen 2-4; each checked with bash: the file is there): `-t` in a
    # bundle or an abbreviated `--target-directory` names the destination, not the last word;
    # `>& WORD` writes a file; /proc/self/cwd is the job's directory; `ln` may point a path in
    "cp -rt examples /shared/examples/.",
    "cp -r --targ=examples /shared/examples/.",
    "mv -ft examples/agentic_d* /shared/cfgs/deepeyes_2*.yaml",  # globs: no word names the file
    "ln -sft examples/agentic_d* /shared/cfgs/deepeyes_2*.yaml",
    "N=deepeyes\necho 'x: 1' >& $(dirname $0)/${N}_2gpus.yaml",
    "cp -r /shared/examples/. /proc/self/cwd/examples/",
    "ln -s /data/ckpt /tmp/ckpt",
    "ln -s ROOT/examples /tmp/x\ncp -r /shared/examples/. /tmp/x/",
])
def test_a_primary_config_an_earlier_command_may_write_is_unknown(tmp_path: Path, pre: str):
    script = _no_primary(tmp_path)
    pre = pre.replace("ROOT", str(tmp_path))
    script.write_text(script.read_text().replace("set +x\n", f"set +x\n{pre}\n"))
    assert not _missing(script)
    assert [d for d in _read(script).diagnostics if d.kind == "launch.config-file-unread"]


@pytest.mark.parametrize("pre", ["cp a.yaml /tmp/other.yaml", "touch /tmp/stamp", "cp -rT /shared/a /tmp/b",
                                 "echo x >&2", "echo x 2>&1 >&-"])
def test_an_earlier_command_writing_elsewhere_leaves_the_stop(tmp_path: Path, pre: str):
    script = _no_primary(tmp_path)
    script.write_text(script.read_text().replace("set +x\n", f"set +x\n{pre}\n"))
    assert _missing(script)


@pytest.mark.parametrize("folder", ["../../shared/cfgs", "/mnt/cfgs"])
def test_a_config_folder_outside_the_checkout_is_never_judged_absent(tmp_path: Path, folder: str):
    script = _no_primary(tmp_path)
    script.write_text(script.read_text().replace("--config_path $CONFIG_PATH", f"--config_path {folder}"))
    assert not _missing(script)


@pytest.mark.parametrize("name", ["mycfg.yml", "atropos_gsm8k_grpo_qwen25_0.5b.yml"])
def test_a_yml_name_is_left_to_the_runs_hydra(tmp_path: Path, name: str):
    script = _no_primary(tmp_path)
    (script.parent / "mycfg.yml").write_text(SFT)
    script.write_text(script.read_text().replace("--config_name deepeyes_2gpus", f"--config_name {name}"))
    assert not _missing(script)


def test_a_defaults_file_an_earlier_command_may_write_is_unknown(tmp_path: Path):
    script = _tree(tmp_path)
    script.write_text(script.read_text().replace(
        "set +x\n", "set +x\ncp /shared/zero2.yaml examples/config/deepspeed_zero2.yaml\n"))
    assert not _missing(script)


# h47-shell: an earlier command running code not read may write the file without the script
# naming it (`bash prep.sh` whose prep.sh is not found, `python tools/make_cfg.py`, `eval "$SETUP"`):
# no sure stop, the command named; a command known to run nothing more (`mkdir -p logs`) leaves it.


@pytest.mark.parametrize("pre, named", [
    ("bash prep.sh", "`bash prep.sh`"),
    ("python tools/make_cfg.py", "`python tools/make_cfg.py`"),
    ('eval "$SETUP"', '`eval "$SETUP"`'),
])
def test_a_primary_config_a_command_not_read_may_write_is_unknown(tmp_path: Path, pre: str, named: str):
    script = _no_primary(tmp_path)
    script.write_text(script.read_text().replace("set +x\n", f"set +x\n{pre}\n"))
    config = _read(script)
    assert not [d for d in config.diagnostics if d.kind == "launch.config-file-missing"]
    said = [d.message for d in config.diagnostics if d.kind == "launch.config-may-be-written"]
    assert len(said) == 1 and "deepeyes_2gpus" in said[0] and named in said[0], said


def test_a_command_known_to_run_nothing_more_leaves_the_stop(tmp_path: Path):
    script = _no_primary(tmp_path)
    script.write_text(script.read_text().replace("set +x\n", "set +x\nmkdir -p logs\n"))
    assert _missing(script)


# Review r47-shell h11: `python -c 'print(1)'` runs text that is read and writes nothing: no
# unread code, the stop stands. h08: where a command may write the file, the headline names that
# step, not a setting the missing file would give (the launch finding's `undecided` comes first).


def test_a_python_c_text_that_only_prints_leaves_the_stop(tmp_path: Path):
    script = _no_primary(tmp_path)
    script.write_text(script.read_text().replace("set +x\n", "set +x\npython -c 'print(1)'\n"))
    assert _missing(script)


def test_a_python_c_text_that_may_write_stays_unknown(tmp_path: Path):
    script = _no_primary(tmp_path)
    script.write_text(script.read_text().replace("set +x\n", "set +x\npython -c 'open(\"x\", \"w\")'\n"))
    assert not _missing(script)


def test_the_command_that_may_write_the_config_is_the_first_undecided(tmp_path: Path):
    script = _no_primary(tmp_path)
    script.write_text(script.read_text().replace("set +x\n", "set +x\nbash prep.sh\n"))
    findings = [d.to_json() for d in _read(script).diagnostics]
    first = undecided_inputs({"findings": findings})[0]
    assert "deepeyes_2gpus.yaml exists when the run starts" in first.what and "`bash prep.sh`" in first.what
    # h48-screen2 (review r48-screen 5): named from the checkout root, as the DOES NOT START cause
    # names it; the absolute path wrapped the INCONCLUSIVE headline mid-word at 80 columns
    assert first.what.startswith("whether examples/agentic_demo/deepeyes_2gpus.yaml exists"), first.what
    assert not first.aside and "audit after that command has run" in first.decide
