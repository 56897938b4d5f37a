"""Megatron-LM's own front end (`torchrun ... pretrain_gpt.py`) in the effective config.

Oracles: Megatron-LM's real argument handling. Its parse_args, validate_args and
core_transformer_config_from_args from the megatron-core 0.17.0 wheel run in a subprocess on
every example's flags (CPU only: the GPU's architecture is the one hardware query they make, and
is given as an H100/H200's); what `derive` says must be what they produce, and a start-up error
must be one of `derive`'s findings. From 0.18.0 on, importing megatron.core needs triton, which
a CPU-only machine does not have: for those releases the rules are held to the code statically
(tests/rules/test_rules_agree.py, and the parser defaults and init_process_group arguments below).
"""

from __future__ import annotations

import ast
import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tests.config.megatron_lm_parser import megatron_cli

from auditor import rulebook, sources
from auditor.bash.values import Symbolic
from auditor.config.coerce import overrides_from
from auditor.config.derive import derive
from auditor.config.expr import UNKNOWN
from auditor.config.launch import parse_launch, read_launch
from auditor.config.model import LaunchConfig
from auditor.scan import ScanInputs, run_scan

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "megatron_lm_gpt_pp2.sh"
MCORE = "0.17.0"
VERIFIED = rulebook.load("megatron-lm").section("framework")["verified"]

# The command every check example is appended to: a 24-layer GPT on 8 GPUs, TP 2 x PP 2.
BASE = ("export CUDA_DEVICE_MAX_CONNECTIONS=1\n"
        "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 24 --hidden-size 1024 "
        "--num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 "
        "--micro-batch-size 1 --bf16 --lr 1e-4 --train-iters 10 "
        "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2")

# Compared with Megatron-LM's TransformerConfig (or its args where the config has no such field).
KEYS = (
    "tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
    "expert_model_parallel_size", "expert_tensor_parallel_size", "data_parallel_size",
    "virtual_pipeline_model_parallel_size", "overlap_p2p_comm", "batch_p2p_comm",
    "variable_seq_lengths", "use_ring_exchange_p2p", "overlap_p2p_comm_warmup_flush",
    "mtp_standalone", "sequence_parallel", "num_layers", "num_layers_in_first_pipeline_stage",
    "num_layers_in_last_pipeline_stage", "num_moe_experts", "global_batch_size",
    "distributed_backend", "distributed_timeout_minutes",
)


def example_text(example: str) -> tuple[str, list[str]]:
    """BASE with an example's flags appended: `export` lines, flags, `@KEY=VALUE` for --set."""
    exports = [ln for ln in example.splitlines() if ln.startswith("export ")]
    words = shlex.split(" ".join(ln for ln in example.splitlines() if not ln.startswith("export ")))
    sets = [w[1:] for w in words if w.startswith("@")]
    flags = shlex.join(w for w in words if not w.startswith("@"))
    return "\n".join(exports + [f"{BASE} {flags}"]) + "\n", sets


def derive_text(text: str, sets: list[str] = (), version: str = MCORE):
    launch = parse_launch(text, "run.sh")
    return launch, derive(launch, {"megatron-core": version}, overrides_from(sets), "2.11.0")


def frontend_checks() -> list[dict]:
    return rulebook.load("megatron-lm").data.get("check", [])


# --- the shipped example -------------------------------------------------------------------------


def test_example_pp2_tp2_dp2_with_provenance():
    launch = read_launch(EXAMPLE)
    config = derive(launch, {"megatron-core": MCORE}, torch_version="2.11.0")
    lines = EXAMPLE.read_text().splitlines()
    assert launch.launcher == "torchrun pretrain_gpt.py" and launch.world_size == 8
    for key, value, flag in (("pipeline_model_parallel_size", 2, "--pipeline-model-parallel-size 2"),
                             ("tensor_model_parallel_size", 2, "--tensor-model-parallel-size 2")):
        got = config.get(key)
        assert got.value == value
        line = int(got.source.rpartition(":")[2])
        assert flag in lines[line - 1] and got.lines == (line,)
    expect = {
        "data_parallel_size": (2, "megatron/training/arguments.py:329"),
        "overlap_p2p_comm": (False, "megatron/training/arguments.py:844"),
        "batch_p2p_comm": (True, "megatron/training/arguments.py:1661"),
        "variable_seq_lengths": (False, "megatron/training/arguments.py:1038"),
        "init_device_id_given": (False, "megatron/training/initialize.py:356"),
        "default_group_timeout_s": (1800, "megatron/training/initialize.py:347"),
    }
    for key, (value, source) in expect.items():
        got = config.get(key)
        assert got.value == value, (key, got)
        assert got.source == f"megatron-lm {MCORE}: {source}", (key, got.source)
        assert got.provenance.startswith("Megatron-LM: ")
    assert "no virtual pipeline" in config.get("overlap_p2p_comm").provenance
    assert config.value("pipeline_schedule") == "1f1b"
    assert config.versions["megatron-lm"] == MCORE
    assert not config.notes  # a known front end: nothing left to "unknown launcher"
    assert not [f for f in config.findings if f.severity == "error"]
    # Lazy init: Megatron-LM passes no device_id, so torch creates NCCL communicators lazily.
    assert config.value("torch_eager_init") is False
    assert "lazy-init-unbounded" in {f.kind for f in config.findings}


