"""The merge of configs derived under several torch releases (auditor.config.across_torch): what
they agree on is kept, what they disagree on is unknown and names each release's value."""

from __future__ import annotations

from auditor.config.across_torch import merge_across_torch
from auditor.config.effective import EffectiveConfig, Value
from auditor.config.expr import UNKNOWN
from auditor.config.torch_version import TorchBasis

RELEASES = ("2.10.0", "2.11.0", "2.12.0")


def config(coalesces: bool) -> EffectiveConfig:
    return EffectiveConfig({
        "batch_p2p_comm": Value(True, "ms-swift default (torch unknown)", "rules"),
        "coalesces": Value(coalesces, f"torch rule: coalesces={coalesces}", "rules/torch.toml")},
        {"torch": None})


def test_agreement_is_kept_for_every_release_and_a_disagreement_is_unknown_with_spans():
    basis = TorchBasis(None, RELEASES, "no torch stated")
    merged = merge_across_torch([config(False), config(True), config(True)], basis)
    assert merged.values["batch_p2p_comm"].value is True
    assert merged.values["batch_p2p_comm"].provenance == "ms-swift default (every torch 2.10.0-2.12.0)"
    coalesces = merged.values["coalesces"]
    assert coalesces.value == UNKNOWN
    assert coalesces.provenance == ("torch 2.10.0-2.12.0: as 2.10.0 coalesces=False; as "
                                    "2.11.0-2.12.0 coalesces=True; pass --torch with the "
                                    "cluster's release")
