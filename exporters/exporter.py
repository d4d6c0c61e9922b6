"""What an exporter registers (registry.py lists them): its `--format` name, its options, its run.

Apart from registry.py because the modules registry.py imports build one (no import cycle).
Nothing here may be slow to import: every `pmpredict` call builds the export command's parser
from the registered exporters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Exporter:
    name: str                       # the `--format` value
    description: str                # one line, a noun phrase: "an OSACA machine file (YAML)"
    # adds the exporter's own options (flags, defaults, help, validation) to the argparse parser
    add_arguments: Callable[[object], None]
    # (model, output path, parsed arguments, source: how the command line named the model)
    #   -> the result the export view renders (common.ExportResult)
    export: Callable[..., object]


def no_arguments(parser) -> None:
    """add_arguments of an exporter that has no options of its own."""
