"""Transactions as DynamoDB runs them: rollback of the touched items only,
and ClientRequestToken idempotency.

moto's transact_write_items deep-copies every table it touches and, when the
transaction is cancelled, puts the copy back: that erases what other
requests committed meanwhile and makes a transaction's cost grow with the
table. Here a Table is handed to that copy by reference (so moto's own
restore is a no-op) and the items the transaction names are snapshotted
before it runs and put back when it fails.
"""

import base64
import contextlib
import copy
import hashlib
import inspect
import json
import time

from moto.core.exceptions import JsonRESTError
from moto.core.responses import ActionResult
from moto.dynamodb import models as ddb_models
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
from moto.dynamodb.responses import DynamoHandler

TOKEN_WINDOW_SECONDS = 600


def problems() -> list:
    """The moto internals this module adjusts, as they were when it was written."""
    found = []
    twi = getattr(DynamoDBBackend, "transact_write_items", None)
    if twi is None:
        found.append("DynamoDBBackend.transact_write_items is gone")
    else:
        src = inspect.getsource(twi)
        for needle in ("copy.deepcopy(", "original_table_state", "self.tables[table_name] ="):
            if needle not in src:
                found.append(f"transact_write_items no longer contains {needle!r}")
    if getattr(ddb_models, "copy", None) is not copy:
        found.append("moto.dynamodb.models no longer imports the copy module")
    for name in ("get_item", "all_items", "delete_item"):
        if not callable(getattr(Table, name, None)):
            found.append(f"Table.{name} is gone")
    if "self.items = defaultdict(dict)" not in inspect.getsource(Table.__init__):
        found.append("Table no longer keeps its items in self.items")
    handler = getattr(DynamoHandler, "transact_write_items", None)
    if handler is None or 'self.body["TransactItems"]' not in inspect.getsource(handler):
        found.append("DynamoHandler.transact_write_items no longer reads self.body")
    return found


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


@contextlib.contextmanager
def undone_on_failure(backend, transact_items):
    """Puts the items transact_items names back as they were, and drops the
    stream records written meanwhile, when the block raises."""
    saved = _touched(backend, transact_items)
    marks = _stream_marks(backend, transact_items)
    try:
        yield
    except BaseException:
        _restore(saved)  # writes the items back directly: no stream records
        _drop_records(marks)
        raise


def install() -> None:
    """Patches 2 and 4: rollback of the touched items, ClientRequestToken."""
    ddb_models.copy = _TablesByReference()
    original = DynamoDBBackend.transact_write_items

    def transact_write_items(self, transact_items):
        with undone_on_failure(self, transact_items):
            return original(self, transact_items)

    DynamoDBBackend.transact_write_items = transact_write_items
    _install_client_request_tokens()


def _plain(value):
    """JSON for what moto decodes into bytes (B and BS values)."""
    if isinstance(value, (bytes, bytearray)):
        return "b64:" + base64.b64encode(value).decode()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return repr(value)


def _install_client_request_tokens() -> None:
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
