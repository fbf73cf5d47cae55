"""The pages' one section model and its two writers (:mod:`lfw.cli.sections`): what each writes for each block, the
anchors, and that the HTML writer escapes every text and drops unsafe link targets."""

from __future__ import annotations

import re

from lfw.cli.sections import (
    Bullets,
    Figure,
    Fold,
    Heading,
    Item,
    Para,
    Section,
    Table,
    html,
    inline,
    markdown,
    safe_url,
    slug,
)


def test_html_escapes_every_text_and_keeps_only_safe_links() -> None:
    fragment = inline("**a** `<b>` [x](javascript:void) [y](workers.png) *c* [z](java&#9;script:x) "
                      "[w](https://example.com/a) [v](#anchor) ![i](data:image/png,x) a <i>b</i> &")
    assert fragment.startswith("<strong>a</strong> <code>&lt;b&gt;</code> <a>x</a> ")
    assert '<a href="workers.png">y</a> <em>c</em> <a>z</a> <a href="https://example.com/a">w</a>' in fragment
    assert fragment.endswith('<a href="#anchor">v</a> <img alt="i"> a &lt;i&gt;b&lt;/i&gt; &amp;')
    assert "script:" not in fragment and "data:" not in fragment
    assert html([Para("<script>x</script>")]) == "<p>&lt;script&gt;x&lt;/script&gt;</p>"  # raw HTML shown as text
    nested = '<strong><code>&lt;b&gt;</code></strong> <a href="a.png"><strong>k</strong></a>'
    assert inline("**`<b>`** [**k**](a.png)") == nested
    assert [safe_url(u) for u in ("a/b.png", "#x", "http://h", "HTTPS://h", "JavaScript:x", " javascript:x",
                                  "java&#x09;script:x", "data:x", "mailto:x")] == [True] * 4 + [False] * 5


def test_every_text_of_every_block_is_escaped_in_html() -> None:
    hostile = "<script>alert(1)</script>"
    blocks = [Section(hostile, [Heading(hostile), Para(hostile, hostile), Table((hostile,), [(hostile,)]),
                                Bullets([hostile, Item(hostile, [Para(hostile)])]), Fold(hostile, [Para(hostile)]),
                                Figure(hostile, hostile, hostile, hostile)])]
    page = html(blocks)
    assert "<script>" not in page and "alert(1)</script>" not in page
    assert page.count("&lt;script&gt;") == 13  # every text but the figure's image (a quoted URL) and the anchor
    assert 'id="scriptalert1script"' in page  # the section's anchor, a slug of its title


def test_a_list_item_holds_its_table_in_both_writers() -> None:
    blocks = [Bullets(["first", Item("item:", [Table(("a", "n"), [("x", 1), ("p|q", 2)], right=(1,))]), "next"])]
    assert markdown(blocks) == ("- first\n- item:\n\n  | a | n |\n  |---|---:|\n  | x | 1 |\n  | p\\|q | 2 |\n\n"
                                "- next\n")
    fragment = html(blocks)
    assert fragment.count("<ul>") == 1 and fragment.count("<li>") == 3
    assert re.search(r"<li>item:\s*<table>.*</table></li>\s*<li>next</li>", fragment, re.S)
    assert '<th style="text-align: right;">n</th>' in fragment and '<td style="text-align: right;">1</td>' in fragment
    assert "<td>p|q</td>" in fragment  # a pipe is escaped for Markdown's table only


def test_a_key_value_table_has_no_header_row() -> None:
    table = Table(None, [("key", "value")])
    assert markdown([table]) == "| | |\n|---|---|\n| key | value |\n"
    assert "<thead>" not in html([table]) and "<td>key</td><td>value</td>" in html([table])


def test_sections_headings_paragraphs_and_folds() -> None:
    blocks = [Heading("lfw-bench report", 1), Section("Against the baseline", [Para("**ok**", "exit 0")]),
              Heading("Verdict per case"), Fold("every case", [Bullets(["`a`"])])]
    assert markdown(blocks) == ("# lfw-bench report\n\n## Against the baseline\n\n**ok**  \nexit 0\n\n"
                                "#### Verdict per case\n\n<details><summary>every case</summary>\n\n- `a`\n\n"
                                "</details>\n")
    fragment = html(blocks)
    assert '<section id="against-the-baseline">\n<h2>Against the baseline</h2>' in fragment
    assert "<p><strong>ok</strong><br>\nexit 0</p>" in fragment and "<h4>Verdict per case</h4>" in fragment
    assert "<details>" not in fragment and "<li><code>a</code></li>" in fragment  # shown open on the HTML page
    assert slug("Left out on this machine") == "left-out-on-this-machine" and slug("All cases!") == "all-cases"
    assert Section("Gate verdict", []).id == "gate-verdict"


def test_a_figure_shows_its_image_and_caption() -> None:
    shown = html([Figure("a b.png", "title", "**Title** ([PNG](a%20b.png))", "chart-a")])
    assert '<figure id="chart-a">\n<img src="a%20b.png" alt="title">' in shown
    assert '<figcaption><strong>Title</strong> (<a href="a%20b.png">PNG</a>)</figcaption>' in shown
    assert markdown([Figure("a b.png", "title", "caption", "chart-a")]) == "![title](a%20b.png)\n\ncaption\n"
