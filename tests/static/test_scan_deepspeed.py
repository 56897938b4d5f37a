"""`p2paudit scan` of a DeepSpeed pipeline run: PipelineEngine.train_batch reaches the torch
backend's send/recv of `deepspeed/comm/torch.py` with a call path, on the real releases (sdists
from PyPI via the cache), through the engine's dispatch table and `deepspeed.comm`'s module-global
backend object; and the interpreter features that takes, VALID/INVALID, on small programs."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from auditor import rulebook as rules, sources
from auditor.config.derive import derive
from auditor.config.launch import parse_launch, read_launch
from auditor.scan import ScanInputs, run_scan
from tests.static.interp.test_callgraph import analyse

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "deepspeed_pipe_pp2.sh"
ENTRY = "deepspeed.runtime.pipe.engine:PipelineEngine.train_batch"
TORCH_PY = "deepspeed/comm/torch.py"


def scan(version: str, entries: list[str] | None = None) -> dict:
    return run_scan(ScanInputs(str(SCRIPT), targets=[f"deepspeed=={version}"], entries=entries,
                               torch_version="2.13.0", jobs=1))


def backend_sites(doc: dict) -> dict[str, dict]:
    return {s["function"].rsplit(".", 1)[-1]: s for s in doc["sites"] if s["path"] == TORCH_PY
            and s["function"].startswith("TorchBackend.")}


@pytest.fixture(scope="module", params=["0.16.0", "0.19.8"])
def release(request) -> tuple[str, dict]:
    return request.param, scan(request.param, [ENTRY])


def test_train_batch_reaches_the_backend_send_and_recv_with_paths(release):
    _, doc = release
    sites = backend_sites(doc)
    for name in ("send", "recv"):
        s = sites[name]
        assert s["reachable"] == "yes", s
        path = s["paths"][0]
        assert path[:2] == ["engine.PipelineEngine.train_batch", "engine.PipelineEngine._exec_schedule"]
        assert path[-3:] == [f"p2p.{name}", f"comm.{name}", f"torch.TorchBackend.{name}"]
        assert s["runs_batched"] is False and s["groups"] == ["default group"]


def test_isend_irecv_are_never_called_by_the_engine(release):
    """0.16.0's deepspeed.comm.isend calls the backend's blocking send: nothing reaches
    TorchBackend.isend (unknown, never clean). 0.19.8's calls cdb.isend, but p2p.send takes
    that branch only with async_op=True, which it asserts is False: unreachable, with the guard."""
    version, doc = release
    sites = backend_sites(doc)
    for name in ("isend", "irecv"):
        s = sites[name]
        if version == "0.16.0":
            assert s["reachable"] == "unknown" and not s["paths"]
        else:
            assert s["reachable"] == "no" and s["conditions"][-1] == "async_op  [no]"
            assert s["paths"][0][-1] == f"p2p.{name[1:]}" and "`async_op` is false" in s["reason"]


def test_the_launch_script_picks_the_deepspeed_entry_point(real_sources):
    doc = run_scan(ScanInputs(str(SCRIPT), torch_version="2.13.0", jobs=1))
    assert doc["entries"] == ["deepspeed pipeline engine"]
    assert doc["launch"]["launcher"] == "deepspeed train.py" and doc["launch"]["world_size"] == 2
    assert {t["name"]: t["version"] for t in doc["targets"]} == {"deepspeed": "0.16.0"}
    assert {n for n, s in backend_sites(doc).items() if s["reachable"] == "yes"} == {"send", "recv"}
    assert doc["config"]["effective"]["deepspeed_isend_blocking"] is True


def test_a_misspelt_entry_is_bad_input():
    proc = subprocess.run(
        [sys.executable, "-m", "auditor", "scan", "--config", str(SCRIPT), "--target", "deepspeed==0.16.0",
         "--entry", ENTRY.replace("train_batch", "train_bach")],
        capture_output=True, text=True, timeout=600, cwd=ROOT, env=dict(os.environ))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "train_bach" in proc.stderr


def test_a_misspelt_class_is_bad_input_even_when_another_entry_reached_the_method():
    """The first entry interprets PipelineEngine.train_batch; the second misspells the class. A
    method of that name reached by another entry does not make the second one resolve."""
    misspelt = ENTRY.replace("PipelineEngine", "PipelineEngin")
    proc = subprocess.run(
        [sys.executable, "-m", "auditor", "scan", "--config", str(SCRIPT), "--target", "deepspeed==0.16.0",
         "--entry", ENTRY, "--entry", misspelt],
        capture_output=True, text=True, timeout=600, cwd=ROOT, env=dict(os.environ))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "PipelineEngin.train_batch" in proc.stderr


# --- rules/deepspeed.toml against the real releases ------------------------------------------


def _function_source(version: str, rel: str, name: str) -> str:
    """The source of function `name` (`Class.method` for a method), without whitespace."""
    src = sources.resolve(f"deepspeed=={version}")
    text = (src.root / rel).read_text()
    body: list[ast.stmt] = ast.parse(text).body
    *owners, func = name.split(".")
    for owner in owners:
        body = next(n for n in body if isinstance(n, ast.ClassDef) and n.name == owner).body
    node = next(n for n in body if isinstance(n, ast.FunctionDef) and n.name == func)
    return "".join((ast.get_source_segment(text, node) or "").split())


def test_each_rule_states_the_code_of_the_releases_it_names():
    """VALID: in every release a rule names as valid, its function holds its `code`, and the
    rule's `versions` admit the release; INVALID: the releases named invalid hold other code."""
    data = rules.load("deepspeed").data
    checked = 0
    for rule in data["rule"]:
        rel = rule["source"].rpartition(":")[0]
        rule = {**rule, "code": "".join(rule["code"].split())}
        for version in rule.get("valid", []):
            assert rule["code"] in _function_source(version, rel, rule["function"]), (rule["id"], version)
            assert rules.version_in(version, rule["versions"]), (rule["id"], version)
            checked += 1
        for version in rule.get("invalid", []):
            assert rule["code"] not in _function_source(version, rel, rule["function"]), (rule["id"], version)
            assert not rules.version_in(version, rule["versions"]), (rule["id"], version)
            checked += 1
    assert checked == 49


