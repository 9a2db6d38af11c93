"""Attribute values as DynamoDB accepts them, and their sizes.

An attribute value holds exactly one type; NULL is true; a number has at
most 38 significant digits and a magnitude from 1E-130 to below 1E+126; a
set is non-empty and holds no value twice (numbers compared as numbers).
Sizes follow the developer guide's "Item sizes and formats".
"""

import base64
import re
from decimal import Decimal, InvalidOperation

ITEM_MAX_BYTES = 400 * 1024
_SETS = {"SS": "string", "NS": "number", "BS": "binary"}
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_INVALID = "One or more parameter values were invalid: "


class Invalid(Exception):
    """A value DynamoDB refuses; the message is DynamoDB's."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def check_item(attrs) -> None:
    """Checks every value of an item or key (a map of name to value)."""
    if isinstance(attrs, dict):
        for value in attrs.values():
            check(value)


def check(value) -> None:
    if not isinstance(value, dict) or not value:
        raise Invalid("Supplied AttributeValue is empty, must contain exactly one of the supported datatypes")
    if len(value) > 1:
        raise Invalid("Supplied AttributeValue has more than one datatypes set, "
                      "must contain exactly one of the supported datatypes")
    (kind, v), = value.items()
    if kind == "N":
        number(v)
    elif kind == "NULL":
        if v is not True:
            raise Invalid(_INVALID + "Null attribute value types must have the value of true")
    elif kind in _SETS:
        _check_set(kind, v)
    elif kind == "M":
        if isinstance(v, dict):
            for member in v.values():
                check(member)
    elif kind == "L":
        if isinstance(v, list):
            for member in v:
                check(member)


def _check_set(kind: str, members) -> None:
    if not isinstance(members, list) or not members:
        if kind == "BS":  # DynamoDB words this one differently
            raise Invalid(_INVALID + "Binary sets should not be empty")
        raise Invalid(_INVALID + f"An {_SETS[kind]} set  may not be empty")
    seen = set()
    for m in members:
        key = number(m) if kind == "NS" else m
        if key in seen:
            shown = ", ".join(_shown(kind, x) for x in members)
            raise Invalid(_INVALID + f"Input collection [{shown}] contains duplicates.")
        seen.add(key)


def _shown(kind: str, member) -> str:
    if kind == "BS" and isinstance(member, (bytes, bytearray)):
        return base64.b64encode(member).decode()
    return str(member)


def number(text) -> Decimal:
    """The number text holds, or Invalid with DynamoDB's reason."""
    if not isinstance(text, str) or not _NUMBER.fullmatch(text):
        raise Invalid(f"The parameter cannot be converted to a numeric value: {text}")
    try:
        d = Decimal(text)
    except InvalidOperation:
        raise Invalid(f"The parameter cannot be converted to a numeric value: {text}") from None
    if not d:
        return d
    if _significant(d) > 38:
        raise Invalid("Attempting to store more than 38 significant digits in a Number")
    if d.adjusted() > 125:
        raise Invalid("Number overflow. Attempting to store a number with magnitude larger than supported range")
    if d.adjusted() < -130:
        raise Invalid("Number underflow. Attempting to store a number with magnitude smaller than supported range")
    return d


def _significant(d: Decimal) -> int:
    digits = d.as_tuple().digits
    end = len(digits)
    while end > 1 and digits[end - 1] == 0:
        end -= 1
    start = 0
    while start < end - 1 and digits[start] == 0:
        start += 1
    return end - start


def item_size(attrs) -> int:
    """An item's size: its attribute names and values."""
    return sum(len(name.encode()) + size(value) for name, value in attrs.items())


def size(value) -> int:
    (kind, v), = value.items()
    if kind == "S":
        return len(v.encode())
    if kind == "B":
        return len(v)
    if kind == "N":
        return _number_size(v)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(m.encode()) for m in v)
    if kind == "BS":
        return sum(len(m) for m in v)
    if kind == "NS":
        return sum(_number_size(m) for m in v)
    if kind == "L":
        return 3 + sum(size(m) + 1 for m in v)
    if kind == "M":
        return 3 + sum(len(k.encode()) + size(m) + 1 for k, m in v.items())
    return 0


def _number_size(text: str) -> int:
    d = Decimal(text)
    return 1 if not d else (_significant(d) + 1) // 2 + 1
