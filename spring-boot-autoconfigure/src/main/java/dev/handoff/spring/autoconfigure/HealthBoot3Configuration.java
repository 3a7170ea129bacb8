package dev.handoff.spring.autoconfigure;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.context.annotation.Bean;

/** The {@code handoff} health contributor on Spring Boot 3.5 ({@code spring-boot-actuator}). Not API. */
@AutoConfiguration(after = HandoffAutoConfiguration.class)
@ConditionalOnBean(HandoffSchema.class)
@ConditionalOnClass(name = "org.springframework.boot.actuate.health.HealthIndicator")
public class HealthBoot3Configuration {

  @Bean(name = "handoffHealthIndicator")
  HealthIndicator handoffHealthIndicator(ObjectProvider<RelayLifecycle> relay,
      ObjectProvider<ListenersLifecycle> listeners) {
    HandoffHealth health = new HandoffHealth(relay, listeners);
    return () -> {
      HandoffHealth.Reading r = health.read();
      return (r.up() ? Health.up() : Health.down()).withDetails(r.details()).build();
    };
  }
}