def test_later_release_reads_its_own_file():
    _, config = derive_text(BASE + "\n", version="0.19.2")
    assert config.value("batch_p2p_comm") is True
    assert config.get("batch_p2p_comm").source == (
        "megatron-lm 0.19.2: megatron/training/argument_utils.py (line 302 as read in 0.18.2)")


def test_release_without_megatron_training_is_unknown():
    _, config = derive_text(BASE + "\n", version="0.16.1")
    effective = config.to_json()["effective"]
    for key in ("pipeline_model_parallel_size", "data_parallel_size", "batch_p2p_comm",
                "variable_seq_lengths"):
        assert effective[key] == "unknown", key
    assert "covers only >=0.17.0" in config.get("data_parallel_size").provenance
    assert not config.notes  # neither "no --model" (a swift notion) nor "not read"


def test_virtual_pipeline_from_layers_per_stage_unbatches():
    _, config = derive_text(BASE + " --num-layers-per-virtual-pipeline-stage 3\n")
    assert config.value("virtual_pipeline_model_parallel_size") == 4  # 24 / PP 2 / 3
    assert config.value("overlap_p2p_comm") is True  # the store_false default, kept with a VPP
    assert config.value("batch_p2p_comm") is False
    assert config.value("pipeline_schedule") == "interleaved"


@pytest.mark.parametrize("extra,standalone,vpp", [
    ("--pipeline-model-parallel-layout 'Et*12|t*12L'", False, None),  # no MTP layer to stand alone
    ("--pipeline-model-parallel-layout 'Et*6|t*6|t*6|t*6,m|L' --mtp-num-layers 1", UNKNOWN, 2),
])
def test_layout_leaves_unknown_what_it_does_not_parse(extra, standalone, vpp):
    """The layout's stage count is read (tests/realscripts/test_stacks_layout.py); where an MTP
    layer stands alone is not."""
    _, config = derive_text(f"{BASE} {extra}\n")
    assert config.value("virtual_pipeline_model_parallel_size") == vpp
    assert config.value("mtp_standalone") is standalone
    assert "--set mtp_standalone" in config.get("mtp_standalone").provenance


def test_user_script_is_not_megatron_lm():
    _, config = derive_text(BASE.replace("pretrain_gpt.py", "my_train.py") + "\n")
    assert any("matches no rules frontend" in n for n in config.notes)
    effective = config.to_json()["effective"]
    # What front ends derive is unknown, and so is every flag the script was given...
    assert effective["batch_p2p_comm"] == effective["pipeline_model_parallel_size"] == "unknown"
    # ...but a flag it was not given leaves megatron-core's own default.
    assert effective["use_ring_exchange_p2p"] is False
    assert "megatron-core" in config.get("use_ring_exchange_p2p").provenance


def test_superseded_check_is_reported_once():
    _, config = derive_text(BASE + " --pipeline-model-parallel-size 3\n")  # 8 % (2 * 3)
    rules_fired = {f.detail["rule"]: f for f in config.findings}
    assert "mlm.world-divisible" in rules_fired and "mcore.world-divisible" not in rules_fired
    finding = rules_fired["mlm.world-divisible"]
    assert finding.detail["supersedes"] == ["mcore.world-divisible", "mcore.expert-world-divisible"]
    assert "AssertionError in validate_args" in finding.message
    mcore = next(e for e in rulebook.load("megatron-core").data["check"]
                 if e["id"] == "mcore.world-divisible")
    assert config.evaluate(mcore["when"]) is True  # it holds, and is not reported twice


