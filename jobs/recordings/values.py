"""One value of a user file parsed into a recording column's type: one rule set for every format.

Text values (CSV fields, Parquet string columns) and JSON values follow the same rules:

- int: an integer, or a decimal number with no fractional part (``72``, ``72.0``, ``7.2e1``),
  within the 64-bit range; any number of digits is checked without Python's int-string limit;
- double: a finite number (NaN and infinities are refused, as JSON refuses them);
- timestamp: ISO 8601 text (UTC when it has no offset), stored to the microsecond: a fraction
  of a second with non-zero digits past the sixth is refused, not truncated;
- bool: ``true``/``false`` (text also ``1``/``0``, any case); string: any text.

JSON values must have the JSON type (a JSON string ``"72"`` is not an int); text has no types.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_US = timedelta(microseconds=1)
_SHOWN_MAX = 80
_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_DECIMAL_TEXT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_FRACTION = re.compile(r":[0-9]{2}[.,]([0-9]+)")
ARTICLE = {"string": "a string", "int": "an int", "double": "a double", "bool": "a bool",
           "timestamp": "a timestamp"}


class InvalidValue(Exception):
    """One value (or line) does not fit; the message is the quarantine reason's detail."""


def clip(text: str) -> str:
    """``text`` cut to a length fit for a one-line reason."""
    return text if len(text) <= _SHOWN_MAX else text[:_SHOWN_MAX - 1] + "…"


def _in_int64(value: int, shown: str) -> int:
    if not INT64_MIN <= value <= INT64_MAX:
        raise InvalidValue(f"{shown} does not fit a 64-bit int")
    return value


def _integral(number: Decimal, shown: str) -> int:
    """An exact decimal as an int64 when it has no fractional part (checked without rounding)."""
    if not number.is_finite():
        raise InvalidValue(f"{shown} is not an int")
    if number.is_zero():
        return 0
    _, digits, exponent = number.as_tuple()
    if exponent < 0 and any(digits[exponent:]):
        raise InvalidValue(f"{shown} is not an int")
    if number.adjusted() > 18:  # at least 10**19 in magnitude: past 2**63 without building it
        raise InvalidValue(f"{shown} does not fit a 64-bit int")
    return _in_int64(int(number), shown)


def epoch_us(text: str, shown: str) -> int:
    """ISO 8601 text to microseconds since the epoch, UTC; a value without offset is UTC."""
    fraction = _FRACTION.search(text)
    if fraction and fraction.group(1)[6:].strip("0"):
        raise InvalidValue(f"{shown} has digits past the microsecond (timestamps are stored in "
                           "microseconds)")
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidValue(f"{shown} is not a timestamp") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _ONE_US


def _finite(value: float, shown: str, overflowed: bool) -> float:
    if math.isfinite(value):
        return value
    if overflowed:
        raise InvalidValue(f"{shown} does not fit a double")
    raise InvalidValue(f"{shown} is not a finite double")


# Text values (CSV fields, Parquet string columns): never empty here, CSV maps '' to null first.

def _text_string(text: str) -> str:
    return text


def _text_int(text: str) -> int:
    shown, word = clip(repr(text)), text.strip()
    if _INT_TEXT.fullmatch(word):
        digits = word.lstrip("+-").lstrip("0") or "0"
        if len(digits) > 19:  # also keeps int() under Python's int-string digit limit
            raise InvalidValue(f"{shown} does not fit a 64-bit int")
        return _in_int64(-int(digits) if word.startswith("-") else int(digits), shown)
    if _DECIMAL_TEXT.fullmatch(word):
        return _integral(Decimal(word), shown)
    raise InvalidValue(f"{shown} is not an int")


def _text_double(text: str) -> float:
    shown = clip(repr(text))
    try:
        value = float(text)
    except ValueError:
        raise InvalidValue(f"{shown} is not a double") from None
    return _finite(value, shown, overflowed=bool(_DECIMAL_TEXT.fullmatch(text.strip())))


def _text_bool(text: str) -> bool:
    word = text.strip().lower()
    if word in ("true", "1"):
        return True
    if word in ("false", "0"):
        return False
    raise InvalidValue(f"{clip(repr(text))} is not a bool (expected true, false, 1 or 0)")


def _text_timestamp(text: str) -> int:
    return epoch_us(text, clip(repr(text)))


TEXT_PARSERS: dict[str, Callable[[str], Any]] = {
    "string": _text_string, "int": _text_int, "double": _text_double, "bool": _text_bool,
    "timestamp": _text_timestamp,
}


# JSON values: decoded by :func:`parse_json` (numbers as exact Decimals), never None here.

def _show(value: Any) -> str:
    if isinstance(value, Decimal):
        return clip(str(value))
    return clip(json.dumps(value, ensure_ascii=False, default=str))


def _json_string(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidValue(f"expected a string, got {_show(value)}")
    return value


def _json_int(value: Any) -> int:
    if not isinstance(value, Decimal):
        raise InvalidValue(f"{_show(value)} is not an int")
    return _integral(value, _show(value))


def _json_double(value: Any) -> float:
    if not isinstance(value, Decimal):
        raise InvalidValue(f"{_show(value)} is not a double")
    return _finite(float(value), _show(value), overflowed=True)


def _json_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidValue(f"{_show(value)} is not a bool (expected true or false)")
    return value


def _json_timestamp(value: Any) -> int:
    if not isinstance(value, str):
        raise InvalidValue(f"{_show(value)} is not a timestamp (expected an ISO 8601 string)")
    return epoch_us(value, _show(value))


JSON_PARSERS: dict[str, Callable[[Any], Any]] = {
    "string": _json_string, "int": _json_int, "double": _json_double, "bool": _json_bool,
    "timestamp": _json_timestamp,
}


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for name, value in pairs:
        if name in obj:
            raise InvalidValue(f"duplicate key {name!r}")
        obj[name] = value
    return obj


def _no_constant(name: str) -> Any:
    raise InvalidValue(f"{name} is not allowed")


def parse_json(text: str) -> Any:
    """One JSON document; numbers become exact Decimals (no float rounding, no digit limit).

    Raises :class:`InvalidValue` naming the problem (syntax, duplicate key, NaN, nesting).
    """
    try:
        return json.loads(text, parse_int=Decimal, parse_float=Decimal,
                          object_pairs_hook=_unique_object, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise InvalidValue(f"{exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise InvalidValue("nested too deeply") from None
