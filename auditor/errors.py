"""Errors that end a command with exit status 2 and one line naming the bad input."""

from __future__ import annotations

import errno


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
