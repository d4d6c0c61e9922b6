"""AnICA's schemes, concrete blocks and abstract domain (pmpredict.anica): every scheme of the
built-in models instantiates and matches back to its form, beta is sound (b in gamma(beta(b))),
expansions ascend, sampling meets the constraints, subsumption is right on hand-made pairs."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest

from pmpredict.anica import domain
from pmpredict.anica.concrete import (ALIGNED_PLACES, BASE_REGISTERS, CONSTANT_ADDRESSES,
                                      DATA_REGISTERS, PLACES, ConcreteBlock, block_values,
                                      constant_base_slots, crosses_line, instantiate,
                                      matched_forms, memory_bases, memory_crossings,
                                      random_block, slots_of)
from pmpredict.anica.domain import (CONSTANT, CROSSES, MUST, MUST_NOT, NONE, NOT_CONSTANT, TOP,
                                    WITHIN, AbstractBlock, AbstractInstruction, abstract,
                                    contains, covers, describe, expansions, sample, subsumes)
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
LOAD_BYTE = "MOVZX_((REG:W:G:64)),_byte_ptr_[((MEM:64))_+_((MIMM:16))]"
ALIGNED_LOAD = "VMOVAPS_((REG:W:V:256)),_ymmword_ptr_[((MEM:64))_+_((MIMM:16))]"


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


# --- the memory block mode -------------------------------------------------------------------

# blocks the generator made before block modes existed (seed 2024, skl, length 4; then seed 5):
# the standard mode must keep making exactly these
TODAYS_BLOCKS = [
    ["not dword ptr [rsi + 640]", "vpcmpgtw ymm1, ymm6, ymmword ptr [rsi + 256]", "bts rax, 42",
     "mov qword ptr [rsi + 512], 16777258"],
    ["vshufpd ymm7, ymm5, ymm0, 42", "sub dword ptr [rdi + 512], 16777258",
     "or dword ptr [rsi + 256], 42", "lea rcx, [rdi+42]"],
    ["vpsllq ymm0, ymm2, xmmword ptr [rsi + 576]", "vmovddup ymm6, ymmword ptr [rsi + 1024]",
     "vpaddq ymm2, ymm0, ymmword ptr [rdi + 384]", "sub r10, 16777258"],
    ["vpshufd ymm7, ymmword ptr [rsi + 960], 42", "vdivpd ymm0, ymm1, ymm1",
     "vxorps ymm1, ymm2, ymmword ptr [rbx + 1152]", "or dword ptr [rdi + 1216], 42"],
    ["mov rcx, qword ptr [rbx + 64]", "vpxor ymm2, ymm5, ymmword ptr [rbx + 960]",
     "vpsrad ymm4, ymm2, xmmword ptr [rsi + 384]", "vmulps ymm4, ymm2, ymmword ptr [rbx + 1280]"],
    ["vandpd ymm2, ymm0, ymmword ptr [rdi + 1024]", "vpalignr ymm0, ymm1, ymm5, 42",
     "mov rax, 72057594037927978", "xor qword ptr [rdi + 704], 42"],
]
TODAYS_INSTANCE = ["vaddpd ymm0, ymm7, ymmword ptr [rsi + 1088]",
                   "mov qword ptr [rdi + 192], rax", "vaddpd ymm3, ymm1, ymmword ptr [rdi + 896]"]
# and samples of beta of a store feeding a load's place (seed 11), then with #1's form lifted
TODAYS_SAMPLES = [
    ["vaddpd ymm5, ymm4, ymmword ptr [rbx + 128]", "mov qword ptr [rbx + 128], r8"],
    ["vaddpd ymm0, ymm4, ymmword ptr [rbx + 1024]", "mov qword ptr [rbx + 1024], rdx"],
    ["vaddpd ymm4, ymm7, ymmword ptr [rbx + 768]", "mov qword ptr [rbx + 768], r11"],
    ["vaddpd ymm7, ymm5, ymmword ptr [rsi + 512]", "mov qword ptr [rsi + 512], rcx"],
    ["vaddpd ymm5, ymm3, ymmword ptr [rbx + 1088]", "mov qword ptr [rbx + 1088], r8"],
    ["vaddpd ymm7, ymm1, ymmword ptr [rsi + 512]", "mov qword ptr [rsi + 512], r11"],
]


def test_the_standard_mode_makes_exactly_the_blocks_of_before():
    rng = np.random.default_rng(2024)
    assert [list(random_block(schemes("skl"), 4, rng).instructions) for _ in range(6)] == \
        TODAYS_BLOCKS
    rng = np.random.default_rng(5)
    assert list(instantiate([VADD_MEM, STORE, VADD_MEM], rng).instructions) == TODAYS_INSTANCE
    beta = abstract(_block(("vaddpd ymm0, ymm7, ymmword ptr [rsi + 1088]", VADD_MEM),
                           ("mov qword ptr [rsi + 1088], rax", STORE)))
    assert beta.crossing == ()                   # the standard mode records no line crossing
    lifted = next(e for name, e in expansions(beta) if name.startswith("#1.form"))
    rng = np.random.default_rng(11)
    got = sample(beta, schemes("skl"), rng, 3) + sample(lifted, schemes("skl"), rng, 3)
    assert [list(b.instructions) for b in got] == TODAYS_SAMPLES


def test_memory_places_never_overlap_and_only_line_ends_cross():
    """Accesses of 1..64 bytes at two places never share a byte (nor reach the next base,
    1344 bytes on); 4 bytes or more at 189 and 445 cross a line, nothing at 0 or 256 does."""
    assert len(PLACES) == 4 and ALIGNED_PLACES == (0, 256)
    for width in range(1, 65):
        spans = [set(range(p, p + width)) for p in PLACES]
        for n, a in enumerate(spans):
            assert max(a) < 1344
            for b in spans[n + 1:]:
                assert not a & b, width
        for p in PLACES:
            assert crosses_line(p, 8 * width) == (p in (189, 445) and width >= 4), (p, width)


def test_memory_mode_blocks_keep_the_discipline_and_match_back():
    rng = np.random.default_rng(4)
    crossed = met = 0
    lines, want = [], []
    for _ in range(150):
        block = random_block(both_schemes(), 5, rng, mode="memory")
        places = []
        for form, values in zip(block.forms, block_values(block)):
            for slot, value in zip(slots_of(form), values):
                if slot.kind == "mem":
                    assert value[0] in BASE_REGISTERS and value[2] in PLACES
                    assert value[2] in ALIGNED_PLACES or not slot.aligned
                    places.append(value)
                if slot.kind == "reg" and slot.reg_class == "V":
                    assert int(value[1:]) < 4            # the memory mode's vector pool
        crossed += any(memory_crossings(block).values())
        met += len(places) != len(set(places))
        lines += block.instructions
        want += block.forms
    assert crossed > 50 and met > 10
    forms = model_forms("skl") + model_forms("zen4-vm")
    got = [form for form, _ in matched_forms(lines, forms)]
    assert [(line, w) for line, w, g in zip(lines, want, got) if w != g] == []
    # an aligned move never leaves a line's start, where it would fault
    for _ in range(40):
        (line,) = instantiate([ALIGNED_LOAD], rng, mode="memory").instructions
        assert line.endswith(("+ 0]", "+ 256]")), line


def _vadd(place: int) -> ConcreteBlock:
    return _block((f"vaddpd ymm0, ymm1, ymmword ptr [rsi + {place}]", VADD_MEM))


def test_a_line_crossing_round_trips_through_abstract_contains_and_sample():
    rng = np.random.default_rng(8)
    crossing, within = abstract(_vadd(189), "memory"), abstract(_vadd(256), "memory")
    assert crossing.crossing == (((0, 2), CROSSES),) and within.crossing == (((0, 2), WITHIN),)
    assert abstract(_vadd(189)).crossing == ()           # the standard mode records none
    assert contains(crossing, _vadd(445)) and not contains(crossing, _vadd(0))
    assert contains(within, _vadd(0)) and not contains(within, _vadd(189))
    for beta, wanted in ((crossing, True), (within, False)):
        got = sample(beta, schemes("skl"), rng, 60, "memory")
        assert len(got) == 60
        assert all(memory_crossings(b)[(0, 2)] == wanted and contains(beta, b) for b in got)
    (name, either), = [(n, e) for n, e in expansions(crossing) if n.startswith("crossing")]
    assert name == "crossing #1.op3 crosses -> TOP" and either.crossing == ()
    assert domain.expansion_feature(name) == "crossing"
    seen = {memory_crossings(b)[(0, 2)] for b in sample(either, schemes("skl"), rng, 60,
                                                           "memory")}
    assert seen == {True, False}
    # a 1-byte access never crosses: asked to, sampling finds no block
    byte = abstract(_block(("movzx rax, byte ptr [rdi + 189]", LOAD_BYTE)), "memory")
    assert byte.crossing == (((0, 1), WITHIN),)
    impossible = AbstractBlock(byte.instructions, crossing=(((0, 1), CROSSES),))
    assert sample(impossible, schemes("skl"), rng, 5, "memory") == []
    # lifted form: the constraint binds a memory operand there, and is void on other slots
    lifted = AbstractBlock((AbstractInstruction(),), crossing=(((0, 2), CROSSES),))
    for b in sample(lifted, schemes("skl"), rng, 60, "memory"):
        assert memory_crossings(b).get((0, 2), True)


def test_subsumption_and_covering_with_line_crossing():
    crossing, within = abstract(_vadd(189), "memory"), abstract(_vadd(256), "memory")
    either = AbstractBlock(crossing.instructions)
    assert subsumes(either, crossing) and subsumes(either, within)
    assert subsumes(crossing, crossing) and not subsumes(crossing, within)
    assert not subsumes(crossing, either) and not subsumes(within, either)
    # covering: rotations and gaps keep the constraint with its instruction
    gap = _block(("add rax, rcx", ADD_RR), ("vaddpd ymm2, ymm3, ymmword ptr [rbx + 445]", VADD_MEM))
    assert covers(crossing, gap, "memory") and not covers(within, gap, "memory")
    assert not covers(crossing, gap)               # the standard beta says nothing of lines
    # on a slot that is no memory operand in b the constraint holds vacuously
    on_register = AbstractBlock((AbstractInstruction(),), crossing=(((0, 0), CROSSES),))
    assert subsumes(on_register, abstract(_block(("add rax, rcx", ADD_RR)), "memory"))
    assert not subsumes(on_register, AbstractBlock((AbstractInstruction(),)))
    # a constraint on a slot no scheme makes a memory operand does not change gamma (its
    # dropping is free); on a memory operand it does
    add_only = AbstractBlock((AbstractInstruction(form=ADD_RR),))
    assert domain.same_concretisation(add_only, replace_crossing(add_only, (((0, 1), CROSSES),)),
                                      [scheme_of(ADD_RR)])
    assert not domain.same_concretisation(either, crossing, schemes("skl"))


def replace_crossing(block: AbstractBlock, crossing) -> AbstractBlock:
    return AbstractBlock(block.instructions, block.aliasing, crossing)


def test_line_crossing_is_described_and_kept_in_json():
    beta = abstract(_block(("mov qword ptr [rdi + 189], rax", STORE),
                           ("vaddpd ymm0, ymm1, ymmword ptr [rdi + 256]", VADD_MEM)), "memory")
    assert describe(beta) == ("mov m64, r64 ; vaddpd ymm, ymm, m256 ; #1.op1 != #2.op3 ; "
                              "#2.op1 != #2.op2 ; "
                              "instruction 1's memory operand crosses a cache line ; "
                              "instruction 2's memory operand stays within a cache line ; "
                              "instruction 1's memory operand's base is not set by the block ; "
                              "instruction 2's memory operand's base is not set by the block")
    data = json.loads(json.dumps(domain.to_json(beta)))
    assert data["crossing"] == [[[0, 0], "crosses"], [[1, 2], "within"]]
    assert domain.from_json(data) == beta
    assert "crossing" not in abstract(_vadd(189)).to_json()       # standard: as before


def test_memory_mode_sampling_meets_many_must_not_constraints():
    """With 4 vector registers and 12 places, beta of a long block has many must-not
    constraints; sampling it, and it with only the categories kept (forms and so slot classes
    vary), still gives the blocks asked for."""
    rng = np.random.default_rng(12)
    short = 0
    for _ in range(30):
        block = random_block(schemes("skl"), 8, rng, mode="memory")
        beta = abstract(block, "memory")
        loose = AbstractBlock(tuple(AbstractInstruction(category=ai.category)
                                    for ai in beta.instructions), beta.aliasing, beta.crossing)
        assert len(sample(beta, schemes("skl"), rng, 20, "memory")) == 20
        short += len(sample(loose, schemes("skl"), rng, 20, "memory")) < 20
    assert short <= 3


# --- the memory mode's constant bases -------------------------------------------------------

def _chain(base: str = "rbx", *constant: str) -> ConcreteBlock:
    """A load and a store of one place (a chain through memory), through `base`."""
    return ConcreteBlock((f"mov rax, qword ptr [{base} + 189]",
                          f"mov qword ptr [{base} + 189], rax"), (LOAD, STORE), constant)


def test_a_constant_base_is_a_line_at_the_top_and_goes_with_its_last_use():
    block = ConcreteBlock(("mov rax, qword ptr [rbx + 0]", "mov qword ptr [rsi + 256], rax"),
                          (LOAD, STORE), ("rbx", "rsi"))
    assert block.constant_bases == ("rsi", "rbx")                 # BASE_REGISTERS' order
    assert block.lines() == ("mov rsi, 0x600200", "mov rbx, 0x680600",
                             "mov rax, qword ptr [rbx + 0]", "mov qword ptr [rsi + 256], rax")
    assert block.text().startswith(".intel_syntax noprefix\nmov rsi, 0x600200\n")
    assert len(block) == 2 and block.instructions[0].startswith("mov rax")
    assert memory_bases(block) == {(0, 1): "rbx", (1, 0): "rsi"}
    # minimisation drops an instruction, and the constant of a base no operand uses any more
    assert block.without(0).constant_bases == ("rsi",)
    assert block.without(1).lines()[0] == "mov rbx, 0x680600"
    assert _chain().lines() == _chain().instructions              # no constant: as before
    with pytest.raises(ValueError):
        ConcreteBlock(("add rax, rcx",), (ADD_RR,), ("rax",))
    # distinct, 64-byte aligned, at page offsets apart from each other and from the harness's
    # bases (page offset 0, and 2048 with two): accesses up to 64 bytes at PLACES never meet
    assert set(CONSTANT_ADDRESSES) == set(BASE_REGISTERS)
    spans = [(c % 4096, c % 4096 + max(PLACES) + 64) for c in CONSTANT_ADDRESSES.values()]
    assert all(c % 64 == 0 and c < 2 ** 31 for c in CONSTANT_ADDRESSES.values())
    for n, (lo, hi) in enumerate(spans):
        for harness in (0, 2048):
            assert hi <= harness or lo >= harness + max(PLACES) + 64
        assert all(hi <= lo2 or lo >= hi2 for lo2, hi2 in spans[n + 1:])


def test_beta_records_constant_bases_and_contains_tells_them_apart():
    constant, plain = _chain("rbx", "rbx"), _chain("rbx")
    beta = abstract(constant, "memory")
    assert beta.constant_base == (((0, 1), CONSTANT), ((1, 0), CONSTANT))
    assert abstract(plain, "memory").constant_base == (((0, 1), NOT_CONSTANT),
                                                       ((1, 0), NOT_CONSTANT))
    assert abstract(constant).constant_base == ()          # the standard mode records none
    assert constant_base_slots(constant) == {(0, 1): True, (1, 0): True}
    assert contains(beta, constant) and not contains(beta, plain)
    assert contains(abstract(plain, "memory"), plain)
    assert not contains(abstract(plain, "memory"), constant)
    # the prelude is no instruction of the abstract block: the same forms, the same aliasing
    assert beta.instructions == abstract(plain, "memory").instructions
    assert beta.aliasing == abstract(plain, "memory").aliasing


def test_instantiation_meets_constant_base_constraints():
    rng = np.random.default_rng(21)
    one = instantiate([LOAD], rng, mode="memory", constant={(0, 1): True})
    (base,) = one.constant_bases
    assert one.lines()[0] == f"mov {base}, {CONSTANT_ADDRESSES[base]:#x}"
    assert memory_bases(one) == {(0, 1): base}
    # instruction 1's base constant, instruction 2's not: the accesses go through two bases
    mixed = AbstractBlock((AbstractInstruction(form=VADD_MEM), AbstractInstruction(form=STORE)),
                          constant_base=(((0, 2), CONSTANT), ((1, 0), NOT_CONSTANT)))
    got = sample(mixed, schemes("skl"), rng, 60, "memory")
    assert len(got) == 60
    for b in got:
        bases = memory_bases(b)
        assert b.constant_bases == (bases[(0, 2)],) and bases[(1, 0)] != bases[(0, 2)]
        assert b.lines()[0] == f"mov {bases[(0, 2)]}, {CONSTANT_ADDRESSES[bases[(0, 2)]]:#x}"
        assert b.lines()[1:] == b.instructions and contains(mixed, b)
    # a must-alias between the two (one place) cannot be met; nor a constant in the standard mode
    apart = AbstractBlock(mixed.instructions, domain.sorted_aliasing([((0, 2), (1, 0), MUST)]),
                          constant_base=mixed.constant_base)
    assert sample(apart, schemes("skl"), rng, 5, "memory") == []
    assert sample(mixed, schemes("skl"), rng, 5) == []
    # either: both come out, each a member
    either = AbstractBlock(mixed.instructions)
    seen = {constant_base_slots(b)[(0, 2)] for b in sample(either, schemes("skl"), rng, 60,
                                                           "memory")}
    assert seen == {True, False}
    # a lifted form: the constraint binds a memory operand there, and is void on other slots
    lifted = AbstractBlock((AbstractInstruction(),), constant_base=(((0, 2), CONSTANT),))
    for b in sample(lifted, schemes("skl"), rng, 60, "memory"):
        assert constant_base_slots(b).get((0, 2), True)


def test_subsumption_and_covering_with_constant_bases():
    constant, plain = abstract(_chain("rsi", "rsi"), "memory"), abstract(_chain("rsi"), "memory")
    either = AbstractBlock(constant.instructions, constant.aliasing, constant.crossing)
    assert subsumes(either, constant) and subsumes(either, plain)
    assert subsumes(constant, constant) and not subsumes(constant, plain)
    assert not subsumes(plain, constant)
    assert not subsumes(constant, either) and not subsumes(plain, either)
    assert covers(either, _chain("rdi", "rdi"), "memory")
    assert covers(either, _chain("rdi"), "memory")
    assert covers(constant, _chain("rdi", "rdi"), "memory")
    assert not covers(constant, _chain("rdi"), "memory")            # CONSTANT does not cover NOT
    assert not covers(plain, _chain("rdi", "rdi"), "memory")
    assert not covers(constant, _chain("rdi", "rdi"))      # the standard beta says nothing of it
    # covering: rotations and gaps keep the constraint with its instruction
    store_first = AbstractBlock((AbstractInstruction(form=STORE),),
                                constant_base=(((0, 0), CONSTANT),))
    gap = ConcreteBlock(("mov qword ptr [rbx + 0], rax", "add rax, rcx",
                         "mov qword ptr [rsi + 0], rcx"), (STORE, ADD_RR, STORE), ("rsi",))
    assert covers(store_first, gap, "memory")
    assert not covers(store_first, ConcreteBlock(gap.instructions, gap.forms, ()), "memory")
    # on a slot that is no memory operand the constraint holds vacuously, and costs nothing
    on_register = AbstractBlock((AbstractInstruction(),), constant_base=(((0, 0), CONSTANT),))
    assert subsumes(on_register, abstract(_block(("add rax, rcx", ADD_RR)), "memory"))
    assert not subsumes(on_register, AbstractBlock((AbstractInstruction(),)))
    add_only = AbstractBlock((AbstractInstruction(form=ADD_RR),))
    assert domain.same_concretisation(
        add_only, AbstractBlock(add_only.instructions, constant_base=(((0, 0), CONSTANT),)),
        [scheme_of(ADD_RR)])
    assert not domain.same_concretisation(either, constant, schemes("skl"))


def test_constant_bases_are_expanded_described_and_kept_in_json():
    beta = abstract(_chain("rbx", "rbx"), "memory")
    names = [n for n, _ in expansions(beta) if n.startswith("base")]
    assert names == ["base #1.op2 constant -> TOP", "base #2.op1 constant -> TOP"]
    assert domain.expansion_feature(names[0]) == "base"
    dropped = dict(expansions(beta))[names[0]]
    assert dropped.constant_base == (((1, 0), CONSTANT),) and subsumes(dropped, beta)
    assert describe(beta).endswith("instruction 1's memory operand's base is set to a constant "
                                   "address ; instruction 2's memory operand's base is set to a "
                                   "constant address")
    data = json.loads(json.dumps(domain.to_json(beta)))
    assert data["constant_base"] == [[[0, 1], "constant"], [[1, 0], "constant"]]
    assert domain.from_json(data) == beta
    with pytest.raises(ValueError):
        domain.from_json({**data, "constant_base": [[[0, 1], "sometimes"]]})
    # a concrete block keeps its constant bases; one without and old JSON read as before
    block = _chain("rbx", "rbx")
    assert domain.from_json(json.loads(json.dumps(domain.to_json(block)))) == block
    assert "constant_bases" not in _chain("rbx").to_json()
    assert ConcreteBlock.from_json({"instructions": list(block.instructions),
                                    "forms": list(block.forms)}) == _chain("rbx")
    standard = abstract(_chain("rbx"))
    assert "constant_base" not in standard.to_json()
    assert domain.from_json(standard.to_json()) == standard


def test_random_memory_mode_blocks_set_a_third_of_their_bases_reproducibly():
    def blocks(seed, mode="memory", n=300):
        rng = np.random.default_rng(seed)
        return [random_block(both_schemes(), 4, rng, mode=mode) for _ in range(n)]
    made = blocks(31)
    used = constant = 0
    for b in made:
        bases = set(memory_bases(b).values())
        assert set(b.constant_bases) <= bases                  # only bases of memory operands
        used += len(bases)
        constant += len(b.constant_bases)
        beta = abstract(b, "memory")
        assert contains(beta, b) and covers(beta, b, "memory")
    assert 0.25 < constant / used < 0.42
    assert blocks(31, n=40) == made[:40]                         # the seed makes them again
    assert not any(b.constant_bases for b in blocks(31, "standard", 100))
    # beta of a block with a constant base: its expansions still hold it, their samples too
    rng = np.random.default_rng(32)
    origin = next(b for b in made if b.constant_bases)
    beta = abstract(origin, "memory")
    for name, expanded in expansions(beta):
        assert contains(expanded, origin), name
        for s in sample(expanded, both_schemes(), rng, 2, "memory"):
            assert contains(expanded, s), (name, s)
