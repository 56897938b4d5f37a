"""What one reproducer run is: the user's choices (`Spec`) and what every rank runs (`ReproPlan`).

Both sides use it: the launcher to describe and judge the run, each torchrun rank to know what to
issue. The per-rank programs are the wait-for analysis's own `Op`s, so the model that predicts the
outcome and the ranks that produce it run the very same sequence.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from auditor.analysis.waitfor.model import Conditions, Op
from auditor.analysis.waitfor.transports import TRANSPORT_BUFFER

ISSUE_BATCH = "batch"  # hand each batch to the real batch_isend_irecv (torch decides coalescing)
ISSUE_ONE_BY_ONE = "one-by-one"  # each op alone in list order: torch 2.10's fallback under DETAIL

# NCCL's network transport, as between pipeline neighbours on different nodes (docs/findings.md §4).
NET_ENV = {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"}


@dataclass
class Spec:
    case: str
    nproc: int = 2
    backend: str = "nccl"
    transport: str | None = None  # nvlink | net; NCCL only
    size: int | None = None  # bytes per activation, where the case has activations
    fix: str | None = None
    timeout: float = 40.0  # outer limit on the op phase, seconds
    pg_timeout: float = 18_000_000.0  # what ms-swift gives its default group
    microbatches: int | None = None
    variable_seq_lengths: bool | None = None  # megatron's: exchange shapes before each call

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Spec:
        return cls(**json.loads(Path(path).read_text(encoding="utf-8")))


@dataclass
class ReproPlan:
    programs: dict[int, list[Op]]
    issue: str  # ISSUE_BATCH or ISSUE_ONE_BY_ONE
    init: str  # lazy | eager (eager: init_process_group gets device_id)
    title: str  # one phrase naming the case, the backend and the fix
    env: dict[str, str] = field(default_factory=dict)  # set for every rank
    unset: tuple[str, ...] = ()  # removed from every rank's environment
    # gloo runs ops asynchronously with no streams; to show NCCL's per-communicator stream order
    # a rank waits for its previous op on a communicator before issuing the next one there.
    emulate_streams: bool = False
    note: str = ""  # what this backend can and cannot show, said in the verdict
    backend: str = "nccl"
    transport: str = "nvlink"

    def conditions(self, coalesced: bool | None = None) -> Conditions | None:
        """The wait-for model of this run (None where it does not apply: plain gloo);
        `coalesced` is whether the ranks saw batch_isend_irecv coalesce, where known."""
        coalesce = self.issue == ISSUE_BATCH if coalesced is None else coalesced
        if self.emulate_streams:
            # gloo hands a batch's ops over together, never waiting between them: one entry.
            coalesce = self.issue == ISSUE_BATCH
            return Conditions(self.init, coalesce, TRANSPORT_BUFFER["gloo"], "gloo")
        if self.backend != "nccl":
            return None
        return Conditions.for_transport(self.transport, self.init, coalesce)
