"""SQS, served unserialized in a process of its own, patched in one way."""

import threading

_batch_entries = threading.local()


def install() -> None:
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
