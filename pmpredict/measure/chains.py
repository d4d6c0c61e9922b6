"""Latency chains: which code measures which latency of a form, and what the timings mean.

Engine layer (pure: no I/O). A *chain* is a short piece of x86-64 code, one *link*, that
`pmpredict measure` would time as a basic block: repeated in a loop, each link's result feeds
the next link, so the cycles per link are the latency of the path through it. Everything else
the form reads comes from registers nothing writes (or, for an operand that is read and
written besides the chain, from registers that rotate so their own chains are four links
long).

Per form and per source operand (form-order index; "flags" for the flags a consumer reads):

* **same class** (a register source and a register destination of one class): the two share
  one register, `vaddps ymm3, ymm3, ymm9`; an RW destination that is not the source rotates
  over four registers (`vfmadd231ps ymm1, ymm4, ymm9; vfmadd231ps ymm2, ymm1, ymm9; ...`),
  so its own chain runs through every fourth instance only;
* **other class** (cvtsi2sd gpr -> xmm, vpextrq xmm -> gpr): a companion of the other
  direction closes the chain (`vmovq xmm, r64` or `vmovq r64, xmm`) and its latency is
  subtracted;
* **flags as the result** (cmp, test, bt, vucomisd): `adc r, r` turns the carry back into a
  register; **flags as the source** (cmov, adc, setcc): `add r, r` produces them;
* **memory, address -> value** (a load): the value is turned into the next address by
  companions, `shr r, 63` (0 for every value the chain loads) and `add r, base` (vector
  values first through `vmovq r64, xmm`); `lea`: through its base and through its index;
* **memory, read-modify-write**: the chain runs through the memory word itself (store ->
  load forwarding); the model's latency for the memory operand is then the one that makes
  the dependency engine's store-forwarding edge (forwarding + operand latency - load
  latency) equal the measured link;
* **stores** have no register result: latency 0 (the store -> load latency is the machine's
  `store_forward_latency`);
* **merge** (a register destination written partially, its other bits kept: `mov cl, [m]`,
  `mov cx, dx`, `sete cl`; the semantics read its old value with role MERGE): the form alone,
  its destination the chain and everything else constant (`mov cl, byte ptr [rdx + 64]`
  repeated): the latency from the old value to the result, keyed by the destination operand.
  Where the destination is also read (`add cl, dl`) the merge is the data path, measured by
  the register chain already;
* **integer division** (div, idiv; 8 to 64 bits, register or memory divisor), keyed DIVIDEND:
  the implicit dividend -> quotient path, on the values the throughput experiments divide
  (instantiate.DIVIDEND / DIVISOR: a division's time depends on them). Each link puts the
  dividend back from the quotient and the remainder, q * d + r = x: `mov ebx, 0x1d0135; div
  rbx; imul rax, rbx; add rax, rdx; xor edx, edx` (companions imul and add; `xor edx, edx`,
  the high half 0 again, and the `mov` of the divisor are off the chain). The divisor is set
  by the link itself (a memory divisor: stored by it, `mov qword ptr [rcx + 64], rbx`, before
  `div qword ptr [rcx + 64]`), so the block layout (layout.py) leaves it alone and starts rax
  as DIVIDEND: a divisor it chose would be 1, since the dividend is an earlier quotient (x / 1
  keeps x, and measures a 47-bit quotient). 32- and 16-bit divisions use the same 64-bit
  imul and add (the low bits of q * d + r are x's); a byte division divides ax into al and
  ah: `div bl; movzx ecx, ah; mul bl; add rax, rcx` (companions mul8 and add). The divisor
  -> quotient path is not measured (the form's latency is the dividend's).

Moves a core may eliminate (mov r64, r64; vmovaps): a chain of a known one-cycle operation
through the move; the move's latency is the link minus the operation, 0 when eliminated.
Dependency-breaking idioms (xor r, r; vpxor x, x, x; vpcmpeqd x, x, x): a chain of a known
operation through the idiom is broken when it runs faster than the operation's own latency;
whether the idiom still takes a port is measured beside eight independent instances of the
form (which saturate its ports): two idioms added cost nothing (no port), or as much as two
more instances while two `nop`s cost nothing (a port); otherwise the front end is as narrow
as the ports and the question stays open.

The companions' latencies come from reference chains (REFERENCES), measured first: self-chains
(`add`, `imul`, `mul r8`, `shr`, `vpaddd`, `vmulps`), the flag round trip `add; adc` (adc's
carry -> register latency = link - add), the register-class round trip `vmovq xmm, r64;
vmovq r64, xmm` (timing alone cannot split it: each direction is taken as half of it), the
L1 pointer chase `mov r64, [r64 + 64]` (the machine's load-to-use latency) and `mov [m],
r64; mov r64, [m]` (store forwarding; also through an indexed address, and of an xmm register,
as cores forward kinds of data differently: measured on Zen 4, general-purpose data in 1
cycle, memory renaming, and vector data in 9).
"""

from __future__ import annotations

import functools
import hashlib
import math
from dataclasses import dataclass, field

from pmpredict.isa import semantics
from pmpredict.asm.parse import parse
from pmpredict.isa.forms import FormTemplate, Placeholder, parse_form
from pmpredict.isa.semantics import ADDRESS_ONLY, LOAD, MERGE, READ_MODIFY_WRITE, STORE
from pmpredict.measure.instantiate import DIVISOR, HARNESS_ISA, immediate
from pmpredict.model.facts import CHAIN_FACTS

