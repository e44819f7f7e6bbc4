"""`harnesskit export`: the HTML page (driven in a real headless Chromium) and Markdown."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import ALL_FIXTURES, V3_DIR, assert_one_line_error, read_objects, write_lines

ROOT = Path(__file__).resolve().parents[2]
S10 = V3_DIR / "s10_branch_in_file.jsonl"  # two branches, a tool call and its result
S12 = V3_DIR / "s12_meta_entries.jsonl"  # labels, a session name, custom entries
S13 = V3_DIR / "s13_compaction.jsonl"
SHOTS = ROOT / "benchmarks" / "out"  # screenshots for people to look at (not committed)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
try:
    import selenium  # noqa: F401

    HAVE_SELENIUM = True
except ImportError:
    HAVE_SELENIUM = False
needs_browser = pytest.mark.skipif(
    not (CHROMIUM and DRIVER and HAVE_SELENIUM),
    reason="headless Chromium is absent (Debian: apt-get install chromium chromium-driver; .ci/run does it)")


def export(run, source: Path, out: Path, *args: str) -> Path:
    result = run("export", source, "--html", "-o", out, *args)
    assert result.exit_code == 0, result.output
    return out


# ------------------------------------------------------------------ without a browser


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: p.name)
def test_every_fixture_exports_with_every_entry_embedded(run, tmp_path: Path, path: Path) -> None:
    page = export(run, path, tmp_path / "page.html").read_text(encoding="utf-8")
    data = page.split('<script type="application/json" id="hk-entries">', 1)[1].split("</script>", 1)[0]
    embedded = json.loads(data)
    assert len(embedded) == len(read_objects(path)) - 1
    assert "http://" not in page.split("<script>")[0].replace('content="default-src', "")  # nothing fetched
    assert "default-src 'none'" in page


def test_html_goes_to_stdout_and_markdown_too(run) -> None:
    html = run("export", S10, "--html")
    assert html.exit_code == 0 and html.stdout.startswith("<!doctype html>")
    md = run("export", S10, "--md")
    assert md.exit_code == 0 and md.stdout.startswith("# ")


def test_a_hostile_message_cannot_close_the_data_element(run, tmp_path: Path) -> None:
    objects = read_objects(S10)
    objects[3]["message"]["content"][0]["text"] = "</script><script>alert(1)</script><!--"
    page = export(run, write_lines(tmp_path / "h.jsonl", objects), tmp_path / "h.html").read_text(encoding="utf-8")
    assert page.count("</script>") == 3  # header data, entries data, the page's own script
    assert "alert(1)" in page  # still there, as data


def test_usage_errors(run, tmp_path: Path) -> None:
    assert_one_line_error(run("export", S10))
    assert_one_line_error(run("export", S10, "--html", "--md"))
    assert_one_line_error(run("export", S10, "--html", "--leaf", "abcd"))
    assert_one_line_error(run("export", tmp_path / "missing.jsonl", "--html"))
    copy = tmp_path / "s.jsonl"
    shutil.copy(S10, copy)
    before = copy.read_bytes()
    assert_one_line_error(run("export", copy, "--md", "-o", copy))
    assert copy.read_bytes() == before
    assert_one_line_error(run("export", copy, "--md", "--leaf", "nosuchlabel"))


def test_markdown_is_the_branch_with_fenced_tool_calls(run) -> None:
    objects = read_objects(S10)
    md = run("export", S10, "--md").stdout
    last_user = [o for o in objects[1:] if o.get("message", {}).get("role") == "user"][-1]
    assert last_user["message"]["content"][0]["text"] in md
    assert "third turn on an explicit file" not in md  # that is the other branch
    tool_leaf = next(o["id"] for o in objects[1:] if o.get("message", {}).get("role") == "toolResult")
    other = run("export", S10, "--md", "--leaf", tool_leaf).stdout
    assert "**tool call** `bash`" in other and "```json" in other
    assert "### Tool result: `bash`" in other and "96" in other


def test_markdown_to_a_file_is_what_stdout_gets(run, tmp_path: Path) -> None:
    out = tmp_path / "branch.md"
    result = run("export", S10, "--md", "-o", out)
    assert result.exit_code == 0, result.output
    assert out.read_text(encoding="utf-8") == run("export", S10, "--md").stdout
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp file left


def test_markdown_escapes_html_and_outfences_backticks(run, tmp_path: Path) -> None:
    objects = read_objects(S10)
    objects[-1]["message"]["content"] = [{"type": "text", "text": "<script>alert(1)</script>"},
                                         {"type": "toolCall", "id": "c", "name": "x",
                                          "arguments": {"code": "```\nrm -rf /\n```"}}]
    md = run("export", write_lines(tmp_path / "m.jsonl", objects), "--md").stdout
    assert "<script>" not in md and "&lt;script&gt;" in md
    assert "````json" in md  # a fence longer than the backticks inside


def test_export_memory_does_not_grow_with_the_session(tmp_path: Path) -> None:
    """A 10 MB and a 40 MB session export with the same peak memory (within 1.3x): entries stream."""
    objects = read_objects(S10)
    filler = "x" * 2000

    def make(path: Path, size: int) -> Path:
        lines = [json.dumps(objects[0])]
        parent = None
        n = 0
        total = 0
        while total < size:
            entry = {"type": "message", "id": f"{n:08x}", "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z",
                     "message": {"role": "user", "content": [{"type": "text", "text": filler}], "timestamp": n}}
            line = json.dumps(entry)
            lines.append(line)
            total += len(line)
            parent = entry["id"]
            n += 1
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    def peak(path: Path) -> int:
        # VmHWM of the process's own memory (ru_maxrss would carry over this big test process's, across exec)
        code = ("import sys; from harnesskit.cli import main; sys.argv = ['harnesskit', 'export', "
                f"{str(path)!r}, '--html', '-o', {str(path) + '.html'!r}]\n"
                "try:\n    main()\nexcept SystemExit:\n    pass\n"
                "print(next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM')))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
        return int(out.stdout.split()[-1])

    small, big = peak(make(tmp_path / "small.jsonl", 10 << 20)), peak(make(tmp_path / "big.jsonl", 40 << 20))
    assert big < small * 1.3, (small, big)
    assert (tmp_path / "big.jsonl.html").stat().st_size > 30 << 20  # it was all written


# ------------------------------------------------------------------ in a real browser


class _Quiet(http.server.SimpleHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        _Quiet.hits.append(self.path)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def listener():
    """A server on 127.0.0.1 that records any request a page makes to it."""
    _Quiet.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()


@pytest.fixture
def browser(tmp_path_factory: pytest.TempPathFactory):
    """Headless Chromium whose profile and scratch files stay in this test run's temporary directory."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,900",
                "--disable-dev-shm-usage"):
        options.add_argument(arg)
    scratch = tmp_path_factory.mktemp("chromium")
    options.add_argument(f"--user-data-dir={scratch / 'profile'}")
    options.binary_location = CHROMIUM
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(DRIVER, env={**os.environ, "TMPDIR": str(scratch)})
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def open_page(driver, page: Path) -> None:  # noqa: ANN001
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(page.as_uri())
    WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.body.dataset.ready") == "1")


