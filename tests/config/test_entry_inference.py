"""Inference and serving entries at a pipeline size of 1 are NOT A PIPELINE RUN, decided from what
the entry's code imports and names (config/entry_inference.py), not from its file name.

Shapes, each cited where it is built:
- NVIDIA/Megatron-LM d98e8a64dd tools/run_text_generation_server.py: `initialize_megatron(...)`
  (Megatron-LM's parser reads the launch line) and MegatronServer from
  megatron.core.inference.text_generation_server (:26); examples/mamba/run_text_gen_server_8b_gpt3.sh
  runs it with `--pipeline-model-parallel-size 1` (:22).
- alibaba/Pai-Megatron-Patch a098ca5acb examples/llama2/generate_text_megatron_llama.py:
  `initialize_megatron(extra_args_provider=get_patch_args)`, generation through the local package
  megatron_patch/generation (api.py:18 imports megatron.text_generation.communication);
  run_text_generation_megatron_llama.sh passes `--pipeline-model-parallel-size 1` (:99).
- NVIDIA-NeMo/Megatron-Bridge 067f987df0 examples/models/nemotron/nemotron_3_omni/
  hf_to_megatron_generate_nemotron_omni.py: its own argparse (`--pp`, default 1, :1006), written
  on the provider (:707), megatron-core's schedule called forward_only=True (:914), in a folder no
  script rule names; inference.sh runs it without --pp.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.config.launch import parse_launch

SERVER = """\
import torch
from megatron.core.inference.engines import StaticInferenceEngine
from megatron.core.inference.text_generation_server import MegatronServer
from megatron.training import get_model
from megatron.training.initialize import initialize_megatron

if __name__ == "__main__":
    initialize_megatron(args_defaults={"no_load_rng": True})
    model = get_model(None, wrap_with_ddp=False)
    MegatronServer(StaticInferenceEngine(model)).run("0.0.0.0", port=5000)
"""

PAI_ENTRY = """\
from megatron import get_args
from megatron.initialize import initialize_megatron
from megatron_patch.generation.api import generate_and_post_process
from megatron_patch.arguments import get_patch_args
{extra}

if __name__ == "__main__":
    initialize_megatron(extra_args_provider=get_patch_args)
    generate_and_post_process(None, prompts=["hi"])
"""

PAI_API = """\
import torch
from megatron.core import mpu
from megatron.text_generation.communication import broadcast_float_list


def generate_and_post_process(model, prompts):
    return broadcast_float_list(1, None)
"""

OMNI = """\
import argparse

import torch
from megatron.bridge import AutoBridge
from megatron.core.pipeline_parallel.schedules import get_forward_backward_func


