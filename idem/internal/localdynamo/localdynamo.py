"""localdynamo: moto's DynamoDB on loopback, made to behave like DynamoDB under load.

Stock moto_server has three defects that make tests and benchmarks lie:
  1. TransactWriteItems deep-copies every table it touches and, when the
     transaction is cancelled, puts that copy back, erasing whatever other
     requests committed meanwhile (lost writes under concurrency);
  2. that deep copy makes a transaction's cost grow with the table size;
  3. expired items are never deleted (no TTL sweeping);
and it ignores TransactWriteItems' ClientRequestToken, so the SDK's resend of
a commit whose answer was lost applies it again.
This server fixes all four with a small patch:
  1. requests are served one at a time (a lock around the WSGI app), as
     DynamoDB serializes conflicting transactions;
  2. a cancelled transaction restores only the items it touched, with moto's
     cancellation semantics otherwise unchanged;
  3. an optional sweeper deletes expired items of tables with TTL enabled;
  4. a TransactWriteItems repeated with a token that committed within ten
     minutes succeeds without applying again, and with other parameters
     fails with IdempotentParameterMismatchException, as DynamoDB does.
It also makes moto's DynamoDB Streams (served on the same port: the SDK's
dynamodbstreams client sends X-Amz-Target DynamoDBStreams_20120810.*, which
moto's dispatcher routes to its dynamodbstreams backend) emit what DynamoDB
emits, one record per item change that happened:
  5. a cancelled transaction leaves no stream record (the records its
     applied actions added are dropped with the restore of patch 2, which
     itself emits none), and a token replay (patch 4) emits none;
  6. a write that changes nothing (an UpdateItem or PutItem leaving the item
     as it was) emits no record, and an UpdateItem that creates an item
     emits one INSERT, not moto's two (a keys-only INSERT, then another);
  7. a record's awsRegion is the table's region, not always us-east-1, and
     the TTL sweeper's deletes (patch 3) carry DynamoDB's userIdentity,
     Type "Service" and PrincipalId "dynamodb.amazonaws.com";
  8. a shard iterator expires 15 minutes after it was issued
     (ExpiredIteratorException, as on DynamoDB; --shard-iterator-seconds),
     and expired ones are forgotten, so a poller does not grow the server.
Unlike DynamoDB, stream records are kept until the server stops (DynamoDB
keeps them 24 hours), in one shard per table that never closes.
It is started by the Go package github.com/idemkit/kit/idem/internal/localdynamo, which
embeds this file. With --mode sqs it serves moto unserialized, so SQS long
polls never stall DynamoDB requests, and patched where moto differs from
SQS in what the kit's redrive depends on:
  a. a SendMessageBatch entry's MessageSystemAttributes (its AWSTraceHeader)
     are kept, as SQS keeps them and moto does only for SendMessage;
  b. a message moved to its dead-letter queue carries the system attribute
     DeadLetterQueueSourceArn, the queue it came from, as SQS sets it;
  c. a FIFO queue drops a message sent with a deduplication id it was sent
     in the last 5 minutes, also when that message was deleted or moved
     since (moto compares only the messages still in the queue), within
     the message group under DeduplicationScope messageGroup.
"""

import argparse
import base64
import copy
import hashlib
import inspect
import json
import logging
import os
import sys
import threading
import time

CHECKED_AGAINST = "5.2.1"
FIVE_YEARS_SECONDS = 5 * 365 * 24 * 3600
TOKEN_WINDOW_SECONDS = 600
SHARD_ITERATOR_SECONDS = 900
# GetRecords spells these PrincipalId and Type (the API model's names); a
# Lambda event from the same record spells them principalId and type.
SERVICE_IDENTITY = {"PrincipalId": "dynamodb.amazonaws.com", "Type": "Service"}


def fail(message: str) -> None:
    print(f"localdynamo: {message}", file=sys.stderr, flush=True)
    sys.exit(3)


try:
    import moto
    from moto.dynamodb import models as ddb_models
    from moto.dynamodb.models import DynamoDBBackend, dynamodb_backends
    from moto.dynamodb.models import table as ddb_table
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.table import StreamShard, Table
    from moto.dynamodb.responses import DynamoHandler
    from moto.core.exceptions import JsonRESTError
    from moto.core.responses import ActionResult
    from moto.dynamodbstreams.models import DynamoDBStreamsBackend, ShardIterator
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        create_backend_app,
    )
    from werkzeug.serving import make_server
except ImportError as err:  # moto or its server extras are missing
    fail(
        f"moto with its server extras is required ({err}); "
        "install it with: pip install 'moto[server]'"
    )


