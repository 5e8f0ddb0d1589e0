"""A real headless Chromium driven by Playwright against Django's live test server."""

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT

SCREENSHOTS = ROOT / "var" / "screenshots"


def chromium_path() -> str:
    """The browser: ``PARTHA_CHROMIUM``, else a Chromium on the PATH. The README's test command installs one."""
    named = os.environ.get("PARTHA_CHROMIUM")
    if named:
        return named
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if found := shutil.which(name):
            return found
    pytest.fail("No Chromium for the browser tests: run scripts/test (it installs one) or set PARTHA_CHROMIUM.")


@pytest.fixture(scope="module")
def browser():
    """One browser for a module of tests, closed after it: its driver's threads must not outlive the module, or
    a later test that forks would fork a multi-threaded process."""
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop on this thread while it is open; the tests' database calls
    # (fixtures, assertions) are still plain synchronous calls, which Django would otherwise refuse.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            launched = playwright.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
            yield launched
            launched.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture(scope="module")
def live_server(request):
    """pytest-django's live server, stopped after the module instead of at the end of the session: its thread
    would otherwise outlive the browser tests, and a later test that forks (tests/reliability/test_bad_input.py
    runs a check as another user that way) would fork a multi-threaded process."""
    from pytest_django.live_server_helper import LiveServer

    server = LiveServer(request.config.getvalue("liveserver") or os.getenv("DJANGO_LIVE_TEST_SERVER_ADDRESS") or "localhost")
    yield server
    server.stop()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 800})
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    yield opened
    context.close()


def screenshot(page, name: str) -> Path:
    """Save what the page shows under var/screenshots/ for a person to look at."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}-{os.environ.get('PARTHA_TEST_ENGINE', 'sqlite')}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
