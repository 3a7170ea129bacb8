package dev.handoff.relay.internal;

import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.internal.AclErrors;
import dev.handoff.core.internal.LuaScript;
import dev.handoff.core.internal.StreamId;
import dev.handoff.core.internal.StreamTrimScript;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.resps.StreamInfo;

/** The stream transport: the publish and trim scripts, and the stream's last generated ID. */
final class RedisStreams implements RedisTransport {

  static final int CONNECTION_ATTEMPTS = LuaScript.CONNECTION_ATTEMPTS;

  private final UnifiedJedis redis;
  private final LuaScript publish = LuaScript.resource("/dev/handoff/relay/publish.lua");

  RedisStreams(UnifiedJedis redis) {
    this.redis = redis;
  }

  @Override
  public String key(String keyPrefix, ShardId shard) {
    return StreamFormat.streamKey(keyPrefix, shard.topic(), shard.shard());
  }

  @Override
  public String relayKey(String key) {
    return StreamFormat.relayKey(key);
  }

  @Override
  public long room(String key, String relayKey) {
    return Long.MAX_VALUE;
  }

  @Override
  public boolean bounded() {
    return false;
  }

  /**
   * Adds the rows with their stream IDs, in order, unless Redis lost the stream: its own count of entries the
   * relays added is lower than {@code confirmedAdded}, or the stream is gone.
   */
  @Override
  public PublishResult publish(String streamKey, String relayKey, long confirmedAdded, List<OutboxRow> rows) {
    return result((List<?>) run(publish, redis, keys(streamKey, relayKey), args(confirmedAdded, rows)));
  }

  /**
   * The batches' scripts on one pipeline: one round trip for all of them on a single server, one per node in a
   * cluster. Any failure of the pipeline as a whole leaves every batch to {@link #publish}.
   */
  @Override
  public List<PublishResult> publishAll(List<Publish> batches) {
    PublishResult[] out = new PublishResult[batches.size()];
    if (batches.size() < 2) {
      return Arrays.asList(out);
    }
    List<Response<Object>> replies = new ArrayList<>(batches.size());
    try (AbstractPipeline pipeline = redis.pipelined()) {
      for (Publish b : batches) {
        replies.add(publish.queue(pipeline, keys(b.key(), b.relayKey()), args(b.confirmedAdded(), b.rows())));
      }
      pipeline.sync();
    } catch (RuntimeException e) {
      return Arrays.asList(out);
    }
    for (int i = 0; i < out.length; i++) {
      try {
        out[i] = result((List<?>) replies.get(i).get());
      } catch (RuntimeException e) {
        out[i] = null; // NOSCRIPT after a restart, a redirect, a refusal: publish() handles and names each
      }
    }
    return Arrays.asList(out);
  }

  private static List<byte[]> keys(String streamKey, String relayKey) {
    return List.of(bytes(streamKey), bytes(relayKey));
  }

  /** The publish script's arguments: the count the relay confirmed, then per row its ID, message ID and fields. */
  private static List<byte[]> args(long confirmedAdded, List<OutboxRow> rows) {
    List<byte[]> args = new ArrayList<>(rows.size() * 21 + 1);
    args.add(bytes(Long.toString(confirmedAdded)));
    for (OutboxRow row : rows) {
      Map<byte[], byte[]> fields = StreamFormat.encode(row.toMessage());
      args.add(bytes(row.streamId().toString()));
      args.add(bytes(row.messageId().toString()));
      args.add(bytes(Integer.toString(fields.size() * 2)));
      fields.forEach((k, v) -> {
        args.add(k);
        args.add(v);
      });
    }
    return args;
  }

  /** Reads the script's reply: lost (negative first element) with Redis's count, or a status per row. */
  private static PublishResult result(List<?> reply) {
    long first = (Long) reply.get(0);
    if (first < 0) {
      return new PublishResult(true, (Long) reply.get(1), List.of());
    }
    List<EntryStatus> statuses = new ArrayList<>(reply.size() - 1);
    for (int i = 1; i < reply.size(); i++) {
      statuses.add(switch (((Long) reply.get(i)).intValue()) {
        case 1 -> EntryStatus.ADDED;
        case 2 -> EntryStatus.ALREADY_PRESENT;
        case 3 -> EntryStatus.PRESENT_WITH_OTHER_MESSAGE;
        default -> EntryStatus.REFUSED_ABSENT;
      });
    }
    return new PublishResult(false, first, statuses);
  }

  /** Trims below the lowest ID any consumer group still needs; {@code noGroupFloor} applies when there is none. */
  @Override
  public long[] memory() {
    return RedisMemory.figures(redis);
  }

  @Override
  public TrimResult trim(String streamKey, String relayKey, StreamId noGroupFloor, StreamId keepFrom, int limit) {
    StreamTrimScript.Result r = StreamTrimScript.run(redis, streamKey, noGroupFloor, keepFrom, limit,
        StreamTrimScript.Mode.APPROX);
    return new TrimResult(r.minId(), r.evicted(), r.groups(), r.holder(), r.length());
  }

  /** The highest ID the stream ever generated, or zero when the stream does not exist. */
  @Override
  public StreamId lastGeneratedId(String streamKey, String relayKey) {
    for (int attempt = 1; ; attempt++) {
      try {
        StreamInfo info = redis.xinfoStream(streamKey);
        return new StreamId(info.getLastGeneratedId().getTime(), info.getLastGeneratedId().getSequence());
      } catch (JedisDataException e) {
        if (e.getMessage() != null && e.getMessage().contains("no such key")) {
          return StreamId.ZERO;
        }
        throw AclErrors.direct(e, "XINFO|STREAM", List.of(streamKey));
      } catch (JedisConnectionException e) {
        if (attempt == CONNECTION_ATTEMPTS) {
          throw e;
        }
      }
    }
  }

  @Override
  public StreamId survivingTop(String streamKey, String relayKey) {
    try {
      StreamInfo info = redis.xinfoStream(streamKey);
      if (info.getLength() > 0 && info.getLastEntry() != null) {
        return new StreamId(info.getLastEntry().getID().getTime(), info.getLastEntry().getID().getSequence());
      }
      return new StreamId(info.getLastGeneratedId().getTime(), info.getLastGeneratedId().getSequence() + 1);
    } catch (JedisDataException e) {
      if (e.getMessage() != null && e.getMessage().contains("no such key")) {
        return StreamId.ZERO;
      }
      throw AclErrors.direct(e, "XINFO|STREAM", List.of(streamKey));
    }
  }

  @Override
  public StreamId survivingFloor(String streamKey, String relayKey) {
    try {
      StreamInfo info = redis.xinfoStream(streamKey);
      if (info.getLength() > 0 && info.getFirstEntry() != null) {
        return new StreamId(info.getFirstEntry().getID().getTime(), info.getFirstEntry().getID().getSequence());
      }
      return new StreamId(info.getLastGeneratedId().getTime(), info.getLastGeneratedId().getSequence() + 1);
    } catch (JedisDataException e) {
      if (e.getMessage() != null && e.getMessage().contains("no such key")) {
        return StreamId.ZERO;
      }
      throw AclErrors.direct(e, "XINFO|STREAM", List.of(streamKey));
    }
  }

  static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Runs a script, retrying broken pooled connections ({@link LuaScript#runRetryingBrokenConnections}). */
  static Object run(LuaScript script, UnifiedJedis redis, List<byte[]> keys, List<byte[]> args) {
    return script.runRetryingBrokenConnections(redis, keys, args);
  }

}
