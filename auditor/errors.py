"""Errors that end a command with exit status 2 and one line naming the bad input."""

from __future__ import annotations

import errno
import os


class InputError(Exception):
    """Bad user input: a target, a launch script, a flag. Printed as one line, exit 2."""

    def __init__(self, subject: str, cause: str, line: int | None = None) -> None:
        self.subject = subject
        self.cause = cause
        self.line = line
        where = f"{subject}:{line}" if line is not None else subject
        super().__init__(f"{where}: {cause}")


EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_INPUT = 2
# What a full filesystem (or an exceeded quota) raises: said as such, never as a corrupt input.
NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
# No room for a file to grow: a full filesystem or quota, or the process's file size limit
# (`ulimit -f`, RLIMIT_FSIZE: EFBIG; Python ignores the SIGXFSZ that comes with it). The recorder
# (dynamic/mapped.py) stops a rank file with its last line in the reserve on each; read as anything
# else (a filesystem that cannot reserve blocks), the limit left the file without that line.
NO_ROOM = (*NO_SPACE, errno.EFBIG)


def no_room(exc: OSError) -> str | None:
    """The one line for an OSError that says this machine has no room to write (a full disk or
    quota, a file size limit, a read-only filesystem, no usable temporary folder), naming what
    to change; None for any other OSError."""
    where = f"{exc.filename}: " if exc.filename else ""
    if exc.errno in (*NO_ROOM, errno.EROFS):
        return (f"{where}cannot write: {os.strerror(exc.errno)} (a full disk or quota, `ulimit -f`, "
                "a read-only filesystem): free space or raise the limit, or point TMPDIR and "
                "P2PAUDIT_CACHE at a folder that has room")
    if (exc.strerror or "").startswith("No usable temporary directory"):
        return ("no temporary folder can be written (a full disk or quota, `ulimit -f`, a "
                "read-only filesystem): free space or raise the limit, or point TMPDIR at a "
                "folder that has room")
    return None
