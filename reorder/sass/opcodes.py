"""Per-opcode facts as data: operand shapes, latency class, memory space, control role.

Sources: NVIDIA's INSTRUCTION_TYPE per class in the nvdisasm machine description, as
read by the denvdis and cicuvc projects (reference/sass_hopper_facts.md §2.2). An opcode
missing from `KNOWN` is unknown to reorder, and unknown means "barrier in both
directions": it is never moved and nothing moves across it.
"""

from __future__ import annotations

# How the leading operands are destinations:
#   "none"  - no register destinations (stores, branches, barriers)
#   "setp"  - up to two leading predicate destinations (ISETP P0, PT, ...)
#   "vote"  - one register then one predicate destination
#   "dst"   - leading predicates, one register, then up to two predicate carry-outs
SHAPE_NONE, SHAPE_SETP, SHAPE_VOTE, SHAPE_DST = "none", "setp", "vote", "dst"

_SETP = "ISETP FSETP DSETP HSETP2 PSETP PLOP3 UISETP UPLOP3 UPSETP FCHK UFSETP".split()
_NONE = (
    "STG STS STL ST RED REDG STSM BAR BRA BRX JMP JMX CALL RET EXIT BSYNC BREAK WARPSYNC "
    "NOP MEMBAR FENCE CCTL ERRBAR DEPBAR YIELD NANOSLEEP KILL BPT LDGDEPBAR ARRIVES LDGSTS "
    "REDAS STAS UTMALDG UTMASTG UTMAPF UBLKCP UBLKPF UBLKRED UTMAREDG PREEXIT ACQBULK ENDCOLLECTIVE"
).split()
_VOTE = "VOTE VOTEU".split()
_DST = (
    "FFMA FADD FMUL FMNMX FSEL FSET FSWZADD FRND FCHK2 IADD3 IMAD IABS IMNMX ISCADD LEA LOP3 SHF "
    "SGXT PRMT SEL MOV MOVM P2R R2P CS2R IDP VABSDIFF VABSDIFF4 LEPC BMSK "
    "DADD DFMA DMUL DMNMX DSET HADD2 HFMA2 HMUL2 HSET2 HMNMX2 VIADD VIMNMX VIADDMNMX VIMNMX3 "
    "I2I I2IP I2FP F2IP F2FP R2UR IADD IMUL "
    "LDG LDS LDL LD LDC LDCU LDSM ATOM ATOMG ATOMS MUFU S2R S2UR SHFL MATCH REDUX POPC FLO BREV "
    "F2F F2I I2F QSPC GETLMEMBASE BSSY "
    "UMOV UIADD3 UIMAD ULEA ULOP3 USHF USEL UPRMT UFLO UPOPC UBREV UMNMX USGXT UBMSK ULDC "
    "UIABS UCLEA UP2UR UR2UP UVIADD UF2FP ULEPC ELECT"
).split()

SHAPES: dict[str, str] = (
    dict.fromkeys(_SETP, SHAPE_SETP)
    | dict.fromkeys(_NONE, SHAPE_NONE)
    | dict.fromkeys(_VOTE, SHAPE_VOTE)
    | dict.fromkeys(_DST, SHAPE_DST)
)
KNOWN: frozenset[str] = frozenset(SHAPES)

# Variable latency: results arrive through a scoreboard, not after a fixed stall count
# (DECOUPLED_RD_WR_SCBD / mio_pipe / cbu_pipe). LDC/ULDC are listed both ways in the
# description; ptxas scoreboards LDC on sm_90, so we treat it as variable. LDCU (Blackwell: a
# constant into a uniform register, where sm_90 had ULDC) is scoreboarded in every one of its 141
# uses in the sm_100a corpus. REDG (a global reduction, RED's global form) reads its registers
# after issue like RED: ptxas 13.0 gives it a read scoreboard in 2 of its 8 uses on sm_90 and 10
# of 16 on sm_100a, sm_103 and sm_120 over the project's 55 CUDA sources at -O3; as a fixed-
# latency op of no class, a write to its data register 2 cycles on, with no wait, was accepted.
VARIABLE_LATENCY: frozenset[str] = frozenset(
    "LDG LDS LDL LD LDC LDCU LDSM LDGSTS ATOM ATOMG ATOMS MUFU S2R S2UR SHFL MATCH REDUX POPC FLO BREV "
    "F2F F2I I2F FRND FCHK MOVM QSPC GETLMEMBASE STG STS STL ST RED REDG STSM BAR MEMBAR CCTL "
    "DEPBAR ARRIVES".split()
)

