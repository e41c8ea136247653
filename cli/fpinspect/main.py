"""``fpinspect``: argument parsing -> numerics calls -> printing.

Exit status: 0 success; 1 a check failed (``diff --max-ulp``); 2 bad input
(one line on stderr, no usage dump, no traceback); 70 an internal error (a bug:
the message says so and where to report it); 74 the output could not be written
(a full disk, a closed stdout: one line on stderr); 130 interrupted (Ctrl-C); 141
the reader of the output went away (a broken pipe: quietly, as coreutils do).
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import dataclasses
import difflib
import io
import os
import re
import signal
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from fpinspect import jsonout, views
from fpinspect.views import Text
from numerics.checkpoint import (
    Source,
    TensorRef,
    diff_sources,
    hash_source,
    open_source,
    stats_source,
    tensor_fingerprint,
)
from numerics.checkpoint.diff import compare_format, compare_refs, paired_whole, select
from numerics.formats import FORMATS, Format, get_format
from numerics.inspection import (
    DEFAULT_VALUE_FORMATS,
    code_table,
    inspect_code,
    inspect_integer,
    inspect_value,
)
from numerics.parse import parse_code, parse_formats, parse_value, shown
from numerics.rounding import OVERFLOWS, ROUNDINGS
from numerics.stats import CANDIDATE_FORMATS

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

__all__ = ["EXIT_BROKEN_PIPE", "EXIT_CHECK_FAILED", "EXIT_INTERNAL", "EXIT_INTERRUPTED",
           "EXIT_IOERR", "EXIT_OK", "EXIT_USAGE", "OutputError", "UsageError", "main"]

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 70
EXIT_IOERR = 74  # sysexits.h EX_IOERR
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE
ISSUES_URL = "the numerics project issue tracker"
PROG = "fpinspect"
COMMANDS = ("value", "bits", "formats", "table", "int", "ls", "diff", "stats", "hash",
            "probe")
#: The value bare `fpinspect` shows in every common format (and `fpinspect --json` as JSON).
DEMO_VALUE = "0.1"
# A token that is a negative number (-0, -1e-40, -.5, -inf, -nan, -0x1p3, -1/3), not an option.
_NEGATIVE_NUMBER = re.compile(r"-(?:[0-9.]|inf|nan)", re.IGNORECASE)


class UsageError(Exception):
    """Bad input from the user: reported in one line, exit status 2."""


class OutputError(Exception):
    """Standard output could not be written (not a broken pipe): one line, exit status 74."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises UsageError instead of printing usage and exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        # argparse swallows OSError here, so `fpinspect --help >/dev/full` would exit 0
        if message:
            (file or sys.stderr).write(message)


MAIN_EPILOG = """\
commands:
  value VALUE      how a value is stored in each format (the default command)
  bits CODE -f F   decode a code of format F: fields, value, neighbours, ULP
  formats          every format: widths, bias, range, eps, specials
  table FORMAT     every code of a format of at most 8 bits
  int N            integer N in uint32, int32, fp32, bf16, fp16, fp64
  ls PATH          every tensor of a checkpoint: dtype, shape, bytes, shard
  diff A B         compare two tensors or whole checkpoints in ULPs
  stats PATH       range and fit to fp8/fp6/fp4/bf16/fp16, per tensor
  hash PATH        fingerprint of dtypes, shapes and bits (not of the sharding)
  probe MOD:FUNC   how a black-box matmul or sum accumulates (order, bits, rounding)

PATH: .safetensors, a directory of shards (with or without model.safetensors.index.json)
or the index, .npz, .npy, torch .pt/.pth/.bin/.ckpt (needs torch); PATH:KEY is one tensor.

examples:
  fpinspect                          0.1 in every common format
  fpinspect 0.1                      the same as `fpinspect value 0.1`
  fpinspect 1e-40 -f bf16 --json     one format, as JSON
  fpinspect -- -1e-40                negative values work with or without `--`
  fpinspect bits 0x7e -f e4m3fn
  fpinspect diff ref.npy out.npy --max-ulp 2   exit status 1 if any element is further apart
  fpinspect ls ./llama-7b/
  fpinspect diff ./fp32-model/ ./bf16-model/ --key '*.mlp.*' --max-ulp 1

every command takes --json (one strict JSON document on stdout).
exit status: 0 ok, 1 check failed (diff), 2 bad input, 70 internal error,
74 output not written (disk full, stdout closed), 130 interrupted, 141 broken pipe.
"""


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one strict JSON document")


def _add_rounding(p: argparse.ArgumentParser, *, stochastic: bool = True) -> None:
    # diff has no sr: a comparison after a random rounding would differ from run to run
    choices = ROUNDINGS if stochastic else tuple(r for r in ROUNDINGS if r != "sr")
    p.add_argument("--rounding", choices=choices, default="rne",
                   help="rounding mode (default rne: to nearest, ties to even)"
                        + ("" if stochastic else "; a side is rounded only when the "
                           "formats differ or -f is given (no sr: a diff is deterministic)"))
    p.add_argument("--overflow", choices=OVERFLOWS, default="ieee",
                   help="overflow rule (default ieee: inf, or NaN where there is no inf)")


def _add_file(p: argparse.ArgumentParser, name: str = "file") -> None:
    p.add_argument("--key", action="append", metavar="GLOB",
                   help="only tensors whose name matches (repeatable; PATH:KEY picks one too)")
    p.add_argument("-f", "--format", dest="format",
                   help="read raw bytes (numpy '<V2' etc.) as this format")


def _add_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (it shows on a terminal for work over a second)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the chunks on this dask.distributed scheduler (needs "
                        "dask[distributed]); every worker must see the same paths")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for the tests and for documentation)."""
    raw = argparse.RawDescriptionHelpFormatter
    parser = _Parser(prog=PROG, formatter_class=raw, epilog=MAIN_EPILOG,
                     description="Inspect floating-point values, codes and tensors, bit-exactly, "
                                 "in every ML format (fp64 ... fp8, fp6, fp4, P3109).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("value", formatter_class=raw, help="how a value is stored",
                       # (VALUE is required here; the parser takes it as optional only for
                       # the options-only form `fpinspect --json`, see below)
                       usage="%(prog)s [-h] [-f FORMATS] [--all]\n"
                             "                       [--rounding {rne,rna,rtz,ru,rd,rto,sr}]\n"
                             "                       [--overflow {ieee,saturate}] [--seed SEED]"
                             " [--json]\n                       VALUE",
                       description="Round VALUE, exactly as written, into each format and show "
                                   "the bits, the stored value, the error and the ULP.",
                       epilog="""\
