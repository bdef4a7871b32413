"""A file's bytes as text and back, and the style a file keeps.

Text is handed out as str with "\\n" line endings and no byte-order mark; bytes that are
not UTF-8 read as U+FFFD and are reported (`FileText.invalid_utf8`), never an error. A
file that has CRLF line endings or a BOM on disk keeps them on every rewrite and append,
and keeps its permission bits (SPEC §1's "\\n" is what new files get and what the prompt
reads). Hashes are sha256 of the text as read (UTF-8, "\\n" endings, no BOM), or of the raw
bytes for a file that is not UTF-8.
"""

from __future__ import annotations

import hashlib
import os
import stat as stat_module
from pathlib import Path
from typing import NamedTuple

from memory.errors import InvalidInput

ABSENT = "absent"  # the hash of a file that does not exist
BOM = b"\xef\xbb\xbf"
STYLE_PEEK_BYTES = 64 * 1024  # how much of a file is read to learn its line endings


class FileText(NamedTuple):
    """One file as read: `text` with "\\n" line endings and no BOM (bytes that are not
    UTF-8 as U+FFFD), its hash, and what the file looks like on disk."""

    text: str
    hash: str
    invalid_utf8: bool  # some bytes were not UTF-8 and read as U+FFFD
    bom: bool  # the file starts with a UTF-8 byte-order mark
    crlf: bool  # its line endings are CRLF (judged by its first line)


# A file that does not exist, as an editor opens it: no text, and the hash ABSENT (so a
# save onto a file created meanwhile is a conflict too).
NO_FILE = FileText("", ABSENT, False, False, False)


def hash_text(text: str | None) -> str:
    """sha256 of the text, or ABSENT for a file that does not exist."""
    if text is None:
        return ABSENT
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def decode_file(data: bytes) -> FileText:
    """The bytes of a whole file as read_file hands them out (text, hash, style)."""
    bom = data.startswith(BOM)
    body = data[len(BOM) :] if bom else data
    try:
        text = body.decode("utf-8")
        invalid = False
    except UnicodeDecodeError:
        text = body.decode("utf-8", errors="replace")
        invalid = True
    first = body.find(b"\n")
    crlf = first > 0 and body[first - 1 : first] == b"\r"
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    digest = hashlib.sha256(data).hexdigest() if invalid else hash_text(text)
    return FileText(text, digest, invalid, bom, crlf)


def decode(data: bytes) -> str:
    """Bytes of a memory file as text, as read() hands it out: "\\n" line endings, no
    BOM, bytes that are not UTF-8 as U+FFFD (without the hash read_file computes)."""
    if data.startswith(BOM):
        data = data[len(BOM) :]
    text = data.decode("utf-8", errors="replace")
    return text.replace("\r\n", "\n") if "\r" in text else text


class Style(NamedTuple):
    """How an existing file looks, kept by every rewrite and append."""

    mode: int  # permission bits to keep
    bom: bool
    crlf: bool
    size: int


def style_of(path: Path) -> Style | None:
    """How an existing file looks (mode, BOM, CRLF), from its first bytes; None when it
    does not exist. A symbolic link is not followed (None)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        return style_at(fd)[0]
    finally:
        os.close(fd)


def style_at(fd: int) -> tuple[Style, os.stat_result]:
    """The style of the open file (its mode, whether it starts with a BOM, whether its
    first line ends in CRLF, its size), and the stat it was read from."""
    st = os.fstat(fd)
    head = os.pread(fd, STYLE_PEEK_BYTES, 0)
    first = head.find(b"\n")
    crlf = first > 0 and head[first - 1 : first] == b"\r"
    return Style(stat_module.S_IMODE(st.st_mode), head.startswith(BOM), crlf, st.st_size), st


def normalised(text: str) -> str:
    """Text as the workspace stores and hands it out: "\\n" line endings, no leading BOM
    (whether a file has CRLF or a BOM is the file's property, kept on disk)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n") if "\r" in text else text


def encode(text: str, rel: str) -> bytes:
    """UTF-8 bytes of the text for `rel`; InvalidInput for text no file can hold."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (from JSON's "\ud800"): not text any file can hold.
        raise InvalidInput(
            f"The text for {rel} is not valid Unicode (a lone surrogate character)."
        ) from None


def encoded(text: str, style: Style | None, rel: str) -> bytes:
    """The bytes of normalised text in the file's style (CRLF, BOM); a new file's as is."""
    if style is not None and style.crlf:
        text = text.replace("\n", "\r\n")
    data = encode(text, rel)
    return BOM + data if style is not None and style.bom else data