_ISA = semantics.get(HARNESS_ISA)
_GPR = _ISA.register_pool("G", 64)              # rbp and rsp are never used
_VECTORS = 16
ROTATION = 4            # registers an RW destination rotates over when it is not the source
IDIOM_SATURATING = 8    # independent instances that saturate an idiom form's ports
IDIOM_ADDED = 2         # idioms (or nops) added to them
FLAGS = "flags"
DIVIDEND = "dividend"    # the source of a division's chain: its implicit dividend (rdx:rax, ax)
# the "source" of a barrier's chain (lfence, mfence): the barrier before it; its latency is
# the time the form takes back to back, what the engine charges from one barrier to the next
BARRIER = "barrier"


# --- what is measured ------------------------------------------------------------------

@dataclass(frozen=True)
class Chain:
    """One block to time and how to read it: latency per instance = cycles per link /
    `instances` - the sum of the `companions`' latencies (reference names)."""
    lines: tuple[str, ...]                  # one link, Intel syntax
    instances: int = 1                      # instances of the measured form per link
    companions: tuple[str, ...] = ()        # per instance

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


@dataclass(frozen=True)
class Reference:
    """A machine fact measured by one chain: a companion latency or a pipeline fact."""
    name: str
    chain: Chain
    description: str
    share: float = 1.0                      # the fact is this share of the chain's latency


