"""A zoo over two real devices (headless Chromium pages on the page `webnn-convert serve`
prints, alpha and beta) and three tiny models: each device works through its own queue at the
same time as the other, every cell of the model x device matrix is filled from what that
device did, beta's page closed in the middle of its second job costs beta's remaining jobs
only ("device lost", the last one never run), and the reports escape what whoever opened a
page chose (alpha's user agent is hostile). The order the test needs is set by the job hook
(zoo_hooks.py), never by timing."""
from __future__ import annotations

import importlib.util
import threading
import time
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from converter.devices import client
from converter.zoo import ZooOptions, build_report, run_zoo, write_reports

from .serving import Served
from .zoo_hooks import FIRST, FLAGS, HOOK, SECOND, started

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
THIRD = "matmul_softmax"
MODELS = [FIRST, SECOND, THIRD]
RUNTIMES = ["device:alpha", "device:beta"]
LOST, LOST_KIND = "device lost", "device-lost"  # a cell's verdict, its model's error kind
# Chosen by whoever opens the page: markup, a table's pipe, backticks, quotes.
PAYLOAD = '<img src=x onerror="alert(1)">'
HOSTILE_AGENT = (f"Mozilla/5.0 (X11; Linux x86_64) {PAYLOAD} | ``a|b`` & 'q' "
                 f"HeadlessChrome/153.0.0.0 Safari/537.36")


