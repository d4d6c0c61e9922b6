"""Exporter decisions (no external tools): grouping, cycle arithmetic, operand classes, checks."""

import json

import pytest

from pmpredict.isa import semantics
from pmpredict.isa.osaca_forms import foreign_form_name, parse_foreign_form_name
from pmpredict.errors import InputError
from pmpredict.exporters.common import (DEFAULT_LATENCY, DEFAULT_LOAD_LATENCY, ExportError,
                                        check_exportable, latency_of, representative,
                                        singleton_cycles)
from pmpredict.exporters.llvm import (covering_group, group_name, plan_llvm, render_llvm,
                                      whole_cycles, write_cycles, write_latency)
from pmpredict.exporters.opcodes import Resolution, parse_show_inst
from pmpredict.exporters.osaca import port_pressure, pure_load_forms, pure_store_forms, render_osaca
from pmpredict.isa.osaca_forms import osaca_identity, osaca_operands
from pmpredict.isa.forms import parse_form
from pmpredict.model.machine import MachineModel

ADD_RI = "ADD_((REG:RW:G:64)),_((IMM:32))"
ADD_RM = "ADD_((REG:RW:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
MOV_LD = "MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
MOV_ST = "MOV_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))"
VADD = "VADDPD_((REG:W:V:256)),_((REG:R:V:256)),_((REG:R:V:256))"
LEA_SIB = "LEA_((REG:W:G:64)),__[((MEM:64))+2*((DIV:64))+((IMM:8))]"


def toy(uops, latency=None, ports=("0", "1", "2", "3"), r_max=None, isa="x86"):
    return MachineModel("toy", isa, tuple(ports), uops, r_max=r_max, latency=latency or {})


# --- LLVM decisions -------------------------------------------------------------------

def test_group_cycles_include_member_cycles_of_the_same_write():
    # 1 x {P0} + 2 x {P0,P1}  ->  [P0: 1, P01: 3]  (llvm-tablegen.md)
    assert write_cycles(((0b01, 1), (0b11, 2))) == [(0b01, 1), (0b11, 3)]
    # disjoint sets keep their own cycles; a superset collects every subset
    assert write_cycles(((0b0001, 1), (0b0110, 2), (0b1111, 1))) == [(0b0001, 1), (0b0110, 2),
                                                                      (0b1111, 4)]


def test_overlapping_groups_get_one_covering_supergroup():
    assert covering_group([0b011, 0b110]) == 0b111
    assert covering_group([0b011, 0b110, 0b111]) is None        # already covered
    assert covering_group([0b0011, 0b1100]) is None              # disjoint
    assert covering_group([0b0011, 0b0111]) is None              # nested


def test_group_names():
    assert group_name("PmpX", ["0", "1", "5", "6"]) == "PmpXPort0156"
    assert group_name("PmpX", ["0DV", "1"]) == "PmpXPort0DV_1"


def test_shared_opcode_takes_the_plainest_then_slowest_form():
    plain = "_add_((REG:W:G:64)),_((REG:R:G:64)),_((REG:R:G:64))"
    lsl = "_add_((REG:W:G:64)),_((REG:R:G:64)),_((REG:R:G:64)),_lsl_2"
    asr = "_add_((REG:W:G:64)),_((REG:R:G:64)),_((REG:R:G:64)),_asr_3"
    cycles = {plain: 0.5, lsl: 1.0, asr: 2.0}
    order = {lsl: 0, asr: 1, plain: 2}
    # compilers emit the plain spelling most: it wins even though the shifted ones are slower
    assert representative([lsl, asr, plain], cycles, order, "aarch64") == plain
    # among equally plain forms: the slowest, then the first in model order
    assert representative([lsl, asr], cycles, order, "aarch64") == asr
    assert representative([lsl, asr], {lsl: 1.0, asr: 1.0}, order, "aarch64") == lsl