def check_internals() -> None:
    """Fails loudly when the moto internals this patch adjusts have changed."""
    problems = []
    twi = getattr(DynamoDBBackend, "transact_write_items", None)
    if twi is None:
        problems.append("DynamoDBBackend.transact_write_items is gone")
    else:
        src = inspect.getsource(twi)
        for needle in ("copy.deepcopy(", "original_table_state", "self.tables[table_name] ="):
            if needle not in src:
                problems.append(f"transact_write_items no longer contains {needle!r}")
    if getattr(ddb_models, "copy", None) is not copy:
        problems.append("moto.dynamodb.models no longer imports the copy module")
    for name in ("get_item", "all_items", "delete_item"):
        if not callable(getattr(Table, name, None)):
            problems.append(f"Table.{name} is gone")
    if "self.items = defaultdict(dict)" not in inspect.getsource(Table.__init__):
        problems.append("Table no longer keeps its items in self.items")
    handler = getattr(DynamoHandler, "transact_write_items", None)
    if handler is None or 'self.body["TransactItems"]' not in inspect.getsource(handler):
        problems.append("DynamoHandler.transact_write_items no longer reads self.body")
    problems.extend(_stream_problems())
    if problems:
        fail(
            f"moto {moto.__version__} differs from the moto {CHECKED_AGAINST} this patch "
            "was checked against: " + "; ".join(problems)
        )
    if moto.__version__ != CHECKED_AGAINST:
        print(
            f"localdynamo: note: running moto {moto.__version__}; checked against "
            f"{CHECKED_AGAINST} (the internals it adjusts were found unchanged)",
            file=sys.stderr,
            flush=True,
        )


def _source(obj) -> str:
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        return ""


def _stream_problems() -> list:
    """The moto internals patches 5 to 8 adjust, as they were in CHECKED_AGAINST."""
    problems = []
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
            problems.append(f"moto no longer has the object holding {needle!r}")
        elif needle not in _source(obj):
            problems.append(f"{getattr(obj, '__qualname__', obj)} no longer contains {needle!r}")
    return problems


class _TablesByReference:
    """Stands in for the copy module inside moto.dynamodb.models.

    transact_write_items deep-copies whole tables for its rollback; a Table is
    handed back by reference instead (so moto's own "restore" is a no-op) and
    the touched items are restored by transact_write_items below.
    """

    def __getattr__(self, name):
        return getattr(copy, name)

    @staticmethod
    def deepcopy(x, memo=None):
        if isinstance(x, Table):
            return x
        return copy.deepcopy(x, memo)


def _touched(backend, transact_items):
    """Snapshots each item the transaction names, before any write."""
    saved = []
    for entry in transact_items if isinstance(transact_items, list) else []:
        if not isinstance(entry, dict) or len(entry) != 1:
            continue
        op_type, op = next(iter(entry.items()))
        if not isinstance(op, dict):
            continue
        table = backend.tables.get(op.get("TableName"))
        attrs = op.get("Item") if op_type == "Put" else op.get("Key")
        if table is None or not isinstance(attrs, dict):
            continue
        try:
            hash_key = DynamoType(attrs[table.hash_key_attr])
            range_key = None
            if table.range_key_attr is not None:
                range_key = DynamoType(attrs[table.range_key_attr])
            current = table.get_item(hash_key, range_key)
        except Exception:  # moto itself rejects this entry before writing it
            continue
        saved.append((table, hash_key, range_key, copy.deepcopy(current)))
    return saved


def _restore(saved) -> None:
    for table, hash_key, range_key, old in reversed(saved):
        if range_key is None:
            if old is None:
                table.items.pop(hash_key, None)
            else:
                table.items[hash_key] = old
        else:
            bucket = table.items[hash_key]
            if old is None:
                bucket.pop(range_key, None)
            else:
                bucket[range_key] = old


def _stream_marks(backend, transact_items):
    """How many records each stream the transaction writes to holds, before it."""
    marks = {}
    for entry in transact_items if isinstance(transact_items, list) else []:
        if not isinstance(entry, dict) or len(entry) != 1:
            continue
        op = next(iter(entry.values()))
        table = backend.tables.get(op.get("TableName")) if isinstance(op, dict) else None
        shard = getattr(table, "stream_shard", None)
        if shard is not None:
            marks[id(shard)] = (shard, len(shard.items))
    return list(marks.values())


def _drop_records(marks) -> None:
    """Drops the records added after marks: no reader saw them, as requests are serialized."""
    for shard, count in marks:
        del shard.items[count:]


