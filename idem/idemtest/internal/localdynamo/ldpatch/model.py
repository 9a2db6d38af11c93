"""The constraints DynamoDB's API model puts on a request, checked as
DynamoDB checks them before it reads anything: required members, enum
values, lengths, patterns and table names, answered with DynamoDB's
"N validation errors detected: Value ... at '...' failed to satisfy
constraint: ..." message.

The model is botocore's copy of DynamoDB's (moto parses requests with it);
moto reads the values but checks none of these constraints.
"""

import re

from moto.core.utils import get_service_model
from moto.dynamodb.exceptions import MockValidationException

TABLE_NAME_PATTERN = "[a-zA-Z0-9_.-]+"
_TABLE_NAME = re.compile(TABLE_NAME_PATTERN)
# Attribute values are checked by the values module, with DynamoDB's own
# messages for them.
_OPAQUE = frozenset({"AttributeValue"})

_KEYS_ARE_TABLE_NAMES = (
    "Map keys must satisfy constraint: [Member must have length less than or equal to 255, "
    "Member must have length greater than or equal to 3, "
    f"Member must satisfy regular expression pattern: {TABLE_NAME_PATTERN}]"
)

_service = None
_operations = {}


def problems() -> list:
    try:
        _operation("PutItem")
    except Exception as err:  # botocore's model or moto's loader changed
        return [f"the DynamoDB API model cannot be read: {err}"]
    return []


def _operation(action):
    global _service
    op = _operations.get(action)
    if op is None:
        if _service is None:
            _service = get_service_model("dynamodb")
        op = _operations[action] = _service.operation_model(action)
    return op


def operation_names() -> list:
    _operation("PutItem")
    return list(_service.operation_names)


def detected(errors) -> MockValidationException:
    n = len(errors)
    return MockValidationException(
        f"{n} validation error{'s' if n > 1 else ''} detected: " + "; ".join(errors)
    )


def check(action: str, body: dict) -> None:
    """Raises DynamoDB's ValidationException for what the model refuses."""
    shape = _operation(action).input_shape
    if action in ("BatchWriteItem", "BatchGetItem") and not body.get("RequestItems"):
        raise MockValidationException(f"The requestItems parameter is required for {action}")
    if action == "CreateTable" and body.get("TableName") is None:
        raise MockValidationException("The parameter 'TableName' is required but was not present in the request")
    # A bad table name is reported alone: DynamoDB stops there.
    if "TableName" in shape.members and isinstance(body.get("TableName"), str):
        errors = table_name_errors(body["TableName"], "tableName", create=action == "CreateTable")
        if errors:
            raise detected(errors)
    errors = []
    # Query's checks name a number by the member's own spelling and leave
    # its value out (as recorded on DynamoDB): raw carries that spelling.
    _walk(shape, body, "", errors, raw="" if action == "Query" else None)
    if errors:
        raise detected(errors)


def table_name_errors(name: str, path: str, create: bool = False) -> list:
    """A table's name is 3 to 255 of [a-zA-Z0-9_.-]; where a table is named
    by an existing table's ARN, an ARN (1 to 1024 characters) is too."""
    if not create and name == "":
        return [_error(name, path, "Member must have length greater than or equal to 1")]
    if not create and name.startswith("arn:"):
        if len(name) > 1024:
            return [_error(name, path, "Member must have length less than or equal to 1024")]
        return []
    errors = []
    if not _TABLE_NAME.fullmatch(name):
        errors.append(_error(name, path, f"Member must satisfy regular expression pattern: {TABLE_NAME_PATTERN}"))
    if len(name) < 3:
        errors.append(_error(name, path, "Member must have length greater than or equal to 3"))
    if len(name) > 255:
        errors.append(_error(name, path, "Member must have length less than or equal to 255"))
    return errors