def test_plan_binds_each_opcode_once_and_lists_unresolved():
    m = toy({ADD_RI: ((0b0011, 1),), "ADD_((REG:RW:G:64)),_((IMM:8))": ((0b0001, 2),),
             VADD: ((0b0100, 1),)}, latency={VADD: 4.4})
    res = {ADD_RI: Resolution("ADD64ri32"), "ADD_((REG:RW:G:64)),_((IMM:8))": Resolution("ADD64ri32"),
           VADD: Resolution(None, None, "llvm-mc: invalid instruction")}
    plan = plan_llvm(m, 19, res)
    assert plan.opcodes == ["ADD64ri32"]
    assert plan.unresolved == [(VADD, "llvm-mc: invalid instruction")]
    (w,) = plan.writes
    # the imm8 form (2 cycles on one port) is slower than imm32 (1 uop on two ports)
    assert (w.resources, w.cycles, w.micro_ops) == (["PmpToyPort0"], [2], 2)
    assert plan.merged == [("ADD64ri32", "ADD_((REG:RW:G:64)),_((IMM:8))", [ADD_RI])]
    text, _ = render_llvm(m, 14, resolutions=res)
    assert "ResourceCycles = [2]" in text and "ReleaseAtCycles" not in text
    assert f"//   {VADD}  -- llvm-mc: invalid instruction" in text
    assert text.count("InstRW<") == 1


def test_issue_width_from_r_max_and_latency_rounding():
    m = toy({VADD: ((0b0110, 3),)}, latency={VADD: 4.5}, r_max=3.5)
    plan = plan_llvm(m, 19, {VADD: Resolution("VADDPDYrr")})
    assert plan.issue_width == 4
    (w,) = plan.writes
    assert (w.latency, w.latency_default, w.resources, w.cycles) == (5, False, ["PmpToyPort12"], [3])
    assert plan_llvm(toy({VADD: ((1, 1),)}), 19, {VADD: Resolution("X")}).issue_width == 4


def test_llvm_latency_is_rounded_up_and_a_load_op_write_includes_the_load():
    assert [whole_cycles(v) for v in (0.0, 4.0, 4.01, 4.4, 4.5, 3.0000000000000004)] == \
        [0, 4, 5, 5, 5, 3]
    base = toy({VADD: ((1, 1),), ADD_RM: ((3, 1),), MOV_LD: ((4, 1),), LEA_SIB: ((2, 1),)})
    m = base.with_uops(base.uops, latency={VADD: 4.4, ADD_RM: 1.0, MOV_LD: 5.0, LEA_SIB: 1.0},
                       operand_latency={ADD_RM: {1: 6.0}, LEA_SIB: {1: 3.0}, VADD: {2: 7.0}})
    # the memory operand's latency for a form that reads memory; lea reads none, vaddpd has
    # no memory operand: their own latency
    assert [write_latency(m, f).value for f in (VADD, ADD_RM, MOV_LD, LEA_SIB)] == [4.4, 6.0, 5.0, 1.0]
    res = {VADD: Resolution("VADDPDYrr"), ADD_RM: Resolution("ADD64rm"),
           MOV_LD: Resolution("MOV64rm"), LEA_SIB: Resolution("LEA64r")}
    plan = plan_llvm(m, 19, res)
    assert {w.opcodes[0]: w.latency for w in plan.writes} == {"VADDPDYrr": 5, "ADD64rm": 6,
                                                              "MOV64rm": 5, "LEA64r": 1}
    text, _ = render_llvm(m, 19, resolutions=res)
    assert f"// {VADD}  (model latency 4.4)" in text
    timed = m.with_uops(m.uops, pipeline={"window": 96.5, "load_latency": 4.2},
                        pipeline_source={"window": "osaca:\nskx.yml"},
                        latency_source={VADD: "llvm-mca 19.1.7 -mcpu=skylake"})
    text, _ = render_llvm(timed, 19, resolutions=res)
    assert "let MicroOpBufferSize = 97;  // the model's pipeline window (osaca: skx.yml)" in text
    assert "let LoadLatency = 5;  // the model's pipeline load_latency\n" in text
    assert "// Latencies of 1 form(s) from: llvm-mca 19.1.7 -mcpu=skylake" in text
    assert "MicroOpBufferSize" not in render_llvm(m, 19, resolutions=res)[0]


# --- validation -----------------------------------------------------------------------

