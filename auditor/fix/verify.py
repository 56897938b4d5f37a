"""Does a patch do what it says? The patched inputs are scanned again in a temporary copy (the
user's files are never written for this) and each finding of the first scan is matched to the
second's by identity: gone, still there; a finding only the second has is new (one of a kind
and rule the first had, gone from its sites, is that finding still there on others)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from auditor.analysis import verdict
from auditor.config.pyenv import EntryFile
from auditor.errors import InputError
from auditor.scan import ScanInputs, run_scan

GONE, STILL, NEW = "gone", "still there", "new"


def identity(f: dict[str, Any]) -> tuple[str, str, tuple[str, ...]]:
    """What makes two scans' findings the same finding: the kind, the rule or variable, the
    sites; not its line, which a patch moves."""
    detail = f.get("detail") or {}
    return (f["kind"], str(detail.get("rule") or detail.get("variable") or ""),
            tuple(sorted(f.get("site_ids", []))))


@dataclass
class RescanOutcome:
    """The second scan against the first: per finding of the first (by index) gone or still
    there, and the second's findings the first did not have."""

    states: dict[int, str]
    new: list[dict[str, Any]] = field(default_factory=list)
    verdict: dict[str, Any] = field(default_factory=dict)

    def removes(self, indices: list[int]) -> bool:
        """Verified for these findings: each is gone, and nothing new appeared."""
        return not self.new and all(self.states[i] == GONE for i in indices)


