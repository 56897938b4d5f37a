"""Megatron's pipeline layout string counted as stages (auditor/config/layout.py). The release's
own parser is the oracle in tests/realscripts/test_stacks_layout.py; here the cases megatron-core
0.17.0 documents and the ones it refuses, without a download."""

from __future__ import annotations

import pytest

from auditor.config.layout import layout_stages


def test_the_documented_deepseek_v3_layout_is_32_stages() -> None:
    # megatron/core/transformer/pipeline_parallel_layer_layout.py (megatron-core 0.17.0): the
    # DeepSeek-V3 layout of the --pipeline-model-parallel-layout help, PP=16 x VPP=2.
    assert layout_stages("Et*3|(tt|)*29,m|L") == 32


@pytest.mark.parametrize(("layout", "stages"), [("Et|tL", 2), ("E|t|t|L", 4), ("E,t,|,tL", 2), ("(t|)*3L", 4)])
def test_each_bar_starts_a_stage(layout: str, stages: int) -> None:
    assert layout_stages(layout) == stages


@pytest.mark.parametrize("layout", [None, 4, "Ex|L", "E|t;L", "(t|)*99999999"])
def test_what_megatron_would_refuse_or_cannot_be_a_run_is_unknown(layout: object) -> None:
    assert layout_stages(layout) is None
