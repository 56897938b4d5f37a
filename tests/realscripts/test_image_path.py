"""An absolute path a script opens that is not on this machine but lies where the checkout's own
Dockerfile puts the checkout in its image is read as the checkout's file, said in one INFO line;
any other such path stays unread (it may set any variable).

The construct: THUDM/slime examples/retool/retool_qwen3_4b_sft.sh (commit
624b824a898ab0ec1fcb4d373004c7f3852bf515) line 27 `source "/root/slime/scripts/models/qwen3-4B.sh"`,
which sets the MODEL_ARGS array the ray command expands (:117); slime's docker/Dockerfile:156
`RUN git clone https://github.com/THUDM/slime.git /root/slime`, docker/Dockerfile.gb10:199
`COPY . /root/slime`; the same Dockerfile clones Megatron-LM to /root/Megatron-LM (another
repository: never read as slime's files).
"""

from __future__ import annotations

from pathlib import Path

from auditor.config.launch import read_launch

CMD = "torchrun --nproc_per_node 8 pretrain_gpt.py ${MODEL_ARGS[@]} --pipeline-model-parallel-size 1"
MODEL = "MODEL_ARGS=(\n   --swiglu\n   --num-layers 36\n)\n"


def _slime(tmp_path: Path, dockerfile: str, body: str) -> tuple[Path, str]:
    """A slime-like checkout whose image home (absent here) is /opt/<unique>/slime."""
    home = f"/opt/{tmp_path.name}-image/slime"  # HOME; its sibling Megatron-LM is another clone
    assert not Path(home).exists()
    root = tmp_path / "slime"
    (root / "scripts" / "models").mkdir(parents=True)
    (root / "examples" / "retool").mkdir(parents=True)
    (root / "docker").mkdir()
    (root / "setup.py").write_text('from setuptools import setup\nsetup(\n    name="slime",\n)\n')
    (root / "scripts" / "models" / "qwen3-4B.sh").write_text(MODEL)
    (root / "docker" / "Dockerfile").write_text(dockerfile.replace("HOME", home).replace("OTHER", home[:-5]))
    script = root / "examples" / "retool" / "run.sh"
    script.write_text("#!/bin/bash\nset -ex\n"
                      + body.replace("HOME", home).replace("OTHER", home[:-5]) + f"\n{CMD}\n")
    return script, home


CLONE = ("FROM base\nRUN git clone https://github.com/NVIDIA/Megatron-LM.git OTHERMegatron-LM\n"
         "RUN git clone https://github.com/THUDM/slime.git HOME && \\\n    cd HOME && pip install -e .\n")


def test_a_sourced_image_path_is_the_checkouts_file(tmp_path: Path) -> None:
    """The Megatron-LM clone's path is another repository's: its file sharing the checkout's tail
    stays unread and may set anything, so TORCH_DISTRIBUTED_DEBUG is exported after it."""
    script, home = _slime(tmp_path, CLONE, 'source "OTHERMegatron-LM/scripts/models/qwen3-4B.sh"\n'
                          'export TORCH_DISTRIBUTED_DEBUG=OFF\nsource "HOME/scripts/models/qwen3-4B.sh"')
    config = read_launch(script)
    assert config.flags["num_layers"].value == "36"  # MODEL_ARGS flows into the command
    assert config.env["TORCH_DISTRIBUTED_DEBUG"].value == "OFF"  # nothing unread after the export
    unread = [d.message for d in config.diagnostics if d.kind == "launch.unknown-settings"]
    assert len(unread) == 1 and "Megatron-LM/scripts/models/qwen3-4B.sh" in unread[0]
    said = [d for d in config.diagnostics if d.kind == "launch.image-path"]
    assert len(said) == 1 and "\n" not in said[0].message
    here = str(script.parents[2] / "scripts" / "models" / "qwen3-4B.sh")
    assert f"`{home}/scripts/models/qwen3-4B.sh`" in said[0].message and here in said[0].message
    assert "docker/Dockerfile:3" in said[0].message


def test_a_copy_of_the_build_context_places_the_checkout(tmp_path: Path) -> None:
    script, _ = _slime(tmp_path, "FROM base\nWORKDIR HOME\nCOPY . .\n", ". HOME/scripts/models/qwen3-4B.sh")
    assert read_launch(script).flags["num_layers"].value == "36"


def test_a_script_run_by_its_image_path_is_read(tmp_path: Path) -> None:
    """`bash /root/slime/...` runs the checkout's script, as `source` reads it."""
    script, home = _slime(tmp_path, CLONE, "bash HOME/scripts/train.sh")
    script.write_text(f"#!/bin/bash\nbash {home}/scripts/train.sh\n")
    (script.parents[2] / "scripts" / "train.sh").write_text(f"#!/bin/bash\n{MODEL}{CMD}\n")
    config = read_launch(script)
    assert config.flags["num_layers"].value == "36"
    assert any(d.kind == "launch.image-path" for d in config.diagnostics)


def test_a_vendored_projects_copy_does_not_place_the_checkout(tmp_path: Path) -> None:
    """Review r45-scan a1: the outer checkout's script sources `/workspace/megatron/examples/env.sh`
    (PP), which only third_party/Megatron-LM/Dockerfile's `COPY . /workspace/megatron` names -- its
    build context is that vendored directory, not the checkout, so the file stays unread (it was read
    as the outer checkout's examples/env.sh, PP=1, a false CLEAN)."""
    home = f"/opt/{tmp_path.name}-image/megatron"
    assert not Path(home).exists()
    root = tmp_path / "outer"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text('[remote "origin"]\n\turl = https://github.com/acme/outer.git\n')
    (root / "examples").mkdir()
    (root / "examples" / "env.sh").write_text("PP=1\n")
    vendored = root / "third_party" / "Megatron-LM"
    (vendored / "examples").mkdir(parents=True)
    (vendored / "examples" / "env.sh").write_text("PP=4\n")
    (vendored / "Dockerfile").write_text(f"FROM nvcr.io/nvidia/pytorch:24.05-py3\nCOPY . {home}\nWORKDIR {home}\n")
    script = root / "examples" / "run.sh"
    script.write_text(f"#!/bin/bash\nsource {home}/examples/env.sh\ntorchrun --nproc_per_node 8 "
                      f"{home}/pretrain_gpt.py --pipeline-model-parallel-size $PP --num-layers 8\n")
    config = read_launch(script)
    assert not any(d.kind == "launch.image-path" for d in config.diagnostics)
    assert any(d.kind == "launch.unknown-settings" and f"{home}/examples/env.sh" in d.message for d in config.diagnostics)
    assert config.flags["pipeline_model_parallel_size"].value != "1"
