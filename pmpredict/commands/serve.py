"""`pmpredict serve`: a resident predictor for editors and compiler explorers, JSON lines on
standard input and output (docs/SERVICE.md).

Models, their prepared predictors and the per-instruction work they memoise stay loaded
between requests, so a request costs the prediction alone. One request a line, one answer a
line, in order; a bad request gets an error answer and the service goes on. It ends at the
end of its input or on {"op": "shutdown"}.
"""

from __future__ import annotations

import json
import sys
import time

from pmpredict.commands.common import float_in
from pmpredict.errors import InputError

REQUEST_KEYS = {"id", "op", "text", "file", "path", "model", "syntax", "isa", "lines", "region",
                "format", "views", "costs"}
EXTRA_VIEWS = ("timeline", "bottlenecks")


def register(sub):
    p = sub.add_parser(
        "serve", help="answer predict requests as JSON lines on stdin/stdout (resident)",
        description="A resident predictor: each input line is a JSON request, e.g. "
                    '{"id": 1, "text": "vaddpd %ymm0, %ymm1, %ymm1\\n", "model": "skl"} or '
                    '{"id": 2, "file": "loop.s"}; each answer one JSON line {"id", "result"} '
                    '(the object `predict --json` prints, Fields\' costs with "costs": true; '
                    'with "format": "text" the text report as "text") or {"id", "error": {"path", "line", "column", '
                    '"message"}}. Models stay loaded between requests. See docs/SERVICE.md.')
    p.add_argument("--model", "-m", metavar="M",
                   help="the model of requests that name none (default: as `predict`: this "
                        "machine's model once measured, else skl / a72 by the ISA)")
    p.add_argument("--timeout", type=float_in(0.0, 1e6, low_open=True), default=60.0,
                   metavar="SEC",
                   help="a request that takes longer is stopped and answered with an error; "
                        "the service goes on (default 60)")
    p.add_argument("--socket", metavar="PATH",
                   help="listen on this Unix socket instead of stdin/stdout (a connection at a "
                        "time; `pmpredict predict FILE --service PATH` is its client)")
    p.set_defaults(func=run)


class Service:
    """Requests in, answers out; models and predictors kept by (spec, ISA)."""

    def __init__(self, default_model: str | None = None):
        self.default_model = default_model
        self.predictors: dict[tuple, object] = {}

    def predictor(self, spec: str | None, isa: str, path: str, costs: bool):
        """The prepared predictor of a model: its simulation compiled (numba: ~0.8 s once, then
        a few ms a kernel); Fields' costs (a simulation per bottleneck and pair) only where a
        request asks for them."""
        # deferred: the engines, once per model
        from pmpredict.commands import predict_files as job
        from pmpredict.predict.predictor import Predictor
        key = (spec, isa, costs)
        if key not in self.predictors:
            if spec is None:
                model = job.default_models([_FakeSource(isa)])[0][isa]
            else:
                model = job.model_for(spec, isa, path)
            self.predictors[key] = Predictor(model, criticality=costs, compiled=True)
            job.keep_prepared(self.predictors[key])
        return self.predictors[key]

    def answer(self, request: dict) -> dict:
        # deferred: parsing and the views, loaded with the first request
        from pmpredict.asm.parse import parse_source
        from pmpredict.commands.predict_files import kernels_of
        from pmpredict.views import DEFAULT_VIEWS, render_text, to_json
        unknown = sorted(set(request) - REQUEST_KEYS)
        if unknown:
            raise InputError("<request>", f"unknown key {unknown[0]!r}")
        views = tuple(request.get("views") or ())
        if any(v not in EXTRA_VIEWS for v in views):
            raise InputError("<request>", f"views are {', '.join(EXTRA_VIEWS)}")
        fmt = request.get("format", "json")
        if fmt not in ("json", "text"):
            raise InputError("<request>", "format is json or text")
        if ("text" in request) == ("file" in request):
            raise InputError("<request>", 'give "text" (assembly) or "file" (a path), one')
        if "text" in request:
            if not isinstance(request["text"], str):
                raise InputError("<request>", '"text" must be a string')
            path = str(request.get("path") or "<request>")
            program = parse_source(request["text"], path, syntax=request.get("syntax"),
                                   isa=request.get("isa"))
        else:
            # deferred: reading files with located errors
            from pmpredict.formats.files import read_text
            path = str(request.get("path") or request["file"])
            program = parse_source(read_text(str(request["file"])), path,
                                   syntax=request.get("syntax"), isa=request.get("isa"))
        kernels = kernels_of(program, request.get("lines"), request.get("region"))
        costs = request.get("costs", False)
        if not isinstance(costs, bool):
            raise InputError("<request>", '"costs" is true or false')
        predictor = self.predictor(request.get("model") or self.default_model, program.isa, path,
                                   costs or "bottlenecks" in views)
        reports = [predictor.predict(k, program.syntax, path) for k in kernels]
        if fmt == "text":
            return {"text": "\n".join(render_text(r, DEFAULT_VIEWS + views) for r in reports)}
        results = [to_json(r, views) for r in reports]
        result = results[0] if len(results) == 1 else dict(results[0], regions=results)
        return {"result": result}


