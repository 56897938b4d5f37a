"""An inference-serving benchmark built on DeepSpeed-MII that prints its results with tabulate
builds no pipeline (rules/stacks.toml [no_pipeline] `mii`, `tabulate`): written after
microsoft/DeepSpeedExamples@83757d9c93 benchmarks/inference/mii (run_example.sh runs
`python ./run_benchmark.py --tp_size 1 --num_replicas 1 ...`; src/server.py:63-79 `mii.serve(...,
tensor_parallel=..., replica_num=...)` and `mii.client(...).terminate_server()`;
src/postprocess_results.py:10 `from tabulate import tabulate`). MII's config has a
tensor-parallel size and no pipeline one (microsoft/DeepSpeed-MII mii/config.py `tensor_parallel`).
Before, either package was one no rules file names: the run was an unknown stack, not decided."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli

RUN = "python ./run_benchmark.py --model meta-llama/Llama-2-7b-hf --tp_size 1 --num_replicas 1\n"
BENCHMARK = """import argparse
from src.server import start_server, stop_server
from src.report import show


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model")
    parser.add_argument("--tp_size", type=int)
    parser.add_argument("--num_replicas", type=int)
    args = parser.parse_args()
    start_server(args)
    show([[args.model, args.tp_size]])
    stop_server(args)


if __name__ == "__main__":
    main()
"""
SERVER = """import mii


def start_server(args):
    mii.serve(args.model, deployment_name="bench", tensor_parallel=args.tp_size,
              replica_num=args.num_replicas)


def stop_server(args):
    mii.client("bench").terminate_server()
"""
REPORT = """from tabulate import tabulate


def show(rows):
    print(tabulate(rows, headers=["model", "tp"]))
"""


def _scan(capsys: pytest.CaptureFixture[str], root: Path, server: str, report: str) -> dict:
    (root / "src").mkdir()
    (root / "src" / "__init__.py").write_text("")
    (root / "src" / "server.py").write_text(server)
    (root / "src" / "report.py").write_text(report)
    (root / "run_benchmark.py").write_text(BENCHMARK)
    (root / "run.sh").write_text(RUN)
    cli.main(["scan", "--config", str(root / "run.sh"), "--format", "json"])
    doc: dict = json.loads(capsys.readouterr().out)
    return doc


@pytest.mark.parametrize("server,report", [(SERVER, REPORT), (SERVER, "def show(rows):\n    print(rows)\n"),
                                           ("def start_server(args):\n    pass\n\n\n"
                                            "def stop_server(args):\n    pass\n", REPORT)],
                         ids=["both", "mii", "tabulate"])
def test_an_mii_server_benchmark_is_not_a_pipeline_run(capsys, tmp_path, server, report) -> None:
    doc = _scan(capsys, tmp_path, server, report)
    assert doc["verdict"]["status"] == "not-pipeline", doc["verdict"]["headline"]
