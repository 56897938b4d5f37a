"""A site's typed status (auditor.analysis.sitestatus) over a real scan document: the committed
gate baseline (examples/glm5_1_lora_pp4.sh on megatron-core 0.17.0, ci/gate.sh), whose sites
cover every reachability and verdict but `ok`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

from auditor.analysis.sitestatus import Reach, SiteStatus, SiteVerdict
from auditor.analysis.verdict import SITE_VERDICTS, judge

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "ci" / "baseline" / "glm5_1_lora_pp4.megatron-core-0.17.0.json"
SCHEMA = json.loads((ROOT / "docs" / "schema" / "scan-document.schema.json").read_text())


def test_the_states_are_the_schemas_and_the_verdict_modules():
    site = SCHEMA["$defs"]["site"]["properties"]
    assert set(get_args(Reach)) == set(site["reachable"]["enum"])
    assert set(get_args(SiteVerdict)) == set(site["verdict"]["enum"]) == set(SITE_VERDICTS)


def test_each_site_of_a_real_scan_has_one_reachability_and_its_verdict():
    sites = json.loads(BASELINE.read_text())["sites"]
    statuses = [SiteStatus.of(s) for s in sites]
    assert {st.reachable for st in statuses} == {"yes", "no", "unknown"}
    for st in statuses:
        assert [st.reached, st.unreachable, st.reach_unknown].count(True) == 1
        assert (st.verdict == "unreachable") == st.unreachable
        if st.contradiction:
            assert st.reached and st.on_path


def test_quiet_sites_are_the_verdicts_not_analysed():
    doc = json.loads(BASELINE.read_text())
    quiet = [s for s in doc["sites"] if SiteStatus.of(s).quiet]
    assert quiet and all(not s["paths"] and not s.get("undecided") for s in quiet)
    assert judge(doc).not_analysed == len(quiet)


def test_an_inventoried_site_has_no_status():
    st = SiteStatus.of({"id": "x", "path": "p.py", "line": 1, "api": "send"})
    assert st.reachable is None and st.verdict is None
    assert not (st.reached or st.unreachable or st.reach_unknown or st.quiet)