class _FakeSource:
    """What predict_files.default_models looks at of a source: its ISA."""

    def __init__(self, isa: str):
        self.isa = isa
        self.path = "<request>"


def _error(exc: InputError) -> dict:
    return {"path": exc.path, "line": exc.line, "column": exc.column, "message": exc.message}


class _TimedOut(Exception):
    """Raised in a request that ran past the service's --timeout (by SIGALRM)."""


# the modules whose code a request runs, where a timed-out request may be stopped
_OWN_CODE = ("pmpredict", "lark")


def _answer_within(service: Service, request: dict, timeout: float | None) -> dict:
    """service.answer(request), stopped after `timeout` seconds (None: no limit) by a timer
    signal: a located error then, and the service goes on. (The signal lands between Python
    steps: a long stretch inside the C simulation finishes first.)"""
    if not timeout:
        return service.answer(request)
    # deferred: signals only where a time limit is set
    import signal

    def stop(signum, frame):
        # only in the request's own code (pmpredict's, or the parser's): an exception raised
        # in code the interpreter runs on the side (a finalizer or a callback of the garbage
        # collector, a hook formatting an exception it ignored) is lost there, or breaks that
        # code; the timer fires again in 50 ms and lands in the request's code soon
        if frame is not None and frame.f_globals.get("__name__", "").startswith(_OWN_CODE):
            raise _TimedOut
    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, timeout, 0.05)
    try:
        return service.answer(request)
    except _TimedOut:
        raise InputError(str(request.get("path") or request.get("file") or "<request>"),
                         f"the request took more than {timeout:g} s (--timeout): stopped") \
            from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def serve(lines, write, service: Service, timeout: float | None = None) -> int:
    """Answer every request line, each within `timeout` seconds (None: no limit); the number
    answered."""
    answered = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        start = time.perf_counter()
        rid = None
        try:
            try:
                request = json.loads(line)
            except ValueError as exc:
                raise InputError("<stdin>", f"not a JSON request: {exc}", number) from None
            if not isinstance(request, dict):
                raise InputError("<stdin>", "a request is a JSON object", number)
            rid = request.get("id")
            if request.get("op") == "shutdown":
                write({"id": rid, "result": "bye"})
                return answered + 1
            if request.get("op") not in (None, "predict"):
                raise InputError("<request>", "op is predict or shutdown")
            out = {"id": rid, **_answer_within(service, request, timeout)}
        except InputError as exc:
            out = {"id": rid, "error": _error(exc)}
        out["ms"] = round((time.perf_counter() - start) * 1000, 3)
        write(out)
        answered += 1
    return answered


def run(args):
    service = Service(args.model)
    if args.socket:
        return _serve_socket(args.socket, service, args.timeout)

    def write(obj) -> None:
        sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    serve(sys.stdin, write, service, args.timeout)
    return 0


def _serve_socket(path: str, service: Service, timeout: float | None = None) -> int:
    """Connections one at a time, each a stream of request lines; until Ctrl-C or SIGTERM (or a
    shutdown request). The socket file is removed at the end."""
    # deferred: sockets only for --socket
    import os
    import socket
    if os.path.exists(path):
        raise InputError(path, "exists already (another service? remove it if not)")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(path)
    except OSError as exc:
        raise InputError(path, f"cannot listen here: {exc.strerror}") from None
    server.listen(8)
    print(f"pmpredict: serving on {path}", file=sys.stderr, flush=True)
    try:
        while True:
            conn, _ = server.accept()
            with conn, conn.makefile("r", encoding="utf-8") as lines, \
                    conn.makefile("w", encoding="utf-8") as out:
                def write(obj) -> None:
                    out.write(json.dumps(obj, separators=(",", ":")) + "\n")
                    out.flush()
                try:
                    stopped = _ended_by_shutdown(lines, write, service, timeout)
                except (BrokenPipeError, ConnectionResetError):
                    continue                       # the client went away: the next one
            if stopped:
                return 0
    finally:
        server.close()
        os.unlink(path)


def _ended_by_shutdown(lines, write, service: Service, timeout: float | None = None) -> bool:
    said = []
    serve(lines, lambda obj: (said.append(obj.get("result") == "bye"), write(obj)), service,
          timeout)
    return bool(said) and said[-1]
