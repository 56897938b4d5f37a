"""A script that starts no training process is NOT A PIPELINE RUN, not "give --command" (turn 20,
h40-nolaunch): every command it runs is known and the rules say none can train.

- A documentation build: NVIDIA/NeMo at commit 8cfedd7203462cb251a914e700e5605444277561,
  docs/update_docs_docker.sh, `cd ../` then `docker run --rm -v $PWD:/workspace python:3.10
  /bin/bash -c "cd /workspace && pip install -r ... && cd docs/ && rm -rf build && make clean &&
  make html"` and two `echo` lines naming `python3 -m http.server` (text, no command).
- A CI image build: NVIDIA/Megatron-LM at commit d98e8a64ddf34856e74b24714e3bedb2f5a39553,
  .gitlab/scripts/build.sh: `eval "IMAGE=\\$$IMAGE"` (:5, an indirect assignment), a container
  started with `docker run -d ... python:3.12-slim bash -c 'sleep infinity'`, `docker exec NAME
  bash -c '... python tests/.../download_unit_tests_dataset.py ...'` (:8-16; the script imports
  click and requests), then `docker build` (:62-75).
Negatives: `docker run IMAGE torchrun ...` is followed as the torchrun command; a `python x.py`
whose x.py joins a process group is no "no launch"; an unknown program (`./run_all`), `$CMD`,
`make train` (a recipe not read) and `docker run IMAGE` with no command stay undecided.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.config.launch import CommandNotFollowed, NotAPipelineRun, parse_launch
from auditor.config.pyenv import locate

DOCS = """cd ../
docker run --rm -v $PWD:/workspace python:3.10 /bin/bash -c "cd /workspace && \\
pip install -r requirements/requirements_docs.txt && cd docs/ && rm -rf build && make clean && make html"
echo "To start web server just run in docs directory:"
echo "python3 -m http.server 8000 --directory ./build/html/"
"""

CI = """#! /bin/bash

set -x
env
eval "IMAGE=\\$$IMAGE"

docker run -d --name download_test_data -w /workdir/ python:3.12-slim bash -c 'sleep infinity'
docker cp tests/. download_test_data:/workdir/tests
docker exec download_test_data bash -c '
    ls -al /workdir/
    pip install --no-cache-dir click requests
    python tests/fetch_data.py --assets-dir ./assets
'
docker cp download_test_data:/workdir/assets ./
docker rm -f download_test_data
echo $(git rev-parse HEAD)
DOCKER_BUILDKIT=1 docker build --target $STAGE -f docker/$FILE -t ${IMAGE}:${CI_PIPELINE_ID} --push .
"""

FETCH = """import os
import click
import requests


@click.command()
@click.option("--assets-dir")
def main(assets_dir):
    os.makedirs(assets_dir, exist_ok=True)
    with open(os.path.join(assets_dir, "data.bin"), "wb") as f:
        f.write(requests.get("https://example.invalid/data.bin").content)


if __name__ == "__main__":
    main()