def _reference_list() -> tuple[Reference, ...]:
    refs = [
        Reference("add", Chain(("add rax, rbx",)), "add r64, r64: self-chain"),
        Reference("imul", Chain(("imul rax, rbx",)), "imul r64, r64: self-chain"),
        Reference("mul8", Chain(("mul bl",)), "mul r8: self-chain (al -> ax)"),
        Reference("shr", Chain(("shr rax, 63",)), "shr r64, 63: self-chain"),
        Reference("adc-carry", Chain(("add rax, rbx", "adc rax, rcx"), companions=("add",)),
                  "adc r64, r64, carry -> register: add r64, r64 (flags) then adc"),
        Reference("gpr-to-vector", Chain(("vmovq xmm0, rax", "vmovq rax, xmm0")),
                  "vmovq xmm, r64: half the round trip vmovq xmm, r64; vmovq r64, xmm",
                  share=0.5),
        Reference("vector-to-gpr", Chain(("vmovq xmm0, rax", "vmovq rax, xmm0")),
                  "vmovq r64, xmm: half the round trip vmovq xmm, r64; vmovq r64, xmm",
                  share=0.5),
        Reference("load_latency", Chain(("mov rax, qword ptr [rax + 64]",)),
                  "L1 load-to-use: pointer chase mov r64, [r64 + 64]"),
        # imul closes the link: a chain of store and load alone runs at the pair's rate where
        # forwarding is faster (a core that renames the memory word; measured on Zen 4: 0
        # cycles, the pair 1 a cycle)
        Reference("store_forward_latency",
                  Chain(("mov qword ptr [rbx + 64], rax", "mov rax, qword ptr [rbx + 64]",
                         "imul rax, rbx"), companions=("imul",)),
                  "store -> load forwarding: mov [m], r64; mov r64, [m]; imul r64, r64, minus "
                  "imul (the load adds nothing beyond the load latency)"),
        Reference("store_forward_latency_indexed",
                  Chain(("mov qword ptr [rbx + rcx*8 + 64], rax",
                         "mov rax, qword ptr [rbx + rcx*8 + 64]", "imul rax, rbx"),
                        companions=("imul",)),
                  "store -> load forwarding through an indexed address: mov [b + i*8 + d], r64; "
                  "mov r64, [b + i*8 + d]; imul r64, r64, minus imul"),
        Reference("store_forward_latency_vector",
                  Chain(("movdqu xmmword ptr [rbx + 64], xmm0",
                         "movdqu xmm0, xmmword ptr [rbx + 64]")),
                  "store -> load forwarding of vector data: movdqu [m], xmm; movdqu xmm, [m]"),
        # the add closes the link: the load-op's load is the forwarded one (measured on Zen 4:
        # 8.05 a link, where a plain load renamed from the store takes 0)
        Reference("store_forward_latency_load_op",
                  Chain(("mov qword ptr [rbx + 64], rax", "add rax, qword ptr [rbx + 64]"),
                        companions=("add",)),
                  "store -> the load of a load-op: mov [m], r64; add r64, [m], minus add"),
        # a byte of a stored word: a core that renames a stored word may not rename a part
        Reference("store_forward_latency_narrow",
                  Chain(("mov qword ptr [rbx + 64], rax", "movzx eax, byte ptr [rbx + 64]",
                         "imul rax, rbx"), companions=("imul",)),
                  "store -> a narrower load inside it: mov [m], r64; movzx r32, byte [m]; "
                  "imul r64, r64, minus imul"),
        # a word store and a load of that word: a core that renames a stored dword or qword
        # may not rename a byte or a word (measured on Zen 4: movzwl of what movw stored 6.6
        # cycles, where 32- and 64-bit data is renamed, 0)
        Reference("store_forward_latency_short",
                  Chain(("mov word ptr [rbx + 64], ax", "movzx eax, word ptr [rbx + 64]",
                         "imul rax, rbx"), companions=("imul",)),
                  "store -> load forwarding of a word: mov [m], r16; movzx r32, word [m]; "
                  "imul r64, r64, minus imul"),
        # a 4-byte store under an 8-byte load: no core forwards it; the load waits
        Reference("store_forward_latency_partial",
                  Chain(("mov dword ptr [rbx + 64], eax", "mov rax, qword ptr [rbx + 64]",
                         "imul rax, rbx"), companions=("imul",)),
                  "a load wider than the store under it: mov [m], r32; mov r64, [m]; "
                  "imul r64, r64, minus imul"),
        # a link of the form chain a read-modify-write's own latency is read from (the form
        # alone), then spaced by independent adds: where a core renames the memory word only
        # from a store some instructions back, the spaced links run at the add's latency
        Reference("rmw_chain_1", Chain(("add qword ptr [rbx + 64], 1",)),
                  "read-modify-writes of one place back to back: add [m], 1 repeated"),
        Reference("rmw_chain_2", Chain(("add qword ptr [rbx + 64], 1", "add rcx, 1")),
                  "the same, one independent add between links"),
        Reference("rmw_chain_3", Chain(("add qword ptr [rbx + 64], 1", "add rcx, 1",
                                        "add rdx, 1")),
                  "the same, two independent adds between links"),
        Reference("rmw_chain_stack", Chain(("add qword ptr [rsp + 64], 1",)),
                  "read-modify-writes through rsp back to back: add [rsp + 64], 1 repeated"),
        Reference("atomic_cycles", Chain(("lock add qword ptr [rbx + 64], 1",)),
                  "atomic read-modify-write: lock add [m], imm back to back"),
        # the harness's cl is 3 (layout.SHIFT_COUNT): the flags the test wrote are replaced,
        # and only a core that waits for them anyway puts the test on the link
        Reference("shl_cl", Chain(("shl rdx, cl",)), "shl r64, cl: self-chain"),
        Reference("shift_count_flags", Chain(("test rdx, rdx", "shl rdx, cl"),
                                             companions=("shl_cl",)),
                  "a shift by cl after a flags writer: test rdx, rdx; shl rdx, cl, minus shl"),
        # every bit shifted out: the result is 0, and a core that knows it does not wait
        Reference("shift_out_latency", Chain(("vpslld xmm0, xmm0, 42",)),
                  "a vector shift by its element width or more: vpslld xmm0, xmm0, 42 "
                  "repeated"),
    ]
    for width, prefix in ((128, "xmm"), (256, "ymm"), (512, "zmm")):
        refs.append(Reference(f"vpaddd{width}", Chain((f"vpaddd {prefix}0, {prefix}0, {prefix}1",)),
                              f"vpaddd {prefix}: self-chain"))
        refs.append(Reference(f"vmulps{width}", Chain((f"vmulps {prefix}0, {prefix}0, {prefix}1",)),
                              f"vmulps {prefix}: self-chain"))
    # a vector value between kinds of operation (model/facts.py BYPASS_KEYS): each pair's
    # round trip less the two self-chains, half of it a way (timing alone cannot split it).
    # vpand, not vpaddd, and shuffles of one value: the harness's 1.0f stays 1.0f, so vmulps
    # never meets a denormal (an assist on Intel)
    refs += [
        Reference("vpand128", Chain(("vpand xmm0, xmm0, xmm1",)), "vpand xmm: self-chain"),
        Reference("vpshufd128", Chain(("vpshufd xmm0, xmm0, 27",)), "vpshufd xmm: self-chain"),
        Reference("vshufps128", Chain(("vshufps xmm0, xmm0, xmm0, 27",)),
                  "vshufps xmm: self-chain"),
        Reference("bypass_vector_fp", Chain(("vpand xmm0, xmm0, xmm1", "vmulps xmm0, xmm0, xmm1"),
                                            companions=("vpand128", "vmulps128")),
                  "vector ALU <-> FP: half of vpand; vmulps, minus both", share=0.5),
        Reference("bypass_vector_shuffle",
                  Chain(("vpand xmm0, xmm0, xmm1", "vpshufd xmm0, xmm0, 27"),
                        companions=("vpand128", "vpshufd128")),
                  "vector ALU <-> shuffle: half of vpand; vpshufd, minus both", share=0.5),
        Reference("bypass_fp_shuffle",
                  Chain(("vmulps xmm0, xmm0, xmm1", "vshufps xmm0, xmm0, xmm0, 27"),
                        companions=("vmulps128", "vshufps128")),
                  "FP <-> shuffle: half of vmulps; vshufps, minus both", share=0.5),
    ]
    return tuple(refs)


REFERENCES = {r.name: r for r in _reference_list()}
# the references whose reading is a pipeline fact of the model (model/facts.py: the facts
# whose probe is this chain)
PIPELINE_REFERENCES = CHAIN_FACTS

# how a form's chains are planned and read (plan_form, form_timing): raised with any change
# that can move a latency the reference chains do not show
PLANS_VERSION = 2


