"""The built site as a reader sees it at 1280 px, in headless Chromium: no code block, table
or notebook cell needs horizontal scrolling, and no code in a table is cut inside a name.
Slow, and only where a ``chromium`` is installed (``apt-get install chromium``); the quick tier
checks the same by the pages' text (tests/test_docs.py)."""

import json
import re
import shutil
import subprocess

import pytest

from tests.docs_site import build_site

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("chromium") is None, reason="needs chromium"),
]
# Added to each page before Chromium loads it: what overflows its box, and code in a table
# that breaks inside a word, written into the page for --dump-dom.
PROBE = """<script>
window.addEventListener('load', function () {
  var found = [];
  var boxes = 'pre, pre > code, table, .md-typeset__table, .md-typeset__scrollwrap';
  document.querySelectorAll(boxes).forEach(function (e) {
    if (e.scrollWidth > e.clientWidth + 1) {
      found.push(['scrolls', e.tagName, (e.innerText || '').slice(0, 80)]);
    }
  });
  document.querySelectorAll('table code').forEach(function (e) {
    if (e.getClientRects().length > 1 && !/\\s/.test(e.innerText)) {
      found.push(['cut', e.tagName, e.innerText.slice(0, 80)]);
    }
  });
  document.body.setAttribute('data-layout', JSON.stringify(found));
});
</script>"""


def test_no_page_needs_horizontal_scrolling_at_1280_px(tmp_path):
    site = build_site(tmp_path / "site")
    pages = sorted(p for p in site.rglob("index.html") if "search" not in p.parts)
    # The probe itself: a copy of a page with a sample line of 200 characters must be caught.
    wide = site / "probe-check" / "index.html"
    wide.parent.mkdir()
    text = (site / "layers" / "index.html").read_text()
    wide.write_text(text.replace("<code>", "<code>" + "x = 1  # " + "w" * 190 + "\n", 1))
    assert "scrolls" in [kind for kind, *_ in layout_problems(wide)], "the probe misses it"
    problems = {str(p.relative_to(site).parent): layout_problems(p) for p in pages}
    problems = {page: found for page, found in problems.items() if found}
    assert len(pages) > 15 and problems == {}, problems


def layout_problems(page) -> list:
    """What overflows or is cut on ``page`` (an HTML file) at 1280 px."""
    page.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    command = ["chromium", "--headless", "--no-sandbox", "--disable-gpu"]
    command += ["--window-size=1280,900", "--virtual-time-budget=8000", "--dump-dom"]
    dom = subprocess.run(
        [*command, page.as_uri()], capture_output=True, text=True, timeout=120
    ).stdout
    found = re.search(r'data-layout="([^"]*)"', dom)
    assert found, f"{page}: the probe did not run"
    text = found[1].replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
    return json.loads(text.replace("&amp;", "&"))
