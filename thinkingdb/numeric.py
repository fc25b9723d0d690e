"""One checker for every float that comes from outside (a request, a profile, a file).

>>> check_number(0.25, "intersection_bonus", low=0.0)
0.25
>>> check_number(float("inf"), "weights.topic")
Traceback (most recent call last):
...
thinkingdb.errors.ValidationError: weights.topic must be a finite number, got inf
"""

from __future__ import annotations

import math

from .errors import ValidationError


def check_number(value: object, field: str, *, low: float | None = None, high: float | None = None,
                 low_open: bool = False) -> float:
    """Return ``value`` as a float when finite and within bounds, else raise naming ``field``.

    Strings are parsed (``"1e309"`` overflows to infinity and is refused); booleans are not numbers.
    """
    if isinstance(value, bool):
        raise ValidationError(f"{field} must be a number, got {value!r}")
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ValidationError(f"{field} must be a number, got {value!r}") from None
    if not isinstance(value, (int, float)):
        raise ValidationError(f"{field} must be a number, got {value!r}")
    try:
        number = float(value)
    except OverflowError:
        raise ValidationError(f"{field} must be a finite number, got {value!r}") from None
    if not math.isfinite(number):
        raise ValidationError(f"{field} must be a finite number, got {number!r}")
    if low is not None and (number < low or (low_open and number == low)):
        raise ValidationError(f"{field} must be {'>' if low_open else '>='} {low:g}, got {number!r}")
    if high is not None and number > high:
        raise ValidationError(f"{field} must be <= {high:g}, got {number!r}")
    return number
