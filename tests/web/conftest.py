"""What the browser tests share: Debian's chromium driven by Playwright, a real ``recuerdo
serve`` per module, and helpers to read pages as a person would.

Chromium is never downloaded: it is the system's, installed by apt-get in ``.ci/run``:
Debian's headless build of it (``chromium-headless-shell``) where it is installed, else
``/usr/bin/chromium`` (``RECUERDO_CHROMIUM`` chooses another). The headless build is the same
browser without the desktop one's windowing layers: these tests took 25 CPU-s with it against
37 with the desktop browser (decision 0038). The browser and its flags are the screenshot
tool's (``tools/screenshots.py``), so the pictures and the tests see the same pages. Each
module launches it once; Playwright gives every launch a new, empty profile folder, and every
test opens its own browser context (its own cookies).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tools.screenshots import ARGS as CHROMIUM_ARGS
from tools.screenshots import CHROMIUM

from ..conftest import Server

FAST_ENV = {"RECUERDO_EMBEDDER": "none"}  # the meaning model is not what these tests look at


def chromium_missing() -> bool:
    return shutil.which(CHROMIUM) is None and not Path(CHROMIUM).exists()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if chromium_missing():
        pytest.fail(
            f"no chromium at {CHROMIUM}: apt-get install chromium-headless-shell (see .ci/run)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        launched = driver.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        yield launched
        launched.close()


def start_server(base: Path, *args: str) -> Server:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in FAST_ENV.items():
            patch.setenv(name, value)
        return Server(base, memory="demo", args=args)


def api(server: Server, verb: str, body: dict[str, Any], token: str | None = None) -> Any:
    status, reply = server.post(f"/v1/{verb}", body, token=token)
    assert status == 200, (verb, reply)
    return reply


def text_of(page: Any) -> str:
    return str(page.inner_text("main"))


def refusal_code(page: Any) -> str:
    return str(page.inner_text(".error-code"))