def patch_transactions() -> None:
    check_internals()
    ddb_models.copy = _TablesByReference()
    original = DynamoDBBackend.transact_write_items

    def transact_write_items(self, transact_items):
        saved = _touched(self, transact_items)
        marks = _stream_marks(self, transact_items)
        try:
            return original(self, transact_items)
        except BaseException:
            _restore(saved)  # writes the items back directly: no stream records
            _drop_records(marks)
            raise

    DynamoDBBackend.transact_write_items = transact_write_items
    patch_client_request_tokens()


def _plain(value):
    """JSON for what moto decodes into bytes (B and BS values)."""
    if isinstance(value, (bytes, bytearray)):
        return "b64:" + base64.b64encode(value).decode()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return repr(value)


def patch_client_request_tokens() -> None:
    """Makes TransactWriteItems idempotent per ClientRequestToken, as DynamoDB is."""
    original = DynamoHandler.transact_write_items
    committed = {}  # (account, region, token) -> (digest of the request, time)

    def transact_write_items(self):
        token = self.body.get("ClientRequestToken")
        if not token:
            return original(self)
        now = time.time()
        key = (self.current_account, self.region, token)
        digest = hashlib.sha256(
            json.dumps(self.body.get("TransactItems"), sort_keys=True, default=_plain).encode()
        ).hexdigest()
        hit = committed.get(key)
        if hit is not None and now - hit[1] < TOKEN_WINDOW_SECONDS:
            if hit[0] != digest:
                raise JsonRESTError(
                    "IdempotentParameterMismatchException",
                    "The ClientRequestToken was used with different parameters within the last ten minutes",
                )
            return ActionResult({"ConsumedCapacity": [], "ItemCollectionMetrics": {}})
        result = original(self)  # raises when cancelled: nothing to remember
        if len(committed) > 100_000:
            for k in [k for k, v in committed.items() if now - v[1] >= TOKEN_WINDOW_SECONDS]:
                del committed[k]
        committed[key] = (digest, now)
        return result

    DynamoHandler.transact_write_items = transact_write_items


_emitting = threading.local()  # .pending: writes being coalesced; .service: a TTL delete


def _unchanged(old, new) -> bool:
    try:
        return old is not None and new is not None and old == new
    except Exception:  # a value moto cannot compare: call it a change
        return False


def patch_streams() -> None:
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


def patch_shard_iterators(lifetime: float) -> None:
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


_batch_entries = threading.local()


def patch_sqs_batch_system_attributes() -> None:
    """SendMessageBatch keeps each entry's MessageSystemAttributes: moto's
    loop calls send_message for each entry, in order, without them."""
    from moto.sqs.models import SQSBackend

    send_message = SQSBackend.send_message
    send_message_batch = SQSBackend.send_message_batch

    def patched_send_message(self, queue_name, message_body, *args, **kwargs):
        entries = getattr(_batch_entries, "it", None)
        if entries is not None and "system_attributes" not in kwargs:
            entry = next(entries, None) or {}
            kwargs["system_attributes"] = entry.get("MessageSystemAttributes")
        return send_message(self, queue_name, message_body, *args, **kwargs)

    def patched_send_message_batch(self, queue_name, entries):
        _batch_entries.it = iter(list(entries.values()))
        try:
            return send_message_batch(self, queue_name, entries)
        finally:
            _batch_entries.it = None

    SQSBackend.send_message = patched_send_message
    SQSBackend.send_message_batch = patched_send_message_batch


_received = threading.local()


