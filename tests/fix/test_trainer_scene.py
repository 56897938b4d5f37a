"""auditor.fix.trainer: which of the trainer's files a codemod edits, at which lines, and when
none fits. The trainers are tests/fix/test_fix_trainer.py's (each citing the upstream construct
it reproduces): PAIRS, megatron-core 0.17.0 p2p_communication.py `_p2p_ops` unbatched; GROUPS,
ms-swift 4.3.0 swift/megatron/init.py `_patch__batched_p2p_ops` with one P2POp on the default
group; INIT, PiPPy examples/basic/example.py's init_process_group without device_id."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fix.test_fix_trainer import GROUPS, INIT, PAIRS

from auditor.fix.edits import apply
from auditor.fix.remedies import Option
from auditor.fix.trainer import Scene, Unfit, edits

# As rules/torch.toml's remedies name them.
BATCH = Option("batch", "batch_p2p", "batch_isend_irecv", "P2POp")
GROUP = Option("pass-group", "pass_group", "isend/irecv/send/recv/P2POp", "group")
EAGER = Option("eager-init", "eager_init", "init_process_group", "device_id")


def site(i: str, api: str, line: int, package: str = "mytrain", group: str = "pp") -> dict:
    return {"id": i, "api": api, "path": "mytrain/p2p.py", "line": line, "package": package, "group": group}


def scene(tmp_path: Path, text: str, *sites: dict, entry: str | None = None) -> Scene:
    (tmp_path / "mytrain").mkdir(exist_ok=True)
    (tmp_path / "mytrain" / "p2p.py").write_text(text)
    return Scene({"site_ids": [s["id"] for s in sites]}, {s["id"]: s for s in sites},
                 {"mytrain": str(tmp_path)}, entry)


def edited(option: Option, sc: Scene) -> dict[str, str]:
    sources: dict[str, str] = {}
    out = edits(option, sc, sources, lambda p: Path(p).read_text())
    return {path: apply(sources[path], [e for e in out if e.path == path]) for path in {e.path for e in out}}


def test_the_sites_ops_on_their_own_are_batched_in_the_file_of_the_path_target(tmp_path):
    sc = scene(tmp_path, PAIRS, site("a", "isend", 9), site("b", "irecv", 10))
    [(path, new)] = edited(BATCH, sc).items()
    assert path == str(tmp_path / "mytrain" / "p2p.py")
    assert "    send_next, recv_prev = dist.batch_isend_irecv([\n" in new


def test_only_the_sites_on_the_default_group_get_a_group(tmp_path):
    sc = scene(tmp_path, GROUPS, site("a", "P2POp", 8), site("b", "P2POp", 9, group="default"))
    [new] = edited(GROUP, sc).values()
    assert new == GROUPS.replace("dist.P2POp(dist.irecv, y, prev)", "dist.P2POp(dist.irecv, y, prev, group=pp_group)")


def test_eager_init_edits_the_entry_script(tmp_path):
    (tmp_path / "train.py").write_text(INIT)
    sc = scene(tmp_path, PAIRS, entry=str(tmp_path / "train.py"))
    [(path, new)] = edited(EAGER, sc).items()
    assert path == str(tmp_path / "train.py") and "device_id=" in new and "device_id" not in INIT


def test_what_no_codemod_fits_says_why(tmp_path):
    with pytest.raises(Unfit, match="no init_process_group to edit"):
        edits(EAGER, scene(tmp_path, PAIRS), {}, Path.read_text)
    with pytest.raises(Unfit, match="none of the finding's sites is one"):
        edits(GROUP, scene(tmp_path, GROUPS, site("a", "P2POp", 8)), {}, Path.read_text)
    released = scene(tmp_path, PAIRS, site("a", "isend", 9, package="megatron-core"))
    with pytest.raises(Unfit, match="is in megatron-core, a release, not the trainer's own code"):
        edits(BATCH, released, {}, Path.read_text)
    with pytest.raises(Unfit, match="p2p.py: .*partner"):
        edited(BATCH, scene(tmp_path, PAIRS, site("a", "isend", 9)))  # a lone op
