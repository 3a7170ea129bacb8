package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.HandoffException;
import dev.handoff.migrations.HandoffMigrations;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.testing.ModuleClasses;
import dev.handoff.testkit.ConsumerTestKit;
import java.lang.reflect.Constructor;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The published libraries' API stays small (issue 28): no public record or public constructor takes more than 10
 * values, and no API package holds more than 25 public types. Read from the compiled classes of every published
 * library module.
 */
class PublicApiShapeTest {

  private static final List<Class<?>> ONE_CLASS_PER_MODULE = List.of(HandoffException.class, Outbox.class,
      Relay.class, StreamConsumer.class, ConsumerTestKit.class, HandoffMigrations.class);

  @Test
  void noPublicRecordOrConstructorTakesMoreThanTenValuesAndNoApiPackageHoldsMoreThan25Types()
      throws ClassNotFoundException {
    List<String> tooWide = new ArrayList<>();
    Map<String, Integer> typesPerApiPackage = new TreeMap<>();
    for (Class<?> type : publicTypes()) {
      if (type.isRecord() && type.getRecordComponents().length > 10) {
        tooWide.add(type.getName() + " has " + type.getRecordComponents().length + " components");
      }
      for (Constructor<?> c : type.getConstructors()) {
        if (c.getParameterCount() > 10) {
          tooWide.add(type.getName() + "'s constructor takes " + c.getParameterCount() + " values");
        }
      }
      if (!type.getPackageName().contains(".internal") && type.getEnclosingClass() == null) {
        typesPerApiPackage.merge(type.getPackageName(), 1, Integer::sum);
      }
    }
    assertThat(tooWide).isEmpty();
    assertThat(typesPerApiPackage).isNotEmpty().allSatisfy((pkg, count) -> assertThat(count).as(pkg)
        .isLessThanOrEqualTo(25));
  }

  /** The public types of the published modules, nested ones included. */
  private static List<Class<?>> publicTypes() throws ClassNotFoundException {
    List<Class<?>> types = new ArrayList<>();
    for (Class<?> module : ONE_CLASS_PER_MODULE) {
      for (String name : ModuleClasses.classNames(module)) {
        Class<?> type = Class.forName(name, false, module.getClassLoader());
        if (Modifier.isPublic(type.getModifiers()) && !type.isAnonymousClass()) {
          types.add(type);
        }
      }
    }
    return types;
  }
}
