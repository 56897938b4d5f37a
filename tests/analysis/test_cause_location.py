"""A DOES NOT START headline names its cause's FILE:LINE from the checkout's root (issue 25).

alibaba/ROLL@8eb27cc2dc34c4d1310b169d9b86d339004d811a examples/agentic_deepeyes/
run_agentic_pipeline.sh:5 passes `--config_name deepeyes_2gpus`, which examples/agentic_deepeyes/
lacks; scanned by its absolute path (as benchmarks/real_scripts.py does), the cause's location was
that absolute path and wrapped past the first 15 lines at 80 columns.
"""

from __future__ import annotations

from pathlib import Path

from auditor.analysis.verdict import judge


def _doc(where: str) -> dict:
    return {"sites": [{"reachable": True, "path": "entry.py", "line": 1}],
            "findings": [{"kind": "launch.config-file-missing", "severity": "error", "where": where,
                          "message": "Cannot find primary config 'deepeyes_2gpus' (no examples/agentic_deepeyes/"
                                     "deepeyes_2gpus.yaml): Hydra stops the run before any worker starts",
                          "detail": {"category": "config"}}]}


def test_a_launch_line_inside_a_checkout_is_named_from_its_root(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text("")
    script = tmp_path / "examples" / "agentic_deepeyes" / "run_agentic_pipeline.sh"
    script.parent.mkdir(parents=True)
    script.write_text("python examples/start_agentic_pipeline.py --config_name deepeyes_2gpus\n")
    head = judge(_doc(f"{script}:5")).headline
    assert head.startswith("DOES NOT START: ") and head.endswith(
        "(examples/agentic_deepeyes/run_agentic_pipeline.sh:5)."), head
    assert str(tmp_path) not in head


def test_a_file_outside_any_checkout_keeps_its_path(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("python train.py\n")
    assert judge(_doc(f"{script}:5")).headline.endswith(f"({script}:5).")
