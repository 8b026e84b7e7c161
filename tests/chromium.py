"""A real headless Chromium (Debian's ``chromium``) driven over the DevTools protocol: open a page,
record every network request and console message, measure elements, take a screenshot."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--remote-allow-origins=*",
)


def binary() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("Debian's chromium is not installed (scripts/test installs it)")
    return found


class Page:
    def __init__(self, browser: Browser, session: str) -> None:
        self.b = browser
        self.session = session

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.b.call(method, params, self.session)

    def eval(self, expr: str) -> Any:
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True})
        if "exceptionDetails" in r:
            raise AssertionError(f"page script failed: {r['exceptionDetails']}")
        return r["result"].get("value")

    def events(self, method: str) -> list[dict[str, Any]]:
        return [e["params"] for e in self.b.events if e.get("method") == method and e.get("sessionId") == self.session]

    def problems(self) -> list[str]:
        """Console errors, uncaught exceptions and log entries of level error (a CSP refusal is one)."""
        out = [f"console.{p['type']}: {p.get('args')}" for p in self.events("Runtime.consoleAPICalled") if p["type"] in ("error", "assert")]
        out += [f"exception: {p['exceptionDetails']}" for p in self.events("Runtime.exceptionThrown")]
        out += [f"log {p['entry']['level']}: {p['entry']['text']}" for p in self.events("Log.entryAdded") if p["entry"]["level"] == "error"]
        return out

    def requests(self) -> list[str]:
        return [p["request"]["url"] for p in self.events("Network.requestWillBeSent")]

    def screenshot(self, path: Path, width: int = 1200) -> None:
        height = int(self.eval("document.documentElement.scrollHeight"))
        self.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        shot = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        path.write_bytes(base64.b64decode(shot["data"]))


class Browser:
    def __init__(self, tmp: Path) -> None:
        import websocket

        profile = tmp / "chromium-profile"
        profile.mkdir(parents=True, exist_ok=True)
        (profile / "DevToolsActivePort").unlink(missing_ok=True)  # a reused profile's is stale
        self.proc = subprocess.Popen(
            [binary(), *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                pytest.fail("chromium did not open its DevTools port")
            time.sleep(0.05)
        port, path = port_file.read_text().splitlines()[:2]
        try:
            self.ws = websocket.create_connection(f"ws://127.0.0.1:{port}{path}", timeout=60, suppress_origin=True)
        except OSError:
            self.close()
            raise
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session is not None:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        while True:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                return dict(reply.get("result") or {})
            self.events.append(reply)

    def wait_for(self, method: str, session: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        self.ws.settimeout(timeout)
        while not any(e.get("method") == method and e.get("sessionId") == session for e in self.events):
            if time.monotonic() > deadline:
                raise AssertionError(f"no {method} within {timeout} s")
            self.events.append(json.loads(self.ws.recv()))

    def open(self, url: str, width: int = 1200, height: int = 900) -> Page:
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        for domain in ("Network", "Runtime", "Log", "Page"):
            page.call(f"{domain}.enable")
        page.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        page.call("Page.navigate", {"url": url})
        self.wait_for("Page.loadEventFired", session)
        time.sleep(0.3)  # late console messages or requests, if any
        page.eval("0")  # drain what arrived meanwhile
        return page

    def close(self) -> None:
        ws = getattr(self, "ws", None)
        if ws is not None:
            ws.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
