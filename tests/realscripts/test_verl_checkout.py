"""Issue 22 items 2 and 9 on verl after 0.6.1: the 0.7.x rules, a verl checkout read as its own
release, and release combinations narrowed by what verl's code calls in mbridge.

The checkout is built here in verl's layout at volcengine/verl b178a3cd56f58b2d502255daba591e92833930a7
(pyproject.toml `[tool.setuptools.dynamic] version = {file = "verl/version/version"}`, that file
`0.8.0.dev`, verl/__init__.py reading it at import), with the calls its
verl/workers/megatron_workers.py makes (:188 `AutoBridge.from_config(hf_config, dtype=dtype)`,
:276-280 init_process_group). The launch script follows examples/grpo_trainer/
run_qwen3_vl-8b-megatron.sh there: `python3 -m verl.trainer.main_ppo` with Hydra overrides, run
from the checkout's root.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from auditor import rulebook
from auditor.rulebook import checkout as checkout_rules
from auditor.config import call_fit, releases
from auditor.config.derive import derive
from auditor.config.launch import parse_launch, read_launch
from auditor.sources import SourceSet

PYPROJECT = """[project]
name = "verl"
dynamic = ["version", "dependencies", "optional-dependencies", "authors", "urls"]

[tool.setuptools.dynamic]
version = {file = "verl/version/version"}
"""
INIT = """import os
version_folder = os.path.dirname(os.path.join(os.path.abspath(__file__)))
with open(os.path.join(version_folder, "version/version")) as f:
    __version__ = f.read().strip()
"""
WORKERS = '''class MegatronWorker(Worker):
    def _init_hf_config_and_tf_config(self, model_path, tokenizer_or_path, dtype, override_model_config,
                                      override_transformer_config, trust_remote_code=False, megatron_config=None):
        self.vanilla_bridge = megatron_config.get("vanilla_mbridge", True)
        if megatron_config.use_mbridge:
            if self.vanilla_bridge:
                from verl.models.mcore.mbridge import AutoBridge

                bridge = AutoBridge.from_config(hf_config, dtype=dtype)
                bridge.set_extra_args(**override_transformer_config)


class ActorRolloutRefWorker(MegatronWorker, DistProfilerExtension):
    def __init__(self, config: DictConfig, role: str, **kwargs):
        if not torch.distributed.is_initialized():
            rank = int(os.environ["LOCAL_RANK"])
            torch.distributed.init_process_group(
                backend=f"cpu:gloo,{get_device_name()}:{get_nccl_backend()}",
                timeout=datetime.timedelta(seconds=self.config.get("nccl_timeout", 600)),
                init_method=os.environ.get("DIST_INIT_METHOD", None),
            )
'''
# verl/models/mcore/config_converter.py:53 and :94 at b178a3cd56 (as in 0.7.x).
CONVERTER = """def _get_base_transformer_config(hf_config, dtype, **override_transformer_config_kwargs):
    batch_p2p_comm = False
    base_config = {"batch_p2p_comm": batch_p2p_comm}
    base_config.update(override_transformer_config_kwargs)
    return base_config
"""
ENGINE_YAML = """pipeline_model_parallel_size: 1
use_mbridge: True
vanilla_mbridge: True
"""
SCRIPT = """set -x
python3 -m verl.trainer.main_ppo --config-path=config \\
    --config-name='ppo_megatron_trainer.yaml' \\
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 \\
    actor_rollout_ref.actor.megatron.use_mbridge=True \\
    trainer.n_gpus_per_node=8 trainer.nnodes=1
"""


def checkout(root: Path) -> Path:
    """A verl 0.8.0.dev clone at `root`; its example launch script."""
    (root / "verl/version").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "verl/version/version").write_text("0.8.0.dev\n")
    (root / "verl/__init__.py").write_text(INIT)
    (root / "verl/workers").mkdir()
    (root / "verl/workers/megatron_workers.py").write_text(WORKERS)
    (root / "verl/models/mcore").mkdir(parents=True)
    (root / "verl/models/mcore/config_converter.py").write_text(CONVERTER)
    (root / "verl/trainer/config/engine").mkdir(parents=True)
    (root / "verl/trainer/config/engine/megatron.yaml").write_text(ENGINE_YAML)
    script = root / "examples/grpo_trainer/run_qwen3_vl-8b-megatron.sh"
    script.parent.mkdir(parents=True)
    script.write_text(SCRIPT)
    return script


def test_a_script_inside_a_verl_checkout_is_judged_on_that_checkout(tmp_path, monkeypatch):
    script = checkout(tmp_path / "verl")
    monkeypatch.chdir(tmp_path)  # the audit runs elsewhere: the script's place decides
    launch = read_launch(str(script))
    root = (tmp_path / "verl").resolve()
    assert launch.pins["verl"] == "0.8.0.dev"
    assert launch.source_dirs["verl"] == root / "verl"
    assert launch.checkouts["verl"] == root
    said = [d for d in launch.diagnostics if d.kind == "launch.checkout-release"]
    assert said and "verl/version/version" in said[0].message


def _git(root: Path, head: str, tagged: str) -> None:
    """A clone's .git as git writes it: HEAD on main, a release tag v0.7.1 on `tagged`."""
    (root / ".git/refs/heads").mkdir(parents=True)
    (root / ".git/HEAD").write_text("ref: refs/heads/main\n")
    (root / ".git/refs/heads/main").write_text(head + "\n")
    (root / ".git/packed-refs").write_text(f"# pack-refs with: peeled fully-peeled sorted \n{tagged} refs/tags/v0.7.1\n")


