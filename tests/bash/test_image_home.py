"""bash.image_home: only a Dockerfile of the checkout places it in the image, and only a clone of
the repository the checkout names itself counts (THUDM/slime@624b824a89 docker/Dockerfile:156
clones slime to /root/slime, and Megatron-LM to /root/Megatron-LM; docker/Dockerfile.gb10:199
`COPY . /root/slime`; alibaba/ROLL@8eb27cc2dc docker/Dockerfile.torch251.vllm:28 `COPY . .`)."""

from __future__ import annotations

from pathlib import Path

from auditor.bash.image_home import Placement, checkout_name, image_file, placements


def _checkout(tmp_path: Path, dockerfile: str | None) -> Path:
    root = tmp_path / "slime"
    (root / "scripts" / "models").mkdir(parents=True)
    (root / "setup.py").write_text('setup(name="slime")\n')
    (root / "scripts" / "models" / "m.sh").write_text("X=1\n")
    if dockerfile is not None:
        (root / "docker").mkdir()
        (root / "docker" / "Dockerfile").write_text(dockerfile)
    return root


def test_clones_of_its_own_name_and_copies_of_the_context_place_it(tmp_path: Path) -> None:
    root = _checkout(tmp_path, "FROM x\n# RUN git clone https://github.com/THUDM/slime.git /commented\n"
                               "RUN git clone https://github.com/NVIDIA/Megatron-LM.git /root/Megatron-LM && \\\n"
                               "    git clone -b main --depth 1 https://github.com/THUDM/slime.git /root/slime\n"
                               "WORKDIR /build\nCOPY --chown=1 . .\nADD . /app/slime\n")
    assert checkout_name(root) == "slime"
    assert placements(root) == (Placement("/root/slime", "docker/Dockerfile:3"), Placement("/build", "docker/Dockerfile:6"),
                                Placement("/app/slime", "docker/Dockerfile:7"))


def test_only_a_placed_tail_that_the_checkout_holds_is_read(tmp_path: Path) -> None:
    home = f"/opt/{tmp_path.name}-image"
    root = _checkout(tmp_path, f"COPY . {home}/slime\n")
    script = str(root / "scripts" / "run.sh")
    found = image_file(f"{home}/slime/scripts/models/m.sh", script)
    assert found == (str(root / "scripts" / "models" / "m.sh"), Placement(f"{home}/slime", "docker/Dockerfile:1"))
    assert image_file(f"{home}/slime/scripts/models/none.sh", script) is None  # no such file here
    assert image_file(f"{home}/other/scripts/models/m.sh", script) is None  # not where the checkout lies
    assert image_file(f"{home}/slime/../slime/scripts/models/m.sh", script) is not None
    assert image_file(f"{home}/slime/../../etc/passwd", script) is None  # out of the placement


def test_no_dockerfile_reads_nothing(tmp_path: Path) -> None:
    root = _checkout(tmp_path, None)
    assert placements(root) == ()
    assert image_file("/root/slime/scripts/models/m.sh", str(root / "scripts" / "run.sh")) is None
