"""The web page's vendored libraries: pinned, licensed, inlined, or refused.

``agentrt/server/static`` holds marked and DOMPurify as published on npm, at the versions
its ``package.json`` pins (``npm ci && npm run vendor`` there fetches them again; the
browser session checks the files against what npm serves). The server inlines them
into the page, so that its CSP allows its scripts by their hashes alone.
"""

import json
import os
import shutil
import subprocess
from importlib import resources
from pathlib import Path

import pytest

from agentrt.server import _webpage as webpage
from agentrt.server._webpage import page_and_policy

STATIC = Path(str(resources.files("agentrt.server").joinpath("static")))


def test_the_vendored_files_are_the_pinned_versions_with_their_licences() -> None:
    pins = json.loads((STATIC / "package.json").read_text())["dependencies"]
    lock = json.loads((STATIC / "package-lock.json").read_text())["packages"]
    assert pins == {"dompurify": "3.4.18", "marked": "18.2.1"}
    for name, version in pins.items():
        assert lock[f"node_modules/{name}"]["version"] == version
    marked = (STATIC / "marked.umd.js").read_text()
    purify = (STATIC / "purify.min.js").read_text()
    assert f"marked v{pins['marked']} - a markdown parser" in marked.splitlines()[1]
    assert f"DOMPurify {pins['dompurify']} |" in purify.splitlines()[0]
    assert "Copyright (c) 2018+, MarkedJS" in (STATIC / "LICENSE.marked").read_text()
    assert "Apache License" in (STATIC / "LICENSE.dompurify").read_text()
    assert "Mozilla Public License" in (STATIC / "LICENSE-MPL.dompurify").read_text()


def test_the_page_inlines_them_without_their_source_maps() -> None:
    html, _ = page_and_policy()
    assert '<script src="static/' not in html
    assert "sourceMappingURL" not in html
    assert html.count("<script>") == 3


def test_a_library_that_would_end_its_script_early_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "static").mkdir()
    (tmp_path / "page.html").write_text('<script src="static/bad.js"></script>')
    (tmp_path / "static" / "bad.js").write_text('var s = "</SCRIPT><b>";')
    monkeypatch.setattr(webpage, "_files", lambda: tmp_path)
    with pytest.raises(ValueError, match=r"static/bad\.js cannot be inlined: it contains"):
        page_and_policy()


VENDORED = (
    "marked.umd.js",
    "purify.min.js",
    "LICENSE.marked",
    "LICENSE.dompurify",
    "LICENSE-MPL.dompurify",
)


@pytest.mark.skipif(
    os.environ.get("AGENTRT_BROWSER") != "1",
    reason="fetches from npm: run by nox -s browser (AGENTRT_BROWSER=1), with npm installed",
)
def test_the_vendored_files_are_what_npm_serves_for_the_lockfile(tmp_path: Path) -> None:
    npm = shutil.which("npm")
    assert npm is not None, "npm is needed (apt-get install npm; .ci/run does)"
    for name in ("package.json", "package-lock.json"):
        shutil.copy(STATIC / name, tmp_path / name)
    quiet = ["--no-audit", "--no-fund", "--ignore-scripts"]
    subprocess.run([npm, "ci", *quiet], cwd=tmp_path, check=True, capture_output=True)
    subprocess.run([npm, "run", "vendor"], cwd=tmp_path, check=True, capture_output=True)
    for name in VENDORED:
        assert (tmp_path / name).read_bytes() == (STATIC / name).read_bytes(), name
