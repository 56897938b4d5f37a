"""What DeepSpeed's engine reading (config/deepspeed_engine.py) cannot vouch for, and the Trainer
it can: the r38 review's holes (h39).

The entries reproduce constructs of pinned upstream code (/work/upstream/real_scripts):
- microsoft/Megatron-DeepSpeed@f4157bea69 megatron/model/gpt_model.py and EleutherAI/gpt-neox@
  ea7aefd8f8 megatron/initialize.py import `PipeModelDataParallelTopology` from
  deepspeed.runtime.pipe.topology for their rank grid; a script that does so and sends with
  torch.distributed itself builds no PipelineEngine;
- NVIDIA/Megatron-LM@d98e8a64dd megatron/rl/agent/registry.py:3 `from importlib import
  import_module`; OpenRLHF/OpenRLHF@3c3be6234e tests/test_experience.py:30
  `importlib.util.spec_from_file_location` + `spec.loader.exec_module`; microsoft/
  DeepSpeedExamples@83757d9c93 training/bing_bert/turing/utils.py:153 exec of a built class
  template (its text interpolates values the file does not build: not read as code);
- microsoft/DeepSpeedExamples@83757d9c93 training/BingBertGlue/run_glue_classifier_bert_large.py:20
  `sys.path = ['/home/t-yuchenglu/DeepSpeed'] + sys.path` (a DeepSpeed checkout put first);
- alibaba/Pai-Megatron-Patch@a098ca5acb examples/baichuan/ds_train_huggingface_baichuan.py:157,279
  (`TrainingArguments(deepspeed='./ds_config.json')`, `Trainer(...)`), run by
  run_ds_train_huggingface_baichuan.sh:123 under torchrun.
"""

from __future__ import annotations

import importlib
import warnings
from pathlib import Path
from textwrap import dedent

import pytest

from auditor import rulebook, sources
from auditor.config.launch import read_launch

SENDS = '''
import deepspeed
import torch
import torch.distributed as dist
{head}

deepspeed.init_distributed()
act = torch.zeros(4)
if dist.get_rank() == 0:
    dist.send(act, dst=1)
else:
    dist.recv(act, src=0)
'''

