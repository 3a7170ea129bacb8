package dev.handoff.consumer.internal;

import dev.handoff.core.internal.AclErrors;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * The stream consumer's {@code XACK}s, of entries whose verdict committed. A count is what Redis answered: a reply
 * that a cluster pipeline left unset is thrown as the connection failure it is, never counted as acknowledged.
 * {@code XACK} is idempotent, so a call that met a broken pooled connection is sent once more on a fresh one
 * ({@link RedisConnections#onceMoreOnBrokenConnection}): a Redis restart then costs no redelivery.
 *
 * <p>Thread-safe: it keeps no state; the connections are {@link RedisGroups}'s.
 */
final class StreamAcknowledger {

  private final UnifiedJedis commands;
  private final byte[] group;
  private final String groupName;

  StreamAcknowledger(UnifiedJedis commands, String groupName) {
    this.commands = commands;
    this.groupName = groupName;
    this.group = StreamReplies.bytes(groupName);
  }

  long ack(String streamKey, List<String> ids) {
    if (ids.isEmpty()) {
      return 0;
    }
    try {
      return RedisConnections.onceMoreOnBrokenConnection(commands,
          () -> commands.xack(StreamReplies.bytes(streamKey), group, rawIds(ids)));
    } catch (JedisDataException e) {
      throw AclErrors.direct(e, "XACK", List.of(streamKey));
    }
  }

  /** Acknowledges the entries of several streams in one round trip; returns how many Redis acknowledged. */
  long ackAll(Map<String, List<String>> idsByStream) {
    if (idsByStream.size() <= 1) {
      long acked = 0;
      for (Map.Entry<String, List<String>> e : idsByStream.entrySet()) {
        acked += ack(e.getKey(), e.getValue());
      }
      return acked;
    }
    try {
      return ackPipelined(idsByStream);
    } catch (JedisDataException e) {
      throw AclErrors.direct(e, "XACK", List.copyOf(idsByStream.keySet()));
    }
  }

  /**
   * A cluster's pipeline logs a node's connection failure and leaves that node's replies unset instead of throwing
   * (Jedis's {@code MultiNodePipelineBase.sync}); an unset reply is therefore that outage, and is thrown as one,
   * naming the streams whose acknowledgement may not have happened.
   */
  private long ackPipelined(Map<String, List<String>> idsByStream) {
    return RedisConnections.onceMoreOnBrokenConnection(commands, () -> {
      List<String> keys = new ArrayList<>(idsByStream.size());
      List<Response<Long>> replies = new ArrayList<>(idsByStream.size());
      try (AbstractPipeline p = commands.pipelined()) {
        idsByStream.forEach((key, ids) -> {
          if (!ids.isEmpty()) {
            keys.add(key);
            replies.add(p.xack(StreamReplies.bytes(key), group, rawIds(ids)));
          }
        });
        p.sync();
      }
      long acked = 0;
      List<String> unanswered = new ArrayList<>();
      for (int i = 0; i < replies.size(); i++) {
        try {
          acked += replies.get(i).get();
        } catch (IllegalStateException noReply) {
          unanswered.add(keys.get(i));
        }
      }
      if (!unanswered.isEmpty()) {
        throw new JedisConnectionException("no reply to XACK on " + unanswered + " of group '" + groupName
            + "': the connection to their node failed during the pipeline");
      }
      return acked;
    });
  }

  private static byte[][] rawIds(List<String> ids) {
    byte[][] raw = new byte[ids.size()][];
    for (int i = 0; i < raw.length; i++) {
      raw[i] = StreamReplies.bytes(ids.get(i));
    }
    return raw;
  }
}
