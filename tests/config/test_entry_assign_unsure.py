"""Where the entry's own argparse or code may give the pipeline size another value than the one
read, the size is unknown (no NOT A PIPELINE RUN note), never a default.

Each script is Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge, commit
067f987df03b8355b03192d88d70f1709fedf51a) examples/conversion/hf_to_megatron_generate_text.py's
shape (tests/config/test_entry_assign.py's GENERATE: `pp = args.pp`,
`model_provider.pipeline_model_parallel_size = pp` (:200, :258), `--pp` at :421,
`**_hf_revision_kwargs(args.hf_revision)` at :194, `fwd_bwd_function(**kwargs)` at :121),
launched as examples/models/deepseek_v4/inference.sh:56-63 does, with one construct of the
h31 review's repros (/work/upstream/h31-review: d_extra, d_pre, b_abbrev, s_defaults, g_args,
c_tuple, h_setattr) written in.
"""

from __future__ import annotations

import pytest

from auditor.config.expr import UNKNOWN
from tests.config.test_entry_assign import GENERATE, _config, _not_pipeline

PP = "pipeline_model_parallel_size"
SET = "        model_provider.pipeline_model_parallel_size = pp\n"


def _unknown(config) -> bool:
    """The file writes the size with a value not read: unknown, never the provider's default."""
    return config.entry_values[PP][0] is UNKNOWN


def _sure(config, value: int) -> bool:
    return PP in config.entry_values and config.entry_values[PP][0] == value


def test_a_word_not_known_after_the_flag_may_set_it(tmp_path) -> None:
    config = _config(tmp_path, GENERATE, "--tp 1 --pp 1 ${EXTRA_ARGS}")
    assert _unknown(config) and not _not_pipeline(config)


def test_a_word_not_known_where_the_flag_is_left_out_may_set_it(tmp_path) -> None:
    config = _config(tmp_path, GENERATE, "${EXTRA_ARGS} --tp 1")
    assert _unknown(config) and not _not_pipeline(config)


def test_the_flag_written_after_the_word_stands(tmp_path) -> None:
    """argparse keeps the last value: `--pp 1` after `${EXTRA_ARGS}` is the run's."""
    config = _config(tmp_path, GENERATE, "${EXTRA_ARGS} --tp 1 --pp 1")
    assert _sure(config, 1) and _not_pipeline(config)


def test_an_abbreviated_flag_is_its_option(tmp_path) -> None:
    """argparse's allow_abbrev (True by default): `--pipeline 4` is `--pipeline-parallel-size 4`."""
    code = GENERATE.replace('add_argument("--pp", type=int',
                            'add_argument("--pipeline-parallel-size", dest="pp", type=int')
    config = _config(tmp_path, code, "--tp 1 --pipeline 4")
    assert _sure(config, 4) and not _not_pipeline(config)


def test_an_abbreviation_of_several_options_decides_nothing(tmp_path) -> None:
    code = GENERATE.replace('add_argument("--pp", type=int',
                            'add_argument("--pipeline-parallel-size", dest="pp", type=int').replace(
        'add_argument("--tp", type=int', 'add_argument("--pipeline-tp-size", dest="tp", type=int')
    config = _config(tmp_path, code, "--pipeline 1")
    assert _unknown(config) and not _not_pipeline(config)


def test_a_parser_without_abbreviations_keeps_the_default(tmp_path) -> None:
    """allow_abbrev=False: argparse rejects `--pipe`; the size is not read from it."""
    code = GENERATE.replace('add_argument("--pp", type=int',
                            'add_argument("--pipeline-parallel-size", dest="pp", type=int').replace(
        "argparse.ArgumentParser()", "argparse.ArgumentParser(allow_abbrev=False)")
    config = _config(tmp_path, code, "--pipe 4")
    assert not _sure(config, 4)


def test_set_defaults_decides_the_default(tmp_path) -> None:
    code = GENERATE.replace("    main(parser.parse_args())", "    parser.set_defaults(pp=4)\n    main(parser.parse_args())")
    config = _config(tmp_path, code, "--tp 1")
    assert _unknown(config) and not _not_pipeline(config)


def test_a_later_store_to_the_parsed_argument_decides_nothing(tmp_path) -> None:
    code = "import os\n" + GENERATE.replace("    pp = args.pp\n",
                                            "    args.pp = int(os.environ.get('PP', args.pp))\n    pp = args.pp\n")
    config = _config(tmp_path, code, "--tp 1 --pp 1")
    assert _unknown(config) and not _not_pipeline(config)


