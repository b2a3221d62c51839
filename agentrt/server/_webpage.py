"""The built-in web page: its HTML, with the libraries it uses inlined, and its CSP.

``page.html`` loads two vendored libraries, ``static/marked.umd.js`` (markdown) and
``static/purify.min.js`` (DOMPurify, which sanitizes what marked makes), with
``<script src="static/NAME"></script>`` tags. The server inlines them, so that the
Content-Security-Policy can allow exactly the page's scripts by their hashes (no
``'self'``, no ``'unsafe-inline'``) and the page needs no second request, which a
server with a token would have to let through without one. ``static/package.json``
and its lockfile record the versions and re-fetch them (``npm ci && npm run vendor``).
"""

from __future__ import annotations

import hashlib
import re
from base64 import b64encode
from importlib import resources
from importlib.resources.abc import Traversable

__all__ = ("page_and_policy",)

_VENDORED = re.compile(r'<script src="static/([\w.-]+)"></script>')
# A source map is for a developer's tools, and would be fetched from the page's path.
_SOURCE_MAP = re.compile(r"^//# sourceMappingURL=.*$", flags=re.MULTILINE)


def _files() -> Traversable:
    return resources.files("agentrt.server")


def _inlined(match: re.Match[str]) -> str:
    name = match.group(1)
    code = _files().joinpath("static", name).read_text(encoding="utf-8")
    if "</script" in code.lower():
        # The HTML parser would end the script there: refuse rather than serve a broken page.
        raise ValueError(f"static/{name} cannot be inlined: it contains '</script'")
    return f"<script>{_SOURCE_MAP.sub('', code)}</script>"


def page_and_policy() -> tuple[str, str]:
    """The page's HTML and a Content-Security-Policy allowing exactly its own code."""
    template = _files().joinpath("page.html").read_text(encoding="utf-8")
    html = _VENDORED.sub(_inlined, template)

    def hashes(tag: str) -> str:
        blocks = re.findall(rf"<{tag}>(.*?)</{tag}>", html, flags=re.DOTALL)
        return " ".join(
            f"'sha256-{b64encode(hashlib.sha256(b.encode()).digest()).decode()}'" for b in blocks
        )

    # Hashes rather than 'unsafe-inline': should model output ever reach the page as
    # markup that the sanitizer let through, the browser still runs no script but the
    # page's own. img-src data: only: an answer cannot make the page load (and so send
    # anything to) another address through an image.
    policy = (
        f"default-src 'none'; script-src {hashes('script')}; style-src {hashes('style')}; "
        "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    )
    return html, policy