def chains_version() -> str:
    """What a model's latencies were measured with: the plans' version and a digest of the
    reference chains. A host model measured with other chains is measured again (a fixed
    reference moves the latencies derived from it; measured on Zen 4: store forwarding read 1
    cycle from the store-load pair alone, 0 closed by an imul, and read-modify-write forms
    measured after the fix were derived from 0 while the model kept 1)."""
    text = repr(sorted((r.name, r.chain.lines, r.chain.instances, r.chain.companions, r.share)
                       for r in REFERENCES.values()))
    return f"{PLANS_VERSION}.{hashlib.sha256(text.encode()).hexdigest()[:12]}"


@dataclass(frozen=True)
class SourcePlan:
    """How one source's latency is measured: one chain, or several whose maximum counts
    (lea: through the base and through the index)."""
    source: object                          # operand index, FLAGS, DIVIDEND or BARRIER
    chains: tuple[Chain, ...]
    kind: str = "register"          # register, load, rmw, move, flags, merge, division, barrier


@dataclass(frozen=True)
class IdiomPlan:
    """Dependency-breaking idiom of a form: a chain through it, and the port test blocks."""
    kind: str                               # "zero" / "ones"
    # a known operation + the idiom, per link (None: the idiom writes no register, cmp r, r)
    chain: Chain | None
    companion: str                          # the known operation's reference
    saturating: Chain                       # IDIOM_SATURATING independent instances
    with_idioms: Chain                      # ... + IDIOM_ADDED idioms
    with_nops: Chain                        # ... + IDIOM_ADDED nops
    candidate: bool = False                 # an idiom only some cores recognise


@dataclass(frozen=True)
class FormPlan:
    form: str
    sources: tuple[SourcePlan, ...] = ()
    idiom: IdiomPlan | None = None
    store: bool = False                     # a pure store: latency 0 by definition
    skipped: tuple[tuple[object, str], ...] = ()   # (source, why it is not measured)

    def chains(self) -> list[Chain]:
        out = [c for s in self.sources for c in s.chains]
        if self.idiom:
            i = self.idiom
            out += [c for c in (i.chain, i.saturating, i.with_idioms, i.with_nops) if c]
        return out


# --- rendering a form with chosen operands ------------------------------------------------

@dataclass
class _Operands:
    """Registers (family index) per register operand and (base, index, disp) per memory operand."""
    regs: dict = field(default_factory=dict)
    mem: dict = field(default_factory=dict)


def _name(cls: str, index: int, width: int | None) -> str:
    if cls == "G":
        return _ISA.register_pool("G", width or 64)[index]
    return {128: "xmm", 256: "ymm", 512: "zmm"}[width or 128] + str(index)


@functools.lru_cache(maxsize=None)
def _slots(form: str) -> tuple:
    """(operand index, placeholder) of every placeholder of the form, in text order."""
    template = parse_form(form, HARNESS_ISA)
    return tuple((i, ph) for i, op in enumerate(template.operands) for ph in op.placeholders)


def chain_immediate(width: int | None) -> int:
    """3 for an 8-bit immediate (a shift count or lane selector that keeps the result
    dependent on the source: with the harness's 43, `vpslld ymm, ymm, 43` and `vpalignr ...,
    43` give zero, and a core may then break the chain (measured on Zen 4: 0.5 cycles per
    link)); as the harness chooses for wider ones."""
    return 3 if not width or width <= 8 else immediate(width)


def render(form: str, ops: _Operands) -> str:
    template = parse_form(form, HARNESS_ISA)
    slots = _slots(form)

    def fill(ph: Placeholder, k: int) -> str:
        i = slots[k][0]
        if ph.kind == "IMM":
            return str(chain_immediate(ph.width))
        if ph.kind == "REG" or (ph.kind == "DIV" and i not in ops.mem):
            cls = "V" if ph.reg_class in ("V", "F") else "G"
            return _name(cls, ops.regs[i], ph.width)
        base, index, disp = ops.mem[i]
        if ph.kind == "MEM":
            return _GPR[base]
        if ph.kind == "DIV":
            return _GPR[index]
        return str(disp)
    mnemonic, _, rest = template.render(fill).strip().partition(" ")
    return " ".join([mnemonic.lower()] + rest.split())


def instruction(text: str):
    """InstructionSemantics of one Intel-syntax line."""
    return _ISA.instruction(parse(text, "intel").instructions[0], "intel")


# --- the operands of a form ------------------------------------------------------------------

@dataclass(frozen=True)
class _Operand:
    index: int
    kind: str               # "reg", "mem", "imm", "literal"
    cls: str = ""           # G / V
    width: int | None = None
    access: str = ""        # R, W, RW (registers)
    has_index: bool = False  # a memory operand with an index placeholder (lea)


def _operands(template: FormTemplate, access: tuple[str, ...]) -> list[_Operand]:
    out = []
    for i, (op, a) in enumerate(zip(template.operands, access)):
        if op.kind == "reg" and op.placeholders:
            ph = op.placeholders[0]
            cls = "V" if ph.reg_class in ("V", "F") else "G"
            out.append(_Operand(i, "reg", cls, ph.width or 64, a or "R"))
        elif op.kind == "mem":
            out.append(_Operand(i, "mem", has_index=any(p.kind == "DIV" for p in op.placeholders)))
        else:
            out.append(_Operand(i, op.kind))
    return out


class _Allocator:
    """Register families of each class, handed out once each, pinned ones never."""

    def __init__(self, pinned: set[str]):
        self.free = {"G": [i for i, r in enumerate(_GPR) if r not in pinned],
                     "V": [i for i in range(_VECTORS) if f"v{i}" not in pinned]}

    def take(self, cls: str) -> int:
        if not self.free[cls]:
            raise ValueError(f"no free {cls} register")
        return self.free[cls].pop(0)


