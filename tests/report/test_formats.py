"""The one table of output formats (auditor.report.formats): every reporter renders a real
document of each kind it claims, and every command's --format choices and default are the
table's."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from auditor.analysis.headops import head_ops
from auditor.cli import build_parser, main
from auditor.dynamic.trace import read_trace_dir
from auditor.report import formats

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "glm5_1_lora_pp2.sh"
HANG = ROOT / "tests" / "record_fixtures" / "hang"
COMMANDS = {"scan": "scan", "report": "run", "gate": "gate", "simulate": "simulate",
            "sites": "sites", "diff": "diff"}


def _json(tmp: Path, name: str, argv: list[str]) -> dict[str, Any]:
    out = tmp / f"{name}.json"
    assert main([*argv, "--format", "json", "-o", str(out)]) in (0, 1)
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def documents(real_sources, tmp_path_factory) -> dict[str, dict[str, Any]]:
    """A document of each kind, written by its own command on the shipped examples and the
    committed hang recording."""
    tmp = tmp_path_factory.mktemp("formats")
    scan = _json(tmp, "scan", ["scan", "--config", str(EXAMPLE), "--torch", "2.10.0"])
    main(["sites", str(ROOT / "tests" / "record_fixtures" / "toy_pipeline.py"), "--format", "json",
          "-o", str(tmp / "sites.json")])
    return {
        "scan": scan,
        "run": _json(tmp, "run", ["report", "--scan", str(tmp / "sites.json"), "--trace", str(HANG)]),
        "gate": _json(tmp, "gate", ["gate", "--config", str(EXAMPLE), "--baseline",
                                    str(tmp / "scan.json"), "--torch", "2.11.0"]),
        "simulate": _json(tmp, "simulate", ["simulate", "--config", str(EXAMPLE), "--torch", "2.10.0"]),
        "sites": json.loads((tmp / "sites.json").read_text()),
        "diff": _json(tmp, "diff", ["diff", str(tmp / "scan.json"), str(tmp / "gate.json")]),
    }


CLAIMS = [(r.name, kind) for r in formats.REPORTERS for kind in r.kinds]


@pytest.mark.heavy
@pytest.mark.parametrize(("name", "kind"), CLAIMS, ids=[f"{n}-{k}" for n, k in CLAIMS])
def test_every_reporter_renders_each_kind_it_claims(documents, name, kind):
    doc = documents[kind]
    reporter = formats.reporter(name)
    context = formats.Context(config=str(EXAMPLE))
    if reporter.wants_head and kind == "run":
        context = formats.Context(head=head_ops(read_trace_dir(HANG), doc))
    if name == "perfetto" and "run" not in doc:
        with pytest.raises(Exception, match="draws a run"):
            reporter.render(doc, kind, context)
        return
    out = reporter.render(doc, kind, context)
    if name == "json":
        assert json.loads(out) == json.loads(json.dumps(doc, default=str))
    elif name == "sarif":
        assert json.loads(out)["runs"][0]["tool"]["driver"]["name"] == "p2paudit"
    elif name == "perfetto":
        assert json.loads(out)["traceEvents"]
    elif name == "html":
        assert out.lstrip().lower().startswith("<!doctype html") and doc["verdict"]["headline"] in out
    elif kind == "sites":
        assert all(s["path"] in out for s in doc["sites"])
    elif kind == "diff":
        assert out.startswith(f"p2paudit diff: {doc['before']}")
    else:
        assert doc["verdict"]["headline"] in out


def _format_action(command: str) -> argparse.Action:
    parser = build_parser(only=command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return next(a for a in sub.choices[command]._actions if a.dest == "format")


@pytest.mark.parametrize(("command", "kind"), COMMANDS.items())
def test_every_commands_format_choices_are_the_tables(command, kind):
    action = _format_action(command)
    assert tuple(action.choices) == formats.choices(kind)
    assert action.default == formats.DEFAULTS[kind] in formats.choices(kind)


def test_a_reporter_outside_the_table_is_no_choice():
    """VALID: a name the table lists; INVALID: a spelling it does not (argparse exits 2)."""
    with pytest.raises(SystemExit) as exc:
        build_parser("scan").parse_args(["scan", "--config", "x.sh", "--format", "HTML"])
    assert exc.value.code == 2
    assert build_parser("scan").parse_args(["scan", "--config", "x.sh", "--format", "html"]).format == "html"
