"""A torch release rules/torch.toml does not list (2.10.1, 2.11.1, 2.12.3: patches between the
listed ones) was judged by the rules' ranges without a word: the header read "torch 2.10.1" as
if that release had been checked. Now the header, the headline and the document's torch basis
(`by_range`) say it is unlisted and how its range judges it, the same whichever way the script
or the user states it (--torch, a `# torch==` comment, a `pip install torch==` line, an NGC
image's build: one place, config.torch_version); a release outside what the ranges reach stays
unknown, naming --torch X.Y.Z.

The script is an ms-swift Megatron run in the shape of modelscope/ms-swift
examples/megatron/sft.sh @ 3602360a5 (`megatron sft ... --pipeline_model_parallel_size`), with
TORCH_DISTRIBUTED_DEBUG=DETAIL, under which torch 2.7-2.10 run batch_isend_irecv op by op
(rules/torch.toml torch.detail-unbatches) and 2.11 on coalesce it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from auditor.config import torch_version
from auditor.config.derive import derive
from auditor.config.launch import parse_launch
from auditor.config.torch_version import resolve

ROOT = Path(__file__).resolve().parents[2]
STACK = {"megatron-core": "0.17.0", "ms-swift": "4.3.0", "mcore-bridge": "1.4.1"}
RUN = """\
export TORCH_DISTRIBUTED_DEBUG=DETAIL
NPROC_PER_NODE=8 NNODES=1 megatron sft \\
    --model zai-org/GLM-4.5-Air \\
    --pipeline_model_parallel_size 4 \\
    --tensor_model_parallel_size 2
"""
BY_RANGE = "not a release the rules list; judged as {}.x by range >= {}, < {}"


class _WithImage:
    """rules/torch.toml as read, plus one [[container_image]] whose build is `torch`."""

    def __init__(self, real: Any, torch: str) -> None:
        self.real, self.torch = real, torch

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def table(self, name: str) -> list[dict[str, Any]]:
        extra = [{"image": "nvcr.io/nvidia/pytorch", "tag": "99.01", "torch": self.torch}]
        return list(self.real.table(name)) + (extra if name == "container_image" else [])


def stated_as(how: str, version: str, monkeypatch: pytest.MonkeyPatch):
    """The run's torch basis with `version` stated `how`."""
    if how == "image":
        load = torch_version.files.load
        monkeypatch.setattr(torch_version.files, "load",
                            lambda name, *a, **k: _WithImage(load(name, *a, **k), version))
        text = RUN.replace("NPROC_PER_NODE=8", "srun --container-image=nvcr.io/nvidia/pytorch:99.01-py3")
    else:
        text = {"--torch": RUN, "comment": f"# torch=={version}\n" + RUN,
                "pip": f"pip install torch=={version}+cu128\n" + RUN}[how]
    launch = parse_launch(text, "run.sh")
    return resolve(version if how == "--torch" else None, launch), launch


@pytest.mark.parametrize("how", ["--torch", "comment", "pip", "image"])
@pytest.mark.parametrize("version, line, coalesces", [("2.10.1", "2.10", False),
                                                       ("2.11.1", "2.11", True),
                                                       ("2.12.3", "2.12", True)])
def test_an_unlisted_patch_is_judged_by_range_and_says_so(how, version, line, coalesces, monkeypatch):
    basis, launch = stated_as(how, version, monkeypatch)
    major, minor = line.split(".")
    words = BY_RANGE.format(line, line, f"{major}.{int(minor) + 1}")
    assert basis.by_range == words and basis.releases == (version,)
    assert words in basis.origin and any(words in n for n in basis.notes)
    config = derive(launch, STACK, None, version if how == "--torch" else None)
    assert config.value("torch_batch_coalesces") is coalesces
    assert config.record().torch.by_range == words


def test_a_listed_release_says_nothing_more(monkeypatch):
    basis, _ = stated_as("comment", "2.10.0", monkeypatch)
    assert basis.by_range == "" and "not a release the rules list" not in basis.origin


@pytest.mark.parametrize("version, side", [("2.16.0", "newer"), ("2.6.0", "older")])
def test_beyond_the_listed_releases_is_said_and_left_unknown(version, side, monkeypatch):
    """Where no variant of a rule admits the release, its setting stays unknown: the verdict
    names --torch X.Y.Z (config.derive's outside-the-rules unknowns), the header why."""
    basis, launch = stated_as("pip", version, monkeypatch)
    assert basis.by_range.startswith(f"{side} than every release the rules list (2.7.0-")
    assert "--torch X.Y.Z" in basis.by_range
    # newer: rulebook.files reads no range for it (nobody checked the open-ended ones), so
    # saying "judged by the rules' ranges" was untrue; older: the ranges do judge it
    judged = "judged by the rules' ranges" in basis.by_range
    assert judged is (side == "older"), basis.by_range
    assert ("every setting that depends on the torch release is unknown" in basis.by_range) \
        is (side == "newer")
    config = derive(launch, STACK, None, None)
    assert f"torch {version}" in config.outside_rules


@pytest.mark.heavy
def test_header_headline_and_document_say_it(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("pip install torch==2.12.3\n" + RUN)
    argv = [sys.executable, "-m", "auditor", "scan", "--config", str(script),
            *[f"--target={k}=={v}" for k, v in STACK.items()]]
    done = subprocess.run([*argv, "--format", "json"], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    doc = json.loads(done.stdout)
    schema = json.loads((ROOT / "docs" / "schema" / "scan-document.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    words = BY_RANGE.format("2.12", "2.12", "2.13")
    assert doc["config"]["torch_basis"]["by_range"] == words
    assert words in doc["verdict"]["headline"], doc["verdict"]["headline"]
    text = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=300).stdout
    header = " ".join(text.split("\n\n")[0].split())
    assert f"torch 2.12.3 ({words})" in header, header