def main(args):
    pp = args.pp
    bridge = AutoBridge.from_hf_pretrained(args.hf_model_path)
    model_provider = bridge.to_megatron_provider(load_weights=False)
    model_provider.tensor_model_parallel_size = args.tp
    model_provider.pipeline_model_parallel_size = pp
    model = model_provider.provide_distributed_model(wrap_with_ddp=False)
    for step in range(args.max_new_tokens):
        fwd_bwd_function = get_forward_backward_func()
        fwd_bwd_function(forward_step_func=None, data_iterator=None, model=model, num_microbatches=1,
                         forward_only=True, seq_length=16, micro_batch_size=1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--hf_model_path", type=str, required=True)
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--pp", type=int, default=1)
    parser.add_argument("--max_new_tokens", type=int, default=20)
    main(parser.parse_args())
"""


def _launch(tmp_path: Path, entry: str, text: str, flags: str, files: dict[str, str] | None = None):
    for name, body in {entry: text, **(files or {})}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    script = tmp_path / "run.sh"
    script.write_text(f"torchrun --nproc_per_node 1 {entry} {flags}\n")
    return parse_launch(script.read_text(), str(script))


def _not_pipeline(config) -> list[str]:
    return [d.message for d in config.diagnostics if d.kind == "launch.not-pipeline"]


def test_a_text_generation_server_at_pp_1_is_not_a_pipeline_run(tmp_path: Path) -> None:
    """Megatron-LM's parser reads the launch line: its literal `--pipeline-model-parallel-size 1`."""
    config = _launch(tmp_path, "tools/run_text_generation_server.py", SERVER,
                     "--tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 --num-layers 4")
    assert config.builds_parser == "megatron-lm"
    said = _not_pipeline(config)
    assert said and "serves text generation" in said[0] and "text_generation_server" in said[0]
    assert "--pipeline-model-parallel-size 1" in said[0]


def test_a_server_at_pp_2_or_an_unknown_size_is_left_to_the_analysis(tmp_path: Path) -> None:
    for flags in ("--pipeline-model-parallel-size 2", "--pipeline-model-parallel-size $PP"):
        config = _launch(tmp_path, "tools/run_text_generation_server.py", SERVER, flags)
        assert not _not_pipeline(config), flags


def test_a_server_that_also_trains_is_not_called_inference(tmp_path: Path) -> None:
    """An entry that names a training loop besides may train: the unknown stays unknown."""
    text = SERVER.replace("from megatron.training import get_model\n",
                          "from megatron.training import get_model, pretrain\n")
    config = _launch(tmp_path, "tools/run_text_generation_server.py", text, "--pipeline-model-parallel-size 1")
    assert not _not_pipeline(config)


def test_generation_reached_through_a_local_package_is_read(tmp_path: Path) -> None:
    """Pai-Megatron-Patch: the engine is imported by megatron_patch/generation/api.py, not the entry."""
    files = {"megatron_patch/__init__.py": "", "megatron_patch/arguments.py": "def get_patch_args(p):\n    return p\n",
             "megatron_patch/generation/__init__.py": "", "megatron_patch/generation/api.py": PAI_API}
    entry = "examples/llama2/generate_text_megatron_llama.py"
    config = _launch(tmp_path, entry, PAI_ENTRY.format(extra=""), "--pipeline-model-parallel-size 1", files)
    said = _not_pipeline(config)
    assert said and "generates text" in said[0] and "megatron.text_generation" in said[0] and "api.py:3" in said[0]
    trains = PAI_ENTRY.format(extra="from megatron.training import pretrain")
    config = _launch(tmp_path, entry, trains, "--pipeline-model-parallel-size 1", files)
    assert not _not_pipeline(config)


def test_a_generator_with_its_own_parser_in_any_folder_is_read(tmp_path: Path) -> None:
    """Megatron-Bridge's nemotron_3_omni generator: no script rule names its folder, so the
    launch is read as Megatron-LM's front end by guess; its own argparse sets PP on the provider."""
    entry = "examples/models/nemotron/omni/hf_to_megatron_generate_omni.py"
    config = _launch(tmp_path, entry, OMNI, "--hf_model_path x --tp 4")
    assert config.entry_values["pipeline_model_parallel_size"][0] == 1
    said = _not_pipeline(config)
    assert said and "forward only" in said[0] and "pipeline size 1" in said[0]
    config = _launch(tmp_path, entry, OMNI, "--hf_model_path x --pp 2")
    assert config.entry_values["pipeline_model_parallel_size"][0] == 2
    assert not _not_pipeline(config)


def test_the_parser_default_counts_only_where_nothing_else_may_set_the_size(tmp_path: Path) -> None:
    """Megatron-LM d98e8a64dd examples/inference/run_offline_inference.sh passes no
    --pipeline-model-parallel-size (Megatron-LM's default, 1), but `$EXTRA_ARGS` (:88) may add
    words not seen; an entry may also set the size itself (`args_defaults`)."""
    entry = "tools/run_text_generation_server.py"
    said = _not_pipeline(_launch(tmp_path, entry, SERVER, "--num-layers 4"))
    assert said and "parser default" in said[0]
    assert not _not_pipeline(_launch(tmp_path, entry, SERVER, "$EXTRA_ARGS --num-layers 4"))
    sets = SERVER.replace('{"no_load_rng": True}', '{"pipeline_model_parallel_size": 2}')
    assert not _not_pipeline(_launch(tmp_path, entry, sets, "--num-layers 4"))


def test_an_engine_module_the_checkout_lacks_is_no_engine(tmp_path: Path) -> None:
    """Megatron-LM d98e8a64dd examples/multimodal/run_text_generation.py:26 imports
    megatron.inference.text_generation, which that checkout no longer holds: the run stops there.
    Where that is its only engine, the entry is not called inference."""
    (tmp_path / "megatron/training").mkdir(parents=True)
    (tmp_path / "megatron/training/arguments.py").write_text(
        "import argparse\n\n\ndef parse_args():\n    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('--pipeline-model-parallel-size', type=int, default=1)\n"
        "    return parser.parse_args()\n")
    stale = SERVER.replace("from megatron.core.inference.engines import StaticInferenceEngine\n",
                           "from megatron.inference.text_generation.api import generate_and_post_process\n")
    config = _launch(tmp_path, "tools/run_text_generation_server.py", stale, "--pipeline-model-parallel-size 1")
    assert config.checkouts["megatron-lm"] == tmp_path and not _not_pipeline(config)
    (tmp_path / "megatron/inference/text_generation").mkdir(parents=True)
    (tmp_path / "megatron/core/inference/text_generation_server").mkdir(parents=True)
    (tmp_path / "megatron/inference/text_generation/api.py").write_text("def generate_and_post_process():\n    pass\n")
    config = _launch(tmp_path, "tools/run_text_generation_server.py", stale, "--pipeline-model-parallel-size 1")
    assert _not_pipeline(config)


def test_encoder_stages_besides_are_more_than_one_stage(tmp_path: Path) -> None:
    """Megatron-LM core_r0.9's `--encoder-pipeline-model-parallel-size 1` puts the encoder on a
    stage of its own: with `--pipeline-model-parallel-size 1` that is two stages."""
    entry = "tools/run_text_generation_server.py"
    flags = "--pipeline-model-parallel-size 1 --encoder-pipeline-model-parallel-size {}"
    assert not _not_pipeline(_launch(tmp_path, entry, SERVER, flags.format(1)))
    assert _not_pipeline(_launch(tmp_path, entry, SERVER, flags.format(0)))


def test_arguments_passed_on_may_give_the_size(tmp_path: Path) -> None:
    """Megatron-Bridge 067f987df0 examples/inference/run_openai_server.sh hands the caller's
    arguments on (`scripts/inference/openai_server.py "${ARGS[@]}"`): `--pp` may be among them,
    so the entry's default is not surely the run's."""
    entry = "examples/models/nemotron/omni/hf_to_megatron_generate_omni.py"
    text = OMNI.replace("import torch\n", "import torch\nfrom megatron.core.inference.apis import MegatronAsyncLLM\n")
    text = text.replace("        fwd_bwd_function = get_forward_backward_func()\n", "").replace(
        "        fwd_bwd_function(forward_step_func=None, data_iterator=None, model=model, num_microbatches=1,\n"
        "                         forward_only=True, seq_length=16, micro_batch_size=1)\n", "        MegatronAsyncLLM(model)\n")
    text = text.replace("from megatron.core.pipeline_parallel.schedules import get_forward_backward_func\n", "")
    assert _not_pipeline(_launch(tmp_path, entry, text, "--hf_model_path x"))
    (tmp_path / "run.sh").write_text(f'ARGS=()\nfor a in "$@"; do ARGS+=("$a"); done\ntorchrun {entry} "${{ARGS[@]}}"\n')
    config = parse_launch((tmp_path / "run.sh").read_text(), str(tmp_path / "run.sh"))
    assert any(d.kind == "launch.unresolved-args" for d in config.diagnostics)
    assert not _not_pipeline(config) and "pipeline_model_parallel_size" not in config.entry_values


def test_sizes_from_the_checkpoint_are_not_the_launch_line_s(tmp_path: Path) -> None:
    """bigcode-project/Megatron-LM examples/run_text_generation_server_345M.sh passes
    `--pipeline-model-parallel-size 1 --use-checkpoint-args`; megatron/checkpointing.py:493-494
    then forces the checkpoint's size (Megatron-LM d98e8a64dd checkpointing.py:2355-2360 only with
    --use-mp-args-from-checkpoint-args too): the size is unknown, in the note and in derive."""
    from auditor.config.derive import derive

    for flags in ("--pipeline-model-parallel-size 1 --use-checkpoint-args --load /ckpt",
                  "--use-checkpoint-args --use-mp-args-from-checkpoint-args --load /ckpt"):
        config = _launch(tmp_path, "tools/run_text_generation_server.py", SERVER, flags)
        assert not _not_pipeline(config), flags
        value = derive(config, {"megatron-core": "0.17.0"}).get("pipeline_model_parallel_size")
        assert value is not None and not value.known and "checkpoint" in value.provenance, flags


def test_a_checkout_gating_the_sizes_keeps_the_launch_line_s(tmp_path: Path) -> None:
    """Megatron-LM d98e8a64dd examples/inference/run_inference_server.sh: `--use-checkpoint-args`
    alone, and its checkpointing.py takes the sizes only behind use_mp_args_from_checkpoint_args."""
    (tmp_path / "megatron/training").mkdir(parents=True)
    (tmp_path / "megatron/training/checkpointing.py").write_text(
        "def load_args_from_checkpoint(args):\n    if args.use_mp_args_from_checkpoint_args:\n        pass\n")
    config = _launch(tmp_path, "tools/run_text_generation_server.py", SERVER,
                     "--pipeline-model-parallel-size 1 --use-checkpoint-args --load /ckpt")
    if "megatron-lm" in config.checkouts:
        assert _not_pipeline(config)


def test_a_sys_argv_rewrite_may_give_the_size(tmp_path: Path) -> None:
    """Megatron-LM d98e8a64dd tools/run_dynamic_text_generation_server.py:237-263 puts flags into
    sys.argv before the parser reads it: the parser's default 1 is not known to hold."""
    text = SERVER.replace('    initialize_megatron(', '    sys.argv[1:1] = ["--pipeline-model-parallel-size", "2"]\n'
                          '    initialize_megatron(').replace("import torch\n", "import sys\n\nimport torch\n")
    config = _launch(tmp_path, "tools/run_text_generation_server.py", text, "--num-layers 4")
    assert not _not_pipeline(config)


def test_settings_handed_on_unseen_may_give_the_size(tmp_path: Path) -> None:
    """r36-textgen review: a mapping whose keys the code does not write out (`set_defaults(**cfg)`,
    `args_defaults=cfg`) or sys.argv changed through another name may set the size."""
    for old, new in [('{"no_load_rng": True}', "CFG"),
                     ('    initialize_megatron(', '    PARSER.set_defaults(**CFG)\n    initialize_megatron('),
                     ('    initialize_megatron(', '    argv = sys.argv\n    argv.extend(["--pipeline-model-parallel-size", "2"])\n'
                                                 '    initialize_megatron('),
                     ("import torch\n", "import sys as system\nsystem.argv += ['--pipeline-model-parallel-size', '2']\n")]:
        text = SERVER.replace(old, new, 1).replace("import torch\n", "import sys\n\nimport torch\n")
        config = _launch(tmp_path, "tools/run_text_generation_server.py", text, "--num-layers 4")
        assert not _not_pipeline(config), new


def test_a_helper_module_of_the_inference_package_is_no_engine(tmp_path: Path) -> None:
    """Megatron-LM d98e8a64dd examples/rl/benchmark_refit.py imports megatron.core.inference.shards
    and reshards weights with P2POp: neither the import nor the script is an engine's generation."""
    text = SERVER.replace("from megatron.core.inference.engines import StaticInferenceEngine\n",
                          "").replace("from megatron.core.inference.text_generation_server import MegatronServer\n",
                                      "from megatron.core.inference.shards import MegatronServer\n")
    config = _launch(tmp_path, "tools/run_text_generation_server.py", text, "--pipeline-model-parallel-size 1")
    assert not _not_pipeline(config)


def test_an_entry_s_own_p2p_calls_are_sends(tmp_path: Path) -> None:
    """config/no_training.py's guard: an entry that calls torch's P2P API sends, whatever engine it uses."""
    for call in ("torch.distributed.isend(None, dst=1)", "torch.distributed.batch_isend_irecv([])"):
        text = SERVER.replace('    MegatronServer(', f'    {call}\n    MegatronServer(')
        config = _launch(tmp_path, "tools/run_text_generation_server.py", text, "--pipeline-model-parallel-size 1")
        assert not _not_pipeline(config), call


def test_a_closure_cut_short_is_not_read(tmp_path: Path, monkeypatch) -> None:
    """A closure cut at MAX_MODULES leaves modules unread, as config/no_training.py counts it."""
    from auditor.config import entry_inference

    monkeypatch.setattr(entry_inference, "MAX_MODULES", 1)
    config = _launch(tmp_path, "tools/run_text_generation_server.py", SERVER, "--pipeline-model-parallel-size 1")
    assert not _not_pipeline(config)


def test_a_size_the_guessed_front_end_s_entry_leaves_unknown_stays_unknown(tmp_path: Path) -> None:
    """The nemotron_3_omni shape with `--pp` defaulting to `$PP` of the job's environment (or a
    YAML of overrides set on the provider): the size is unknown, not megatron-core's default 1."""
    from auditor.config.expr import UNKNOWN

    entry = "examples/models/nemotron/omni/hf_to_megatron_generate_omni.py"
    text = OMNI.replace('parser.add_argument("--pp", type=int, default=1)',
                        'parser.add_argument("--pp", type=int, default=int(os.environ.get("PP", 1)))'
                        ).replace("import argparse\n", "import argparse\nimport os\n")
    config = _launch(tmp_path, entry, text, "--hf_model_path x --tp 4")
    assert config.entry_values["pipeline_model_parallel_size"][0] is UNKNOWN
    assert not _not_pipeline(config)


def test_checkpoint_sizes_are_the_flags_the_checkpoint_overrides(tmp_path):
    """config/checkpoint_args.py alone: `--use-checkpoint-args` hands the pipeline size to the
    checkpoint (Megatron-LM bigcode checkpointing.py:493-494), so the size is no longer the flag's."""
    from auditor.config.checkpoint_args import checkpoint_sizes
    from auditor.config.model import Flag, LaunchConfig

    launch = LaunchConfig(str(tmp_path / "run.sh"), "torchrun tools/run_text_generation_server.py", 3)
    launch.builds_parser = "megatron-lm"
    assert "pipeline_model_parallel_size" not in checkpoint_sizes(launch)
    launch.flags["use_checkpoint_args"] = Flag("use_checkpoint_args", "true", 4, "--use-checkpoint-args")
    assert "pipeline_model_parallel_size" in checkpoint_sizes(launch)


ARGUMENTS = """\
import argparse


def parse_args(extra_args_provider=None):
    parser = argparse.ArgumentParser(allow_abbrev=False)
    parser.add_argument('--pipeline-model-parallel-size', type=int, default=1)
    parser.add_argument('--num-layers', type=int, default=None)
    parser.add_argument('--load', type=str, default=None)
    parser.add_argument('--seed', type=int, default=1234)
    parser.add_argument('--fp16', action='store_true')
    if extra_args_provider is not None:
        parser = extra_args_provider(parser)
    return parser.parse_args()
"""

# bigcode-project/Megatron-LM 7c325cd34a examples/detxoify_lm/generate_samples_gpt.py: its own
# provider adds --sample-input-file (:36-58), `initialize_megatron(extra_args_provider=...)`
# (:129), generation through megatron.text_generation (:20).
DETOXIFY = """\
from megatron.initialize import initialize_megatron
from megatron.text_generation import generate_and_post_process


def add_text_generate_args(parser):
    group = parser.add_argument_group(title='text generation')
    group.add_argument("--sample-input-file", type=str, default=None)
    return parser


if __name__ == "__main__":
    initialize_megatron(extra_args_provider=add_text_generate_args)
    generate_and_post_process(None, prompts=["hi"])
"""


def _checkout(tmp_path: Path) -> None:
    (tmp_path / "megatron/training").mkdir(parents=True, exist_ok=True)
    (tmp_path / "megatron/training/arguments.py").write_text(ARGUMENTS)
    for package in ("megatron/text_generation", "megatron/core/inference/engines",
                    "megatron/core/inference/text_generation_server"):
        (tmp_path / package).mkdir(parents=True, exist_ok=True)


def test_an_unknown_value_of_a_known_flag_is_read_as_its_value_and_said(tmp_path: Path) -> None:
    """bigcode-project/Megatron-LM 7c325cd34a examples/detxoify_lm/generate-1.3b.sh gives no
    --pipeline-model-parallel-size and the caller's `--load $2` (:24) and `--sample-input-file $1`
    (:35): each is its flag's one value (no word leaves the flag without one, which argparse
    rejects); several words could carry a pipeline flag, which the note says. A value of a flag
    no table knows (`--top-k $K`) may itself be flags: no note."""
    _checkout(tmp_path)
    entry = "examples/detxoify_lm/generate_samples_gpt.py"
    config = _launch(tmp_path, entry, DETOXIFY, "--num-layers 4 --load $2 --sample-input-file $1 --seed $(($RANDOM))")
    assert config.builds_parser == "megatron-lm"
    [said] = _not_pipeline(config)
    assert "parser default" in said and "`--load $2`, `--sample-input-file $1` are read as one word" in said
    assert "RANDOM" not in said  # an arithmetic expansion is one word
    [said] = _not_pipeline(_launch(tmp_path, entry, DETOXIFY, "--load $2 --pipeline-model-parallel-size 1"))
    assert "read as one word" not in said  # the size written after it stands
    [said] = _not_pipeline(_launch(tmp_path, entry, DETOXIFY, "--pipeline-model-parallel-size 1 --load $2"))
    assert "`--load $2` is read as one word, its flag's value" in said
    assert not _not_pipeline(_launch(tmp_path, entry, DETOXIFY, "--load $2 --top-k $K"))
    assert not _not_pipeline(_launch(tmp_path, entry, DETOXIFY, "--pipeline-model-parallel-size 2 --load $2"))


# NVIDIA/Megatron-LM d98e8a64dd tools/run_hybrid_text_generation_server.py (:8-11) runs the main of
# tools/run_text_generation_server.py, which builds Megatron-LM's parser (:120-130).
HYBRID = """\
import os
import sys

sys.path.append(os.path.abspath(os.path.join(os.path.dirname(__file__), os.path.pardir)))

from run_text_generation_server import main

if __name__ == "__main__":
    main(model_type="hybrid")
"""


def test_a_wrapper_running_a_sibling_s_main_builds_its_parser(tmp_path: Path) -> None:
    """examples/mamba/run_text_gen_server_8b.sh runs the hybrid wrapper with
    `--pipeline-model-parallel-size 1 --load $1`: the sibling's parser reads the flags."""
    _checkout(tmp_path)
    server = SERVER.replace('if __name__ == "__main__":\n', "def main(model_type='gpt'):\n")
    files = {"tools/run_text_generation_server.py": server}
    entry = "tools/run_hybrid_text_generation_server.py"
    config = _launch(tmp_path, entry, HYBRID, "--pipeline-model-parallel-size 1 --load $1", files)
    assert config.builds_parser == "megatron-lm"
    [said] = _not_pipeline(config)
    assert "serves text generation" in said and "run_text_generation_server.py:3" in said
    files = {"tools/run_text_generation_server.py": "def main(model_type='gpt'):\n    pass\n"}
    _checkout(tmp_path / "other")  # a tree of its own: the parser read is cached by path
    config = _launch(tmp_path / "other", entry, HYBRID, "--pipeline-model-parallel-size 1", files)
    assert config.builds_parser == "" and not any("serves text generation" in m for m in _not_pipeline(config))


# NVIDIA/Megatron-LM d98e8a64dd examples/multimodal/run_text_generation.py: megatron.inference.
# text_generation (:26, gone from that tree) beside megatron.core.inference.engines (:30).
VLM = """\
from megatron.core.inference.engines import StaticInferenceEngine
from megatron.inference.text_generation.api import generate_and_post_process
from megatron.training.initialize import initialize_megatron

if __name__ == "__main__":
    initialize_megatron()
    StaticInferenceEngine(None).generate(prompts=["hi"])
"""

# examples/multimodal/nvlm/run_text_generation_qwen20_72b_internvit_6b.sh:67-78, :137: two ifs
# append to EXTRA_ARGS, passed unquoted after `--pipeline-model-parallel-size 1` (:108).
TILING = """\
EXTRA_ARGS=""
if [[ $USE_TILING -eq 1 ]]; then
    EXTRA_ARGS+=" --pixel-shuffle --use-tiling --max-num-tiles 6"
fi
if [[ $USE_PIXEL_SHUFFLE_ONLY -eq 1 ]]; then
    EXTRA_ARGS+=" {more}"
fi
torchrun --nproc_per_node 8 examples/multimodal/run_text_generation.py --pipeline-model-parallel-size 1 \\
    --num-layers 4 ${{EXTRA_ARGS}} --seed 1234
"""


def test_an_if_appending_to_a_string_keeps_every_text_it_may_be(tmp_path: Path) -> None:
    """The nvlm shape: `${EXTRA_ARGS}` is one of four known texts, none naming a pipeline flag;
    the engine module the checkout lacks is said, the one it holds decides."""
    _checkout(tmp_path)
    entry = "examples/multimodal/run_text_generation.py"
    _launch(tmp_path, entry, VLM, "")
    script = tmp_path / "run.sh"
    script.write_text(TILING.format(more="--pixel-shuffle"))
    config = parse_launch(script.read_text(), str(script))
    [unresolved] = [d for d in config.diagnostics if d.kind == "launch.unresolved-args"]
    assert sorted(unresolved.detail["alternatives"]["${EXTRA_ARGS}"]) == [
        "", " --pixel-shuffle", " --pixel-shuffle --use-tiling --max-num-tiles 6",
        " --pixel-shuffle --use-tiling --max-num-tiles 6 --pixel-shuffle"]
    [said] = _not_pipeline(config)
    assert "megatron.core.inference.engines" in said and "stops at that import" in said
    assert "megatron.inference.text_generation.api (run_text_generation.py:2)" in said
    script.write_text(TILING.format(more="--pipeline-model-parallel-size 2"))
    assert not _not_pipeline(parse_launch(script.read_text(), str(script)))
    script.write_text(TILING.format(more="$MORE"))  # a text not known: may be any flag
    assert not _not_pipeline(parse_launch(script.read_text(), str(script)))


def test_a_wrapper_with_arguments_of_its_own_is_not_the_sibling_s_front_end(tmp_path: Path) -> None:
    """A wrapper that parses arguments or rewrites sys.argv before running the sibling's main:
    the sibling's parser does not read the launch line as written."""
    server = SERVER.replace('if __name__ == "__main__":\n', "def main(model_type='gpt'):\n")
    entry = "tools/run_hybrid_text_generation_server.py"
    for k, own in enumerate(("sys.argv.append('--pipeline-model-parallel-size=2')",
                             "argparse.ArgumentParser().parse_known_args()")):
        _checkout(tmp_path / str(k))  # a tree each: the parser read is cached by path
        text = HYBRID.replace("    main(", f"    import argparse\n    {own}\n    main(")
        config = _launch(tmp_path / str(k), entry, text, "--pipeline-model-parallel-size 1",
                         {"tools/run_text_generation_server.py": server})
        assert config.builds_parser == "" and not any("serves" in m for m in _not_pipeline(config)), own


def test_texts_an_if_in_a_subshell_sets_end_with_it(tmp_path: Path) -> None:
    """r36-textgen review item 3: an if inside `( ... )` sets EXTRA_ARGS there only; outside, it is
    the caller's (which may carry a pipeline flag), not the texts of the subshell's branches."""
    _checkout(tmp_path)
    entry = "tools/run_text_generation_server.py"
    (tmp_path / entry).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / entry).write_text(SERVER)
    script = tmp_path / "run.sh"
    script.write_text(
        '(\n  if [ "$USE_FP8" = 1 ]; then EXTRA_ARGS="--fp8-format hybrid"; else EXTRA_ARGS="--bf16"; fi\n'
        '  echo "probe: ${EXTRA_ARGS}"\n)\n'
        'OPTS="--seed 42 ${EXTRA_ARGS}"\n'
        f"torchrun --nproc_per_node 8 {entry} --tensor-model-parallel-size 1 \\\n"
        "  --pipeline-model-parallel-size 1 --load /ckpt/llama --micro-batch-size 1 $OPTS\n")
    assert not _not_pipeline(parse_launch(script.read_text(), str(script)))
    script.write_text(script.read_text().replace("(\n", "{\n").replace("\n)\n", "\n}\n"))
    assert _not_pipeline(parse_launch(script.read_text(), str(script)))  # a group in this shell: its texts