@pytest.mark.wheels
@pytest.mark.parametrize("extra,batched,shapes", [
    ("", True, False),  # the example: 1F1B, batched, no shape exchange
    ("--num-layers-per-virtual-pipeline-stage 3", False, False),  # interleaved: overlap, unbatched
])
def test_scan_reaches_the_p2p_path_the_front_end_chose(tmp_path, extra, batched, shapes):
    script = tmp_path / "run.sh"
    script.write_text(EXAMPLE.read_text().replace("--pipeline-model-parallel-size 2",
                                                  f"--pipeline-model-parallel-size 2 {extra}"))
    doc = run_scan(ScanInputs(str(script), targets=[f"megatron-core=={MCORE}"], torch_version="2.11.0"))
    schedule = ("schedules.forward_backward_pipelining_with_interleaving" if extra
                else "schedules.forward_backward_pipelining_without_interleaving")
    reach: dict[str, set[str]] = {}
    for site in doc["sites"]:
        if site["path"] == "megatron/core/pipeline_parallel/p2p_communication.py":
            reach.setdefault(site["function"].rsplit(".", 1)[-1], set()).add(site["reachable"])
            if site["reachable"] == "yes":
                assert all(p[0] == schedule for p in site["paths"]), site["paths"]
    assert reach["_batched_p2p_ops"] == {"yes" if batched else "no"}
    assert reach["_p2p_ops"] == {"no" if batched else "yes"}
    assert reach["_communicate_shapes"] == {"yes" if shapes else "no"}
    assert not [s for s in doc["sites"] if s["verdict"] == "contradiction"]


# --- every check by its VALID/INVALID examples ---------------------------------------------------


def check_cases() -> list:
    return [pytest.param(entry["id"], example, kind == "invalid", id=f"{entry['id']}:{kind}{n}")
            for entry in frontend_checks() for kind in ("valid", "invalid")
            for n, example in enumerate(entry.get(kind, []))]


@pytest.mark.parametrize("rule_id,example,fires", check_cases())
def test_check_examples(rule_id, example, fires):
    text, sets = example_text(example)
    _, config = derive_text(text, sets)
    fired = [f for f in config.findings if f.detail["rule"] == rule_id]
    assert bool(fired) is fires, (example, [f.message for f in config.findings], config.undecided)


def test_every_check_has_examples():
    for entry in frontend_checks():
        assert entry.get("valid") and entry.get("invalid"), entry["id"]


# --- Megatron-LM's own argument handling as the oracle -------------------------------------------

HARNESS = textwrap.dedent('''
    import json, os, sys, warnings
    warnings.filterwarnings("ignore")
    from megatron.training import arguments
    try:
        from megatron.training.argument_utils import core_transformer_config_from_args
    except ImportError:
        from megatron.training.arguments import core_transformer_config_from_args
    arguments.get_device_arch_version = lambda: 9  # an H100/H200 (sm_90): no GPU here
    cases_path, results_path = sys.argv[1:3]
    with open(cases_path) as f:
        cases = json.load(f)
    results = []
    for case in cases:
        os.environ.update(case["env"])
        sys.argv = ["pretrain_gpt.py", *case["argv"]]
        try:
            args = arguments.parse_args()
            arguments.validate_args(args)
            config = core_transformer_config_from_args(args)
        except BaseException as exc:  # argparse exits, validation asserts, __post_init__ raises
            results.append({"error": f"{type(exc).__name__}: {exc}"})
            continue
        results.append({k: getattr(config, k) if hasattr(config, k) else getattr(args, k)
                        for k in case["keys"]})
    with open(results_path, "w") as f:
        json.dump(results, f, default=repr)
''')


def oracle_cases() -> list[tuple[str, str, list[str]]]:
    """(id, launch script text, --set pairs): the example, every check example without --set,
    and the settings that decide which P2P path runs."""
    cases = [("example", EXAMPLE.read_text(), [])]
    for entry in frontend_checks():
        for kind in ("valid", "invalid"):
            for n, example in enumerate(entry.get(kind, [])):
                text, sets = example_text(example)
                if not sets:
                    cases.append((f"{entry['id']}:{kind}{n}", text, sets))
    for flags in ("", "--num-virtual-stages-per-pipeline-rank 1", "--sequence-parallel",
                  "--tensor-model-parallel-size 1 --sequence-parallel",
                  "--context-parallel-size 2 --distributed-timeout-minutes 45",
                  "--decoder-first-pipeline-num-layers 10 --decoder-last-pipeline-num-layers 14",
                  "--num-experts 8 --expert-model-parallel-size 2 --expert-tensor-parallel-size 1 "
                  "--sequence-parallel",
                  "--use-ring-exchange-p2p --global-batch-size 64",
                  "--overlap-p2p-communication-warmup-flush",
                  "--pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 2 "
                  "--overlap-p2p-communication-warmup-flush"):
        cases.append((f"flags:{flags}", f"{BASE} {flags}\n", []))
    return cases


