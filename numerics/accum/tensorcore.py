"""Matrix-unit adder models (NVIDIA tensor cores, AMD matrix cores) and their presets.

A :class:`TensorCorePreset` describes how one matrix unit computes ``D = C + A @ B``:
K is cut into consecutive groups of ``G`` products; each group is combined with the
running value ``c`` (``C`` for the first group, then the previous group's rounded
result) by one *group step*, whose rule is the preset's ``structure``:

``"fused"`` (NVIDIA; MMA-Sim ``t_fdpa``, Fasi et al. 2021)
    1. every operand is written ``s * 2**e`` with ``e`` clamped below at its own
       format's ``emin`` (a subnormal has ``s < 1``); a product's exponent is
       ``e_a + e_b`` and its significand ``s_a * s_b`` lies in ``[0, 4)``; ``c`` (in
       ``output_format``) takes its exponent the same way, a zero ``c`` -126; a
       product with a zero operand has none (it never sets the maximum: MMA-Sim);
    2. ``E`` is the largest exponent over all terms, ``c`` included; every term is
       rounded with ``alignment_rounding`` (toward zero on every NVIDIA part) to a
       multiple of ``2**(E - fractional_bits)``; the rounded terms are summed exactly;
    3. the sum is rounded once to ``output_format`` (``output_rounding`` into
       binary32: toward zero, subnormals kept, an exponent beyond the format's range
       still gives inf, an exact zero is +0; ``narrow_output_rounding`` into
       binary16 or bfloat16: nearest even);
    4. with ``e8m13=True`` (the Ada and Hopper FP8 paths) the binary32 result is
       further truncated to 13 fraction bits (the low 10 bits of its encoding cleared).

    Two details differ between MMA-Sim's versions; these follow its later
    ``mmasim/arithmetic/fdpa.py``: a zero ``c`` has exponent -126 (its earlier
    ``simulator/functions.py`` gives it none, which matters only when every product lies
    below ``2**-126``), and a non-zero sum that rounds to zero keeps its sign (the
    earlier version returns +0).
``"fused-then-c"`` (AMD CDNA3 fp16, bf16 and xf32; MMA-Sim ``amd_fused_dot_add``)
    1. operands as above, but a zero operand or a zero ``c`` has no exponent (it
       never sets a maximum);
    2. the products alone: ``E_p`` their largest exponent, every product rounded with
       ``alignment_rounding`` (toward zero) to a multiple of ``2**(E_p -
       fractional_bits)``, summed exactly into ``T``;
    3. ``M = max(E_p, e_c)``: ``T`` is rounded with ``stage2_rounding`` (down, toward
       -inf) to a multiple of ``2**(M - stage2_bits)``, ``c`` likewise to a multiple
       of ``2**(M - fractional_bits)``; the two are added exactly;
    4. the sum is rounded once to binary32 with ``output_rounding`` (nearest even).
``"even-odd"`` (AMD CDNA3 fp8; MMA-Sim ``amd_fused_dot_add(is_fp8=True)``)
    As ``"fused-then-c"``, but step 2 is done twice, over the products of even and of
    odd index within the group, giving ``T_0`` at ``E_0`` and ``T_1`` at ``E_1``; with
    ``E_p = max(E_0, E_1)`` both are rounded with ``stage2_rounding`` to multiples of
    ``2**(E_p - fractional_bits)`` and added exactly; in step 3 ``c`` is dropped (taken
    as 0) when ``e_c < M - 25``.
``"pairwise"`` (AMD CDNA1 and CDNA2 fp16 and bf16; MMA-Sim ``pairwise_dot``)
    Each product is rounded to binary32 (``output_rounding``, nearest even); the
    group's products are summed as a balanced binary tree (halves ``[:G//2]`` and
    ``[G//2:]``, recursively), each addition rounded to binary32; the group sum ``s``
    is then added, ``c = fl(c + s)``.  With ``flush_outputs`` every product, partial
    sum and accumulator value below ``2**-126`` in magnitude becomes a zero of its
    sign.
``"fma"`` (AMD fp32 and fp64 matrix instructions)
    ``G = 1``: ``c = fl(c + a * b)``, one rounding (``output_rounding``) per product.

Before any group: ``A`` and ``B`` are rounded into ``input_format`` with
``input_rounding``; ``C`` into ``output_format`` to nearest even; with
``flush_inputs`` subnormal values of ``A``, ``B`` and ``C`` become +0.  NaN or inf in
any operand gives the IEEE result of the exact sum instead (for AMD CDNA3 also a
product of magnitude at least ``2**128``, which counts as an infinity of its sign).
A NaN result of the ``"fused"`` (NVIDIA) step is NVIDIA's canonical NaN, as MMA-Sim
writes it: the float64 :data:`NVIDIA_NAN` (bits ``0x7FFFFFFFE0000000``), which becomes
``0x7FFFFFFF`` in binary32 and ``0x7FFF`` in binary16 and bfloat16 (the other
structures give the default quiet NaN, ``0x7FC00000`` in binary32).  A binary32 NaN
input of a tf32 preset stays NaN: the hardware, which ignores its low 13 bits, would
read a signalling NaN whose payload lies only there as an infinity, but the float64
values taken here have lost that payload (converting a signalling NaN quiets it).

Implementation: exact in float64.  A product of two inputs of precision <= 26 is
exact in float64; scaling by powers of two is exact (every exponent used lies far
inside float64's range); each rounded term is an integer below ``2**(F + 2)``, a
group sums at most 33 of them, and the second stage of the AMD rules keeps at most
38 bits, so every step is exact.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from numerics import eft
from numerics.accum.intake import real_pair, reject_nan
from numerics.formats import Format, as_format

__all__ = [
    "ALIGNMENT_ROUNDINGS",
    "FAMILIES",
    "OUTPUT_ROUNDINGS",
    "PRESETS",
    "STRUCTURES",
    "NVIDIA_NAN",
    "TensorCorePreset",
    "cast",
    "check_formats",
    "decompose",
    "exponents",
    "flush_subnormals",
    "fused_dot_add",
    "group_step",
    "get_preset",
    "resolve_accumulator",
]

_ZERO_EXP = -126
#: NVIDIA's canonical NaN as a float64 (bits 0x7FFFFFFFE0000000): narrowed to binary32
#: it is 0x7FFFFFFF, to binary16 or bfloat16 0x7FFF, the NaN MMA-Sim's NVIDIA models
#: write.
NVIDIA_NAN = float(np.array(0x7FFFFFFFE0000000, np.uint64).view(np.float64))


def canonical_nan(d: np.ndarray, p: TensorCorePreset | None) -> np.ndarray:
    """``d`` with its NaNs made :data:`NVIDIA_NAN` where the step is ``"fused"`` (``p``
    None: :func:`fused_dot_add`, the fused step alone)."""
    if p is None or p.structure == "fused":
        nan = np.isnan(d)
        if nan.any():
            d = np.where(nan, NVIDIA_NAN, d)
    return d
_NO_EXP = -1000  # the AMD rules' "no exponent" for a zero (MMA-Sim uses -999)
_SAFE_EXP = -600  # scaling exponents are clamped here: every real term lies far above

#: Group-step rules (module docstring).
STRUCTURES: tuple[str, ...] = ("fused", "fused-then-c", "even-odd", "pairwise", "fma")
#: Roundings of aligned terms: toward zero, down (toward -inf), nearest even.
ALIGNMENT_ROUNDINGS: tuple[str, ...] = ("rtz", "rd", "rne")
#: Roundings of a group's result into the output format.
OUTPUT_ROUNDINGS: tuple[str, ...] = ("rtz", "rne")


def _check_choice(value: object, name: str, allowed: tuple[str, ...]) -> None:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(
            f"Got {name}={value!r}, but the only valid values are "
            + ", ".join(repr(a) for a in allowed)
        )


@dataclass(frozen=True, kw_only=True)
class TensorCorePreset:
    """One matrix unit's group-step rule and parameters (module docstring).

    Parameters
    ----------
    name : str
        Preset name, e.g. ``"hopper-fp8"`` (non-empty).
    fractional_bits : int or None
        Fraction bits kept after alignment to the largest exponent, 0 to 48, for
        ``"fused"``, ``"fused-then-c"`` and ``"even-odd"``; None for ``"pairwise"`` and
        ``"fma"``, which round every step in the output format.
    group_16, group_8 : int or None
        Products per group (1 to 64) for inputs wider than 8 bits and of 8 bits or
        fewer; None where such inputs are not modelled (not both None).
    group_tf32 : int, optional
        Products per group for tf32 inputs where they differ from ``group_16``.
    tf32_input_rounding : {None, "rne", "rtz"}
        Rounding of binary32 ``A`` and ``B`` into tf32 where it differs from
        ``input_rounding``.
    e8m13 : bool, default False
        Truncate each binary32 group result to 13 fraction bits (NVIDIA FP8).
    source : str, default ""
        Where the rule and the numbers come from.
    structure : str, default "fused"
        The group-step rule, one of :data:`STRUCTURES`.
    alignment_rounding : str, default "rtz"
        How each aligned term is cut, one of :data:`ALIGNMENT_ROUNDINGS`.
    stage2_bits : int, default 31
        ``"fused-then-c"``/``"even-odd"``: fraction bits (0 to 40) the products' sum
        keeps when aligned with ``c``.
    stage2_rounding : {"rd", "rtz"}
        The rounding of that second alignment.
    output_rounding : str, default "rtz"
        Rounding into a binary32 output, one of :data:`OUTPUT_ROUNDINGS`.
    narrow_output_rounding : str, default "rne"
        Rounding into a binary16 or bfloat16 output, one of :data:`OUTPUT_ROUNDINGS`.
    input_rounding : {"rne", "rtz"}
        Rounding of ``A`` and ``B`` into the input format.
    flush_inputs, flush_outputs : bool, default False
        Flush subnormal inputs to +0; flush subnormal products, partial sums and
        accumulator values to zeros of their sign (``"pairwise"`` only).
    promote_every : int, optional
        Promotion interval into a binary32 accumulator (a positive int).
    inputs : tuple of str, default ()
        Canonical names of the input formats modelled (empty: any signed format of
        precision <= 26, by width).
    outputs : tuple of str
        Canonical names of the output formats allowed (of binary32, binary16,
        bfloat16; all three by default).
    uncertain : str, default ""
        Where the published description is itself uncertain.

    Raises
    ------
    ValueError, TypeError
        For a field out of its range or of the wrong type (the message names it).

    Examples
    --------
    >>> p = TensorCorePreset(name="my-fp8", fractional_bits=14, group_16=None, group_8=32,
    ...                      e8m13=False, source="a guess")
    >>> p.structure, p.alignment_rounding, p.output_rounding
    ('fused', 'rtz', 'rtz')
    """

    #: Preset name, e.g. ``"hopper-fp8"``.
    name: str
    #: Fraction bits kept after alignment to the largest exponent (``"fused"``,
    #: ``"fused-then-c"``, ``"even-odd"``); None for ``"pairwise"`` and ``"fma"``, where
    #: every step rounds in the (binary32) output format instead.
    fractional_bits: int | None
    #: Products per group for inputs wider than 8 bits (16-bit, tf32, binary32); None if
    #: such inputs are not modelled.
    group_16: int | None
    #: Products per group for inputs of 8 bits or fewer; None if not modelled.
    group_8: int | None
    #: Products per group for tf32 inputs where they differ from ``group_16`` (NVIDIA:
    #: 4 on Ampere and Ada, ``mma.m16n8k8.tf32`` in two halves; 8 on Hopper's ``wgmma``
    #: and Blackwell's ``tcgen05.mma``, whose tf32 instructions have ``k = 8``).
    group_tf32: int | None = None
    #: Rounding of binary32 ``A`` and ``B`` into tf32 where it differs from
    #: ``input_rounding`` (NVIDIA tensor cores truncate: ``"rtz"``).
    tf32_input_rounding: str | None = None
    #: Truncate each binary32 group result to 13 fraction bits ("e8m13", NVIDIA FP8).
    e8m13: bool = False
    #: Where the rule and the numbers come from (paper, simulator file, measurement).
    source: str = ""
    #: The group-step rule, one of :data:`STRUCTURES`.
    structure: str = "fused"
    #: How each aligned term is cut to ``fractional_bits``: ``"rtz"`` (truncation toward
    #: zero, every modelled part), ``"rd"`` (toward -inf) or ``"rne"``.
    alignment_rounding: str = "rtz"
    #: ``"fused-then-c"``/``"even-odd"``: fraction bits the products' sum keeps when it
    #: is aligned with ``c`` (31 on CDNA3).
    stage2_bits: int = 31
    #: ``"fused-then-c"``/``"even-odd"``: the rounding of that second alignment (and of
    #: ``c``'s, and of the even/odd merge): ``"rd"`` on CDNA3, or ``"rtz"``.
    stage2_rounding: str = "rd"
    #: Rounding of each group's result into a binary32 output (and, for ``"pairwise"``
    #: and ``"fma"``, of every product and addition): ``"rtz"`` or ``"rne"``.
    output_rounding: str = "rtz"
    #: Rounding of each group's result into a binary16 or bfloat16 output.
    narrow_output_rounding: str = "rne"
    #: Rounding of ``A`` and ``B`` into the input format: ``"rne"`` (a cast), or
    #: ``"rtz"`` (AMD xf32 truncates binary32 inputs to tf32).
    input_rounding: str = "rne"
    #: Subnormal ``A``, ``B`` and ``C`` values become +0 before any arithmetic.
    flush_inputs: bool = False
    #: Subnormal products, partial sums and accumulator values become zeros of their
    #: sign (``"pairwise"`` only).
    flush_outputs: bool = False
    #: Promotion interval into a binary32 accumulator (DeepSeek-V3), or None; the
    #: ``promote_every`` argument of :func:`numerics.accum.gemm` takes precedence.
    promote_every: int | None = None
    #: The input formats modelled (canonical names); empty: any signed format of
    #: precision <= 26, by width (``group_16``/``group_8``).
    inputs: tuple[str, ...] = ()
    #: The output formats allowed (canonical names).
    outputs: tuple[str, ...] = ("binary32", "binary16", "bfloat16")
    #: Where the published description is itself uncertain ("" if nowhere known).
    uncertain: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"Got name={self.name!r}, but it must be a non-empty str")
        _check_choice(self.structure, "structure", STRUCTURES)
        _check_choice(self.alignment_rounding, "alignment_rounding", ALIGNMENT_ROUNDINGS)
        _check_choice(self.stage2_rounding, "stage2_rounding", ("rd", "rtz"))
        _check_choice(self.output_rounding, "output_rounding", OUTPUT_ROUNDINGS)
        _check_choice(self.narrow_output_rounding, "narrow_output_rounding",
                      OUTPUT_ROUNDINGS)
        _check_choice(self.input_rounding, "input_rounding", ("rne", "rtz"))
        if self.tf32_input_rounding is not None:
            _check_choice(self.tf32_input_rounding, "tf32_input_rounding", ("rne", "rtz"))
        fixed_point = self.structure in ("fused", "fused-then-c", "even-odd")
        F = self.fractional_bits
        if fixed_point and (not _is_int(F) or not 0 <= F <= 48):  # type: ignore[operator]
            raise ValueError(
                f"Got fractional_bits={F!r}, but structure {self.structure!r} needs an "
                "int in [0, 48]"
            )
        if not fixed_point and F is not None:
            raise ValueError(
                f"Got fractional_bits={F!r}, but structure {self.structure!r} rounds "
                "every step in the output format: pass None"
            )
        if not _is_int(self.stage2_bits) or not 0 <= self.stage2_bits <= 40:
            raise ValueError(f"Got stage2_bits={self.stage2_bits!r}, but it must be in [0, 40]")
        for gname in ("group_16", "group_8", "group_tf32"):
            gval = getattr(self, gname)
            if gval is not None and (not _is_int(gval) or not 1 <= gval <= 64):
                raise ValueError(f"Got {gname}={gval!r}, but it must be an int in [1, 64]")
            if gval is not None and self.structure == "fma" and gval != 1:
                raise ValueError(f"Got {gname}={gval!r}, but structure 'fma' has groups of 1")
        if self.group_16 is None and self.group_8 is None:
            raise ValueError("Got group_16=None and group_8=None: the preset models no input")
        pe = self.promote_every
        if pe is not None and (not _is_int(pe) or pe < 1):
            raise ValueError(f"Got promote_every={pe!r}, but it must be a positive int or None")
        for fname in ("e8m13", "flush_inputs", "flush_outputs"):
            if not isinstance(getattr(self, fname), (bool, np.bool_)):
                raise TypeError(f"Got {fname}={getattr(self, fname)!r}, but it must be a bool")
        for fname in ("source", "uncertain"):
            if not isinstance(getattr(self, fname), str):
                raise TypeError(f"Got {fname}={getattr(self, fname)!r}, but it must be a str")
        for fname, allowed in (("inputs", None), ("outputs", _MODEL_OUTPUTS)):
            _check_format_names(getattr(self, fname), fname, allowed)

    def group_size(self, input_format: Format) -> int:
        """The group size for ``input_format``; ValueError if the path is not modelled."""
        if self.inputs and input_format.name not in self.inputs:
            raise ValueError(
                f"Got input_format={input_format.name!r}, but preset {self.name!r} models "
                "only " + ", ".join(repr(i) for i in self.inputs)
            )
        g = self.group_8 if input_format.bits <= 8 else self.group_16
        if input_format.name == "tf32" and self.group_tf32 is not None and g is not None:
            g = self.group_tf32
        if g is None:
            kind = "FP8 (8-bit)" if self.group_8 is not None else "16-bit"
            raise ValueError(
                f"Got input_format={input_format.name!r}, but preset {self.name!r} models "
                f"only {kind} inputs"
            )
        return g

    def input_rounding_into(self, input_format: Format) -> str:
        """The rounding of ``A`` and ``B`` into ``input_format``."""
        if input_format.name == "tf32" and self.tf32_input_rounding is not None:
            return self.tf32_input_rounding
        return self.input_rounding

    def rounding_into(self, output_format: Format) -> str:
        """The rounding of a group result into ``output_format``."""
        return self.output_rounding if output_format.name == "binary32" \
            else self.narrow_output_rounding


def _is_int(v: object) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


#: The output formats the model rounds into.
_MODEL_OUTPUTS = ("binary32", "binary16", "bfloat16")


def _check_format_names(names: object, field: str, allowed: tuple[str, ...] | None) -> None:
    """``names`` must be a tuple of canonical format names (of ``allowed`` if given;
    else of signed formats of precision <= 26, the model's inputs)."""
    if not isinstance(names, tuple):
        raise TypeError(f"Got {field}={names!r}, but it must be a tuple of format names")
    for name in names:
        try:
            fmt = as_format(name) if isinstance(name, str) else None
        except ValueError:
            fmt = None
        if fmt is None:
            raise ValueError(f"Got {field}={names!r}, but {name!r} is not a format name "
                             "(numerics.FORMATS)")
        if fmt.name != name:
            raise ValueError(f"Got {field}={names!r}, but it must hold canonical names: "
                             f"{fmt.name!r}, not {name!r}")
        if allowed is not None and name not in allowed:
            raise ValueError(f"Got {field}={names!r}, but the model outputs only "
                             + ", ".join(repr(a) for a in allowed))
        if allowed is None and (fmt.precision > 26 or not fmt.signed):
            raise ValueError(f"Got {field}={names!r}, but {name!r} is not a signed format "
                             "of precision <= 26 (the model's inputs)")


_MMASIM = "MMA-Sim, Xie et al. 2025 (arXiv 2511.10909)"
_AMD_SIM = (f"{_MMASIM}, simulator github.com/microsoft/MMA-Sim mmasim/simulator/amd.py "
            "and mmasim/simulator/functions.py")
_CDNA12_UNCERTAIN = (
    "MMA-Sim's later rewrite (mmasim/mmasim/amd/sim.py) models CDNA1 as one exact sum of "
    "the group and c rounded once to nearest even (MMA_E_FDPA) rather than pairwise; the "
    "two differ when a pair's binary32 sum is inexact. The pairwise rule of the earlier "
    "simulator (and of issue 14) is followed. A product or sum that is exactly zero keeps "
    "its sign here (the earlier simulator's fmaf(a, b, 0) makes a -0 product +0).")
_CDNA3_UNCERTAIN = (
    "The group is min(8, k) for the instruction's k (the 4x4x4 and 32x32x4 instructions "
    "use 4); the preset takes 8. MMA-Sim's revisions differ: the intermediate "
    "mmasim/mmasim/arithmetic/fdpa.py (tr_fdpa) gives a zero c the exponent +126 and "
    "normalizes with the products' exponent instead of max(E_p, e_c); the latest "
    "src/mmasim/mmasim/arithmetic/fdpa.py agrees with the earlier functions.py, followed "
    "here, except that it gives a zero c the exponent -126 where here (as in functions.py) "
    "a zero c has none: A = [2**-75, 2**-85] times its transpose gives 0x00000001 here and "
    "+0 there.")
_FP8_UNCERTAIN = (
    "MMA-Sim's intermediate rewrite (mmasim/mmasim, gtr_fdpa) truncates toward zero in the "
    "even/odd merge and in the second stage instead of rounding down, and never drops a "
    "small c; the earlier functions.py and the latest src/mmasim revision round down and "
    "drop c below 2**(M-25), as here (the latest gives a zero c the exponent -126, see "
    "cdna3-fp16).")
_CDNA2_UNCERTAIN = (
    "The sign of a flushed input is dropped (+0) while flushed sums keep theirs, as in both "
    "simulator versions; not confirmed elsewhere. The versions differ on a product that is "
    "exactly -0: the earlier simulator's fmaf(a, b, 0) makes it +0, the later "
    "MMA_FTZ_MUL_ADD keeps -0, as here (A = [-1.5 * 2**-63, 0, -1, -1], B = [2**-63, 0, 0, "
    "0], C = 1.25 * 2**-126 in cdna2-bf16 gives -0 here and +0 in the earlier one).")


def _amd(name: str, structure: str, *, g16: int | None = None, g8: int | None = None,
         inputs: tuple[str, ...], source: str, uncertain: str = "", flush: bool = False,
         input_rounding: str = "rne") -> TensorCorePreset:
    return TensorCorePreset(
        name=name, structure=structure,
        fractional_bits=24 if structure in ("fused-then-c", "even-odd") else None,
        group_16=g16, group_8=g8, source=source, uncertain=uncertain,
        output_rounding="rne", inputs=inputs, outputs=("binary32",),
        flush_inputs=flush, flush_outputs=flush, input_rounding=input_rounding)


_FMA_SOURCE = f"{_AMD_SIM}: f32 MFMA is one fmaf per product (operation 'standard', group 1)"

PRESETS: Mapping[str, TensorCorePreset] = MappingProxyType({
    p.name: p for p in (
        TensorCorePreset(name="volta", fractional_bits=23, group_16=4, group_8=None,
                         e8m13=False, source=f"{_MMASIM}; Fasi et al. 2021 (V100)"),
        TensorCorePreset(name="turing", fractional_bits=24, group_16=8, group_8=None,
                         e8m13=False, source=_MMASIM),
        TensorCorePreset(name="ampere", fractional_bits=24, group_16=8, group_8=None,
                         e8m13=False, group_tf32=4, tf32_input_rounding="rtz",
                         source=f"{_MMASIM}; Fasi et al. 2021 (A100); a k16 instruction is "
                                "two chained halves of 8"),
        TensorCorePreset(name="ada", fractional_bits=24, group_16=8, group_8=None,
                         e8m13=False, group_tf32=4, tf32_input_rounding="rtz",
                         source=_MMASIM),
        TensorCorePreset(name="ada-fp8", fractional_bits=13, group_16=None, group_8=16,
                         e8m13=True, source=_MMASIM),
        TensorCorePreset(name="hopper", fractional_bits=25, group_16=16, group_8=None,
                         e8m13=False, group_tf32=8, tf32_input_rounding="rtz",
                         source=_MMASIM),
        TensorCorePreset(name="hopper-fp8", fractional_bits=13, group_16=None, group_8=32,
                         e8m13=True,
                         source=f"{_MMASIM}; DeepSeek-V3 report (arXiv 2412.19437) sections "
                                "3.3.2 (about 14 bits kept; promotion every 128) and 3.5.2 "
                                "(32 products aligned, highest 14 bits kept)"),
        TensorCorePreset(name="blackwell", fractional_bits=25, group_16=16, group_8=32,
                         e8m13=False, group_tf32=8, tf32_input_rounding="rtz",
                         source=f"{_MMASIM} (full fp32 output)"),
        # AMD CDNA1 (MI100)
        _amd("cdna1-fp16", "pairwise", g16=4, inputs=("binary16",),
             source=f"{_AMD_SIM}: CDNA1 f16 groups of 4 summed by pairwise_dot (fmaf in "
                    "binary32), then added to the accumulator",
             uncertain=_CDNA12_UNCERTAIN),
        _amd("cdna1-bf16", "pairwise", g16=2, inputs=("bfloat16",),
             source=f"{_AMD_SIM}: CDNA1 bf16 (no _1k suffix) groups of 2, pairwise_dot",
             uncertain=_CDNA12_UNCERTAIN),
        _amd("cdna1-fp32", "fma", g16=1, inputs=("binary32",), source=_FMA_SOURCE),
        # AMD CDNA2 (MI200)
        _amd("cdna2-fp16", "pairwise", g16=4, inputs=("binary16",), flush=True,
             source=f"{_AMD_SIM}: CDNA2 f16 groups of 4, pairwise_dot with flush_denormal on "
                    "A, B, C (to +0), every partial sum and the accumulator (sign kept); the "
                    "later rewrite's MMA_FTZ_MUL_ADD agrees",
             uncertain=_CDNA2_UNCERTAIN),
        _amd("cdna2-bf16", "pairwise", g16=2, inputs=("bfloat16",), flush=True,
             source=f"{_AMD_SIM}: CDNA2 bf16 without _1k: groups of 2, flushing as cdna2-fp16",
             uncertain=_CDNA2_UNCERTAIN),
        _amd("cdna2-bf16-1k", "pairwise", g16=4, inputs=("bfloat16",), flush=True,
             source=f"{_AMD_SIM}: CDNA2 bf16 _1k instructions: groups of 4, flushing as "
                    "cdna2-fp16", uncertain=_CDNA2_UNCERTAIN),
        _amd("cdna2-fp32", "fma", g16=1, inputs=("binary32",), source=_FMA_SOURCE),
        # AMD CDNA3 (MI300X)
        _amd("cdna3-fp16", "fused-then-c", g16=8, inputs=("binary16",),
             source=f"{_AMD_SIM}: CDNA3 f16 amd_fused_dot_add, n_fractional_bits=24, groups "
                    "of min(8, k), products truncated, sum and c rounded down (31 and 24 "
                    "bits), written back to binary32 to nearest even",
             uncertain=_CDNA3_UNCERTAIN),
        _amd("cdna3-bf16", "fused-then-c", g16=8, inputs=("bfloat16",),
             source=f"{_AMD_SIM}: CDNA3 bf16, the same rule as cdna3-fp16",
             uncertain=_CDNA3_UNCERTAIN),
        _amd("cdna3-fp8", "even-odd", g8=16, inputs=("e4m3fnuz", "e5m2fnuz"),
             source=f"{_AMD_SIM}: CDNA3 fp8/bf8 (FNUZ) amd_fused_dot_add(is_fp8=True), groups "
                    "of 16 summed in two stages over even and odd products",
             uncertain=_FP8_UNCERTAIN),
        _amd("cdna3-xf32", "fused-then-c", g16=4, inputs=("tf32",), input_rounding="rtz",
             source=f"{_AMD_SIM}: CDNA3 xf32 truncate_to_tf32 on A and B (low 13 bits "
                    "cleared), then amd_fused_dot_add in groups of 4",
             uncertain=_CDNA3_UNCERTAIN),
        _amd("cdna3-fp32", "fma", g16=1, inputs=("binary32",), source=_FMA_SOURCE),
    )
})

#: Architecture names that stand for one preset per input format.
FAMILIES: Mapping[str, Mapping[str, str]] = MappingProxyType({
    "cdna1": MappingProxyType({"binary16": "cdna1-fp16", "bfloat16": "cdna1-bf16",
                               "binary32": "cdna1-fp32"}),
    "cdna2": MappingProxyType({"binary16": "cdna2-fp16", "bfloat16": "cdna2-bf16-1k",
                               "binary32": "cdna2-fp32"}),
    "cdna3": MappingProxyType({"binary16": "cdna3-fp16", "bfloat16": "cdna3-bf16",
                               "e4m3fnuz": "cdna3-fp8", "e5m2fnuz": "cdna3-fp8",
                               "tf32": "cdna3-xf32", "binary32": "cdna3-fp32"}),
})


def get_preset(name: object, input_format: Format | None = None) -> TensorCorePreset:
    """The preset called ``name`` (a family name needs ``input_format``).

    Parameters
    ----------
    name : str
        A key of :data:`PRESETS` or of :data:`FAMILIES`.
    input_format : Format, optional
        The input format, which picks a family's preset.

    Returns
    -------
    TensorCorePreset
        The preset.

    Raises
    ------
    ValueError
        For an unknown name, or a family without a preset for ``input_format``.

    Examples
    --------
    >>> get_preset("cdna3", as_format("e4m3fnuz")).name
    'cdna3-fp8'
    """
    if isinstance(name, str) and name in FAMILIES:
        family = FAMILIES[name]
        if input_format is None or input_format.name not in family:
            got = None if input_format is None else input_format.name
            raise ValueError(
                f"Got input_format={got!r} with accumulator {name!r}, but {name} models "
                "only " + ", ".join(repr(k) for k in family)
            )
        return PRESETS[family[input_format.name]]
    if not isinstance(name, str) or name not in PRESETS:
        raise ValueError(
            f"Got preset {name!r}, but the known presets are "
            + ", ".join([*PRESETS, *FAMILIES])
        )
    return PRESETS[name]


def resolve_accumulator(accumulator: object, input_format: Format) -> TensorCorePreset | Format:
    """A preset (instance, preset or family name) or an accumulator format.

    Raises ValueError naming ``accumulator`` when it is none of them.

    Parameters
    ----------
    accumulator : TensorCorePreset, Format, str or dtype
        A preset, a preset or family name (:data:`PRESETS`, :data:`FAMILIES`), or a
        format, format name, or the numpy, ml_dtypes or torch dtype of one.
    input_format : Format
        The input format, which picks a family's preset.

    Returns
    -------
    TensorCorePreset or Format
        The preset, or the accumulator format.

    Raises
    ------
    ValueError
        If ``accumulator`` is none of these, or a family has no preset for
        ``input_format``.

    Examples
    --------
    >>> resolve_accumulator("hopper", as_format("bf16")).name
    'hopper'
    >>> resolve_accumulator("bf16", as_format("bf16")).name
    'bfloat16'
    >>> import numpy as np
    >>> resolve_accumulator(np.float32, as_format("bf16")).name
    'binary32'
    """
    if isinstance(accumulator, TensorCorePreset):
        return accumulator
    if isinstance(accumulator, str) and (accumulator in PRESETS or accumulator in FAMILIES):
        return get_preset(accumulator, input_format)
    if isinstance(accumulator, Format):
        return accumulator
    if not isinstance(accumulator, str) and accumulator is not None:
        try:  # the numpy, ml_dtypes or torch dtype of a registered format
            return as_format(accumulator, arg="accumulator")
        except TypeError:
            pass
    if isinstance(accumulator, str):
        try:
            return as_format(accumulator)
        except ValueError:
            pass
    raise ValueError(
        f"Got accumulator={accumulator!r}, which is neither a TensorCorePreset, a known "
        "preset (" + ", ".join([*PRESETS, *FAMILIES]) + ") nor a format name "
        "(numerics.FORMATS)"
    )


def exponents(v: np.ndarray, fmt: Format) -> np.ndarray:
    """:func:`decompose` of operands (zero: no exponent, ``-1000``) as int32, by a kernel.

    Parameters
    ----------
    v : numpy.ndarray of float64
        Values of ``fmt``, any shape.
    fmt : Format
        Their format (its ``emin`` clamps the exponents).

    Returns
    -------
    numpy.ndarray of int32
        The exponents, shaped like ``v``.
    """
    from numerics.kernels.accum import exponents as kernel

    flat = np.ascontiguousarray(v).reshape(-1)
    out = np.empty(flat.size, np.int32)
    kernel(flat, fmt.emin, out)
    return out.reshape(np.shape(v))


def decompose(v: np.ndarray, fmt: Format, zero: int = _ZERO_EXP) -> np.ndarray:
    """Exponents ``e`` of values of ``fmt`` (clamped at ``emin``); zero and non-finite
    values get ``zero`` (-126, the NVIDIA rule).

    Parameters
    ----------
    v : numpy.ndarray
        Values of ``fmt`` (float64), any shape.
    fmt : Format
        Their format.
    zero : int, default -126
        The exponent given to zeros, infinities and NaN.

    Returns
    -------
    numpy.ndarray of int32
        ``max(floor(log2|v|), emin)``, shaped like ``v``.

    Examples
    --------
    >>> from numerics import get_format
    >>> decompose(np.array([0.0, 1.5, 2.0**-9, 448.0]), get_format("e4m3fn")).tolist()
    [-126, 0, -6, 8]
    """
    with np.errstate(invalid="ignore"):
        _, ex = np.frexp(v)
    e = np.maximum(ex.astype(np.int32) - 1, fmt.emin)
    return np.where((v == 0) | ~np.isfinite(v), zero, e).astype(np.int32)


def cast(x: Any, fmt: Format, rounding: str = "rne", *, lo: Any = None,
         seed: int = 0, base: int = 0, dtype: Any = np.float64) -> np.ndarray:
    """Round the exact values ``x + lo`` (float32/float64) once into ``fmt``, as float64
    (a NaN becomes +0 in a format without NaN), by :func:`numerics.kernels.accum.round_values`;
    stochastic rounding draws elements ``base ..`` of the stream with ``seed``.  Round to
    nearest-even of plain values into a format of at most 16 bits that the encode lanes
    take runs there instead (:func:`numerics.kernels.narrow.round_rne`: the same values,
    ten times faster).  ``dtype=np.float32`` gives the values as float32, for a format
    whose values are all float32 values (the caller's check).

    Parameters
    ----------
    x : array_like
        The values (other dtypes are converted to float64 first).
    fmt : Format
        The target format.
    rounding : str, default "rne"
        A mode of :data:`numerics.ROUNDINGS` (not checked).
    lo : array_like, optional
        Exact low parts, broadcast to ``x``'s shape (None or all zero: none).
    seed : int, default 0
        The stochastic-rounding seed.
    base : int, default 0
        Stream index of element 0.
    dtype : numpy.float64 or numpy.float32
        The dtype of the result.

    Returns
    -------
    numpy.ndarray
        The rounded values, shaped like ``x``.
    """
    from numerics.kernels import narrow
    from numerics.kernels.accum import round_values
    from numerics.kernels.codec import decode_table
    from numerics.kernels.rounding import format_params, mode_code

    x = np.asarray(x)
    if x.dtype not in (np.float32, np.float64) or not x.dtype.isnative:
        x = x.astype(np.float64)
    # contiguous and writable, as round_to passes its arrays (a read-only array, a
    # broadcast view, is a numba type of its own: every loop would compile again)
    flat = np.require(x, None, ["C", "W"]).reshape(-1)
    P = format_params(fmt)
    plain = lo is None or not np.any(lo)
    if rounding == "rne" and plain and fmt.bits <= 16 and narrow.fits(P, x.dtype == np.float64):
        table = np.empty(fmt.num_codes)
        decode_table(P, table)
        values = np.empty(flat.size, dtype)
        table = table.astype(dtype)
        table.flags.writeable = False  # (as round_to's tables: one compiled signature)
        narrow.round_rne(flat, values, P, False, table, False)
        return values.reshape(x.shape)
    out = np.empty(flat.size)
    low = np.zeros(1)
    if not plain:
        low = np.ascontiguousarray(np.broadcast_to(np.asarray(lo, np.float64), x.shape)
                                   ).reshape(-1)
    round_values(flat, low, P, mode_code(rounding), np.uint64(seed), np.uint64(base), out)
    return out.reshape(x.shape).astype(dtype, copy=False)


def flush_subnormals(x: np.ndarray, fmt: Format, *, keep_sign: bool) -> np.ndarray:
    """Values below ``fmt``'s smallest normal in magnitude become zeros (+0 or signed).

    Parameters
    ----------
    x : numpy.ndarray
        Values (float64), any shape.
    fmt : Format
        The format whose smallest normal is the threshold.
    keep_sign : bool
        Zeros of the values' signs, or +0.

    Returns
    -------
    numpy.ndarray
        ``x`` itself when nothing is flushed, else a new array.

    Examples
    --------
    >>> from numerics import get_format
    >>> flush_subnormals(np.array([-2.0**-8, 1.0]), get_format("e4m3fn"),
    ...                  keep_sign=True).tolist()
    [-0.0, 1.0]
    """
    with np.errstate(invalid="ignore"):
        tiny = np.abs(x) < fmt.smallest_normal
    if not tiny.any():
        return x
    zero = np.copysign(0.0, x) if keep_sign else np.zeros_like(x)
    return np.where(tiny, zero, x)


_ALIGN: dict[str, Callable[..., Any]] = {"rtz": np.trunc, "rd": np.floor, "rne": np.rint}


def _pow2(e: np.ndarray) -> np.ndarray:
    return np.ldexp(1.0, np.asarray(e, np.int64).astype(np.int32))


def _finish(total: np.ndarray, E: np.ndarray, fractional_bits: int, out: Format,
            rounding: str, e8m13: bool) -> np.ndarray:
    """Round ``total * 2**(E - F)`` (exact) once to ``out``; +0 for an exact zero."""
    v = np.ldexp(total, E - fractional_bits)
    d = cast(v, out, rounding)
    if rounding == "rtz" and out.has_infinity:
        # An exponent beyond the format's range still gives inf (Fasi et al. 2021).
        d = np.where(np.abs(v) >= 2.0 ** (out.emax + 1), np.copysign(np.inf, v), d)
    d = np.where(total == 0, 0.0, d)
    if e8m13:
        bits = d.astype(np.float32).view(np.uint32) & np.uint32(0xFFFFFC00)
        d = bits.view(np.float32).astype(np.float64).reshape(v.shape)
    return d


def _ieee_where_nonfinite(d: np.ndarray, prods: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The IEEE sum of the exact terms where any term is not finite."""
    if np.isfinite(prods).all() and np.isfinite(c).all():
        return d
    naive = c + prods.sum(axis=-1)
    return np.where(np.isfinite(naive), d, naive)


def _fused(a: np.ndarray, ea: np.ndarray, b: np.ndarray, eb: np.ndarray, c: np.ndarray,
           ec: np.ndarray, fractional_bits: int, out: Format, rounding: str,
           e8m13: bool, alignment: str = "rtz") -> np.ndarray:
    """The ``"fused"`` step on exact values: a, b (..., k) with exponents ea, eb; c (...)."""
    align = _ALIGN[alignment]
    with np.errstate(invalid="ignore", over="ignore"):
        prods = a * b
        E = np.maximum((ea + eb).max(axis=-1, initial=_NO_EXP), ec)  # (k = 0: c's)
        scale = np.ldexp(1.0, fractional_bits - E)
        total = align(prods * scale[..., None]).sum(axis=-1) + align(c * scale)
        d = _finish(total, E, fractional_bits, out, rounding, e8m13)
        return _ieee_where_nonfinite(d, prods, c)


def _aligned_sum(prods: np.ndarray, ep: np.ndarray, F: int,
                 align: Callable[..., Any]) -> tuple[np.ndarray, np.ndarray]:
    """``(T, E)``: ``E`` the largest exponent along the last axis, ``T`` the sum of the
    terms rounded to multiples of ``2**(E - F)``, in units of that (an integer)."""
    E = ep.max(axis=-1, initial=_NO_EXP)  # no products (an empty odd half): none
    scale = _pow2(F - np.maximum(E, _SAFE_EXP))
    return align(prods * scale[..., None]).sum(axis=-1), E


def _amd_fused(a: np.ndarray, b: np.ndarray, c: np.ndarray, fin: Format, out: Format,
               p: TensorCorePreset) -> np.ndarray:
    """The ``"fused-then-c"`` and ``"even-odd"`` steps (AMD CDNA3) on exact values."""
    F, F2 = int(p.fractional_bits), p.stage2_bits  # type: ignore[arg-type]
    align, down = _ALIGN[p.alignment_rounding], _ALIGN[p.stage2_rounding]
    with np.errstate(invalid="ignore", over="ignore"):
        prods = a * b
        ep = np.where(prods == 0, _NO_EXP, decompose(a, fin) + decompose(b, fin))
        if p.structure == "even-odd":
            T0, E0 = _aligned_sum(prods[..., 0::2], ep[..., 0::2], F, align)
            T1, E1 = _aligned_sum(prods[..., 1::2], ep[..., 1::2], F, align)
            E = np.maximum(E0, E1)
            T = down(T0 * _pow2(E0 - E)) + down(T1 * _pow2(E1 - E))
        else:
            T, E = _aligned_sum(prods, ep, F, align)
        ec = decompose(c, out, _NO_EXP)
        M = np.maximum(np.maximum(E, ec), _SAFE_EXP)
        S2 = down(T * _pow2(F2 - F + np.maximum(E, _SAFE_EXP) - M))
        C2 = down(c * _pow2(F - M))
        if p.structure == "even-odd":
            C2 = np.where(ec >= M - 25, C2, 0.0)
        total = S2 + C2 * 2.0 ** (F2 - F)
        v = total * _pow2(M - F2)
        v = v + 0.0  # an exact zero is +0
        d = cast(v, out, p.output_rounding)
        big = np.abs(prods) >= 2.0**128  # beyond binary32: an infinity of its sign
        if big.any():
            pos = (big & (prods > 0)).any(axis=-1)
            neg = (big & (prods < 0)).any(axis=-1)
            d = np.where(pos & neg, np.nan, np.where(pos, np.inf, np.where(neg, -np.inf, d)))
        return _ieee_where_nonfinite(d, prods, c)


def _round_add(x: np.ndarray, y: np.ndarray, out: Format, rounding: str,
               flush: bool) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        s, lo = eft.two_sum(x, y)
        lo = np.where(np.isfinite(s), lo, 0.0)
        r = cast(s, out, rounding, lo=lo)
    return flush_subnormals(r, out, keep_sign=True) if flush else r


def _pairwise_tree(p: np.ndarray, out: Format, rounding: str, flush: bool) -> np.ndarray:
    G = p.shape[-1]
    if G == 1:
        return p[..., 0]
    h = G // 2
    return _round_add(_pairwise_tree(p[..., :h], out, rounding, flush),
                      _pairwise_tree(p[..., h:], out, rounding, flush), out, rounding, flush)


def _pairwise(a: np.ndarray, b: np.ndarray, c: np.ndarray, out: Format,
              p: TensorCorePreset) -> np.ndarray:
    """The ``"pairwise"`` step (AMD CDNA1/CDNA2) and ``"fma"`` on exact values."""
    rounding, flush = p.output_rounding, p.flush_outputs
    with np.errstate(invalid="ignore", over="ignore"):
        prods = a * b  # exact: precision <= 26
    if p.structure == "fma":
        return _round_add(c, prods[..., 0], out, rounding, flush)
    prods = cast(prods, out, rounding)
    if flush:
        prods = flush_subnormals(prods, out, keep_sign=True)
    return _round_add(c, _pairwise_tree(prods, out, rounding, flush), out, rounding, flush)


def group_step(p: TensorCorePreset, a: np.ndarray, b: np.ndarray, c: np.ndarray, fin: Format,
               out: Format) -> np.ndarray:
    """One group step of preset ``p``: a, b (..., G) exact values of ``fin`` (after
    input rounding and flushing), c (...) exact values of ``out``.

    Parameters
    ----------
    p : TensorCorePreset
        The preset whose ``structure`` rules the step.
    a, b : numpy.ndarray of float64, shape (..., G)
        The group's factors.
    c : numpy.ndarray of float64, shape (...)
        The accumulator values.
    fin, out : Format
        The input and output formats.

    Returns
    -------
    numpy.ndarray of float64, shape (...)
        The step's results, values of ``out``.
    """
    if p.structure == "fused":
        return _fused(a, decompose(a, fin, _NO_EXP), b, decompose(b, fin, _NO_EXP), c,
                      decompose(c, out),
                      int(p.fractional_bits), out,  # type: ignore[arg-type]
                      p.rounding_into(out), p.e8m13, p.alignment_rounding)
    if p.structure in ("fused-then-c", "even-odd"):
        return _amd_fused(a, b, c, fin, out, p)
    return _pairwise(a, b, c, out, p)


def check_formats(input_format: Any, output_format: Any,
                  preset: TensorCorePreset | None = None) -> tuple[Format, Format]:
    """The input and output formats, checked against the model (and ``preset``).

    Parameters
    ----------
    input_format, output_format : Format or str
        The formats (anything :func:`numerics.as_format` takes).
    preset : TensorCorePreset, optional
        The preset whose ``outputs`` and group sizes to check against.

    Returns
    -------
    tuple of (Format, Format)
        The input and output formats.

    Raises
    ------
    ValueError
        For an input format that is unsigned or of precision above 26, an output format
        the model (or ``preset``) does not write, or an input the preset does not model.
    """
    fin = as_format(input_format, arg="input_format")
    fout = as_format(output_format, arg="output_format")
    if fin.precision > 26 or not fin.signed:
        raise ValueError(
            f"Got input_format={fin.name!r}, but the tensor-core model needs a signed "
            "input format of precision <= 26"
        )
    outs = preset.outputs if preset is not None else _MODEL_OUTPUTS
    if fout.name not in outs:
        who = f"preset {preset.name!r}" if preset is not None else "the tensor-core model"
        raise ValueError(
            f"Got output_format={fout.name!r}, but {who} outputs only "
            + ", ".join(repr(o) for o in outs)
        )
    if preset is not None:
        preset.group_size(fin)
    return fin, fout


def fused_dot_add(
    a: Any,
    b: Any,
    c: Any,
    *,
    input_format: Format | str,
    fractional_bits: int,
    output_format: Format | str = "binary32",
    rounding: str = "rtz",
    e8m13: bool = False,
) -> np.ndarray:
    """``D = c + sum_i a_i b_i`` with the ``"fused"`` adder (module docstring).

    Parameters
    ----------
    a, b : array_like, shape (..., k)
        Products' factors; rounded to nearest-even into ``input_format`` first (a NaN
        where it has none is a ValueError).  With ``k = 0`` (no products) the step
        runs on ``c`` alone: ``c`` truncated to ``fractional_bits`` below its own
        exponent, then rounded into ``output_format``, and a zero ``c`` (-0 too) gives
        +0.
    c : array_like, broadcastable to (...)
        Addend; rounded to nearest-even into ``output_format`` first.
    input_format : Format or str
    fractional_bits : int
        Fraction bits kept after alignment to the largest exponent.
    output_format : Format or str
        ``"binary32"`` (default), ``"binary16"`` or ``"bfloat16"``.
    rounding : {"rtz", "rne"}
        The one rounding of the exact sum (``"rtz"`` for fp32, ``"rne"`` for fp16).
    e8m13 : bool
        Truncate the result to 13 fraction bits (Ada/Hopper FP8 paths).

    Returns
    -------
    ndarray of float64, shape (...)

    Examples
    --------
    >>> # 1 + 2**-24 + 2**-24: with 23 fraction bits each 2**-24 is truncated away
    >>> a = [1.0, 2.0**-12, 2.0**-12]
    >>> float(fused_dot_add(a, a, 0.0, input_format="binary16", fractional_bits=23))
    1.0
    >>> float(fused_dot_add(a, a, 0.0, input_format="binary16", fractional_bits=24))
    1.0000001192092896
    """
    fin, fout = check_formats(input_format, output_format)
    if not _is_int(fractional_bits) or not 0 <= fractional_bits <= 48:
        raise ValueError(f"Got {fractional_bits=}, but it must be an int in [0, 48]")
    _check_choice(rounding, "rounding", OUTPUT_ROUNDINGS)
    if not isinstance(e8m13, (bool, np.bool_)):
        raise TypeError(f"Got {e8m13=}, but it must be a bool")
    pa, pb = real_pair(a, "a"), real_pair(b, "b")
    reject_nan(pa[0], fin, "a")
    reject_nan(pb[0], fin, "b")
    try:
        A_hi, B_hi, A_lo, B_lo = np.broadcast_arrays(pa[0], pb[0], pa[1], pb[1])
    except ValueError:
        raise ValueError(
            f"Got a with shape {np.shape(a)} and b with shape {np.shape(b)}, "
            "but they must broadcast together"
        ) from None
    if A_hi.ndim == 0:
        raise ValueError("Got scalar a and b, but they need a last axis of products")
    C_hi, C_lo = real_pair(c, "c")
    reject_nan(C_hi, fout, "c")
    try:
        C_hi, C_lo = (np.broadcast_to(v, A_hi.shape[:-1]) for v in (C_hi, C_lo))
    except ValueError:
        raise ValueError(
            f"Got c with shape {np.shape(c)}, but it must broadcast to {A_hi.shape[:-1]}"
        ) from None
    A = cast(A_hi, fin, lo=A_lo)
    B = cast(B_hi, fin, lo=B_lo)
    C = cast(C_hi, fout, lo=C_lo)
    d = _fused(A, decompose(A, fin, _NO_EXP), B, decompose(B, fin, _NO_EXP), C,
               decompose(C, fout),
               int(fractional_bits), fout, rounding, bool(e8m13))
    d = canonical_nan(d, None)
    return d[()] if d.ndim == 0 else d

