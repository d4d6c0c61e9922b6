"""The Jinja environment the exporters render their templates with (layout only)."""

from __future__ import annotations

import os
from functools import lru_cache

import jinja2

TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    # StrictUndefined: a missing value is a bug in the exporter, never an empty string in the file
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=False,
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                              trim_blocks=True, lstrip_blocks=True)


def render_template(name: str, context: dict) -> str:
    return environment().get_template(name).render(**context)