def test_a_clone_between_releases_is_its_development_release(tmp_path):
    """git clone at b178a3cd56 (no release tag at HEAD): the version file's `0.8.0.dev` names the
    line it is on; a clone whose file names a release but sits past it stays unknown."""
    script = checkout(tmp_path / "verl")
    _git(tmp_path / "verl", "b178a3cd56f58b2d502255daba591e92833930a7", "4f9e9a47d49dfbcac960857dd67748c67aecd2e5")
    assert read_launch(str(script)).pins["verl"] == "0.8.0.dev"
    (tmp_path / "verl/verl/version/version").write_text("0.7.1\n")
    launch = read_launch(str(script))
    assert "verl" not in launch.pins
    assert any(d.kind == "launch.checkout-unversioned" for d in launch.diagnostics)


def test_the_checkout_s_own_code_confirms_the_rules_it_holds(tmp_path):
    """0.8.0.dev is no release the rules verify: an entry holds where the checkout's code is its
    code (its cpu:gloo,nccl process group, mbridge by default), and the rest stays unknown."""
    script = checkout(tmp_path / "verl")
    launch = read_launch(str(script))
    eff = derive(launch, {"verl": "0.8.0.dev", "mbridge": "0.15.1", "megatron-core": "0.12.0"},
                 torch_version="2.10.0")
    assert eff.values["distributed_backend"].value == "nccl"
    assert eff.values["init_device_id_given"].value is False
    assert eff.values["batch_p2p_comm"].value is False
    assert "mbridge" in eff.values["batch_p2p_comm"].source


def _src(root: Path, name: str) -> SourceSet:
    return SourceSet(name, None, "dir", root, str(root))


def _auto_bridge(root: Path, signature: str) -> SourceSet:
    """mbridge's mbridge/core/auto_bridge.py with 0.13.0's or 0.15.1's `from_config`."""
    (root / "mbridge/core").mkdir(parents=True)
    (root / "mbridge/core/auto_bridge.py").write_text(
        f"class AutoBridge:\n    @classmethod\n    def from_config({signature}) -> Bridge:\n        pass\n")
    return _src(root, "mbridge")


ENTRY = {"caller": "verl/workers/megatron_workers.py", "call": "AutoBridge.from_config",
         "callee": "mbridge", "callee_source": "mbridge/core/auto_bridge.py",
         "callee_def": "AutoBridge.from_config"}


def test_an_mbridge_whose_from_config_takes_no_dtype_cannot_run_this_verl(tmp_path):
    checkout(tmp_path / "verl")
    verl = _src(tmp_path / "verl/verl", "verl")  # the checkout's package folder, as the scan reads it
    assert not call_fit.fits(ENTRY, verl, _auto_bridge(tmp_path / "0.13.0", "cls, hf_config: AutoConfig"))
    assert call_fit.fits(ENTRY, verl, _auto_bridge(tmp_path / "0.15.1", "cls, hf_config: AutoConfig, **kwargs"))


def test_a_call_not_read_narrows_nothing(tmp_path):
    """verl 0.6.0 calls `AutoBridge.from_config(hf_config)`: every mbridge takes it."""
    (tmp_path / "v/verl/workers").mkdir(parents=True)
    (tmp_path / "v/verl/workers/megatron_workers.py").write_text("bridge = AutoBridge.from_config(hf_config)\n")
    old = _auto_bridge(tmp_path / "0.13.0", "cls, hf_config: AutoConfig")
    assert call_fit.fits(ENTRY, _src(tmp_path / "v", "verl"), old)
    assert call_fit.fits(ENTRY, _src(tmp_path / "nothing", "verl"), old)


@pytest.mark.wheels
def test_the_checkout_is_judged_only_with_mbridge_releases_it_can_call(tmp_path):
    """Both combinations keep mbridge 0.15.1 (the real wheels: 0.1.0-0.13.1 lack dtype=)."""
    script = checkout(tmp_path / "verl")
    launch = read_launch(str(script))
    plan = releases.plan(launch)
    assert plan is not None and plan.stated["verl"] == "0.8.0.dev"
    assert {c["mbridge"] for c in plan.combinations} == {"0.15.1"}