_LINE_DISP = 64          # the displacement of every memory operand a chain uses


def _fill_others(ops: _Operands, operands, alloc: _Allocator, skip: set[int],
                 rotation: dict[int, list[int]], instances: int) -> None:
    """Operands not on the chain: read-only registers (constants), a register that is only
    written (a sink), and read-written ones rotating over `instances` registers."""
    for o in operands:
        if o.index in skip:
            continue
        if o.kind == "reg":
            if o.access == "RW" and instances > 1:
                rotation[o.index] = [alloc.take(o.cls) for _ in range(instances)]
            else:
                ops.regs[o.index] = alloc.take(o.cls)
        elif o.kind == "mem":
            ops.mem[o.index] = (alloc.take("G"), alloc.take("G") if o.has_index else None,
                                _LINE_DISP)


def _instances(form, ops: _Operands, rotation: dict, chain_ops, count: int) -> list[str]:
    """`count` instances: chain_ops(j) gives the chain operands of instance j."""
    lines = []
    for j in range(count):
        inst = _Operands(dict(ops.regs), dict(ops.mem))
        for i, regs in rotation.items():
            inst.regs[i] = regs[j]
        chain_ops(j, inst)
        lines.append(render(form, inst))
    return lines


# --- companions -----------------------------------------------------------------------------

def _to_class(value_cls: str, value: int, target_cls: str, target: int) -> tuple[list[str], list[str]]:
    """Lines and companion names that move a value from one register class to the other."""
    if value_cls == target_cls:
        return [], []
    if target_cls == "V":
        return [f"vmovq xmm{target}, {_GPR[value]}"], ["gpr-to-vector"]
    return [f"vmovq {_GPR[target]}, xmm{value}"], ["vector-to-gpr"]


def _carry_to_gpr(reg: int, const: int) -> tuple[list[str], list[str]]:
    return [f"adc {_GPR[reg]}, {_GPR[const]}"], ["adc-carry"]


def _value_to_address(reg: int, base: int) -> tuple[list[str], list[str]]:
    """A loaded value (any: shr by 63 leaves 0 of everything the chains load) -> an address."""
    return [f"shr {_GPR[reg]}, 63", f"add {_GPR[reg]}, {_GPR[base]}"], ["shr", "add"]


def _known_operation(cls: str, width: int, reg: int, const: int, slow: bool) -> tuple[str, str]:
    """A self-chainable operation of known latency on `reg` (the reference's name)."""
    if cls == "G":
        op = "imul" if slow else "add"
        return f"{op} {_GPR[reg]}, {_GPR[const]}", op
    op = "vmulps" if slow else "vpaddd"
    w = max(128, width)
    return f"{op} {_name('V', reg, w)}, {_name('V', reg, w)}, {_name('V', const, w)}", f"{op}{w}"


# --- planning -------------------------------------------------------------------------------------

def plan_form(form: str) -> FormPlan:
    """The chains that measure a form's latencies (ValueError: the form cannot be parsed)."""
    template = parse_form(form, HARNESS_ISA)
    fs = _ISA.form(template)
    if fs.branch or fs.trap:
        return FormPlan(form, skipped=(("*", "a branch or a trap: no latency chain"),))
    if fs.barrier and not template.operands and not fs.pinned_registers:
        return FormPlan(form, (SourcePlan(BARRIER, (Chain((render(form, _Operands()),)),),
                                          "barrier"),))
    operands = _operands(template, fs.operand_access)
    pinned = set(fs.pinned_registers)
    division = _ISA.division(template)
    if division is not None:
        return FormPlan(form, (_division_chain(form, operands, division, pinned),),
                        skipped=((0, "the divisor -> quotient path is not measured: the "
                                     "form's latency is the dividend's"),))
    regs = [o for o in operands if o.kind == "reg"]
    mem = next((o for o in operands if o.kind == "mem"), None)
    written = [o for o in regs if "W" in o.access]
    if fs.memory == STORE and not written and not fs.flags_written:
        return FormPlan(form, store=True)
    sources, skipped = [], []
    move = _is_move(form, operands, pinned)
    for s in regs:
        if "R" not in s.access:
            continue
        try:
            if move:
                plan = _move_chain(form, operands, s, pinned)
            else:
                plan = _register_chain(form, fs, operands, s, written, pinned)
        except ValueError as exc:
            skipped.append((s.index, str(exc)))
            continue
        sources.append(plan)
    if mem is not None and fs.memory in (LOAD, READ_MODIFY_WRITE, ADDRESS_ONLY):
        try:
            sources.append(_memory_chain(form, fs, operands, mem, written, pinned))
        except ValueError as exc:
            skipped.append((mem.index, str(exc)))
    for d in written:
        try:
            if "R" not in d.access and _merges(form, operands, d, pinned):
                sources.append(_merge_chain(form, operands, d, pinned))
        except ValueError as exc:
            skipped.append((d.index, str(exc)))
    if fs.flags_read:
        try:
            sources.append(_flags_chain(form, operands, written, pinned))
        except ValueError as exc:
            skipped.append((FLAGS, str(exc)))
    idiom = _idiom_plan(form, fs, operands, pinned)
    for p in sources:
        for c in p.chains:
            _check(c)
    return FormPlan(form, tuple(sources), idiom, False, tuple(skipped))