def compare(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> RescanOutcome:
    remaining = [identity(f) for f in after]
    states = {}
    for i, f in enumerate(before):
        key = identity(f)
        states[i] = STILL if key in remaining else GONE
    known = {identity(f) for f in before}
    new = [f for f in after if identity(f) not in known]
    # The same finding on other sites (a patch that batches ops makes new P2POp sites) is still
    # there, not gone and new: it keeps its own remedy, and it never passes for gone.
    for f in list(new):
        moved = next((i for i, b in enumerate(before) if states[i] == GONE
                      and identity(b)[:2] == identity(f)[:2]), None)
        if moved is not None:
            states[moved] = STILL
            new.remove(f)
    return RescanOutcome(states, new)


def layout(tmp: str, config_path: str, patched: dict[str, str],
           entry: EntryFile | None) -> dict[str, str]:
    """Copies of the launch script and the entry script in `tmp`, the entry where the scan looks
    for it (beside the launch script, as written): path -> copy. `patched` (path -> text) holds
    the texts to write instead of the files'."""
    texts = {config_path: patched[config_path] if config_path in patched else read_text(config_path),
             **patched}
    written = os.path.normpath(entry.written) if entry is not None else ""
    up = written.split(os.sep).count("..")  # `torchrun ../train.py`: the launch copy that deep
    here = os.path.join(tmp, *["d"] * up)
    places = {config_path: os.path.join(here, os.path.basename(config_path))}
    if entry is not None and not os.path.isabs(written):
        texts.setdefault(entry.path, read_text(entry.path))
        places[entry.path] = os.path.normpath(os.path.join(here, written))
    elif entry is not None and entry.path in texts:
        raise InputError(entry.path, "named by an absolute path: its patched copy cannot be "
                                     "scanned in its place; edit it by hand")
    for path, copy in places.items():
        os.makedirs(os.path.dirname(copy), exist_ok=True)
        with open(copy, "w", encoding="utf-8", newline="") as f:
            f.write(texts[path])
    return places


def input_args(inputs: ScanInputs) -> list[str]:
    """The options that give a command the scan's inputs (targets, torch, --command, --set)."""
    argv = [a for t in inputs.targets or [] for a in ("--target", t)]
    argv += ["--torch", inputs.torch_version] if inputs.torch_version else []
    argv += ["--command", inputs.command] if inputs.command else []
    return argv + [a for k, v in (inputs.overrides or {}).items() for a in ("--set", f"{k}={v}")]


def read_text(path: str) -> str:
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def rescan(inputs: ScanInputs, patched: dict[str, str], entry: EntryFile | None = None) -> dict[str, Any]:
    """The scan of `inputs` with the files of `patched` (path -> text) replaced, run on copies
    in a temporary directory (the entry script, patched or not, beside the launch script's copy
    as the scan found it); the document's paths name the user's files again."""
    with tempfile.TemporaryDirectory(prefix="p2paudit-fix-") as tmp:
        moved = layout(tmp, inputs.config_path, patched, entry)
        targets = [_target(tmp, i, t, patched, moved) for i, t in enumerate(inputs.targets or [])]
        # reads=None: a read of the copies is none of the user's script (ScanInputs.reads)
        doc = run_scan(ScanInputs(**{**inputs.__dict__, "progress": False, "reads": None,
                                     "targets": targets if inputs.targets else inputs.targets,
                                     "config_path": moved.get(inputs.config_path,
                                                              inputs.config_path)}))
    for f in doc["findings"]:
        for path, copy in moved.items():
            f["where"] = f.get("where", "").replace(copy, path)
            f["message"] = f["message"].replace(copy, path)
    verdict.finish(doc)
    return doc


def _target(tmp: str, i: int, target: str, patched: dict[str, str], moved: dict[str, str]) -> str:
    """The target to scan in the patched run: a path target the patch edits, as a copy with the
    patched texts (the same file or folder name, so its modules keep their names); any other
    target as given. `moved` gains the copies (path -> copy)."""
    given = os.path.abspath(target)
    if os.path.isfile(given):
        if given in moved or given not in patched:
            return moved.get(given, target)
        copy = os.path.join(tmp, f"target-{i}", os.path.basename(given))
        os.makedirs(os.path.dirname(copy))
        with open(copy, "w", encoding="utf-8", newline="") as f:
            f.write(patched[given])
        moved[given] = copy
        return copy
    inside = [p for p in patched if p.startswith(given + os.sep)]
    if not os.path.isdir(given) or not inside:
        return target
    copy = os.path.join(tmp, f"target-{i}", os.path.basename(given))
    shutil.copytree(given, copy, symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__", ".git"))
    for path in inside:
        moved[path] = os.path.join(copy, os.path.relpath(path, given))
        with open(moved[path], "w", encoding="utf-8", newline="") as f:
            f.write(patched[path])
    return copy


SIMULATE_SECONDS = 300


def simulates(doc: dict[str, Any]) -> bool:
    """`simulate` applies: a pipeline (size > 1) whose schedule is megatron-core's, a target."""
    size = doc.get("config", {}).get("effective", {}).get("pipeline_model_parallel_size")
    return (isinstance(size, int) and size > 1
            and any(t.get("name") == "megatron-core" for t in doc.get("targets", [])))


def simulate(inputs: ScanInputs, patched: dict[str, str], entry: EntryFile | None = None) -> dict[str, Any]:
    """`p2paudit simulate` of the patched script, in a temporary copy and a process of its own
    (it runs the schedule's ranks): its headline and exit status, or why it did not finish."""
    with tempfile.TemporaryDirectory(prefix="p2paudit-fix-sim-") as tmp:
        copy = layout(tmp, inputs.config_path, patched, entry)[inputs.config_path]
        out = os.path.join(tmp, "simulation.json")
        argv = [sys.executable, "-m", "auditor", "simulate", "--config", copy, "--format", "json",
                "-o", out, *input_args(inputs)]
        started = time.perf_counter()
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=SIMULATE_SECONDS,
                                  check=False)
        except subprocess.TimeoutExpired:
            return {"simulated": False, "headline": f"did not finish in {SIMULATE_SECONDS} s"}
        seconds = round(time.perf_counter() - started, 1)
        if done.returncode == 2 or not os.path.exists(out):
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            return {"simulated": False, "headline": f"simulate stopped: {last}"}
        with open(out, encoding="utf-8") as f:
            result = json.load(f)
    return {"simulated": True, "headline": result["verdict"]["headline"].replace(copy, inputs.config_path),
            "exit_code": done.returncode, "seconds": seconds}
