"""Every public callable, called with hypothesis-drawn arguments from a pool of awkward values,
returns a result or raises ValueError or TypeError (issue 13).

Nothing else is allowed: no OverflowError, KeyError, AttributeError, RuntimeError,
MemoryError, no warning (the suite turns warnings into errors), no hang (a call that runs
for more than ``CALL_SECONDS`` fails).  Assertions may also raise AssertionError, file
readers the OS errors of a path that is not there, and hypothesis strategies
InvalidArgument (hypothesis's own argument error).

The pool mixes values a user really passes (floats, ints, arrays of every dtype and layout,
format names, dtypes) with the ones that broke the library before: huge and tiny exact
values, Decimal -0 and 1e99999999, long doubles that are not float64 values, ragged lists,
big-endian and strided arrays, more than 32 dimensions, complex numbers, None.
"""

from __future__ import annotations

import decimal
import importlib
import inspect
import math
import signal
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

import numerics

CALL_SECONDS = 20

MODULES = ("numerics", "numerics.ops", "numerics.accum", "numerics.quant", "numerics.hashing",
           "numerics.testing", "numerics.testing.strategies")

#: Plain records (results and enums): constructing one with junk is not a public operation.
RECORDS = {
    "AccumResult", "Arithmetic", "CollisionReport", "DiffReport", "ErrorReport", "FInfo",
    "Fingerprint", "Flags", "Infinity", "InvalidArgument", "NaNEncoding", "ParsedValue",
    "Parts", "ProbeResult", "Quantized", "Tensor", "TensorStats", "TurboQuantized",
}
#: Callables that change process-wide state; exercised with valid input in their own tests.
STATEFUL = {"register_profiles", "set_num_threads"}


def _pool() -> list[Any]:
    ld = np.longdouble
    return [
        None, True, 0, 1, -1, 2, 3, 8, 16, 32, 2**63, -(2**63) - 1, 10**400, -(10**400),
        0.0, -0.0, 0.1, 1.5, -2.5, 448.0, 1e-320, 1.7976931348623157e308, math.inf, -math.inf,
        math.nan, Fraction(1, 3), Fraction(-(10**500), 3),
        decimal.Decimal("-0"), decimal.Decimal("1e99999999"), decimal.Decimal("-1e-99999999"),
        decimal.Decimal("nan"), decimal.Decimal("0.1"),
        "1.5", "rne", "RNE", "sr", "saturate", "bf16", "e4m3fn", "binary64", "nope", "", b"x",
        1 + 2j, [], [1.0, 2.0], [[1.0, 2.0], [3.0]], (0.5, -0.5), {}, object(),
        np.float32(1.5), np.float16(-0.0), np.int8(-3), np.uint64(2**63), np.bool_(True),
        ld(1) + ld(2) ** -60, np.array(ld(1) + ld(2) ** -24 + ld(2) ** -60),
        np.array(1.0), np.array([]), np.ones(3), np.ones((2, 2)), np.ones((2, 3, 4)),
        np.arange(6, dtype=np.int64).reshape(2, 3), np.array([2**53 + 2**29 + 1]),
        np.array([1.0, -2.0, 3.5], dtype=">f4"), np.linspace(-4, 4, 8, dtype=np.float32)[::-2],
        np.array([np.nan, -np.inf, np.inf, -0.0, 5e-324]), np.array(["a"]),
        np.array([1 + 1j]), np.array([True, False]), np.array([1, 2], dtype=np.uint16),
        np.array([0x7F, 0x80, 0xFF], dtype=np.uint8),
        np.ones(4, np.float32).astype(ml_dtypes.bfloat16),
        np.ones(4, np.float32).astype(ml_dtypes.float8_e4m3fn),
        np.zeros((1,) * 33), np.ones(32, np.float32), np.ones((4, 32)), np.ones((32, 4)),
        np.random.default_rng(0), np.dtype(np.float32), np.dtype(">f8"),
        np.dtype(ml_dtypes.bfloat16), numerics.get_format("e4m3fn"),
        numerics.get_format("binary16"),
    ]


POOL = _pool()


def _public_callables() -> list[tuple[str, Callable[..., Any]]]:
    found: dict[str, tuple[str, Callable[..., Any]]] = {}
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if not callable(obj) or name in RECORDS or name in STATEFUL:
                continue
            if isinstance(obj, type) and issubclass(obj, BaseException):
                continue
            found.setdefault(f"{module_name}.{name}", (f"{module_name}.{name}", obj))
    return sorted(found.values())


CALLABLES = _public_callables()


class Hang(Exception):
    """A call ran for longer than CALL_SECONDS."""


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def on_alarm(signum: int, frame: object) -> None:
        raise Hang(f"the call ran for more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _allowed(qualname: str) -> tuple[type[BaseException], ...]:
    allowed: tuple[type[BaseException], ...] = (ValueError, TypeError)
    name = qualname.rsplit(".", 1)[1]
    if name.startswith("assert_"):
        allowed += (AssertionError,)
    if "strategies" in qualname:
        allowed += (InvalidArgument,)
    if name in ("load_tensor", "load", "open_source", "list_tensors"):
        allowed += (FileNotFoundError, IsADirectoryError, NotADirectoryError)
    return allowed


def _call(fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    # numpy's default error state warns on invalid operations, division by zero and overflow;
    # as errors, those warnings catch inf * 0 leaking out of a kernel (issue 13).
    with time_limit(CALL_SECONDS), warnings.catch_warnings(), np.errstate(
            all="warn", under="ignore"):
        warnings.simplefilter("error")
        return fn(*args, **kwargs)


@st.composite
def calls(draw: st.DrawFn, fn: Callable[..., Any]) -> tuple[list[Any], dict[str, Any]]:
    """Arguments for ``fn``: every required parameter from the pool, some optional ones too."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return [], {}
    values = st.sampled_from(POOL)
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        required = p.default is p.empty
        if not required and not draw(st.booleans()):
            continue
        value = draw(values)
        if p.kind == p.KEYWORD_ONLY or not required:
            kwargs[p.name] = value
        else:
            args.append(value)
    return args, kwargs


@pytest.mark.parametrize(("qualname", "fn"), CALLABLES, ids=[q for q, _ in CALLABLES])
def test_public_callable_gives_a_result_or_a_clear_error(qualname: str,
                                                         fn: Callable[..., Any]) -> None:
    allowed = _allowed(qualname)

    @settings(max_examples=30, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(calls(fn))
    def check(call: tuple[list[Any], dict[str, Any]]) -> None:
        args, kwargs = call
        try:
            _call(fn, args, kwargs)
        except allowed as err:
            message = str(err)
            assert message, f"{qualname}: {type(err).__name__} without a message"
            assert "Traceback" not in message
        except Hang as err:
            raise AssertionError(f"{qualname}(*{args!r}, **{kwargs!r}): {err}") from None
        except BaseException as err:  # noqa: BLE001 - the point of the test
            raise AssertionError(
                f"{qualname}(*{args!r:.300}, **{kwargs!r:.300}) raised "
                f"{type(err).__name__}: {err!s:.300}") from err

    check()
