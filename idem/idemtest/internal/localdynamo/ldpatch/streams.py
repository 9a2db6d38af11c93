"""DynamoDB Streams as DynamoDB emits them: one record per item change that
happened, the table's Region, the TTL service's identity, and shard
iterators that expire."""

import contextlib
import inspect
import threading
import time

from moto.core.exceptions import JsonRESTError
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models import table as ddb_table
from moto.dynamodb.models.table import StreamShard, Table
from moto.dynamodbstreams.models import DynamoDBStreamsBackend, ShardIterator
from moto.moto_server.werkzeug_app import DomainDispatcherApplication

# GetRecords spells these PrincipalId and Type (the API model's names); a
# Lambda event from the same record spells them principalId and type.
SERVICE_IDENTITY = {"PrincipalId": "dynamodb.amazonaws.com", "Type": "Service"}

_emitting = threading.local()  # .pending: writes being coalesced; .service: a TTL delete


def _source(obj) -> str:
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        return ""


def problems() -> list:
    """The moto internals patches 5 to 8 adjust, as they were when they were written."""
    found = []
    needles = [
        # Every stream record is made by StreamShard.add, appended to its list.
        (StreamShard.__init__, "self.items: list[StreamRecord] = []"),
        (StreamShard.add, "self.items.append(StreamRecord("),
        (getattr(ddb_table, "StreamRecord", None), 'self.record: dict[str, Any] = {'),
        (getattr(ddb_table, "StreamRecord", None), '"awsRegion":'),
        (Table.__init__, "self.region_name = region"),
        # ... and add is called by these three writes only.
        (Table.put_item, "self.stream_shard.add(current, item)"),
        (Table.delete_item, "self.stream_shard.add(item, None)"),
        (DynamoDBBackend.update_item, "table.put_item(data)"),
        (DynamoDBBackend.update_item, "table.stream_shard.add(orig_item, item)"),
        # The streams API: its target reaches the dynamodbstreams backend,
        # whose iterators live in one dict.
        (DomainDispatcherApplication.infer_service_region_host, 'startswith("DynamoDBStreams")'),
        (DynamoDBStreamsBackend.__init__, "self.shard_iterators: dict[str, ShardIterator] = {}"),
        (DynamoDBStreamsBackend.get_records, "self.shard_iterators[iterator_arn]"),
        (ShardIterator.get, "self.streams_backend.shard_iterators[new_shard_iterator.arn]"),
    ]
    for obj, needle in needles:
        if obj is None:
            found.append(f"moto no longer has the object holding {needle!r}")
        elif needle not in _source(obj):
            found.append(f"{getattr(obj, '__qualname__', obj)} no longer contains {needle!r}")
    return found


@contextlib.contextmanager
def as_service():
    """Records made inside say DynamoDB's TTL service made the change."""
    _emitting.service = True
    try:
        yield
    finally:
        _emitting.service = False


def _unchanged(old, new) -> bool:
    try:
        return old is not None and new is not None and old == new
    except Exception:  # a value moto cannot compare: call it a change
        return False


def install() -> None:
    """Patches 5 to 7: one stream record per item change that happened."""
    record_class = ddb_table.StreamRecord  # a moto model: patched in place, not subclassed
    original_record = record_class.__init__

    def record_init(self, table, *args, **kwargs):
        original_record(self, table, *args, **kwargs)
        self.record["awsRegion"] = table.region_name
        if getattr(_emitting, "service", False):
            self.record["userIdentity"] = dict(SERVICE_IDENTITY)

    record_class.__init__ = record_init
    original_add = StreamShard.add

    def add(self, old, new):
        pending = getattr(_emitting, "pending", None)
        if pending is not None:
            pending.append((self, old, new))
        elif not _unchanged(old, new):  # DynamoDB writes no record for a write that changes nothing
            original_add(self, old, new)

    StreamShard.add = add
    original_update = DynamoDBBackend.update_item

    def update_item(self, *args, **kwargs):
        # moto's update_item of a new item puts a keys-only item (one INSERT)
        # and then reports the update (a second INSERT): emit one record,
        # from the item before to the item after, when the update returns.
        if getattr(_emitting, "pending", None) is not None:
            return original_update(self, *args, **kwargs)
        _emitting.pending = []
        try:
            return original_update(self, *args, **kwargs)
        finally:
            pending, _emitting.pending = _emitting.pending, None
            if pending and all(shard is pending[0][0] for shard, _, _ in pending):
                pending[0][0].add(pending[0][1], pending[-1][2])
            else:
                for shard, old, new in pending:
                    shard.add(old, new)

    DynamoDBBackend.update_item = update_item


def install_iterator_expiry(lifetime: float) -> None:
    """Patch 8: iterators expire after lifetime seconds and are then forgotten."""
    original_init = ShardIterator.__init__

    def __init__(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self.issued_at = time.monotonic()

    ShardIterator.__init__ = __init__

    def get_records(self, iterator_arn, limit):
        now = time.monotonic()
        iterators = self.shard_iterators
        if now - getattr(self, "localdynamo_pruned_at", 0.0) >= min(lifetime, 60.0):
            for arn in [a for a, it in iterators.items() if now - getattr(it, "issued_at", now) >= lifetime]:
                del iterators[arn]
            self.localdynamo_pruned_at = now
        iterator = iterators.get(iterator_arn)
        if iterator is None or now - iterator.issued_at >= lifetime:
            iterators.pop(iterator_arn, None)
            # An iterator forgotten after it expired cannot be told from one
            # never issued: both get DynamoDB's answer for an expired one.
            raise JsonRESTError(
                "ExpiredIteratorException",
                f"Iterator expired or unknown: shard iterators last {lifetime:g} seconds",
            )
        return iterator.get(limit)

    DynamoDBStreamsBackend.get_records = get_records
