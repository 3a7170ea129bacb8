package dev.handoff.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * What a module's compiled output holds, for tests that check every class or resource of a module: read from its
 * classes folder, or from its jar when the build runs past the package phase.
 */
public final class ModuleClasses {

  private ModuleClasses() {}

  /** The binary names of the classes of the module {@code member} belongs to, {@code package-info} left out. */
  public static List<String> classNames(Class<?> member) {
    return read(member, root -> {
      try (Stream<Path> files = Files.walk(root)) {
        return files.map(f -> root.relativize(f).toString())
            .filter(f -> f.endsWith(".class") && !f.endsWith("package-info.class") && !f.startsWith("META-INF"))
            .map(f -> f.substring(0, f.length() - ".class".length()).replace('/', '.'))
            .sorted().toList();
      }
    });
  }

  /** The names of the files in {@code folder} ("dev/handoff/relay") of the module {@code member} belongs to. */
  public static List<String> fileNames(Class<?> member, String folder) {
    return read(member, root -> {
      try (Stream<Path> files = Files.list(root.resolve(folder))) {
        return files.map(f -> f.getFileName().toString()).sorted().toList();
      }
    });
  }

  private interface Reader<T> {
    T read(Path root) throws IOException;
  }

  private static <T> T read(Class<?> member, Reader<T> reader) {
    try {
      Path location = Path.of(member.getProtectionDomain().getCodeSource().getLocation().toURI());
      if (Files.isDirectory(location)) {
        return reader.read(location);
      }
      try (FileSystem jar = FileSystems.newFileSystem(location)) {
        return reader.read(jar.getPath("/"));
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }
}