def argv_of(launch: LaunchConfig) -> list[str]:
    """The training flags as the shell passes them; unresolved paths get a stand-in."""
    out: list[str] = []
    for flag in launch.flags.values():
        out.append(flag.spelling)
        out += ["/tmp/unresolved" if isinstance(v, Symbolic) else str(v) for v in flag.values]
    return out


@pytest.fixture(scope="module")
def megatron_lm(tmp_path_factory) -> dict[str, dict]:
    """Megatron-LM's result for every oracle case, from one subprocess."""
    root = sources.resolve(f"megatron-core=={MCORE}").root
    work = tmp_path_factory.mktemp("megatron_lm")
    ids, cases = [], []
    for ident, text, _ in oracle_cases():
        launch = parse_launch(text, "run.sh")
        env = {name: str(var.value) for name, var in launch.env.items()
               if var.how in ("export", "inline") and not isinstance(var.value, Symbolic)}
        env["WORLD_SIZE"] = str(launch.world_size)
        ids.append(ident)
        cases.append({"argv": argv_of(launch), "env": env, "keys": list(KEYS)})
    (work / "cases.json").write_text(json.dumps(cases))
    run = subprocess.run(
        [sys.executable, "-c", HARNESS, str(work / "cases.json"), str(work / "results.json")],
        env={**os.environ, "PYTHONPATH": str(root), "RANK": "0", "LOCAL_RANK": "0"},
        capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return dict(zip(ids, json.loads((work / "results.json").read_text())))


@pytest.mark.heavy
@pytest.mark.wheels
@pytest.mark.parametrize("ident,text,sets", oracle_cases(), ids=[c[0] for c in oracle_cases()])
def test_rules_agree_with_megatron_lm(megatron_lm, ident, text, sets):
    real = megatron_lm[ident]
    _, config = derive_text(text, sets)
    errors = [f for f in config.findings if f.severity == "error"
              and f.detail.get("rule", "").startswith(("mlm.", "mcore."))]
    if "error" in real:
        assert errors, (real["error"], [f.message for f in config.findings], config.undecided)
        return
    assert not errors, [f.message for f in errors]
    derived = {key: config.value(key) for key in KEYS}
    assert derived == {key: real[key] for key in KEYS}


@pytest.mark.wheels
def test_oracle_sees_the_failures_the_examples_claim(megatron_lm):
    """The oracle itself can fail: Megatron-LM refuses every invalid example of a Megatron-LM
    check and accepts every valid one."""
    for entry in frontend_checks():
        for kind in ("valid", "invalid"):
            for n, _example in enumerate(entry.get(kind, [])):
                real = megatron_lm.get(f"{entry['id']}:{kind}{n}")
                if real is not None and entry.get("category", "config") == "config":
                    assert ("error" in real) is (kind == "invalid"), (entry["id"], kind, real)


# --- the parser and init_process_group, statically in every verified release ---------------------


@pytest.mark.wheels
@pytest.mark.parametrize("version", VERIFIED)
def test_arg_defaults_are_the_parsers(version):
    cli = megatron_cli(sources.resolve(f"megatron-core=={version}").root)
    defaults: dict[str, object] = {}
    for option in cli.values():
        defaults.setdefault(option.dest, option.default)
    for entry in rulebook.load("megatron-lm", version).table("arg"):
        assert entry["key"] in defaults, f"no flag sets {entry['key']} in {version}"
        assert defaults[entry["key"]] == entry.get("default"), (entry["key"], version)


@pytest.mark.wheels
@pytest.mark.parametrize("version", VERIFIED)
def test_init_process_group_gets_no_device_id(version):
    """The rule `init_device_id_given = False`: the keywords _initialize_distributed builds for
    init_process_group, and everything it later assigns into them, never include device_id."""
    path = sources.resolve(f"megatron-core=={version}").root / "megatron/training/initialize.py"
    function = next(n for n in ast.walk(ast.parse(path.read_text()))
                    if isinstance(n, ast.FunctionDef) and n.name == "_initialize_distributed")
    calls = [n for n in ast.walk(function) if isinstance(n, ast.Call)
             and ast.unparse(n.func) == "torch.distributed.init_process_group"]
    assert [ast.unparse(c) for c in calls] == ["torch.distributed.init_process_group(**init_process_group_kwargs)"]
    keys = {k.value for n in ast.walk(function) if isinstance(n, ast.Assign)
            and ast.unparse(n.targets[0]) == "init_process_group_kwargs" for k in n.value.keys}
    keys |= {n.targets[0].slice.value for n in ast.walk(function) if isinstance(n, ast.Assign)
             and isinstance(n.targets[0], ast.Subscript)
             and ast.unparse(n.targets[0].value) == "init_process_group_kwargs"}
    assert "timeout" in keys and "device_id" not in keys, keys