def patch_sqs_dead_letters() -> None:
    """Patches b and c of the module doc: DeadLetterQueueSourceArn on a
    message moved to a dead-letter queue, and SQS's 5-minute deduplication
    memory on FIFO queues."""
    from moto.sqs.models import DEDUPLICATION_TIME_IN_SECONDS, Queue, SQSBackend
    from moto.sqs.responses import SQSResponse

    receive_message = SQSBackend.receive_message

    def patched_receive_message(self, queue_name, *args, **kwargs):
        queue = self.get_queue(queue_name)
        dlq = queue.dead_letter_queue
        # moto moves a message by handing the same object to the DLQ.
        before = {id(m) for m in queue._messages} if dlq is not None else set()
        result = receive_message(self, queue_name, *args, **kwargs)
        if dlq is not None:
            for m in list(dlq._messages):
                if id(m) in before:
                    m.system_attributes = dict(m.system_attributes or {})
                    m.system_attributes["DeadLetterQueueSourceArn"] = queue.queue_arn
        _received.it = result
        return result

    response = SQSResponse.receive_message

    def patched_response(self):
        _received.it = None
        result = response(self)
        received = {m.id: m for m in (getattr(_received, "it", None) or [])}
        _received.it = None
        names = set(self._get_param("AttributeNames", []) + self._get_param("MessageSystemAttributeNames", []))
        if not ("All" in names or "DeadLetterQueueSourceArn" in names):
            return result
        for msg in (result.result or {}).get("Messages", []):
            m = received.get(msg.get("MessageId"))
            arn = (m.system_attributes or {}).get("DeadLetterQueueSourceArn") if m is not None else None
            if arn:
                msg.setdefault("Attributes", {})["DeadLetterQueueSourceArn"] = arn
        return result

    add_message = Queue.add_message

    def patched_add_message(self, message):
        # A message moved from a source queue has been received: only sends
        # are deduplicated.
        if self.fifo_queue and message.deduplication_id and not message.approximate_receive_count:
            group = message.group_id if self.attributes.get("DeduplicationScope") == "messageGroup" else None
            seen = self.__dict__.setdefault("_localdynamo_dedup", {})
            now = time.time()
            for k, at in list(seen.items()):
                if now - at >= DEDUPLICATION_TIME_IN_SECONDS:
                    del seen[k]
            if (group, message.deduplication_id) in seen:
                return
            seen[(group, message.deduplication_id)] = now
        add_message(self, message)

    SQSBackend.receive_message = patched_receive_message
    SQSResponse.receive_message = patched_response
    Queue.add_message = patched_add_message


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
                        _emitting.service = True  # the record says DynamoDB deleted it
                        try:
                            table.delete_item(item.hash_key, item.range_key)
                        finally:
                            _emitting.service = False
                        count += 1
                if count:
                    deleted[f"{account}/{region}/{name}"] = count
    return deleted


class Server:
    """The WSGI app: moto's dispatcher, one request at a time, plus /_localdynamo/*."""

    def __init__(self, app, serialize: bool):
        self.app = app
        self.lock = threading.Lock() if serialize else None

    def sweep_now(self) -> dict:
        with self.lock:
            return sweep(time.time())

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path == "/_localdynamo/sweep" and self.lock is not None:
            deleted = self.sweep_now()
            return self._json(start_response, {"deleted": sum(deleted.values()), "tables": deleted})
        if path == "/_localdynamo/health":
            return self._json(start_response, {"moto": moto.__version__})
        if self.lock is None:
            return self.app(environ, start_response)
        with self.lock:
            # The body is produced inside the lock, so no other request runs
            # while this one still reads or writes moto's state.
            result = self.app(environ, start_response)
            try:
                body = b"".join(result)
            finally:
                if hasattr(result, "close"):
                    result.close()
        return [body]

    @staticmethod
    def _json(start_response, doc):
        body = json.dumps(doc).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]


def sweeper(server: Server, interval: float) -> None:
    while True:
        time.sleep(interval)
        deleted = server.sweep_now()
        for table, count in deleted.items():
            print(f"localdynamo: ttl sweep deleted {count} expired item(s) from {table}", file=sys.stderr, flush=True)


def exit_on_stdin_eof() -> None:
    """The parent holds our stdin open; when it dies, we go too."""
    try:
        while sys.stdin.buffer.read(4096):
            pass
    finally:
        os._exit(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--mode", choices=("dynamodb", "sqs"), default="dynamodb")
    parser.add_argument("--ttl-sweep-seconds", type=float, default=0, help="0 turns the sweeper off")
    parser.add_argument(
        "--shard-iterator-seconds", type=float, default=SHARD_ITERATOR_SECONDS,
        help="how long a DynamoDB Streams shard iterator lasts (DynamoDB's: 15 minutes)",
    )
    parser.add_argument("--exit-on-stdin-eof", action="store_true")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args()

    if not args.verbose:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
    serialize = args.mode == "dynamodb"
    if serialize:
        patch_transactions()
        patch_streams()
        patch_shard_iterators(args.shard_iterator_seconds)
    else:
        patch_sqs_batch_system_attributes()
        patch_sqs_dead_letters()
    server = Server(DomainDispatcherApplication(create_backend_app), serialize)
    httpd = make_server(args.host, args.port, server, threaded=True)
    if args.exit_on_stdin_eof:
        threading.Thread(target=exit_on_stdin_eof, daemon=True).start()
    if serialize and args.ttl_sweep_seconds > 0:
        threading.Thread(target=sweeper, args=(server, args.ttl_sweep_seconds), daemon=True).start()
    host, port = httpd.server_address[:2]
    print(f"localdynamo: {args.mode} listening on http://{host}:{port} (moto {moto.__version__})", flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