def test_code_not_read_before_the_command_may_change_its_words(tmp_path: Path) -> None:
    """r36-textgen review item 2: `source "$1"` after the command's variables are set may reset
    them (a pipeline flag in OPTS): no note. A source after the command changes nothing of it."""
    entry = "tools/run_text_generation_server.py"
    (tmp_path / "tools").mkdir(parents=True, exist_ok=True)
    (tmp_path / entry).write_text(SERVER)
    script = tmp_path / "run.sh"
    command = f"torchrun --nproc_per_node 1 {entry} --pipeline-model-parallel-size 1 $OPTS\n"
    script.write_text(f'OPTS="--num-layers 4"\nsource "$1"\n{command}')
    assert not _not_pipeline(parse_launch(script.read_text(), str(script)))
    script.write_text(f'OPTS="--num-layers 4"\n{command}source "$1"\n')
    assert _not_pipeline(parse_launch(script.read_text(), str(script)))


def _pai_generation_tree(root: Path) -> str:
    """Pai's llama2 text-generation entry with the megatron_patch modules it imports; its path."""
    files = {"megatron_patch/__init__.py": "", "megatron_patch/arguments.py": "def get_patch_args(p):\n    return p\n",
             "megatron_patch/generation/__init__.py": "", "megatron_patch/generation/api.py": PAI_API}
    entry = "examples/llama2/generate_text_megatron_llama.py"
    for name, body in {entry: PAI_ENTRY.format(extra=""), **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(body)
    return entry


def test_the_eval_that_runs_the_command_is_not_code_run_before_it(tmp_path: Path) -> None:
    """alibaba/Pai-Megatron-Patch a098ca5acb examples/codellama/run_text_generation_megatron_llama.sh
    builds `run_cmd="torchrun $DISTRIBUTED_ARGS generate_text_megatron_llama.py ..."` with
    `--pipeline-model-parallel-size 1` (:99, :121-122) and runs `eval ${run_cmd}` (:125); the
    master port is `$(shuf ...)` (:7). The eval's unknown words are the command's own words: what
    they may run besides runs after it, so the note stands. Code of unknown text before the command
    (`eval "$SETUP"`), or an eval whose text is re-read as a script (`export A=$U; ...`, where $U
    may end the export and run anything before the command), still leaves it unread."""
    entry = _pai_generation_tree(tmp_path)
    head = ('MASTER_PORT=$(shuf -n 1 -i 10000-65535)\n'
            'DISTRIBUTED_ARGS="--nproc_per_node 1 --master_port $MASTER_PORT"\n'
            f'run_cmd="torchrun $DISTRIBUTED_ARGS {entry}\n --pipeline-model-parallel-size 1 --num-layers 4"\n')
    script = tmp_path / "run.sh"
    script.write_text(f"{head}echo ${{run_cmd}}\neval ${{run_cmd}}\nset +x\n")
    [said] = _not_pipeline(parse_launch(script.read_text(), str(script)))
    assert "generates text" in said and "--pipeline-model-parallel-size 1" in said
    script.write_text(f'{head}eval "$SETUP"\neval ${{run_cmd}}\n')
    assert not _not_pipeline(parse_launch(script.read_text(), str(script)))
    script.write_text(f'{head}eval "export A=$U; ${{run_cmd}}"\n')
    assert not _not_pipeline(parse_launch(script.read_text(), str(script)))


@pytest.mark.parametrize("run, alone", [
    ('prep="python prep.py $1"\neval ${prep} && eval ${run_cmd}\n', "eval ${run_cmd} && true\n"),
    ('prep="python prep.py $1"\neval $prep; eval $run_cmd\n', "eval $run_cmd; true\n"),
    ("for i in 1 2; do eval ${run_cmd}; done\n", "eval ${run_cmd}\n"),
])
def test_an_eval_run_before_the_command_on_its_line_is_code_run_before_it(tmp_path: Path, run: str,
                                                                         alone: str) -> None:
    """alibaba/Pai-Megatron-Patch a098ca5acb examples/codellama/run_text_generation_megatron_llama.sh
    runs `eval ${run_cmd}` (:125) alone on its line. Another eval of unknown words on that line
    (`eval ${prep} && eval ${run_cmd}`) runs before the command, and so does a loop's earlier pass
    of the eval that runs it (`for i in 1 2; do eval ${run_cmd}; done`): only the warning of the
    eval that runs the command, outside a loop, speaks of what runs after it (before: matched by
    line number, both read NOT A PIPELINE RUN)."""
    entry = _pai_generation_tree(tmp_path)
    head = ('MASTER_PORT=$(shuf -n 1 -i 10000-65535)\n'
            'DISTRIBUTED_ARGS="--nproc_per_node 1 --master_port $MASTER_PORT"\n'
            f'run_cmd="torchrun $DISTRIBUTED_ARGS {entry} --pipeline-model-parallel-size 1 --num-layers 4"\n')
    script = tmp_path / "run.sh"
    script.write_text(head + run)
    assert not _not_pipeline(parse_launch(script.read_text(), str(script)))
    script.write_text(head + alone)
    assert _not_pipeline(parse_launch(script.read_text(), str(script)))
