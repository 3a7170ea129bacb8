package dev.handoff.testing;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * The one JUnit extension behind every integration test: one {@link TestEnvironment} per test class, created
 * before its first test and dropped (schema and Redis keys) after its last.
 */
public final class HandoffTestExtension implements BeforeAllCallback, AfterAllCallback, ParameterResolver {

  private static final ExtensionContext.Namespace NAMESPACE =
      ExtensionContext.Namespace.create(HandoffTestExtension.class);

  @Override
  public void beforeAll(ExtensionContext context) {
    environment(context);
  }

  @Override
  public void afterAll(ExtensionContext context) {
    TestEnvironment env = context.getStore(NAMESPACE).remove(key(context), TestEnvironment.class);
    if (env != null) {
      env.close();
    }
  }

  @Override
  public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
    return parameter.getParameter().getType() == TestEnvironment.class;
  }

  @Override
  public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
    return environment(context);
  }

  private static TestEnvironment environment(ExtensionContext context) {
    Class<?> testClass = context.getRequiredTestClass();
    while (testClass.getEnclosingClass() != null && !testClass.isAnnotationPresent(HandoffTest.class)) {
      testClass = testClass.getEnclosingClass();
    }
    Class<?> owner = testClass;
    HandoffTest settings = owner.getAnnotation(HandoffTest.class);
    boolean migrate = settings == null || settings.migrate();
    return context
        .getRoot()
        .getStore(NAMESPACE)
        .computeIfAbsent(key(owner), k -> TestEnvironment.create(owner, migrate), TestEnvironment.class);
  }

  private static String key(ExtensionContext context) {
    Class<?> testClass = context.getRequiredTestClass();
    while (testClass.getEnclosingClass() != null && !testClass.isAnnotationPresent(HandoffTest.class)) {
      testClass = testClass.getEnclosingClass();
    }
    return key(testClass);
  }

  private static String key(Class<?> testClass) {
    return testClass.getName();
  }
}
