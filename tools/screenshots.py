"""Pictures of the memory lens: ``make screenshots`` (or ``python tools/screenshots.py DIR``).

Fills a throwaway memory with a small example, starts a real ``recuerdo serve`` on it, and
photographs the main pages with Debian's chromium driven by Playwright (no browser download,
no network). The pictures land in DIR (``docs/screenshots`` by default).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import recuerdo

# Debian's headless build where it is installed; the browser tests use these two too.
HEADLESS_SHELL = "/usr/bin/chromium-headless-shell"
CHROMIUM = os.environ.get("RECUERDO_CHROMIUM") or (
    HEADLESS_SHELL if Path(HEADLESS_SHELL).exists() else "/usr/bin/chromium"
)
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PAGES = [
    ("memories", "/"),
    ("overview", "/lens/overview?memory=demo"),
    ("note", "/m/{note}?memory=demo"),
    ("search", "/lens/search?memory=demo&q=deploy"),
    ("entity", "/lens/entity?memory=demo&name=Acme"),
    ("forget", "/lens/forget?memory=demo&id={doomed}"),
    ("journal", "/lens/journal?memory=demo"),
    ("audit", "/lens/audit?memory=demo"),
]


def fill(base: Path) -> dict[str, int]:
    memory = recuerdo.open("demo", base_dir=base, embedder="none")
    planner = memory.agent("planner")
    memory.remember("preference", "Prefers answers in British English", ["style"])
    memory.remember("rule", "Never deploy on Fridays")
    planner.remember("decision", "Ship the lens with the 0.2 release")
    note = memory.save(
        "Deploy checklist",
        "# Deploy\n\n1. Run `make test`.\n2. Tag the release.\n\n## Rollback\n\n"
        "Revert the tag, then see [[Incident notes]].",
        kind="decision",
        scope="project:shop",
        key="deploy",
    )["id"]
    memory.save("Incident notes", "The March outage came from a stale cache.", kind="learning")
    planner.edit(note, "append", "3. Announce it in #releases.")
    planner.edit(note, "find_replace", "Tag the release and push the tag.", find="Tag the release.")
    with contextlib.suppress(recuerdo.Conflict):  # kept as a conflict revision beside the text
        planner.save(
            "Deploy checklist",
            "Deploy whenever.",
            key="deploy",
            scope="project:shop",
            kind="decision",
            expected_version=1,
        )
    memory.remember_about("user", "Likes short answers with code first", category="style")
    memory.remember_about("user", "Works mostly on the shop backend", category="work")
    memory.mute("work")
    memory.create_progress("import", ["fetch", "parse", "load", "verify"])
    memory.complete_step("import", "fetch")
    memory.start_step("import", "parse")
    memory.add_rule("discount", "must", "discount <= 0.20")
    memory.remember_knowledge(
        content="Alice works at Acme. Acme is located in Lyon. Lyon is located in France.",
        facts={
            "entities": [
                {"name": "Alice", "type": "person"},
                {"name": "Acme", "type": "company"},
                {"name": "Lyon", "type": "city"},
                {"name": "France", "type": "country"},
            ],
            "relations": [
                {"source": "Alice", "target": "Acme", "type": "works_at"},
                {"source": "Acme", "target": "Lyon", "type": "located_in"},
                {"source": "Lyon", "target": "France", "type": "located_in"},
            ],
        },
        source="atlas.txt",
    )
    doomed = memory.remember("context", "Temporary wifi password rotation notes")
    memory.search("deploy")
    planner.search("cache outage")
    memory.close()
    return {"note": note, "doomed": doomed}


def serve(base: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "RECUERDO_STATE_DIR": str(base), "RECUERDO_EMBEDDER": "none"}
    command = [sys.executable, "-m", "recuerdo", "--memory", "demo", "serve", "--port", str(port)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=1):
                return process, url
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("the server did not start")


def main() -> None:
    from playwright.sync_api import sync_playwright

    target = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        ids = fill(Path(folder))
        process, url = serve(Path(folder))
        try:
            with sync_playwright() as driver:
                browser = driver.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                page = browser.new_page(viewport={"width": 1200, "height": 800})
                for name, path in PAGES:
                    page.goto(url + path.format(**ids))
                    page.screenshot(path=str(target / f"{name}.png"), full_page=True)
                    print(target / f"{name}.png")
                browser.close()
        finally:
            process.terminate()
            process.wait(timeout=30)


if __name__ == "__main__":
    main()
