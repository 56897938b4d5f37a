"""Settings from code the reader does not see (issue 28 item 7, and its low items `export -n` and NUL).

`source FILE` of a file beside the script is read as part of the launch; a file that is not there
(verl's examples/grpo_trainer/run_qwen3_4b_grpo_vllm_1k_npu.sh, volcengine/verl commit
b178a3cd56f58b2d502255daba591e92833930a7: `source /usr/local/Ascend/ascend-toolkit/set_env.sh`; Megatron-LM's
examples/academic_paper_scripts/sc21/run_figure_11.sh, NVIDIA/Megatron-LM commit
d98e8a64ddf34856e74b24714e3bedb2f5a39553: `. \\`pwd\\`/CONFIG.sh`), `eval` of text not known statically and
`export "$X"=...` may set any variable, so the variables the verdicts read are unknown; `read` and
`printf -v` (Megatron-LM tests/functional_tests/shell_test_utils/_run_training.sh: `while IFS= read -r
ARGUMENT`) set the variables they name.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.bash.values import Symbolic
from auditor.config.launch import parse_launch, read_launch

CMD = "torchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size $PP"


def test_a_sourced_file_beside_the_script_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # launched from its own directory, where bash finds env.sh
    (tmp_path / "env.sh").write_text("export TORCH_DISTRIBUTED_DEBUG=DETAIL\nPP=4\n")
    (tmp_path / "run.sh").write_text(f"#!/bin/bash\nsource env.sh\n{CMD}\n")
    config = read_launch(tmp_path / "run.sh")
    assert config.flags["pipeline_model_parallel_size"].value == "4"
    assert config.env["TORCH_DISTRIBUTED_DEBUG"].value == "DETAIL"


@pytest.mark.parametrize("unseen", [
    "source /usr/local/Ascend/ascend-toolkit/set_env.sh",
    ". `pwd`/CONFIG.sh",
    'eval "$SETUP"',
    'X=TORCH_DISTRIBUTED_DEBUG\nexport "$X"=DETAIL',
    "export $(cat vars.env)",
    # THUDM/slime scripts/run-qwen3-4B.sh (commit 624b824a89): a path built from ${BASH_SOURCE[0]}
    'SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" &>/dev/null && pwd)"\nsource "${SCRIPT_DIR}/models/qwen3-4B.sh"',
])
def test_unseen_code_makes_the_variables_verdicts_read_unknown(unseen: str) -> None:
    config = parse_launch(f"#!/bin/bash\nexport TORCH_DISTRIBUTED_DEBUG=OFF\nPP=2\n{unseen}\n{CMD}\n", "run.sh")
    debug = config.env["TORCH_DISTRIBUTED_DEBUG"]
    assert isinstance(debug.value, Symbolic) and debug.how == "export"
    assert any(d.kind == "launch.unknown-settings" for d in config.diagnostics)


def test_a_setting_after_the_unseen_code_is_known_again() -> None:
    config = parse_launch(f"source /etc/cluster.sh\nexport TORCH_DISTRIBUTED_DEBUG=DETAIL\nPP=2\n{CMD}\n", "r.sh")
    assert config.env["TORCH_DISTRIBUTED_DEBUG"].value == "DETAIL"


@pytest.mark.parametrize("setter", ["read -r PP", "read -p 'size? ' PP", "printf -v PP '%d' 4",
                                    "mapfile -t PP < sizes.txt"])
def test_read_and_printf_set_the_variable_they_name(setter: str) -> None:
    config = parse_launch(f"PP=2\n{setter}\n{CMD}\n", "r.sh")
    assert isinstance(config.flags["pipeline_model_parallel_size"].value, Symbolic)


def test_export_n_unexports() -> None:
    config = parse_launch(f"export TORCH_DISTRIBUTED_DEBUG=DETAIL\nexport -n TORCH_DISTRIBUTED_DEBUG\nPP=2\n{CMD}\n",
                          "n.sh")
    assert config.env["TORCH_DISTRIBUTED_DEBUG"].how == "assign"  # set, but not passed on


def test_a_nul_inside_a_value_is_dropped_as_bash_drops_it(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_bytes(b"#!/bin/bash\nPP=2\nexport TORCH_DISTRIBUTED_DEBUG=DE\x00TAIL\n" + CMD.encode() + b"\n")
    config = read_launch(tmp_path / "run.sh")
    assert config.env["TORCH_DISTRIBUTED_DEBUG"].value == "DETAIL"


def test_a_nul_where_bash_checks_for_binaries_is_refused(tmp_path: Path) -> None:
    from auditor.errors import InputError

    (tmp_path / "run.sh").write_bytes(b"#!/bin/bash\nX=DE\x00TAIL\n" + CMD.encode() + b"\n")
    with pytest.raises(InputError) as caught:  # bash: "cannot execute binary file"
        read_launch(tmp_path / "run.sh")
    assert caught.value.line == 2


def test_eval_of_a_command_with_unknown_arguments_clobbers_only_what_runs_after_it() -> None:
    # Pai-Megatron-Patch run_*.sh (commit a098ca5acb): `eval ${run_cmd}` whose options hold ${pr_options}
    script = ('export TORCH_DISTRIBUTED_DEBUG=OFF\nrun_cmd="torchrun --nproc_per_node 2 pretrain_gpt.py '
              '--pipeline-model-parallel-size 2 ${pr_options}"\neval ${run_cmd}\n')
    config = parse_launch(script, "pai.sh")
    assert config.env["TORCH_DISTRIBUTED_DEBUG"].value == "OFF"
    later = parse_launch('export TORCH_DISTRIBUTED_DEBUG=OFF\neval echo ${NOTE}\nPP=2\n' + CMD + "\n", "n.sh")
    assert isinstance(later.env["TORCH_DISTRIBUTED_DEBUG"].value, Symbolic)  # ${NOTE} may hold `; export ...`


def test_eval_of_an_export_sets_the_variable() -> None:
    config = parse_launch('SETTINGS="export TORCH_DISTRIBUTED_DEBUG=DETAIL"\neval $SETTINGS\nPP=2\n' + CMD + "\n", "e.sh")
    assert config.env["TORCH_DISTRIBUTED_DEBUG"].value == "DETAIL"


def test_what_unseen_code_may_set_comes_out_in_one_order(tmp_path: Path) -> None:
    """The variables an unread `source` may set (bigcode-project/Megatron-LM
    examples/finetune_starcoderplus.slurm, commit 7c325cd34a: `source /admin/home/leandro/.bashrc`)
    are listed in the same order whatever the interpreter's string hashing: a document pasted into
    a bug report, or diffed in CI, does not change between two runs of one script."""
    import subprocess
    import sys
    probe = ("from auditor.config.launch import parse_launch\n"
             "c = parse_launch('source /etc/cluster.sh\\n" + CMD + "\\n', 'r.sh')\n"
             "print(list(c.env))\n")
    orders = {subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                             env={"PYTHONHASHSEED": str(seed), "PATH": "/usr/bin:/bin",
                                  "PYTHONPATH": str(Path(__file__).resolve().parents[2])}).stdout
              for seed in range(6)}
    assert len(orders) == 1, orders
    assert "TORCH_DISTRIBUTED_DEBUG" in orders.pop()
