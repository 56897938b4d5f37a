"""The scripts beside a launch script that `source` it: a helper they read (NVIDIA/Megatron-LM@
d98e8a64dd examples/post_training/modelopt/conf/arguments.sh, which convert.sh, quantize.sh, ...
read with `source "${SCRIPT_DIR}/conf/arguments.sh"`) gets the files it sources in turn
(`source ${MLM_ENV_SETUP}`) and its settings from them: auditing one of them is the step that
decides what it runs. Only the script's own folder and the one above it are looked at."""

from __future__ import annotations

import re
from pathlib import Path


def sourced_by(path: str) -> list[str]:
    """The scripts (named from two folders up: `modelopt/convert.sh`) whose lines `source` or `.` a
    path ending in the launch script's own (`conf/arguments.sh` from the folder above), sorted."""
    script = Path(path).resolve()
    here, above = script.parent, script.parent.parent
    found = []
    for folder, tail in ((here, script.name), (above, f"{here.name}/{script.name}")):
        said = re.compile(rf"(?m)^\s*(?:source|\.)\s+[\"']?\S*(?<![\w.-]){re.escape(tail)}[\"']?\s*(?:$|[;&|#\s])")
        for other in sorted(folder.glob("*.sh")):
            if other == script:
                continue
            try:
                text = other.read_text(errors="replace")
            except OSError:
                continue
            if said.search(text):
                found.append(str(other.relative_to(above.parent)))
    return found
