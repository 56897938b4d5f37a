"""The backend a run's pipeline group is on, and what it means for a batch of P2P ops: on gloo
a batch runs op by op with no hang of its own; on a backend other than NCCL the script names
(Ascend's HCCL) the NCCL rules do not apply."""

from __future__ import annotations

from typing import Any

from auditor.config.runconfig import RunConfig

# Backends on which a batch run op by op has no hang of its own: gloo never coalesces
# (supports_coalescing false), so batch_isend_irecv posts each isend/irecv, every one before any
# is waited on, and gloo creates no communicator per pair (NCCL's lazy-init hang has no mechanism):
# measured, megatron-core's schedule at 24 MiB on 4 and 8 gloo processes completes
# (docs/findings.md section 6). A blocking op issued on its own still waits for its receive
# (rules/nccl.toml, transport "gloo"): its order decides, which scan does not replay.
OP_BY_OP_POSTED = ("gloo",)
# The backend the pipeline group runs on (rules/torch.toml torch.pipeline-backend): its own where
# a flag gives one, else the default backend.
PIPELINE_BACKEND = "pipeline_backend"


def op_by_op_words(backend: Any) -> str:
    """Why a batch run op by op on `backend` (OP_BY_OP_POSTED) is no contradiction."""
    return (f"{backend} runs every batch op by op, each isend/irecv posted before any is waited "
            f"on, with no communicator per pair: no lazy-init hang (docs/findings.md section 6); "
            f"but {backend} send/recv takes no CUDA tensors (torch's backend table): a GPU run may not get that far")


def other_backend(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The backend other than NCCL the run is on (config.launch `launch.backend`, Ascend's HCCL),
    with what the script shows of it (`said`); None where the config says another backend
    (`--set distributed_backend=nccl`)."""
    found = next((f for f in doc.get("findings", []) if f.get("kind") == "launch.backend"
                  and "decide" in (f.get("detail") or {})), None)
    run = RunConfig.from_json(doc.get("config", {}))
    if found is None or run.value("distributed_backend") != found["detail"]["backend"]:
        return None
    return {**found["detail"], "said": str(found["message"])}