def nodes(driver) -> list[str]:  # noqa: ANN001
    return driver.execute_script("return [...document.querySelectorAll('#tree .node')].map(n => n.textContent)")


def cards(driver) -> list[str]:  # noqa: ANN001
    return driver.execute_script("return [...document.querySelectorAll('#messages .card')].map(n => n.textContent)")


def click_filter(driver, name: str) -> None:  # noqa: ANN001
    driver.find_element("css selector", f"#filters button[data-filter='{name}']").click()


@needs_browser
def test_the_page_shows_the_tree_filters_searches_and_opens_branches(run, tmp_path: Path, browser) -> None:
    objects = read_objects(S10)
    page = export(run, S10, tmp_path / "s10.html")
    open_page(browser, page)
    click_filter(browser, "all")
    assert len(nodes(browser)) == len(objects) - 1  # every entry
    click_filter(browser, "default")
    assert any(n.startswith("toolResult") for n in nodes(browser))
    click_filter(browser, "no-tools")
    assert not any(n.startswith("toolResult") for n in nodes(browser))
    click_filter(browser, "user")
    users = [o for o in objects[1:] if o.get("message", {}).get("role") == "user"]
    assert len(nodes(browser)) == len(users)
    click_filter(browser, "all")
    search = browser.find_element("css selector", "#search")
    search.send_keys("explicit")
    found = nodes(browser)
    assert found and all("explicit" in n for n in found)
    # the current branch is shown; clicking an entry of the other branch opens that one
    assert any("question on a new branch" in c for c in cards(browser))
    browser.find_element("css selector", "#tree .node").click()  # "third turn on an explicit file"
    shown = cards(browser)
    assert any("third turn on an explicit file" in c for c in shown)
    assert not any("question on a new branch" in c for c in shown)
    SHOTS.mkdir(parents=True, exist_ok=True)
    search.clear()
    browser.execute_script("document.getElementById('search').dispatchEvent(new Event('input'))")
    for target in (tmp_path / "export-page.png", SHOTS / "export-page.png"):
        browser.save_screenshot(str(target))
    assert (tmp_path / "export-page.png").stat().st_size > 10_000
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []


@needs_browser
def test_labels_name_summaries_and_compaction_are_shown(run, tmp_path: Path, browser) -> None:
    for source in (S12, S13):
        objects = read_objects(source)
        open_page(browser, export(run, source, tmp_path / f"{source.stem}.html"))
        names = [o["name"] for o in objects if o.get("type") == "session_info"]
        if names:
            assert browser.find_element("css selector", "#title").text == names[-1].strip()
        click_filter(browser, "labeled")
        labelled = {o["targetId"] for o in objects if o.get("type") == "label" and o.get("label")}
        assert len(nodes(browser)) == len(labelled)
        if any(o.get("type") == "compaction" for o in objects):
            click_filter(browser, "all")
            assert any(c.startswith("compaction") and "tokens before" in c for c in cards(browser))


@needs_browser
def test_a_hostile_session_runs_no_script_and_fetches_nothing(run, tmp_path: Path, browser, listener) -> None:
    port = listener.server_address[1]
    hostile = [
        "</script><script>alert('closed')</script>",
        f"<img src=x onerror=alert('img')><img src='http://127.0.0.1:{port}/img'>",
        "</textarea><svg onload=alert('svg')>",
        "[click](javascript:alert('link')) <a href=\"javascript:alert('a')\">a</a>",
        f"<link rel=stylesheet href='http://127.0.0.1:{port}/css'><iframe src='http://127.0.0.1:{port}/f'>",
    ]
    objects = read_objects(S10)
    text_entries = [o for o in objects[1:] if o.get("type") == "message"
                    and isinstance(o["message"].get("content"), list) and o["message"]["content"]
                    and o["message"]["content"][0].get("type") == "text"]
    for entry, text in zip(text_entries, hostile, strict=False):
        entry["message"]["content"][0]["text"] = text
    objects[0]["cwd"] = f"<script>alert('cwd')</script><img src='http://127.0.0.1:{port}/cwd'>"
    source = write_lines(tmp_path / "hostile.jsonl", objects)
    open_page(browser, export(run, source, tmp_path / "hostile.html"))
    click_filter(browser, "all")
    for node in browser.find_elements("css selector", "#tree .node")[:12]:
        node.click()
    from selenium.common.exceptions import NoAlertPresentException

    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018 - raises when no dialog opened
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    assert _Quiet.hits == []
    shown = " ".join(cards(browser)) + browser.find_element("css selector", "#meta").text
    assert "<script>alert('cwd')</script>" in shown  # shown as text
    injected = "return document.querySelectorAll('#messages img, #messages svg, iframe').length"
    assert browser.execute_script(injected) == 0


@needs_browser
def test_a_large_session_opens_and_scrolls(run, tmp_path: Path, browser) -> None:
    objects = read_objects(S10)
    lines = [objects[0]]
    parent = None
    for n in range(20_000):
        entry = {"type": "message", "id": f"{n:08x}", "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z",
                 "message": {"role": "user" if n % 2 == 0 else "assistant",
                             "content": [{"type": "text", "text": f"turn {n} " + "y" * 400}], "timestamp": n}}
        lines.append(entry)
        parent = entry["id"]
    source = write_lines(tmp_path / "large.jsonl", lines)
    open_page(browser, export(run, source, tmp_path / "large.html"))
    first = len(nodes(browser))
    assert 0 < first < 1_000  # only the rows in view exist
    assert not any(n.startswith("userturn 19998 ") for n in nodes(browser))  # the kind, then the text
    browser.execute_script("document.getElementById('tree').scrollTop = 1e9")
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 30).until(lambda d: any(n.startswith("userturn 19998 ") for n in nodes(d)))
    assert len(nodes(browser)) < 1_000
    assert os.path.getsize(tmp_path / "large.html") > 8_000_000


