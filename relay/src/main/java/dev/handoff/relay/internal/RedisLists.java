package dev.handoff.relay.internal;

import static dev.handoff.relay.internal.RedisStreams.bytes;

import dev.handoff.core.ListFormat;
import dev.handoff.core.ShardId;
import dev.handoff.core.internal.AclErrors;
import dev.handoff.core.internal.ListScripts;
import dev.handoff.core.internal.LuaScript;
import dev.handoff.core.internal.StreamId;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * The list transport: pushes rows onto a Redis list per shard, exactly once and up to a capacity. A list has no
 * entry IDs, so the relay's IDs travel inside the elements ({@link ListFormat}) and the list's relay hash keeps the
 * highest ID pushed: the push script skips every row at or below it, which makes re-sending a batch after a crash,
 * a pause or a takeover harmless, exactly as a refused XADD ID does for streams.
 */
final class RedisLists implements RedisTransport {

  private final UnifiedJedis redis;
  private final long capacity;
  private final LuaScript push = LuaScript.resource("/dev/handoff/relay/list-push.lua");
  private final LuaScript room = LuaScript.resource("/dev/handoff/relay/list-room.lua");
  private final LuaScript watermark = ListScripts.resource("/dev/handoff/core/list-watermark.lua");

  RedisLists(UnifiedJedis redis, long capacity) {
    this.redis = redis;
    this.capacity = capacity;
  }

  @Override
  public String key(String keyPrefix, ShardId shard) {
    return ListFormat.listKey(keyPrefix, shard.topic(), shard.shard());
  }

  @Override
  public String relayKey(String key) {
    return ListFormat.relayKey(key);
  }

  @Override
  public long room(String key, String relayKey) {
    Object reply = RedisStreams.run(room, redis, keys(key, relayKey), List.of(bytes(Long.toString(capacity))));
    return (Long) reply;
  }

  @Override
  public boolean bounded() {
    return true;
  }

  @Override
  public PublishResult publish(String key, String relayKey, long confirmedAdded, List<OutboxRow> rows) {
    List<byte[]> args = new ArrayList<>(rows.size() * 3 + 2);
    args.add(bytes(Long.toString(confirmedAdded)));
    args.add(bytes(Long.toString(capacity)));
    for (OutboxRow row : rows) {
      args.add(bytes(Long.toString(row.streamId().ms())));
      args.add(bytes(Long.toString(row.streamId().seq())));
      args.add(ListFormat.encode(row.streamId().toString(), row.toMessage()));
    }
    List<?> reply = (List<?>) RedisStreams.run(push, redis, keys(key, relayKey), args);
    long first = (Long) reply.get(0);
    if (first < 0) {
      return new PublishResult(true, (Long) reply.get(1), List.of());
    }
    List<EntryStatus> statuses = new ArrayList<>(rows.size());
    for (int i = 2; i < reply.size(); i++) {
      statuses.add(switch (((Long) reply.get(i)).intValue()) {
        case 1 -> EntryStatus.ADDED;
        case 2 -> EntryStatus.ALREADY_PRESENT;
        default -> EntryStatus.NOT_SENT;
      });
    }
    return new PublishResult(false, first, statuses);
  }

  /** The highest ID pushed (the marker), or zero; the list itself may be empty, consumed. */
  @Override
  public StreamId lastGeneratedId(String key, String relayKey) {
    List<String> last;
    try {
      last = redis.hmget(relayKey, "last_ms", "last_seq");
    } catch (JedisDataException e) {
      throw AclErrors.direct(e, "HMGET", List.of(relayKey));
    }
    if (last.get(0) == null || last.get(1) == null) {
      return StreamId.ZERO;
    }
    return new StreamId(Long.parseLong(last.get(0)), Long.parseLong(last.get(1)));
  }

  /** Lists are never trimmed (consumers remove what they finish); this only reports the watermark. */
  @Override
  public long[] memory() {
    return RedisMemory.figures(redis);
  }

  @Override
  public TrimResult trim(String key, String relayKey, StreamId noGroupFloor, StreamId keepFrom, int limit) {
    List<?> reply = (List<?>) RedisStreams.run(watermark, redis, keys(key, relayKey), List.of());
    long length;
    try {
      length = redis.llen(key);
    } catch (JedisDataException e) {
      throw AclErrors.direct(e, "LLEN", List.of(key));
    }
    return new TrimResult(new String((byte[]) reply.get(0), StandardCharsets.UTF_8), 0, (Long) reply.get(2), "",
        length);
  }

  private static List<byte[]> keys(String key, String relayKey) {
    return List.of(bytes(key), bytes(relayKey), bytes(ListFormat.consumersKey(key)));
  }
}
