"""A sample of benchmarks/fuzz_cli.py's cases, each in a subprocess with a timeout: no
traceback, crash, hang, accepted bad input, unlocated error, NaN in JSON or clobbered output.
The script runs all of them (and random ones): python benchmarks/fuzz_cli.py."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import fuzz_cli as fz  # noqa: E402


def _sample():
    """The first case of every class (deep YAML: `predict --model` on 50,000 levels, which
    segfaulted)."""
    seen, out = set(), []
    for case in fz.all_cases(n_random=2, seed=3):
        key = case.cls
        if key not in seen and not any(a.startswith("ro/") for a in case.argv):
            seen.add(key)
            out.append(case)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("case", _sample(), ids=lambda c: c.name[:70])
def test_fuzz_case(case):
    outcome = fz.run_case(case, timeout=120)
    assert outcome.verdict == "ok", (outcome.status, outcome.stderr[-500:])


# what no instruction can be (pmpredict/asm/parse.py: MAX_OPERANDS, MAX_INSTRUCTION_LENGTH) is
# refused before any costly parse: well under 2 s here (about 0.5 s, the interpreter's start
# included); the bound is generous for a slow or busy machine
LONG_LINE_SECONDS = 10


@pytest.mark.parametrize("case", fz.long_line_cases(), ids=lambda c: c.name[11:70])
def test_line_no_instruction_can_be_is_refused_at_once(case):
    outcome = fz.run_case(case, timeout=120)
    assert (outcome.verdict, outcome.status) == ("ok", 2), outcome.stderr[-500:]
    assert outcome.seconds < LONG_LINE_SECONDS
