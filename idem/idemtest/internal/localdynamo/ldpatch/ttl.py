"""Time to Live: the sweeper that deletes expired items, as DynamoDB's TTL
does (lazily, in DynamoDB's case)."""

from moto.dynamodb.models import dynamodb_backends

from ldpatch import streams

FIVE_YEARS_SECONDS = 5 * 365 * 24 * 3600


def sweep(now: float) -> dict:
    """Deletes items whose TTL attribute is a number of epoch seconds in the past.

    Like DynamoDB, values more than five years in the past are ignored.
    """
    deleted = {}
    for account, regions in list(dynamodb_backends.items()):
        for region, backend in list(regions.items()):
            for name, table in list(backend.tables.items()):
                ttl = table.ttl or {}
                attr = ttl.get("AttributeName")
                if ttl.get("TimeToLiveStatus") != "ENABLED" or not attr:
                    continue
                count = 0
                for item in list(table.all_items()):
                    value = item.attrs.get(attr)
                    if value is None or value.type != "N":
                        continue
                    try:
                        expires = float(value.value)
                    except ValueError:
                        continue
                    if now - FIVE_YEARS_SECONDS <= expires < now:
                        with streams.as_service():  # the record says DynamoDB deleted it
                            table.delete_item(item.hash_key, item.range_key)
                        count += 1
                if count:
                    deleted[f"{account}/{region}/{name}"] = count
    return deleted
