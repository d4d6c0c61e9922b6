"""Register names by ISA, class and width: the pools forms are instantiated from.

Reserved registers are left out of the pools: x86 rsp/rbp (stack), and the
harness's base and counter registers are taken out by the caller as needed.
"""

from __future__ import annotations

X86_GPR64 = ["rax", "rbx", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13",
             "r14", "r15"]
X86_GPR32 = ["eax", "ebx", "ecx", "edx", "esi", "edi", "r8d", "r9d", "r10d", "r11d", "r12d",
             "r13d", "r14d", "r15d"]
X86_GPR16 = ["ax", "bx", "cx", "dx", "si", "di", "r8w", "r9w", "r10w", "r11w", "r12w", "r13w",
             "r14w", "r15w"]
X86_GPR8 = ["al", "bl", "cl", "dl", "sil", "dil", "r8b", "r9b", "r10b", "r11b", "r12b", "r13b",
            "r14b", "r15b"]


def x86_registers(reg_class: str, width: int) -> list[str]:
    """Pool of x86-64 register names for class G (general) or V (vector)."""
    if reg_class == "G":
        pools = {64: X86_GPR64, 32: X86_GPR32, 16: X86_GPR16, 8: X86_GPR8}
        if width in pools:
            return list(pools[width])
    if reg_class in ("V", "F"):
        prefix = {128: "xmm", 256: "ymm", 512: "zmm"}.get(width)
        if prefix:
            return [f"{prefix}{i}" for i in range(16)]
    raise ValueError(f"no x86 register pool for class {reg_class!r} width {width}")


def aarch64_registers(reg_class: str, width: int | None) -> list[str]:
    """Pool of AArch64 register names; width None (VEC) gives the v registers."""
    if reg_class == "G":
        prefix = {64: "x", 32: "w"}.get(width)
        if prefix:
            return [f"{prefix}{i}" for i in range(29)]      # x29 fp, x30 lr, sp reserved
    if reg_class == "F":
        prefix = {None: "v", 128: "q", 64: "d", 32: "s", 16: "h", 8: "b"}.get(width)
        if prefix:
            return [f"{prefix}{i}" for i in range(32)]
    raise ValueError(f"no AArch64 register pool for class {reg_class!r} width {width}")


def registers(isa: str, reg_class: str, width: int | None) -> list[str]:
    return aarch64_registers(reg_class, width) if isa == "aarch64" else x86_registers(reg_class, width)
