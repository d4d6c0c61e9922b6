"""`--format osaca`: the OSACA exporter (osaca.py) as the export command offers it."""

from __future__ import annotations

from pmpredict.exporters.exporter import Exporter, no_arguments


def export(model, path, args, source):
    # deferred: the renderer brings jinja2 and the templates, paid only when exporting
    from pmpredict.exporters.osaca import export_osaca
    return export_osaca(model, path, source=source)


OSACA = Exporter("osaca", "an OSACA machine file (YAML)", no_arguments, export)
