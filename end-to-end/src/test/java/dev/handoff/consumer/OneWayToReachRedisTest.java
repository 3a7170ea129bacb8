package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.consumer.admin.StreamAdmin;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayBuilder;
import dev.handoff.relay.StreamRepair;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Redis is given one way (issue 28): every component's builder starts from a {@link RedisConnectionSpec}, cluster
 * included, and no public method of a builder or an entry point takes a Jedis type, so login, TLS and cluster nodes
 * cannot be said twice or replaced by a later call.
 */
class OneWayToReachRedisTest {

  private static final List<Class<?>> ENTRY_POINTS = List.of(Relay.class, StreamRepair.class, StreamConsumer.class,
      ListConsumer.class, StreamAdmin.class);
  private static final List<Class<?>> BUILDERS = List.of(RelayBuilder.class, StreamRepair.Builder.class,
      ConsumerBuilder.class, StreamConsumerBuilder.class, ListConsumerBuilder.class, StreamAdmin.Builder.class);

  @Test
  void everyBuilderStartsFromASpecAndNoPublicMethodTakesAJedisType() {
    List<String> builderStarts = new ArrayList<>();
    List<String> jedisParameters = new ArrayList<>();
    for (Class<?> type : concat(ENTRY_POINTS, BUILDERS)) {
      for (Method m : type.getMethods()) {
        if (!m.getDeclaringClass().getName().startsWith("dev.handoff.")) {
          continue;
        }
        if (Modifier.isStatic(m.getModifiers()) && m.getName().equals("builder")) {
          builderStarts.add(type.getSimpleName() + ".builder" + Arrays.stream(m.getParameterTypes())
              .map(Class::getSimpleName).toList());
        }
        Arrays.stream(m.getParameterTypes()).filter(p -> p.getName().startsWith("redis.clients."))
            .forEach(p -> jedisParameters.add(type.getSimpleName() + "." + m.getName() + "(" + p.getName() + ")"));
      }
    }
    assertThat(builderStarts).containsExactlyInAnyOrder(
        "Relay.builder[DataSource, RedisConnectionSpec]",
        "StreamRepair.builder[DataSource, RedisConnectionSpec]",
        "StreamConsumer.builder[DataSource, RedisConnectionSpec]",
        "ListConsumer.builder[DataSource, RedisConnectionSpec]",
        "StreamAdmin.builder[RedisConnectionSpec]");
    assertThat(jedisParameters).isEmpty();
  }

  private static List<Class<?>> concat(List<Class<?>> a, List<Class<?>> b) {
    List<Class<?>> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }
}
