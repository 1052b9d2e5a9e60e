"""A page opened in headless Chromium over the DevTools protocol: its console errors, its images,
a screenshot and whatever a script reads from it. For the tests of the pages we write.

    with Browser() as browser:            # pytest.skip()s with the reason when Chromium cannot run
        seen = browser.open(Path("audit.html"), "document.title")
    seen.errors, seen.images, seen.value, seen.screenshot (PNG bytes)
"""

from __future__ import annotations

import base64
import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")
IMAGES = "JSON.stringify([...document.images].map(i => [i.complete, i.naturalWidth, i.alt]))"


def chromium() -> str | None:
    return next((path for name in CANDIDATES if (path := shutil.which(name))), None)


@dataclass
class Seen:
    errors: list[str] = field(default_factory=list)  # console errors, uncaught exceptions, failed loads
    images: list[tuple[bool, int, str]] = field(default_factory=list)  # (complete, natural width, alt)
    value: object = None
    screenshot: bytes = b""


class Browser:
    def __init__(self, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self.binary = chromium()

    def __enter__(self) -> Browser:
        if self.binary is None:
            pytest.skip("no Chromium here (.ci/run installs Debian's chromium package; "
                        "apt-get install chromium): the page was not checked in a browser")
        try:
            from websockets.sync.client import connect  # noqa: F401
        except ImportError:
            pytest.skip("the websockets package is missing: no DevTools connection to Chromium")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.profile = tempfile.mkdtemp(prefix="chromium-")
        self.proc = subprocess.Popen(
            [self.binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-extensions", "--disable-background-networking", f"--remote-debugging-port={self.port}",
             f"--user-data-dir={self.profile}", "--window-size=1280,2000", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/version", timeout=1).read()
                return self
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    ended = self.proc.poll() is not None
                    err = self.proc.stderr.read().decode(errors="replace")[-500:] if ended else ""
                    self.__exit__(None, None, None)
                    pytest.skip(f"Chromium ({self.binary}) did not start: {err.strip() or 'no DevTools port'}")
                time.sleep(0.2)

    def __exit__(self, *exc) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)
        shutil.rmtree(self.profile, ignore_errors=True)

    def open(self, page: Path, expression: str = "null") -> Seen:
        """Load ``page`` (a file), wait for its load event, and return what was seen."""
        from websockets.sync.client import connect

        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/json/new?about:blank", method="PUT")
        target = json.loads(urllib.request.urlopen(request, timeout=10).read())
        seen, ids = Seen(), iter(range(1, 10**6))
        with connect(target["webSocketDebuggerUrl"], max_size=2**28) as ws:
            def call(method: str, **params):
                ident = next(ids)
                ws.send(json.dumps({"id": ident, "method": method, "params": params}))
                while True:
                    message = json.loads(ws.recv(timeout=self.timeout))
                    if message.get("id") == ident:
                        if "error" in message:
                            raise RuntimeError(f"{method}: {message['error']}")
                        return message.get("result", {})
                    note(message)

            def note(message: dict) -> None:
                method, params = message.get("method"), message.get("params", {})
                if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                    seen.errors.append(" ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
                elif method == "Runtime.exceptionThrown":
                    seen.errors.append(params["exceptionDetails"].get("text", "exception"))
                elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                    seen.errors.append(params["entry"].get("text", ""))
                elif method == "Page.loadEventFired":
                    seen.value = "loaded"

            for domain in ("Runtime", "Log", "Page"):
                call(f"{domain}.enable")
            call("Page.navigate", url=page.resolve().as_uri())
            deadline = time.monotonic() + self.timeout
            while seen.value != "loaded":
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{page} did not finish loading in {self.timeout} s")
                note(json.loads(ws.recv(timeout=self.timeout)))
            seen.images = [tuple(i) for i in json.loads(call("Runtime.evaluate", expression=IMAGES,
                                                             returnByValue=True)["result"]["value"])]
            seen.value = call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")
            shot = call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
            seen.screenshot = base64.b64decode(shot["data"])
        return seen
