"""`source REL` and `bash REL.sh` resolve as bash resolves them: against the directory the job is
launched from (this audit's working directory; after a `cd` the walk does not follow, unknown),
`source NAME` without a slash after a $PATH search; never beside the script for its own sake.

The construct: alibaba/ChatLearn scripts/fsdp_vllm/train_fsdp_vllm_qwen3_8b_grpo.sh (commit
b7af31a972eb6c420ef0b5c04ea920820d68f784), run from the checkout's root as its README says
(`bash scripts/fsdp_vllm/train_fsdp_vllm_qwen3_8b_grpo.sh`), line 8 `source scripts/base_env.sh`:
scripts/base_env.sh is relative to the launch directory, not to scripts/fsdp_vllm/.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.bash.values import Symbolic
from auditor.config.launch import read_launch

CMD = "torchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size $PP"


def _tree(root: Path, body: str) -> Path:
    (root / "scripts" / "fsdp_vllm").mkdir(parents=True)
    (root / "scripts" / "base_env.sh").write_text("export CUDA_DEVICE_MAX_CONNECTIONS=1\nPP=4\n")
    script = root / "scripts" / "fsdp_vllm" / "run.sh"
    script.write_text(f"#!/bin/bash\n{body}\n{CMD}\n")
    return script


def test_source_with_a_slash_is_read_from_the_launch_directory(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    script = _tree(tmp_path, "export CHATLEARN=$(pwd)\nsource scripts/base_env.sh")
    monkeypatch.chdir(tmp_path)
    config = read_launch(script)
    assert config.flags["pipeline_model_parallel_size"].value == "4"
    sourced = [d for d in config.diagnostics if d.kind == "launch.sourced"]
    assert sourced and str(tmp_path / "scripts" / "base_env.sh") in sourced[0].message


def test_a_file_only_beside_the_script_is_not_what_bash_sources(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Launched from elsewhere, bash finds no ./env.sh: what it would have set is unknown."""
    script = _tree(tmp_path, "export TORCH_DISTRIBUTED_DEBUG=OFF\nPP=2\nsource ./env.sh")
    (script.parent / "env.sh").write_text("PP=4\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = read_launch(script)
    assert config.flags["pipeline_model_parallel_size"].value == "2"  # env.sh's PP=4 is not read
    assert not any(d.kind == "launch.sourced" for d in config.diagnostics)
    debug = config.env["TORCH_DISTRIBUTED_DEBUG"]  # what the missing file may set is unknown
    assert isinstance(debug.value, Symbolic)
    assert any(f"launch directory {elsewhere}" in d.message for d in config.diagnostics
               if d.kind == "launch.unknown-settings")


def test_after_a_cd_a_relative_source_is_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _tree(tmp_path, "export TORCH_DISTRIBUTED_DEBUG=OFF\nPP=2\ncd /opt/somewhere\nsource scripts/base_env.sh")
    monkeypatch.chdir(tmp_path)
    config = read_launch(script)
    assert not any(d.kind == "launch.sourced" for d in config.diagnostics)
    assert isinstance(config.env["TORCH_DISTRIBUTED_DEBUG"].value, Symbolic)
    assert any("after a `cd`" in d.message for d in config.diagnostics if d.kind == "launch.unknown-settings")


def test_source_without_a_slash_searches_path_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """bash's `source NAME` (sourcepath on, the default) reads $PATH's NAME before ./NAME."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "env.sh").write_text("PP=8\n")
    script = _tree(tmp_path, f"PATH={bin_dir}:/usr/bin\nsource env.sh")
    (tmp_path / "env.sh").write_text("PP=4\n")
    monkeypatch.chdir(tmp_path)
    assert read_launch(script).flags["pipeline_model_parallel_size"].value == "8"


def test_a_script_run_by_bash_is_found_from_the_launch_directory(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """`bash scripts/entry.sh ...` (alibaba/Pai-Megatron-Patch examples/llama3, commit a098ca5acb:
    `mpirun ... bash entry.sh pretrain_llama_mcore070.py ...`) opens the path from the launch
    directory."""
    script = _tree(tmp_path, "PP=2")
    script.write_text("#!/bin/bash\nbash scripts/entry.sh pretrain_gpt.py --pipeline-model-parallel-size 4\n")
    (tmp_path / "scripts" / "entry.sh").write_text('#!/bin/bash\ntorchrun --nproc_per_node 8 "$@"\n')
    monkeypatch.chdir(tmp_path)
    assert read_launch(script).flags["pipeline_model_parallel_size"].value == "4"
