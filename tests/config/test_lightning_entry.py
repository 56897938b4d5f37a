"""rules/nemo.toml is what the releases say about themselves: each `[[script_call]]`'s parameter
is read from the callee's own signature in the release `read` names (its position, keyword-only
or not, and its default), each `code` at its `source` line; `[[entry_fact]]`s likewise; and the
`coverage run` options that take a value are the installed coverage's own (its optparse table).
The releases: nemo_toolkit 2.5.0 and lightning 2.4.0 (NeMo 2.5.0 requires lightning<=2.4.0).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from auditor import rulebook, sources
from auditor.config.lightning_entry import builds

DATA = rulebook.load("nemo").data
pytestmark = pytest.mark.wheels


def _root(read: str) -> Path:
    return sources.resolve(read).root


def _signature(root: Path, dotted: str) -> ast.arguments:
    """The __init__ arguments of class `dotted`, found by following the release's own
    re-exports (`from nemo.lightning.pytorch.strategies import MegatronStrategy`)."""
    module, _, name = dotted.rpartition(".")
    for _ in range(6):
        base = root.joinpath(*module.split("."))
        path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)
        if cls is not None:
            init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
            return init.args
        imported = next(n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                        and any((a.asname or a.name) == name for a in n.names))
        module = imported.module if not imported.level else ".".join(
            module.split(".")[: len(module.split(".")) - imported.level + (1 if base.is_dir() else 0)]
            + ([imported.module] if imported.module else []))
    raise AssertionError(f"{dotted} not found")


@pytest.mark.parametrize("spec", DATA["script_call"], ids=lambda s: f"{s['callee'][0]}.{s['param']}")
def test_each_parameter_is_the_release_s_own(spec):
    root = _root(spec["read"])
    path, _, line = spec["source"].rpartition(":")
    text = (root / path).read_text(encoding="utf-8").splitlines()
    assert "".join(spec["code"].split()) in "".join(text[int(line) - 1].split()), spec["source"]
    for callee in spec["callee"]:
        if not callee.startswith(spec["read"].split("==")[0].replace("-toolkit", "")):
            continue  # a name of another distribution (lightning's Trainer under pytorch_lightning)
        args = _signature(root, callee)
        positional = [a.arg for a in args.args[1:]]
        if spec["param"] not in positional and spec["param"] not in [a.arg for a in args.kwonlyargs]:
            assert args.kwarg is not None, (callee, spec["param"])  # passed on through **kwargs
            assert "position" not in spec
            continue
        if "position" in spec:
            assert positional[spec["position"]] == spec["param"], callee
            default = args.defaults[positional.index(spec["param"]) - len(positional) + len(args.defaults)]
        else:
            assert spec["param"] in [a.arg for a in args.kwonlyargs], callee
            default = args.kw_defaults[[a.arg for a in args.kwonlyargs].index(spec["param"])]
        said = ast.literal_eval(default)
        if "default" in spec:
            assert said == spec["default"], callee
        else:
            assert said is None, callee


def test_the_process_group_backend_default_is_lightnings():
    """Left out, DDPStrategy takes the device's backend: 'nccl' on CUDA (the rule's default)."""
    root = _root("lightning==2.4.0")
    text = (root / "lightning/fabric/utilities/distributed.py").read_text(encoding="utf-8")
    assert 'return "nccl" if device.type == "cuda" else "gloo"' in text


@pytest.mark.parametrize("fact", DATA["entry_fact"], ids=lambda f: f["key"])
def test_each_fact_is_the_release_s_code(fact):
    root = _root(fact["read"])
    path, _, line = fact["source"].rpartition(":")
    lines = (root / path).read_text(encoding="utf-8").splitlines()
    assert fact["code"].strip() in lines[int(line) - 1], fact["source"]
    call = "".join(lines[int(line) - 1:int(line) + 2])
    assert "device_id" not in call  # lazy NCCL init: no device_id reaches init_process_group


def test_the_strategy_sizes_reach_the_megatron_config():
    """MegatronStrategy's parallel sizes are set on the model's TransformerConfig (every
    ParallelismConfig field it has); batch_p2p_comm is none of them, so the config's own holds."""
    root = _root("nemo-toolkit==2.5.0")
    text = (root / "nemo/lightning/_strategy_lib.py").read_text(encoding="utf-8")
    assert "setattr(config, attr_name, getattr(parallelism, attr_name))" in text
    strategy = (root / "nemo/lightning/pytorch/strategies/megatron_strategy.py").read_text(encoding="utf-8")
    config = strategy[strategy.index("class ParallelismConfig"):strategy.index("class MegatronStrategy")]
    assert "pipeline_model_parallel_size: int" in config and "batch_p2p_comm" not in config


def test_coverage_run_value_options_are_coverages_own():
    from coverage.cmdline import COMMANDS  # the installed coverage's optparse table
    (runner,) = [r for r in DATA["command_runner"] if r["program"] == "coverage"]
    parser = COMMANDS["run"]
    takes_value = {s for o in parser.option_list if o.takes_value() for s in o._long_opts + o._short_opts}
    flags = {s for o in parser.option_list if not o.takes_value() for s in o._long_opts + o._short_opts}
    assert set(runner["value_options"]) == takes_value - {"--help"}
    assert set(runner["module_options"]) <= flags


def test_a_script_builds_a_strategy_by_any_import_path(tmp_path):
    """`from nemo import lightning as nl; nl.MegatronStrategy()` and the module's own path
    alike; a script that only names it in a string or builds another class does not."""
    callees = tuple(DATA["launcher"][0]["entry_builds"])
    for text, built in [("from nemo import lightning as nl\nnl.MegatronStrategy()\n", True),
                        ("from nemo.lightning.pytorch.strategies import MegatronStrategy as S\nS(2)\n", True),
                        ("print('nl.MegatronStrategy()')\n", False),
                        ("from nemo import lightning as nl\nnl.FSDP2Strategy()\n", False)]:
        (tmp_path / "train.py").write_text(text)
        assert builds("train.py", str(tmp_path / "run.sh"), callees) is built, text


def test_the_release_requires_any_megatron_core_and_the_lightning_read():
    """nemo_toolkit 2.5.0's own Requires-Dist: megatron_core without a version bound (so a NeMo run
    is judged on the megatron-core releases the rules cover, as any megatron-core run), and a
    lightning range that admits the 2.4.0 the Trainer facts are read from."""
    from packaging.requirements import Requirement

    root = _root("nemo-toolkit==2.5.0")
    meta = next(root.glob("nemo_toolkit-2.5.0.dist-info/METADATA")).read_text(encoding="utf-8")
    requires = [Requirement(line.split(":", 1)[1]) for line in meta.splitlines() if line.startswith("Requires-Dist:")]
    mcore = [r for r in requires if r.name.replace("_", "-") == "megatron-core"]
    assert mcore and all(not r.specifier for r in mcore)
    lightning = [r for r in requires if r.name == "lightning"]
    assert lightning and all(r.specifier.contains("2.4.0") for r in lightning)
