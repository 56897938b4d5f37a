"""A finding's fix options, as the rules write them: the `remedy` list of the `[[check]]` that
made it, of the `[[env_var]]` it is about, or of the `[[finding_remedy]]` of its kind (a finding
the analysis makes, whose remedy is a codemod of the trainer: auditor/fix/p2pcode.py). One wording: the check's `fix` prose says the same
edits (tests/fix/test_fix_remedy_rules.py checks that it names each option's variable or flag and
value). An env_var without a `remedy` gets the one its status implies: a deprecated alias is
renamed to its `replacement`, a variable nothing reads is removed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any

from auditor import rulebook
from auditor.rulebook.files import names


@dataclass(frozen=True)
class Option:
    option: str  # its name, for --option
    edit: str  # rulebook.schema.REMEDY_EDITS
    name: str  # the variable, flag or package
    value: str | None = None
    default: bool = False
    also: tuple[Option, ...] = ()  # the option's further edits, made with this one

    @property
    def steps(self) -> tuple[Option, ...]:
        return (self, *self.also)

    @property
    def mechanical(self) -> bool:
        """Every step is an edit of the inputs (not a release to run)."""
        return all(o.edit != "upgrade" for o in self.steps)

    def says(self) -> str:
        """The option in words, as the diff's report shows it."""
        return " and ".join({"unset_env": f"remove {o.name}",
                             "set_env": f"set {o.name}={o.value}",
                             "rename_env": f"rename {o.name} to {o.value}",
                             "set_flag": f"pass {o.name} {o.value}",
                             "upgrade": f"run {o.name} {o.value}",
                             "eager_init": f"pass {o.value}=torch.device(\"cuda\", LOCAL_RANK) "
                                           f"to {o.name} (eager NCCL init)",
                             "pass_group": f"pass {o.value}= the pipeline group its neighbours "
                                           "in the function use",
                             "batch_p2p": f"issue the back-to-back sends and receives as one "
                                          f"{o.name} of {o.value}s",
                             }[o.edit] for o in self.steps)


@functools.cache
def _checks() -> dict[str, list[dict[str, Any]]]:
    """Every `[[check]]` of every rules file by id, whatever its release range."""
    out: dict[str, list[dict[str, Any]]] = {}
    for framework in names():
        for entry in rulebook.load(framework).data.get("check", []):
            out.setdefault(entry["id"], []).append(entry)
    return out


@functools.cache
def _by_kind() -> dict[str, list[dict[str, Any]]]:
    """The `[[finding_remedy]]` entries of torch's rules by the finding kind they remedy."""
    out: dict[str, list[dict[str, Any]]] = {}
    for entry in rulebook.load("torch").data.get("finding_remedy", []):
        out.setdefault(entry["kind"], []).append(entry)
    return out


@functools.cache
def _env_vars() -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for entry in rulebook.load("torch").data.get("env_var", []):
        out.setdefault(entry["name"], []).append(entry)
    return out


def _options(raw: list[dict[str, Any]]) -> list[Option]:
    """The entries of one option name (listed together) as one option of several edits."""
    out: list[Option] = []
    for o in raw:
        step = Option(o["option"], o["edit"], o["name"], o.get("value"), bool(o.get("default")))
        if out and out[-1].option == step.option:
            out[-1] = replace(out[-1], also=(*out[-1].also, step))
        else:
            out.append(step)
    return out


def options_for(finding: dict[str, Any]) -> list[Option]:
    """The finding's fix options, the default first; none where no remedy is mechanical."""
    detail = finding.get("detail") or {}
    found: list[Option] = []
    if detail.get("rule") in _checks():
        found = next((_options(e["remedy"]) for e in _checks()[detail["rule"]] if "remedy" in e), [])
    elif finding["kind"] in ("env-unread", "env-deprecated") and detail.get("variable") in _env_vars():
        found = _env_options(finding["kind"], _env_vars()[detail["variable"]])
    elif finding["kind"] in _by_kind():
        found = _options(_by_kind()[finding["kind"]][0]["remedy"])
    return sorted(found, key=lambda o: not o.default)


def _env_options(kind: str, entries: list[dict[str, Any]]) -> list[Option]:
    for entry in entries:
        if "remedy" in entry:
            return _options(entry["remedy"])
    for entry in entries:
        if kind == "env-deprecated" and entry.get("replacement"):
            return [Option("rename", "rename_env", entry["name"], entry["replacement"], True)]
        if kind == "env-unread" and entry.get("status") == "unread":
            return [Option("remove", "unset_env", entry["name"], None, True)]
    return []


def pick(options: list[Option], chosen: set[str]) -> Option | None:
    """The option `--option` names, else the default."""
    return next((o for o in options if o.option in chosen), options[0] if options else None)