def test_rejects_what_tblgen_lets_through():
    with pytest.raises(ExportError, match="no uops"):
        check_exportable(toy({ADD_RI: ()}))
    negative = toy({ADD_RI: ((1, 1),)})
    object.__setattr__(negative, "latency", {ADD_RI: -5})     # bypass the model's own check
    with pytest.raises(ExportError, match="latency must be a finite number >= 0.*-5"):
        check_exportable(negative)
    broken = toy({ADD_RI: ((1, 1),)})
    object.__setattr__(broken, "uops", {ADD_RI: ((1, 0),)})     # bypass the model's own check
    with pytest.raises(ExportError, match="uop count must be an integer >= 1.*0"):
        check_exportable(broken)
    assert issubclass(ExportError, InputError)


# --- latency defaults, singleton throughput --------------------------------------------

def test_latency_default_depends_on_memory_read():
    m = toy({ADD_RI: ((1, 1),), ADD_RM: ((3, 2),), MOV_ST: ((4, 1),), VADD: ((2, 1),)},
            latency={VADD: 4.0})
    assert latency_of(m, VADD).value == 4.0 and latency_of(m, VADD).measured
    assert latency_of(m, ADD_RI).value == DEFAULT_LATENCY and not latency_of(m, ADD_RI).measured
    assert latency_of(m, ADD_RM).value == DEFAULT_LATENCY + DEFAULT_LOAD_LATENCY
    assert latency_of(m, MOV_ST).value == DEFAULT_LATENCY         # a store reads no memory
    assert latency_of(toy({LEA_SIB: ((1, 1),)}), LEA_SIB).value == DEFAULT_LATENCY   # no data
    # an AArch64 vector element is not a memory operand
    fmla = "_fmla_((REG:W:F:VEC)).2d,_((REG:R:F:VEC)).2d,_((REG:R:F:VEC)).d[0]"
    assert latency_of(toy({fmla: ((1, 1),)}, isa="aarch64"), fmla).value == DEFAULT_LATENCY
    assert not semantics.get("aarch64").form(fmla).reads_memory


def test_singleton_cycles_from_the_simulator():
    m = toy({ADD_RI: ((0b0011, 1),), ADD_RM: ((0b0001, 3), (0b0110, 1))}, r_max=4)
    assert singleton_cycles(m) == {ADD_RI: 0.5, ADD_RM: 3.0}


# --- OSACA operand classes --------------------------------------------------------------

def test_x86_operands_are_in_att_order_with_all_memory_keys():
    name, ops = osaca_identity(ADD_RM, "x86")
    assert name == "add"
    assert ops == [{"class": "memory", "base": "gpr", "offset": "imd", "index": None, "scale": 1},
                   {"class": "register", "name": "gpr"}]
    assert osaca_identity(MOV_ST, "x86")[1][::-1][0]["class"] == "memory"     # Intel dest first
    assert osaca_identity(VADD, "x86") == ("vaddpd", [{"class": "register", "name": "ymm"}] * 3)
    assert osaca_identity(ADD_RI, "x86")[1][0] == {"class": "immediate", "imd": "int"}
    assert osaca_identity(LEA_SIB, "x86")[1][0] == {"class": "memory", "base": "gpr",
                                                    "offset": "imd", "index": "gpr", "scale": 2}
    assert osaca_identity("MOVZX_((REG:W:G:64)),_byte_ptr_[((MEM:64))_+_((MIMM:16))]",
                          "x86")[0] == "movzb"
    assert osaca_identity("MOV_((REG:W:G:64)),_((IMM:64))", "x86")[0] == "movabs"


def test_aarch64_operands_follow_osaca_parser():
    t = parse_form("_add_((REG:W:G:64)),_((REG:R:G:64)),_((REG:R:G:32)),_sxth_3")
    assert osaca_operands(t) == [{"class": "register", "prefix": "x"}] * 2 + [
        {"class": "register", "prefix": "w"}, {"class": "identifier"},
        {"class": "immediate", "imd": "int"}]
    # lsl/lsr/asr/ror/sxtw/uxtw/uxtb are folded into the register by OSACA's parser
    t = parse_form("_add_((REG:W:G:64)),_((REG:R:G:64)),_((REG:R:G:64)),_lsl_2")
    assert len(osaca_operands(t)) == 3
    t = parse_form("_fmla_((REG:W:F:VEC)).2d,_((REG:R:F:VEC)).2d,_((REG:R:F:VEC)).d[0]")
    assert osaca_operands(t) == [{"class": "register", "prefix": "v", "shape": "d"}] * 3
    t = parse_form("_ldr_((REG:W:F:128)),_[((MEM:64)),_((MIMM:16))]")
    assert osaca_operands(t) == [{"class": "register", "prefix": "q"},
                                 {"class": "memory", "base": "x", "offset": "imd", "index": None,
                                  "scale": 1, "pre_indexed": False, "post_indexed": False}]
    t = parse_form("_fcmp_((REG:R:F:64)),_#0.0")
    assert osaca_operands(t)[1] == {"class": "immediate", "imd": "double"}


