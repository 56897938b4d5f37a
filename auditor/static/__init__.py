"""Static stages: source files -> P2P call sites -> call graph -> reachability.

A shared floor (`source`, `names`, the per-file cache `analyze`, re-export routes `exports`);
over it two wings that never import each other, `ir/` (the typed IR: records, builder, codec)
and `sites/` (the P2P site finder and its `Site` records); `parsed`, the one parse per file that
feeds both, and `inventory`, the sites of a whole target; then `interp/`, the call graph by
abstract interpretation and reachability. `tests/test_layers.py` holds this order."""
