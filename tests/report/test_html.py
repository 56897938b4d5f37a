"""The HTML report: one self-contained file, loaded in a real headless Chromium (Debian
`chromium`): no console errors, the key elements present, the table's filter and sort working,
and a screenshot. Inputs: the real scan of the seed script joined with a trace of the
communicator-creation deadlock of docs/findings.md §1 placed at the wheel's real sites."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.analysis.test_join import SEED, group, site_of, write_trace

from auditor.analysis.join import join
from auditor.dynamic.trace import read_trace_dir
from auditor.report.html import fires_words, render_html
from auditor.scan import ScanInputs, run_scan

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--enable-logging=stderr", "--v=0"]


@pytest.fixture(scope="module")
def seed_scan(real_sources):
    return run_scan(ScanInputs(str(SEED), torch_version="2.10.0"))


def deadlock_trace(sites, root: Path) -> None:
    """Three ranks: rank 0 starts with a coalesced batch on the PP group (its communicator),
    ranks 1 and 2 with unbatched ops (2-rank communicators): creations that wait on each other."""
    pp = group([0, 1, 2], "pp", "1")
    call = {k: site_of(sites, "_batched_p2p_ops", "batch_isend_irecv", 0)[k]
            for k in ("path", "line", "end_line", "function")}
    op_site = {k: site_of(sites, "_batched_p2p_ops", "P2POp", 2)[k]
               for k in ("path", "line", "end_line", "function")}
    shapes = {k: site_of(sites, "P2PCommunicator._communicate_shapes", "batch_isend_irecv", 0)[k]
              for k in ("path", "line", "end_line", "function")}
    setup = {"api": "new_group", "kind": "setup", "desc": "pp", "ranks": [0, 1, 2],
             "site": {"path": "megatron/core/parallel_state.py", "line": 1, "end_line": 1,
                      "function": "initialize_model_parallel"}}
    batched = {"api": "isend", "kind": "p2p", "batched": True, "peer": 1, "group": pp,
               "shape": [4096, 1, 2048], "dtype": "float32", "via": "batch_isend_irecv",
               "batch": 1, "site": call, "op_site": op_site,
               "comm_init": {"kind": "group", "key": "all"}}
    unbatched = {"api": "irecv", "kind": "p2p", "batched": False, "group": pp,
                 "shape": [3], "dtype": "int64", "via": "batch_isend_irecv", "batch": 1,
                 "site": shapes}
    programs = {
        0: [setup, batched],
        1: [setup, dict(unbatched, peer=0, comm_init={"kind": "pair", "key": "0:1"})],
        2: [setup, dict(unbatched, peer=1, comm_init={"kind": "pair", "key": "1:2"})],
    }
    write_trace(root, programs, world=3, pending={0: 1, 1: 1, 2: 1})


@pytest.fixture(scope="module")
def report(seed_scan, tmp_path_factory) -> tuple[dict, str, Path]:
    root = tmp_path_factory.mktemp("report")
    deadlock_trace(seed_scan["sites"], root / "trace")
    joined = join(seed_scan, read_trace_dir(root / "trace"))
    text = render_html(joined)
    path = root / "report.html"
    path.write_text(text, encoding="utf-8")
    return joined, text, path


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_one_self_contained_file(report):
    joined, text, _ = report
    parser = _Tags()
    parser.feed(text)
    for tag, attrs in parser.tags:
        assert tag != "link", attrs
        for name in ("src", "href"):
            value = attrs.get(name) or ""
            assert not re.match(r"^(https?:)?//", value), (tag, attrs)
        assert not (tag == "script" and attrs.get("src")), attrs
    assert "@import" not in text and "url(http" not in text
    ids = {attrs.get("id") for _, attrs in parser.tags}
    assert {"verdict", "findings", "run-picture", "timeline", "config", "sites", "site-filter"} <= ids
    # The effective config with provenance, the fix of every finding, every site.
    assert "mcore-bridge: batch_p2p_comm = not overlap_p2p_comm" in text
    for f in joined["findings"]:
        if f["fix"]:
            assert _escaped(f["fix"]) in text
    assert text.count('<tr class="site"') == len(joined["sites"])


def _escaped(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace(
        '"', "&#34;").replace("'", "&#39;")


def test_verdict_and_picture_show_the_deadlock(report):
    joined, text, _ = report
    assert re.search(r'<p id="verdict" class="verdict bad">(DEADLOCK|HANG): ', text)
    svg = text[text.index('<svg xmlns="http://www.w3.org/2000/svg" id="timeline"'):text.index("</svg>")]
    assert svg.count('class="lane"') == 3
    assert svg.count('class="creates"') == 3  # each rank's first op creates a communicator
    assert svg.count('class="op waiting"') == 3  # and waits there
    assert 'class="wait"' in svg  # arrows of the wait-for cycle


def test_per_site_excerpt_path_and_fires(report):
    joined, text, _ = report
    site = site_of(joined["sites"], "_batched_p2p_ops", "P2POp", 2)
    assert site["fired"] == {"0": 1}
    assert "ranks 0" not in fires_words({0: 1}) and fires_words({0: 1}) == ["rank 0: 1"]
    row = text[text.index(f'<div class="mono muted">{_escaped(site["id"])}</div>'):]
    row = row[:row.index("</td></tr>")]
    assert '<span class="hit"><i>' + str(site["line"]) + "</i>" in row
    assert "torch.distributed.P2POp(" in row and "torch.distributed.isend" in row
    assert "schedules.forward_backward_pipelining_without_interleaving" in row
    assert "<b>fired:</b> rank 0: 1" in row


def test_fires_words_runs_of_ranks():
    fired = dict.fromkeys(range(32), 8) | dict.fromkeys(range(32, 96), 16) | {100: 8}
    assert fires_words(fired) == ["ranks 0-31: 8", "ranks 32-95: 16", "rank 100: 8"]


# --- a real browser ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def chromium() -> str:
    """Debian's chromium, which .ci/run installs; a test never installs it itself."""
    found = shutil.which("chromium")
    if found is None:
        pytest.skip("chromium is not on PATH (.ci/run installs it: apt-get install chromium)")
    return found