def test_port_pressure_is_a_list_even_for_multi_character_ports():
    m = toy({ADD_RI: ((0b11, 2),)}, ports=("10", "0DV"))
    assert port_pressure(m, m.uops[ADD_RI]) == [[2, ["10", "0DV"]]]
    text = render_osaca(m)
    assert 'port_pressure: [[2, ["10", "0DV"]]]' in text
    assert text.rstrip().split("\n")[-1].startswith("  pmpredict_form")   # instruction_forms last
    assert text.index("instruction_forms:") > text.index("pmpredict:")


def test_load_store_defaults_come_from_pure_load_and_store_forms():
    m = toy({ADD_RM: ((0b0011, 1), (0b0100, 1)), MOV_LD: ((0b0100, 1),), MOV_ST: ((0b1000, 1),)})
    assert pure_load_forms(m) == [MOV_LD] and pure_store_forms(m) == [MOV_ST]
    text = render_osaca(m)
    assert 'load_throughput_default: [[1, ["2"]]]' in text
    assert 'store_throughput_default: [[1, ["3"]]]' in text


def test_throughput_is_never_zero_and_default_latency_is_flagged():
    m = toy({ADD_RI: ((0b1111, 1),)})
    text = render_osaca(m)
    assert "throughput: 0.25" in text
    assert "latency: 1.0  # default: not measured" in text and "pmpredict_latency: default" in text


# --- foreign OSACA names, llvm-mc output parsing -----------------------------------------

@pytest.mark.parametrize("isa, ops", [
    ("x86", [{"class": "immediate", "imd": "int"},
             {"class": "memory", "base": "gpr", "offset": None, "index": "gpr", "scale": 8}]),
    ("aarch64", [{"class": "register", "prefix": "q"},
                 {"class": "memory", "base": "x", "offset": "imd", "index": None, "scale": 1,
                  "pre_indexed": False, "post_indexed": True}]),
])
def test_foreign_form_names_round_trip(isa, ops):
    name = foreign_form_name("LDR", ops)
    assert name.startswith("osaca:ldr ")
    assert parse_foreign_form_name(name, isa) == ("ldr", ops)


def test_foreign_form_name_spelling():
    assert foreign_form_name("add", [{"class": "immediate", "imd": "int"},
                                     {"class": "register", "name": "gpr"}]) == "osaca:add imd:int,gpr"
    assert foreign_form_name("fmla", [{"class": "register", "prefix": "v", "shape": "d"}] * 3) == \
        "osaca:fmla v.d,v.d,v.d"
    assert foreign_form_name("cltq", []) == "osaca:cltq"


def test_parse_show_inst_maps_labels_and_errors():
    stdout = ("pmpredict_form_0:\n\taddq\t$42, %rcx                       # <MCInst #618 ADD64ri8\n"
              "#  <MCOperand Reg:54>>\npmpredict_form_1:\npmpredict_form_2:\n"
              "\tabs\tv1.2d, v2.2d   // <MCInst #1398 ABSv2i64\n")
    stderr = "<stdin>:5:1: error: invalid instruction mnemonic 'bogus'\n"
    out = parse_show_inst(stdout, stderr, {3: 0, 5: 1, 7: 2})
    assert out[0] == Resolution("ADD64ri8", "addq $42, %rcx")
    assert out[1].opcode is None and "invalid instruction mnemonic" in out[1].error
    assert out[2].opcode == "ABSv2i64" and out[2].asm == "abs v1.2d, v2.2d"


