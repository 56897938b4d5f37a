"""A file of ms-swift's swift/cli/ run by path is the console-script subcommand that runs it
(rules/ms-swift.toml `routes`, config/launch.py `_routed`).

TRAIN_DLC is modelscope/ms-swift@3602360a562313afbf2ef6065fdf61f271a2c5b9
examples/train/grpo/multi_node/train_dlc.sh:4-13 (shortened): `torchrun ... swift/cli/rlhf.py
--rlhf_type grpo ... --deepspeed zero3_offload`, the file `swift rlhf` runs (swift/cli/main.py
ROUTE_MAPPING 'rlhf': 'swift.cli.rlhf'): ms-swift's Hugging Face / TRL trainers, not Megatron.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from auditor import cli, rulebook

TRAIN_DLC = """\
NNODES=$WORLD_SIZE \\
NODE_RANK=$RANK \\
torchrun \\
    --nproc_per_node=8 \\
    --nnodes=2 \\
    --node_rank=${{RANK}} \\
    {script} \\
    --rlhf_type grpo \\
    --model Qwen/Qwen2.5-7B \\
    --tuner_type full \\
    --deepspeed zero3_offload
"""

RLHF = """\
if __name__ == '__main__':
    from swift.cli.utils import try_use_single_device_mode
    try_use_single_device_mode()
    from swift.pipelines import rlhf_main
    rlhf_main()
"""


def _scan(capsys, tmp_path: Path, script: str) -> dict:
    (tmp_path / script).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / script).write_text(RLHF)
    run = tmp_path / "train_dlc.sh"
    run.write_text(TRAIN_DLC.format(script=script))
    cli.main(["scan", "--config", str(run), "--format", "json"])
    return json.loads(capsys.readouterr().out)["verdict"]


def test_swift_cli_rlhf_by_path_is_swift_rlhf(capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    verdict = _scan(capsys, tmp_path, "swift/cli/rlhf.py")
    assert verdict["status"] == "not-pipeline"
    assert "`swift rlhf`" in verdict["headline"] and "Hugging Face" in verdict["headline"]


def test_megatron_export_by_path_is_megatron_export(capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    verdict = _scan(capsys, tmp_path, "swift/cli/_megatron/export.py")
    assert verdict["status"] == "not-pipeline" and "`megatron export`" in verdict["headline"]


def _route_mapping(path: Path) -> dict[str, str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.AnnAssign | ast.Assign)
                and "ROUTE_MAPPING" in ast.unparse(n.target if isinstance(n, ast.AnnAssign) else n.targets[0]))
    assert node.value is not None
    return ast.literal_eval(node.value)


def test_routes_are_the_release_s_route_mapping(release) -> None:
    """Held to ms-swift 4.3.0: swift/cli/main.py and swift/cli/_megatron/main.py ROUTE_MAPPING,
    and the console scripts `swift` and `megatron` name their cli_main."""
    root = Path(release("ms-swift==4.3.0").root)
    launchers = {x["name"]: x for x in rulebook.load("ms-swift").table("launcher")}
    assert launchers["swift"]["routes"] == _route_mapping(root / "swift/cli/main.py")
    assert launchers["megatron"]["routes"] == _route_mapping(root / "swift/cli/_megatron/main.py")
    points = next(root.glob("ms_swift-*.dist-info/entry_points.txt")).read_text(encoding="utf-8")
    assert "swift = swift.cli.main:cli_main" in points and "megatron = swift.cli._megatron.main:cli_main" in points
