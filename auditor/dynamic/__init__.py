"""`p2paudit record`: every rank of a run writes the P2P and collective ops it issues, in order.

In a recorded process: `session` reads the P2PAUDIT_* environment at start-up (through the
`bootstrap/sitecustomize.py` shim or the autostart `.pth`), `hooks` wraps torch.distributed as it
is imported, `recorder` turns each call into trace lines, `callsite` names the calling line,
`hang` writes what a rank is stuck in, `linecov` measures target packages' lines. Outside it:
`record` launches a command so that every Python process it starts does the above, and `trace`
reads the result back (the one reader the rest of p2paudit uses).
"""