# --- the interpreter features, VALID/INVALID -------------------------------------------------

ENGINE = '''
from types import MethodType
from pkg import comm as dist

class Send: pass
class Recv: pass
class Other: pass

class Engine:
    def _send(self, buffer_id):
        dist.send(buffer_id, 1)

    def _recv(self, buffer_id):
        dist.recv(buffer_id, 0)

    def _other(self):
        pass

    _MAP = {Send: _send, Recv: _recv}

    def run(self, schedule):
        for cmd in schedule:
            self._exec = MethodType(self._MAP[type(cmd)], self)
            self._exec(**cmd.kwargs)

    def only_send(self):
        MethodType(self._MAP[Send], self)(0)
'''
COMM_PKG = '''
from .core import *
'''
CORE = '''
import torch.distributed

backend = None

def init():
    global backend
    backend = Backend()

def send(t, dst):
    return backend.send(t, dst)

def recv(t, src):
    return backend.recv(t, src)

class Backend:
    def send(self, t, dst):
        return torch.distributed.send(t, dst)

    def recv(self, t, src):
        return torch.distributed.recv(t, src)

    def isend(self, t, dst):
        return torch.distributed.isend(t, dst)
'''
FILES = {"pkg/engine.py": ENGINE, "pkg/comm/__init__.py": COMM_PKG, "pkg/comm/core.py": CORE}


@pytest.mark.parametrize("entry,reached", [
    # VALID: a table keyed by class, read with an unknown key, may call every entry.
    ("from pkg.engine import Engine\nP2PAUDIT_CALL(P2PAUDIT_INSTANCE(Engine).run)\n", {"send", "recv"}),
    # VALID: read with a known key, it calls that entry only (INVALID: recv through Send).
    ("from pkg.engine import Engine\nP2PAUDIT_CALL(P2PAUDIT_INSTANCE(Engine).only_send)\n", {"send"}),
    # INVALID: a global assigned in a function nobody called still holds what it may hold,
    # but what the object offers and nobody calls (isend) is not reached.
    ("import pkg.comm as c\nc.send(1, 2)\n", {"send"}),
])
def test_dispatch_table_method_type_global_and_star_import(tmp_path, entry, reached):
    out = analyse(tmp_path, FILES, entry, {})
    got = {key.split(":")[1] for key, r in out.items()
           if key.startswith("Backend.") and r.reachable == "yes"}
    assert got == reached


