"""`pmpredict predict FILE --service PATH`: ask a running `pmpredict serve --socket PATH`
instead of predicting here (opt-in): the files' requests go over the socket, the answers are
printed as `predict` prints them. Light on purpose: no engine is imported."""

from __future__ import annotations

import json
import os
import socket
import sys

from pmpredict.errors import InputError

# predict's flags the service cannot honour
NOT_WITH_SERVICE = ("fallback", "strict", "exact", "jsonl")


def request_for(path: str, args, stdin) -> dict:
    views = [v for v, on in (("timeline", args.timeline), ("bottlenecks", args.bottlenecks)) if on]
    # costs: predict computes them (the verdict names the costliest bottleneck from them)
    req = {"format": "json" if args.json else "text", "views": views, "costs": True}
    if path == "-":
        req.update(text=stdin.read().decode("utf-8", errors="strict"), path="<stdin>")
    else:
        req.update(file=os.path.abspath(path), path=path)   # the service may run elsewhere
    for key in ("model", "syntax", "isa", "lines", "region"):
        if getattr(args, key, None) is not None:
            req[key] = getattr(args, key)
    return req


def predict_via_service(args) -> int:
    given = [f"--{k}" for k in NOT_WITH_SERVICE if getattr(args, k, None)]
    if given:
        raise InputError("<command line>", f"{given[0]} goes without --service")
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(args.service)
    except OSError as exc:
        raise InputError(args.service, f"no pmpredict service answers here ({exc.strerror}); "
                                       "start one with `pmpredict serve --socket PATH`") from None
    results = []
    with conn, conn.makefile("w", encoding="utf-8") as out, \
            conn.makefile("r", encoding="utf-8") as answers:
        for i, path in enumerate(args.files):
            out.write(json.dumps({"id": i, **request_for(path, args, sys.stdin.buffer)}) + "\n")
        out.flush()
        conn.shutdown(socket.SHUT_WR)
        for _ in args.files:
            line = answers.readline()
            if not line:
                raise InputError(args.service, "the service closed the connection")
            answer = json.loads(line)
            if "error" in answer:
                e = answer["error"]
                raise InputError(e["path"], e["message"], e["line"], e["column"])
            results.append(answer)
    if args.json:
        objs = [a["result"] for a in results]
        sys.stdout.write(json.dumps(objs[0] if len(objs) == 1 else objs, indent=1) + "\n")
    else:
        sys.stdout.write(("\n" + "=" * 72 + "\n\n").join(a["text"] for a in results))
    return 0
