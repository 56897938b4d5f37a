"""`p2paudit diff A.json B.json` on real inventories and scans of megatron-core releases; the
differences asserted are read from the wheels' sources, not from the tool's own output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli
from auditor.analysis.diff import diff, family

SNIFF = "megatron/training/gpu_sniff_test.py"
BRIDGE = "megatron/core/pipeline_parallel/bridge_communicator.py"


@pytest.fixture(scope="module")
def inventories(tmp_path_factory, release) -> dict[str, Path]:
    """The CLI's inventories of two releases (it downloads them as `release` does)."""
    root = tmp_path_factory.mktemp("sites")
    out = {}
    for version in ("0.17.0", "0.19.2"):
        out[version] = root / f"{version}.json"
        assert cli.main(["sites", f"megatron-core=={version}", "--format", "json",
                         "-o", str(out[version])]) == 0
    return out


def test_text_diff_of_two_releases(inventories, release, capsys):
    assert cli.main(["diff", str(inventories["0.17.0"]), str(inventories["0.19.2"])]) == 0
    text = capsys.readouterr().out
    assert "megatron-core: 0.17.0 -> 0.19.2" in text
    new = release("megatron-core==0.19.2").root / SNIFF
    lines = [n for n, t in enumerate(new.read_text().splitlines(), 1)
             if "dist.P2POp(" in t or "dist.batch_isend_irecv(" in t]
    assert len(lines) == 3
    for n in lines:
        assert f"  + {SNIFF}:{n}  " in text
    assert "Sites removed" not in text
    # BridgeCommunicator's plain send/recv gained group=self.bridge_pg (read in both wheels).
    old = (release("megatron-core==0.17.0").root / BRIDGE).read_text()
    now = (release("megatron-core==0.19.2").root / BRIDGE).read_text()
    assert "group=self.bridge_pg" not in old and now.count("group=self.bridge_pg") >= 4
    assert "BridgeCommunicator.send_forward:send:0: group: default -> self.bridge_pg" in text
    assert "gpu_sniff_test.bench_sendrecv.<locals>._run:P2POp: 0 -> 2" in text
    assert f"{BRIDGE}: 15 site(s), +22 to +32 lines" in text


def test_json_diff_and_moves(inventories, capsys):
    assert cli.main(["diff", str(inventories["0.17.0"]), str(inventories["0.19.2"]),
                     "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    a = {s["id"]: s for s in json.loads(inventories["0.17.0"].read_text())["sites"]}
    b = {s["id"]: s for s in json.loads(inventories["0.19.2"].read_text())["sites"]}
    assert [s["id"] for s in d["sites"]["added"]] == sorted(b.keys() - a.keys(),
                                                            key=lambda i: (b[i]["line"], i))
    assert {m["id"] for m in d["sites"]["moved"]} == {
        i for i in a.keys() & b.keys() if a[i]["line"] != b[i]["line"]}


def test_identical_documents_have_no_differences(inventories, capsys):
    path = str(inventories["0.17.0"])
    assert cli.main(["diff", path, path]) == 0
    assert "No differences." in capsys.readouterr().out


def test_families_count_copies_whatever_the_ordinals():
    def doc(lines: list[int]) -> dict:
        return {"targets": [], "sites": [
            {"id": f"p:m.f:isend:{k}", "package": "p", "path": "m.py", "line": n, "function": "f",
             "api": "isend", "batched": False, "group": "default"} for k, n in enumerate(lines)]}
    d = diff(doc([10]), doc([5, 6, 7, 10]))
    assert d["families"] == [{"family": "p:m.f:isend", "before": 1, "after": 4}]
    assert family("p:m.f:isend:3") == "p:m.f:isend"


def test_bad_input_names_the_file(tmp_path, capsys):
    bad = tmp_path / "a.json"
    bad.write_text("[1, 2]")
    assert cli.main(["diff", str(bad), str(bad)]) == 2
    assert f"{bad}: not a p2paudit scan or sites document" in capsys.readouterr().err