VALUE: a decimal (0.1, 1e-40, -0), an integer of any size, a hex float (0x1.8p3),
a fraction (1/3), inf or nan. It is never read through a float64 first.

examples:
  fpinspect value 0.1
  fpinspect 1.00390625000000000000009 -f bf16      1.0078125, not 1.0
  fpinspect 500 -f e4m3fn --overflow saturate
  fpinspect -1e-40 --all
  fpinspect 1/3 -f fp16 --rounding rtz --json
""")
    # optional for argparse: `fpinspect --json` (no command, no VALUE) is the built-in example
    # as JSON, while `fpinspect value` without VALUE is an error (see run)
    p.add_argument("value", metavar="VALUE", nargs="?")
    p.add_argument("-f", "--format", dest="formats",
                   help="comma-separated formats (default: "
                        + ",".join(DEFAULT_VALUE_FORMATS) + ")")
    p.add_argument("--all", action="store_true", help="every registered format")
    _add_rounding(p)
    p.add_argument("--seed", type=int, default=None,
                   help="seed (a non-negative int) of the draw for --rounding sr (default 0)")
    _add_common(p)

    p = sub.add_parser("bits", formatter_class=raw, help="decode a code",
                       description="Decode CODE in FORMAT: bit fields, exact value, both "
                                   "neighbours and the ULP.",
                       epilog="""\
examples:
  fpinspect bits 0x3f800000 -f fp32
  fpinspect bits 0b0_01111_00 -f e5m2
  fpinspect bits 126 -f e4m3fn --json
""")
    p.add_argument("code", metavar="CODE", help="hex (0x..), binary (0b.., _ allowed) or decimal")
    p.add_argument("-f", "--format", dest="format", required=True, help="the format")
    _add_common(p)

    p = sub.add_parser("formats", formatter_class=raw, help="list every format",
                       description="One row per format: widths, bias, range, eps, specials.",
                       epilog="examples:\n  fpinspect formats\n  fpinspect formats -f fp8_e4m3,"
                              "e5m2 --json\n")
    p.add_argument("-f", "--format", dest="formats", help="only these formats")
    _add_common(p)

    p = sub.add_parser("table", formatter_class=raw, help="every code of a small format",
                       description="Every code of a format of at most 8 bits and its value.",
                       epilog="examples:\n  fpinspect table e4m3fn\n  fpinspect table fp4 --list\n")
    p.add_argument("table_format", metavar="FORMAT")
    p.add_argument("--list", action="store_true", help="one row per code, exact values")
    _add_common(p)

    p = sub.add_parser("int", formatter_class=raw, help="an integer in int and float types",
                       description="How integer N fares in uint32, int32, binary32, bfloat16, "
                                   "binary16 and binary64: exact or not, the value stored, the "
                                   "spacing of representable values there.",
                       epilog="examples:\n  fpinspect int 16777217\n"
                              "  fpinspect int 2654435761     a hash prime, rounded in fp32\n")
    p.add_argument("n", metavar="N", help="an integer: decimal, 0x.., 0b.., or any exact "
                   "number that is one (1e3, 0x1p3, 8/2)")
    _add_common(p)

    p = sub.add_parser("ls", formatter_class=raw, help="list the tensors of a checkpoint",
                       description="Every tensor of PATH: dtype, shape, size in bytes, and its "
                                   "shard; totals at the end.",
                       epilog="examples:\n  fpinspect ls model.safetensors\n"
                              "  fpinspect ls ./sharded-model/ --json\n"
                              "  fpinspect ls pytorch_model.bin     (needs torch)\n")
    p.add_argument("path", metavar="PATH")
    _add_common(p)

    p = sub.add_parser("diff", formatter_class=raw, help="compare two tensors or checkpoints",
                       description="Compare two tensors element by element (bitwise mismatches, "
                                   "ULP-distance histogram, max abs/rel error relative to A, "
                                   "worst elements, NaN/inf mismatches), or two whole "
                                   "checkpoints tensor by tensor, matched by name.",
                       epilog="""\
A and B: a tensor file, a checkpoint (file, directory of shards, index), or PATH:KEY.
A .npy or PATH:KEY against one tensor: the detailed single-tensor report, whatever
the names, with no failure unless a check is given.  Checkpoints (a one-tensor
file too): matched by name, one row per tensor (the detailed report when they
share their one name), then the names only in A, only in B, and shape mismatches;
with no check, tensors must be bit-equal.

The format comes from the dtype (float32, bf16, fp8 in safetensors, ml_dtypes...).
Mixed formats (fp32 against bf16) are compared in the coarser one, the finer side
rounded once into it (the header says so); -f/--as FORMAT compares in FORMAT (raw
'<V2' bytes are read as it, numbers rounded into it).

check: an element passes within --max-ulp N, or within |a - b| <= atol + rtol * |a|
(either, when both are given); NaN against non-NaN fails. On whole checkpoints with no
check, only bit-equal tensors pass. Exit status 0 all pass, 1 any fails (or tensors
missing on one side, or shapes differ), 2 bad input.

examples:
  fpinspect diff ref.npy out.npy
  fpinspect diff a.npy b.npy -f bf16 --max-ulp 1 --json    exit 1 beyond 1 ULP
  fpinspect diff act.npy model.safetensors:layer0.out
  fpinspect diff ./fp32/ ./bf16/ --key 'model.layers.0.*' --rtol 1e-2
  fpinspect diff a/ b/ --scheduler tcp://10.0.0.5:8786     on a Dask cluster
