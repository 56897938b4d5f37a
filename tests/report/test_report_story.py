"""The hang report as a person opens it, on a real recorded run: megatron-core 0.17.0's own 1F1B
schedule on 4 gloo CPU ranks (PP=4, ms-swift's `_batched_p2p_ops` patch, 24 MiB activations;
tests/record_fixtures/megatron_pp4, recorded by `p2paudit simulate --config
examples/glm5_1_lora_pp4.sh --torch 2.10.0 --microbatches 4 --trace-dir DIR`, DIR/trace) joined
with the shipped GLM-5.1 scan and replayed under the network transport, where stages 2 and 3 both ISEND first on
their pair communicator. The first screen must show that cycle, not the set-up calls."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.report.test_html import chromium, seed_scan  # noqa: F401 (fixtures)

from auditor.analysis.join import join
from auditor.dynamic.trace import read_trace_dir
from auditor.report.html import render_html
from auditor.report.timeline import OP_W, cycle_edges, timeline_layout

FIXTURE = Path(__file__).parents[1] / "record_fixtures" / "megatron_pp4"
VIEW_W, VIEW_H = 1400, 900


@pytest.fixture(scope="module")
def hang(seed_scan, tmp_path_factory):  # noqa: F811
    joined = join(seed_scan, read_trace_dir(FIXTURE), transport="net")
    text = render_html(joined)
    path = tmp_path_factory.mktemp("story") / "report.html"
    path.write_text(text, encoding="utf-8")
    svg = text[text.index('<svg xmlns="http://www.w3.org/2000/svg" id="timeline"'):text.index("</svg>")]
    return joined, text, svg, path


def test_the_trace_is_the_real_schedule_and_the_replay_finds_the_stage_2_3_cycle(hang):
    joined, *_ = hang
    fired = {s["function"] for s in joined["sites"] if s.get("fired")}
    assert {"_batched_p2p_ops", "P2PCommunicator._communicate_shapes"} <= fired
    cycle = cycle_edges(joined["run"]["timeline"]["ranks"])
    assert {(e["rank"], e["to_rank"]) for e in cycle if e["rank"] != e["to_rank"]} == {(2, 3), (3, 2)}
    assert all(e["ev"]["communicator"] == "default_pg:2-3" for e in cycle)


def test_set_up_calls_fold_into_at_most_two_items_per_rank(hang):
    joined, _, svg, _ = hang
    lanes = joined["run"]["timeline"]["ranks"]
    assert all(sum(ev["kind"] == "setup" for ev in lane["events"]) > 50 for lane in lanes)
    for lane in lanes:
        assert 1 <= svg.count(f'<g class="setup" data-rank="{lane["rank"]}"') <= 2
    labels = re.findall(r'<g class="op[^"]*"[^>]*><title>[^<]*</title>\s*<rect[^>]*/>\s*<text[^>]*>([^<]*)', svg)
    assert labels and not [t for t in labels if "new_group" in t or "init_process_group" in t]


def test_cycle_ops_are_in_the_first_window(hang):
    joined, *_ = hang
    layout = timeline_layout(joined["run"])
    at = {(b["rank"], b["index"]): b for b in layout["boxes"]}
    cycle = cycle_edges(joined["run"]["timeline"]["ranks"])
    for e in cycle:
        box = at[(e["rank"], e["index"])]
        assert box["waiting"] and box["x"] + OP_W < VIEW_W - 100, box


def test_cycle_arrows_name_both_ranks_the_bytes_the_communicator_and_the_site(hang):
    _, text, svg, _ = hang
    arrows = re.findall(r'<g class="wait cycle" data-from="(\d+)" data-to="(\d+)"><title>([^<]*)</title>'
                        r'.*?(?:<text[^>]*>([^<]*)</text>)?\s*</g>', svg, re.S)
    crossing = {(int(a), int(b)): (title, label) for a, b, title, label in arrows if a != b}
    assert set(crossing) == {(2, 3), (3, 2)}
    for (a, b), (title, label) in crossing.items():
        assert title.startswith(f"rank {a} \u2192 rank {b}: ISEND 24 MiB on default_pg:2-3")
        assert "p2p_communication.py:49 _batched_p2p_ops" in title
        assert f"rank {b}&#39;s IRECV 24 MiB" in title
        assert label == f"{a}\u2192{b}"
    assert '<ol id="cycle"' in text and text.count("<li>rank ") >= 2


def test_what_is_not_drawn_is_counted(hang):
    """Every op of a lane is drawn or counted in a gap; the per-site table covers the run."""
    joined, text, _, _ = hang
    layout = timeline_layout(joined["run"])
    for lane in joined["run"]["timeline"]["ranks"]:
        ops = sum(ev["kind"] != "setup" for ev in lane["events"])
        drawn = sum(b["rank"] == lane["rank"] for b in layout["boxes"])
        y = next(ln["y"] for ln in layout["lanes"] if ln["rank"] == lane["rank"])
        gaps = [g for g in layout["gaps"] if abs(g["y"] - y) < 20]
        hidden = sum(int(m) for g in gaps for m in re.findall(r"\u22ef (\d+)", g["label"]))
        assert drawn + hidden == ops, lane["rank"]
    table = text[text.index('<details id="site-counts">'):]
    table = table[:table.index("</details>")]
    for s in joined["sites"]:
        if s["fired"]:
            counts = "".join(f"<td>{s['fired'].get(str(r), 0)}</td>" for r in range(4))
            assert f"{s['path']}:{s['line']}" in table and counts in table


# --- the first screen in a real browser ----------------------------------------------------------
class DevTools:
    """Chromium driven over --remote-debugging-pipe (fd 3 in, fd 4 out, NUL-separated JSON)."""

    def __init__(self, binary: str, profile: Path) -> None:
        to_chrome_r, self._w = os.pipe()
        self._r, from_chrome_w = os.pipe()

        def fds() -> None:
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--no-first-run", "--remote-debugging-pipe", f"--user-data-dir={profile}",
             f"--window-size={VIEW_W},{VIEW_H}", "about:blank"],
            preexec_fn=fds, close_fds=False, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict] = []
        page = next(t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"],
                                 flatten=True)["sessionId"]

    def _read(self) -> dict:
        while b"\0" not in self._buf:
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise RuntimeError(self.proc.stderr.read().decode()[-2000:])
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, session: bool = False, **params) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._id:
                assert "error" not in reply, reply
                return reply["result"]
            self.events.append(reply)

    def page(self, method: str, **params) -> dict:
        return self.call(method, session=True, **params)

    def evaluate(self, expression: str):
        return self.page("Runtime.evaluate", expression=expression, returnByValue=True,
                         awaitPromise=True)["result"].get("value")

    def close(self) -> None:
        os.close(self._w)
        self.proc.kill()
        self.proc.wait()
        os.close(self._r)


RECTS = """(() => {
  const r = e => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  return {
    ready: document.body.getAttribute("data-ready"),
    errors: document.body.getAttribute("data-js-errors"),
    arrows: [...document.querySelectorAll("#timeline g.wait.cycle")].map(g =>
      ({from: g.dataset.from, to: g.dataset.to, rect: r(g)})),
    ops: [...document.querySelectorAll("#timeline g.op.waiting")].map(g =>
      ({rank: g.dataset.rank, index: g.dataset.index, rect: r(g)})),
    width: innerWidth, height: innerHeight,
  };
})()"""


def test_chromium_first_screen_shows_the_cycle(chromium, hang, tmp_path):  # noqa: F811
    joined, _, _, path = hang
    tools = DevTools(chromium, tmp_path / "profile")
    try:
        tools.page("Emulation.setDeviceMetricsOverride", width=VIEW_W, height=VIEW_H,
                   deviceScaleFactor=1, mobile=False)
        tools.page("Page.enable")
        tools.page("Page.navigate", url=path.as_uri())
        while not any(e.get("method") == "Page.loadEventFired" for e in tools.events):
            tools.events.append(tools._read())
        seen = tools.evaluate(RECTS)
        shot = base64.b64decode(tools.page("Page.captureScreenshot", format="png")["data"])
        opened = tools.evaluate('document.querySelector("#timeline g.setup").dispatchEvent('
                                'new MouseEvent("click", {bubbles: true})), '
                                'document.getElementById("setup-calls").open')
    finally:
        tools.close()
    assert seen["ready"] == "1" and seen["errors"] is None
    assert (seen["width"], seen["height"]) == (VIEW_W, VIEW_H)
    cycle = {(e["rank"], e["index"]) for e in cycle_edges(joined["run"]["timeline"]["ranks"])}
    shown = [o for o in seen["ops"] if (int(o["rank"]), int(o["index"])) in cycle]
    assert len(shown) == len(cycle) == 4
    crossing = [a for a in seen["arrows"] if a["from"] != a["to"]]
    assert {(a["from"], a["to"]) for a in crossing} == {("2", "3"), ("3", "2")}
    for item in shown + crossing:
        left, top, right, bottom = item["rect"]
        assert 0 <= left and right <= VIEW_W and 0 <= top and bottom <= VIEW_H, item
    assert opened is True  # the folded set-up item expands into the list of calls
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 50_000
    keep = os.environ.get("P2PAUDIT_SCREENSHOTS")
    if keep:
        (Path(keep) / "report-megatron-pp4-hang.png").write_bytes(shot)
    shutil.rmtree(tmp_path / "profile", ignore_errors=True)


def test_a_recorded_hang_draws_every_pending_op_and_what_it_waits_for(seed_scan):  # noqa: F811
    """tests/record_fixtures/hang: ranks 1-3 of a real gloo run blocked in recv while rank 0
    slept; each waits for a send its predecessor never issued."""
    joined = join(seed_scan, read_trace_dir(FIXTURE.parent / "hang"))
    layout = timeline_layout(joined["run"])
    pending = {(lane["rank"], ev["index"]) for lane in joined["run"]["timeline"]["ranks"]
               for ev in lane["events"] if ev["recorded"] == "pending"}
    assert {r for r, _ in pending} == {1, 2, 3}
    drawn = {(b["rank"], b["index"]) for b in layout["boxes"] if b["pending"]}
    assert drawn == pending
    assert sorted((a["from_rank"], a["to_rank"]) for a in layout["arrows"]) == [(1, 0), (2, 1), (3, 2)]
    assert len(layout["ghosts"]) == 3


def test_a_lane_cut_into_windows_counts_the_ops_between_them(hang):
    """A join that keeps only windows of a long run (first ops, the ops around the cycle) leaves
    index jumps in a lane: the picture counts the missing ops in a gap, the windows stay whole."""
    joined, *_ = hang
    run = json.loads(json.dumps(joined["run"]))
    lane = next(ln for ln in run["timeline"]["ranks"] if ln["rank"] == 3)
    kept = [ev for ev in lane["events"] if ev.get("index") not in (1, 2)]
    lane["events"] = kept
    layout = timeline_layout(run)
    y = next(ln["y"] for ln in layout["lanes"] if ln["rank"] == 3)
    gaps = [g for g in layout["gaps"] if abs(g["y"] - y) < 20]
    assert any(g["label"] == "\u22ef 2" for g in gaps)
    drawn = {b["index"] for b in layout["boxes"] if b["rank"] == 3}
    assert {0, 3, 4, 5} <= drawn and not drawn & {1, 2}
