"""Reading and writing the files a command names, with errors that locate the problem.

* read_text: strict UTF-8; a file that is not is an InputError at the first bad byte.
* check_output: before any work, that OUT can be written (its directory exists and is
  writable, OUT is not a directory), so a long run never fails at its last step.
* write_atomic: a temporary file in the target's directory renamed over the target, so an
  interrupted or failing write leaves the previous file intact and no temporary behind.
"""

from __future__ import annotations

import os
import tempfile

from pmpredict.errors import InputError, text_position


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# new files get the permissions open() would give them (mkstemp makes them private)
_FILE_MODE = 0o666 & ~_umask()


def read_bytes(path) -> bytes:
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        raise InputError(path, "cannot read: no such file") from None
    except IsADirectoryError:
        raise InputError(path, "cannot read: a directory, not a file") from None
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from None


def decode_utf8(data: bytes, path) -> str:
    """`data` as text; InputError at the line and column of the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        good = data[:exc.start].decode("utf-8")
        line, column = text_position(good, len(good))
        hint = " (UTF-16?)" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        raise InputError(os.fspath(path), f"not UTF-8 text{hint}: byte "
                                          f"{data[exc.start]:#04x} cannot be decoded",
                         line, column) from None


def read_text(path) -> str:
    """A UTF-8 text file (a leading byte-order mark is dropped)."""
    text = decode_utf8(read_bytes(path), path)
    return text[1:] if text.startswith("\ufeff") else text


def check_output(path, what: str = "output") -> None:
    """InputError unless `path` can be written: checked before any work is done."""
    path = os.fspath(path)
    if not path:
        raise InputError("<command line>", f"the {what} file name is empty")
    if os.path.isdir(path):
        raise InputError(path, f"{what} is a directory, not a file")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise InputError(path, f"cannot write the {what}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InputError(path, f"cannot write the {what}: directory {directory} is not writable")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise InputError(path, f"cannot write the {what}: the file is read-only")


def write_atomic(path, content, what: str = "output") -> None:
    """Write `content` (str: UTF-8 text; bytes; or a callable taking a binary file) to `path`
    through a temporary file renamed over it; an OSError is an InputError naming `path`."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                                   dir=directory)
    except OSError as exc:
        raise InputError(path, f"cannot write the {what}: {exc.strerror or exc}") from None
    try:
        os.chmod(tmp, _FILE_MODE)
        with os.fdopen(fd, "wb") as fh:
            if callable(content):
                content(fh)
            else:
                fh.write(content.encode("utf-8") if isinstance(content, str) else content)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise InputError(path, f"cannot write the {what}: {exc.strerror or exc}") from None
        raise
