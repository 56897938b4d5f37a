"""A local module that falls back to its siblings by bare name when its relative import fails
is walked through them (auditor/analysis/schedule_reach.py `_sibling_sources`): written after
microsoft/DeepSpeedExamples@83757d9c93 benchmarks/inference/mii/src/client.py:22-31
(`try: from .postprocess_results import ...` / `except ImportError: from postprocess_results
import ...`), a package module that also runs as a script from its own folder. Before, the
fallback's bare name was code not read and the walk was not certain: the megatron-core guess
stayed, and the entry read CLEAN with 0 sites. A bare import outside such a handler is not
taken for the sibling (an installed package of that name may be what runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli
from auditor.analysis.schedule_reach import KIND

SH = "#!/bin/bash\n# megatron-core==0.19.2 torch==2.11.0\ntorchrun --nproc_per_node 2 --nnodes 1 convert.py --load $1\n"
CONVERT = """import argparse
import torch
from megatron.core import parallel_state
from src.client import save


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--load")
    args = parser.parse_args()
    save(torch.load(args.load))


if __name__ == "__main__":
    main()
"""
CLIENT = """import torch
try:
    from .helpers import write
except ImportError:
    from helpers import write


def save(state):
    write(state)
"""
HELPERS = "import os\n\n\ndef write(state):\n    os.makedirs('out', exist_ok=True)\n"


def _tree(tmp_path: Path, client: str) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "__init__.py").write_text("")
    (tmp_path / "src" / "client.py").write_text(client)
    (tmp_path / "src" / "helpers.py").write_text(HELPERS)
    (tmp_path / "convert.py").write_text(CONVERT)
    script = tmp_path / "run.sh"
    script.write_text(SH)
    return script


def _scan(capsys, script: Path) -> dict:
    cli.main(["scan", "--config", str(script), "--format", "json"])
    doc: dict = json.loads(capsys.readouterr().out)
    return doc


def test_a_fallback_to_a_sibling_is_walked(capsys, tmp_path):
    doc = _scan(capsys, _tree(tmp_path, CLIENT))
    assert doc["verdict"]["status"] == "not-pipeline", doc["verdict"]["headline"]
    assert any(f["kind"] == KIND for f in doc["findings"])


@pytest.mark.parametrize("client", [
    # a bare import with no failed relative import before it: perhaps an installed `helpers`
    "import torch\nfrom helpers import write\n\n\ndef save(state):\n    write(state)\n",
    # the same fallback, but the sibling hands on to code not read
    CLIENT.replace("def save(state):\n    write(state)", "import accelerate\n\n\ndef save(state):\n"
                   "    accelerate.Accelerator().prepare(state)\n    write(state)"),
])
def test_no_fallback_or_code_not_read_keeps_the_analysis(capsys, tmp_path, client):
    doc = _scan(capsys, _tree(tmp_path, client))
    assert doc["verdict"]["status"] != "not-pipeline", doc["verdict"]["headline"]


def test_a_fallback_is_matched_by_its_dotted_handler(capsys, tmp_path):
    doc = _scan(capsys, _tree(tmp_path, CLIENT.replace("except ImportError", "except builtins.ImportError")
                              .replace("import torch\n", "import builtins\nimport torch\n")))
    assert doc["verdict"]["status"] == "not-pipeline", doc["verdict"]["headline"]


@pytest.mark.parametrize("convert,client", [
    # the entry, from another folder, imports the same bare name: Python finds it on its own path
    (CONVERT.replace("from src.client import save\n", "from src.client import save\nimport helpers\n")
     .replace("    save(torch.load(args.load))", "    state = torch.load(args.load)\n    save(state)\n"
              "    helpers.train(state)"), CLIENT),
    # the try body imports another name relatively (src/other.py, beside src/helpers.py): the
    # bare import is no fallback to a sibling
    (CONVERT, CLIENT.replace("from .helpers import write", "from .other import write")
     .replace("import torch\n", "import torch\nfrom . import helpers\n")),
], ids=["imported-elsewhere", "other-relative-name"])
def test_a_bare_name_that_is_no_siblings_fallback_is_not_read(capsys, tmp_path, convert, client):
    script = _tree(tmp_path, client)
    (tmp_path / "convert.py").write_text(convert)
    (tmp_path / "src" / "helpers.py").write_text(HELPERS + "\n\ndef train(state):\n    write(state)\n")
    (tmp_path / "src" / "other.py").write_text(HELPERS)
    doc = _scan(capsys, script)
    assert doc["verdict"]["status"] != "not-pipeline", doc["verdict"]["headline"]
