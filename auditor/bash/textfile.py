"""Reading a file a launch script names (a sourced settings file, a tool it runs) without waiting
on it: only a regular file of launch-script size is opened, so a FIFO or a device at that path
never hangs the audit."""

from __future__ import annotations

import os

MAX_SOURCED = 1 << 20  # a sourced settings file; anything larger is not read


def read_bounded(path: str, missing: str) -> tuple[str, str]:
    """(path, text) of a launch-sized UTF-8 file; OSError saying why not."""
    if not os.path.isfile(path):
        raise OSError(missing)
    if os.path.getsize(path) > MAX_SOURCED:
        raise OSError("larger than a launch script")
    with open(path, "rb") as handle:
        data = handle.read(MAX_SOURCED + 1)  # procfs files report size 0: the read is bounded
    if len(data) > MAX_SOURCED:
        raise OSError("larger than a launch script")
    try:
        return path, data.decode("utf-8-sig").replace("\0", "")
    except UnicodeDecodeError:
        raise OSError("not UTF-8 text") from None