ZERO = '''
import deepspeed
import torch
{head}

model = torch.nn.Linear(4, 4)
engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters())
{tail}
'''


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, launcher: str = "deepspeed --num_gpus 2",
         files: dict[str, str] | None = None, before: str = "") -> list:
    (tmp_path / "train.py").write_text(dedent(text))
    for name, body in (files or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    (tmp_path / "run.sh").write_text(f"#!/bin/bash\n{before}\n{launcher} train.py\n")
    monkeypatch.chdir(tmp_path)
    launch = read_launch("run.sh")
    assert launch.script == "train.py"
    return launch.diagnostics


def _unknown(diagnostics: list) -> str:
    assert not [d for d in diagnostics if d.kind == "launch.not-pipeline"]
    (said,) = [d for d in diagnostics if d.kind == "launch.unknown-stack"]
    return str(said.message)


@pytest.mark.parametrize("head", [
    "from deepspeed.runtime.pipe.topology import PipeModelDataParallelTopology\n"
    "topo = PipeModelDataParallelTopology(num_pp=2, num_mp=1, num_dp=1)",
    "from deepspeed.pipe import ProcessTopology",
])
@pytest.mark.parametrize("launcher", ["deepspeed --num_gpus 2", "torchrun --nproc_per_node 2"])
def test_a_topology_import_is_no_pipeline_engine_the_own_sends_run(tmp_path, monkeypatch, head, launcher):
    """False CLEAN before: the import of deepspeed's pipe package read as the PipelineEngine,
    judged on it (its PP size put into the run's values). The class is what builds it. Under
    torchrun (no deepspeed.initialize) the sends stay undecided, never megatron-core's guess."""
    diagnostics = _run(tmp_path, monkeypatch, SENDS.format(head=head), launcher=launcher)
    assert "names torch's P2P API itself" in _unknown(diagnostics)


def test_another_name_of_the_pipe_package_is_not_vouched_for(tmp_path, monkeypatch):
    """Its p2p helpers (deepspeed/runtime/pipe/p2p.py send/recv) are not the PipelineEngine, nor
    surely no pipeline."""
    text = ZERO.format(head="from deepspeed.runtime.pipe import p2p", tail="p2p.init_process_groups(None)")
    assert "imports DeepSpeed's pipeline package" in _unknown(_run(tmp_path, monkeypatch, text))


@pytest.mark.parametrize("head,tail", [
    ("from importlib import import_module", "import_module('fairscale.nn')"),
    ("import importlib.util",
     "spec = importlib.util.spec_from_file_location('m', '/opt/m.py')\n"
     "mod = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(mod)"),
    ("import sys", "exec(f'import {sys.argv[1]}')"),
    ("import sys", "exec('import %s' % sys.argv[1])"),
    ("import sys", "exec('import {}'.format(sys.argv[1]))"),
    # r39 review 2, 3: text not a plain literal, a .format slot as a value, a parameter named like
    # the literal, a module looked up by a name not written, pkgutil/pydoc/builtins loaders
    ("import sys", "exec('import ' + 'fairscale')"),
    ("import sys", "exec(f\"import {'fairscale'}\")"),
    ("import sys", "exec('model = {}'.format(sys.argv[1]))"),
    ("import sys", "exec('cfg = {}'.format(open(sys.argv[1]).read()))"),
    ("import sys\nCODE = 'x = 1'", "def run(CODE):\n    exec(CODE)\nrun(open(sys.argv[1]).read())"),
    ("import pkgutil, sys", "pkgutil.resolve_name(sys.argv[1])"),
    ("from pydoc import locate\nimport sys", "locate(sys.argv[1])()"),
    ("import builtins, sys", "builtins.__import__(sys.argv[1])"),
    ("import importlib, sys", "getattr(importlib, 'import_module')(sys.argv[1])"),
    ("import importlib, sys", "getattr(importlib, sys.argv[2])(sys.argv[1])"),
])
def test_code_loaded_at_run_time_is_undecided(tmp_path, monkeypatch, head, tail):
    """False NOT A PIPELINE RUN before: a module loaded by an imported name, from a spec, or
    exec of text holding a value the file does not build."""
    message = _unknown(_run(tmp_path, monkeypatch, ZERO.format(head=head, tail=tail)))
    assert "runs code not read here" in message


@pytest.mark.parametrize("tail,said", [
    ("exec('from deepspeed.pipe import PipelineModule, LayerSpec\\n'\n"
     "     'model = PipelineModule(layers=[LayerSpec(torch.nn.Linear, 4, 4)] * 2, num_stages=2)')", None),
    ("exec('import torch.distributed as dist\\ndist.send(torch.zeros(1), dst=1)')", "names torch's P2P API"),
    ("exec('from transformers import Trainer\\nTrainer(model=None).train()')", "exceptions (a Trainer"),
    ("CODE = 'import fairscale'\nexec(CODE)", "imports fairscale"),
    ("Module = getattr(getattr(deepspeed, 'pipe'), 'Pipeline' + 'Module')\n"
     "Module(layers=[])", "DeepSpeed's pipeline package"),
])
def test_an_exec_literal_is_read_in_full_as_a_file(tmp_path, monkeypatch, tail, said):
    """False NOT A PIPELINE RUN before (r39 review 2): the literal's imports alone were read, not
    the PipelineModule, the sends or the Trainer it runs."""
    diagnostics = _run(tmp_path, monkeypatch, ZERO.format(head="", tail=tail))
    assert not [d for d in diagnostics if d.kind == "launch.not-pipeline"]
    if said:
        assert said in _unknown(diagnostics)


# bing_bert's turing/utils.py namedtorchbatch, shortened: a class template, a field template
CLASS = "\n".join([
    "import sys",
    '_class_template = """\\',
    "from collections import OrderedDict",
    "import torch",
    "",
    "class {typename}(tuple):",
    "    'A {typename}'",
    "    def to(self, device):",
    "        return {typename}(*(v.to(device) for v in self))",
    "{field_defs}",
    '"""',
    "_field_template = '''\\",
    "    {name} = property(lambda self: self[{index:d}], doc='Alias for field number {index:d}')",
    "'''",
    "",
    "",
    "def namedtorchbatch(typename, field_names):",
    "    exec(_class_template.format(typename=typename, field_defs='\\n'.join(",
    "        _field_template.format(index=index, name=name) for index, name in enumerate(field_names))), {})",
    "",
])


@pytest.mark.parametrize("extra,read", [
    ("", True),
    # INVALID: a slot that is a whole statement holding a value not read here
    ("exec(_class_template.format(typename='T', field_defs=sys.argv[1]))", False),
    # INVALID: the template's own import resolves to nothing known
    ("exec('import fairscale\\nx = {}'.format(sys.argv[1]))", False),
])
def test_a_class_template_is_read_where_its_slots_stand_for_names(tmp_path, monkeypatch, extra, read):
    """bing_bert's namedtorchbatch (turing/utils.py:139-153): the type and field names stand where
    names go, the field lines are joined from a template of the file's own: its code is read."""
    text = ZERO.format(head="import batch", tail="")
    diagnostics = _run(tmp_path, monkeypatch, text, files={"batch.py": CLASS + extra + "\n"})
    assert bool([d for d in diagnostics if d.kind == "launch.not-pipeline"]) == read
    if not read:
        assert "runs code not read here" in _unknown(diagnostics)


def test_exec_of_the_files_own_literals_is_still_read(tmp_path, monkeypatch):
    """VALID: text built wholly from the file's literals is what runs (no import in it)."""
    text = ZERO.format(head="TEMPLATE = 'x = {n}'", tail="exec(TEMPLATE.format(n=1))\nexec('y = 2')")
    assert [d for d in _run(tmp_path, monkeypatch, text) if d.kind == "launch.not-pipeline"]


@pytest.mark.parametrize("head,files", [
    # a DeepSpeed checkout put first: its deepspeed, not the release the rules read
    ("import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), 'vendor'))",
     {"vendor/deepspeed/__init__.py": "from megatron import pipeline\n"}),
    ("import sys\nsys.path = [__file__ + 'x'] + sys.path", {}),
    ("import sys, os\nsys.path.insert(0, os.environ['SRC'])", {}),
])
def test_a_folder_put_first_on_sys_path_shadows_what_is_read(tmp_path, monkeypatch, head, files):
    """False NOT A PIPELINE RUN before: the import resolves to the folder put first."""
    message = _unknown(_run(tmp_path, monkeypatch, ZERO.format(head=head, tail=""), files=files))
    assert "first on sys.path" in message


def test_a_parent_folder_appended_or_put_first_without_a_shadow_is_read(tmp_path, monkeypatch):
    """VALID: a folder the reader already reads from, holding nothing the closure imports."""
    head = ("import os, sys\nsys.path.append(os.path.join(os.path.dirname(__file__), os.path.pardir))\n"
            "sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))")
    diagnostics = _run(tmp_path, monkeypatch, ZERO.format(head=head, tail=""))
    assert [d for d in diagnostics if d.kind == "launch.not-pipeline"]


@pytest.mark.parametrize("head", [
    # r39 review 4: the name imported, a relative folder (the run's working directory, not the
    # scanner's), an absolute folder absent here
    "import os\nfrom sys import path\npath.insert(0, os.environ['SRC'])",
    "import os, sys\nsys.path.insert(0, os.path.abspath(os.pardir))",
    "import sys\nsys.path.insert(0, '../src')",
    "import sys\nsys.path = ['/nonexistent/p2paudit/DeepSpeed'] + sys.path",
])
def test_a_folder_put_first_not_known_here_is_undecided(tmp_path, monkeypatch, head):
    """False NOT A PIPELINE RUN before: `sys.path` spelled otherwise was not seen; `os.pardir` was
    looked up from the scanner's folder; an absent folder read as shadowing nothing."""
    assert "first on sys.path" in _unknown(_run(tmp_path, monkeypatch, ZERO.format(head=head, tail="")))


def test_an_import_errors_fallback_counts_where_the_package_may_be_missing(tmp_path, monkeypatch):
    """False NOT A PIPELINE RUN before (r39 review 6): apex (a package the rules allow) may be
    missing on the cluster, and then fairscale's Pipe is imported."""
    head = "try:\n    from apex.normalization import FusedLayerNorm\nexcept ImportError:\n    from fairscale.nn import Pipe"
    assert "fairscale" in _unknown(_run(tmp_path, monkeypatch, ZERO.format(head=head, tail="")))


def test_a_namespace_folder_named_like_a_package_is_not_that_package(tmp_path, monkeypatch):
    """False NOT A PIPELINE RUN before: `fairscale/` without __init__.py beside the script is a
    namespace portion; an installed fairscale (its Pipe) is what `import fairscale` gets."""
    text = ZERO.format(head="from fairscale.nn import Pipe", tail="")
    message = _unknown(_run(tmp_path, monkeypatch, text, files={"fairscale/nn/README": ""}))
    assert "namespace package" in message


HF = '''
import torch
from transformers import AutoModelForCausalLM, Trainer, TrainerCallback, TrainingArguments


def main():
    args = TrainingArguments(output_dir="out", fp16=True, deepspeed={config})
    model = AutoModelForCausalLM.from_pretrained("baichuan-7B")
    trainer = Trainer(model=model, args=args)
    trainer.train()


if __name__ == "__main__":
    main()
'''


def test_a_trainer_handed_a_deepspeed_config_is_zero(tmp_path, monkeypatch):
    """A miss before (CLEAN with 0 sites, read as Megatron-LM's front end): transformers' Trainer
    with a DeepSpeed config runs DeepSpeed's data-parallel engine, under torchrun as under deepspeed."""
    for launcher in ("torchrun --nproc_per_node 8", "deepspeed --num_gpus 8"):
        diagnostics = _run(tmp_path, monkeypatch, HF.format(config="'./ds_config.json'"), launcher=launcher)
        (said,) = [d for d in diagnostics if d.kind == "launch.not-pipeline"]
        assert "DeepSpeed's data-parallel engine (ZeRO)" in said.message
        if launcher.startswith("torchrun"):
            assert "train.py:7 hands transformers' Trainer a DeepSpeed config" in said.message


@pytest.mark.parametrize("config,extra", [
    ("args_cli.deepspeed", ""),  # not known statically: None would let accelerate's Megatron-LM plugin in
    ("''", ""),  # empty: no DeepSpeed
    ("'ds.json'", "class Mine(TrainingArguments):\n    pass\n"),  # another use of the class
    ("'ds.json'", "import accelerate\n"),  # an Accelerator of its own
    ("'ds.json'", "Trainer(model=None).train()\n"),  # a Trainer on its default arguments
])
def test_a_trainer_whose_deepspeed_config_is_not_known_stays_undecided(tmp_path, monkeypatch, config, extra):
    text = HF.format(config=config) + extra
    diagnostics = _run(tmp_path, monkeypatch, text, launcher="deepspeed --num_gpus 8")
    assert not [d for d in diagnostics if d.kind == "launch.not-pipeline"]
    assert [d for d in diagnostics if d.kind == "launch.unknown-stack"]


# r39 review 1: each Trainer construction, by any name, handed only such arguments on every path
SUBCLASS = '''
import torch
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments


class MyTrainer(Trainer):
    def __init__(self, model):
        super().__init__(model=model)


def unused():
    return TrainingArguments(output_dir="out", deepspeed="ds_config.json")


MyTrainer(AutoModelForCausalLM.from_pretrained("gpt2")).train()
'''
PARSER = '''
from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments as TA

(targs,) = HfArgumentParser(TA).parse_args_into_dataclasses()
Trainer(model=AutoModelForCausalLM.from_pretrained("gpt2"), args=targs).train()


def unused():
    return TA(output_dir="s", deepspeed="ds_config.json")
'''
CONDITIONAL = '''
import os
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("gpt2")
targs = TrainingArguments(output_dir="out", deepspeed="ds_config.json") if os.environ.get("USE_DS") else None
Trainer(model=model, args=targs).train()
'''
PARTIAL = '''
import functools
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

targs = TrainingArguments(output_dir="out", deepspeed="ds_config.json")
make = functools.partial(Trainer, args=targs)
make(model=AutoModelForCausalLM.from_pretrained("gpt2")).train()
'''
REBOUND = '''
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

targs = TrainingArguments(output_dir="out", deepspeed="ds_config.json")


def main(targs):
    Trainer(model=AutoModelForCausalLM.from_pretrained("gpt2"), args=targs).train()
'''


@pytest.mark.parametrize("text", [SUBCLASS, PARSER, CONDITIONAL, PARTIAL, REBOUND])
@pytest.mark.parametrize("launcher", ["deepspeed --num_gpus 8", "torchrun --nproc_per_node 8"])
def test_a_trainer_not_handed_the_config_on_every_path_stays_undecided(tmp_path, monkeypatch, text, launcher):
    """False NOT A PIPELINE RUN before (r39 review 1b, 1c): a subclass's super().__init__ on the
    default arguments, an alias's parser-built arguments, `X if c else None`, a partial, a
    parameter shadowing the name: accelerate may take its Megatron-LM branch."""
    diagnostics = _run(tmp_path, monkeypatch, text, launcher=launcher)
    assert not [d for d in diagnostics if d.kind == "launch.not-pipeline"]
    if launcher.startswith("deepspeed"):  # under torchrun no DeepSpeed engine is read: the other readings'
        assert [d for d in diagnostics if d.kind == "launch.unknown-stack"]


@pytest.mark.parametrize("launcher", ["deepspeed --num_gpus 8", "torchrun --nproc_per_node 8"])
def test_accelerates_own_environment_keeps_the_trainer_undecided(tmp_path, monkeypatch, launcher):
    """False NOT A PIPELINE RUN before (r39 review 1a): the launch sets accelerate's Megatron-LM
    variables; what accelerate makes of them beside the DeepSpeed config is not read here."""
    before = "export ACCELERATE_USE_MEGATRON_LM=true MEGATRON_LM_PP_DEGREE=2"
    diagnostics = _run(tmp_path, monkeypatch, HF.format(config="'ds.json'"), launcher=launcher, before=before)
    assert "ACCELERATE_USE_MEGATRON_LM" in _unknown(diagnostics)


def test_an_error_of_the_engine_reader_is_undecided(tmp_path, monkeypatch):
    """False CLEAN before (r39 review 5): `_template_read`'s int('²') raised, and the reader's
    caller fell back to the PipelineEngine reading. Any error stops at INCONCLUSIVE naming it."""
    from auditor.config import deepspeed_engine

    text = ZERO.format(head="", tail="exec('x = {²}'.format(1))")
    diagnostics = _run(tmp_path, monkeypatch, text)
    assert not [d for d in diagnostics if d.kind == "launch.not-pipeline"]
    assert [d for d in diagnostics if d.kind == "launch.unknown-stack"]

    def broken(*_: object) -> None:
        raise RuntimeError("boom")
    deepspeed_engine.engine_of.cache_clear()
    monkeypatch.setattr(deepspeed_engine, "_trainer_engine", broken)
    (tmp_path / "train.py").write_text(dedent(ZERO.format(head="", tail="")) + "\n")
    launch = read_launch("run.sh")
    (said,) = [d for d in launch.diagnostics if d.kind == "launch.unknown-stack"]
    assert "could not be read by config/deepspeed_engine.py (RuntimeError: boom)" in said.message
    deepspeed_engine.engine_of.cache_clear()


def test_the_inert_topologies_are_each_releases_code():
    """[pipeline_model] `inert_names` are the topology classes of each verified release."""
    model = rulebook.load("deepspeed").data["pipeline_model"]
    for version in rulebook.load("deepspeed").section("framework")["verified"]:
        root = sources.resolve(f"deepspeed=={version}").root
        text = (root / model["inert_source"]).read_text()
        assert model["inert_code"] in text, version
        for name in model["inert_names"]:
            assert f"class {name.rsplit('.', 1)[1]}" in text, (version, name)


def test_the_loaders_are_the_standard_librarys():
    """[no_pipeline] `loaders` each name a callable of Python's standard library."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # imp, until Python 3.12
        for name in rulebook.load("stacks").data["no_pipeline"]["loaders"]:
            module, _, attr = name.rpartition(".")
            assert callable(getattr(importlib.import_module(module), attr)), name