# Variable latency on some arches only: the FP64 pipe. Where ptxas sets a write scoreboard on an
# opcode's results and its readers wait on it, the result arrives when the scoreboard says, not
# after a fixed count. ptxas 13.0 (CUDA 13.0.88) at -O3 over the project's 55 CUDA sources
# (benchmarks/results/2026-12-02_latency_audit's build) sets one on DADD 127 of 127, DFMA 49 of
# 52, DMUL 8 of 9, DSETP 4 of 4 on sm_103 and sm_120, and DADD 128 of 128, DFMA 48-49 of 51, DMUL
# 9 of 10, DSETP 4 of 4 on sm_80, sm_86 and sm_89; over tests/corpus/src/fp64.cu and a DSETP
# kernel on sm_75 and sm_87 on DADD 119 of 119, DFMA 9 of 10, DMUL 2 of 2, DSETP 4 of 4; on sm_90
# and sm_100 on none (FP64 is fixed latency there: DFMA -> DFMA floor 8 on the H200). DMNMX and
# DSET appear in no compiler output read, so they keep their fixed class. Arches are keyed
# exactly (an sm_100a cubin says 100). tests/test_fp64_scoreboard.py checks the rule on cubins.
FP64_PIPE: frozenset[str] = frozenset("DADD DFMA DMUL DSETP".split())
VARIABLE_LATENCY_ON: dict[int, frozenset[str]] = dict.fromkeys((75, 80, 86, 87, 89, 103, 120), FP64_PIPE)


def is_variable_latency(base: str, arch: int) -> bool:
    """Whether an opcode (its base) delivers its results through a scoreboard on `arch`."""
    return base in VARIABLE_LATENCY or base in VARIABLE_LATENCY_ON.get(arch, frozenset())


# Memory spaces touched: loads and stores per space. Generic (LD/ST/ATOM/RED) may alias any.
MEMORY_READS: dict[str, str] = {
    "LDG": "global",
    "LDS": "shared",
    "LDL": "local",
    "LD": "generic",
    "LDSM": "shared",
    "ATOM": "generic",
    "ATOMG": "global",
    "ATOMS": "shared",
    "LDGSTS": "global",
}
MEMORY_WRITES: dict[str, str] = {
    "STG": "global",
    "STS": "shared",
    "STL": "local",
    "ST": "generic",
    "RED": "generic",
    "REDG": "global",
    "STSM": "shared",
    "ATOM": "generic",
    "ATOMG": "global",
    "ATOMS": "shared",
    "LDGSTS": "shared",
}
LOADS: frozenset[str] = frozenset({"LDG", "LDS", "LDL", "LD", "LDC", "LDCU", "LDSM", "ULDC"})
STORES: frozenset[str] = frozenset({"STG", "STS", "STL", "ST", "RED", "REDG", "STSM"})

# Never moved, and nothing moves across them: control flow, synchronisation, fences,
# instructions whose position matters to the driver or to other threads.
BARRIERS: frozenset[str] = frozenset(
    "BRA BRX JMP JMX CALL RET EXIT BSSY BSYNC BREAK WARPSYNC BAR MEMBAR FENCE ERRBAR DEPBAR "
    "YIELD NANOSLEEP KILL BPT CCTL LDGDEPBAR ARRIVES SYNCS ELECT LEPC PREEXIT ACQBULK ENDCOLLECTIVE "
    "UTMALDG UTMASTG UTMAPF UBLKCP UBLKPF UBLKRED UTMAREDG".split()
)
CONTROL_FLOW: frozenset[str] = frozenset("BRA BRX JMP JMX CALL RET EXIT BREAK KILL".split())
PC_RELATIVE: frozenset[str] = frozenset({"BRA", "BSSY", "CALL", "BREAK"})

# Registers read/written implicitly as 64-bit pairs by the whole instruction.
DOUBLE_PRECISION: frozenset[str] = frozenset({"DADD", "DFMA", "DMUL", "DMNMX", "DSETP", "DSET"})
TYPE_WIDTH: dict[str, int] = {
    "F64": 2,
    "S64": 2,
    "U64": 2,
    "F32": 1,
    "S32": 1,
    "U32": 1,
    "F16": 1,
    "BF16": 1,
    "S16": 1,
    "U16": 1,
    "S8": 1,
    "U8": 1,
    "E4M3": 1,
    "E5M2": 1,
    "TF32": 1,
}
VECTOR_WIDTH: dict[str, int] = {"64": 2, "128": 4}
CLOCK_REGISTERS: frozenset[str] = frozenset(
    {"SR_CLOCKLO", "SR_CLOCKHI", "SR_GLOBALTIMERLO", "SR_GLOBALTIMERHI", "SR_GLOBALTIMER", "SR_CLOCK"}
)