@pytest.mark.parametrize("store", [
    "model_provider.tensor_model_parallel_size, model_provider.pipeline_model_parallel_size"
    " = map(int, os.environ['TP_PP'].split(','))",  # a tuple target writes the size too
    "for key, value in json.loads(os.environ.get('MP', '{}')).items():\n"
    "            setattr(model_provider, key, value)",  # setattr with a name not known: every size
    "vars(model_provider).update(json.loads(os.environ['MP']))",  # through vars(): every size
    "model_provider.__dict__[os.environ['K']] = 4",  # through __dict__: every size
], ids=["tuple-target", "setattr-unknown-name", "vars-update", "dict-store"])
def test_a_store_the_file_does_not_spell_writes_the_size(tmp_path, store) -> None:
    code = "import json, os\n" + GENERATE.replace(SET, SET + f"        {store}\n", 1)
    config = _config(tmp_path, code, "--tp 1 --pp 1")
    assert _unknown(config) and not _not_pipeline(config)


def test_keywords_from_outside_the_file_may_write_the_size(tmp_path) -> None:
    code = "import json, os\n" + GENERATE.replace(
        "model_provider.provide_distributed_model(wrap_with_ddp=False)",
        "model_provider.provide_distributed_model(**json.loads(os.environ['KW']))")
    config = _config(tmp_path, code, "--tp 1 --pp 1")
    assert _unknown(config) and not _not_pipeline(config)


def test_keywords_the_file_spells_out_write_nothing_else(tmp_path) -> None:
    """`**_hf_revision_kwargs(args.hf_revision)` (a local function returning a dict literal) and
    `fwd_bwd_function(**kwargs)` (its own **kwargs): their keys are written in the file."""
    code = GENERATE.replace("import argparse\n", "import argparse\n\n\n"
                            "def _revision(revision):\n"
                            "    return {'revision': revision} if revision is not None else {}\n\n\n"
                            "def _run(fn, **kwargs):\n    return fn(**kwargs)\n").replace(
        "AutoBridge.from_hf_pretrained(args.hf_model_path)",
        "AutoBridge.from_hf_pretrained(args.hf_model_path, **_revision(None))").replace(
        "    return get_forward_backward_func()(", "    return _run(get_forward_backward_func(), ")
    config = _config(tmp_path, code, "--tp 1 --pp 1")
    assert _sure(config, 1) and _not_pipeline(config)


def test_the_note_claims_only_what_the_calls_show(tmp_path) -> None:
    """Only calls that name forward_only are read: the note says so, not "no training step"."""
    said = _not_pipeline(_config(tmp_path, GENERATE, "--tp 1 --pp 1"))
    assert len(said) == 1 and "no training step" not in said[0] and "every call that names it" in said[0], said


def test_a_local_module_that_stores_the_parsed_argument_decides_nothing(tmp_path) -> None:
    code = GENERATE.replace("import argparse\n", "import argparse\n\nimport gen_args\n").replace(
        "    pp = args.pp\n", "    gen_args.fix(args)\n    pp = args.pp\n")
    (tmp_path / "examples" / "conversion").mkdir(parents=True)
    (tmp_path / "examples" / "conversion" / "gen_args.py").write_text(
        "import os\n\n\ndef fix(args):\n    args.pp = int(os.environ.get('PP', args.pp))\n")
    config = _config(tmp_path, code, "--tp 1 --pp 1")
    assert _unknown(config) and not _not_pipeline(config)
    assert config.entry_values["tensor_model_parallel_size"][0] == 1


def test_a_store_by_a_computed_name_leaves_a_size_the_file_never_names_to_the_front_end(tmp_path) -> None:
    """Megatron-Bridge's run_recipe.py entries apply overrides by computed names but never name a
    size: the recipe front end reads those, not this reader (no UNKNOWN put over it)."""
    code = "import json, os\n" + GENERATE.replace(
        SET, SET + "        for key, value in json.loads(os.environ.get('MP', '{}')).items():\n"
        "            setattr(model_provider, key, value)\n", 1)
    config = _config(tmp_path, code, "--tp 1 --pp 1")
    assert "context_parallel_size" not in config.entry_values and _unknown(config)
