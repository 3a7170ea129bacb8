package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.StreamFormat;
import dev.handoff.core.StreamMessage;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XReadGroupParams;
import redis.clients.jedis.resps.StreamEntry;

/**
 * A consumer written from docs/wire-format.md alone (raw XREADGROUP and the document's own SQL, as a Python or Node
 * service would) shares a group with a Java consumer, and the inbox fences the two: what one committed the other
 * skips.
 */
@HandoffTest
class ForeignConsumerContractTest {

  private final TestEnvironment env;

  ForeignConsumerContractTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void aMessageTheForeignConsumerCommittedButDidNotAcknowledgeIsSkippedByTheJavaConsumerThatClaimsIt()
      throws Exception {
    Fixture f = new Fixture(env, "foreign");
    f.createGroupAtStart("mixed");
    List<StreamMessage> published = f.publishMany(3);

    // The foreign consumer reads one entry, commits marker and effect with the documented SQL, and dies before
    // its XACK.
    List<Map.Entry<String, List<StreamEntry>>> read = f.redis.xreadGroup("mixed", "python-1",
        XReadGroupParams.xReadGroupParams().count(1), Map.of(f.streamKey(), StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY));
    StreamEntry entry = read.get(0).getValue().get(0);
    UUID messageId = UUID.fromString(entry.getFields().get(StreamFormat.MESSAGE_ID));
    assertThat(messageId).isEqualTo(published.get(0).messageId());
    assertThat(foreignHandle(messageId, entry.getID().toString())).as("first delivery runs the effect").isTrue();
    assertThat(foreignHandle(messageId, entry.getID().toString())).as("a redelivery is skipped").isFalse();

    try (StreamConsumer java = f.consumer("mixed").minIdle(Duration.ofMillis(200))
        .leaseRenewInterval(Duration.ofMillis(50)).build()) {
      assertThat(java.pollOnce().handled()).isEqualTo(2); // the two the foreign consumer never read
      // The foreign consumer's entry stays pending until it is idle past minIdle; then the reclaim brings it here.
      ConsumerTestKit.await("the abandoned entry reclaimed", Duration.ofSeconds(10), () -> {
        java.pollOnce();
        return f.pendingTotal("mixed") == 0;
      });
      assertThat(java.status().duplicatesSkipped()).isEqualTo(1);
    }
    assertThat(f.effectCount("mixed")).isEqualTo(3);
    assertThat(f.doubleEffects("mixed")).isZero();
    assertThat(env.queryLong("SELECT count(*) FROM inbox WHERE consumer_group = 'mixed' AND stream_id = ?",
        entry.getID().toString())).isEqualTo(1);
  }

  /** Step 2 of the document's contract, with its SQL: returns whether the effect ran. */
  private boolean foreignHandle(UUID messageId, String entryId) throws Exception {
    Matcher params = Pattern.compile("\\$(\\w+)").matcher(documentedInboxInsert());
    List<String> names = new ArrayList<>();
    StringBuilder sql = new StringBuilder();
    while (params.find()) {
      names.add(params.group(1));
      params.appendReplacement(sql, "?");
    }
    params.appendTail(sql);
    Map<String, Object> values = Map.of("group", "mixed", "message_id", messageId, "entry_id", entryId);
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      boolean inserted;
      try (PreparedStatement ps = tx.prepareStatement(sql.toString().replace("handoff.", env.schema() + "."))) {
        for (int i = 0; i < names.size(); i++) {
          ps.setObject(i + 1, values.get(names.get(i)));
        }
        try (ResultSet rs = ps.executeQuery()) {
          inserted = rs.next();
        }
      }
      if (inserted) {
        try (PreparedStatement ps = tx.prepareStatement(
            "INSERT INTO effect_foreign (consumer_group, message_id, tag) VALUES ('mixed', ?, 'python')")) {
          ps.setObject(1, messageId);
          ps.executeUpdate();
        }
      }
      tx.commit();
      return inserted;
    }
  }

  /** The first SQL block of docs/wire-format.md: the inbox insert of step 2. */
  private static String documentedInboxInsert() throws IOException {
    String doc = Files.readString(Path.of(System.getProperty("basedir", ".")).resolve("../docs/wire-format.md"),
        StandardCharsets.UTF_8);
    Matcher m = Pattern.compile("```sql\\n(.*?)```", Pattern.DOTALL).matcher(doc);
    assertThat(m.find()).as("docs/wire-format.md has the inbox insert").isTrue();
    return m.group(1).strip().replaceAll(";$", "");
  }
}
