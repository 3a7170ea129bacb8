package dev.handoff.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.handoff.spring.HandoffStartupException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The start-up check against the real jars of the Jedis versions each Boot line manages. */
class ClasspathTest {

  @ParameterizedTest
  @ValueSource(strings = {"7.0.0", "6.0.0"})
  void aBootManagedJedisFailsInOneLineNamingTheMavenAndGradleProperty(String version) throws Exception {
    URL jar = Path.of("target", "boot-managed-jedis", "jedis-" + version + ".jar").toUri().toURL();
    try (URLClassLoader loader = new URLClassLoader(new URL[] {jar}, ClassLoader.getPlatformClassLoader())) {
      assertThat(Classpath.jedisVersion(loader)).isEqualTo(version);
      Throwable failure = catchThrowable(() -> Classpath.requireJedis(loader));
      if (version.equals("7.0.0")) {
        assertThat(Files.readString(Path.of("..", "docs", "spring.md"))).as("docs/spring.md")
            .contains("\n" + failure.getMessage() + "\n");
      }
      assertThat(failure)
          .isInstanceOf(HandoffStartupException.class)
          .hasMessage("handoff needs Jedis 8.0 or later, and the class path has Jedis " + version + " (Spring Boot's"
              + " dependency management chooses it): set the Maven property <jedis.version>8.0.2</jedis.version>,"
              + " or in Gradle ext['jedis.version'] = '8.0.2'");
    }
  }

  @Test
  void theJedisHandoffIsBuiltWithPasses() {
    Classpath.requireJedis(ClasspathTest.class.getClassLoader());
    assertThat(Classpath.builtJedisVersion()).isEqualTo(Classpath.jedisVersion(ClasspathTest.class.getClassLoader()));
  }
}