def _check(chain: Chain) -> None:
    """A chain instance must not turn into an idiom by accident (`vpxor x1, x1, x1`)."""
    for line in chain.lines:
        sem = instruction(line)
        if sem.idiom or sem.candidate_idiom:
            raise AssertionError(f"chain line {line!r} is a dependency-breaking idiom")


def _destination(s: _Operand, written: list[_Operand]) -> _Operand | None:
    same = [d for d in written if d.cls == s.cls]
    if s in same:
        return s
    return same[0] if same else None


def _register_chain(form, fs, operands, s: _Operand, written, pinned) -> SourcePlan:
    alloc = _Allocator(pinned)
    d = _destination(s, written)
    if d is not None:
        if d.index != s.index and "W" in s.access:
            raise ValueError("the source is also written: a chain through it measures that too")
        count = ROTATION if (d.index != s.index and d.access == "RW") else 1
        chain_regs = [alloc.take(s.cls) for _ in range(count)]
        ops, rotation = _Operands(), {}
        _fill_others(ops, operands, alloc, {s.index, d.index}, rotation, count)

        def chain_ops(j, inst):
            inst.regs[d.index] = chain_regs[j]
            inst.regs[s.index] = chain_regs[j - 1]
        return SourcePlan(s.index, (Chain(tuple(_instances(form, ops, rotation, chain_ops, count)),
                                          count),))
    other = next((o for o in written if o.kind == "reg"), None)
    c = alloc.take(s.cls)
    ops, rotation = _Operands(), {}
    if other is not None:
        t = alloc.take(other.cls)
        _fill_others(ops, operands, alloc, {s.index, other.index}, rotation, 1)
        ops.regs[s.index], ops.regs[other.index] = c, t
        lines, names = _to_class(other.cls, t, s.cls, c)
        return SourcePlan(s.index, (Chain(tuple([render(form, ops)] + lines), 1, tuple(names)),))
    if "CF" not in fs.flags_written:
        raise ValueError("no register result and no carry flag to chain through")
    g = c if s.cls == "G" else alloc.take("G")
    const = alloc.take("G")
    _fill_others(ops, operands, alloc, {s.index}, rotation, 1)
    ops.regs[s.index] = c
    lines, names = _carry_to_gpr(g, const)
    more, more_names = _to_class("G", g, s.cls, c)
    return SourcePlan(s.index, (Chain(tuple([render(form, ops)] + lines + more), 1,
                                      tuple(names + more_names)),), "flags")


def _is_move(form, operands, pinned) -> bool:
    regs = [o for o in operands if o.kind == "reg"]
    if len(regs) != 2 or len(operands) != 2:
        return False
    alloc = _Allocator(pinned)
    ops = _Operands({o.index: alloc.take(o.cls) for o in regs})
    return instruction(render(form, ops)).move


def _move_chain(form, operands, s: _Operand, pinned) -> SourcePlan:
    """known operation on A; move B <- A; known operation on B; move A <- B (per link: two
    instances of the move, two of the operation)."""
    d = next(o for o in operands if o.index != s.index)
    alloc = _Allocator(pinned)
    a, b, const = alloc.take(s.cls), alloc.take(s.cls), alloc.take(s.cls)
    lines, name = [], ""
    for src, dst in ((a, b), (b, a)):
        line, name = _known_operation(s.cls, s.width, src, const, slow=False)
        lines += [line, render(form, _Operands({s.index: src, d.index: dst}))]
    return SourcePlan(s.index, (Chain(tuple(lines), 2, (name,)),), "move")


def _memory_chain(form, fs, operands, m: _Operand, written, pinned) -> SourcePlan:
    alloc = _Allocator(pinned)
    if fs.memory == READ_MODIFY_WRITE:
        ops, rotation = _Operands(), {}
        _fill_others(ops, operands, alloc, set(), rotation, 1)
        return SourcePlan(m.index, (Chain((render(form, ops),)),), "rmw")
    dest = next((o for o in written if o.kind == "reg"), None)
    if fs.memory == ADDRESS_ONLY:
        if dest is None or dest.cls != "G":
            raise ValueError("an address computation without a general-purpose result")
        chains = []
        for through in ("base", "index") if m.has_index else ("base",):
            c, other = alloc.take("G"), alloc.take("G")
            ops, rotation = _Operands(), {}
            _fill_others(ops, operands, alloc, {m.index, dest.index}, rotation, 1)
            ops.regs[dest.index] = c
            ops.mem[m.index] = ((c, other if m.has_index else None, _LINE_DISP) if through == "base"
                                else (other, c, _LINE_DISP))
            chains.append(Chain((render(form, ops),)))
            alloc = _Allocator(pinned)
        return SourcePlan(m.index, tuple(chains), "load")
    c, base = alloc.take("G"), alloc.take("G")
    ops, rotation = _Operands(), {}
    if dest is not None:
        t = c if dest.cls == "G" else alloc.take(dest.cls)
        _fill_others(ops, operands, alloc, {m.index, dest.index}, rotation, 1)
        ops.regs[dest.index] = t
        lines, names = _to_class(dest.cls, t, "G", c)
    elif "CF" in fs.flags_written:
        const = alloc.take("G")
        _fill_others(ops, operands, alloc, {m.index}, rotation, 1)
        lines, names = _carry_to_gpr(c, const)
    else:
        raise ValueError("a load without a register result or a carry flag")
    ops.mem[m.index] = (c, None, _LINE_DISP)
    more, more_names = _value_to_address(c, base)
    return SourcePlan(m.index, (Chain(tuple([render(form, ops)] + lines + more), 1,
                                      tuple(names + more_names)),), "load")


