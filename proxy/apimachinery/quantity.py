"""Resource quantities (apimachinery ``resource.Quantity``) as far as validation needs
them: parse ``500m``, ``1.5Gi``, ``2e3`` into exact decimals, compare, and print the
canonical form ``Quantity.String()`` gives (``1000m`` → ``1``, ``1536Mi``, ``1e3``).

:func:`parse` returns None for a string that is not a quantity (kube refuses those
while decoding, before validation).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

__all__ = ["Quantity", "parse"]

_RE = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([eE][+-]?[0-9]+|[numkMGTPE]|[KMGTPE]i)?$"
)
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIX = {v: k for k, v in _DECIMAL.items()}
_BINARY_SUFFIX = {v: k for k, v in _BINARY.items()}


@dataclass(frozen=True)
class Quantity:
    """An exact amount and the format it was written in (``DecimalSI``, ``BinarySI``,
    ``DecimalExponent``), which its canonical string keeps."""

    value: Decimal
    fmt: str

    def __str__(self) -> str:
        value = self.value
        if self.fmt == "BinarySI" and value == value.to_integral_value():
            return _binary(int(value))
        return _decimal(value, exponent=self.fmt == "DecimalExponent")

    def is_negative(self) -> bool:
        return self.value < 0


def parse(text: object) -> Quantity | None:
    if isinstance(text, bool):
        return None
    if isinstance(text, int | float):
        return Quantity(Decimal(str(text)), "DecimalSI")
    match = _RE.match(str(text).strip())
    if not match:
        return None
    number, suffix = Decimal(match.group(1)), match.group(2) or ""
    if suffix in _BINARY:
        return Quantity(number * (Decimal(2) ** _BINARY[suffix]), "BinarySI")
    if suffix[:1] in ("e", "E"):
        return Quantity(number.scaleb(int(suffix[1:])), "DecimalExponent")
    return Quantity(number.scaleb(_DECIMAL[suffix]), "DecimalSI")


def _binary(amount: int) -> str:
    if amount == 0:
        return "0"
    power = 0
    while power < 60 and amount % (1 << (power + 10)) == 0:
        power += 10
    if power == 0 and abs(amount) >= 1024:
        return _decimal(Decimal(amount), exponent=False)
    return (
        f"{amount >> power if amount > 0 else -((-amount) >> power)}{_BINARY_SUFFIX.get(power, '')}"
    )


def _decimal(value: Decimal, exponent: bool) -> str:
    if value == 0:
        return "0"
    # round up (away from zero) to nano precision, as Quantity keeps at most 9 decimals
    nanos = (value * Decimal(10) ** 9).to_integral_value(rounding="ROUND_UP")
    scale = -9
    while scale < 18 and nanos % 1000 == 0:
        nanos //= 1000
        scale += 3
    if exponent:
        return f"{nanos}" if scale == 0 else f"{nanos}e{scale}"
    return f"{nanos}{_DECIMAL_SUFFIX[scale]}"