def test_a_global_never_assigned_in_a_function_holds_only_its_module_value(tmp_path):
    """INVALID: without `global` the assignment binds a local; the module's `backend` stays None."""
    files = {**FILES, "pkg/comm/core.py": CORE.replace("    global backend\n", "")}
    out = analyse(tmp_path, files, "import pkg.comm as c\nc.send(1, 2)\n", {})
    assert out["Backend.send:send"].reachable != "yes"


def test_a_private_name_is_not_star_imported(tmp_path):
    """INVALID: `from .core import *` binds no `_name` (nor names outside a literal __all__)."""
    files = {**FILES, "pkg/comm/core.py": CORE.replace("\ndef send(", "\ndef _send(")}
    out = analyse(tmp_path, files, "import pkg.comm as c\nc._send(1, 2)\n", {})
    assert out["Backend.send:send"].reachable != "yes"
    with_all = {**FILES, "pkg/comm/core.py": "__all__ = ['recv']\n" + CORE}
    out = analyse(tmp_path, with_all, "import pkg.comm as c\nc.send(1, 2)\nc.recv(1, 2)\n", {})
    assert out["Backend.send:send"].reachable != "yes" and out["Backend.recv:recv"].reachable == "yes"


def test_a_release_outside_the_rules_is_inconclusive_never_clean():
    """deepspeed 0.13.5 predates the releases rules/deepspeed.toml covers: no entry point is
    taken for it and what its rules decide is unknown, so the scan says so (exit 1)."""
    proc = subprocess.run(
        [sys.executable, "-m", "auditor", "scan", "--config", str(SCRIPT), "--target", "deepspeed==0.13.5",
         "--torch", "2.13.0"],
        capture_output=True, text=True, timeout=600, cwd=ROOT, env=dict(os.environ))
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "INCONCLUSIVE" in proc.stdout
    assert "deepspeed 0.13.5 is outside the releases the rules cover" in proc.stdout


def test_a_deepspeed_run_needs_no_megatron_setting_and_its_paired_order_decides_its_sites(release):
    """DeepSpeed has no batching setting ([framework] needs is empty along its stack): the scan
    asks for no Megatron key. Its reached sites are blocking ops issued on their own, which the
    pipeline engine's schedule pairs with the neighbour's in one order (rules
    deepspeed.pipe-paired-order): ok, never a question for `--set batch_p2p_comm`."""
    from auditor.analysis import verdict

    _, doc = release
    assert doc["config"]["needs"] == []
    v = verdict.judge(doc)
    words = " ".join(f"{u.what} {u.decide}" for u in v.undecided)
    assert "batch_p2p_comm" not in words and "pipeline_model_parallel_size (" not in words
    # torch's release is given (2.13.0): a torch check undecided by config keys names the keys,
    # those of this stack only: Megatron's pipeline size is no input of a DeepSpeed run
    assert "--torch X.Y.Z" not in words and "--set pipeline_model_parallel_size" not in words
    for name in ("send", "recv"):
        site = backend_sites(doc)[name]
        assert site["verdict"] == "ok" and "in a paired order" in site["unbatched_reason"], site
    assert "no batching setting" not in words


def unread_entry():
    """The DeepSpeed example's command read where its train.py is not (a launch script beside no
    entry): what the backend is stays unknown, as these checks' VALID/INVALID cases need."""
    return parse_launch(SCRIPT.read_text(), str(Path(__file__).with_name(SCRIPT.name)))


def lazy_init(overrides: dict[str, str]) -> tuple[bool, list[str]]:
    """Whether torch.lazy-init-unbounded is raised on the DeepSpeed example's command (its
    entry not read), and how it is undecided."""
    config = derive(unread_entry(), {"deepspeed": "0.16.0"}, overrides, "2.13.0")
    raised = any(f.kind == "lazy-init-unbounded" for f in config.findings)
    return raised, [u for u in config.undecided if u.startswith("torch.lazy-init-unbounded")]


# (--set pairs, raised, how it is undecided) on the DeepSpeed example, whose stack has no
# pipeline_model_parallel_size: the check is never judged by that Megatron setting.
LAZY_INIT = [
    # VALID: its own inputs rule it out
    ({"torch_nccl_comm_nonblocking": "true"}, False, None),
    ({"distributed_backend": "gloo"}, False, None),
    # INVALID: undecided, whatever the Megatron setting says (deepspeed 0.16.0 passes no
    # device_id, rules deepspeed.init-device-id; the backend is train.py's, not read here: unread_entry)
    ({}, False, "only its other inputs can rule it out: unknown distributed_backend"),
    ({"pipeline_model_parallel_size": "2", "distributed_backend": "nccl", "torch_eager_init": "false"},
     False, "no input of this run decides it"),
    ({"pipeline_model_parallel_size": "1"}, False, "only its other inputs can rule it out"),
]