def test_shipped_opcode_table_covers_the_artifact_forms():
    from pmpredict.exporters.opcodes import SHIPPED
    with open(SHIPPED) as f:
        table = json.load(f)
    assert len(table["x86"]) >= 310 and len(table["aarch64"]) == 390
    assert table["x86"][ADD_RI]["opcode"] == "ADD64ri32"
    assert all("opcode" in v for v in table["x86"].values())


def test_unwritable_output_is_a_located_error(tmp_path):
    from pmpredict.exporters.osaca import export_osaca
    target = tmp_path / "no" / "such" / "dir.yml"
    with pytest.raises(InputError, match="cannot write") as info:
        export_osaca(toy({ADD_RI: ((1, 1),)}), str(target))
    assert info.value.path == str(target)


def test_odd_model_names_stay_inside_comments_and_identifiers(tmp_path):
    from pmpredict.exporters.osaca import export_osaca
    from pmpredict.formats.model_files import load_model
    with pytest.raises(ValueError, match="printable"):          # a newline would end a comment
        MachineModel('we"ird\nname 2', "x86", ("0", "1"), {ADD_RI: ((3, 1),)})
    m = MachineModel('we"ird # name 2', "x86", ("0", "1"), {ADD_RI: ((3, 1),)})
    path = str(tmp_path / "w.yml")
    export_osaca(m, path)
    assert load_model(path).name == m.name
    text, plan = render_llvm(m, 19, self_contained=True, resolutions={ADD_RI: Resolution("ADD64ri32")})
    assert plan.prefix == "PmpWeIrdName2"
    assert 'ProcessorModel<"pmpredict-we-ird-name-2"' in text
    assert all(line.startswith(("//", "def", "let", "}", "  ", "include", "class")) or not line
               for line in text.splitlines())


# --- the registry behind `pmpredict export --format` ---------------------------------------

def _export_help(capsys) -> str:
    from pmpredict.cli import main
    with pytest.raises(SystemExit) as done:
        main(["export", "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


def test_every_registered_exporter_is_in_the_export_help(capsys):
    import argparse

    from pmpredict.exporters import registry
    text = _export_help(capsys)
    assert "--format {" + ",".join(registry.names()) + "}" in text
    words = " ".join(text.split())          # argparse wraps the description
    for exporter in registry.EXPORTERS:
        own = argparse.ArgumentParser(add_help=False)
        exporter.add_arguments(own)
        for action in own._actions:
            for flag in action.option_strings:
                assert flag in text, (exporter.name, flag)
            assert " ".join((action.help or "").split()) in words, (exporter.name, action.help)
        assert exporter.description in words, exporter.name


def test_a_registered_exporter_drives_the_command(tmp_path, monkeypatch, capsys):
    from pmpredict.cli import main
    from pmpredict.exporters import registry
    from pmpredict.exporters.common import ExportResult
    from pmpredict.exporters.exporter import Exporter
    calls = []

    def add_arguments(parser):
        parser.add_argument("--fake-level", type=int, choices=[1, 2], default=1,
                            help="fake: how fake the file is")

    def export(model, path, args, source):
        calls.append((model.name, path, args.fake_level, source))
        with open(path, "w") as f:
            f.write("fake\n")
        return ExportResult(path, "fake", len(model.forms), ())

    fake = Exporter("fake", "a fake file", add_arguments, export)
    monkeypatch.setattr(registry, "EXPORTERS", registry.EXPORTERS + (fake,))
    text = _export_help(capsys)
    assert "--format {osaca,llvm,fake}" in text and "--fake-level {1,2}" in text
    assert "(LLVM TableGen) or a fake file." in " ".join(text.split())

    out = str(tmp_path / "m.fake")
    assert main(["export", "skl", "-f", "fake", "-o", out, "--fake-level", "2", "--name", "n",
                 "--json"]) == 0
    assert calls == [("n", out, 2, "skl")]
    printed = json.loads(capsys.readouterr().out)
    assert list(printed) == ["output", "format", "forms", "skipped"]     # no format's extras
    assert (printed["output"], printed["format"], printed["skipped"]) == (out, "fake", [])

    # the exporter's own validation is argparse's: one line, exit status 2, nothing run
    assert main(["export", "skl", "-f", "fake", "-o", out, "--fake-level", "3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pmpredict: error: <command line>: argument --fake-level: invalid "
                          "choice: 3")
    assert err.count("\n") == 1 and len(calls) == 1