def _merge_operands(operands, d: _Operand, pinned) -> _Operands:
    """d on the first free register of its class, every other operand constant."""
    alloc = _Allocator(pinned)
    ops, rotation = _Operands(), {}
    ops.regs[d.index] = alloc.take(d.cls)
    _fill_others(ops, operands, alloc, {d.index}, rotation, 1)
    return ops


def _merges(form, operands, d: _Operand, pinned) -> bool:
    """Whether writing destination d keeps the rest of its register (an 8/16-bit GPR): the
    semantics of an instance read its old value with role MERGE."""
    line = render(form, _merge_operands(operands, d, pinned))
    return any(r.role == MERGE and r.operand == d.index for r in instruction(line).reads)


def _merge_chain(form, operands, d: _Operand, pinned) -> SourcePlan:
    """The form repeated, its destination the chain through the merge: `mov cl, byte ptr
    [rdx + 64]`, each instance waiting for the old rcx (not for its load, whose address is
    constant)."""
    return SourcePlan(d.index, (Chain((render(form, _merge_operands(operands, d, pinned)),)),),
                      "merge")


def _division_chain(form, operands, division, pinned) -> SourcePlan:
    """The dividend -> quotient chain of a division (see the module docstring): the link sets
    its divisor to DIVISOR (in memory too), divides, and puts the dividend back from quotient
    and remainder, so every link divides what the throughput experiments divide."""
    alloc = _Allocator(pinned | {"rax", "rdx"})
    d = alloc.take("G")
    lines = [f"mov {_name('G', d, 32)}, {DIVISOR:#x}"]
    ops = _Operands()
    if operands[0].kind == "mem":
        base = alloc.take("G")
        ops.mem[0] = (base, None, _LINE_DISP)
        lines.append(f"mov qword ptr [{_GPR[base]} + {_LINE_DISP}], {_GPR[d]}")
    else:
        ops.regs[0] = d
    lines.append(render(form, ops))
    if division.width == 8:             # ax / d -> al quotient, ah remainder: ax = al * d + ah
        t = alloc.take("G")             # a register movzx can write from ah (no REX prefix)
        if _GPR[t] not in ("rbx", "rcx", "rsi", "rdi"):
            raise ValueError("no legacy register for the remainder in ah")
        lines += [f"movzx {_name('G', t, 32)}, ah", f"mul {_name('G', d, 8)}",
                  f"add rax, {_GPR[t]}"]
        companions = ("mul8", "add")
    else:                               # the low `width` bits of q * d + r are the dividend's
        lines += [f"imul rax, {_GPR[d]}", "add rax, rdx", "xor edx, edx"]
        companions = ("imul", "add")
    return SourcePlan(DIVIDEND, (Chain(tuple(lines), 1, companions),), "division")


def _flags_chain(form, operands, written, pinned) -> SourcePlan:
    """add produces the flags from the register the form writes: add r, k; F r, ..."""
    dest = next((o for o in written if o.kind == "reg" and o.cls == "G"), None)
    if dest is None:
        raise ValueError("reads flags but writes no general-purpose register")
    alloc = _Allocator(pinned)
    c, const = alloc.take("G"), alloc.take("G")
    ops, rotation = _Operands(), {}
    _fill_others(ops, operands, alloc, {dest.index}, rotation, 1)
    ops.regs[dest.index] = c
    line, name = _known_operation("G", 64, c, const, slow=False)
    return SourcePlan(FLAGS, (Chain((line, render(form, ops)), 1, (name,)),), "flags")


def _idiom_plan(form, fs, operands, pinned) -> IdiomPlan | None:
    regs = [o for o in operands if o.kind == "reg"]
    sources = [o for o in regs if "R" in o.access]
    if len(operands) != len(regs) or len(sources) < 2 or not regs:
        return None
    cls, width = regs[0].cls, regs[0].width
    if any(o.cls != cls for o in regs):
        return None
    alloc = _Allocator(pinned)
    z = alloc.take(cls)
    same = _Operands({o.index: z for o in regs})
    idiom_line = render(form, same)
    sem = instruction(idiom_line)
    kind = sem.idiom or sem.candidate_idiom
    if kind is None:
        return None
    const = alloc.take(cls)
    known, name = _known_operation(cls, width, z, const, slow=True)
    # an idiom that writes no register (cmp r, r) breaks no chain a timing could show
    chain = Chain((known, idiom_line), 1) if any("W" in o.access for o in regs) else None
    # eight independent instances: destinations of their own, sources constant
    alloc = _Allocator(pinned)
    consts = {o.index: alloc.take(cls) for o in sources if "W" not in o.access}
    saturating = []
    for _ in range(IDIOM_SATURATING):
        dst = alloc.take(cls)
        saturating.append(render(form, _Operands({**consts, **{o.index: dst for o in regs
                                                                if "W" in o.access}})))
    idioms = [render(form, _Operands({o.index: r for o in regs}))
              for r in (alloc.take(cls) for _ in range(IDIOM_ADDED))]
    return IdiomPlan(kind, chain, name, Chain(tuple(saturating), IDIOM_SATURATING),
                     Chain(tuple(saturating + idioms), IDIOM_SATURATING),
                     Chain(tuple(saturating + ["nop"] * IDIOM_ADDED), IDIOM_SATURATING),
                     candidate=sem.idiom is None)