@pytest.mark.parametrize("overrides,raised,undecided", LAZY_INIT)
def test_lazy_init_is_judged_by_the_stacks_own_settings(overrides, raised, undecided):
    got_raised, got_undecided = lazy_init(overrides)
    assert got_raised is raised
    if undecided is None:
        assert got_undecided == []
    else:
        (why,) = got_undecided
        assert "megatron-core's pipeline_model_parallel_size, a setting this run's stack does not have" in why
        assert undecided in why


def test_a_megatron_run_still_judges_lazy_init_by_its_pipeline_size():
    """The same check on a Megatron stack reads pipeline_model_parallel_size as before."""
    seed = ROOT / "examples" / "glm5_1_lora_pp4.sh"
    versions = {"megatron-core": "0.17.0", "ms-swift": "4.3.0", "mcore-bridge": "1.4.1"}
    config = derive(read_launch(str(seed)), versions, None, "2.13.0")
    assert "lazy-init-unbounded" in {f.kind for f in config.findings}
    one = derive(read_launch(str(seed)), versions, {"pipeline_model_parallel_size": "1"}, "2.13.0")
    assert "lazy-init-unbounded" not in {f.kind for f in one.findings}


def test_a_check_only_another_stacks_setting_leaves_open_is_decided_by_a_recorded_run():
    """Every input of its own given, lazy-init-unbounded is still open on DeepSpeed: the verdict
    names what decides it, never `--set` of the Megatron setting nor a torch release."""
    from auditor.analysis.undecided import undecided_inputs

    overrides = {"distributed_backend": "nccl", "torch_eager_init": "false"}
    config = derive(unread_entry(), {"deepspeed": "0.16.0"}, overrides, "2.13.0")
    doc = {"config": {**config.to_json(), "needs": []}, "sites": [{"reachable": "yes"}]}
    (lazy,) = [u for u in undecided_inputs(doc) if "lazy-init-unbounded" in u.what]
    assert lazy.decide.startswith("`p2paudit record` of a run") and "--set" not in lazy.decide


def test_a_pipeline_size_given_to_a_run_whose_entries_reach_nothing_is_a_lost_schedule(release):
    """INVALID for clean: `--set pipeline_model_parallel_size=2` on a DeepSpeed run whose entry
    point reaches no P2P site: the analysis lost the schedule (inconclusive), whatever the stack
    needs; VALID: the same entry point on one stage (examples/train.py's num_stages is the
    script's --pipeline-parallel-size 2 otherwise) says nothing of a schedule."""
    from auditor.analysis import verdict

    version, _ = release
    nothing = ["deepspeed.runtime.pipe.engine:PipelineEngine.is_first_stage"]
    lost = run_scan(ScanInputs(str(SCRIPT), targets=[f"deepspeed=={version}"], entries=nothing,
                               overrides={"pipeline_model_parallel_size": "2"}, torch_version="2.13.0", jobs=1))
    assert not [s for s in lost["sites"] if s.get("paths")]
    v = verdict.judge(lost)
    assert v.status == "inconclusive" and any("lost the schedule" in u.what for u in v.undecided)
    plain = run_scan(ScanInputs(str(SCRIPT), targets=[f"deepspeed=={version}"], entries=nothing,
                                overrides={"pipeline_model_parallel_size": "1"}, torch_version="2.13.0", jobs=1))
    assert not any("lost the schedule" in u.what for u in verdict.judge(plain).undecided)


def test_a_deepspeed_run_is_not_undecided_by_checks_of_frameworks_it_does_not_run():
    """VALID: megatron-core, Megatron-LM and ms-swift are no part of a DeepSpeed run's stack, so
    their checks (whose releases are unknown here) leave nothing undecided; only the stack's own
    and torch's may."""
    config = derive(read_launch(str(SCRIPT)), {"deepspeed": "0.16.0"}, {}, "2.13.0")
    assert not [u for u in config.undecided if u.split(".")[0] in ("mcore", "mlm", "swift", "bridge")]
