"""Items and keys held against a table's key schema, and the attribute
values of a request checked in every place a request carries them."""

from moto.dynamodb.exceptions import MockValidationException

from ldpatch import values

KEY_MISMATCH = "The provided key element does not match the schema"
HASH_KEY_MAX_BYTES = 2048
RANGE_KEY_MAX_BYTES = 1024


def invalid(message: str) -> MockValidationException:
    return MockValidationException(message)


def check_values(attrs) -> None:
    """An item's or a key's values."""
    try:
        values.check_item(attrs)
    except values.Invalid as err:
        raise invalid(err.message) from None


def check_request_values(params: dict) -> None:
    """The values of ExpressionAttributeValues, Expected and AttributeUpdates."""
    for name, value in (params.get("ExpressionAttributeValues") or {}).items():
        try:
            values.check(value)
        except values.Invalid as err:
            raise invalid(f"ExpressionAttributeValues contains invalid value: {err.message} for key {name}") from None
    try:
        for condition in (params.get("Expected") or {}).values():
            if condition.get("Value") is not None:
                values.check(condition["Value"])
            for value in condition.get("AttributeValueList") or []:
                values.check(value)
        for update in (params.get("AttributeUpdates") or {}).values():
            if update.get("Value") is not None:
                values.check(update["Value"])
    except values.Invalid as err:
        raise invalid(err.message) from None


def _schema(table) -> dict:
    schema = {table.hash_key_attr: table.hash_key_type}
    if table.range_key_attr is not None:
        schema[table.range_key_attr] = table.range_key_type
    return schema


def _kind(value) -> str:
    return next(iter(value)) if isinstance(value, dict) and len(value) == 1 else ""


def key_problem(table, key) -> str:
    """Why key does not name an item of table, or ""."""
    schema = _schema(table)
    if not isinstance(key, dict) or set(key) != set(schema):
        return KEY_MISMATCH
    if any(_kind(key[name]) != kind for name, kind in schema.items()):
        return KEY_MISMATCH
    return ""


def item_key_problem(table, item) -> str:
    """Why item cannot be written to table (its key attributes), or ""."""
    for name, kind in _schema(table).items():
        if name not in item:
            return f"One or more parameter values were invalid: Missing the key {name} in the item"
        actual = _kind(item[name])
        if actual != kind:
            return f"One or more parameter values were invalid: Type mismatch for key {name} expected: {kind} actual: {actual}"
    return ""


def check_key_values(table, attrs) -> None:
    """A key's values that DynamoDB refuses whatever the request: an empty
    string or binary, a key over its size limit. attrs holds the key
    attributes with the right types."""
    for name in _schema(table):
        kind, v = next(iter(attrs[name].items()))
        if kind in ("S", "B") and len(v) == 0:
            raise invalid("One or more parameter values are not valid. The AttributeValue for a key "
                          f"attribute cannot contain an empty string value. Key: {name}")
    hash_value = attrs[table.hash_key_attr]
    if values.size(hash_value) > HASH_KEY_MAX_BYTES:
        # DynamoDB's message has no space before the number.
        raise invalid("One or more parameter values were invalid: Size of hashkey has exceeded the "
                      f"maximum size limit of{HASH_KEY_MAX_BYTES} bytes")
    if table.range_key_attr is not None and values.size(attrs[table.range_key_attr]) > RANGE_KEY_MAX_BYTES:
        raise invalid("One or more parameter values were invalid: Aggregated size of all range keys has "
                      f"exceeded the size limit of {RANGE_KEY_MAX_BYTES} bytes")


def check_key(table, key) -> None:
    """A Key parameter: refused as a whole when it does not match the schema."""
    problem = key_problem(table, key)
    if problem:
        raise invalid(problem)
    check_key_values(table, key)


def check_item(table, item) -> None:
    """An item to put: its key attributes and its size."""
    problem = item_key_problem(table, item)
    if problem:
        raise invalid(problem)
    check_key_values(table, item)
    if values.item_size(item) > values.ITEM_MAX_BYTES:
        raise invalid("Item size has exceeded the maximum allowed size")


def identity(table, attrs) -> tuple:
    """The item attrs names in table, comparable: numbers by value."""
    parts = [table.name]
    for name in _schema(table):
        value = attrs.get(name) if isinstance(attrs, dict) else None
        kind = _kind(value)
        if kind == "N":
            parts.append(values.number(value["N"]))
        elif kind:
            parts.append((kind, value[kind]))
        else:
            parts.append(None)  # a key the schema refuses: told apart later
    return tuple(parts)