def _walk(shape, value, path, errors, lengths=True, raw=None) -> None:
    kind = shape.type_name
    if shape.name in _OPAQUE:
        return
    if kind == "structure":
        if not isinstance(value, dict):
            return
        for name in shape.required_members:
            if value.get(name) is None:
                errors.append(_error(None, _join(path, name), "Member must not be null"))
        members = shape.members
        for name, v in value.items():
            member = members.get(name)
            if v is None or member is None:
                continue
            if name == "TableName" and isinstance(v, str) and member.type_name == "string":
                errors.extend(table_name_errors(v, _join(path, name)))
            else:
                _walk(member, v, _join(path, name), errors, raw=_spelled(raw, name))
    elif kind == "list":
        if not isinstance(value, list):
            return
        if lengths:
            errors.extend(_length(shape, value, path))
        if shape.member.name in _OPAQUE:
            return
        for i, v in enumerate(value, 1):
            _walk(shape.member, v, f"{path}.{i}.member", errors, raw=_spelled(raw, f"{i}.member"))
    elif kind == "map":
        if not isinstance(value, dict):
            return
        errors.extend(_length(shape, value, path))
        _map_entries(shape, value, path, errors, raw)
    elif kind == "string":
        if not isinstance(value, str):
            return
        if shape.enum and value not in shape.enum:
            errors.append(_error(value, path, f"Member must satisfy enum value set: [{', '.join(sorted(shape.enum))}]"))
        errors.extend(_length(shape, value, path))
        pattern = shape.metadata.get("pattern")
        if pattern and not re.fullmatch(pattern, value):
            errors.append(_error(value, path, f"Member must satisfy regular expression pattern: {pattern}"))
    elif kind in ("integer", "long"):
        if isinstance(value, bool) or not isinstance(value, int):
            return
        low, high = shape.metadata.get("min"), shape.metadata.get("max")
        if low is not None and value < low:
            errors.append(_number_error(value, path, raw, f"Member must have value greater than or equal to {low}"))
        if high is not None and value > high:
            errors.append(_number_error(value, path, raw, f"Member must have value less than or equal to {high}"))


def _number_error(value, path: str, raw, constraint: str) -> str:
    if raw is not None:
        return f"Value at '{raw}' failed to satisfy constraint: {constraint}"
    return _error(value, path, constraint)


def _spelled(raw, name: str):
    if raw is None:
        return None
    return f"{raw}.{name}" if raw else name


def _map_entries(shape, value, path, errors, raw) -> None:
    """A map's keys and values are reported once for the map, as DynamoDB does."""
    key_shape, value_shape = shape.key, shape.value
    if key_shape.name in ("TableArn", "TableName"):
        if any(table_name_errors(k, path) for k in value):
            errors.append(_error(value, path, _KEYS_ARE_TABLE_NAMES, shape))
    if value_shape.name in _OPAQUE:
        return
    if value_shape.type_name == "list":
        limits = _limits(value_shape)
        if limits and any(_length(value_shape, v, path) for v in value.values() if isinstance(v, list)):
            errors.append(_error(value, path, f"Map value must satisfy constraint: [{', '.join(limits)}]", shape))
    for k, v in value.items():
        _walk(value_shape, v, f"{path}.{k}.member", errors, lengths=False, raw=_spelled(raw, f"{k}.member"))


def _limits(shape) -> list:
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    out = []
    if high is not None:
        out.append(f"Member must have length less than or equal to {high}")
    if low is not None:
        out.append(f"Member must have length greater than or equal to {low}")
    return out


def _length(shape, value, path) -> list:
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    if high is not None and len(value) > high:
        return [_error(value, path, f"Member must have length less than or equal to {high}", shape)]
    if low is not None and len(value) < low:
        return [_error(value, path, f"Member must have length greater than or equal to {low}", shape)]
    return []


def _join(path: str, name: str) -> str:
    name = name[:1].lower() + name[1:]
    return f"{path}.{name}" if path else name


def _error(value, path: str, constraint: str, shape=None) -> str:
    shown = "null" if value is None else f"'{_show(value, shape)}'"
    return f"Value {shown} at '{path}' failed to satisfy constraint: {constraint}"


def _show(value, shape=None) -> str:
    """A value as DynamoDB's Java service prints it: a structure by its class
    and identity, a list in brackets, a map as {key=value}."""
    kind = getattr(shape, "type_name", None)
    if isinstance(value, list):
        member = getattr(shape, "member", None)
        return "[" + ", ".join(_show(v, member) for v in value) + "]"
    if isinstance(value, dict) and kind == "map":
        return "{" + ", ".join(f"{k}={_show(v, shape.value)}" for k, v in value.items()) + "}"
    if isinstance(value, dict):
        name = getattr(shape, "name", "Object")
        return f"com.amazonaws.dynamodb.v20120810.{name}@{id(value) & 0xFFFFFFFF:08x}"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
