"""A console script whose environment switches pick its trainer (issue 22 item 11).

`llamafactory-cli train X.yaml` trains with LLaMA-Factory's Hugging Face trainers unless USE_MCA
or USE_MEGATRON_BRIDGE picks a Megatron one (rules/llamafactory.toml `[[env_backend]]`). The
switches are read from the run's environment as the launch reader has it: the script's exports
and inline assignments over the environment the audit runs in. With every switch surely off
(unset, or a known value not in `env_true`) the run is no pipeline run: a `launch.not-pipeline`
note, which launch.refuse_not_pipeline turns into NOT A PIPELINE RUN. The switches are asked in
the rule's order, as the console script asks them: the first on, where the rule says no rules
model its trainer (`uncovered`: LLaMA-Factory's Megatron-Bridge trainer), is NOT COVERED with
the step that decides it; any other switch on, or one not known statically, leaves the run to its
Megatron readers.
"""

from __future__ import annotations

from auditor import rulebook
from auditor.config.model import LaunchConfig
from auditor.findings import Finding
from auditor.rulebook.files import names
from auditor.rulebook.frameworks import launched_by


def judge_env_backend(config: LaunchConfig, path: str) -> None:
    """Where a `[[env_backend]]` names the launcher: no pipeline run with every switch off, not
    covered where the first switch on runs a trainer no rules model; else nothing."""
    for rule in (e for name in names() for e in rulebook.load(name).data.get("env_backend", [])):
        if not launched_by(config.launcher, rule["launchers"]):
            continue
        given = [config.env.get(s) for s in rule["switches"]]
        if any(v is not None and v.how == "assign" for v in given):
            return  # not exported: the caller's environment decides it
        values = [v.value if v is not None else None for v in given]
        for switch, value in zip(rule["switches"], values):
            if value is None or (isinstance(value, str) and value.lower() not in rule["env_true"]):
                continue  # off: get_train_args asks the next one
            if isinstance(value, str) and switch in rule.get("uncovered", {}):
                config.diagnostics.append(Finding(
                    "launch.not-covered", "warning",
                    f"`{config.launcher}` with {switch}={value} trains with {rule['uncovered'][switch]}: "
                    f"{rule['covers']}", where=f"{path}:{config.command_line}",
                    detail={"stack": switch, "decide": rule["decide"], "source": rule["source"]}))
            return  # on, or not known statically: its Megatron readers
        said = [f"{s}={v}" for s, v in zip(rule["switches"], values) if v is not None]
        config.diagnostics.append(Finding(
            "launch.not-pipeline", "info",
            rule["not_pipeline"].replace("{launcher}", config.launcher) + (f" ({', '.join(said)})" if said else ""),
            where=f"{path}:{config.command_line}", detail={"command": config.launcher}))
        return
