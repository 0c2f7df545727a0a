"""Terminal noise, removed in one place before any line is matched.

Every line matcher (the boot watcher's fatal signatures, the ATOM log parser, the amd-smi, ubench07
and benchmark parsers) calls `clean` (one line) or `clean_text` (a whole output) first: ANSI escape
sequences (colour, cursor movement, OSC titles) are dropped and a carriage return ends a line as
`tr '\\r' '\\n'` would make it (tqdm redraws its bar with bare CRs; CRLF files end lines with one).
Imports nothing from the package.
"""
from __future__ import annotations

import re

# CSI (ESC [ ... final byte), OSC (ESC ] ... BEL or ESC \), and two-byte escapes (ESC x).
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text) if ("\x1b" in text or "\x9b" in text) else text


def clean_text(text: str) -> str:
    """A whole output: ANSI removed, CRLF and bare CR turned into LF."""
    text = strip_ansi(text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def clean(line: str) -> str:
    """One physical line: ANSI removed, the trailing CR/LF dropped, and a CR inside the line (a
    tqdm redraw) turned into a space, so no text is lost and the line keeps its number (as grep -n
    and sed -n count lines)."""
    if "\x1b" not in line and "\r" not in line and "\x9b" not in line:
        return line[:-1] if line.endswith("\n") else line
    line = strip_ansi(line).rstrip("\r\n")
    if "\r" in line:
        line = " ".join(p for p in line.split("\r") if p)
    return line


def split_lines(text: str) -> list[str]:
    """clean_text, then lines."""
    return clean_text(text).split("\n")


def ended_lines(text: str) -> list[str]:
    """The lines of an output that were ended: a last line without its newline (the process was
    killed mid-write, the output cut short) is dropped, since half a line is not what the tool
    said (`via P2P/` cut from `via P2P/CUMEMMNNVL`)."""
    return text.split("\n")[:-1]
