package dev.handoff.relay.internal;

import dev.handoff.core.ListFormat;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.internal.Statements;
import dev.handoff.core.internal.StreamId;
import dev.handoff.relay.RepairException;
import dev.handoff.relay.RepairReport;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import javax.sql.DataSource;
import redis.clients.jedis.UnifiedJedis;

/** The body of {@code StreamRepair.repair}: the topic's shards from {@code relay_lease}, each repaired in turn. */
public final class StreamRepairs {

  private StreamRepairs() {}

  public static RepairReport repair(DataSource dataSource, UnifiedJedis redis, String schema, String keyPrefix,
      Duration outboxRetention, String topic, boolean dryRun, Consumer<String> progress) throws SQLException {
    EntryRepairer repairer = new EntryRepairer(redis, schema);
    try (Connection c = Statements.sessionFree(dataSource).getConnection()) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      List<RepairQueries.LeaseRow> shards = repairer.queries().shards(c, topic);
      if (shards.isEmpty()) {
        throw new IllegalArgumentException("topic " + topic + " has no shard in " + schema + ".relay_lease: no relay"
            + " ever published it (check --topic and --schema)");
      }
      // Every refusal before any change: a repair is done for all the shards it can do, or none.
      for (RepairQueries.LeaseRow row : shards) {
        if (row.keyPrefix() != null && !row.keyPrefix().equals(keyPrefix)) {
          throw new IllegalArgumentException("shard " + row.shard() + " is relayed under key prefix '"
              + row.keyPrefix() + "', not '" + keyPrefix + "' (set keyPrefix / --key-prefix to the relays' own)");
        }
        String stream = StreamFormat.streamKey(keyPrefix, topic, row.shard().shard());
        String list = ListFormat.listKey(keyPrefix, topic, row.shard().shard());
        if (!redis.exists(stream) && redis.exists(list)) {
          throw new RepairException("topic " + topic + " is relayed to Redis lists (" + list + "): repair applies to"
              + " streams only; a list has no entries missing from its middle, its consumers remove what they"
              + " finish");
        }
      }
      long floorMs = Math.max(0, System.currentTimeMillis() - outboxRetention.toMillis());
      List<RepairReport.ShardRepair> done = new ArrayList<>();
      for (RepairQueries.LeaseRow row : shards) {
        String stream = StreamFormat.streamKey(keyPrefix, topic, row.shard().shard());
        StreamId noGroupFloor = StreamId.max(row.watermark(), new StreamId(floorMs, 0));
        done.add(repairer.repair(c, row.shard(), stream, noGroupFloor, dryRun, progress));
      }
      return new RepairReport(topic, dryRun, done);
    }
  }
}
