"""The inspector in a real browser: Debian's headless Chromium driven by selenium through Debian's
chromedriver, against a real `strata serve` process. Browse, search, a memory's history and change
chain, approve and reject from the review queue (through the confirmation dialogs), the as-of switch,
the read box, a memory text that tries to be HTML, and a server with a bearer token; on the demo's
store (`strata demo --into-store`) the overview, history as sentences, the case and change chain
graphs, and the page at 1400 and 420 px (no horizontal scroll, no word broken mid-word); an empty
store's page; the favicon; the dark theme; no console error (a CSP violation or a 404 is one). Screenshots go to
artifacts/inspector/ (git-ignored)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import STRATA_COMMAND, Served

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "inspector"
REPO = "acme/api"
TOKEN = "inspector-token-0123456789abcdef"
XSS = "<img src=x onerror=\"document.title='pwned'\"> the deploy script prints <b>bold</b> warnings"
WAIT_S = 30
DEMO = "strata-demo"


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    """A headless Chromium; skipped where the Debian packages are missing (a failure with
    STRATA_REQUIRE_BROWSER=1, as in CI)."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not shutil.which(p)]
    if missing:
        reason = (
            f"browser tests NOT RUN: {', '.join(missing)} missing; install the Debian packages chromium and "
            "chromium-driver (.ci/run does)"
        )
        if os.environ.get("STRATA_REQUIRE_BROWSER") == "1":
            pytest.fail(f"STRATA_REQUIRE_BROWSER=1 but {reason}", pytrace=False)
        warnings.warn(pytest.PytestWarning(reason), stacklevel=1)
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--window-size=1280,1000",
        f"--user-data-dir={tmp_path / 'profile'}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(WAIT_S)
    try:
        yield driver
    finally:
        driver.quit()


def shot(driver: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"{name}.png"))


