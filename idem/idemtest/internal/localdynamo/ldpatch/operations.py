"""What DynamoDB refuses, per operation, before it reads or writes anything,
wired in front of moto's DynamoHandler: every operation's request is first
held against the API model's constraints (model), then against the
operation's own rules below (and in batches), and only then handed to moto.

Each refusal is DynamoDB's: a ValidationException (400) with a message
close to DynamoDB's, a ResourceNotFoundException for a missing table, a
TransactionCanceledException with a ValidationError reason for a
transaction's action whose key does not match its table.
"""

import time

from moto.core.utils import camelcase_to_underscores
from moto.dynamodb.responses import DynamoHandler

from ldpatch import batches, expressions, items, model
from ldpatch.items import invalid

TTL_CHANGE_INTERVAL_SECONDS = 3600


def put_item(handler, original):
    body = handler.body
    expressions.check(body, ("ConditionExpression",))
    items.check_values(body["Item"])
    items.check_request_values(body)
    items.check_item(handler.dynamodb_backend.get_table(body["TableName"]), body["Item"])
    return original(handler)


def get_item(handler, original):
    body = handler.body
    expressions.check(body, ("ProjectionExpression",))
    items.check_values(body["Key"])
    items.check_key(handler.dynamodb_backend.get_table(body["TableName"]), body["Key"])
    wanted = body.pop("AttributesToGet", None)  # moto ignores it: applied below
    result = original(handler)
    found = result.result.get("Item") if wanted else None
    if found is not None:
        result.result["Item"] = {k: v for k, v in found.items() if k in wanted}
    return result


def update_item(handler, original):
    body = handler.body
    expressions.check(body, ("UpdateExpression", "ConditionExpression"))
    items.check_values(body["Key"])
    items.check_request_values(body)
    table = handler.dynamodb_backend.get_table(body["TableName"])
    items.check_key(table, body["Key"])
    for name in body.get("AttributeUpdates") or {}:
        if name in body["Key"]:  # moto checks this for UpdateExpression only
            raise invalid(f"One or more parameter values were invalid: Cannot update attribute {name}. "
                          "This attribute is part of the key")
    return original(handler)


def delete_item(handler, original):
    body = handler.body
    expressions.check(body, ("ConditionExpression",))
    items.check_values(body["Key"])
    items.check_request_values(body)
    items.check_key(handler.dynamodb_backend.get_table(body["TableName"]), body["Key"])
    return original(handler)


def query_or_scan(handler, original):
    expressions.check(handler.body, ("KeyConditionExpression", "FilterExpression", "ProjectionExpression"))
    items.check_request_values(handler.body)
    return original(handler)


def batch_get_item(handler, original):
    for entry in handler.body["RequestItems"].values():
        expressions.check(entry, ("ProjectionExpression",))
        for key in entry.get("Keys") or []:
            items.check_values(key)
    return original(handler)


def create_table(handler, original):
    body = handler.body
    missing = [m for m in ("AttributeDefinitions", "KeySchema") if body.get(m) is None]
    if missing:  # the model leaves them optional; a table needs both
        raise model.detected([f"Value null at '{m[0].lower() + m[1:]}' failed to satisfy constraint: "
                              "Member must not be null" for m in missing])
    schema = body["KeySchema"]
    names = [e.get("AttributeName") for e in schema]
    if len(set(names)) != len(names):
        raise invalid("Invalid KeySchema: Some index key attribute have no definition")
    if len(schema) <= 2:  # moto refuses longer ones with DynamoDB's message
        if schema[0].get("KeyType") != "HASH":
            raise invalid("Invalid KeySchema: The first KeySchemaElement is not a HASH key type")
        if len(schema) == 2 and schema[1].get("KeyType") != "RANGE":
            raise invalid("Invalid KeySchema: The second KeySchemaElement is not a RANGE key type")
    local = body.get("LocalSecondaryIndexes") or []
    if local and len(schema) < 2:
        raise invalid("One or more parameter values were invalid: Table KeySchema does not have a range key, "
                      "which is required when specifying a LocalSecondaryIndex")
    for index in local:
        hash_key = next((e["AttributeName"] for e in index["KeySchema"] if e["KeyType"] == "HASH"), None)
        if hash_key != names[0]:
            raise invalid("One or more parameter values were invalid: Index KeySchema does not have the same "
                          f"leading hash key as table KeySchema for index: {index['IndexName']}. "
                          f"index hash key: {hash_key}, table hash key: {names[0]}")
    seen = set()
    for index in local + (body.get("GlobalSecondaryIndexes") or []):
        if index["IndexName"] in seen:
            raise invalid(f"One or more parameter values were invalid: Duplicate index name: {index['IndexName']}")
        seen.add(index["IndexName"])
    return original(handler)


def update_time_to_live(handler, original):
    """TTL's state changes once: enabling it twice, disabling it twice, or
    any change within an hour of the last one is refused."""
    table = handler.dynamodb_backend.get_table(handler.body["TableName"])
    spec = handler.body["TimeToLiveSpecification"]
    status, current = table.ttl.get("TimeToLiveStatus"), table.ttl.get("AttributeName")
    if spec["Enabled"] and status in ("ENABLED", "ENABLING"):
        if current == spec["AttributeName"]:
            raise invalid("TimeToLive is already enabled")
        raise invalid(f"TimeToLive is active on a different AttributeName: current AttributeName is {current}")
    if not spec["Enabled"] and status in ("DISABLED", "DISABLING"):
        raise invalid("TimeToLive is already disabled")
    now = time.monotonic()
    changed = getattr(table, "localdynamo_ttl_changed_at", None)
    if changed is not None and now - changed < TTL_CHANGE_INTERVAL_SECONDS:
        raise invalid("Time to live has been modified multiple times within a fixed interval")
    result = original(handler)
    table.localdynamo_ttl_changed_at = now
    return result


def describe_time_to_live(handler, original):
    handler.dynamodb_backend.get_table(handler.body["TableName"])  # moto's answer for none is not DynamoDB's
    return original(handler)


RULES = {
    "PutItem": put_item,
    "GetItem": get_item,
    "UpdateItem": update_item,
    "DeleteItem": delete_item,
    "Query": query_or_scan,
    "Scan": query_or_scan,
    "BatchGetItem": batch_get_item,
    "BatchWriteItem": batches.batch_write_item,
    "TransactWriteItems": batches.transact_write_items,
    "TransactGetItems": batches.transact_get_items,
    "CreateTable": create_table,
    "UpdateTimeToLive": update_time_to_live,
    "DescribeTimeToLive": describe_time_to_live,
}


def problems() -> list:
    found = model.problems() + expressions.problems()
    for action in RULES:
        if not callable(getattr(DynamoHandler, camelcase_to_underscores(action), None)):
            found.append(f"DynamoHandler has no {camelcase_to_underscores(action)}")
    return found


def install() -> None:
    """Wraps every operation moto's handler serves; install after the
    patches that replace handler methods (transactions' token check)."""
    expressions.install()
    for action in model.operation_names():
        method = camelcase_to_underscores(action)
        original = getattr(DynamoHandler, method, None)
        if callable(original):
            setattr(DynamoHandler, method, _checked(action, original, RULES.get(action)))


def _checked(action, original, rule):
    def handle(self):
        model.check(action, self.body)
        return rule(self, original) if rule else original(self)

    handle.__name__ = original.__name__
    handle.__doc__ = original.__doc__
    return handle
