"""The output formats, listed once (coverage.py's Reporter idea): every command's `--format`
choices and default come from this table, and every format renders a finished document.

A document is one of four kinds, named by the command that writes it: a `scan` (joined with a run
when given --trace), a `run` (`report`: a scan or sites document joined with a recorded run), a
`gate` (a scan with the gate's verdict) or a `simulate` result; and two that are not reports: a
`sites` inventory and a `diff` of two documents. A reporter says which kinds it renders; a command
says which kind it writes and picks the reporter the user named. (`doctor` and `repro` write
their own small records, not documents, and list their formats themselves.)
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from auditor import jsonio
from auditor.analysis.diff import diff_text
from auditor.analysis.headops import HeadOps, head_ops
from auditor.dynamic.trace import Trace
from auditor.report import text
from auditor.report.html import render_html
from auditor.report.perfetto import trace_events
from auditor.report.sarif import to_sarif

KINDS = ("scan", "run", "gate", "simulate", "sites", "diff")
REPORTS = KINDS[:4]  # the documents with sites, verdicts and findings


@dataclass(frozen=True)
class Context:
    """What a command knows besides the document that some formats show."""
    verbose: bool = False  # scan text: one block per site
    config: str = ""  # the launch script as the user named it (simulate text)
    head: HeadOps | None = None  # the trace's ops with their states (perfetto); else the timeline
    # Text lines wrap at the terminal's width ($COLUMNS, else the terminal, else 80).
    width: int = field(default_factory=lambda: max(40, shutil.get_terminal_size((80, 24)).columns))


Render = Callable[[dict[str, Any], Context], str]


@dataclass(frozen=True)
class Reporter:
    name: str
    renders: Mapping[str, Render]  # document kind -> how this format writes it
    for_terminal: bool = True  # False: on a terminal the output goes to a file (HTML)
    wants_head: bool = False  # draws the trace's ops: the command reads them (analysis.headops)
    kinds: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kinds", tuple(k for k in KINDS if k in self.renders))

    def render(self, doc: dict[str, Any], kind: str, context: Context = Context()) -> str:
        return self.renders[kind](doc, context)


def _json(doc: dict[str, Any], _: Context) -> str:
    return jsonio.dumps(doc, indent=2, default=str) + "\n"


def _sarif(doc: dict[str, Any], _: Context) -> str:
    return jsonio.dumps(to_sarif(doc), indent=2) + "\n"


def _html(doc: dict[str, Any], _: Context) -> str:
    return render_html(doc)


def _perfetto(doc: dict[str, Any], context: Context) -> str:
    return jsonio.dumps(trace_events(doc, context.head), default=str) + "\n"


def _fitted(write: Render) -> Render:
    """A text renderer whose lines wrap at the context's width."""
    return lambda doc, context: text.fit(write(doc, context), context.width)


REPORTERS: tuple[Reporter, ...] = (
    Reporter("text", {"scan": _fitted(lambda d, c: text.scan_report(d, c.verbose, c.width)),
                      "gate": _fitted(lambda d, _: text.gate_report(d)),
                      "simulate": _fitted(lambda d, c: text.simulation_report(d, c.config)),
                      "sites": _fitted(lambda d, _: text.sites_table(d)),
                      "diff": _fitted(lambda d, _: diff_text(d))}),
    Reporter("html", dict.fromkeys(REPORTS, _html), for_terminal=False),
    Reporter("json", dict.fromkeys(KINDS, _json)),
    Reporter("sarif", dict.fromkeys(("scan", "run", "gate"), _sarif)),
    Reporter("perfetto", dict.fromkeys(("scan", "run"), _perfetto), wants_head=True),
)
BY_NAME = {r.name: r for r in REPORTERS}
DEFAULTS = {"scan": "text", "run": "html", "gate": "text", "simulate": "text", "sites": "text",
            "diff": "text"}  # kind -> format


def choices(kind: str) -> tuple[str, ...]:
    """The formats that render a `kind` document, in the table's order."""
    return tuple(r.name for r in REPORTERS if kind in r.renders)


def reporter(name: str) -> Reporter:
    return BY_NAME[name]


def context(fmt: str, doc: dict[str, Any], trace: Trace | None, **given: Any) -> Context:
    """What the `fmt` reporter shows besides the document: the trace's ops with their wait-for
    states when it draws them (read here, so that the format runs no analysis)."""
    head = head_ops(trace, doc) if trace is not None and reporter(fmt).wants_head else None
    return Context(head=head, **given)
