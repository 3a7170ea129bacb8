package dev.handoff.testing;

import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Marks an integration test class: it gets a {@link TestEnvironment} (own schema, own Redis key prefix) that test
 * methods, constructors and {@code @BeforeAll} methods can take as a parameter.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Inherited
@ExtendWith(HandoffTestExtension.class)
public @interface HandoffTest {

  /** Whether handoff's migrations are applied to the class's schema before its first test. */
  boolean migrate() default true;
}
