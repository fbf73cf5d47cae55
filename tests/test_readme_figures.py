"""Every measured figure the README quotes from a committed run is in that run's file.

The README cites its evidence (``docs/runs/<file>.txt``, backticked or linked); a figure retyped by hand, or left
behind when the run was redone, is caught here rather than by a reader. The rule, kept simple on purpose:

- **What is checked**: each paragraph or list item that cites at least one ``docs/runs/*.txt`` file. A paragraph
  ending with a colon also owns the fenced block or table right after it (the output it introduces). Every
  ``.txt`` file the paragraph cites is searched (a gate transcript under ``benchmarks/`` included); a figure
  may be in any of them.
- **What a figure is**: a number with a decimal point (``0.258``), a thousands separator (``7,792``) or a unit
  (``93%``, ``8.5x``, ``50 ms``, ``134 s``, ``images/s``, ``MiB``); a range such as ``88-101%`` or
  ``1,257-1,378 images/s`` gives both ends. Plain integers (counts of steps, workers, rounds, exit codes, dates)
  are not figures, nor is anything inside inline code (names and commands) or a link's target, nor a
  version-like token (``3.11.2``).
- **What matches**: the same number in a cited file, compared as text after dropping thousands separators and
  the sign, so with the same number of decimals (``0.490`` is not ``0.49``, ``84%`` is not ``83.9%``); a
  percentage also matches the 0-1 share printed with two more decimals (``55%`` from ``0.55``, ``91.8%`` from
  ``0.918``). The unit is not compared.

Quotes that are true but fail that rule (a figure rounded from the file, a rule's threshold rather than a
measurement) are listed in :data:`EXEMPT`, each with its reason; an entry that no longer fails must be removed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RUN_FILE = re.compile(r"docs/runs/[\w.-]+\.txt")
CITED_TXT = re.compile(r"(?<![\w/.-])(?:[\w.-]+/)+[\w.-]+\.txt\b")
NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
FIGURE = re.compile(
    rf"(?<![\w.,])[+-]?(?P<first>{NUMBER})(?:-(?P<last>{NUMBER}))?"
    r"(?P<unit>%|x\b|\s?(?:images/s|ms|MiB|s)\b)?(?![\w])(?!\.\d)")
FILE_NUMBER = re.compile(r"(?<![A-Za-z_.\d])\d+(?:\.\d+)?")
THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")

# (the paragraph's first words, the figure as quoted): why it is quoted although the cited file does not print it.
EXEMPT: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Quote:
    """One checked paragraph: its text, its first words (for messages) and the files it cites."""

    text: str
    start: str
    files: tuple[str, ...]


def blocks(markdown: str) -> list[str]:
    """Paragraphs, list items, fenced blocks and tables, in order; a fenced block is one block, blank lines and all."""
    out: list[str] = []
    current: list[str] = []
    fenced = False

    def flush() -> None:
        if current:
            out.append("\n".join(current))
            current.clear()

    for line in markdown.splitlines():
        if line.startswith("```"):
            if not fenced:
                flush()
            current.append(line)
            fenced = not fenced
            if not fenced:
                flush()
        elif fenced:
            current.append(line)
        elif not line.strip():
            flush()
        else:
            in_table = bool(current) and current[0].startswith("|")
            if line.startswith(("- ", "* ", "#")) or line.startswith("|") != in_table:
                flush()  # a list item, a heading, or a table's start or end begins a block
            current.append(line)
    flush()
    return out


def quotes(markdown: str) -> list[Quote]:
    """The paragraphs that cite a ``docs/runs`` file, each with the block it introduces (a colon at its end)."""
    parts = blocks(markdown)
    out = []
    for i, part in enumerate(parts):
        if part.startswith(("```", "|")) or not RUN_FILE.search(part):
            continue
        text = part
        if part.rstrip().endswith(":") and i + 1 < len(parts) and parts[i + 1].startswith(("```", "|")):
            text += "\n" + parts[i + 1]
        files = tuple(dict.fromkeys(CITED_TXT.findall(part)))
        out.append(Quote(text, " ".join(part.split()[:6]), files))
    return out


def prose(text: str) -> str:
    """The text without what is not a figure: link targets and inline code (fenced blocks are kept whole)."""
    kept = []
    for chunk in re.split(r"(```.*?```)", text, flags=re.DOTALL):
        if not chunk.startswith("```"):
            chunk = re.sub(r"\]\([^)]*\)", "]", chunk)
            chunk = re.sub(r"`[^`\n]*`", " ", chunk)
        kept.append(chunk)
    return "".join(kept)


def figures(text: str) -> list[tuple[str, str, str]]:
    """(figure, number, unit) for each figure in ``text`` by the rule in the module docstring; the figure is the
    number with its unit (``88%`` and ``101%`` from ``88-101%``), as messages and :data:`EXEMPT` name it."""
    found = []
    for m in FIGURE.finditer(prose(text)):
        unit = (m.group("unit") or "").strip()
        for number in filter(None, (m.group("first"), m.group("last"))):
            if unit or "." in number or "," in number:
                found.append((number + ("" if unit in ("", "%", "x") else " ") + unit, number, unit))
    return found


def file_numbers(path: Path) -> set[str]:
    return set(FILE_NUMBER.findall(THOUSANDS.sub("", path.read_text())))


def matches(number: str, unit: str, numbers: set[str]) -> bool:
    plain = number.replace(",", "")
    if plain in numbers:
        return True
    if unit == "%":
        decimals = len(plain.partition(".")[2])
        return f"{float(plain) / 100:.{decimals + 2}f}" in numbers
    return False


def mismatches(markdown: str) -> list[tuple[Quote, str]]:
    """(paragraph, figure as quoted) for every figure none of the paragraph's cited files holds."""
    out = []
    for quote in quotes(markdown):
        numbers: set[str] = set()
        for name in quote.files:
            if (ROOT / name).is_file():
                numbers |= file_numbers(ROOT / name)
        out += [(quote, shown) for shown, number, unit in figures(quote.text) if not matches(number, unit, numbers)]
    return out