# --- reading the timings -----------------------------------------------------------------------

# a measured latency this close to an integer is that integer (timing noise only ever adds)
SNAP = 0.08
# ... and one above an integer by at most this share of it (at most SNAP_CAP cycles): the
# clock steps while the harness runs (an Intel cloud guest: 3.69-4.09 GHz in 100 MHz steps),
# and a run at a lower step than the process's fastest calibration reads slow by that share
# (there, the other guest busy: an add chain 1.02-1.05 cycles a link, imul 3.11-3.13, the
# load chain 5.28-5.32, reproduced)
SNAP_ABOVE = 0.07
SNAP_CAP = 0.4
# an eliminated move costs less than this (cycles) on top of the known operation
ELIMINATED_BELOW = 0.5
# a chain through an idiom that runs below this share of the known operation's latency is broken
BROKEN_BELOW = 0.75
NO_PORT_WITHIN = 1.10     # idioms added: at most this factor on the saturated time -> no port
PORT_FROM = 1.15          # ... at least this factor, while nops stay within NO_PORT_WITHIN -> port


def snap(value: float) -> float:
    nearest = round(value)
    if abs(value - nearest) <= SNAP:
        return float(nearest)
    below = math.floor(value)
    if below >= 1 and value - below <= min(SNAP_ABOVE * below, SNAP_CAP):
        return float(below)
    return round(value, 2)


def reference_values(cycles: dict[str, float | None]) -> dict[str, float]:
    """Reference name -> latency from the cycles per link of each reference chain (None:
    failed). References are evaluated in order: a companion is known before it is used."""
    values: dict[str, float] = {}
    for ref in REFERENCES.values():
        c = cycles.get(ref.name)
        if c is None or any(n not in values for n in ref.chain.companions):
            continue
        raw = c / ref.chain.instances - sum(values[n] for n in ref.chain.companions)
        values[ref.name] = snap(max(0.0, raw * ref.share))
    return values


def chain_latency(chain: Chain, cycles: float | None, refs: dict[str, float]) -> float | None:
    if cycles is None or any(n not in refs for n in chain.companions):
        return None
    return max(0.0, cycles / chain.instances - sum(refs[n] for n in chain.companions))


@dataclass
class FormTiming:
    """What the chains say about one form."""
    sources: dict = field(default_factory=dict)     # source -> latency (cycles)
    eliminated: bool | None = None                  # a move: eliminated at rename
    idiom: str | None = None
    idiom_breaks: bool | None = None                # the idiom breaks the chain
    idiom_ports: bool | None = None
    candidate: bool = False                         # an idiom only some cores recognise
    notes: list = field(default_factory=list)
    through_memory: tuple = ()                      # sources measured read-modify-write


def form_timing(plan: FormPlan, cycles: dict[Chain, float | None], refs: dict[str, float]
                ) -> FormTiming:
    """The latencies of a form from the cycles per link of its chains."""
    out = FormTiming()
    if plan.store:
        out.sources["*"] = 0.0
        return out
    for source, why in plan.skipped:
        out.notes.append(f"source {source}: {why}")
    load = refs.get("load_latency")
    forward = refs.get("store_forward_latency")
    for sp in plan.sources:
        values = [chain_latency(c, cycles.get(c), refs) for c in sp.chains]
        values = [v for v in values if v is not None]
        if not values:
            out.notes.append(f"source {sp.source}: not measured")
            continue
        value = max(values)
        if sp.kind == "rmw":
            if load is None or forward is None:
                out.notes.append(f"source {sp.source}: needs the load and forwarding latencies")
                continue
            # the dependency engine charges forwarding + (operand latency - load latency)
            value = max(0.0, value - forward + load)
            out.through_memory += (sp.source,)
        if sp.kind == "move":
            out.eliminated = value < ELIMINATED_BELOW
        out.sources[sp.source] = snap(value)
    if plan.idiom:
        i = plan.idiom
        out.idiom, out.candidate = i.kind, i.candidate
        known = refs.get(i.companion)
        link = cycles.get(i.chain) if i.chain else None
        if known and link is not None:
            out.idiom_breaks = link < BROKEN_BELOW * known
        t0, t1, t2 = (cycles.get(c) for c in (i.saturating, i.with_idioms, i.with_nops))
        if None not in (t0, t1, t2) and t0 > 0:
            if t1 <= NO_PORT_WITHIN * t0:
                out.idiom_ports = False
            elif t1 >= PORT_FROM * t0 and t2 <= NO_PORT_WITHIN * t0:
                out.idiom_ports = True
            else:
                out.notes.append("idiom ports: the front end is as narrow as the ports "
                                 f"(saturated {t0:.2f}, + idioms {t1:.2f}, + nops {t2:.2f})")
        if i.chain is None and out.idiom_ports is not None:
            # recognised at rename where it takes no port; taking one, taken as not
            out.idiom_breaks = not out.idiom_ports
    return out
