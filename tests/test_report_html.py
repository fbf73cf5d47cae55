"""The HTML report: ``index.html`` shows the summary's sections and every chart, and loads cleanly in a browser.

The report is made by the CLI from the saved quick run (``fixtures/quick_run.json``, PNG only to stay fast) with
itself as the baseline (the report runs the gate, which writes ``verdict.json`` and ``gate.md`` beside the page) and
one history chart placed in the folder beforehand. The
browser test opens a copy of the page in headless Chromium with a checker script injected first in ``<head>``:
it records console errors and warnings and every ``error`` event (uncaught exceptions, resources that failed to
load), and after ``load`` writes into the DOM how many images there are and which have ``naturalWidth`` 0;
``--dump-dom`` prints that DOM. Chromium's stderr must also hold no console line: the page has no script of its
own, so any console message is the browser complaining. Without Chromium that test skips and says so.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import signal
import subprocess
import time
from contextlib import suppress
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image

from lfw.gate.verdict import load_verdict
from lfw.report import load_run
from lfw.report.__main__ import main
from lfw.report.findings import find
from lfw.report.page import HISTORY

FIXTURE = Path(__file__).parent / "fixtures" / "quick_run.json"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
BROWSER_TIMEOUT_S = 30.0
CHECKER = """<script>
(function () {
  var errors = [];
  window.addEventListener("error", function (e) {
    var t = e.target;
    errors.push(t && t !== window ? "failed to load " + (t.src || t.href || t.tagName) : "uncaught: " + e.message);
  }, true);
  ["error", "warn"].forEach(function (level) {
    var original = console[level];
    console[level] = function () {
      errors.push("console." + level + ": " + Array.prototype.join.call(arguments, " "));
      original.apply(console, arguments);
    };
  });
  window.addEventListener("load", function () {
    var images = Array.prototype.slice.call(document.images);
    var broken = images.filter(function (i) { return !i.complete || i.naturalWidth === 0; })
                       .map(function (i) { return i.getAttribute("src"); });
    document.documentElement.setAttribute("data-check",
        JSON.stringify({images: images.length, broken: broken, errors: errors}));
  });
})();
</script>"""


class Tags(HTMLParser):
    """The page's ``<img src>``, element ids, ``<script>`` count and visible text, for assertions."""

    def __init__(self) -> None:
        super().__init__()
        self.images: list[str] = []
        self.ids: set[str] = set()
        self.scripts = 0
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag in ("p", "li", "tr", "td", "th", "h1", "h2", "h3", "figcaption"):
            self.text.append(" ")  # block boundaries read as spaces; inline ones (code, strong) join
        if tag == "img":
            self.images.append(found.get("src") or "")
        if tag == "script":
            self.scripts += 1
        if found.get("id"):
            self.ids.add(found["id"] or "")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> Tags:
    tags = Tags()
    tags.feed(page)
    return tags


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report folder the CLI writes, with one history chart already in it; the gate's verdict is written by the
    gate the report runs."""
    folder = tmp_path_factory.mktemp("html") / "report"
    (folder / HISTORY).mkdir(parents=True)
    Image.new("RGB", (640, 240), "#1f77b4").save(folder / HISTORY / "images-per-s-by-commit.png")
    assert main([str(FIXTURE), str(FIXTURE), "--out", str(folder), "--format", "png"]) == 0
    return folder


@pytest.mark.slow  # the whole report of a whole run, the gate run beside it
def test_the_page_shows_every_chart_the_findings_the_gate_and_the_history(out: Path) -> None:
    page = (out / "index.html").read_text()
    tags = parse(page)
    charts = sorted(p.name for p in out.glob("*.png"))
    assert sorted(src for src in tags.images if "/" not in src) == charts
    assert f"{HISTORY}/images-per-s-by-commit.png" in tags.images
    assert {"findings", "gate-verdict", "against-the-baseline", "charts", "history", "all-cases", "machine"} <= tags.ids
    verdict = load_verdict(out / "verdict.json")
    assert tags.scripts == 0 and f"<strong>{html.escape(verdict.headline)}</strong>" in page
    assert verdict.exit_code == 0 and verdict.matches(FIXTURE, FIXTURE) and (out / "gate.md").is_file()
    text = " ".join("".join(tags.text).split())
    found = find(load_run(FIXTURE))
    for rec in found.knees:  # the recommendation and the evidence the console prints, word for word
        assert f"{rec.transform} {rec.verdict()}" in text and rec.evidence() in text
    anchors = re.findall(r'href="#([^"]*)"', page)
    assert "against-the-baseline" in anchors and set(anchors) <= tags.ids  # every in-page link has its target
    assert found.pipeline is not None and found.remote is not None and found.best is not None
    assert f"Fastest decode pipeline: {found.pipeline.sentence().replace('`', '')}" in text
    assert f"Remote storage: {found.remote.sentence().replace('`', '')}" in text
    assert f"Best configuration: {found.best.name}" in text


def test_without_history_charts_the_page_says_so(tmp_path: Path) -> None:
    doc = json.loads(FIXTURE.read_text())
    doc["benchmarks"] = [b for b in doc["benchmarks"] if b["group"] == "workers-transform"]
    doc["benchmarks"][0]["name"] = "test_workers_transform[<script>]"  # a case name is text, never markup
    run = tmp_path / "run.json"
    run.write_text(json.dumps(doc))
    assert main([str(run), "--out", str(tmp_path / "out"), "--format", "svg"]) == 0
    page = (tmp_path / "out" / "index.html").read_text()
    tags = parse(page)
    assert tags.scripts == 0 and "<code>&lt;script&gt;</code>" in page and "<script>" in "".join(tags.text)
    assert sorted(tags.images) == sorted(p.name for p in (tmp_path / "out").glob("*.svg"))
    assert "workers.svg" in tags.images and "gate-verdict" not in tags.ids
    assert "No history charts" in " ".join(tags.text)


def test_a_missing_verdict_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(FIXTURE), "--out", str(tmp_path / "out"), "--verdict", str(tmp_path / "nope.json")]) == 2
    assert capsys.readouterr().err == f"error: --verdict {tmp_path / 'nope.json'}: not found\n"
    assert not (tmp_path / "out").exists()


def exited(pid: int, deadline: float) -> bool:
    """Wait until ``pid`` exits, without reaping it (so its process group id stays ours); False at the deadline."""
    while time.monotonic() < deadline:
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return True
        time.sleep(0.05)
    return False


def dump_dom(url: str, work: Path) -> tuple[str, str]:
    """Chromium's DOM of ``url`` after load, and its stderr. The browser runs in a session of its own, its profile,
    caches and crash database under ``work``; its whole process group is killed before the leader is reaped, on a
    timeout and after a normal exit alike (its crash handlers, in sessions of their own, exit with it)."""
    assert CHROMIUM is not None
    stdout, stderr = work / "dom.html", work / "stderr.txt"
    command = [CHROMIUM, "--headless=new", "--disable-gpu", "--no-sandbox", "--no-first-run",
               "--no-default-browser-check", "--disable-extensions", f"--user-data-dir={work / 'profile'}",
               "--enable-logging=stderr", "--v=0", "--dump-dom", url]
    home = {k: str(work / "home") for k in ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}  # crash db, caches
    with stdout.open("w") as out, stderr.open("w") as err:
        proc = subprocess.Popen(command, stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True,
                                env={**os.environ, **home})
    try:
        finished = exited(proc.pid, time.monotonic() + BROWSER_TIMEOUT_S)
    finally:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    log = stderr.read_text(errors="replace")
    if not finished:
        pytest.fail(f"chromium did not finish in {BROWSER_TIMEOUT_S:g} s; stderr tail:\n{log[-2000:]}")
    return stdout.read_text(errors="replace"), log


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium or google-chrome on PATH (Debian: apt-get install chromium)")
def test_every_image_loads_and_the_console_stays_clean_in_chromium(out: Path, tmp_path: Path) -> None:
    page = (out / "index.html").read_text()
    checked = out / "index.checked.html"  # beside the page, so relative image paths resolve the same way
    checked.write_text(page.replace("<head>", "<head>\n" + CHECKER, 1))
    dom, log = dump_dom(checked.as_uri(), tmp_path)
    marker = re.search(r'data-check="([^"]*)"', dom)
    assert marker is not None, f"the page never finished loading; chromium's stderr:\n{log[-2000:]}"
    check = json.loads(html.unescape(marker.group(1)))
    assert check["images"] == len(parse(page).images) > 10
    assert check["broken"] == [] and check["errors"] == []
    console = [line for line in log.splitlines() if re.search(r":CONSOLE[:(]", line)]
    assert console == [], "\n".join(console)
