package dev.handoff.spring.autoconfigure;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.context.annotation.Bean;

/** The {@code handoff} Actuator endpoint, where Actuator is on the class path (either Boot line). Not API. */
@AutoConfiguration(after = HandoffAutoConfiguration.class)
@ConditionalOnBean(ListenersLifecycle.class)
@ConditionalOnClass(name = "org.springframework.boot.actuate.endpoint.annotation.Endpoint")
public class EndpointConfiguration {

  @Bean
  HandoffEndpoint handoffEndpoint(ListenersLifecycle listeners) {
    return new HandoffEndpoint(listeners);
  }
}