""")
    p.add_argument("a", metavar="A")
    p.add_argument("b", metavar="B")
    p.add_argument("--key", action="append", metavar="GLOB",
                   help="only tensors whose name matches (repeatable)")
    p.add_argument("-f", "--format", "--as", dest="format", metavar="FORMAT",
                   help="compare in this format")
    _add_rounding(p, stochastic=False)
    p.add_argument("--max-ulp", type=int, metavar="N",
                   help="check: an element passes within N ULP")
    p.add_argument("--atol", type=float, metavar="X",
                   help="check: an element passes within |a - b| <= atol + rtol * |a|")
    p.add_argument("--rtol", type=float, metavar="X", help="see --atol")
    p.add_argument("--top", type=int, default=10, metavar="K",
                   help="how many worst elements to show for one tensor (default 10)")
    _add_run(p)
    _add_common(p)

    p = sub.add_parser("stats", formatter_class=raw, help="range and format fit, per tensor",
                       description="Dynamic range, exponent histogram, and for each candidate "
                                   "format the fraction of elements that would overflow, "
                                   "saturate, flush to zero or become subnormal (or NaN: "
                                   "zero and negative elements in an unsigned format such as "
                                   "e8m0fnu), plus the "
                                   "per-tensor scale that fits it. On a checkpoint: a row per "
                                   "tensor, then the same figures for all elements together.",
                       epilog="examples:\n  fpinspect stats weights.npy\n"
                              "  fpinspect stats model.safetensors --key 'w*' --candidates "
                              "e4m3fn,e2m1fn\n  fpinspect stats ./sharded-model/ --json\n")
    p.add_argument("file", metavar="PATH")
    _add_file(p)
    p.add_argument("--candidates", help="comma-separated candidate formats (default: "
                   + ",".join(CANDIDATE_FORMATS) + ")")
    p.add_argument("--all", action="store_true", help="every registered format as a candidate")
    _add_run(p)
    _add_common(p)

    p = sub.add_parser("hash", formatter_class=raw, help="fingerprint tensors or a checkpoint",
                       description="Fingerprint of a tensor's element type, shape and bits "
                                   "(not the file's path, name or container): XXH64 of each "
                                   "1 MiB block of its codes, on all cores, and SHA-256 over "
                                   "those. On a checkpoint: one digest per tensor and one of all "
                                   "(names, dtypes, shapes and bits; not the sharding or the "
                                   "order in files). For telling changed checkpoints apart, not "
                                   "against an adversary.",
                       epilog="examples:\n  fpinspect hash out.npy\n"
                              "  fpinspect hash out.safetensors:logits --canonical\n"
                              "  fpinspect hash ./sharded-model/ | head -1\n")
    p.add_argument("file", metavar="PATH")
    _add_file(p)
    p.add_argument("--canonical", action="store_true",
                   help="make -0 into +0 and every NaN the canonical NaN first")
    _add_run(p)
    _add_common(p)

    p = sub.add_parser("probe", formatter_class=raw, help="how a matmul or sum accumulates",
                       description="Call a black-box matrix multiply (f(A, B)) or sum (f(x)) "
                                   "on designed inputs and print the accumulation model that "
                                   "reproduces it bit for bit: order over K, fused group size, "
                                   "fractional bits, roundings, promotion, subnormals "
                                   "(numerics.probe; proofs/probe.md).",
                       epilog="examples:\n  fpinspect probe numpy:matmul --input fp32 --k 256\n"
                              "  fpinspect probe numpy:sum --kind sum --input fp32 --k 300\n"
                              "  fpinspect probe --torch mm --dtype bf16 --device cuda\n")
    p.add_argument("target", metavar="MODULE:FUNCTION", nargs="?",
                   help="the callable, by import path (e.g. numpy:matmul)")
    p.add_argument("--kind", choices=("matmul", "sum"), default="matmul",
                   help="f(A, B) -> A @ B (default) or f(x) -> sum of x")
    p.add_argument("--input", help="format of the inputs of MODULE:FUNCTION (e.g. fp32, bf16, "
                                   "e4m3fn); with --torch, --dtype is the input format")
    p.add_argument("--output", help="format of a matmul's outputs (default binary32; with "
                                    "--torch, the --dtype); a sum's result is in --input")
    p.add_argument("--k", type=int, default=64,
                   help="reduction length K (matmul) or number of terms (sum), 2 to 65536; "
                        "default 64")
    # 4096 is numerics.probe.matmul.MAX_BATCH (not imported here: it would load the probe
    # for every command; a test pins the two together)
    p.add_argument("--batch", type=int, help="rows and columns of each matmul call, 4 to "
                   "4096 (default 64; not for --kind sum)")
    # 1000000 is numerics.probe.verify.MAX_TRIALS (a test pins the two together)
    p.add_argument("--verify", type=int, metavar="TRIALS",
                   help="random calls to check the model on, 0 to 1000000 (default 2 for a "
                        "matmul, 1000 for a sum, 0 for a sum of fused nodes, which the "
                        "probe checks itself; 0 skips)")
    p.add_argument("--torch", choices=("mm", "matmul"),
                   help="probe torch.mm / torch.matmul instead of MODULE:FUNCTION")
    p.add_argument("--dtype", help="torch input dtype for --torch (fp32, bf16, fp16; "
                                   "default fp32)")
    p.add_argument("--device", help="torch device for --torch (default cpu)")
    _add_common(p)
    return parser


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("numerics")
    except Exception:  # noqa: BLE001 - not installed: the source tree's version
        import numerics

        return getattr(numerics, "__version__", "unknown")


def _prepare(argv: Sequence[str]) -> list[str]:
    """Protect negative numbers from option parsing; make ``value`` the default command."""
    args = [f" {a}" if _NEGATIVE_NUMBER.match(a) else a for a in argv]
    if "--" in args:
        i = args.index("--")
        if i + 1 < len(args) and _NEGATIVE_NUMBER.match(argv[i + 1]):
            # `fpinspect value -- -1 -f bf16`: the number is protected anyway, so the
            # options after it still count (argparse would take them as values)
            args = args[:i] + args[i + 1:]
        else:  # `fpinspect ls -- -f.npy`: everything after is positional
            args = args[:i] + [a.strip() if a.startswith(" ") else a for a in args[i:]]
    if args and args[0] not in COMMANDS and args[0] not in ("-h", "--help", "--version"):
        if not args[0].startswith("-"):  # an option (`fpinspect -f bf16 0.1`) is no command
            _check_not_a_mistyped_command(args[0])
        else:  # `fpinspect --json int 5`: the command after an option is no VALUE
            at = next((i for i, a in enumerate(args) if a in COMMANDS), None)
            if at is not None:
                before = " ".join(a.strip() for a in args[:at])
                raise UsageError(f"Got {before!r} before the command {args[at]!r}; options "
                                 f"go after it: fpinspect {args[at]} ... {before}")
        args.insert(0, "value")
    return args


def _unprotect(args: argparse.Namespace, argv: Sequence[str]) -> None:
    """Undo :func:`_prepare`'s protection of negative numbers in every string argument: a
    path (``ls -1.npy``), a --key glob or a format is the token as typed (a VALUE, CODE or
    N is stripped where it is parsed anyway)."""
    protected = {f" {a}" for a in argv if _NEGATIVE_NUMBER.match(a)} - set(argv)
    if not protected:
        return
    for name, v in vars(args).items():
        if isinstance(v, str) and v in protected:
            setattr(args, name, v[1:])
        elif isinstance(v, list):
            setattr(args, name, [x[1:] if isinstance(x, str) and x in protected else x
                                 for x in v])


def _check_not_a_mistyped_command(word: str) -> None:
    """UsageError for a word that is not a number but looks like a command (``stat``)."""
    try:
        parse_value(word.strip())
        return
    except ValueError:
        pass
    close = difflib.get_close_matches(word.lower(), COMMANDS, n=1, cutoff=0.6)
    if close:
        raise UsageError(f"unknown command {word!r}; did you mean {close[0]!r}? "
                         "(`fpinspect --help` lists the commands)")


_FORMATS_HINT = re.compile(r"\(numerics\.FORMATS lists all \d+\)")


def _user_message(err: Exception) -> str:
    """The library's message, with hints that point to the CLI rather than to Python."""
    return _FORMATS_HINT.sub("(`fpinspect formats` lists them all)", str(err))


