"""The seed (examples/glm5_1_lora_pp4.sh, torch 2.10.0, 16 nodes) on its own cluster shape:
without a log, simulate answers INCONCLUSIVE over the network (NET/Socket hangs its 24 MiB
exchange, NET/IB leaves it to the channels per peer); an NCCL_DEBUG=INFO log stating NET/IB and
its channels decides it, both ways, and says which log line did. Heavy: one real simulation of
megatron-core's schedule (test_simulate's `glm4`, shared) and one run of the command."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
from tests.simulate.test_simulate import GLM4, ROOT, glm4, scan_and_plan, simulate_json  # noqa: F401 (glm4: fixture)

from auditor.dynamic.trace import read_trace_dir
from auditor.simulate import predict

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "nccllog"
pytestmark = [pytest.mark.wheels, pytest.mark.heavy]


@pytest.mark.heavy
@pytest.mark.parametrize("log, verdict, hang", [
    ("seed-ib-2ch", "hang", True), ("seed-ib-16ch", "completes", False)])
def test_the_seeds_inconclusive_is_decided_by_an_ib_log(glm4, log, verdict, hang):  # noqa: F811
    _, before, _, trace = glm4
    assert before["simulation"]["verdict"] == "inconclusive"
    doc, p = scan_and_plan(GLM4, "2.10.0")
    assert p.candidates["transport"] == ["net"]  # the layout: stages on different nodes
    recorded = read_trace_dir(trace)
    logs = predict.cluster(doc, p, [LOGS / log])
    results = predict.replays(doc, recorded, p, logs)
    joined = predict.joined(doc, recorded, predict.pick(results))
    sim = predict.simulation(joined, p, results, "replayed", 0.0, logs)
    assert (sim["verdict"], sim["hang"]) == (verdict, hang), sim["hypothetical"]
    (t,) = sim["deadlock"]["transports"]  # NET/Socket is ruled out by the log
    assert t["transport"]["name"] == "NET/IB" and t["will_deadlock"] is hang
    assert t["transport"]["log"].startswith(str(LOGS / log / "rank0.log") + ":")
    assert sim["nccl_log"]["net"]["used"] is True
    schema = jsonschema.Draft202012Validator(
        __import__("json").loads((ROOT / "docs" / "schema" / "scan-document.schema.json").read_text()))
    schema.validate({**joined, "simulation": sim})


@pytest.mark.heavy
def test_simulate_reads_the_log_and_names_its_line(real_sources):
    rc, doc, err = simulate_json("--config", str(GLM4), "--torch", "2.10.0",
                                 "--nccl-log", str(LOGS / "seed-ib-2ch"))
    assert rc == 1 and doc["simulation"]["verdict"] == "hang", err
    assert "HANG PREDICTED" in err
    assert doc["simulation"]["nccl_log"]["net"]["words"].startswith("NCCL log: NET/IB (")
