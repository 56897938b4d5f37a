"""A container command's program is the word after the image, run through the image's
ENTRYPOINT where it has one (docker "ENTRYPOINT": arguments to `docker run <image>` are appended
to an exec-form entrypoint). `docker run img train.py` was read as `python train.py` on one
process (the `.py` rule of `uv run`, applied to every runner: review r40-nolaunch, minor), so a
file that trains nothing gave NOT A PIPELINE RUN (a training script, a one-rank run), where what
runs the script (the image's ENTRYPOINT, or the script's own #! line) is not read here. Only a runner the rules say runs a script with python (`python_scripts`: `uv run x.py`,
`coverage run x.py`) gets `python`; `docker run`/`docker exec` leave it undecided, naming the step.
The `docker run [OPTIONS] IMAGE PROGRAM ...` form: NVIDIA/NeMo 8cfedd7203
docs/update_docs_docker.sh:2 (`docker run --rm -v $PWD:/workspace python:3.10 /bin/bash -c ...`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.config.launch import CommandNotFollowed, parse_launch

PREP = "import json\n\nprint(json.dumps({'rows': 0}))\n"


@pytest.mark.parametrize("text", [
    "docker run --rm --gpus all -v $PWD:/ws -w /ws img prep.py --out /ws/data\n",
    "docker run --rm --gpus all -v $PWD:/ws -w /ws img ./prep.py --out /ws/data\n",
    "docker exec -w /ws trainer prep.py --out /ws/data\n",
])
def test_a_script_a_container_runs_rests_on_its_entrypoint(tmp_path: Path, text: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prep.py").write_text(PREP)
    (tmp_path / "run.sh").write_text(text)
    with pytest.raises(CommandNotFollowed) as caught:
        parse_launch(text, str(tmp_path / "run.sh"))
    assert "prep.py" in str(caught.value) and "#! line" in str(caught.value)


def test_the_program_after_the_image_is_the_containers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prep.py").write_text(PREP)
    text = "docker run --rm -v $PWD:/ws -w /ws img python prep.py --out /ws/data\n"
    (tmp_path / "run.sh").write_text(text)
    assert parse_launch(text, str(tmp_path / "run.sh")).launcher == "python prep.py"


@pytest.mark.parametrize("runner", ["uv run", "coverage run"])
def test_a_runner_that_runs_scripts_with_python_still_does(tmp_path: Path, runner: str) -> None:
    (tmp_path / "prep.py").write_text(PREP)
    text = f"{runner} prep.py --out data\n"
    (tmp_path / "run.sh").write_text(text)
    assert parse_launch(text, str(tmp_path / "run.sh")).launcher == "python prep.py"
