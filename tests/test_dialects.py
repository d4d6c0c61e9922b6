"""Assembly as the users of other tools write it (tests/data/): MSVC / MASM listings read as x86
Intel syntax, predicted as the same loop written in GNU Intel syntax; and a corpus of files in
the style of gcc, clang, icc and MSVC (AT&T, Intel, AArch64), each of which ends in a prediction
or a located error, never a traceback."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from pmpredict.cli import main

DATA = os.path.join(os.path.dirname(__file__), "data")
PEERS = os.path.join(DATA, "peers")


@pytest.mark.parametrize("msvc,gnu,loop,length", [
    ("triad_msvc.asm", "triad_gnu_intel.s", "$LL4@triad", 6),               # AVX2, /arch:AVX2
    ("gauss_seidel_msvc.asm", "gauss_seidel_gnu_intel.s", "$LL7@gauss_seid", 9),  # SSE2
])
def test_msvc_listing_predicts_as_the_same_loop_in_gnu_intel_syntax(capsys, msvc, gnu, loop,
                                                                     length):
    reports = []
    for name in (msvc, gnu):
        assert main(["predict", os.path.join(DATA, name), "--model", "skl", "--json"]) == 0
        reports.append(json.loads(capsys.readouterr().out))
    listing, gnu_intel = reports
    assert listing["syntax"] == gnu_intel["syntax"] == "intel"
    # the innermost loop, as in any other file: from its label to the branch back to it
    assert (listing["kernel"]["how"], listing["kernel"]["name"]) == ("loop", loop)
    assert gnu_intel["kernel"]["how"] == "loop"
    assert len(listing["instructions"]) == length
    assert listing["instructions"][-1]["text"].endswith(f"SHORT {loop}")
    assert [i["key"] for i in listing["instructions"]] == \
        [i["key"] for i in gnu_intel["instructions"]]
    assert gnu_intel["cycles"] and abs(listing["cycles"] - gnu_intel["cycles"]) <= \
        0.01 * gnu_intel["cycles"]


# what each peer-style file ends in: the innermost loop's prediction, or a located error
PEER_OUTCOMES = {
    "gcc_att.s": "loop", "gcc_intel.s": "loop", "clang_att.s": "loop", "clang_intel.s": "loop",
    "icc_att.s": "loop", "icc_intel.s": "loop", "msvc_intel.asm": "loop",
    "gcc_aarch64.s": "loop", "clang_aarch64.s": "loop",
    # Apple's assembler comments with `;`, which GNU as (and pmpredict) reads as a separator
    "clang_apple_aarch64.s": "error",
}


def test_the_corpus_is_the_directory():
    assert sorted(PEER_OUTCOMES) == sorted(os.listdir(PEERS))


@pytest.mark.parametrize("name", sorted(PEER_OUTCOMES))
def test_peer_style_file_ends_in_a_prediction_or_a_located_error(name):
    path = os.path.join(PEERS, name)
    model = "a72" if "aarch64" in name else "skl"
    run = subprocess.run([sys.executable, "-m", "pmpredict", "predict", path, "--model", model],
                         capture_output=True, text=True, timeout=120)
    assert "Traceback" not in run.stderr
    if PEER_OUTCOMES[name] == "loop":
        assert run.returncode == 0, run.stderr
        assert re.search(r"^Kernel: +innermost loop at \S+", run.stdout, re.M)
        assert re.search(r"^Prediction: +\d+\.\d+ cycles per iteration", run.stdout, re.M)
    else:
        assert run.returncode == 2
        errors = run.stderr.strip().splitlines()
        assert len(errors) == 1 and re.match(rf"pmpredict: error: {re.escape(path)}:\d+:\d+: ",
                                             errors[0]), run.stderr
