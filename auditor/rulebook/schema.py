"""The keys every table of a rules file may hold, listed once.

A rules file is data that decides verdicts, so a mistyped key must not pass as an absent one:
`vesions = "<0.16"` would otherwise make an entry apply to every release. `check` names the
first key or table the list below does not allow; the loader refuses such a file (exit 2).
Values inside a key (a `values` or `p2p_chunk_bytes` table) are the entry's own data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet


@dataclass(frozen=True)
class Table:
    """`many`: an array of tables ([[name]]), else one table ([name])."""

    many: bool
    required: frozenset[str]
    optional: frozenset[str]

    @property
    def allowed(self) -> frozenset[str]:
        return self.required | self.optional


def _table(many: bool, required: str, optional: str = "") -> Table:
    return Table(many, frozenset(required.split()), frozenset(optional.split()))


# Keys that select an entry by release (rulebook.files) or say where it was read (`class`,
# `absent`: the class, or the field a release lacks, tests/rules/test_rules_agree.py checks).
_SELECT = "versions unknown read source code function class absent"

TABLES: dict[str, Table] = {
    # What the file is about; rulebook.frameworks documents each key.
    "framework": _table(False, "name", "distribution position launchers runs_on packages read "
                                       "verified latest_read needs releases comm_wrappers simulated"),
    # The config pipeline (rulebook.stages, evaluated by auditor/config/derive.py).
    "stage": _table(True, "name order", "launchers flags about front_ends styles"),
    # What makes a training script of any name a front end's: the calls it makes into the
    # front end's own modules (config/parser_entry.py).
    "parser_entry": _table(False, "front_end calls modules source code", "about parse_time_bases parse_time_methods"),
    # A library call a Megatron-LM parser is handed to (`parser = deepspeed.add_config_arguments(
    # parser)`), and the flags it adds in every release `checked` (config/frontend_parser.py).
    # The function whose stops a Megatron-LM checkout's parser file holds, and what skips it (config/validate_stops.py).
    "validate_stops": _table(False, "validator bypass handed source code", ""),
    "parser_helper": _table(True, "call module flags checked source code", "about"),
    "arg": _table(True, "stage key type", f"default class aliases {_SELECT}"),
    # `torch`: a PEP 440 specifier over the torch release the rule holds on, for a framework's code
    # that itself branches on torch's version (DeepSpeed's init_process_group); with torch's
    # release unknown the rule holds nowhere (rulebook.stages).
    "rule": _table(True, "id stage", f"key action value when guard provenance class valid invalid torch {_SELECT}"),
    "check": _table(True, "id stage when kind severity message",
                    f"effect fix remedy blame guard supersedes category explains headline valid invalid "
                    f"{_SELECT}"),
    # Model facts (rules/models.toml, looked up by config/model_facts.py).
    "model": _table(True, "names", "values torch_dtype versions source also also_source architecture provider"),
    # What a front end's launch keys change in the model its `model` argument names
    # (config/derive.py model_sizes): under each of `keys`, a `settings` field given is taken (it
    # wins over config.json), an `hf_sizes` name given makes that size unknown; `whole`: the key
    # itself names another config.json, so every size is unknown unless it names the same model.
    "model_override": _table(True, "keys source", f"settings hf_sizes whole about {_SELECT}"),
    # The values a setting a script leaves unknown is judged at (auditor/scan.py, issue 22).
    "setting_cases": _table(True, "key values why", "source"),
    # What a DeepSpeed training script hands DeepSpeed (config/deepspeed_entry.py).
    # `engine`: the calls that build the framework's engine from the model (deepspeed.initialize),
    # quoted by `engine_source`/`engine_code` (config/deepspeed_engine.py).
    "pipeline_model": _table(False, "modules names source code", "about engine engine_source engine_code "
                                                                      "inert_names inert_source inert_code"),
    # transformers' Trainer handed a DeepSpeed config (config/deepspeed_engine.py).
    "trainer_engine": _table(False, "arguments keyword trainers environment vouches what source code",
                             "about parsers parse dead_forms checked parse_source parse_code"),
    # `position` absent: a keyword-only parameter; `default`: what leaving it out states;
    # `unset = "unknown"`: leaving it out lets the callee decide at run time; `read`: the
    # NAME==VERSION whose source `source`/`code` cite (a file no release selects).
    "script_call": _table(True, "callee param key source code", "about position default unset read"),
    # What a launcher's runs get from the framework's own code whatever the script says
    # (config/lightning_entry.py): `value` for `key`, read in the release `read` names.
    "entry_fact": _table(True, "key value about read source code", ""),
    # The model-config attributes an entry with its own argparse sets as settings of the same
    # name (config/entry_assign.py: `model_provider.pipeline_model_parallel_size = args.pp`).
    "config_attribute": _table(False, "keys source code", "about"),
    # The schedules' forward-only parameter (config/entry_assign.py).
    "forward_only": _table(False, "param step microbatches getter source code", "about"),
    # megatron-core's inference engine modules (config/entry_inference.py).
    "inference_engine": _table(False, "modules source code", "about servers trains_nothing"),
    # The framework modules whose P2P functions an entry may call itself (config/entry_p2p_calls.py).
    "p2p_functions": _table(False, "modules source code", "about"),
    # The sizes Megatron-LM takes from the checkpoint (config/checkpoint_args.py).
    "checkpoint_args": _table(False, "flag gate modules keys source code", "about"),
    # What a Megatron-Bridge generate entry leaves at megatron-core's defaults, and what sets
    # them otherwise (config/generate_entry.py).
    "entry_defaults": _table(False, "styles keys source code", "about"),
    "entry_setter": _table(True, "id flags keys why source code", "values decide written_by provider_keys provider_writes loader loader_params config_loaders provider_init"),
    # The call-graph interpreter (rulebook.interpreter).
    "entry_point": _table(True, "name code", "about launchers source versions unknown when"),
    "symbol": _table(True, "function", "config group returns versions unknown source"),
    # A function that answers a constant under settings (analysis/schedule_reach.py).
    "stage_predicate": _table(True, "function at value checked source", "param position default versions unknown"),
    "group": _table(True, "dim size names", "versions unknown source"),
    "config_objects": _table(False, "names", "about"),
    "world_group": _table(False, "qualnames", "about"),
    # The folders of torch whose P2P sites a framework's runs issue (torchtitan: pipelining).
    "torch_source": _table(False, "paths", "about"),
    # The package a checkout of the framework holds, whose run is that checkout's release
    # (auditor/config/checkout_release.py). `within`: a launch script anywhere inside the checkout
    # is run from its root (verl's `bash examples/...`); `tree`: the checkout's package folder is
    # the source the scan reads (a development version no package index has).
    "checkout": _table(False, "package", "about within tree"),
    # What a framework's code calls in the next framework of its stack: a release of `callee`
    # whose `callee_def` cannot bind the call (a keyword it lacks) cannot run with that framework
    # release or checkout (auditor/config/call_fit.py).
    "call_fit": _table(True, "caller call callee callee_source callee_def", "about"),
    # Where a framework's distribution lies inside the checkout around the entry script (ROLL's
    # mcore_adapter/): that directory is the release judged (auditor/config/source_tree.py).
    "source_tree": _table(False, "dir marker", "about"),
    # A Python entry that composes a Hydra config from --config_path/--config_name and runs one
    # configuration per role (auditor/config/hydra_compose.py).
    "hydra_compose": _table(True, "launchers path_options name_options role_key role_values settings_key",
                            f"path_default devices_key train_values stages_key builds {_SELECT}"),
    # A Hydra main whose composed config names the trainer's strategy (verl's
    # actor_rollout_ref.actor.strategy): FSDP runs no pipeline (auditor/config/frontends/hydra_strategy.py).
    "hydra_strategy": _table(False, "main config_path config_name path_options name_options keys not_pipeline",
                             "source code versions read"),
    # A Python entry that loads a YAML `--config-file` and applies `key=value` words to it, its train
    # backend picking the Megatron roles (ChatLearn; auditor/config/frontends/chatlearn.py), and the
    # defaults its Megatron role config sets onto Megatron-LM's args.
    "dotlist_config": _table(False, "algorithms file_options backend_key megatron_backend megatron_roles",
                             "devices_key not_pipeline file_loaded source code"),
    "role_default": _table(True, "key value source code", ""),
    # Where the front end reads the model's config.json and which settings it takes from it
    # (ChatLearn's update_cfg; the facts are rules/models.toml's, config/model_facts.py).
    "model_config": _table(False, "path_key source code", "releases"),
    "model_setting": _table(True, "key fact function source code", "architecture factor guards"),
    # torch's P2P API (rulebook.apis, auditor/dynamic/hooks.py).
    "p2p_api": _table(True, "name qualnames params issues", f"peer group op wire {_SELECT}"),
    "coalescing_context": _table(True, "qualnames", f"group_param {_SELECT}"),
    "pg_method": _table(True, "name issues", _SELECT),
    "process_group": _table(False, "", "types factories"),
    # The remedy of a finding the analysis makes (not a [[check]]'s), by its kind.
    "finding_remedy": _table(True, "kind remedy", f"about {_SELECT}"),
    # An op's error text that says its peer's process ended (auditor/analysis/peerend.py).
    "peer_lost": _table(True, "text source", "about code"),
    "env_var": _table(True, "name status", "severity message fix remedy replacement requires reader allowed read_at read_source "
                                           f"valid invalid {_SELECT}"),
    "p2p_roles": _table(False, "peer_pattern", "valid invalid source"),
    # The packages of a release that stand in whole for a checkout's copy of them, where the run's
    # copy is not read (config/submodule_copy.py): a module of them the release lacks is evidence
    # that the run's copy is another code.
    "stand_in": _table(False, "packages", "about source"),
    # Modules every release a rules file judges holds (config/entry_imports.py released): a guarded
    # import of one takes the imported branch in the job's copy, not read here.
    "released_modules": _table(False, "modules", "about source"),
    # The subpackages installed distributions put inside a namespace package (config/entry_imports.py):
    # any other one comes from the checkout's own folder of it.
    "namespace_portions": _table(False, "package portions source", "about"),
    "batch_wrapper": _table(True, "modules key", "versions unknown source"),
    # Container images whose torch build a launch script names (config.torch_version).
    "container_image": _table(True, "image tag torch source", "nccl"),
    # Modules a release imports at module level that simulate stands in where absent
    # (auditor/simulate/standins.py).
    "import_stand_in": _table(True, "module why imported_by", _SELECT),
    # How a launch script is spelled (rulebook.launchers).
    "flag": _table(True, "spelling dest action", f"nargs valid invalid {_SELECT}"),
    "no_flag": _table(True, "spellings dest", f"why valid invalid {_SELECT}"),
    "launcher": _table(True, "name style",
                       "program programs subcommands python_modules torchrun_subcommands env_nproc "
                       "env_nnodes nproc_flags nnodes_flags ntasks_flags nproc_default nnodes_default env_prefix "
                       f"device_count_values boolean_options value_options code_options env_options env_separator env_keep_all env_keep_none env_always env_caller_wins env_default module_options interpreters python_scripts not_pipeline pair_options directive directive_options nproc_keys nnodes_keys entry_builds script_copies hydra_copies one_process process_starters process_packages world_env world_size_env world_size_agrees step_size_options world_joins world_join_params inert_packages routes args_classes script_in_cwd trains {_SELECT}"),
    # What torch's own launcher refuses, or hands the script, before any worker trains
    # (auditor/config/launch_options.py).
    # What a front end does with a flag its parser lacks where it parses leniently and then raises
    # on what is left (ms-swift's _parse_args; config/frontends/swift_fields.py).
    "unknown_flags": _table(False, "source code lenient_field checked", "about diverts diverts_source diverts_code"),
    "launcher_option": _table(True, "id launchers options source code line", f"type parsed_at range unless {_SELECT}"),
    "launcher_handoff": _table(True, "id launchers passes source code line", f"unless helpers refused_since {_SELECT}"),
    # A script the launcher starts that has a front end of its own (`style`); `not_pipeline`: what
    # it is where it trains no pipeline (a checkpoint conversion), `{script}` its path as written.
    # `front_ends`: launchers whose `routes` (subcommand -> module) may name the script: it is that
    # subcommand (`torchrun swift/cli/rlhf.py` is `swift rlhf`). `checkout`: the distribution
    # whose version file (auditor/sources.py) the directory the pattern's path lies in must hold
    # for `not_pipeline` to hold (a tools/checkpoint/ of another repository is not Megatron-LM's).
    "swift_script": _table(True, "pattern style", f"not_pipeline front_ends checkout {_SELECT}"),
    # Megatron-Bridge's run_recipe.py front end (auditor/config/frontends/megatron_bridge.py).
    "recipe_runner": _table(False, "recipe_option model_option mode_option tasks flag_options overrides "
                                   "recipe_dirs keys layout_keys topology_keys layout_override", "missing source"),
    # Megatron-Bridge MIMO entries' `--component` specs (auditor/config/bridge_mimo.py).
    "mimo": _table(False, "module option language fields other_fields field_default layout_class fixed unset "
                          "comm_defaults comm_names trains provider topology bridge_key no_global_key global_init global_ones global_positional global_other source", ""),
    # Megatron-LM MIMO entries: module grids and the communicator between them (auditor/config/mlm_mimo.py).
    "mimo_grids": _table(False, "communicator topology language none_is single skip_init bridge_key no_global_key "
                                "source", ""),
    # A tool a checkout ships that prints a directory holding a copy of the checkout's files
    # (auditor/bash/expand.py `_checkout_copy`).
    "checkout_copy": _table(True, "script root marks folder_var folder_default source", ""),
    "wrappers": _table(False, "", "programs shells batch separated python_runners operand_required "
                                  "operand_source environment_set batch_flags cwd_options no_training program_options "
                                  "no_training_subcommands command_operand command_text operand_variables "
                                  "sed_scripts input_words input_files input_plain input_batch option_grammar command_options remote_shells "
                                  "operands inert_python_modules command_ends fetchers copiers extractors option_words"),
    # `uv run [options] COMMAND` (config.training_command): the options that take a value.
    "command_runner": _table(True, "program subcommand value_options source",
                             "module_options cwd_options operands workdir_unknown own_command program_options "
                             "mount_options python_scripts script_program"),
    "backend": _table(True, "name what env paths covers short decide", "source"),
    # What a Python entry's imports say about its stack (rules/stacks.toml, config/entry_stack.py).
    "own_pipeline": _table(True, "name modules what covers decide source", ""),
    "no_pipeline": _table(False, "packages except_modules except_names dynamic source", "about modules inert_programs rankless_subcommands command_runners command_methods runner_keywords runs_text inert_names "
                                                                                            "loaders loader_methods printing_programs directory_programs serving_modules caller_namespace frame_access"),
    # Third-party libraries whose names start programs (config/shell_command.py starts_programs).
    "command_library": _table(True, "name modules what source", "programs_by_attribute not_programs"),
    # Third-party callables that start a program or a training run (config/shell_command.py starts_programs).
    "package_starter": _table(True, "name starters what source", ""),
    # The pipeline schedules and training loops a call graph from the entry may reach
    # (analysis/schedule_reach.py).
    "schedule_entry": _table(True, "stack what module names checked source", ""),
    # What a training step is called (config/no_training.py).
    "training_step": _table(False, "loops methods pipeline_modules pipeline_names source", ""),
    # Calls through which an entry's code may set its parser's settings (config/no_training.py).
    "settings_mapping": _table(False, "keywords source", ""),
    "unknown_stack": _table(False, "covers decide source", ""),
    "unread_entry": _table(False, "covers decide_name decide_file", ""),
    "torch_launched_deepspeed": _table(False, "covers decide source", ""),
    "deepspeed_no_pipeline_module": _table(False, "covers decide source", ""),
    # A Python entry with `@hydra.main` that no front end's rules read (config/entry_stack.py).
    "hydra_entry": _table(False, "covers decide source", ""),
    # The modules of a framework's package a launcher runs (`-m`, `deepspeed --module`) that train
    # no pipeline: `not_pipeline` says what the run is (config/entry_stack.py packaged_entry);
    # `checked`: the releases the test reads it in.
    "entry_module": _table(True, "modules not_pipeline checked source code", "scripts"),
    # An entry of a framework's checkout that reaches none of its training loops: NOT A PIPELINE
    # RUN (config/no_training.py).
    # `loops`, `pipeline_modules`, `pipeline_names` where not its own: rules/stacks.toml [training_step]
    "no_training_entry": _table(True, "package what source code",
                                "modules flags absent methods checked loops pipeline_modules pipeline_names"),
    # A console script whose environment switches pick its trainer (LLaMA-Factory's USE_MCA): with
    # none on, `not_pipeline` (config/env_backend.py).
    # How NeMo-RL's examples/run_*.py pick each Policy's backend, `roles` the Policies a script builds
    # (config/frontends/nemo_rl.py).
    "nemo_rl_policy": _table(False, "config_option inherit_key override_marker megatron_key dtensor_key size_key roles unread "
                                    "dtensor what covers decide source code stages model_overrides_key "
                                    "several backend backend_source backend_code world env_vars_key generation_key "
                                    "generation_megatron generation_size_key generation generation_source "
                                    "generation_code passed passed_section passed_source passed_code", ""),
    "env_backend": _table(True, "launchers switches env_true not_pipeline checked source code",
                          "uncovered covers decide"),
    # What GPT-NeoX's deepy.py config files say about the pipeline (config/frontends/neox.py).
    "neox_pipeline": _table(False, "key default dir_options suffixes one_stage how setting backend_key backend_default "
                              "backend_source backend_code engine_source engine_code fork fork_release fork_same source code",
                            ""),
    # What stops a GPT-NeoX pipeline run before it trains (config/frontends/neox.py).
    "neox_stop": _table(True, "key default stops message fix source code", ""),
    # A front end known by its flags that puts the run on another stack (config.launch).
    "front_end": _table(True, "name scripts flags launcher what",
                        "layout_flags flags_as_written pipeline_models pipeline_models_source source code"),
    # Config files the trainer reads (auditor/config/configfiles.py).
    "config_file": _table(True, "kind launchers", f"suffixes env_key flag sections cli_source cli_code "
                                                     f"extended_by own_modules file_loaded {_SELECT}"),
    # A positional config file an HfArgumentParser-style entry reads (auditor/config/hf_config_file.py).
    "positional_file": _table(True, "name scripts imports front_end suffixes overrides source code",
                              f"env env_true launchers {_SELECT}"),
    # NCCL's transports (rules/nccl.toml; docs/transport-semantics.md).
    "nccl": _table(False, "", "versions torch steps p2p_chunk_bytes max_channels"),
    "topology": _table(False, "", "node net"),
    "transport": _table(True, "name model_name bound completes_bytes",
                        "hangs_bytes per_channel per_channel_no_recv_enqueued evidence "
                        "per_channel_steps chunk net_names"),
}


# The types of the keys code reads without looking (a string where a list belongs would be read
# as its characters).
TYPES: dict[str, dict[str, type]] = {
    "framework": {"name": str, "distribution": str, "position": int, "launchers": list,
                  "runs_on": str, "packages": list, "needs": list, "read": str, "verified": list,
                  "latest_read": str, "releases": list, "comm_wrappers": list},
    # launcher patterns (rulebook.frameworks.launched_by) and a wrapper's module prefixes
    "stage": {"launchers": list, "front_ends": list, "styles": list},
    "parser_entry": {"front_end": str, "calls": list, "modules": list, "parse_time_bases": list,
                     "parse_time_methods": list},
    "validate_stops": {"validator": str, "bypass": list, "handed": list},
    "namespace_portions": {"package": str, "portions": list},
    "setting_cases": {"key": str, "values": list, "why": str},
    "parser_helper": {"call": str, "module": str, "flags": dict, "checked": list},
    "front_end": {"scripts": list, "flags": list, "layout_flags": list, "launcher": str, "pipeline_models": list},
    "script_call": {"callee": list, "param": str, "key": str, "position": int, "read": str},
    "command_runner": {"program": str, "subcommand": str, "value_options": list, "module_options": list,
                       "cwd_options": list, "operands": int, "workdir_unknown": bool, "own_command": str,
                       "program_options": list, "mount_options": list, "python_scripts": bool,
                       "script_program": str},
    "entry_point": {"launchers": list},
    "launcher_option": {"launchers": list, "options": list, "type": str, "parsed_at": str, "range": list,
                        "unless": list, "line": int},
    "launcher_handoff": {"launchers": list, "passes": str, "unless": list, "helpers": list, "line": int,
                         "refused_since": str},
    "launcher": {"python_scripts": list, "script_copies": dict, "hydra_copies": dict, "trains": bool},
    "hydra_compose": {"launchers": list, "path_options": list, "name_options": list, "role_values": list,
                      "builds": dict},
    "hydra_strategy": {"main": str, "config_path": str, "config_name": str, "path_options": list,
                       "name_options": list, "keys": list, "not_pipeline": dict},
    "dotlist_config": {"algorithms": list, "file_options": list, "backend_key": str, "megatron_backend": str,
                       "megatron_roles": list, "not_pipeline": dict, "file_loaded": str},
    "role_default": {"key": str, "value": str},
    "model_config": {"path_key": str, "releases": list},
    "model": {"names": list, "values": dict, "also": list, "architecture": str, "provider": dict},
    "model_setting": {"key": str, "fact": str, "function": str, "architecture": str, "factor": int, "guards": list},
    "entry_module": {"modules": list, "not_pipeline": str, "checked": list, "scripts": list},
    "no_training_entry": {"package": str, "loops": list, "pipeline_modules": list, "pipeline_names": list, "what": str,
                          "modules": list, "flags": list, "absent": list, "methods": list, "checked": list},
    "neox_pipeline": {"key": str, "default": int, "dir_options": list, "suffixes": list, "how": dict},
    "env_backend": {"launchers": list, "switches": list, "env_true": list, "not_pipeline": str, "checked": list,
                    "uncovered": dict},
    "config_attribute": {"keys": list},
    "forward_only": {"param": str, "step": str, "microbatches": str, "getter": str},
    "inference_engine": {"modules": list, "servers": list, "trains_nothing": list},
    "p2p_functions": {"modules": list},
    "checkpoint_args": {"flag": str, "gate": str, "modules": list, "keys": list},
    "entry_defaults": {"styles": list, "keys": list},
    "entry_setter": {"id": str, "flags": list, "keys": list, "why": str, "values": list, "decide": str,
                     "written_by": dict, "provider_keys": list, "provider_writes": list,
                     "loader": str, "loader_params": list, "config_loaders": list, "provider_init": str},
    "stage_predicate": {"function": str, "at": dict, "value": bool, "checked": list, "param": str,
                        "position": int, "default": bool},
    "batch_wrapper": {"modules": list, "key": str},
    "container_image": {"image": str, "tag": str, "torch": str, "source": str},
    "config_file": {"kind": str, "launchers": list, "suffixes": list, "sections": list, "file_loaded": str,
                    "extended_by": list, "own_modules": list},
    "positional_file": {"scripts": list, "imports": list, "front_end": str, "suffixes": list,
                        "overrides": str, "env": str, "env_true": list, "launchers": list},
    "check": {"remedy": list},
    "env_var": {"remedy": list},
    "finding_remedy": {"kind": str, "remedy": list},
    "peer_lost": {"text": str},
}

# A remedy option (`remedy = [{option, edit, name, value?, default?}]` of a check or env_var):
# the mechanical edits `p2paudit fix` makes (auditor/fix/script.py), entries of one `option`
# name made together, or `upgrade`, a release of `name` in the range `value` that is no edit of
# the inputs.
REMEDY_EDITS = {"unset_env": False, "set_env": True, "rename_env": True, "set_flag": True,
                "upgrade": True,
                # codemods of the trainer's Python (auditor/fix/p2pcode.py): `name` the torch
                # API, `value` the keyword or descriptor type it takes
                "eager_init": True, "pass_group": True, "batch_p2p": True,
                }  # edit -> whether it needs a `value`
REMEDY_KEYS = frozenset(["option", "edit", "name", "value", "default"])
_SPOKEN = {str: "a string", int: "an integer", list: "a list", dict: "a table"}


def problem(data: dict[str, Any]) -> str | None:
    """What is wrong with a parsed rules file, or None: an unknown table or key, a missing
    required key, a key of the wrong type, a `versions` that is no PEP 440 specifier."""
    if "framework" not in data:
        return "no [framework] table"
    for name, value in data.items():
        table = TABLES.get(name)
        if table is None:
            return f"unknown table [{name}] (known: {', '.join(sorted(TABLES))})"
        entries = value if table.many else [value]
        if not isinstance(value, list if table.many else dict):
            return f"[{name}] must be written {'[[' + name + ']]' if table.many else '[' + name + ']'}"
        for n, entry in enumerate(entries):
            where = f"[[{name}]] #{n + 1}" if table.many else f"[{name}]"
            if not isinstance(entry, dict):
                return f"{where} must be a table"
            unknown = sorted(set(entry) - table.allowed)
            if unknown:
                return f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(table.allowed))})"
            missing = sorted(table.required - set(entry))
            if missing:
                return f"{where}: missing key {missing[0]!r}"
            for key, kind in TYPES.get(name, {}).items():
                if key in entry and not isinstance(entry[key], kind):
                    return f"{where}: {key} must be {_SPOKEN[kind]}"
            if "remedy" in entry:
                bad = _remedy_problem(entry["remedy"])
                if bad:
                    return f"{where}: remedy {bad}"
            # `torch` selects a [[rule]] by torch's release; elsewhere it is a version (an image's).
            for selector in ("versions", "torch") if name == "rule" else ("versions",) if table.many else ():
                spec = entry.get(selector)
                if spec is None or spec == "*":
                    continue
                try:
                    SpecifierSet(spec if isinstance(spec, str) else "!", prereleases=True)
                except InvalidSpecifier:
                    return f"{where}: {selector} {spec!r} is not a PEP 440 specifier such as \">=0.16,<0.18\""
    return None


def _remedy_problem(options: list[Any]) -> str | None:
    """What is wrong with a remedy list: an unknown key or edit, a missing name or value, an
    option that edits one name twice or whose edits are apart, not exactly one default. An
    option of several edits lists each as an entry of the same `option` name, one after another."""
    seen: list[tuple[str, Any]] = []
    for option in options:
        if not isinstance(option, dict):
            return "options must be tables"
        unknown = sorted(set(option) - REMEDY_KEYS)
        if unknown:
            return f"option: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(REMEDY_KEYS))})"
        name = option.get("option")
        if not isinstance(name, str) or (name, option.get("name")) in seen:
            return f"option name {name!r} missing, or repeated for {option.get('name')!r}"
        if name in {n for n, _ in seen} and options[len(seen) - 1].get("option") != name:
            return f"option {name!r}: its edits must be listed together"
        seen.append((name, option.get("name")))
        edit = option.get("edit")
        if edit not in REMEDY_EDITS:
            return f"{name}: edit {edit!r} is not one of {', '.join(REMEDY_EDITS)}"
        if not isinstance(option.get("name"), str):
            return f"{name}: no name (the variable, flag or package the edit is about)"
        if REMEDY_EDITS[edit] != isinstance(option.get("value"), str):
            return f"{name}: edit {edit} {'needs' if REMEDY_EDITS[edit] else 'takes no'} value"
    if sum(1 for o in options if o.get("default") is True) != 1:
        return "must mark exactly one option default = true"
    return None
