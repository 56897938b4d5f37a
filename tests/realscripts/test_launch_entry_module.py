"""`-m pkg.mod` entries are found as `python -m` finds them and read (issue 22 items 4, 10).

The first script reproduces pytorch/torchtitan@b5bcd76c66d0acb1a08b176d9639425bc55e0b2a
torchtitan/models/flux/run_infer.sh: from the checkout's root, `torchrun --nproc_per_node=${NGPU}
... -m torchtitan.models.flux.inference.infer --module ${MODULE} --config ${CONFIG}
--checkpoint.enable ... "$@"`. torch/distributed/run.py's `-m/--module` runs the name as
`python -m` does: sys.path is the working directory, then PYTHONPATH, then installed packages.
The trees below are written here: a package whose module parses its own flags.
"""

from __future__ import annotations

import json
from pathlib import Path
from textwrap import dedent

import pytest

from auditor.analysis.undecided import undecided_inputs
from auditor.config.entry_module import Root, module_file
from auditor.config.launch import read_launch
from auditor.config.pyenv import locate
from auditor.report.text import scan_report
from auditor.scan import ScanInputs, run_scan
from tests.report.test_schema import VALIDATOR

FLUX = dedent('''\
    #!/usr/bin/bash
    set -ex
    NGPU=${NGPU:-"8"}
    export LOG_RANK=${LOG_RANK:-0}
    MODULE=${MODULE:-"flux"}
    CONFIG=${CONFIG:-"flux_debugmodel"}

    PYTORCH_ALLOC_CONF="expandable_segments:True" \\
    torchrun --nproc_per_node=${NGPU} --rdzv_backend c10d --rdzv_endpoint="localhost:0" \\
    --local-ranks-filter ${LOG_RANK} --role rank --tee 3 \\
    -m proj.models.flux.inference.infer --module ${MODULE} --config ${CONFIG} \\
    --checkpoint.enable \\
    --checkpoint.exclude_from_loading=lr_scheduler,dataloader,optimizer "$@"
    ''')

# A module that parses its own flags and imports its own package (not only what builds no pipeline).
INFER = dedent('''\
    import argparse
    from proj.trainer import Trainer
    parser = argparse.ArgumentParser()
    parser.add_argument("--module")
    parser.add_argument("--config")
    Trainer(parser.parse_known_args()[0]).generate()
    ''')


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def _flux_checkout(root: Path) -> Path:
    _tree(root, {"pyproject.toml": "[project]\nname = 'proj'\n", "proj/__init__.py": "",
                 # on megatron: a package no rules model alone is another answer (test_unknown_stack)
                 "proj/trainer.py": "from megatron.core import parallel_state\nimport fancy_engine\n"
                                    "Trainer = fancy_engine.Trainer\n",
                 "proj/models/__init__.py": "", "proj/models/flux/__init__.py": "",
                 "proj/models/flux/inference/__init__.py": "",
                 "proj/models/flux/inference/infer.py": INFER, "proj/models/flux/run_infer.sh": FLUX})
    return root / "proj/models/flux/run_infer.sh"


def test_module_found_from_the_working_directory_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _flux_checkout(tmp_path)
    monkeypatch.chdir(tmp_path)
    config = read_launch(script)
    infer = tmp_path / "proj/models/flux/inference/infer.py"
    assert config.script == "proj.models.flux.inference.infer" and config.script_module
    assert config.script_read == str(infer)
    assert locate(config)[0].path == str(infer)
    kinds = [d.kind for d in config.diagnostics]
    assert "launch.entry-module" in kinds and "launch.front-end-unread" not in kinds
    # Read, it builds no Megatron-LM parser: its own flags leave the run undecided, never CLEAN.
    foreign = next(d for d in config.diagnostics if d.kind == "launch.front-end-foreign")
    assert "--module" in foreign.detail["flags"] and "--checkpoint.enable" in foreign.detail["flags"]
    assert "pipeline_model_parallel_size" in foreign.detail["decide"]


def test_module_not_found_stays_unknown_with_its_file_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _flux_checkout(tmp_path / "checkout")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the job's working directory is not the checkout's root
    config = read_launch(script)
    assert config.script_read == ""
    unread = next(d for d in config.diagnostics if d.kind == "launch.front-end-unread")
    assert "proj/models/flux/inference/infer.py" in unread.detail["decide"]
    assert "--command" in unread.detail["decide"]


PYTHONPATH_SCRIPT = dedent('''\
    #!/bin/bash
    export PYTHONPATH={pythonpath}:$PYTHONPATH
    torchrun --nproc_per_node 8 -m {module} --pipeline-model-parallel-size 4
    ''')