def wait(driver: Any, condition: Callable[[Any], Any]) -> Any:
    """Until `condition` holds; the page re-renders as it navigates, so elements that went stale meanwhile
    are looked up again."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(
        driver, WAIT_S, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)
    ).until(condition)


def find(driver: Any, css: str) -> Any:
    from selenium.webdriver.common.by import By

    return wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, css))


def texts(driver: Any, css: str) -> list[str]:
    from selenium.webdriver.common.by import By

    return wait(driver, lambda d: [e.text for e in d.find_elements(By.CSS_SELECTOR, css)] or [""])


def event_types(driver: Any, css: str = "#history li.ev") -> list[str]:
    """The event types of a history or timeline, in order (each line carries its event's type)."""
    return [e.get_attribute("data-type") for e in driver.find_elements("css selector", css)]


def dialog(driver: Any, answer: str | None = None) -> str:
    """Accept the page's own confirmation (an in-page dialog, never the browser's confirm() or prompt(),
    which block the page and look like a site's pop-up), typing `answer` into its field; returns its question."""
    from selenium.common.exceptions import NoAlertPresentException

    asked = find(driver, "dialog#ask[open]")
    try:
        native = driver.switch_to.alert.text
    except NoAlertPresentException:
        native = None
    assert native is None, f"a native dialog: {native}"
    question = asked.text
    if answer is not None:
        asked.find_element("css selector", "#ask-answer").send_keys(answer)
    asked.find_element("css selector", "#ask-ok").click()
    wait(driver, lambda d: not d.find_elements("css selector", "dialog#ask[open]"))
    return question


def seed(http: httpx.Client) -> dict[str, Any]:
    """A repo's memory written as agents write it (with review_writes on, so everything lands pending),
    then approved through the API, but for two proposals left for the page to decide."""

    def write(text: str, kind: str = "fact", scope: str = "repo", **links: Any) -> dict[str, Any]:
        response = http.post(
            "/v1/write",
            json={
                "repo_id": REPO,
                "memory": {"text": text, "kind": kind, "scope": scope, "confidence": 0.85, "links": links},
            },
        )
        assert response.status_code == 200, response.text
        return response.json()

    ids: dict[str, Any] = {}
    ids["problem"] = write("Integration tests hang when the local Postgres is not running", "problem")
    ids["solution"] = write(
        "Run make db-up before pytest -m integration", "solution", problem_id=ids["problem"]["memory_id"]
    )
    ids["failed"] = write(
        "Raising the pytest timeout did not help: the connection never opens",
        "failed_tactic",
        problem_id=ids["problem"]["memory_id"],
    )
    ids["fact"] = write("The test database listens on port 5433")
    ids["xss"] = write(XSS)
    ids["global"] = write("Prefer small focused commits", "preference", "global")
    for key in ("problem", "solution", "failed", "fact", "xss", "global"):
        decided = http.post(
            "/v1/review", json={"repo_id": REPO, "memory_id": ids[key]["memory_id"], "decision": "approved"}
        )
        assert decided.status_code == 200 and decided.json()["status"] == "active", decided.text
    ids["before_change"] = decided.json()["position"]
    ids["change"] = write(
        "The test database moved to port 5434 in docker-compose.yml",
        "change",
        change_targets=[ids["fact"]["memory_id"]],
    )
    http.post("/v1/review", json={"repo_id": REPO, "memory_id": ids["change"]["memory_id"], "decision": "approved"})
    ids["keep"] = write("CI caches the virtualenv keyed on the lockfile hash")
    ids["drop"] = write("The staging VPN must be on to run tests")
    head = http.get("/healthz").json()["head"]
    read = http.post(
        "/v1/read",
        json={
            "repo_id": REPO,
            "query": "integration tests hang",
            "consistency": {"after_position": head, "timeout_ms": 20000},
        },
    )
    assert read.status_code == 200, read.text
    return ids


@pytest.mark.slow
def test_browse_search_history_review_read_and_as_of(serve: Callable[..., Served], browser: Any) -> None:
    served = serve(env={"STRATA_REVIEW_WRITES": "true"})
    with httpx.Client(base_url=served.url, timeout=60) as http:
        ids = seed(http)
        driver = browser
        driver.get(f"{served.url}/#/memories?repo={REPO}")
        find(driver, "#memory-list .item")
        listed = " ".join(texts(driver, "#memory-list .item-text"))
        assert "Integration tests hang" in listed and "port 5434" in listed
        assert XSS in listed and driver.title == f"{REPO} · Strata inspector"  # the text is shown as text, never run
        shot(driver, "01-memories")

        search = find(driver, "#search")
        search.send_keys("postgres\n")
        wait(driver, lambda d: "q=postgres" in d.current_url and len(texts(d, "#memory-list .item-text")) == 1)
        assert "Postgres is not running" in texts(driver, "#memory-list .item-text")[0]
        shot(driver, "02-search")

        driver.get(f"{served.url}/#/memory/{ids['fact']['memory_id']}?repo={REPO}")
        wait(driver, lambda d: "ChangeRecorded" in event_types(d))
        events = event_types(driver)
        assert events[0] == "MemoryWritten" and "MemoryReviewed" in events and "TruthAdjusted" in events
        history = find(driver, "#history").text
        assert "Approved" in history and "Truth lowered from 0.85 to" in history and "by the change" in history
        find(driver, f"#change-chain a.node[data-memory='{ids['change']['memory_id']}']")
        shot(driver, "03-memory-history")
        driver.get(f"{served.url}/#/memory/{ids['solution']['memory_id']}?repo={REPO}")
        wait(driver, lambda d: len(d.find_elements("css selector", "#case-graph a.node")) == 3)
        for key in ("problem", "failed"):
            find(driver, f"#case-graph a.node[data-memory='{ids[key]['memory_id']}']")

        driver.get(f"{served.url}/#/review?repo={REPO}")
        find(driver, "#review-list .item")
        assert len(texts(driver, "#review-list .item")) == 2
        shot(driver, "04-review-queue")
        find(driver, f".item[data-memory='{ids['keep']['memory_id']}'] button.approve").click()
        assert "Approve this memory" in dialog(driver)
        wait(driver, lambda d: "Approved" in d.find_element("id", "notice").text)
        find(driver, f".item[data-memory='{ids['drop']['memory_id']}'] button.reject").click()
        assert "Reject this memory" in dialog(driver, "we have no VPN")
        find(driver, "#review-empty")
        shot(driver, "05-review-decided")
        states = {
            key: http.post("/v1/memory", json={"repo_id": REPO, "memory_id": ids[key]["memory_id"]}).json()
            for key in ("keep", "drop")
        }
        assert states["keep"]["memory"]["status"] == "active" and states["drop"]["memory"]["status"] == "rejected"
        assert states["drop"]["history"][-1]["fields"]["note"] == "we have no VPN"

        driver.get(f"{served.url}/#/read?repo={REPO}")
        query = find(driver, "#read-query")
        query.send_keys("integration tests hang on startup\n")
        find(driver, "#read-results .item")
        reasons = texts(driver, "#read-results .reason")
        assert reasons and all(r for r in reasons)
        assert "Postgres is not running" in find(driver, "#read-results").text
        assert "make db-up" in " ".join(
            texts(driver, "#read-results .item.member .item-text")
        )  # a case shows its solution
        shot(driver, "06-read")

        # the whole page switches to a past moment: before the change was written
        driver.get(f"{served.url}/#/memories?repo={REPO}")
        find(driver, "#memory-list .item")
        now = len(texts(driver, "#memory-list .item"))
        field = find(driver, "#as-of")
        field.send_keys(str(ids["before_change"]))
        find(driver, "#as-of-apply").click()
        wait(
            driver,
            lambda d: (
                d.find_element("id", "past").is_displayed()
                and f"position {ids['before_change']}" in d.find_element("id", "past").text
            ),
        )
        wait(driver, lambda d: len(texts(d, "#memory-list .item")) == 6)
        assert len(texts(driver, "#memory-list .item")) < now
        assert "port 5434" not in " ".join(texts(driver, "#memory-list .item-text"))
        shot(driver, "07-as-of-list")
        find(driver, f"#memory-list .item[data-memory='{ids['fact']['memory_id']}'] a.item-text").click()
        find(driver, f"#memory-page[data-memory='{ids['fact']['memory_id']}'] #history li.ev")
        assert "ChangeRecorded" not in event_types(driver)
        assert not driver.find_elements("css selector", "#change-chain")
        assert not find(driver, "#forget").is_enabled()  # the past is read-only
        shot(driver, "08-as-of-memory")
        find(driver, "#as-of-now").click()
        wait(driver, lambda d: "ChangeRecorded" in event_types(d))

        driver.get(f"{served.url}/#/timeline?repo={REPO}")
        find(driver, "#timeline-list li.ev")
        assert "MemoryReviewed" in event_types(driver, "#timeline-list li.ev")
        assert "Approved" in find(driver, "#timeline-list").text
        shot(driver, "09-timeline")

        # forget, from the memory's page, through its confirmation
        driver.get(f"{served.url}/#/memory/{ids['xss']['memory_id']}?repo={REPO}")
        assert find(driver, "#memory-text").text == XSS
        find(driver, "#forget").click()
        assert "Forget this memory" in dialog(driver, "asked by the user")
        wait(driver, lambda d: "forgotten" in d.find_element("id", "memory-page").text)
        assert driver.title == f"{REPO} · Strata inspector"
        assert not console_errors(driver)
    assert served.stop() == 0


@pytest.mark.slow
def test_a_server_with_a_token(serve: Callable[..., Served], browser: Any) -> None:
    served = serve(env={"STRATA_TOKEN": TOKEN})
    good = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=served.url, timeout=60) as http:
        written = http.post(
            "/v1/write",
            headers=good,
            json={
                "repo_id": REPO,
                "memory": {
                    "text": "Only a token holder reads this",
                    "kind": "fact",
                    "scope": "repo",
                    "confidence": 0.9,
                },
            },
        )
        assert written.status_code == 200, written.text
        page = http.get("/")  # the shell holds no data: served without the token
        assert page.status_code == 200 and "script-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["x-content-type-options"] == "nosniff"
        assert http.post("/v1/memories", json={"repo_id": REPO}).status_code == 401

    driver = browser
    driver.get(f"{served.url}/#/memories?repo={REPO}")
    token = find(driver, "#token")
    wait(driver, lambda d: token.is_displayed())
    shot(driver, "10-token-asked")
    token.send_keys(TOKEN + "\n")
    find(driver, "#memory-list .item")
    assert "Only a token holder" in find(driver, "#memory-list").text
    assert TOKEN not in driver.current_url
    assert driver.execute_script("return sessionStorage.getItem('strata.token')") == TOKEN
    assert not driver.get_cookies()
    shot(driver, "11-token-used")
    assert served.stop() == 0


