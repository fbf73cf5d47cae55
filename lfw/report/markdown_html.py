"""The report's own Markdown (:mod:`lfw.report.page`'s sections) as HTML, through Python-Markdown.

Extensions ``tables``, ``fenced_code`` and ``toc`` (headings get the anchors the Markdown page's ``(#...)`` links
use). So that no text can inject HTML, raw HTML is not recognised (it is shown escaped, never passed through) and
a link or image keeps its target only when it is relative, an ``#anchor`` or http(s). List items hold blocks
indented by two spaces as GitHub reads them (the recommendation table sits in one), so the tab length is two.
"""

from __future__ import annotations

import html
import re
from xml.etree.ElementTree import Element

from markdown import Markdown
from markdown.extensions.toc import slugify
from markdown.treeprocessors import Treeprocessor

_SCHEME = re.compile(r"[^/?#]*:")  # what a browser reads as a scheme: anything before the first ':' not in a path


def slug(text: str) -> str:
    """A heading's anchor as ``toc`` makes it: ``Against the baseline`` -> ``against-the-baseline``."""
    return slugify(text, "-")


def safe_url(url: str) -> bool:
    """True when ``url`` is relative, an anchor or http(s), read as a browser does (entities decoded, control
    characters and blanks dropped); False for any other scheme (``javascript:``, ``data:``)."""
    target = re.sub(r"[\x00-\x20]", "", html.unescape(url)).lower()
    return _SCHEME.match(target) is None or target.startswith(("http:", "https:"))


class _Sanitize(Treeprocessor):
    """Drops each ``href`` or ``src`` that :func:`safe_url` refuses (a ``javascript:`` link keeps only its text),
    and the header row of a table whose header cells are all empty (a key-value table, ``| | |``)."""

    def run(self, root: Element) -> None:
        for el in root.iter():
            for attr in ("href", "src"):
                if attr in el.attrib and not safe_url(el.attrib[attr]):
                    del el.attrib[attr]
        for table in root.iter("table"):
            head = table.find("thead")
            if head is not None and not "".join(head.itertext()).strip():
                table.remove(head)


def to_html(text: str) -> str:
    """``text`` (Markdown) as an HTML fragment; every text escaped, raw HTML shown as text."""
    md = Markdown(extensions=["tables", "fenced_code", "toc"], extension_configs={"toc": {"marker": ""}},
                  tab_length=2, output_format="html")
    md.preprocessors.deregister("html_block")
    md.inlinePatterns.deregister("html")
    md.treeprocessors.register(_Sanitize(md), "sanitize", 1)
    return md.convert(text)
