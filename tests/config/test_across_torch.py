"""The merge of configs derived under several torch releases (auditor.config.across_torch): what
they agree on is kept, what they disagree on is unknown and names each release's value."""

from __future__ import annotations

from auditor.config.across_torch import merge_across_torch
from auditor.config.effective import EffectiveConfig, Value
from auditor.config.expr import UNKNOWN
from auditor.config.torch_version import TorchBasis
from auditor.findings import Finding

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


def _with(findings: list[Finding]) -> EffectiveConfig:
    c = config(True)
    c.findings = list(findings)
    return c


# A lazy-init warning raised only where DeepSpeed leaves init_process_group's device_id out
# (deepspeed >= 0.17.3 on 2.6.0 < torch < 2.7.1, microsoft/DeepSpeed deepspeed/comm/torch.py
# TorchBackend.init_process_group): each release's answer is known.
WARN = Finding("lazy-init-unbounded", "warning", "lazy NCCL init", where="run.sh:3")
ERROR = Finding("unbatched-contradiction", "error", "runs unbatched", where="run.sh:3")


def test_a_warning_raised_on_some_releases_is_a_finding_naming_them_not_an_unknown():
    """VALID: the P2P verdict does not rest on a warning; which releases raise it is known, so it
    is reported with them. INVALID: an error raised on some only changes the verdict: undecided."""
    merged = merge_across_torch([_with([WARN]), _with([]), _with([])], TorchBasis(None, RELEASES, "none"))
    (f,) = merged.findings
    assert f.kind == "lazy-init-unbounded" and f.detail["torch"] == ["2.10.0"]
    assert f.message.startswith("on torch 2.10.0 only (not 2.11.0-2.12.0): lazy NCCL init")
    assert merged.undecided == []
    merged = merge_across_torch([_with([ERROR]), _with([]), _with([])], TorchBasis(None, RELEASES, "none"))
    assert merged.findings == []
    assert merged.undecided == ["unbatched-contradiction: raised for torch 2.10.0 only, not for the other "
                                "releases of torch 2.10.0-2.12.0"]
