"""A framework is a rules file: each `[[launcher]]` entry sits in the file of the framework whose
`[framework] launchers` claim the commands it reads, so adding or dropping a framework is adding
or dropping its file (issue 26, "One Stack")."""

from __future__ import annotations

import pytest

from auditor.rulebook import files
from auditor.rulebook.frameworks import Stack, frameworks
from auditor.rulebook.launchers import Spelling


def _spelled(entry: dict) -> list[str]:
    """The launch commands an entry reads, as the launch reader reports them."""
    subs = [*entry.get("subcommands", ()), *entry.get("not_pipeline", {})]
    out = [f"{entry['program']} {sub}" for sub in subs] if entry.get("program") else []
    out += [f"{p} pretrain_gpt.py" for p in entry.get("programs", ())]
    out += [f"python -m {m} pretrain_gpt.py" for m in entry.get("python_modules", ())]
    # `python SCRIPT` building one of `entry_builds` reads as the launcher's name (rules/nemo.toml)
    out += [f"{entry['name']} train.py"] if entry.get("entry_builds") else []
    # a plain `python train.py` (one process) reads as its interpreter and the script's name
    out += [f"{i} train.py" for i in entry.get("interpreters", ())] if entry.get("one_process") else []
    # reported by the script's file name (`chatlearn/entrypoint.py` reads as `python entrypoint.py`)
    out += [f"python {p.replace('*', 'rlvr').rpartition('/')[2]}" for p in entry.get("python_scripts", ())]
    return out


HOMES = [(f.name, e) for f in frameworks() for e in files.load(f.name).table("launcher")]


@pytest.mark.parametrize("home,entry", HOMES, ids=[e["name"] for _, e in HOMES])
def test_each_launcher_lives_in_the_file_of_the_framework_it_starts(home: str, entry: dict) -> None:
    spelled = _spelled(entry)
    assert spelled, entry["name"]
    for launch in spelled:
        assert [f.name for f in Stack.of(launch).claimants] == [home], launch


def test_the_launch_reader_reads_the_launchers_of_every_file() -> None:
    """ms-swift's console scripts come from rules/ms-swift.toml, torchrun from megatron-lm's."""
    names = {e["name"] for e in Spelling.load(None).launchers}
    assert {e["name"] for _, e in HOMES} == names
    assert {"megatron", "swift", "torchrun", "deepspeed", "ray", "verl"} <= names
    assert [s["pattern"] for s in files.load("ms-swift").table("swift_script")] == ["swift/cli/*.py"]
