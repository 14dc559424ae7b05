"""What the documentation's generators share (``registry_tables.py``, ``flag_tables.py``):
filling the marked blocks of the pages with what a generator renders, and rewriting or
checking every page."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

DOCS = Path(__file__).resolve().parent


def fill_blocks(
    page: str, block: re.Pattern, found: dict[str, str], layout: Callable[[str], str]
) -> str:
    """``page`` with every match of ``block`` (groups: its opening marker, the name, the old
    content, its closing marker) holding ``layout`` of the table ``found`` has for the name."""

    def fill(match: re.Match) -> str:
        if match[2] not in found:
            raise SystemExit(f"unknown block {match[2]!r}: {sorted(found)}")
        return f"{match[1]}{layout(found[match[2]])}{match[4]}"

    return block.sub(fill, page)


def rewrite_pages(render: Callable[[str], str], check: bool, command: str) -> None:
    """Rewrite every page as ``render`` gives it, or with ``check`` exit 1 naming the pages
    that differ (``command`` is what rewrites them)."""
    stale = []
    for path in sorted(DOCS.glob("*.md")):
        page = path.read_text()
        new = render(page)
        if new != page:
            stale.append(path.name)
            if not check:
                path.write_text(new)
    if check and stale:
        sys.exit(f"not what the generator renders: {', '.join(stale)} ({command})")
    print(f"{'stale' if check else 'rewrote'}: {', '.join(stale) or 'nothing'}")