def test_every_cited_run_file_exists() -> None:
    missing = sorted({f for q in quotes(README.read_text()) for f in q.files if not (ROOT / f).is_file()})
    assert not missing, f"README.md cites run files that are not committed: {missing}"


def test_every_figure_the_readme_quotes_is_in_the_run_it_cites() -> None:
    found = mismatches(README.read_text())
    new = [f"  {shown!r} in the paragraph starting {q.start!r}: not in {', '.join(q.files) or 'any file'}"
           for q, shown in found if (q.start, shown) not in EXEMPT]
    assert not new, "figures not found in the run files their paragraph cites (module docstring: the rule):\n" + \
        "\n".join(new)
    stale = sorted(set(EXEMPT) - {(q.start, shown) for q, shown in found})
    assert not stale, f"exemptions that no longer fail; remove them from EXEMPT: {stale}"


def test_the_rule_reads_figures_ranges_shares_and_leaves_names_alone() -> None:
    text = ("Measured 134 s at 1,257-1,378 images/s, 93% (rounds 88-101%), 0.258 ms and 8.5x on 2 cores in 5 rounds"
            " with Python 3.11.2 on 2026-11-23, `simplejpeg-w2 0.5`, [docs](docs/v1.5.md).")
    assert [(n, u) for _, n, u in figures(text)] == [
        ("134", "s"), ("1,257", "images/s"), ("1,378", "images/s"), ("93", "%"), ("88", "%"), ("101", "%"),
        ("0.258", "ms"), ("8.5", "x")]
    assert matches("1,257", "images/s", {"1257"}) and matches("55", "%", {"0.55"}) and matches("91.8", "%", {"0.918"})
    assert not matches("0.49", "", {"0.490"}) and not matches("84", "%", {"83.9"})
    cited = "From `docs/runs/a.txt` and [b](docs/runs/b.txt) and `benchmarks/gate_rates/c.gate.txt`:\n\n```\n1.5 s\n```"
    [quote] = quotes(cited)
    assert quote.files == ("docs/runs/a.txt", "docs/runs/b.txt", "benchmarks/gate_rates/c.gate.txt")
    assert [n for _, n, _ in figures(quote.text)] == ["1.5"]
