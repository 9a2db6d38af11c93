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
It is started by the Go package github.com/idemkit/kit/idem/internal/localdynamo, which
embeds this file. With --mode sqs it serves moto unpatched and unserialized,
so SQS long polls never stall DynamoDB requests.
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


def fail(message: str) -> None:
    print(f"localdynamo: {message}", file=sys.stderr, flush=True)
    sys.exit(3)


try:
    import moto
    from moto.dynamodb import models as ddb_models
    from moto.dynamodb.models import DynamoDBBackend, dynamodb_backends
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.table import Table
    from moto.dynamodb.responses import DynamoHandler
    from moto.core.exceptions import JsonRESTError
    from moto.core.responses import ActionResult
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


def patch_transactions() -> None:
    check_internals()
    ddb_models.copy = _TablesByReference()
    original = DynamoDBBackend.transact_write_items

    def transact_write_items(self, transact_items):
        saved = _touched(self, transact_items)
        try:
            return original(self, transact_items)
        except BaseException:
            _restore(saved)
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
                        table.delete_item(item.hash_key, item.range_key)
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
    parser.add_argument("--exit-on-stdin-eof", action="store_true")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args()

    if not args.verbose:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
    serialize = args.mode == "dynamodb"
    if serialize:
        patch_transactions()
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
