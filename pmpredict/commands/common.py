"""Helpers shared by the subcommands (argument wiring and output, no algorithms)."""

from __future__ import annotations

import argparse
import math
import os
import shlex
import sys

from pmpredict.errors import InputError
from pmpredict.formats.jsonio import dumps, write_json
from pmpredict.model.validate import name_problem, number_problem, r_max_problem


def load_model(spec: str):
    """The model a command line names: a file, a built-in name, or "host" (this machine's
    model as far as it has been measured)."""
    # deferred: the model loaders and this machine's model (~30 ms) only when a command loads a model
    from pmpredict.formats.model_files import load_model as load
    from pmpredict.host.model import load_cached
    return load(spec, host=load_cached)


def add_model_arguments(p) -> None:
    """--model M --experiments E [--json]: the arguments simulate and evaluate share."""
    p.add_argument("--model", "--mapping", "-m", dest="model", required=True, metavar="M",
                   help="model file (native JSON, PMEvo Mapping3, OSACA YAML) or built-in name "
                        "(--mapping is the old name)")
    p.add_argument("--experiments", "-e", required=True, metavar="E", help="experiment file")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def training_saver(out_dir: str, report=None):
    """on_set for host.training.measure_training_set: each phase written to OUT_DIR/<name>.json
    as soon as it is measured (atomically), then report(path, result) if given."""
    def save(name: str, result) -> None:
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, f"{name}.json")
        write_json(path, result.to_json(), "measurements")
        if report:
            report(path, result)
    return save


def print_json(data) -> None:
    """JSON on stdout; never NaN or Infinity (a view turns a missing number into null)."""
    sys.stdout.write(dumps(data))


def emit(view, result, as_json: bool, **options) -> None:
    """Print a command's result through its view (pmpredict/views/<command>.py)."""
    if as_json:
        print_json(view.json(result, **options))
    else:
        sys.stdout.write(view.text(result, **options))


# --- argument types: a bad value is an argparse error (one line, exit 2) before any work ---

def int_in(low: int, high: int | None = None):
    """argparse type: an integer in [low, high]."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low or (high is not None and value > high):
            bound = f">= {low}" if high is None else f"between {low} and {high}"
            raise argparse.ArgumentTypeError(f"must be {bound}, not {value}")
        return value
    return parse


def float_in(low: float, high: float = math.inf, low_open: bool = False):
    """argparse type: a finite number in [low, high] ((low, high] with low_open)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        why = number_problem(value, low, high, low_open=low_open)
        if why:
            raise argparse.ArgumentTypeError(why)
        return value
    return parse


def r_max_value(text: str) -> float:
    """argparse type: a peak rate R_max (instructions per cycle)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    why = r_max_problem(value)
    if why:
        raise argparse.ArgumentTypeError(why)
    return value


def name_value(text: str) -> str:
    """argparse type: a model name (non-empty printable text)."""
    why = name_problem(text)
    if why:
        raise argparse.ArgumentTypeError(why)
    return text


def resume_command(argv: list[str], checkpoint: str) -> str:
    """The command line that continues this run: the same arguments, --resume CKPT."""
    args, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--resume":
            skip = True
        elif not a.startswith("--resume="):
            args.append(a)
    return "pmpredict " + shlex.join(args + ["--resume", checkpoint])


def add_dask_arguments(p, what: str, jobs_help: str | None = None) -> None:
    """--dask [ADDRESS] (what runs there) and, unless the command has its own, --jobs N."""
    p.add_argument("--dask", nargs="?", const="", metavar="ADDRESS",
                   help=f"{what} on a Dask cluster: the scheduler at ADDRESS (e.g. "
                        "tcp://host:8786), or without one a local cluster of --jobs processes "
                        "(default: one per CPU)")
    if jobs_help is not None:
        p.add_argument("--jobs", "-j", type=int_in(1, 1024), metavar="N", help=jobs_help)


def open_cluster(address: str | None, jobs: int | None):
    """The cluster --dask asks for: the scheduler at `address` ("" or None: a local cluster of
    `jobs` processes, default one per CPU); a scheduler that cannot be reached is a located
    error."""
    # deferred: dask.distributed (~1 s) only with --dask
    from pmpredict.cluster import Cluster
    try:
        return Cluster(address or None, jobs or os.cpu_count() or 1)
    except (OSError, TimeoutError) as exc:
        raise InputError(address or "<local cluster>",
                         f"cannot reach the Dask scheduler: {exc}") from None
