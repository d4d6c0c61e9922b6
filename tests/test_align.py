"""Port alignment (pmpredict.predict.align, `pmpredict align`): a model against a copy of itself with
permuted port names, hand-made models of different sizes, and skl against OSACA's skx.yml."""

import json
import os
import random

import numpy as np
import pytest

from pmpredict.isa import semantics
from pmpredict.predict.align import align, align_pairs, aligned_model, port_profile
from pmpredict.cli import main
from pmpredict.model.machine import MachineModel, abstract_port_names

from pmpredict.formats.model_files import load_model, save_model

ADD = "ADD_((REG:RW:G:64)),_((REG:R:G:64))"
IMUL = "IMUL_((REG:RW:G:64)),_((REG:R:G:64))"
STORE = "MOV_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))"
LOAD = "MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"


def osaca_file(name: str) -> str:
    osaca = pytest.importorskip("osaca", reason="OSACA is not installed")
    path = os.path.join(os.path.dirname(osaca.__file__), "data", name)
    if not os.path.exists(path):
        pytest.skip(f"OSACA has no {name}")
    return path


def permuted(model: MachineModel, seed: int) -> tuple[MachineModel, dict]:
    """The model with its ports renamed P0.. in a random order, and our port -> its name."""
    names = [f"P{i}" for i in range(len(model.ports))]
    random.Random(seed).shuffle(names)
    return model.with_port_names(names), dict(zip(model.ports, names))


def test_abstract_port_names():
    assert abstract_port_names(3) == ("A", "B", "C")
    names = abstract_port_names(62)
    assert names[25:29] == ("Z", "AA", "AB", "AC") and names[-1] == "BJ"
    assert len(set(names)) == 62


@pytest.mark.parametrize("name", ["skl", "zen", "a72", "zen4-vm"])
def test_builtin_ports_are_abstract_labels(name):
    model = load_model(name)
    assert model.ports == abstract_port_names(len(model.ports))


@pytest.mark.parametrize("name,seed", [("skl", 1), ("zen", 2), ("a72", 3), ("zen4-vm", 4)])
def test_alignment_recovers_a_permutation_exactly(name, seed):
    model = load_model(name)
    reference, truth = permuted(model, seed)
    a = align(model, reference)
    assert len(a.pairs) == len(model.uops) == a.forms     # every form pairs with itself by name
    assert a.mapping == truth
    assert a.equal == a.contained == a.overlap == a.same_count == 1.0
    assert all(p.equal == 1.0 for p in a.per_port if p.mass)
    renamed = aligned_model(model, a)
    assert renamed.ports == reference.ports and renamed.uops == reference.uops
    assert renamed.provenance["alignment"]["mapping"] == truth


def _hand(ports, uops):
    masks = {f: tuple((sum(1 << ports.index(p) for p in s), c) for s, c in u)
             for f, u in uops.items()}
    return MachineModel("hand", "x86", tuple(ports), masks)


def test_alignment_through_instances_and_extra_reference_port():
    """DESIGN's mapping (mul->{P1}, add->{P1,P2}, store->{P3}) against a reference with another
    spelling of the forms' ports and a port of its own (a divider) that nothing of ours uses."""
    ours = _hand(["A", "B", "C"], {IMUL: [({"A"}, 1)], ADD: [({"A", "B"}, 1)],
                                   STORE: [({"C"}, 1)]})
    ref = _hand(["div", "p3", "p1", "p2"], {IMUL: [({"p1"}, 1)], ADD: [({"p1", "p2"}, 1)],
                                            STORE: [({"p3"}, 1)],
                                            "DIV_((REG:R:G:64))": [({"p1"}, 1), ({"div"}, 20)]})
    a = align(ours, ref)
    assert a.mapping == {"A": "p1", "B": "p2", "C": "p3"}
    assert a.reference_unmatched == ("div",) and a.unmatched == ()
    assert a.equal == 1.0