def _derive_release(tmp_path: Path, verl: str, extra: str = ""):
    path = tmp_path / "run.sh"
    path.write_text(SCRIPT.replace("    actor_rollout_ref.actor.megatron.use_mbridge=True \\\n", "")
                    .replace("trainer.nnodes=1", f"trainer.nnodes=1 {extra}"))
    launch = parse_launch(path.read_text(), str(path))
    return derive(launch, {"verl": verl, "mbridge": "0.15.1", "megatron-core": "0.12.0"}, torch_version="2.10.0")


@pytest.mark.wheels
@pytest.mark.parametrize("verl", ["0.8.0", "0.9.0", "0.9.1"])
def test_verl_0_8_on_builds_through_its_engine(tmp_path, verl):
    """0.8.0 on: the engine workers (verl/workers/engine/megatron/transformer_impl.py) build the
    config through a bridge; 0.9.x defaults to Megatron-Bridge, whose provider_overrides
    hard-code batch_p2p_comm False; their process group is 'cpu:gloo,cuda:nccl' without
    device_id (verl/utils/distributed.py initialize_global_process_group_ray)."""
    eff = _derive_release(tmp_path, verl)
    assert eff.values["vanilla_mbridge"].value is (verl == "0.8.0")
    assert eff.values["batch_p2p_comm"].value is False
    assert eff.values["distributed_backend"].value == "nccl"
    assert eff.values["init_device_id_given"].value is False
    assert eff.outside_rules == {}
    other = "False" if verl == "0.8.0" else "True"
    eff = _derive_release(tmp_path, verl, f"actor_rollout_ref.actor.megatron.vanilla_mbridge={other}")
    # 0.8.0's Megatron-Bridge path sets no batch_p2p_comm (not modelled); 0.9's mbridge path: mbridge's
    assert eff.values["batch_p2p_comm"].known is (verl != "0.8.0")
    eff = _derive_release(tmp_path, verl, "actor_rollout_ref.actor.megatron.use_mbridge=False")
    assert not eff.values["batch_p2p_comm"].known  # MegatronEngine asserts use_mbridge


@pytest.mark.wheels
@pytest.mark.parametrize("verl", ["0.7.0", "0.7.1"])
def test_verl_0_7_builds_with_mbridge_by_default(tmp_path, verl):
    """0.7.x: use_mbridge and vanilla_mbridge default True (engine/megatron.yaml), so mbridge's
    hard-coded batch_p2p_comm=False holds; vanilla_mbridge=False hands the config to
    Megatron-Bridge, which these rules do not model: unknown, never a default."""
    path = tmp_path / "run.sh"
    path.write_text(SCRIPT.replace("    actor_rollout_ref.actor.megatron.use_mbridge=True \\\n", ""))
    launch = parse_launch(path.read_text(), str(path))
    eff = derive(launch, {"verl": verl, "mbridge": "0.15.1", "megatron-core": "0.12.0"}, torch_version="2.10.0")
    assert eff.values["use_mbridge"].value is True and eff.values["vanilla_mbridge"].value is True
    assert eff.values["batch_p2p_comm"].value is False
    assert eff.values["distributed_backend"].value == "nccl"
    assert eff.outside_rules == {}
    path.write_text(SCRIPT.replace("trainer.nnodes=1", "trainer.nnodes=1 actor_rollout_ref.actor.megatron.vanilla_mbridge=False"))
    launch = parse_launch(path.read_text(), str(path))
    eff = derive(launch, {"verl": verl, "mbridge": "0.15.1", "megatron-core": "0.12.0"}, torch_version="2.10.0")
    assert not eff.values["batch_p2p_comm"].known


CORPUS = Path(os.environ.get("P2PAUDIT_REAL_SCRIPTS", "/work/upstream/real_scripts"))
VERL_CHECKOUT = CORPUS / "volcengine+verl@b178a3cd56"
QUOTED = [e for table in ("arg", "rule") for e in rulebook.load("verl").data.get(table, [])
          if str(e.get("source", "")).startswith("volcengine/verl@b178a3cd56 ")]


@pytest.mark.skipif(not (VERL_CHECKOUT / "verl/version/version").is_file(),
                    reason="the verl checkout (benchmarks/real_scripts/fetch.py) is not here")
def test_the_rules_quote_the_verl_checkout():
    """Every entry quoting the checkout has its `code` at the line its `source` names there, in
    the function it names, and the checkout states the development release the entries select."""
    assert len(QUOTED) == 2
    for e in QUOTED:
        path, line = e["source"].split()[1].rsplit(":", 1)
        lines = (VERL_CHECKOUT / path).read_text().splitlines()
        tail = "".join(lines[int(line) - 1:]).replace(" ", "")
        assert tail.startswith(e["code"].replace("\n", "").replace(" ", "")), e["source"]
        assert checkout_rules.confirmed(e, VERL_CHECKOUT)
        version = (VERL_CHECKOUT / "verl/version/version").read_text().strip()
        assert rulebook.version_in(version, e["versions"])