def _format(name: str, option: str) -> Format:
    """The format ``name`` given to ``option`` (``-f``, ``--output``, ...); UsageError naming
    the option when it is blank."""
    if not name.strip():
        raise UsageError(f"Got {option} {name!r}, but it names no format")
    try:
        return get_format(name.strip())
    except ValueError as err:
        raise UsageError(_user_message(err)) from None


# ---------------------------------------------------------------- commands
Printer = Callable[[Any], None]


def _cmd_value(args: argparse.Namespace, out: Printer) -> int:
    pv = parse_value(args.value.strip())
    if args.all and args.formats is not None:
        raise UsageError(f"Got --all and -f {args.formats!r}; give one of them")
    if args.seed is not None and args.rounding != "sr":
        raise UsageError(f"Got --seed {args.seed} with --rounding {args.rounding}; "
                         "a seed only applies to --rounding sr")
    if args.seed is not None and args.seed < 0:
        raise UsageError(f"Got --seed {args.seed}, but a seed must be a non-negative int")
    if args.all:
        fmts: tuple[Format, ...] = tuple(get_format(n) for n in FORMATS)
    elif args.formats is not None:
        fmts = parse_formats(args.formats)
    else:
        fmts = tuple(get_format(n) for n in DEFAULT_VALUE_FORMATS)
    seed = 0 if args.seed is None else args.seed
    drawn = seed if args.rounding == "sr" else None  # echoed, so a run can be repeated
    # NaN has no code in a format without NaN (fp6, fp4): such formats are listed apart
    no_nan = tuple(f.name for f in fmts if pv.kind == "nan" and not f.has_nan)
    results = [inspect_value(pv, f, rounding=args.rounding, overflow=args.overflow,
                             seed=seed) for f in fmts if f.name not in no_nan]
    if not results:
        raise UsageError(f"Got value={pv.text!r}, but none of the chosen formats has a NaN")
    if args.json:
        out(jsonout.value_json(pv, results, rounding=args.rounding, overflow=args.overflow,
                               no_nan=no_nan, seed=drawn))
    else:
        out(views.value_view(pv, results, rounding=args.rounding, overflow=args.overflow,
                             no_nan=no_nan, seed=drawn))
    return EXIT_OK


def _cmd_bits(args: argparse.Namespace, out: Printer) -> int:
    fmt = _format(args.format, "-f")
    report = inspect_code(parse_code(args.code.strip(), fmt), fmt)
    out(jsonout.bits_json(report) if args.json else views.bits_view(report))
    return EXIT_OK


def _cmd_formats(args: argparse.Namespace, out: Printer) -> int:
    fmts = (parse_formats(args.formats) if args.formats is not None
            else tuple(get_format(n) for n in FORMATS))
    out(jsonout.formats_json(fmts) if args.json else views.formats_view(fmts))
    return EXIT_OK


def _cmd_table(args: argparse.Namespace, out: Printer) -> int:
    fmt = _format(args.table_format, "FORMAT")
    rows = code_table(fmt)
    out(jsonout.table_json(fmt, rows) if args.json
        else views.table_view(fmt, rows, as_list=args.list))
    return EXIT_OK


def _cmd_int(args: argparse.Namespace, out: Printer) -> int:
    text = args.n.strip()
    try:
        pv = parse_value(text)
    except ValueError as err:
        if "exponent" in str(err):  # a number, but beyond parse_value's exponent limit
            raise UsageError(str(err).replace("Got value=", "Got N=", 1)) from None
        raise UsageError(f"Got N={shown(text)}, which is not an integer; expected e.g. "
                         "16777217, 0x9e3779b1 or 0b1011") from None
    if not pv.is_finite or pv.fraction.denominator != 1:
        raise UsageError(f"Got N={shown(text)}, but it must be an integer")
    report = inspect_integer(int(pv.fraction))
    out(jsonout.int_json(report) if args.json else views.int_view(report))
    return EXIT_OK


def _open(path: str, keys: Sequence[str] | None = None) -> tuple[Source, str]:
    """A source, its tensors filtered by the --key globs, and how to name a lone tensor."""
    src = open_source(path)
    lone = path if src.kind in ("npy", "tensor") or len(src.tensors) == 1 else ""
    if keys:
        names = set(select(src.names, keys))
        if not names:
            shown = ", ".join(repr(k) for k in src.names[:8]) + (
                ", ..." if len(src.names) > 8 else "")
            which = f"key={keys[0]!r}" if len(keys) == 1 else f"--key {' '.join(keys)}"
            raise UsageError(f"Got {which}, but {path!r} holds only {shown}")
        src = Source(src.path, src.kind, tuple(t for t in src.tensors if t.name in names),
                     src.files, src.skipped)
    return src, lone or f"{path}:{src.tensors[0].name}"


def _raw_format(args: argparse.Namespace, src: Source) -> Format | None:
    """-f for stats/hash: it reads raw bytes as a format, and means nothing on numbers."""
    if args.format is None:
        return None
    fmt = _format(args.format, "-f")
    if not any(t.is_raw for t in src.tensors):
        t = src.tensors[0]
        raise UsageError(
            f"Got -f {args.format.strip()}, but {t.name!r} in {src.path!r} is {t.dtype_name} "
            "already; -f only reads raw bytes (numpy '<V2') as a format"
            + ("; --candidates chooses the formats to fit" if args.command == "stats" else ""))
    return fmt


def _port_of(address: str) -> str | None:
    """The port of a scheduler address ``[scheme://]host:port`` (``[v6]:port`` for an
    IPv6 host), or None when it names none.

    Examples
    --------
    >>> [_port_of(a) for a in ("tcp://10.0.0.5:8786", "[::1]:99999", "tcp://[::1]", "host")]
    ['8786', '99999', None, None]
    """
    rest = address.strip().split("://", 1)[-1].split("/", 1)[0]
    if rest.startswith("["):
        _, close, tail = rest.partition("]")
        return tail[1:] if close and tail.startswith(":") else None
    host, sep, port = rest.rpartition(":")
    return port if sep and host and ":" not in host else None


