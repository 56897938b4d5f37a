"""Whether bash itself accepts a script: `bash -n` parses without running anything. A script bash
rejects does not run as written, so reading on past its error would be a misparse; the reader
asks bash when it is installed, and otherwise relies on its own parser's syntax diagnostics."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess

_LINE = re.compile(r"line ([0-9]+): (.*)")


@functools.lru_cache(maxsize=32)  # a scan reads the same script twice (before and after its versions)
def bash_rejects(text: str) -> tuple[int, str] | None:
    """(line, bash's message) when `bash -n` rejects `text`; None when it accepts it or cannot ask."""
    bash = shutil.which("bash")
    if bash is None:
        return None
    try:
        done = subprocess.run([bash, "-n"], input=text.replace("\0", "").encode(), capture_output=True,
                              timeout=20, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"}, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    stderr = done.stderr.decode(errors="replace")
    if done.returncode == 0 and "syntax error" not in stderr:  # bash 5.2 -n reports an open `[[` with status 0
        return None
    errors = [m for m in map(_LINE.search, stderr.splitlines()) if m]
    if not errors:
        return None
    first = errors[0]  # bash counts an unterminated last line as the next one
    return min(int(first.group(1)), text.count("\n") + 1), first.group(2).strip()