@pytest.mark.parametrize("pythonpath", ["lib", "$PWD/lib"])
def test_module_found_on_the_scripts_pythonpath(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                pythonpath: str) -> None:
    """`export PYTHONPATH=...` (relative: against the working directory) is on sys.path."""
    _tree(tmp_path, {"lib/tool/__init__.py": "", "lib/tool/train.py": INFER.replace("proj.trainer", "tool.core"),
                     "run.sh": PYTHONPATH_SCRIPT.format(pythonpath=pythonpath, module="tool.train")})
    monkeypatch.chdir(tmp_path)
    config = read_launch(tmp_path / "run.sh")
    assert config.script_read == str(tmp_path / "lib/tool/train.py")
    said = next(d for d in config.diagnostics if d.kind == "launch.entry-module")
    assert "PYTHONPATH entry" in said.message


def test_package_runs_its_main_and_a_regular_package_shadows(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """`-m tool` runs tool/__main__.py; a regular package `tool` in the working directory hides
    the PYTHONPATH's (python stops at the first root giving the top-level name)."""
    _tree(tmp_path, {"lib/tool/__init__.py": "", "lib/tool/__main__.py": INFER,
                     "run.sh": PYTHONPATH_SCRIPT.format(pythonpath="lib", module="tool")})
    monkeypatch.chdir(tmp_path)
    assert read_launch(tmp_path / "run.sh").script_read == str(tmp_path / "lib/tool/__main__.py")
    _tree(tmp_path, {"tool/__init__.py": ""})  # no __main__ here: python -m tool fails
    assert read_launch(tmp_path / "run.sh").script_read == ""


def test_srun_python_m_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`srun python -u -m pkg.mod`: python's `-m` behind srun names a module too."""
    _tree(tmp_path, {"pkg/__init__.py": "", "pkg/mod.py": INFER,
                     "run.sh": "#!/bin/bash\nsrun --ntasks-per-node 8 python -u -m pkg.mod --config x\n"})
    monkeypatch.chdir(tmp_path)
    config = read_launch(tmp_path / "run.sh")
    assert config.script_module and config.script_read == str(tmp_path / "pkg/mod.py")


def test_module_on_pythonpath_that_builds_no_pipeline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The entry found on PYTHONPATH is the one whose imports decide the run's kind."""
    plain = "import argparse\nimport torch\nparser = argparse.ArgumentParser()\nparser.parse_args()\n"
    _tree(tmp_path, {"lib/tool/__init__.py": "", "lib/tool/eval.py": plain,
                     "run.sh": PYTHONPATH_SCRIPT.format(pythonpath="lib", module="tool.eval")})
    monkeypatch.chdir(tmp_path)
    config = read_launch(tmp_path / "run.sh")
    assert any(d.kind == "launch.not-pipeline" and "builds no pipeline" in d.message for d in config.diagnostics)


def test_flux_shape_is_undecided_not_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the scan document carries leaves the run undecided with one step."""
    script = _flux_checkout(tmp_path)
    monkeypatch.chdir(tmp_path)
    config = read_launch(script)
    doc = {"findings": [{"detail": d.detail} for d in config.diagnostics], "config": {}}
    steps = [u for u in undecided_inputs(doc) if "infer.py" in u.what]
    assert steps and "--set pipeline_model_parallel_size" in steps[0].decide


def test_a_name_that_is_no_module_is_not_looked_up(tmp_path: Path) -> None:
    """`-m ./train.py` or `-m pkg-name` is no dotted module name: nothing is read for it."""
    _tree(tmp_path, {"train.py": INFER})
    assert module_file("./train.py", [Root(tmp_path, "here")]) is None
    assert module_file("train", [Root(tmp_path, "here")]) == (tmp_path / "train.py", Root(tmp_path, "here"))


def test_the_document_and_header_name_the_module_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _flux_checkout(tmp_path)
    monkeypatch.chdir(tmp_path)
    doc = run_scan(ScanInputs(str(script), targets=["megatron-core==0.17.0"], torch_version="2.11.0", jobs=1))
    infer = str(tmp_path / "proj/models/flux/inference/infer.py")
    assert doc["launch"]["entry_read"] == {"script": "proj.models.flux.inference.infer", "read": infer,
                                           "module": True}
    VALIDATOR.validate(json.loads(json.dumps(doc)))  # the contract, with its new part
    assert doc["verdict"]["status"] != "clean"  # its own parser reads the flags: undecided
    assert f"entry script: -m proj.models.flux.inference.infer runs {infer}" in scan_report(doc, width=400)
