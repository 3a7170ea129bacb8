package dev.handoff.spring.autoconfigure;

import dev.handoff.consumer.StreamConsumerBuilder;
import dev.handoff.outbox.OutboxBuilder;
import dev.handoff.relay.RelayBuilder;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Optional;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.util.ClassUtils;

/**
 * The application's {@link MeterRegistry}, bound to handoff's builders when Micrometer is on the class path and the
 * application has one registry. Micrometer is optional: no other class names its types, and this one touches them
 * only after the class path check.
 */
final class MeterBinding {

  private MeterBinding() {}

  static void bindIfPresent(BeanFactory beans, OutboxBuilder b) {
    if (micrometer()) {
      registry(beans).ifPresent(b::meterRegistry);
    }
  }

  static void bindIfPresent(BeanFactory beans, RelayBuilder b) {
    if (micrometer()) {
      registry(beans).ifPresent(b::meterRegistry);
    }
  }

  static void bindIfPresent(BeanFactory beans, StreamConsumerBuilder b) {
    if (micrometer()) {
      registry(beans).ifPresent(b::meterRegistry);
    }
  }

  private static boolean micrometer() {
    return ClassUtils.isPresent("io.micrometer.core.instrument.MeterRegistry", MeterBinding.class.getClassLoader());
  }

  private static Optional<MeterRegistry> registry(BeanFactory beans) {
    return Optional.ofNullable(beans.getBeanProvider(MeterRegistry.class).getIfUnique());
  }
}
