package dev.handoff.cli;

import com.zaxxer.hikari.HikariDataSource;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code handoff resume}: lets the relays publish again the shards they stopped after finding that the database went
 * back in time ({@code pauseOnDatabaseRewind}, {@code --pause-on-database-rewind}). It clears the pause in the lease
 * rows; the relay that holds each lease sees it within a cycle. Run it once the failover's cost is known
 * ({@code handoff failover-report}) and the runbook's replays are requested (docs/guarantees.md#a-database-failover).
 */
@Command(name = "resume", mixinStandardHelpOptions = true, sortOptions = false,
    description = "Lets the relays publish again the shards of --topic that they stopped after the database went back"
        + " in time (relays run with --pause-on-database-rewind). Exit 1 when no shard of the topic was paused.")
final class ResumeCommand implements Callable<Integer> {

  @Mixin
  DatabaseOptions database;

  @Option(names = "--topic", required = true, paramLabel = "TOPIC", description = "the topic whose shards to resume")
  String topic;

  @Option(names = "--shard", paramLabel = "N", description = "only this shard (default: every paused shard)")
  Integer shard;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() throws SQLException {
    PrintWriter out = spec.commandLine().getOut();
    int resumed;
    try (HikariDataSource db = database.open(spec, 1, "handoff-resume")) {
      database.requireMigrated(db);
      resumed = resume(db, out);
    }
    if (resumed == 0) {
      out.println("no shard of topic " + topic + (shard != null ? " shard " + shard : "") + " was paused");
    }
    out.flush();
    return resumed == 0 ? HandoffCommand.CHECK_FAILED : 0;
  }

  /** Clears the pause of the topic's paused shards (or of {@code --shard}) in one statement; returns how many. */
  private int resume(HikariDataSource db, PrintWriter out) throws SQLException {
    int resumed = 0;
    try (Connection c = db.getConnection();
        PreparedStatement ps = c.prepareStatement("WITH resumed AS (SELECT topic, shard, paused_at, paused_reason FROM "
            + database.schema() + ".relay_lease WHERE topic = ? AND (? IS NULL OR shard = ?) AND paused_at IS NOT NULL"
            + " FOR UPDATE) UPDATE " + database.schema() + ".relay_lease l SET paused_at = NULL, paused_reason = NULL"
            + " FROM resumed r WHERE l.topic = r.topic AND l.shard = r.shard"
            + " RETURNING r.shard, r.paused_at, r.paused_reason")) {
      ps.setString(1, topic);
      ps.setObject(2, shard, Types.INTEGER);
      ps.setObject(3, shard, Types.INTEGER);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          resumed++;
          out.println("resumed " + topic + ":" + rs.getInt(1) + ", paused since " + rs.getTimestamp(2).toInstant()
              + ": " + firstSentence(rs.getString(3)));
        }
      }
    }
    return resumed;
  }

  private static String firstSentence(String reason) {
    if (reason == null) {
      return "(no reason recorded)";
    }
    int end = reason.indexOf(": the database went back in time");
    return end < 0 ? reason : reason.substring(0, end) + ": the database went back in time";
  }
}
