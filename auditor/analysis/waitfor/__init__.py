"""Wait-for analysis: would these per-rank op sequences hang under NCCL, and what waits on what.

A hang in pipeline P2P is a cycle of waits that no single rank's view shows, so this replays the
ranks' op sequences against a small model of NCCL under torch and reports the cycle in words
(and per rank, op by op, for the HTML report). The model, from docs/findings.md sections 1 and 4:

- Communicator selection: a coalesced batch runs on its group's communicator; an unbatched P2P op
  under lazy init runs on a 2-rank communicator of its pair (`group:low-high`); under eager init
  (`init_process_group(device_id=...)`) on the group's communicator, serialised with all else on
  it; a collective runs on its group's communicator.
- Lazy creation is a blocking rendezvous: a rank that first uses a communicator stays inside its
  creation until every member has reached the creation of that same communicator.
- Stream order: each (rank, communicator) has one stream; an op starts only when everything
  issued before it on that stream has completed. A coalesced batch is one entry whose parts run
  together.
- Buffering: a send of at most `buffer_bytes` completes once it starts; a larger one completes
  only while its matching receive runs too. A receive completes once its matching send started.
  Sends and receives match in order per (communicator, source, destination); NCCL has no tags.
- CPU: ops are asynchronous; a rank stops issuing only inside a communicator creation, or where
  its program waits for earlier ops (`Op.after`).

gloo (`Conditions.gloo()`, what a CPU recording ran on) is another model, as measured on gloo
(`p2paudit doctor --backend gloo`, tests/repro/test_repro.py, tests/analysis/test_join.py): no coalescing (a
batch runs op by op), no communicator to create (gloo connects a group's ranks when the group is
made), no stream order (each op runs on its own as soon as it is issued), no buffering (a send
completes once its receive is issued, a receive once its send is). Matching is in order per
(group, source, destination).

Where each part lives: `model` (ops, groups, conditions, the communicator an op runs on),
`transports` (rules/nccl.toml's bounds and torch's NCCL pins), `replay` (the replay and its
explanation), `prefixes` (cutting a long run so a replay of the cut is a replay of the whole),
`deadlock` (the two verdicts, *can* and *will* deadlock), `programs` (programs from trace
events), `sizes` (bytes per dtype, sizes in words).
"""
