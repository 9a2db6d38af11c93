"""SQS, served unserialized in a process of its own, patched in three ways
(a, b and c of localdynamo's doc)."""

import threading
import time

_batch_entries = threading.local()


def install() -> None:
    """Installs a, b and c."""
    install_batch_system_attributes()
    install_dead_letters()


def install_batch_system_attributes() -> None:
    """a: SendMessageBatch keeps each entry's MessageSystemAttributes:
    moto's loop calls send_message for each entry, in order, without them."""
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


def install_dead_letters() -> None:
    """b and c: DeadLetterQueueSourceArn on a message moved to a dead-letter
    queue, and SQS's 5-minute deduplication memory on FIFO queues."""
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
