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
    assert checkout_name(root) == (None, "slime")
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


def test_a_vendored_projects_dockerfile_never_places_the_outer_checkout(tmp_path: Path) -> None:
    """Review r45-scan a1: third_party/Megatron-LM/Dockerfile `COPY . /workspace/megatron` copies
    its own build context (that directory), not the outer checkout; a vendored project (its own
    setup.py, or a .gitmodules path) places nothing, not even by a clone of the outer name."""
    root = tmp_path / "outer"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text('[remote "origin"]\n\turl = https://github.com/acme/outer.git\n')
    (root / "examples").mkdir()
    (root / "examples" / "env.sh").write_text("PP=1\n")
    for vendored in ("third_party/Megatron-LM", "third_party/marked", "third_party/sub"):
        (root / vendored).mkdir(parents=True)
        (root / vendored / "Dockerfile").write_text(
            "FROM x\nCOPY . /workspace/megatron\nRUN git clone https://github.com/acme/outer.git /ws/outer\n")
    (root / "third_party" / "marked" / "setup.py").write_text("")
    (root / ".gitmodules").write_text('[submodule "s"]\n\tpath = third_party/sub\n')
    assert placements(root) == (Placement("/ws/outer", "third_party/Megatron-LM/Dockerfile:3"),)
    assert image_file("/workspace/megatron/examples/env.sh", str(root / "examples" / "run.sh")) is None
    (root / "docker").mkdir()
    (root / "docker" / "Dockerfile").write_text("FROM x\nCOPY . /workspace/megatron\n")
    placements.cache_clear()  # read once per process
    assert Placement("/workspace/megatron", "docker/Dockerfile:2") in placements(root)


def test_a_stage_copy_another_stage_and_another_owner_place_nothing(tmp_path: Path) -> None:
    """Review r45-scan a5/docker/Dockerfile: `COPY --from=IMAGE . DIR` copies that image, a later
    FROM starts without the earlier WORKDIR (`COPY . .` then has no known place), and the fork
    acme/Megatron-LM cloning NVIDIA/Megatron-LM clones another repository; a stage built FROM an
    earlier one keeps its WORKDIR."""
    root = tmp_path / "fork"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text('[core]\n\tbare = false\n[remote "origin"]\n'
                                          '\turl = git@github.com:acme/Megatron-LM.git\n')
    (root / "docker").mkdir()
    (root / "docker" / "Dockerfile").write_text(
        "FROM nvcr.io/nvidia/pytorch:24.05-py3 AS base\nWORKDIR /build\nFROM base AS wheels\n"
        "COPY --from=ghcr.io/acme/prebuilt:latest . /opt/prebuilt\nFROM nvcr.io/nvidia/pytorch:24.05-py3\n"
        "COPY . .\nRUN git clone https://github.com/NVIDIA/Megatron-LM.git /workspace/Megatron-LM\n"
        "FROM base\nCOPY . .\nRUN git clone https://github.com/ACME/megatron_lm /ws/m\n")
    assert placements(root) == (Placement("/build", "docker/Dockerfile:9"), Placement("/ws/m", "docker/Dockerfile:10"))