def test_our_extra_port_stays_unmatched_and_keeps_a_distinct_name():
    """Our model has a port no common form uses: it is left unmatched (affinity 0), and keeps
    its label, primed where the reference already has that name."""
    ours = _hand(["A", "B", "C"], {IMUL: [({"A"}, 1)], ADD: [({"A", "B"}, 1)],
                                   STORE: [({"C"}, 1)]})
    ref = _hand(["B", "A"], {IMUL: [({"B"}, 1)], ADD: [({"A", "B"}, 1)]})
    a = align(ours, ref)
    assert a.mapping == {"A": "B", "B": "A"}
    assert a.unmatched == ("C",)
    assert a.aligned_names() == ("B", "A", "C")
    ref2 = _hand(["C", "X"], {IMUL: [({"C"}, 1)], ADD: [({"C", "X"}, 1)]})
    b = align(ours, ref2)
    assert b.aligned_names() == ("C", "X", "C'")
    # the store uop is on the unmatched port: it agrees with nothing (store is not common)
    assert b.equal == 1.0 and len(b.pairs) == 2


def test_agreement_shares_by_hand():
    """Two forms: one uop renamed equal, one contained (a subset), one only overlapping."""
    ours = _hand(["A", "B", "C"], {IMUL: [({"A"}, 1)], ADD: [({"A", "B"}, 1), ({"C"}, 2)]})
    ref = _hand(["x", "y", "z"], {IMUL: [({"x"}, 1)], ADD: [({"x", "y", "z"}, 1)]})
    a = align_pairs(ours, ref, [(IMUL, IMUL), (ADD, ADD)])
    assert a.mapping == {"A": "x", "B": "y", "C": "z"}
    # uop mass 4: imul {x} equal; {x, y} contained in {x, y, z}; {z} x2 contained
    assert a.equal == pytest.approx(1 / 4) and a.contained == 1.0 and a.overlap == 1.0
    assert a.same_count == pytest.approx(1 / 2)
    by_port = {p.port: p for p in a.per_port}
    assert by_port["A"].mass == 2 and by_port["A"].equal == pytest.approx(1 / 2)
    assert by_port["C"].mass == 2 and by_port["C"].equal == 0.0


def test_port_profile_sums_to_one():
    prof = port_profile(((0b011, 2), (0b100, 1)), 3)
    assert prof == pytest.approx([1 / 3, 1 / 3, 1 / 3])


def _kind_ports(model, memory):
    """Ports in decreasing order of the profile mass of the model's plain moves that only
    load (memory == "load") or only store: where its loads / stores sit."""
    x86 = semantics.get("x86")
    total = np.zeros(len(model.ports))
    for form, uops in model.uops.items():
        fs = x86.form(form)
        if fs.memory == memory and fs.mnemonic.lstrip("v").startswith("mov"):
            total += port_profile(uops, len(model.ports))
    return [model.ports[i] for i in np.argsort(-total)]


def test_skl_against_osaca_skx():
    skl = load_model("skl")
    a = align(skl, load_model(osaca_file("skx.yml")))
    print(f"\nskl vs skx.yml: {len(a.pairs)} common forms of {a.forms}, mapping {a.mapping}, "
          f"equal {a.equal:.1%}, contained {a.contained:.1%}, overlap {a.overlap:.1%}")
    assert len(a.pairs) > 100
    assert set(a.mapping) == set(skl.ports)              # 9 ports onto 11: all of ours match
    assert len(a.reference_unmatched) == 2
    # skl's two load ports map onto skx's load ports (address 2/3 or data 2D/3D), its store
    # port onto skx's store-data port 4
    loads = _kind_ports(skl, "load")[:2]
    assert {a.mapping[p] for p in loads} <= {"2", "3", "2D", "3D"}
    assert a.mapping[_kind_ports(skl, "store")[0]] == "4"
    assert 0 < a.equal <= a.contained <= a.overlap <= 1


def test_align_command_writes_an_aligned_model(tmp_path, capsys):
    model = load_model("skl")
    reference, truth = permuted(model, 7)
    ref_path = tmp_path / "ref.json"
    save_model(reference, ref_path)
    out = tmp_path / "aligned.json"
    assert main(["align", "skl", "--reference", str(ref_path), "-o", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["mapping"] == truth and report["equal"] == 1.0
    back = load_model(str(out))
    assert back.ports == reference.ports and back.uops == reference.uops
    assert back.latency == model.latency
    assert back.provenance["alignment"]["reference"] == reference.name


def test_align_command_text_and_errors(tmp_path, capsys):
    assert main(["align", "skl", "--reference", "skl"]) == 0
    text = capsys.readouterr().out
    assert "over 310 of 310 forms" in text and "100%" in text
    assert main(["align", "skl", "--reference", "a72"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pmpredict: error: a72:") and "aarch64" in err[0]
