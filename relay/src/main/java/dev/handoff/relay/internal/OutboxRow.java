package dev.handoff.relay.internal;

import dev.handoff.core.StreamMessage;
import dev.handoff.core.internal.Json;
import dev.handoff.core.internal.StreamId;
import java.time.Instant;
import java.util.UUID;

/** An outbox row that has a stream ID and is on its way to its stream. */
record OutboxRow(
    long id, UUID messageId, String topic, String key, String type, byte[] payload, String headersJson,
    Instant createdAt, StreamId streamId) {

  StreamMessage toMessage() {
    return new StreamMessage(messageId, id, topic, type, key, Json.readStringMap(headersJson), createdAt, payload);
  }
}