def _client(args: argparse.Namespace) -> Any:
    if getattr(args, "scheduler", None) is None:
        return None
    if not args.scheduler.strip():
        raise UsageError(f"Got --scheduler {args.scheduler!r}, but it must be the address of a "
                         "Dask scheduler (e.g. tcp://10.0.0.5:8786)")
    port = _port_of(args.scheduler)
    if port is not None and not (port.isdigit() and 0 < int(port) < 65536):
        # (no connection can be made: refused at once, not after the 10 s timeout)
        raise UsageError(f"Got --scheduler {args.scheduler!r}, but its port {port!r} is not "
                         "a port number (1 to 65535)")
    try:
        from distributed import Client
    except ImportError:
        raise UsageError("Got --scheduler, but dask.distributed is not installed; install it "
                         "(pip install 'dask[distributed]', or the project's extra "
                         "'.[dask]')") from None
    try:
        return Client(args.scheduler, timeout="10s")
    except (OSError, TimeoutError, ValueError) as err:
        raise UsageError(f"cannot connect to the Dask scheduler {args.scheduler!r}: {err}") \
            from None


def _progress(args: argparse.Namespace, total: int) -> Any:
    enabled = not args.json and not args.no_progress and sys.stderr.isatty()
    return views.progress_bar(total, enabled=enabled)


def _check_options(args: argparse.Namespace) -> None:
    if args.max_ulp is not None and args.max_ulp < 0:
        raise UsageError(f"Got --max-ulp {args.max_ulp}, but it must be non-negative")
    for name in ("atol", "rtol"):
        v = getattr(args, name)
        if v is not None and not (v >= 0 and v != float("inf")):
            raise UsageError(f"Got --{name} {v}, but it must be a finite number >= 0")
    if args.top < 0:
        raise UsageError(f"Got --top {args.top}, but it must be non-negative")


def _cmd_ls(args: argparse.Namespace, out: Printer) -> int:
    src = open_source(args.path)
    out(jsonout.ls_json(src) if args.json else views.ls_view(src))
    return EXIT_OK


def _cmd_diff(args: argparse.Namespace, out: Printer) -> int:
    _check_options(args)
    sa, sb = open_source(args.a), open_source(args.b)
    fmt = _format(args.format, "-f") if args.format is not None else None
    if fmt is not None:
        sa, sb = sa.with_raw_format(fmt), sb.with_raw_format(fmt)
    na = select(sa.names, args.key)
    nb = select(sb.names, args.key)
    if args.key and not na and not nb:
        which = f"key={args.key[0]!r}" if len(args.key) == 1 else f"--key {' '.join(args.key)}"
        raise UsageError(f"Got {which}, but neither {args.a!r} nor {args.b!r} holds a tensor "
                         f"of that name (they hold {', '.join(repr(n) for n in sa.names[:4])}"
                         f"{', ...' if len(sa.names) > 4 else ''})")
    # a .npy or a PATH:KEY is one tensor the user chose: reported on, whatever its name; a
    # checkpoint that holds one tensor is matched by name, bit-equal with no check
    single = paired_whole(sa, sb)
    # one tensor of multi-tensor sources (--key) keeps the checkpoints' default check, and
    # their report of a shape mismatch (exit 1); two single tensors must have one shape
    one = len(na) == 1 and len(nb) == 1 and (single or (
        na == nb and sa[na[0]].shape == sb[nb[0]].shape))
    client = _client(args)
    try:
        if one:
            return _diff_one(args, sa, sb, sa[na[0]], sb[nb[0]], fmt, out, client,
                             bit_equal=not single and not _has_check(args))
        total = sum(sa[n].nbytes + sb[n].nbytes for n in set(na) & set(nb)
                    if sa[n].shape == sb[n].shape)
        with _progress(args, total) as advance:
            report = diff_sources(sa, sb, keys=args.key, fmt=fmt, rounding=args.rounding,
                                  overflow=args.overflow, max_ulp=args.max_ulp, atol=args.atol,
                                  rtol=args.rtol, client=client, progress=advance)
    finally:
        if client is not None:
            client.close()
    out(jsonout.checkpoint_diff_json(report) if args.json else views.checkpoint_diff_view(report))
    return EXIT_OK if report.ok else EXIT_CHECK_FAILED


def _has_check(args: argparse.Namespace) -> bool:
    return args.max_ulp is not None or args.atol is not None or args.rtol is not None


def _diff_one(args: argparse.Namespace, sa: Source, sb: Source, ra: TensorRef, rb: TensorRef,
              fmt: Format | None, out: Printer, client: Any, *, bit_equal: bool = False) -> int:
    """Two tensors: the detailed report (worst elements, histogram).

    ``bit_equal``: with no check given, only bit-equal tensors pass (the
    default for tensors picked out of checkpoints); otherwise no check, no failure.
    """
    la = args.a if sa.kind in ("npy", "tensor") or len(sa.tensors) == 1 else \
        f"{args.a}:{ra.name}"
    lb = args.b if sb.kind in ("npy", "tensor") or len(sb.tensors) == 1 else \
        f"{args.b}:{rb.name}"
    if ra.shape != rb.shape:
        raise UsageError(f"Got shapes {list(ra.shape)} ({la}) and {list(rb.shape)} "
                         f"({lb}), but diff needs equal shapes")
    cmp_fmt = compare_format(ra, rb, fmt)
    if cmp_fmt is None:
        return _diff_ints(args, la, lb, ra, rb, out, client, bit_equal=bit_equal)
    notes = []
    rounded = [s for s, r in (("A", ra), ("B", rb)) if r.format != cmp_fmt]
    if rounded and fmt is None:
        notes.append(f"{ra.dtype_name} vs {rb.dtype_name}: compared in {cmp_fmt.name}, "
                     f"{' and '.join(rounded)} rounded once ({args.rounding}) into it")
    for what, attr in (("as not real-number tensors of a readable dtype", "skipped"),
                       ("files of another kind than the directory's checkpoint", "unread"),
                       ("in the shards but not in the index", "unindexed")):
        left = [f"{side}: {', '.join(names[:8])}{', ...' if len(names) > 8 else ''}"
                for side, src in (("A", sa), ("B", sb)) if (names := getattr(src, attr))]
        if left and not args.key:
            notes.append(f"not compared, {what}: " + "; ".join(left))
    # a chunk at a time (a side rounded into cmp_fmt never exists whole), on the threads or
    # the --scheduler's cluster, like a checkpoint diff
    with _progress(args, ra.nbytes + rb.nbytes) as advance:
        report = compare_refs(ra, rb, cmp_fmt, rounding=args.rounding, overflow=args.overflow,
                              worst=args.top, max_ulp=args.max_ulp, atol=args.atol,
                              rtol=args.rtol, client=client, progress=advance)
    if bit_equal:
        report = dataclasses.replace(report, beyond=report.bitwise_mismatches)
    check = None
    if report.beyond is not None:
        check = views.check_text(args.max_ulp, args.atol, args.rtol)
    if args.json:
        out(jsonout.diff_json(la, lb, ra, rb, report, max_ulp=args.max_ulp, notes=notes,
                              check=check))
    else:
        out(views.diff_view(la, lb, report, max_ulp=args.max_ulp, atol=args.atol,
                            rtol=args.rtol, notes=notes))
    return EXIT_CHECK_FAILED if report.beyond else EXIT_OK