def _synthetic():
    spec = importlib.util.spec_from_file_location("make_synthetic",
                                                  ROOT / "models" / "make_synthetic.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _wait_for(path: Path, thread: threading.Thread) -> None:
    end = time.monotonic() + 600
    while not path.exists():
        assert thread.is_alive() and time.monotonic() < end, f"{path.name} never started"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def device_run(browser, tmp_path_factory):
    """The run (beta's page closed once beta's second job has started), its report, and the
    folders of the hook's flags and of the reports."""
    cache, work = tmp_path_factory.mktemp("cache"), tmp_path_factory.mktemp("zoo")
    flags = work / "flags"
    flags.mkdir()
    server = Served(cache, "--no-qr")
    pages = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WEBNN_CONVERTER_CACHE", str(cache))  # the jobs find `serve`'s record
        patch.setenv(FLAGS, str(flags))
        client.use_server(None)
        try:
            for name, agent in (("alpha", HOSTILE_AGENT), ("beta", None)):
                pages[name] = browser[0].new_page(**({"user_agent": agent} if agent else {}))
                pages[name].goto(f"{server.url}?name={name}")
                pages[name].locator("#status", has_text="ready").wait_for(timeout=120_000)
            manifest = _synthetic().write_manifest(work, MODELS)
            box: dict = {}

            def run() -> None:
                try:
                    box["run"] = run_zoo(manifest, ZooOptions(runtimes=RUNTIMES, hook=HOOK,
                                                              timeout=300),
                                         results_path=work / "results.jsonl")
                except BaseException as e:  # re-raised in the test's thread
                    box["error"] = e

            thread = threading.Thread(target=run)
            thread.start()
            _wait_for(started(flags, SECOND, "device:beta"), thread)
            pages.pop("beta").close()  # beta leaves in the middle of its second job
            thread.join(900)
            assert not thread.is_alive(), "the run hung after a device left"
            if "error" in box:
                raise box["error"]
            doc = build_report(box["run"])
            write_reports(doc, [work / "zoo.md", work / "zoo.html"])
            yield box["run"], doc, flags, work, manifest
        finally:
            for page in pages.values():
                page.close()
            server.stop()
            client.use_server(None)


def _cells(doc: dict) -> dict[tuple[str, str], dict]:
    return {(m["id"], c["runtime"]): c for m in doc["models"] for c in m["cells"]}


def test_both_device_columns_are_filled_from_what_each_device_did(device_run):
    _, doc, _, _, _ = device_run
    cells = _cells(doc)
    assert set(cells) == {(m, r) for m in MODELS for r in RUNTIMES}
    done = [cells[m, "device:alpha"] for m in MODELS] + [cells[FIRST, "device:beta"]]
    for cell in done:
        assert cell["verdict"] == "verified" and cell["built"] is True and cell["ran"] is True
        assert cell["buildMs"] > 0 and cell["runMs"] > 0 and cell["lost"] is None
        assert cell["device"]["browser"] == "HeadlessChrome 153"
        assert cell["device"]["deviceType"] == "cpu"
    assert cells[FIRST, "device:alpha"]["device"]["userAgent"] == HOSTILE_AGENT
    assert cells[FIRST, "device:beta"]["device"]["name"] == "beta"
    parity = doc["models"][0]["targets"][0]["parity"]
    assert list(parity) == RUNTIMES and all(parity[r]["passed"] for r in RUNTIMES)


def test_the_two_devices_ran_their_jobs_at_the_same_time(device_run):
    _, doc, flags, _, _ = device_run
    cells = _cells(doc)
    alpha, beta = cells[FIRST, "device:alpha"], cells[FIRST, "device:beta"]
    # Each job's span as the runner recorded it: they overlap, one did not wait for the other.
    assert max(alpha["startedAt"], beta["startedAt"]) < min(alpha["endedAt"], beta["endedAt"])
    for name in ("alpha", "beta"):
        assert started(flags, FIRST, f"device:{name}").exists()


def test_a_device_lost_mid_run_costs_its_own_remaining_jobs_only(device_run):
    run, doc, flags, _, _ = device_run
    cells = _cells(doc)
    during, after = cells[SECOND, "device:beta"], cells[THIRD, "device:beta"]
    assert during["verdict"] == after["verdict"] == LOST
    assert during["lost"] == "device 'beta' disconnected during this job"
    assert after["lost"] == "device 'beta' disconnected before this job ran"
    assert after["built"] is None and after["ran"] is False
    assert not started(flags, THIRD, "device:beta").exists()  # never run
    assert all(cells[m, "device:alpha"]["verdict"] == "verified" for m in MODELS)
    by_id = {m["id"]: m for m in doc["models"]}
    assert by_id[FIRST]["status"] == "verified"
    for model in (SECOND, THIRD):
        assert by_id[model]["status"] == "error"
        assert by_id[model]["error"]["kind"] == LOST_KIND
        assert by_id[model]["error"]["message"].startswith("device:beta: device 'beta' "
                                                           "disconnected")
    assert run.missed() == [SECOND, THIRD]


def test_the_reports_show_the_matrix_and_escape_the_devices_strings(device_run):
    _, _, _, work, _ = device_run
    page = (work / "zoo.html").read_text()
    assert '<table id="matrix">' in page
    assert page.count(">device lost</span>") == 2 and page.count(">verified</span>") >= 4
    assert PAYLOAD not in page and "<img" not in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page
    markdown = (work / "zoo.md").read_text()
    assert "## Model x device" in markdown and markdown.count("**device lost**") == 2
    assert PAYLOAD not in markdown
    rendered = MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)
    assert "<img" not in rendered
    # the user agent's pipes stay inside its cell: its row of the devices table has six
    row = next(r for r in rendered.split("<tr>") if "HeadlessChrome/153.0" in r)
    assert row.count("<td>") == 6 and "``a|b``" in row


def test_resume_reuses_each_devices_cells_under_that_device(device_run):
    """Beta is gone; a resumed run on alpha alone takes alpha's three cells from the store
    and runs nothing: each cell's key is that device's, not the run's list of runtimes."""
    _, _, flags, work, manifest = device_run
    before = sorted(p.name for p in flags.iterdir())
    again = run_zoo(manifest, ZooOptions(runtimes=["device:alpha"], hook=HOOK, timeout=300),
                    results_path=work / "results.jsonl", resume=True)
    assert again.resumed == MODELS
    assert sorted(p.name for p in flags.iterdir()) == before  # no job ran
    for model in again.results:
        [cell] = model["cells"]
        assert cell["resumed"] is True and cell["verdict"] == "verified"
        assert cell["device"]["userAgent"] == HOSTILE_AGENT
