"""`p2paudit simulate`: megatron-core's real pipeline schedule, run on CPU at a launch script's
pipeline size, and what its op order means on the script's cluster.

In pipeline order: `plan` (config: the pipeline column, the message size and the replay
conditions, each with its provenance), `rank` and `run` (dynamic: the schedule on gloo with
stand-in stages, under the recorder), `predict` (analysis: the wait-for replay under the
script's conditions, joined with the scan).
"""
