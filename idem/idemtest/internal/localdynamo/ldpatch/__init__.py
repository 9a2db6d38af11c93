"""The patches localdynamo.py installs into moto, one module per concern:
transactions, streams, ttl and sqs make moto behave like DynamoDB under
load; model, values, expressions, items, batches and operations make it
refuse what DynamoDB refuses (operations wires them into moto's handler)."""
