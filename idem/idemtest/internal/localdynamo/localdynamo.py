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
Last, it refuses what DynamoDB refuses, before anything is read or written
(moto checks little of it), with DynamoDB's error codes:
  9. each request is held against the API model's constraints (required
     members, enum values, lengths, table names of 3 to 255 [a-zA-Z0-9_.-]),
     then against its operation's rules: attribute values (one type, sets
     non-empty without duplicates, numbers DynamoDB can store), expression
     and legacy parameters never together and every placeholder used, keys
     matching the table's schema, transactions of 1 to 100 actions on
     distinct items and at most 4 MB, batches of at most 25 writes on
     distinct items, TTL enabled once and changed at most once an hour,
     ResourceNotFoundException for a missing table; and ProjectionExpression
     paths with list indexes (#l[1]) are answered, not refused.
The patches live in the ldpatch package beside this file, one module per
concern: transactions (2, 4), streams (5 to 8), ttl (3), sqs, and for 9
model, values, expressions, items, batches and operations (the wiring).
It is started by the Go package
github.com/idemkit/kit/idem/idemtest/internal/localdynamo, which embeds these
files (the kit's tests and tooling reach it through idemtest). With --mode
sqs it serves moto unserialized, so SQS long polls never stall DynamoDB
requests, and patched (ldpatch/sqs) where moto differs from SQS in what the
kit's relay and redrive depend on:
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
import json
import logging
import os
import sys
import threading
import time

CHECKED_AGAINST = "5.2.1"
SHARD_ITERATOR_SECONDS = 900


def fail(message: str) -> None:
    print(f"localdynamo: {message}", file=sys.stderr, flush=True)
    sys.exit(3)


try:
    import moto
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    from ldpatch import operations, sqs, streams, transactions, ttl
except ImportError as err:  # moto or its server extras are missing
    fail(
        f"moto with its server extras is required ({err}); "
        "install it with: pip install 'moto[server]'"
    )


def check_internals() -> None:
    """Fails loudly when the moto internals the patches adjust have changed."""
    problems = transactions.problems() + streams.problems() + operations.problems()
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


class Server:
    """The WSGI app: moto's dispatcher, one request at a time, plus /_localdynamo/*."""

    def __init__(self, app, serialize: bool):
        self.app = app
        self.lock = threading.Lock() if serialize else None

    def sweep_now(self) -> dict:
        with self.lock:
            return ttl.sweep(time.time())

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
        check_internals()
        transactions.install()
        streams.install()
        streams.install_iterator_expiry(args.shard_iterator_seconds)
        operations.install()
    else:
        sqs.install()
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