def _diff_ints(args: argparse.Namespace, la: str, lb: str, ra: TensorRef, rb: TensorRef,
               out: Printer, client: Any, *, bit_equal: bool) -> int:
    """Two integer tensors: compared exactly as integers (as on whole checkpoints)."""
    with _progress(args, ra.nbytes + rb.nbytes) as advance:
        report = diff_sources(Source(la, "tensor", (ra,), (ra.file,)),
                              Source(lb, "tensor", (rb,), (rb.file,)), max_ulp=args.max_ulp,
                              atol=args.atol, rtol=args.rtol, client=client, progress=advance)
    d = report.tensors[0]
    checked = bit_equal or _has_check(args)
    check = views.check_text(args.max_ulp, args.atol, args.rtol) if checked else None
    failed = bool(d.failures) if checked else None
    if args.json:
        out(jsonout.int_diff_json(la, lb, ra, rb, d, check=check, failed=failed))
    else:
        out(views.int_diff_view(la, lb, d, check=check, failed=failed,
                                fail=views.fail_text(args.max_ulp, args.atol, args.rtol)))
    return EXIT_CHECK_FAILED if failed else EXIT_OK


def _candidates(args: argparse.Namespace) -> tuple[Format, ...]:
    if args.all:
        if args.candidates is not None:
            raise UsageError("Got --all and --candidates; give one of them")
        return tuple(get_format(n) for n in FORMATS)
    if args.candidates is not None:
        if not args.candidates.strip(" ,"):
            raise UsageError("Got --candidates '', but it needs at least one format")
        return parse_formats(args.candidates)
    return tuple(get_format(n) for n in CANDIDATE_FORMATS)


def _cmd_stats(args: argparse.Namespace, out: Printer) -> int:
    src, label = _open(args.file, args.key)
    raw = _raw_format(args, src)
    cands = _candidates(args)
    client = _client(args)
    try:
        with _progress(args, src.nbytes) as advance:
            result = stats_source(src, formats=cands, raw_format=raw, client=client,
                                  progress=advance)
    finally:
        if client is not None:
            client.close()
    if src.skipped and not args.key:
        shown = ", ".join(repr(n) for n in src.skipped[:8]) + (
            ", ..." if len(src.skipped) > 8 else "")
        _say(f"fpinspect: note: the statistics leave out {len(src.skipped)} entries that "
             f"are not real-number tensors of a readable dtype: {shown}")
    if len(result.tensors) == 1:
        ref, st = result.tensors[0]
        out(jsonout.stats_json(label, ref, st) if args.json
            else views.stats_view(label, ref.dtype_name, ref.shape, st))
    else:
        out(jsonout.checkpoint_stats_json(result) if args.json
            else views.checkpoint_stats_view(result))
    return EXIT_OK


def _cmd_hash(args: argparse.Namespace, out: Printer) -> int:
    src, label = _open(args.file, args.key)
    raw = _raw_format(args, src)
    if raw is not None:
        src = src.with_raw_format(raw)
    raw_left = [t for t in src.tensors if t.is_raw]
    if raw_left:
        raise UsageError(f"Got tensor {raw_left[0].name!r} in {src.path!r} of raw dtype "
                         f"{raw_left[0].stored_dtype}; give its format with -f to read the "
                         "bytes as it")
    client = _client(args)
    try:
        if len(src.tensors) == 1 and (src.kind in ("npy", "tensor") or args.key):
            # one tensor picked out (PATH:KEY, --key) or a .npy (one unnamed tensor): its
            # fingerprint, which ignores the name; a checkpoint's digest covers the names
            ref = src.tensors[0]
            with _progress(args, ref.nbytes) as advance:
                fp = tensor_fingerprint(ref, canonicalize=args.canonical, client=client,
                                        progress=advance)
            out(jsonout.hash_json(label, ref, fp) if args.json else views.hash_view(label, fp))
            return EXIT_OK
        with _progress(args, src.nbytes) as advance:
            result = hash_source(src, canonicalize=args.canonical, client=client,
                                 progress=advance)
    finally:
        if client is not None:
            client.close()
    if src.unread and not args.key:  # stdout stays the digests alone
        _say(f"fpinspect: note: the digest leaves out {', '.join(src.unread)} (files of "
             "another kind than the checkpoint's; hash them by name)")
    if result.skipped:
        shown = ", ".join(repr(n) for n in result.skipped[:8]) + (
            ", ..." if len(result.skipped) > 8 else "")
        _say(f"fpinspect: note: the digest leaves out {len(result.skipped)} entries that "
             f"are not real-number tensors of a readable dtype: {shown}")
    if src.unindexed and not args.key:
        shown = ", ".join(src.unindexed[:8]) + (", ..." if len(src.unindexed) > 8 else "")
        _say(f"fpinspect: note: the digest leaves out {len(src.unindexed)} tensors the "
             f"shards hold but the index does not list: {shown}")
    out(jsonout.checkpoint_hash_json(result) if args.json
        else views.checkpoint_hash_view(result))
    return EXIT_OK


def _import_target(target: str) -> Callable[..., Any]:
    """``module:attr.attr`` -> the object; UsageError in one line otherwise.

    The module runs as it is imported: a ``sys.exit`` there (or an argparse run at its top
    level, on fpinspect's own command line) does not end fpinspect, and what it printed to
    stderr before it exited is folded into the one line of the error.
    """
    import importlib

    module_name, sep, attr = target.partition(":")
    if not sep or not module_name.strip() or not attr.strip():
        raise UsageError(f"Got {target!r}, but the target is MODULE:FUNCTION (e.g. numpy:matmul)")
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            obj: Any = importlib.import_module(module_name)
    except SystemExit as exc:
        last = [ln.strip() for ln in said.getvalue().splitlines() if ln.strip()]
        raise UsageError(f"importing {module_name!r} raised SystemExit({exc.code!r})"
                         + (f" after printing {last[-1]!r}" if last else "")) from None
    except ImportError as err:
        _replay(said)
        raise UsageError(f"cannot import {module_name!r}: {err}") from None
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # noqa: BLE001 - the user's module failed, not fpinspect
        _replay(said)  # (GeneratorExit and asyncio.CancelledError are BaseExceptions too)
        raise UsageError(f"importing {module_name!r} raised {type(err).__name__}: "
                         f"{_one_line(err)}") from None
    _replay(said)
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"{module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise UsageError(f"{target!r} is not callable")
    return obj