def _generator():  # noqa: ANN202 - benchmarks/generate.py, a script, imported by path
    import importlib.util

    spec = importlib.util.spec_from_file_location("hk_generate_export", ROOT / "benchmarks" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@needs_browser
def test_a_100_mb_session_exports_opens_scrolls_and_searches(run, tmp_path: Path, browser) -> None:
    """Issue 12: a realistic 100 MB session (benchmarks/generate.py, 100,000 entries) exports, and in
    headless Chromium its page opens, shows every entry, scrolls to the end and finds a word of the
    last entry. The waits are generous (minutes): nothing here depends on the machine's speed."""
    from selenium.webdriver.support.ui import WebDriverWait

    source = _generator().generate(tmp_path / "big.jsonl", 100_000, seed=3)
    with source.open("rb+") as fp:
        fp.seek(-8192, os.SEEK_END)
        last = json.loads(fp.read().splitlines()[-1])
        word = "quokka" + last["id"]  # in no other entry
        # a root of its own: the tree lists roots in file order, so this is its last row
        text = [{"type": "text", "text": f"the {word} at the end"}]
        fp.write(json.dumps({"type": "message", "id": "ffffffff", "parentId": None, "timestamp": last["timestamp"],
                             "message": {"role": "user", "content": text, "timestamp": 1}}).encode() + b"\n")
    assert source.stat().st_size > 95_000_000
    page = export(run, source, tmp_path / "big.html")
    browser.set_page_load_timeout(300)
    browser.get(page.as_uri())
    WebDriverWait(browser, 300).until(lambda d: d.execute_script("return document.body.dataset.ready") == "1")
    assert f"{100_001} entries" in browser.find_element("css selector", "#meta").text
    click_filter(browser, "all")
    assert browser.find_element("css selector", "#count").text == "100001 of 100001 entries"
    assert not any(word in n for n in nodes(browser))
    browser.execute_script("document.getElementById('tree').scrollTop = 1e9")
    WebDriverWait(browser, 120).until(lambda d: f"userthe {word} at the end" in nodes(d))
    search = browser.find_element("css selector", "#search")
    search.send_keys(word)
    WebDriverWait(browser, 120).until(lambda d: d.find_element("css selector", "#count").text.startswith("1 of "))
    assert nodes(browser) == [f"userthe {word} at the end"]
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []


def test_a_damaged_line_is_reported_and_left_out(run, tmp_path: Path) -> None:
    lines = S10.read_bytes().splitlines(keepends=True)
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_bytes(b"".join([*lines[:3], b'{"type":"message","id":"x\x00y"\n', b"not json\n", *lines[3:]]))
    result = run("export", damaged, "--html", "-o", tmp_path / "d.html")
    assert result.exit_code == 0, result.output
    assert [line.split(": line ")[1].split(":")[0] for line in result.stderr.splitlines() if ": line " in line] \
        == ["4", "5"]
    page = (tmp_path / "d.html").read_text(encoding="utf-8")
    data = page.split('<script type="application/json" id="hk-entries">', 1)[1].split("</script>", 1)[0]
    assert len(json.loads(data)) == len(lines) - 1


HOSTILE_LINES = [
    '{"type":"session","version":3,"id":"h\\ud800\\u009b","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}',
    '{"type":"message","id":"00000002","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":'
    '{"role":"user","content":[{"type":"text","text":"bad \\ud83d \\u001b]0;x\\u0007 \\u007f x"}],'
    '"timestamp":99999999999999999999999}}',
    '{"type":"message","id":"00000003","parentId":"00000002","timestamp":"2026-01-01T00:00:00.000Z","message":'
    '{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"calc","arguments":{"y":"\\ud800",'
    '"z":123456789012345678901234567890}}],"provider":"p","model":"m\\udfff","usage":{"input":1e400,"output":5,'
    '"totalTokens":99999999999999999999999},"stopReason":"toolUse","timestamp":2}}',
]


def test_what_no_encoder_takes_still_exports(run, tmp_path: Path) -> None:
    """Lone surrogates, C1 and DEL, integers beyond 64 bits: valid JSON a session may hold."""
    source = tmp_path / "hostile.jsonl"
    source.write_text("\n".join(HOSTILE_LINES) + "\n", encoding="utf-8")
    page = run("export", source, "--html")
    assert page.exit_code == 0, page.output
    assert "\x9b" not in page.stdout and "\x7f" not in page.stdout and "\x1b" not in page.stdout
    data = page.stdout.split('<script type="application/json" id="hk-entries">', 1)[1].split("</script>", 1)[0]
    assert json.loads(data)[0]["message"]["content"][0]["text"] == "bad \ud83d \x1b]0;x\x07 \x7f x"
    md = run("export", source, "--md")
    assert md.exit_code == 0, md.output
    assert "\\ud83d" in md.stdout and "\\x1b" in md.stdout and "\x1b" not in md.stdout
