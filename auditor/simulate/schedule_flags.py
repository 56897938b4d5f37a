"""The schedule settings a simulated rank hands megatron-core's `TransformerConfig`, in one list.

The plan decides them (`plan`), the spec carries them to the ranks (`run`) and each rank passes
them on (`rank`): a setting added here reaches all three, where three hand-written key lists
could drift apart."""

from __future__ import annotations

# Setting -> megatron-core's own default (ModelParallelConfig), which the plan falls back to where
# no front-end rule decided it; None: the plan needs it decided (the rules or --set) and says so.
SCHEDULE_FLAGS: dict[str, bool | None] = {
    "variable_seq_lengths": None,
    "batch_p2p_comm": None,
    "batch_p2p_sync": True,
    "overlap_p2p_comm": None,
    "deallocate_pipeline_outputs": False,
}