def _replay(said: io.StringIO) -> None:
    """Pass on what an imported module printed to stderr (its warnings, its logging)."""
    if said.getvalue():
        sys.stderr.write(said.getvalue())


def _one_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


_TORCH_DTYPES = {"binary32": "float32", "bfloat16": "bfloat16", "binary16": "float16"}


def _torch_target(name: str, dtype: str | None, device: str | None
                  ) -> tuple[Callable[..., Any], Format]:
    """``torch.mm`` / ``torch.matmul`` on ``device`` in ``dtype``, as f(A, B) -> ndarray."""
    try:
        import torch
    except ImportError:
        raise UsageError("--torch needs torch, which is not installed") from None
    fmt = _format("fp32" if dtype is None else dtype, "--dtype")
    if fmt.name not in _TORCH_DTYPES:
        raise UsageError(f"Got --dtype {dtype!r}, but --torch takes "
                         + ", ".join(_TORCH_DTYPES))
    device = "cpu" if device is None else device
    try:
        torch.device(device)
    except (RuntimeError, ValueError, TypeError) as err:
        raise UsageError(f"Got --device {device!r}, which is not a torch device: "
                         f"{_one_line(err)}") from None
    tdt = getattr(torch, _TORCH_DTYPES[fmt.name])
    op = getattr(torch, name)

    def mm(A: Any, B: Any) -> Any:
        a = torch.from_numpy(A).to(device=device, dtype=tdt)
        b = torch.from_numpy(B).to(device=device, dtype=tdt)
        return op(a, b).float().cpu().numpy()

    mm.__qualname__ = f"torch.{name}[{_TORCH_DTYPES[fmt.name]}, {device}]"
    return mm, fmt


#: The most --verify trials: numerics.probe.verify.MAX_TRIALS, not imported here (it would
#: load the probe for every command; a test pins the two together).
_MAX_VERIFY = 1_000_000


def _check_probe_options(args: argparse.Namespace) -> None:
    """UsageError for an option that does not apply to the probe asked for: --input is the
    input format of MODULE:FUNCTION, --dtype and --device only configure --torch, and
    --output and --batch only a matmul."""
    if args.verify is not None and not 0 <= args.verify <= _MAX_VERIFY:
        raise UsageError(f"Got --verify {args.verify}, but it must be a number of trials in "
                         f"[0, {_MAX_VERIFY}] (0 skips the verification)")
    if args.torch is not None:
        if args.target is not None:
            raise UsageError("give either MODULE:FUNCTION or --torch, not both")
        if args.input is not None:
            raise UsageError(f"Got --input {args.input!r} with --torch, which takes its input "
                             "format from --dtype (fp32, bf16 or fp16; default fp32)")
        if args.kind != "matmul":
            raise UsageError("--torch probes a matmul; --kind sum needs MODULE:FUNCTION")
    else:
        for option in ("dtype", "device"):
            if getattr(args, option) is not None:
                raise UsageError(f"Got --{option} {getattr(args, option)!r}, but --{option} "
                                 "applies only to --torch (MODULE:FUNCTION is called as it is; "
                                 "--input gives its input format)")
        if args.target is None:
            raise UsageError("give the callable as MODULE:FUNCTION (or --torch mm)")
        if args.input is None:
            raise UsageError("give the input format with --input (e.g. --input fp32)")
    if args.kind == "sum":
        if args.output is not None:
            raise UsageError(f"Got --output {args.output!r} with --kind sum, but --output is "
                             "the format of a matmul's outputs (a sum's is --input)")
        if args.batch is not None:
            raise UsageError(f"Got --batch {args.batch} with --kind sum, but --batch sizes "
                             "the calls of a matmul")


def _cmd_probe(args: argparse.Namespace, out: Printer) -> int:
    from numerics import probe

    _check_probe_options(args)
    if args.torch is not None:
        fn, fin = _torch_target(args.torch, args.dtype, args.device)
        fout = fin if args.output is None else _format(args.output, "--output")
    else:
        fn = _import_target(args.target)
        fin = _format(args.input, "--input")
        fout = _format("binary32" if args.output is None else args.output, "--output")
    batch = 64 if args.batch is None else args.batch
    try:  # a target that calls sys.exit does not choose fpinspect's exit status
        result: probe.ProbeResult | probe.SumResult
        if args.kind == "sum":
            result = probe.probe_sum(fn, args.k, fmt=fin)
        else:
            result = probe.matmul(fn, input_format=fin, output_format=fout, k=args.k,
                                  batch=batch)
        trials = args.verify if args.verify is not None else (
            1000 if args.kind == "sum" else 2)
        if isinstance(result, probe.SumResult) and result.fused_groups:
            if args.verify and result.node_rounding is None:
                raise UsageError(f"Got --verify {args.verify}, but {args.target} adds in "
                                 "fused multi-term nodes whose rounding the probe did not "
                                 "identify, so there is no model to verify (--verify 0)")
            if args.verify is None:
                trials = 0  # the probe checked its fused model on random sums itself
        check = probe.verify(fn, result, trials=trials, batch=batch) if trials > 0 else None
    except SystemExit as exc:
        who = args.target if args.torch is None else f"torch.{args.torch}"
        raise UsageError(f"{who} raised SystemExit({exc.code!r}) when called; a probed "
                         "callable must return its result") from None
    out(jsonout.probe_json(result, check) if args.json else views.probe_view(result, check))
    return EXIT_OK


_COMMANDS: dict[str, Callable[[argparse.Namespace, Printer], int]] = {
    "value": _cmd_value, "bits": _cmd_bits, "formats": _cmd_formats, "table": _cmd_table,
    "int": _cmd_int, "ls": _cmd_ls, "diff": _cmd_diff, "stats": _cmd_stats,
    "hash": _cmd_hash, "probe": _cmd_probe,
}


def _demo(out: Printer) -> int:
    pv = parse_value(DEMO_VALUE)
    results = [inspect_value(pv, n) for n in DEFAULT_VALUE_FORMATS]
    out(views.demo_view(pv, results))
    return EXIT_OK


