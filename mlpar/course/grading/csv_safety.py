"""Student-controlled text, made safe to open: in a spreadsheet, and in the instructor's terminal.

Names, file names and check messages come from students (a folder name, an ``AssertionError`` a
solution raised). Two things are done to every such field before it is written:

* :func:`printable` replaces control characters (C0, DEL, C1: ANSI escape sequences that set a
  terminal's title, clear its screen or write its clipboard; bidirectional overrides that make a
  name read backwards) by ``?``. It is applied once, where the text enters the grades, so the
  CSV, the summary, the feedback and the terminal all show the same characters.
* :func:`cell` neutralises spreadsheet formulas (OWASP's rule for CSV injection): a field that
  starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading ``'``, so
  Excel, LibreOffice and Google Sheets show it as text. A field that already starts with ``'``
  gets one too, which makes the encoding exactly reversible: :func:`uncell` gives back the text,
  so ``--resume`` reads the same student names it wrote.
"""

from __future__ import annotations

import re
import unicodedata

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "'")
# C0 controls except none, DEL, C1 controls, and the bidirectional formatting characters
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text, limit: int | None = None) -> str:
    """``text`` with every control character replaced by ``?`` (and at most ``limit`` characters)."""
    text = _CONTROL.sub("?", str(text))
    text = "".join("?" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)  # lone surrogates
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def cell(text) -> str:
    """A CSV field a spreadsheet shows as text, never runs as a formula."""
    text = str(text)
    return "'" + text if text.startswith(_FORMULA_START) else text


def uncell(text: str) -> str:
    """The text :func:`cell` was given."""
    return text[1:] if text.startswith("'") else text


def normal_name(text: str) -> str:
    """A name as one student: Unicode NFC, whitespace collapsed and trimmed, printable."""
    text = unicodedata.normalize("NFC", str(text))
    return printable(" ".join(text.split()))
