package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerException;
import dev.handoff.consumer.HandoffConsumer;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.internal.SchemaNames;
import dev.handoff.core.internal.TopicRegistry;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Optional;
import javax.sql.DataSource;
import org.slf4j.LoggerFactory;

/** The shard count a consumer that names its topic without one reads when it is built. Stateless. */
public final class RecordedShards {

  private RecordedShards() {}

  /**
   * The count on record for {@code topic} in {@code schema}; 1, said at WARN, when none is on record yet: a relay
   * that records another count later makes the consumer's {@code start()} refuse it.
   *
   * @throws ConsumerException if the database cannot be asked
   */
  public static int read(DataSource dataSource, String schema, String topic, String group) {
    SchemaNames.requireValid(schema);
    try (Connection c = dataSource.getConnection()) {
      Optional<TopicRegistry.Declared> declared = new TopicRegistry(schema).read(c, topic);
      if (declared.isEmpty()) {
        LoggerFactory.getLogger(HandoffConsumer.class).warn("consumer group '{}': topic '{}' has no shard count on"
            + " record in schema '{}' yet, so this consumer takes 1 shard; if its relay records another count, start()"
            + " refuses it: build consumers after the relay has started, or state the count with"
            + " topic(TopicConfig.of(\"{}\").withShards(n))", group, topic, schema, topic);
        return TopicConfig.of(topic).shards();
      }
      return declared.get().shards();
    } catch (SQLException e) {
      throw new ConsumerException("could not read the shard count of topic '" + topic + "' from the database; state"
          + " it with topic(TopicConfig.of(\"" + topic + "\").withShards(n)) to build without the database", e);
    }
  }
}