def run(argv: Sequence[str], out: Printer) -> int:
    """Parse ``argv`` and run the command, printing through ``out``; UsageError on bad input."""
    if not argv:
        return _demo(out)
    parser = build_parser()
    with _writing():  # --help and --version print here
        args = parser.parse_args(_prepare(argv))
    _unprotect(args, argv)
    if args.command is None:
        raise UsageError("no command given; try `fpinspect --help`")
    if args.command == "value" and args.value is None:
        if argv[0] == "value":
            raise UsageError("the following arguments are required: VALUE")
        args.value = DEMO_VALUE  # options only (`fpinspect --json`): the built-in example
    try:
        return _COMMANDS[args.command](args, out)
    except ValueError as err:  # the library's bad-input errors (TensorFileError included)
        raise UsageError(_user_message(err)) from None
    except BrokenPipeError:
        raise
    except OSError as err:  # not found, no permission, a symlink loop, a name too long, ...
        raise UsageError(_oserror(err)) from None


def _oserror(err: OSError) -> str:
    name = err.filename if err.filename is not None else ""
    return f"cannot read {name!r}: {err.strerror or err}" if name else str(err)


#: Blanks at the end of a line, before any style codes that close it.
_TRAILING_BLANKS = re.compile(r" +((?:\x1b\[[0-9;]*m)*)$", re.M)


def _printer() -> Printer:
    if sys.stdout is None:  # started with stdout closed (`fpinspect ... >&-`)
        raise OutputError("standard output is closed")
    console = views.make_console()

    def out(obj: Any) -> None:
        with _writing():
            if isinstance(obj, dict):
                text = jsonout.dumps(obj) + "\n"
            else:
                # never narrower than the columns that must not wrap (numbers, names):
                # a narrow terminal gets long lines it wraps itself, never a number cut
                # short to "3.39…" or a column dropped
                width = console.width
                console.width = max(width, views.unbroken_width(console, obj))
                try:
                    with console.capture() as captured:
                        console.print(obj, soft_wrap=isinstance(obj, Text))
                finally:
                    console.width = width
                # no line padded to the widest: a narrow terminal then wraps only the
                # long lines, not every line of a table that holds one
                text = _TRAILING_BLANKS.sub(r"\1", captured.get())
                if not _utf8_output():
                    text = text.replace(views.BAR, "#")  # (the rest: backslash escapes)
            _write_chunks(text)

    return out


_CHUNK = 1 << 16


def _utf8_output() -> bool:
    """Whether stdout's encoding is UTF-8 (else :func:`main` has it escape what its
    encoding lacks: a tensor named ``poids.μ`` reads ``poids.\\u03bc``)."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    try:
        return codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


def _write_chunks(text: str) -> None:
    """Write ``text`` to stdout a chunk at a time, flushing each: one large write that a pipe
    takes only in part can lose the EPIPE of the rest (CPython's buffered writer), and
    ``fpinspect ls ... | head -1`` would then exit 0 instead of 141."""
    for start in range(0, len(text), _CHUNK):
        sys.stdout.write(text[start:start + _CHUNK])
        sys.stdout.flush()


@contextlib.contextmanager
def _writing() -> Iterator[None]:
    """OSError writing stdout -> OutputError (a broken pipe passes through as itself)."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as err:
        raise OutputError(err.strerror or str(err)) from None


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush cannot fail again."""
    if sys.stdout is None:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor (a test's capture): nothing to flush
        pass


def _say(line: str) -> None:
    """``line`` on stderr; nothing when stderr is closed (``2>&-``: Python's
    ``sys.stderr`` is then None, and ``print(file=None)`` would write to stdout)."""
    if sys.stderr is not None:
        print(line, file=sys.stderr)


def _on_termination(signum: int, frame: object) -> None:
    """SIGTERM / SIGHUP: unwind (so a progress bar gives the cursor back), exit 128 + N."""
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def _terminable() -> Iterator[None]:
    """SIGTERM and SIGHUP end the run through :func:`_on_termination` while it lasts
    (their default action kills the process before any ``finally`` runs); the handlers
    before are restored after."""
    signums = [getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n)]
    try:
        before = {n: signal.signal(n, _on_termination) for n in signums}
    except ValueError:  # not the main thread: leave the signals alone
        before = {}
    try:
        yield
    finally:
        for n, handler in before.items():
            signal.signal(n, handler)


def _output_failed(err: BrokenPipeError | OutputError) -> int:
    """A broken pipe ends quietly (141: ``fpinspect ... | head`` got what it wanted); any
    other failure to write stdout is one line on stderr (74)."""
    _silence_stdout()
    if isinstance(err, BrokenPipeError):
        return EXIT_BROKEN_PIPE
    _say(f"{PROG}: error: cannot write the output: {err}")
    return EXIT_IOERR


def _hand_over_sigint() -> None:
    """From here on Ctrl-C raises KeyboardInterrupt (see ``fpinspect/__init__.py``)."""
    from fpinspect import _early_sigint

    if signal.getsignal(signal.SIGINT) is _early_sigint:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def main(argv: Sequence[str] | None = None) -> int:
    """The console entry point: returns the exit status (0, 1, 2, 70, 74, 130 or 141)."""
    _hand_over_sigint()
    args = list(sys.argv[1:] if argv is None else argv)
    if sys.stdout is not None and not _utf8_output():
        with contextlib.suppress(AttributeError, ValueError):  # (a test's capture)
            sys.stdout.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    with _terminable():
        return _main(args)


def _main(args: list[str]) -> int:
    try:
        code = run(args, _printer())
        with _writing():
            sys.stdout.flush()
        return code
    except UsageError as err:
        _say(f"{PROG}: error: {err}")
        return EXIT_USAGE
    except SystemExit as exc:  # --help and --version
        try:
            with _writing():
                sys.stdout.flush()
        except (BrokenPipeError, OutputError) as err:
            return _output_failed(err)
        return int(exc.code or 0) if isinstance(exc.code, int) or exc.code is None else EXIT_USAGE
    except KeyboardInterrupt:
        _say(f"{PROG}: interrupted")
        return EXIT_INTERRUPTED
    except (BrokenPipeError, OutputError) as err:
        return _output_failed(err)
    except Exception as err:  # noqa: BLE001 - the last line of defence
        where = ""
        tb = traceback.extract_tb(err.__traceback__)
        if tb:
            frame = tb[-1]
            where = f" at {os.path.basename(frame.filename)}:{frame.lineno}"
        _say(f"{PROG}: internal error: {type(err).__name__}: {err}{where}; this is a bug, "
             f"please report it at {ISSUES_URL} (with the command line)")
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
