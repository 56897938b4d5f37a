"""Static stages: source files -> P2P call sites -> call graph -> reachability."""