@pytest.mark.slow
def test_a_read_only_token_sees_its_repos_and_no_actions(
    serve: Callable[..., Served], browser: Any, strata_env: dict[str, str]
) -> None:
    """A named token limited to acme/* with read only: the page asks for it, lists only its repos, says who
    it is, offers no review and no forget; revoked, the page asks for a token again."""
    import subprocess

    from tests.conftest import STRATA_COMMAND

    def token(name: str, repos: str, ops: str) -> str:
        made = subprocess.run(
            [STRATA_COMMAND, "--json", "token", "create", name, "--repos", repos, "--ops", ops],
            env=strata_env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert made.returncode == 0, made.stdout + made.stderr
        return json.loads(made.stdout)["token"]

    admin, viewer = token("admin", "**", "operator"), token("viewer", "acme/*", "read")
    served = serve(env={"STRATA_REVIEW_WRITES": "true"})
    with httpx.Client(base_url=served.url, timeout=60, headers={"Authorization": f"Bearer {admin}"}) as http:
        for repo, text in (
            (REPO, "The API's tests need Postgres 15"),
            ("other/secret", "Project Nightshade ships in May"),
        ):
            written = http.post(
                "/v1/write",
                json={"repo_id": repo, "memory": {"text": text, "kind": "fact", "scope": "repo", "confidence": 0.9}},
            )
            assert written.status_code == 200, written.text

    driver = browser
    driver.get(f"{served.url}/#/memories")
    field = find(driver, "#token")
    wait(driver, lambda d: field.is_displayed())
    field.send_keys(viewer + "\n")
    find(driver, "#memory-list .item")
    assert "Postgres 15" in find(driver, "#memory-list").text
    options = [o.text for o in driver.find_elements("css selector", "#repo option")]
    assert options == [REPO] and "Nightshade" not in driver.page_source and "other/secret" not in driver.page_source
    assert find(driver, "#who").text == "token viewer: read"
    shot(driver, "12-read-only-token")

    driver.get(f"{served.url}/#/review?repo={REPO}")
    find(driver, "#review-not-allowed")
    assert not driver.find_elements("css selector", "#review-list button.approve")
    assert len(texts(driver, "#review-list .item")) == 1  # it may see the queue, not decide it
    shot(driver, "13-read-only-review")
    memory_id = find(driver, "#review-list .item").get_attribute("data-memory")
    driver.get(f"{served.url}/#/memory/{memory_id}?repo={REPO}")
    find(driver, "#history li.ev")
    assert not find(driver, "#forget").is_enabled()

    revoked = subprocess.run(
        [STRATA_COMMAND, "--json", "token", "revoke", "viewer"],
        env=strata_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert revoked.returncode == 0, revoked.stdout

    with httpx.Client(base_url=served.url, timeout=60) as http:  # the server refuses it within a second
        refused = lambda: http.post("/v1/whoami", json={}, headers={"Authorization": f"Bearer {viewer}"}).status_code  # noqa: E731
        deadline = time.monotonic() + WAIT_S
        while refused() != 401:
            assert time.monotonic() < deadline, "the revocation did not take effect"
            time.sleep(0.05)
    driver.get(f"{served.url}/#/memories?repo={REPO}")
    driver.refresh()
    wait(driver, lambda d: d.find_element("id", "token-form").is_displayed())
    assert driver.execute_script("return sessionStorage.getItem('strata.token')") is None
    shot(driver, "14-revoked-token-asked-again")
    assert served.stop() == 0


# --- the page as a product: the demo's store at 1400 and 420 px, an empty store ------------------------

NO_SIDEWAYS_SCROLL = "return document.documentElement.scrollWidth <= document.documentElement.clientWidth"
BROKEN_WORDS = """
    // ordinary words (letters only) drawn over more than one line: a word broken mid-word
    const broken = [];
    for (const root of document.querySelectorAll("header, main")) {
      const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
      for (let t = walk.nextNode(); t; t = walk.nextNode()) {
        if (t.parentElement.closest("code, pre, .id, svg, .sr-only, option")) continue;
        for (const m of t.data.matchAll(/[A-Za-z]{4,}/g)) {
          const range = document.createRange();
          range.setStart(t, m.index);
          range.setEnd(t, m.index + m[0].length);
          const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
          if (lines.size > 1) broken.push(m[0]);
        }
      }
    }
    return broken;
"""


def console_errors(driver: Any) -> list[str]:
    """What the page logged as an error: a failed request (a 404), a script error, a CSP violation."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def fits(driver: Any) -> None:
    """No horizontal scroll and no ordinary word broken over two lines."""
    assert driver.execute_script(NO_SIDEWAYS_SCROLL), driver.execute_script(
        "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert driver.execute_script(BROKEN_WORDS) == []


def memory_ids(http: httpx.Client) -> Callable[[str], str]:
    """The id of the demo's memory whose text starts so."""
    listed = http.post("/v1/memories", json={"repo_id": DEMO, "limit": 200}).json()["items"]
    return lambda start: next(m["memory_id"] for m in listed if m["text"].startswith(start))


@pytest.mark.slow
def test_the_demo_store_in_a_wide_and_a_narrow_window(
    serve: Callable[..., Served], browser: Any, strata_env: dict[str, str]
) -> None:
    demo = subprocess.run(
        [STRATA_COMMAND, "--text", "demo", "--into-store"], env=strata_env, capture_output=True, text=True, timeout=600
    )
    assert demo.returncode == 0, demo.stderr
    served = serve()
    with httpx.Client(base_url=served.url, timeout=60) as http:
        ids = memory_ids(http)
        icon = http.get("/favicon.svg")
        assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml" and b"<svg" in icon.content
        assert http.get("/favicon.ico").status_code == 200  # what a browser asks for without a page
    quick_fix, fact, problem = ids("Set PGCONNECT_TIMEOUT"), ids("The test database listens"), ids("Integration tests")
    driver = browser
    driver.set_window_size(1400, 1150)

    driver.get(f"{served.url}/")  # the only repo's overview
    find(driver, "#overview #holdings li")
    assert f"repo={DEMO}" in driver.current_url and driver.find_element("css selector", "link[rel=icon]")
    kinds = [li.get_attribute("data-kind") for li in driver.find_elements("css selector", "#holdings li")]
    assert kinds == ["problem", "solution", "failed_tactic", "fact", "preference", "change"]
    tiles = find(driver, ".tiles").text
    assert "wait for review" in tiles and "in doubt" in tiles
    bars = driver.find_elements("css selector", "#activity-chart g.day rect[class^='fill-']")
    assert bars and "written" in driver.execute_script(
        "return [...document.querySelectorAll('#activity-chart g.day title')].map(t => t.textContent).join(' ')"
    )
    assert len(driver.find_elements("css selector", "#overview-review li")) == 1
    find(driver, f"#overview-doubt li[data-memory='{quick_fix}']")
    wait(driver, lambda d: "Written by claude-code" in d.find_element("id", "recent").text)
    fits(driver)
    shot(driver, "20-overview-1400")

    driver.get(f"{served.url}/#/memory/{quick_fix}?repo={DEMO}")
    find(driver, f"#memory-page[data-memory='{quick_fix}'] #history li.ev")
    history = find(driver, "#history").text
    assert "Written by claude-code as a solution of Integration tests hang" in history
    assert "Truth lowered from 0.60 to 0.34" in history and "(evidence: cmd:pytest -m integration" in history
    assert [" ".join(m.text.split()) for m in driver.find_elements("css selector", "#history .move.down")] == [
        "truth 0.60 ▼ 0.34"
    ]
    wait(driver, lambda d: len(d.find_elements("css selector", "#case-graph a.node")) == 4)
    assert len(driver.find_elements("css selector", "#case-graph path.edge-solves")) == 2
    assert len(driver.find_elements("css selector", "#case-graph path.edge-failed")) == 1
    assert find(driver, "#case-graph a.node.focus").get_attribute("data-memory") == quick_fix
    listing, page = find(driver, "#memory-list").rect, find(driver, "#memory-page").rect
    assert listing["x"] + listing["width"] <= page["x"] and page["y"] < listing["y"] + listing["height"]  # side by side
    fits(driver)
    shot(driver, "21-memory-1400")
    find(driver, f"#case-graph a.node[data-memory='{problem}']").click()  # the graph is a way around
    find(driver, f"#memory-page[data-memory='{problem}']")

    driver.get(f"{served.url}/#/memory/{fact}?repo={DEMO}")
    wait(driver, lambda d: len(d.find_elements("css selector", "#chain-graph a.node")) == 2)
    assert driver.find_elements("css selector", "#chain-graph path.edge-change")
    assert "by the change docker-compose.yml now maps" in find(driver, "#history").text
    shot(driver, "22-change-chain-1400")

    driver.set_window_size(420, 1400)
    for name, route in (
        ("overview", f"#/overview?repo={DEMO}"),
        ("memories", f"#/memories?repo={DEMO}"),
        ("memory", f"#/memory/{quick_fix}?repo={DEMO}"),
        ("timeline", f"#/timeline?repo={DEMO}"),
        ("read", f"#/read?repo={DEMO}&q=integration%20tests%20hang"),
        ("review", f"#/review?repo={DEMO}"),
    ):
        driver.get(f"{served.url}/{route}")
        find(driver, f"main[data-view='{name}'] > *")
        if name == "memory":
            wait(driver, lambda d: len(d.find_elements("css selector", "#case-graph a.node")) == 4)
            assert not driver.find_elements("css selector", "#memory-list")  # narrow: the memory alone
        fits(driver)
        shot(driver, f"23-{name}-420")

    driver.execute_cdp_cmd(
        "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]}
    )
    driver.set_window_size(1400, 1150)
    driver.get(f"{served.url}/#/overview?repo={DEMO}")
    find(driver, "main[data-view='overview'] #holdings li")
    assert driver.execute_script("return getComputedStyle(document.body).backgroundColor") == "rgb(15, 20, 32)"
    shot(driver, "25-overview-dark-1400")
    assert not console_errors(driver)
    assert served.stop() == 0


@pytest.mark.slow
def test_an_empty_store_tells_how_to_connect_an_agent(serve: Callable[..., Served], browser: Any) -> None:
    served = serve()
    driver = browser
    for width in (1400, 420):
        driver.set_window_size(width, 1000)
        driver.get(f"{served.url}/")
        empty = find(driver, "#empty-state")
        assert "Nothing is remembered yet" in empty.text
        assert "strata demo --into-store" in empty.text  # one setup, the one the banner and the README name
        assert f"strata init claude-code --http {served.url}/mcp --hooks" in empty.text
        assert "strata init claude-code --hooks" not in empty.text
        fits(driver)
        shot(driver, f"24-empty-{width}")
    readme = find(driver, "#readme-link").get_attribute("href")
    with httpx.Client(timeout=60) as http:
        page = http.get(readme.split("#")[0])
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/plain")
    assert "strata init claude-code" in page.text
    assert not console_errors(driver)
    assert served.stop() == 0


def test_the_page_says_when_the_vectors_are_catching_up(
    serve: Callable[..., Served], browser: Any, strata_env: dict[str, str], tmp_path: Path
) -> None:
    """After a bulk import the page says the server is catching up, and how far, until it is done
    (issue #32: /healthz said ok and the page said nothing)."""
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.e2e.test_catching_up import import_memories

    import_memories(strata_env, tmp_path, 1500)  # nothing embedded until the server runs: seconds of work
    served = serve()
    driver = browser
    driver.get(f"{served.url}/")
    banner = wait(driver, lambda d: (b := find(d, "#catching-up")).is_displayed() and b)
    assert "Catching up: the vectors are" in banner.text and "events behind" in banner.text, banner.text
    shot(driver, "25-catching-up")
    WebDriverWait(driver, 900).until(lambda d: not find(d, "#catching-up").is_displayed())  # a deadline, not a timing
    assert not console_errors(driver)


@pytest.mark.slow
def test_a_misspelled_repo_and_a_bad_moment_say_so(serve: Callable[..., Served], browser: Any) -> None:
    """A repo id no memory is filed under is not shown as a valid empty repo: the page says so and lists the
    repos there are; a moment's date reads as the timeline's days do; an "as of" the server refuses leaves no
    banner of the moment viewed before beside its error."""
    served = serve()
    with httpx.Client(base_url=served.url, timeout=60) as http:
        written = http.post(
            "/v1/write",
            json={
                "repo_id": REPO,
                "memory": {"text": "The CI runners have 2 cores", "kind": "fact", "scope": "repo", "confidence": 0.9},
            },
        )
        assert written.status_code == 200, written.text
    driver = browser
    driver.get(f"{served.url}/#/overview?repo=acme/apj")
    unknown = find(driver, "#unknown-repo")
    assert "No memories under the repo id acme/apj" in unknown.text
    assert [a.text for a in unknown.find_elements("css selector", "a.repo-link")] == [REPO]
    unknown.find_element("css selector", "a.repo-link").click()
    wait(driver, lambda d: f"repo={REPO.replace('/', '%2F')}" in d.current_url or f"repo={REPO}" in d.current_url)
    find(driver, "#main[data-view='overview'] #overview")

    driver.get(f"{served.url}/#/timeline?repo={REPO}&as_of=1")
    wait(driver, lambda d: d.find_element("id", "past").is_displayed())
    heading = find(driver, "#timeline-list li.day-head").text  # the day of the event at position 1
    stamp = find(driver, "#timeline-list li.ev time").get_attribute("title")
    assert heading in driver.find_element("id", "past").text and stamp.startswith(heading)  # one date format
    field = find(driver, "#as-of")
    field.clear()
    field.send_keys("not a moment")
    find(driver, "#as-of-apply").click()
    wait(driver, lambda d: d.find_element("id", "message").is_displayed())
    assert not driver.find_element("id", "past").is_displayed(), driver.find_element("id", "past").text
    assert served.stop() == 0


@pytest.mark.slow
def test_the_activity_charts_axis_label_is_whole_at_20000(serve: Callable[..., Served], browser: Any) -> None:
    """The page's own chart module, in the page, drawing a day of 20,000 memories: the y-axis label is all
    inside the chart ("20000", not "0000" cut at the left edge)."""
    served = serve()
    driver = browser
    driver.get(f"{served.url}/")
    find(driver, "#main[data-view]")
    left = driver.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        import("/inspector/charts.js").then(({ activityChart }) => {
          const figure = activityChart({ since: "2026-11-01", until: "2026-11-30",
            activity: [{ day: "2026-11-20", kind: "fact", written: 20000 }] });
          figure.style.width = "600px";
          document.body.append(figure);
          const look = () => {
            const tick = [...figure.querySelectorAll("text.tick")].find((t) => t.textContent === "20000");
            if (!tick) return requestAnimationFrame(look);
            done(tick.getBBox().x);
          };
          look();
        });
        """
    )
    assert left >= 0, f"the label starts {left} px left of the chart"
    assert served.stop() == 0


@pytest.mark.slow
def test_the_header_with_a_named_token_is_one_row_at_1400(
    serve: Callable[..., Served], browser: Any, strata_env: dict[str, str]
) -> None:
    """A person's named token (its name and operations in the header) and a repo id from a git remote: at
    1,400 px the header is still one row (the "as of" form wrapped to a second one)."""
    import subprocess

    from tests.conftest import STRATA_COMMAND

    made = subprocess.run(
        [
            STRATA_COMMAND,
            "--json",
            "token",
            "create",
            "alice-laptop-agent",
            "--repos",
            "**",
            "--ops",
            "read,write,review",
        ],
        env=strata_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    token = json.loads(made.stdout)["token"]
    served = serve()
    with httpx.Client(base_url=served.url, timeout=60, headers={"Authorization": f"Bearer {token}"}) as http:
        memory = {"text": "Payments retries are idempotent", "kind": "fact", "scope": "repo", "confidence": 0.9}
        written = http.post("/v1/write", json={"repo_id": "github.com/acme/payments-service", "memory": memory})
        assert written.status_code == 200, written.text
    driver = browser
    driver.set_window_size(1400, 1000)
    driver.get(f"{served.url}/#/memories")
    field = find(driver, "#token")
    wait(driver, lambda d: field.is_displayed())
    field.send_keys(token + "\n")
    find(driver, "#memory-list .item")
    assert find(driver, "#who").get_attribute("title") == "token alice-laptop-agent: read, write, review"
    middles = driver.execute_script(
        "return [...document.querySelectorAll('.top-row > :not([hidden])')]"
        ".map(e => e.getBoundingClientRect()).map(r => Math.round(r.top + r.height / 2))"
    )
    assert max(middles) - min(middles) < 20, f"the header wraps at 1,400 px: {middles}"
    shot(driver, "15-named-token-header-1400")
    assert served.stop() == 0


def write_fact(http: httpx.Client, text: str) -> str:
    memory = {"text": text, "kind": "fact", "scope": "repo", "confidence": 0.9}
    written = http.post("/v1/write", json={"repo_id": REPO, "memory": memory})
    assert written.status_code == 200, written.text
    return str(written.json()["memory_id"])


def edit_on_the_page(driver: Any, text: str, reason: str) -> None:
    """The page's own editor (an in-page dialog, never a native prompt): the text replaced, a reason, Save."""
    find(driver, "#edit").click()
    asked = find(driver, "dialog#ask[open]")
    area = asked.find_element("css selector", "#edit-text")
    area.clear()
    area.send_keys(text)
    asked.find_element("css selector", "#edit-reason").send_keys(reason)
    asked.find_element("css selector", "#ask-ok").click()
    wait(driver, lambda d: not d.find_elements("css selector", "dialog#ask[open]"))


@pytest.mark.slow
def test_editing_a_memory_from_the_page(serve: Callable[..., Served], browser: Any) -> None:
    """Edit a memory's text at 1,400 and 420 px: the memory shows its new text, its history says what it said
    before and what it says now, and the list finds it by its new words; an edit that would copy another
    memory is refused with the server's error, and nothing changes."""
    served = serve()
    with httpx.Client(base_url=served.url, timeout=60) as http:
        wide = write_fact(http, "The CI runners have 2 cores")
        narrow = write_fact(http, "Release notes live in docs/CHANGES.md")
        other = write_fact(http, "Deploys go out on Tuesdays")
    driver = browser
    for memory_id, width, new in (
        (wide, 1400, "The CI runners have 4 cores since the November upgrade"),
        (narrow, 420, "Release notes live in the CHANGELOG.md at the root"),
    ):
        driver.set_window_size(width, 1100)
        driver.get(f"{served.url}/#/memory/{memory_id}?repo={REPO}")
        find(driver, f"#memory-page[data-memory='{memory_id}'] #history li.ev")
        old = find(driver, "#memory-text").text
        edit_on_the_page(driver, new, "checked the runner settings")
        wait(driver, lambda d, new=new: d.find_element("id", "memory-text").text == new)
        wait(driver, lambda d: "Edited" in d.find_element("id", "notice").text)
        assert event_types(driver) == ["MemoryWritten", "TextEdited"]
        line = find(driver, "#history li[data-type='TextEdited']").text
        assert "Text edited: checked the runner settings." in line.replace("“", "").replace("”", ""), line
        assert old in line and new in line, line
        assert find(driver, "#history li[data-type='TextEdited'] q.was").text == old
        fits(driver)
        shot(driver, f"30-edited-{width}")
    driver.set_window_size(1400, 1100)
    driver.get(f"{served.url}/#/memories?repo={REPO}&q=November%20upgrade")
    wait(
        driver,
        lambda d: (
            [e.get_attribute("data-memory") for e in d.find_elements("css selector", "#memory-list li")] == [wide]
        ),
    )
    with httpx.Client(base_url=served.url, timeout=60) as http:  # the vectors hold the edits: the copy is found
        head = http.get("/healthz").json()["head"]
        consistency = {"after_position": head, "timeout_ms": 30000}
        caught = http.post("/v1/read", json={"repo_id": REPO, "query": "release notes", "consistency": consistency})
        assert caught.status_code == 200, caught.text
    driver.get(f"{served.url}/#/memory/{other}?repo={REPO}")
    find(driver, f"#memory-page[data-memory='{other}']")
    edit_on_the_page(driver, "Release notes live in the CHANGELOG.md at the root", "")
    wait(driver, lambda d: d.find_element("id", "message").text)
    assert "duplicate_text" in find(driver, "#message").text, find(driver, "#message").text
    assert find(driver, "#memory-text").text == "Deploys go out on Tuesdays"
    assert not console_errors(driver) or all("/v1/edit" in e and "409" in e for e in console_errors(driver))
    assert served.stop() == 0


@pytest.mark.slow
def test_the_sessions_view(serve: Callable[..., Served], browser: Any) -> None:
    """A session at 1,400 and 420 px, reached from the navigation: what a hook showed (over HTTP a read made
    by the server), what it read, wrote and rated, each memory a link to its page."""
    served = serve()
    with httpx.Client(base_url=served.url, timeout=60) as http:
        problem = write_fact(http, "Integration tests hang when the local Postgres is not running")
        head = http.get("/healthz").json()["head"]
        read = http.post(
            "/v1/read",
            json={
                "repo_id": REPO,
                "query": "integration tests hang",
                "consistency": {"after_position": head, "timeout_ms": 30000},
            },
        ).json()
        assert [r["memory_id"] for r in read["results"]] == [problem], read
        rated = http.post(
            "/v1/feedback",
            json={"repo_id": REPO, "read_ids": [read["read_id"]], "used": [{"memory_id": problem, "target": 1.0}]},
        )
        assert rated.status_code == 200, rated.text
    driver = browser
    for width in (1400, 420):
        driver.set_window_size(width, 1100)
        driver.get(f"{served.url}/#/overview?repo={REPO}")
        find(driver, "#overview")
        find(driver, "nav a[data-view='sessions']").click()
        session = find(driver, "main[data-view='sessions'] #session-list .session")
        assert "0 shown · 1 read · 1 written · 1 rated" in session.text, session.text
        assert find(driver, ".session .read q").text == "integration tests hang"
        assert [
            e.get_attribute("data-memory") for e in driver.find_elements("css selector", ".session [data-memory]")
        ] == [problem] * 3
        assert "rated 1.00" in find(driver, ".session .rated li").text
        fits(driver)
        shot(driver, f"31-sessions-{width}")
    find(driver, ".session .wrote a").click()
    find(driver, f"#memory-page[data-memory='{problem}']")
    assert not console_errors(driver)
    assert served.stop() == 0


@pytest.mark.slow
def test_the_open_view_follows_the_store_live(serve: Callable[..., Served], browser: Any) -> None:
    """The open view is drawn again in place when the store changes (no page reload: a mark set on the page
    survives), at 1,400 and 420 px; a hidden tab stops polling and starts again when shown."""
    served = serve()
    with httpx.Client(base_url=served.url, timeout=60) as http:
        write_fact(http, "The CI runners have 2 cores")
        driver = browser
        for n, width in enumerate((1400, 420)):
            driver.set_window_size(width, 1100)
            driver.get(f"{served.url}/#/memories?repo={REPO}")
            find(driver, "#memory-list .item")
            wait(driver, lambda d: d.execute_script("return document.documentElement.dataset.live") == "on")
            driver.execute_script("window.stillThisPage = true")
            new = write_fact(http, f"Deploys go out on Tuesdays ({width} px)")
            find(driver, f"#memory-list .item[data-memory='{new}']")
            assert driver.execute_script("return window.stillThisPage") is True  # drawn again, not reloaded
            assert find(driver, "#live").get_attribute("textContent").startswith("updated")
            fits(driver)
            shot(driver, f"32-live-{width}")

            driver.execute_script(
                "Object.defineProperty(document, 'hidden', {value: true, configurable: true});"
                "document.dispatchEvent(new Event('visibilitychange'))"
            )
            assert driver.execute_script("return document.documentElement.dataset.live") == "paused"
            hidden_write = write_fact(http, f"Builds use Node 20 ({n})")
            driver.execute_script(
                "Object.defineProperty(document, 'hidden', {value: false, configurable: true});"
                "document.dispatchEvent(new Event('visibilitychange'))"
            )
            find(driver, f"#memory-list .item[data-memory='{hidden_write}']")
            assert driver.execute_script("return window.stillThisPage") is True
    assert not console_errors(driver)
    assert served.stop() == 0


@pytest.mark.slow
def test_contradicting_memories_side_by_side(serve: Callable[..., Served], browser: Any) -> None:
    """Two facts that differ by one value are flagged on the overview and on each memory's page, side by side
    at 1,400 px and one above the other at 420 px, each with its truth, its dates and its actions: lowering
    one's truth asks for evidence in a dialog of the page; forgetting one settles the pair."""
    served = serve()
    with httpx.Client(base_url=served.url, timeout=60) as http:
        two = write_fact(http, "The CI runners have 2 cores")
        four = write_fact(http, "The CI runners have 4 cores")
        write_fact(http, "Deploys go out on Tuesdays")
        head = http.get("/healthz").json()["head"]
        consistency = {"after_position": head, "timeout_ms": 30000}
        assert http.post("/v1/read", json={"repo_id": REPO, "query": "cores", "consistency": consistency}).is_success
    driver = browser
    for width in (1400, 420):
        driver.set_window_size(width, 1100)
        driver.get(f"{served.url}/#/overview?repo={REPO}")
        pair = find(driver, "#overview-contradictions .pair")
        assert pair.get_attribute("data-pair") == f"{two} {four}"
        sides = pair.find_elements("css selector", ".side")
        assert [s.find_element("css selector", ".s-value").text for s in sides] == ["2", "4"]
        left, right = sides[0].rect, sides[1].rect
        if width == 1400:
            assert left["x"] + left["width"] <= right["x"] and left["y"] == right["y"]  # side by side
        else:
            assert left["y"] + left["height"] <= right["y"]  # one above the other
        assert "truth" in sides[0].text and "written" in sides[0].text
        fits(driver)
        shot(driver, f"33-contradictions-{width}")
    driver.set_window_size(1400, 1100)
    driver.get(f"{served.url}/#/memory/{four}?repo={REPO}")
    find(driver, f"#memory-page[data-memory='{four}'] #contradictions .pair")
    find(driver, f"#contradictions .side[data-memory='{two}'] button.lower").click()
    assert "Lower this memory's truth" in dialog(driver, "cmd:nproc on the runner")
    wait(driver, lambda d: "Truth lowered from" in d.find_element("id", "notice").text)
    find(driver, f"#contradictions .side[data-memory='{two}'] button.forget").click()
    dialog(driver, "the runners were upgraded")
    wait(driver, lambda d: d.find_element("id", "notice").text == "Forgotten.")
    wait(driver, lambda d: not d.find_elements("css selector", "#contradictions"))
    driver.get(f"{served.url}/#/overview?repo={REPO}")
    assert find(driver, "#overview[data-contradictions]").get_attribute("data-contradictions") == "0"
    assert not driver.find_elements("css selector", "#overview-contradictions")
    assert not console_errors(driver)
    assert served.stop() == 0
