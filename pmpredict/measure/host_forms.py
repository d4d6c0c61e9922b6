"""Form lists: the packaged host list and user-supplied lists (one form string per line)."""

from __future__ import annotations

import os
from importlib import resources

from pmpredict.isa import semantics
from pmpredict.errors import InputError, find_line
from pmpredict.formats.files import read_text
from pmpredict.isa.forms import parse_form

HOST_FORMS_FILE = "forms_host.txt"
# packaged lists by name: `--forms catalogue` (real code's forms, benchmarks/host_catalogue.py),
# `--forms host` (the 125 forms of the zen4-vm model), `--forms core` (the host model's core)
PACKAGED = {"catalogue": "forms_catalogue.txt", "host": HOST_FORMS_FILE, "core": "forms_core.txt"}


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
    """A form list from a file, or a packaged list by name (PACKAGED) if no such file exists."""
    if path in PACKAGED and not os.path.exists(path):
        return packaged_forms(path)
    text = read_text(path)
    forms = parse_form_list(text, path)
    if not forms:
        raise InputError(path, "no forms in the list", 1, 1)
    for form in forms:        # a line of junk is an error, not a form to measure
        if not semantics.get(semantics.isa_of_form(form)).form(form).known:
            raise InputError(path, f"{form!r} is not an instruction form pmpredict knows",
                             find_line(text, form))
    return forms


def packaged_forms(name: str) -> list[str]:
    """A form list shipped with pmpredict (x86-64, Intel operand order), by name."""
    text = resources.files(__package__).joinpath(PACKAGED[name]).read_text()
    return parse_form_list(text, PACKAGED[name])


def default_forms() -> list[str]:
    """The host form list shipped with pmpredict (the 125 forms of the zen4-vm model)."""
    return packaged_forms("host")
