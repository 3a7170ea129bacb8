package dev.handoff.spring.autoconfigure;

import dev.handoff.consumer.StreamConsumerBuilder;
import dev.handoff.outbox.OutboxBuilder;
import dev.handoff.outbox.RelayBuilder;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.util.ClassUtils;

/**
 * The application's {@link MeterRegistry}, bound to handoff's builders when Micrometer is on the class path and the
 * application has one registry. Micrometer is optional: no other class names its types.
 */
final class MeterBinding {

  private final MeterRegistry registry;

  private MeterBinding(MeterRegistry registry) {
    this.registry = registry;
  }

  /** The binding of the application's registry, or null without Micrometer or without exactly one registry. */
  static MeterBinding of(BeanFactory beans) {
    if (!ClassUtils.isPresent("io.micrometer.core.instrument.MeterRegistry", MeterBinding.class.getClassLoader())) {
      return null;
    }
    MeterRegistry registry = beans.getBeanProvider(MeterRegistry.class).getIfUnique();
    return registry == null ? null : new MeterBinding(registry);
  }

  void bind(OutboxBuilder b) {
    b.meterRegistry(registry);
  }

  void bind(RelayBuilder b) {
    b.meterRegistry(registry);
  }

  void bind(StreamConsumerBuilder b) {
    b.meterRegistry(registry);
  }
}
