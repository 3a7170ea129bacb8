package dev.handoff.spring.autoconfigure;

import dev.handoff.core.TopicConfig;
import dev.handoff.migrations.HandoffGrants;
import dev.handoff.outbox.Outbox;
import dev.handoff.outbox.OutboxBuilder;
import dev.handoff.spring.HandoffProperties;
import dev.handoff.spring.HandoffStartupException;
import dev.handoff.spring.TransactionalOutbox;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.sql.DataSource;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * handoff in a Spring Boot application with a {@code DataSource}: the {@link TransactionalOutbox}, the relay
 * ({@code handoff.relay.enabled}), and a consumer per {@link dev.handoff.spring.HandoffListener} topic and group,
 * whose batches run in transactions of the application's {@link PlatformTransactionManager}.
 *
 * <p>Not API: the beans it defines are documented in docs/spring.md.
 */
@AutoConfiguration(afterName = {
    "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
    "org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration",
    "org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration",
    "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
    "org.springframework.boot.autoconfigure.jdbc.DataSourceTransactionManagerAutoConfiguration",
    "org.springframework.boot.autoconfigure.orm.jpa.HibernateJpaAutoConfiguration"})
@ConditionalOnBean(DataSource.class)
@EnableConfigurationProperties(HandoffProperties.class)
public class HandoffAutoConfiguration {

  /** Finds the listener methods; static, so that it sees every bean the context creates. */
  @Bean
  static ListenerMethods handoffListenerMethods() {
    return new ListenerMethods();
  }

  @Bean
  HandoffSchema handoffSchema(DataSource dataSource, HandoffProperties properties) {
    Classpath.requireJedis(HandoffAutoConfiguration.class.getClassLoader());
    return new HandoffSchema(dataSource, properties.getSchema(), properties.isMigrate());
  }

  @Bean
  @ConditionalOnMissingBean
  TransactionalOutbox handoffOutbox(DataSource dataSource, HandoffProperties properties, HandoffSchema schema,
      BeanFactory beans) {
    schema.require(HandoffGrants.Role.APPLICATION);
    OutboxBuilder b = Outbox.builder().schema(properties.getSchema());
    topics(properties).values().forEach(b::topic);
    MeterBinding.bindIfPresent(beans, b);
    return TransactionalOutbox.of(b.build(), dataSource);
  }

  @Bean
  @ConditionalOnProperty(prefix = "handoff.relay", name = "enabled", matchIfMissing = true)
  RelayLifecycle handoffRelay(DataSource dataSource, HandoffProperties properties, HandoffSchema schema,
      BeanFactory beans) {
    return new RelayLifecycle(dataSource, RedisSettings.spec(properties.getRedis()), properties,
        topics(properties).values().stream().toList(), b -> {
          schema.require(HandoffGrants.Role.RELAY);
          MeterBinding.bindIfPresent(beans, b);
        });
  }

  @Bean
  @ConditionalOnBean(PlatformTransactionManager.class)
  ListenersLifecycle handoffListeners(ListenerMethods methods, DataSource dataSource,
      PlatformTransactionManager transactionManager, HandoffProperties properties, HandoffSchema schema,
      BeanFactory beans) {
    return new ListenersLifecycle(methods, dataSource, transactionManager, RedisSettings.spec(properties.getRedis()),
        properties, topics(properties), b -> {
          schema.require(HandoffGrants.Role.CONSUMER);
          MeterBinding.bindIfPresent(beans, b);
        });
  }

  /** The declared topics, by name. */
  static Map<String, TopicConfig> topics(HandoffProperties properties) {
    Map<String, TopicConfig> out = new LinkedHashMap<>();
    properties.getTopics().forEach((name, topic) -> {
      try {
        out.put(name, TopicConfig.of(name).withShards(topic.getShards()));
      } catch (IllegalArgumentException e) {
        throw new HandoffStartupException("handoff.topics." + name + ": " + e.getMessage(), e);
      }
    });
    return out;
  }
}