"""


def _not_pipeline(text: str, script: Path) -> str:
    script.write_text(text)
    with pytest.raises(NotAPipelineRun) as caught:
        parse_launch(text, str(script))
    return caught.value.what


def test_a_docs_build_in_a_container_starts_no_training_process(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    what = _not_pipeline(DOCS, tmp_path / "docs" / "update_docs_docker.sh")
    assert "starts no training process" in what
    assert "`make html`" in what and "`docker run`" in what and "http.server" not in what


def test_a_ci_image_build_with_an_indirect_eval_of_an_unknown_name_stays_undecided(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`eval "IMAGE=\\$$IMAGE"` with IMAGE from the CI environment: bash runs `IMAGE=$VALUE`, and a
    value `(torchrun ...)` makes that `IMAGE=$(torchrun ...)`: the eval is code not read (review
    r40-nolaunch 4)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "fetch_data.py").write_text(FETCH)
    (tmp_path / ".gitlab").mkdir()
    script = tmp_path / ".gitlab" / "build.sh"
    script.write_text(CI)
    with pytest.raises(CommandNotFollowed) as caught:
        parse_launch(CI, str(script))
    assert "line 5" in str(caught.value)


def test_an_indirect_eval_of_a_known_name_is_an_assignment(tmp_path: Path) -> None:
    text = 'NAME=CI_IMAGE\neval "IMAGE=\\$$NAME"\ndocker build -t $IMAGE .\n'
    assert "`docker build`" in _not_pipeline(text, tmp_path / "b.sh")


def test_only_inert_commands_name_what_runs(tmp_path: Path) -> None:
    what = _not_pipeline("docker build -t img .\ndocker push img\npip install -r req.txt\n", tmp_path / "b.sh")
    assert "`docker build`" in what and "`docker push`" in what and "`pip`" in what


def test_docker_run_of_a_launcher_is_the_training_command(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import torch\n")
    text = "docker run --rm --gpus all -v $PWD:/w -w /w nvcr.io/nvidia/pytorch:24.01-py3 torchrun --nproc_per_node 8 train.py\n"
    (tmp_path / "run.sh").write_text(text)
    config = parse_launch(text, str(tmp_path / "run.sh"))
    assert config.launcher.startswith("torchrun") and config.nproc_per_node == 8
    assert config.wrapper[:2] == ["docker", "run"]


def test_a_launcher_in_a_containers_shell_runs_where_the_image_puts_it(tmp_path: Path) -> None:
    text = 'docker run img sh -c "pip install x && torchrun train.py"\n'
    (tmp_path / "run.sh").write_text(text)
    config = parse_launch(text, str(tmp_path / "run.sh"))
    assert config.launcher == "torchrun train.py" and config.workdir is None  # the image's WORKDIR


def test_a_python_tool_that_joins_a_process_group_is_no_inert_run(tmp_path: Path) -> None:
    (tmp_path / "x.py").write_text(
        "import torch.distributed as dist\n"
        "from megatron.core.pipeline_parallel.schedules import get_forward_backward_func\n"
        "dist.init_process_group('nccl', init_method='tcp://h:1', rank=0, world_size=2)\n"
        "get_forward_backward_func()\n")
    text = "pip install -r req.txt\npython x.py\n"
    (tmp_path / "run.sh").write_text(text)
    config = parse_launch(text, str(tmp_path / "run.sh"))  # the run is read, not "no training process"
    assert config.launcher == "python x.py" and config.nproc_per_node != 1


@pytest.mark.parametrize("text", [
    "pip install -r req.txt\n./run_all\n",  # a program no rules name
    "pip install -r req.txt\n$CMD\n",  # a command not known statically
    "make clean\nmake train\n",  # a make target whose recipe is not read
    "docker run --rm nvcr.io/nvidia/nemo:24.01\n",  # the image's own command
    "docker run --rm --entrypoint torchrun img train.py\n",  # an entrypoint replacing the program
    'eval "IMAGE=\\$$IMAGE; $POST"\n',  # more than one variable's name: not an assignment alone
])
def test_what_may_train_stays_undecided(tmp_path: Path, text: str) -> None:
    (tmp_path / "run.sh").write_text(text)
    with pytest.raises(CommandNotFollowed):
        parse_launch(text, str(tmp_path / "run.sh"))


# Review r40-nolaunch (h40-nolaunchfix). A shell that reads its commands from a pipe or a file
# (`curl -sSL URL | bash`, as install scripts are run) runs commands not read here.
@pytest.mark.parametrize("text", [
    "pip install -r req.txt\ncat <<EOF | bash\ntorchrun --nproc_per_node 8 train.py\nEOF\n",
    'pip install -r req.txt\necho "torchrun --nproc_per_node 8 train.py" | bash\n',
    'printf "%s\\n" "torchrun --nproc_per_node 8 train.py" | sh\n',
    "pip install -r req.txt\nbash < run_train.sh\n",
    "curl -sSL https://example.invalid/run.sh | bash\n",
])
def test_a_shell_reading_commands_from_stdin_is_not_followed(tmp_path: Path, text: str) -> None:
    (tmp_path / "run.sh").write_text(text)
    with pytest.raises(CommandNotFollowed) as caught:
        parse_launch(text, str(tmp_path / "run.sh"))
    assert "reads its commands from stdin" in str(caught.value)


# Review r40-nolaunch 2: programs the rules say train nothing that run a command string after all.
@pytest.mark.parametrize("text", [
    'trap "torchrun --nproc_per_node 8 train.py" EXIT\npip install -r req.txt\n',
    "git bisect start HEAD v1\ngit bisect run torchrun --nproc_per_node 8 train.py\n",
    'git submodule foreach "torchrun --nproc_per_node 8 train.py"\n',
    'awk "BEGIN { system(\\"torchrun --nproc_per_node 8 train.py\\") }"\n',
    'tar -xf d.tar --to-command="torchrun train.py"\n',
    'make html SPHINXBUILD="torchrun --nproc_per_node 8 train.py"\n',
    "make html train\n",
    "cleanup() { torchrun --nproc_per_node 8 train.py; }\ntrap cleanup EXIT\npip install x\n",
])
def test_an_inert_program_running_a_command_string_is_not_followed(tmp_path: Path, text: str) -> None:
    (tmp_path / "run.sh").write_text(text)
    with pytest.raises(CommandNotFollowed):
        parse_launch(text, str(tmp_path / "run.sh"))


@pytest.mark.parametrize("text", [
    "trap - EXIT\ntrap '' INT\npip install x\n",  # a reset, an ignored signal
    'trap "rm -rf /tmp/x" EXIT\npip install x\n',  # a command the rules say trains nothing
    "awk '{print $1}' f.txt\nmake clean html\n",
])
def test_inert_command_strings_still_run_nothing(tmp_path: Path, text: str) -> None:
    assert "starts no training process" in _not_pipeline(text, tmp_path / "run.sh")


# Review r40-nolaunch 3: a relative entry in a container is the container's file; the one beside
# the script is read only where a mount maps its folder to the container's working directory.
INERT = "import torch\nprint(torch.cuda.device_count())\n"


@pytest.mark.parametrize("text", [
    "docker run --rm --gpus all -v /data/code:/workspace -w /workspace img torchrun --nproc_per_node 8 train.py\n",
    "docker run --rm --gpus all -w /opt/app img torchrun --nproc_per_node 8 train.py\n",
    'docker run --rm img bash -c "set -e; cd /opt/app && torchrun --nproc_per_node 8 train.py"\n',
    "docker exec box torchrun --nproc_per_node 8 train.py\n",
    "docker run --rm img python train.py\n",
])
def test_a_relative_entry_in_a_container_is_not_the_file_here(tmp_path: Path, text: str) -> None:
    (tmp_path / "train.py").write_text(INERT)
    (tmp_path / "run.sh").write_text(text)
    try:
        config = parse_launch(text, str(tmp_path / "run.sh"))
    except CommandNotFollowed as caught:
        assert "not read" in str(caught) or "no mount" in str(caught)
        return
    assert locate(config)[0] is None, config.script  # not judged from tmp_path/train.py
    assert not any(d.kind == "launch.not-pipeline" for d in config.diagnostics)


def test_a_mounted_working_directory_is_the_folder_here(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(INERT)
    text = f"docker run --rm -v {tmp_path}:/workspace -w /workspace img torchrun --nproc_per_node 8 train.py\n"
    (tmp_path / "run.sh").write_text(text)
    config = parse_launch(text, str(tmp_path / "run.sh"))
    assert config.script == str(tmp_path / "train.py")
