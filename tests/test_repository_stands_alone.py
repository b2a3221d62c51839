"""The repository stands alone: nothing in it refers to documents outside it."""

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Built from pieces, so that this file does not name them itself.
OUTSIDE = ("DESIGN" + ".md", "specs/" + "events.md", "stream" + "-events.md", "../" + "shared")


def tracked_text_files() -> list[Path]:
    try:
        listed = subprocess.run(
            ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    files = []
    for name in listed:
        path = ROOT / name
        if path.is_file() and b"\0" not in path.read_bytes()[:4096]:
            files.append(path)
    return files


def test_no_tracked_file_refers_to_a_document_outside_the_repository() -> None:
    files = tracked_text_files()
    assert files
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if any(name in line for name in OUTSIDE)
    ]
    assert offenders == []


def test_the_docs_the_readme_points_at_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    for doc in ("docs/events.md", "docs/stream.md"):
        assert doc in readme
        assert (ROOT / doc).is_file()
