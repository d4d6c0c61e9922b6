"""Form lists: the packaged host list and user-supplied lists (one form string per line)."""

from __future__ import annotations

from importlib import resources

from ...errors import InputError
from ...forms import parse_form

HOST_FORMS_FILE = "forms_host.txt"


def parse_form_list(text: str, path: str = "<forms>") -> list[str]:
    """Form strings from a list: one per line, `#` comments and blank lines ignored."""
    forms, seen = [], set()
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            parse_form(line)
        except ValueError as exc:
            raise InputError(path, f"not a form string: {exc}", number, raw.find(line) + 1) from None
        if line not in seen:
            seen.add(line)
            forms.append(line)
    return forms


def load_form_list(path: str) -> list[str]:
    try:
        with open(path) as fh:
            text = fh.read()
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror}") from None
    forms = parse_form_list(text, path)
    if not forms:
        raise InputError(path, "no forms in the list", 1, 1)
    return forms


def default_forms() -> list[str]:
    """The host form list shipped with pmpredict (x86-64, Intel operand order)."""
    text = resources.files(__package__).joinpath(HOST_FORMS_FILE).read_text()
    return parse_form_list(text, HOST_FORMS_FILE)
