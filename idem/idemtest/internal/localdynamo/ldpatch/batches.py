"""TransactWriteItems, TransactGetItems and BatchWriteItem refuse a request
as a whole before any item is read or written: a missing table, two actions
on one item, more than 25 writes in a batch, a transaction over 4 MB. A
transaction's action whose key does not match its table's schema cancels
the transaction with a ValidationError reason at its place."""

from moto.core.responses import ActionResult
from moto.dynamodb.exceptions import TransactionCanceledException
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.responses import DynamoResult

from ldpatch import expressions, items, transactions, values
from ldpatch.items import invalid

TRANSACTION_MAX_BYTES = 4 * 1024 * 1024
BATCH_WRITE_MAX = 25
ONE_ITEM = "Transaction request cannot include multiple operations on one item"
_WRITE_ACTIONS = {  # each action's expression parameters
    "ConditionCheck": ("ConditionExpression",),
    "Put": ("ConditionExpression",),
    "Delete": ("ConditionExpression",),
    "Update": ("UpdateExpression", "ConditionExpression"),
}


def _cancel(problems):
    return TransactionCanceledException(
        [("ValidationError", p, None) if p else (None, None, None) for p in problems]
    )


def transact_write_items(handler, original):
    backend = handler.dynamodb_backend
    actions = []
    for entry in handler.body["TransactItems"]:
        kinds = [k for k in _WRITE_ACTIONS if isinstance(entry, dict) and entry.get(k) is not None]
        if len(kinds) != 1:
            raise invalid("TransactItems can only contain one of Check, Put, Update or Delete")
        kind, op = kinds[0], entry[kinds[0]]
        expressions.check(op, _WRITE_ACTIONS[kind])
        items.check_values(op.get("Item") if kind == "Put" else op.get("Key"))
        items.check_request_values(op)
        actions.append((kind, op))
    tables = [backend.get_table(op["TableName"]) for _, op in actions]
    seen, total, problems = set(), 0, []
    for (kind, op), table in zip(actions, tables):
        attrs = op["Item"] if kind == "Put" else op["Key"]
        identity = items.identity(table, attrs)
        if identity in seen:
            raise invalid(ONE_ITEM)
        if None not in identity:  # a key the schema refuses names no item
            seen.add(identity)
        total += values.item_size(attrs) + values.item_size(op.get("ExpressionAttributeValues") or {})
        problem = items.item_key_problem(table, attrs) if kind == "Put" else items.key_problem(table, attrs)
        if not problem:
            items.check_key_values(table, attrs)
            if kind == "Put" and values.item_size(attrs) > values.ITEM_MAX_BYTES:
                raise invalid("Item size has exceeded the maximum allowed size")
        problems.append(problem)
    if total > TRANSACTION_MAX_BYTES:
        raise invalid("Transaction request cannot be larger than 4 MB")
    if any(problems):
        raise _cancel(problems)
    return original(handler)


def transact_get_items(handler, original):
    """Replaces moto's, which allows 25 gets, not 100, and ignores projections."""
    body, backend = handler.body, handler.dynamodb_backend
    gets = []
    for entry in body["TransactItems"]:
        get = entry["Get"]
        expressions.check(get, ("ProjectionExpression",))
        items.check_values(get["Key"])
        paths = None
        if get.get("ProjectionExpression"):
            paths, _ = expressions.parse_projection(get["ProjectionExpression"], get.get("ExpressionAttributeNames"))
        gets.append((get, paths))
    tables = [backend.get_table(get["TableName"]) for get, _ in gets]
    seen, problems = set(), []
    for (get, _), table in zip(gets, tables):
        identity = items.identity(table, get["Key"])
        if identity in seen:
            raise invalid(ONE_ITEM)
        if None not in identity:
            seen.add(identity)
        problem = items.key_problem(table, get["Key"])
        if not problem:
            items.check_key_values(table, get["Key"])
        problems.append(problem)
    if any(problems):
        raise _cancel(problems)
    responses, capacity = [], {}
    for (get, paths), table in zip(gets, tables):
        key = get["Key"]
        range_key = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
        item = table.get_item(DynamoType(key[table.hash_key_attr]), range_key, paths)
        responses.append({"Item": item.attrs} if item else {})
        units = capacity.setdefault(table.name, {"TableName": table.name, "CapacityUnits": 0.0, "ReadCapacityUnits": 0.0})
        units["CapacityUnits"] += 2.0
        units["ReadCapacityUnits"] += 2.0
    result = {"Responses": responses}
    if body.get("ReturnConsumedCapacity", "NONE") != "NONE":
        result["ConsumedCapacity"] = list(capacity.values())
    return DynamoResult(result)


def batch_write_item(handler, original):
    """Replaces moto's, which writes the items before the one it refuses and
    takes one item in two tables for a duplicate."""
    body, backend = handler.body, handler.dynamodb_backend
    requests = body["RequestItems"]
    if sum(len(r) for r in requests.values()) > BATCH_WRITE_MAX:
        raise invalid("Too many items requested for the BatchWriteItem call")
    writes, seen = [], set()
    for name, table_requests in requests.items():
        table = backend.get_table(name)
        for request in table_requests:
            kinds = [k for k in ("PutRequest", "DeleteRequest") if isinstance(request, dict) and request.get(k) is not None]
            if len(kinds) != 1:
                raise invalid("A WriteRequest must contain exactly one of PutRequest or DeleteRequest")
            if kinds[0] == "PutRequest":
                attrs = request["PutRequest"]["Item"]
                items.check_values(attrs)
                items.check_item(table, attrs)
            else:
                attrs = request["DeleteRequest"]["Key"]
                items.check_values(attrs)
                items.check_key(table, attrs)
            identity = items.identity(table, attrs)
            if identity in seen:
                raise invalid("Provided list of item keys contains duplicates")
            seen.add(identity)
            writes.append((name, kinds[0], attrs))
    # What moto refuses beyond the checks above (its own item size measure)
    # leaves no write of the batch behind.
    named = [{"Put": {"TableName": n, "Item": a}} if k == "PutRequest" else {"Delete": {"TableName": n, "Key": a}}
             for n, k, a in writes]
    with transactions.undone_on_failure(backend, named):
        for name, kind, attrs in writes:
            if kind == "PutRequest":
                backend.put_item(name, attrs)
            else:
                backend.delete_item(name, attrs)
    result = {"UnprocessedItems": {}}
    if body.get("ReturnConsumedCapacity", "NONE") != "NONE":
        result["ConsumedCapacity"] = [{"TableName": backend.get_table(n).name, "CapacityUnits": float(len(r))}
                                      for n, r in requests.items()]
    return ActionResult(result)