def browse(chromium: str, path: Path, tmp_path: Path, *extra: str, fragment: str = ""
           ) -> tuple[str, list[str]]:
    """(what --dump-dom printed or '', console lines) for the file loaded in a fresh profile."""
    proc = subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *extra,
         path.as_uri() + fragment],
        capture_output=True, text=True, timeout=120)
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, console


def test_chromium_loads_it_without_console_errors(chromium, report, tmp_path):
    joined, _, path = report
    dom, console = browse(chromium, path, tmp_path, "--dump-dom")
    assert console == []
    body = re.search(r"<body[^>]*>", dom).group(0)
    assert 'data-ready="1"' in body and "data-js-errors" not in body
    shown = re.search(r'<span id="sites-shown">(\d+)</span>', dom)
    assert shown and int(shown.group(1)) == len(joined["sites"])


class _Rows(HTMLParser):
    """The site table's rows as the browser left them: hidden or not, verdict, search, line."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and a.get("class") == "site":
            self.rows.append({"hidden": "hidden" in a, "verdict": a["data-verdict"],
                              "search": a["data-search"]})
        elif tag == "td" and "data-sort" in a and self.rows and "line" not in self.rows[-1]:
            self.rows[-1]["line"] = int(a["data-sort"])


def test_chromium_filter_and_sort_from_the_fragment(chromium, report, tmp_path):
    joined, _, path = report
    wanted = [s for s in joined["sites"]
              if s["verdict"] == "contradiction" and s["function"] == "_batched_p2p_ops"]
    assert len(wanted) == 5  # four P2POps and their batch_isend_irecv (docs/findings.md §2)
    dom, console = browse(chromium, path, tmp_path, "--dump-dom",
                          fragment="#q=_batched_p2p_ops&verdict=contradiction&sort=line&dir=desc")
    assert console == [] and "data-js-errors" not in re.search(r"<body[^>]*>", dom).group(0)
    assert re.search(r'<span id="sites-shown">(\d+)</span>', dom).group(1) == "5"
    rows = _Rows()
    rows.feed(dom)
    assert len(rows.rows) == len(joined["sites"])
    shown = [r for r in rows.rows if not r["hidden"]]
    assert all(r["verdict"] == "contradiction" and "_batched_p2p_ops" in r["search"] for r in shown)
    assert [r["line"] for r in shown] == sorted((s["line"] for s in wanted), reverse=True)
    lines = [r["line"] for r in rows.rows]
    assert lines == sorted(lines, reverse=True)  # the whole table, hidden rows too


def test_chromium_screenshot(chromium, report, tmp_path):
    _, _, path = report
    shot = tmp_path / "report.png"
    _, console = browse(chromium, path, tmp_path, "--window-size=1400,2200",
                        "--hide-scrollbars", f"--screenshot={shot}")
    assert console == []
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000
    keep = os.environ.get("P2PAUDIT_SCREENSHOTS")
    if keep:
        shutil.copy(shot, Path(keep) / "report-seed-deadlock.png")


def test_a_document_without_its_verdict_is_judged_once(report, monkeypatch):
    """A joined run carries no verdict: the report judges it once for the headline, the MUST
    lines, the fix and the colour (each helper judged it again: four times on 1,000 sites)."""
    import auditor.analysis.verdict as verdict
    from auditor.report import html, text

    joined, rendered, _ = report
    assert "verdict" not in joined
    calls = []

    def counted(doc):
        calls.append(doc)
        return verdict.judge(doc)

    monkeypatch.setattr(html, "judge", counted)
    monkeypatch.setattr(text, "judge", counted)
    assert render_html(joined) == rendered
    assert len(calls) == 1
