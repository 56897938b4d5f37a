"""`read` from a here-document, as bash reads it (issue 22 item 4, dev10).

The shape is NVIDIA-NeMo/Megatron-Bridge examples/models/stepfun/step35/slurm_pretrain.sh (commit
067f987df03b8355b03192d88d70f1709fedf51a, :164-177, :186-194): `read -r -d '' INNER_SCRIPT
<<'EOF' || true` holds the per-task script, which `srun ... bash -c "export ...; ${INNER_SCRIPT}"`
runs. Each value below is also what bash itself assigns (the case run by bash, the variable
printed): the body of a quoted delimiter unexpanded, an unquoted one expanded, IFS trimming, the
backslashes of a `read` without -r, and the exit status 1 of `-d ''` at the end of its input,
which ends a script under `set -e`.
"""

from __future__ import annotations

import subprocess

import pytest

from auditor.config.launch import ScriptExits, parse_launch

CASES = {  # name: script text that sets X
    "raw-nul": "read -r -d '' X <<'EOF' || true\n  first line \\\n  second $HOME\t\n\nEOF\n",
    "no-r": "read -d '' X <<'EOF' || true\n  first line \\\n  second \\x\nEOF\n",
    "ifs-empty": "IFS= read -r -d '' X <<'EOF' || true\n  keep  \nEOF\n",
    "unquoted": "Y=val\nread -r -d '' X <<EOF || true\n a $Y \\$Y \"q\" \\\"q\\\" $(( 2 + 3 ))\nEOF\n",
    "one-line": "read -r X <<'EOF'\n  /data/one  path  \nsecond\nEOF\n",
    "two-names": "read -r -d '' A X <<'EOF' || true\n one two\nthree\nEOF\n",
    # a non-blank IFS (h30-review's differential against bash): one name takes the whole line;
    # the last name drops one trailing IFS character where the rest is one field
    "ifs-comma-one-name": "IFS=, read -r X <<< \"2,4\"\n",
    "ifs-comma-trailing": "IFS=, read -r A X <<< \"a,b,\"\n",
    "ifs-comma-rest": "IFS=, read -r A X <<< \"a,b,c,\"\n",
    "ifs-comma-one-trailing": "IFS=, read -r X <<< \"a,\"\n",
}


def _bash_value(text: str) -> str:
    proc = subprocess.run(["bash", "-c", text + "printf '%s' \"$X\"\n"], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "HOME": "/root"}, timeout=30)
    return proc.stdout


@pytest.mark.parametrize("name", sorted(CASES))
def test_read_assigns_what_bash_assigns(name: str) -> None:
    text = "#!/bin/bash\n" + CASES[name]
    config = parse_launch(text + 'torchrun pretrain_gpt.py --data-path "$X"\n', "run.sh",
                          environ={"HOME": "/root"})
    assert config.flags["data_path"].value == _bash_value(text)


def test_read_nul_at_the_end_of_its_input_ends_a_set_e_script() -> None:
    text = "#!/bin/bash\nset -e\nread -r -d '' X <<'EOF'\nx\nEOF\n"
    assert _bash_value(text) == ""  # bash stops at the read: nothing printed
    with pytest.raises(ScriptExits) as stopped:
        parse_launch(text + "torchrun pretrain_gpt.py\n", "run.sh")
    assert "line 3" in stopped.value.what and "`set -e` (line 2)" in stopped.value.what


INNER = """#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
set -euo pipefail
MEGATRON_PATH=${MEGATRON_PATH:-/opt/Megatron-LM}
OVERRIDES="--pipeline-model-parallel-size 8 --tensor-model-parallel-size 1"
read -r -d '' INNER_SCRIPT <<'EOF' || true
set -euo pipefail
export RANK=${SLURM_PROCID}
cd "${MEGATRON_PATH}"
python pretrain_gpt.py \\
    --num-layers 48 \\
    ${OVERRIDES}
EOF
srun --mpi=pmix --nodes=2 --ntasks-per-node=8 \\
    bash -c "export OVERRIDES=\\"${OVERRIDES}\\"; export MEGATRON_PATH=\\"${MEGATRON_PATH}\\"; ${INNER_SCRIPT}"
"""


def test_the_script_read_from_a_heredoc_is_followed_into_bash_c() -> None:
    config = parse_launch(INNER, "job.sh")
    assert config.launcher == "srun pretrain_gpt.py"
    assert config.flags["pipeline_model_parallel_size"].value == "8"
    assert config.flags["num_layers"].value == "48"
    assert config.world_size == 16


def test_a_command_read_with_an_unknown_part_keeps_its_known_words() -> None:
    # `read -r -d '' cmd <<EOF` holding the whole command line, run as `$cmd`: a value the caller
    # gives ($EXTRA) leaves only its own part unknown
    text = ("#!/bin/bash\nPP=4\nread -r -d '' CMD <<EOF || true\n"
            "  torchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size ${PP} ${EXTRA}\nEOF\n$CMD\n")
    config = parse_launch(text, "run.sh")
    assert config.launcher == "torchrun pretrain_gpt.py"
    assert config.flags["pipeline_model_parallel_size"].value == "4"


def test_read_nul_ends_a_set_e_script_whatever_its_text() -> None:
    text = "#!/bin/bash\nset -e\nread -r -d '' CMD <<EOF\ntorchrun pretrain_gpt.py ${EXTRA}\nEOF\n"
    assert _bash_value(text) == ""
    with pytest.raises(ScriptExits):
        parse_launch(text + "torchrun pretrain_gpt.py\n", "run.sh")
