package dev.handoff.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;
import picocli.CommandLine.IVersionProvider;

/** What {@code handoff --version} prints: the version the build wrote into {@code version.properties}. */
public final class HandoffVersion implements IVersionProvider {

  /** The version of this build of handoff, such as {@code 0.1.0}. */
  public static String version() {
    try (InputStream in = HandoffVersion.class.getResourceAsStream("version.properties")) {
      if (in == null) {
        throw new IllegalStateException("version.properties is missing from the classpath of handoff's CLI");
      }
      Properties p = new Properties();
      p.load(in);
      return p.getProperty("version");
    } catch (IOException e) {
      throw new UncheckedIOException("could not read handoff's version.properties", e);
    }
  }

  @Override
  public String[] getVersion() {
    return new String[] {"handoff " + version()};
  }
}
