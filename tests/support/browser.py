"""Debian's headless Chromium, as the HTML report tests open pages in it (scripts/test.sh installs it)."""

from __future__ import annotations

import shutil
import subprocess

# what a browser needs to run headless in a container with no network (Chromium's own background
# connections are refused here, and root needs --no-sandbox)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--hide-scrollbars", "--enable-logging=stderr", "--v=0"]


def chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    assert browser, "no chromium: scripts/test.sh installs Debian's (apt-get install chromium)"
    return subprocess.run([browser, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
                          capture_output=True, text=True, timeout=120)
