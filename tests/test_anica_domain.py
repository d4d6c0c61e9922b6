"""AnICA's schemes, concrete blocks and abstract domain (pmpredict.anica): every scheme of the
built-in models instantiates and matches back to its form, beta is sound (b in gamma(beta(b))),
expansions ascend, sampling meets the constraints, subsumption is right on hand-made pairs."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest

from pmpredict.anica import domain
from pmpredict.anica.concrete import (BASE_REGISTERS, DATA_REGISTERS, ConcreteBlock,
                                      block_values, instantiate, matched_forms, random_block,
                                      slots_of)
from pmpredict.anica.domain import (MUST, MUST_NOT, NONE, TOP, AbstractBlock,
                                    AbstractInstruction, abstract, contains, covers, describe,
                                    expansions, sample, subsumes)
from pmpredict.anica.schemes import excluded_because, scheme_of, schemes_for
from pmpredict.formats.model_files import load_model

ADD_IMM8 = "ADD_((REG:RW:G:64)),_((IMM:8))"
ADD_RR = "ADD_((REG:RW:G:64)),_((REG:R:G:64))"
IMUL_RR = "IMUL_((REG:RW:G:64)),_((REG:R:G:64))"
XOR_RR = "XOR_((REG:RW:G:64)),_((REG:R:G:64))"
SHL_CL = "SHL_((REG:RW:G:64)),_cl"
STORE = "MOV_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))"
LOAD = "MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
VADD_MEM = "VADDPD_((REG:W:V:256)),_((REG:R:V:256)),_ymmword_ptr_[((MEM:64))_+_((MIMM:16))]"


@functools.lru_cache(maxsize=None)
def model_forms(name: str) -> tuple[str, ...]:
    return tuple(load_model(name).uops)


@functools.lru_cache(maxsize=None)
def schemes(name: str):
    return schemes_for(model_forms(name))


def both_schemes():
    return schemes("skl") + [s for s in schemes("zen4-vm")
                             if s.form not in {t.form for t in schemes("skl")}]


@pytest.mark.parametrize("model", ["skl", "zen4-vm"])
def test_every_scheme_of_the_model_instantiates_and_matches_back(model):
    forms = model_forms(model)
    kept = schemes(model)
    assert len(kept) == len(set(forms))          # nothing of these models is left out
    rng = np.random.default_rng(7)
    lines, want = [], []
    for s in kept:
        for _ in range(4):                       # registers and displacements vary
            block = instantiate([s.form], rng)
            assert block is not None, s.form
            lines += block.instructions
            want.append(s.form)
    got = [form for form, _ in matched_forms(lines, forms)]
    wrong = [(line, w, g) for line, w, g in zip(lines, want, got) if w != g]
    assert not wrong, wrong[:5]


def test_register_discipline():
    rng = np.random.default_rng(3)
    forbidden = {"rsp", "rbp", "r12", "r13", "r14", "r15"}
    for _ in range(200):
        block = random_block(both_schemes(), 5, rng)
        written_bases = set()
        for line, form, values in zip(block.instructions, block.forms, block_values(block)):
            assert not forbidden & set(line.replace(",", " ").replace("[", " ").split()), line
            for slot, value in zip(slots_of(form), values):
                if slot.kind == "mem":
                    base, _, disp = value
                    assert base in BASE_REGISTERS and disp % 64 == 0 and 0 <= disp <= 4032
                if slot.kind == "reg" and slot.reg_class == "G":
                    assert value in DATA_REGISTERS
                if slot.kind == "reg" and slot.reg_class == "V":
                    assert int(value[1:]) < 8
                if slot.written and value in BASE_REGISTERS:
                    written_bases.add(value)
        assert not written_bases
    assert instantiate([SHL_CL], rng).instructions[0].endswith(", cl")
    assert instantiate([ADD_IMM8], rng).instructions[0].startswith("add ")


def test_schemes_leave_out_what_cannot_run_alone():
    for form in ("JMP_.", "CALL_.", "RET", "PUSH_((REG:R:G:64))", "POP_((REG:W:G:64))",
                 "LEAVE", "DIV_((REG:R:G:64))", "IDIV_((REG:R:G:32))", "SYSCALL", "UD2"):
        assert excluded_because(form) is not None, form
    kept = [s.form for s in schemes_for(["CPUID", "LFENCE", "MFENCE", SHL_CL, ADD_RR,
                                         "PUSH_((REG:R:G:64))"])]
    assert kept == [ADD_RR, SHL_CL]              # sorted; barriers out
    s = scheme_of(VADD_MEM)
    assert (s.mnemonic, s.memory, s.mem_width, s.extension, s.category) == \
        ("vaddpd", "load", 256, "avx", "fp add")
    assert s.operands == ("REG:V:256", "REG:V:256", "MEM:256")
    assert scheme_of(STORE).memory == "store" and scheme_of(STORE).category == "store"
    assert scheme_of(ADD_IMM8).operands == ("REG:G:64", "IMM:8")
    assert scheme_of(ADD_IMM8).extension == "base"


def test_beta_is_sound_and_expansions_ascend():
    """8.1.2 constraint 8 (b in gamma(beta(b))), and every one-step expansion still holds b,
    subsumes beta(b), and its samples are in its gamma."""
    rng = np.random.default_rng(11)
    universe = both_schemes()
    for n in range(60):
        block = random_block(universe, 1 + n % 4, rng)
        beta = abstract(block)
        assert contains(beta, block)
        assert subsumes(beta, beta) and covers(beta, block)
        if n % 6:
            continue
        for name, expanded in expansions(beta):
            assert contains(expanded, block), name
            assert subsumes(expanded, beta), name
            for s in sample(expanded, universe, rng, 3):
                assert contains(expanded, s), (name, s)


def test_sample_respects_constraints():
    rng = np.random.default_rng(5)
    top = AbstractInstruction()
    # any two instructions; the first operands alias, first and second operand of #1 do not
    block = AbstractBlock((top, top), domain.sorted_aliasing([((0, 0), (1, 0), MUST),
                                                              ((0, 0), (0, 1), MUST_NOT)]))
    got = sample(block, both_schemes(), rng, 200)
    assert len(got) == 200
    bound = 0
    for b in got:
        assert contains(block, b)
        values = block_values(b)
        if domain.matching(b.forms, (0, 0), (1, 0)):
            bound += 1
            assert values[0][0] == values[1][0]
    assert bound > 20                         # the constraint did apply to many samples
    # contradictory: must and must-not on one pair after joining through a third slot
    impossible = AbstractBlock((AbstractInstruction(form=ADD_RR),) * 2, domain.sorted_aliasing(
        [((0, 0), (1, 0), MUST), ((1, 0), (0, 1), MUST), ((0, 0), (0, 1), MUST_NOT)]))
    assert sample(impossible, both_schemes(), rng, 10) == []
    # a fixed register: `cl` must alias an operand, which then is rcx's family
    shift = AbstractBlock((AbstractInstruction(form=ADD_RR), AbstractInstruction(form=SHL_CL)),
                          domain.sorted_aliasing([((0, 0), (1, 1), MUST)]))
    for b in sample(shift, both_schemes(), rng, 20):
        assert b.instructions[0].startswith("add rcx,")


def _block(*pairs) -> ConcreteBlock:
    return ConcreteBlock(tuple(p[0] for p in pairs), tuple(p[1] for p in pairs))


def test_subsumes_and_covers_on_hand_made_pairs():
    chained = _block(("add rax, rcx", ADD_RR), ("imul rdx, rax", IMUL_RR))
    apart = _block(("add rax, rcx", ADD_RR), ("imul rdx, r8", IMUL_RR))
    any_add = AbstractInstruction(mnemonic=("add", 0))
    general = AbstractBlock((any_add, AbstractInstruction()),
                            domain.sorted_aliasing([((0, 0), (1, 1), MUST)]))
    assert subsumes(general, abstract(chained))
    assert not subsumes(general, abstract(apart))            # the alias is missing
    assert not subsumes(abstract(chained), general)          # more specific than general
    assert subsumes(general, general) and subsumes(abstract(chained), abstract(chained))
    assert contains(general, chained) and not contains(general, apart)
    # Definition 8.7: rotations and gaps, but not another order of a longer cycle
    rotated = _block(("imul rdx, rax", IMUL_RR), ("mov r9, qword ptr [rsi + 64]", LOAD),
                     ("add rax, rcx", ADD_RR))
    assert covers(general, rotated) and not subsumes(general, abstract(rotated))
    assert not covers(general, apart)
    single = AbstractBlock((any_add,))
    assert covers(single, rotated) and covers(single, chained)
    assert not covers(abstract(rotated), single)
    # a constraint on slots that cannot alias in b holds vacuously
    imm = _block(("add rax, 42", ADD_IMM8), ("imul rdx, rax", IMUL_RR))
    on_imm = AbstractBlock((any_add, AbstractInstruction()),
                           domain.sorted_aliasing([((0, 1), (1, 1), MUST)]))
    assert subsumes(on_imm, abstract(imm)) and contains(on_imm, imm)
    # features: an edit-distance bound and a subset-or-none value
    near = AbstractInstruction(mnemonic=("add", 1))
    assert domain.instruction_subsumes(near, any_add)
    assert not domain.instruction_subsumes(any_add, near)
    stores = AbstractInstruction(memory=frozenset({"store"}))
    rmw = AbstractInstruction(memory=frozenset({"load", "store"}))
    assert domain.instruction_subsumes(stores, rmw) and not domain.instruction_subsumes(rmw, stores)
    assert not domain.instruction_subsumes(stores, AbstractInstruction(memory=NONE))


def test_describe_and_json():
    block = _block(("add rax, 42", ADD_IMM8), ("mov qword ptr [rdi + 128], rax", STORE))
    beta = abstract(block)
    assert describe(beta) == "add r64, imm8 ; mov m64, r64 ; #1.op1 = #2.op2"
    store = AbstractInstruction(memory=frozenset({"store"}), mem_width=128, extension="sse")
    assert domain.describe_instruction(store) == "any store of 16 bytes (sse)"
    assert domain.describe_instruction(AbstractInstruction()) == "any instruction"
    for obj in (beta, AbstractBlock((store, AbstractInstruction(mnemonic=("vaddpd", 2),
                                                                   operands=NONE)),
                                    domain.sorted_aliasing([((0, 0), (1, 2), MUST_NOT)])),
                block):
        data = json.loads(json.dumps(domain.to_json(obj)))
        assert domain.from_json(data) == obj
    assert block.text() == (".intel_syntax noprefix\nadd rax, 42\n"
                            "mov qword ptr [rdi + 128], rax\n")
    assert TOP is None
