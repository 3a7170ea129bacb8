package dev.handoff.benchmarks.ledger;

import java.util.List;
import java.util.Locale;

/** Small self-contained SVG charts (line and bar charts) for the benchmark report; no chart library. */
final class Svg {

  /**
   * One line of a line chart; with {@code labels} (one per point, null or empty for none) each point is also marked
   * and labelled.
   */
  record Series(String name, double[] x, double[] y, String[] labels) {

    Series(String name, double[] x, double[] y) {
      this(name, x, y, null);
    }
  }

  private static final String[] COLORS = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};
  private static final int W = 800;
  private static final int H = 400;
  private static final int LEFT = 80;
  private static final int RIGHT = 20;
  private static final int TOP = 40;
  private static final int BOTTOM = 60;

  private Svg() {}

  /** A line chart with linear axes starting at 0 (or a log10 y axis). */
  static String lineChart(String title, String xLabel, String yLabel, List<Series> series, boolean logY) {
    double xMax = 1e-9;
    double yMax = 1e-9;
    double yMinPositive = Double.MAX_VALUE;
    for (Series s : series) {
      for (int i = 0; i < s.x.length; i++) {
        xMax = Math.max(xMax, s.x[i]);
        yMax = Math.max(yMax, s.y[i]);
        if (s.y[i] > 0) {
          yMinPositive = Math.min(yMinPositive, s.y[i]);
        }
      }
    }
    StringBuilder b = header(title, xLabel, yLabel);
    double[] xTicks = ticks(xMax);
    xMax = xTicks[xTicks.length - 1];
    double yLo;
    double yHi;
    double[] yTicks;
    if (logY) {
      yLo = Math.floor(Math.log10(yMinPositive == Double.MAX_VALUE ? 1 : yMinPositive));
      yHi = Math.max(yLo + 1, Math.ceil(Math.log10(yMax)));
      yTicks = new double[(int) (yHi - yLo) + 1];
      for (int i = 0; i < yTicks.length; i++) {
        yTicks[i] = yLo + i;
      }
    } else {
      yTicks = ticks(yMax);
      yLo = 0;
      yHi = yTicks[yTicks.length - 1];
    }
    for (double t : xTicks) {
      double px = px(t, xMax);
      b.append(line(px, TOP, px, H - BOTTOM, "#eee"));
      b.append(text(px, H - BOTTOM + 18, fmt(t), "middle", 12));
    }
    for (double t : yTicks) {
      double py = py(t - yLo, yHi - yLo);
      b.append(line(LEFT, py, W - RIGHT, py, "#eee"));
      b.append(text(LEFT - 6, py + 4, logY ? fmt(Math.pow(10, t)) : fmt(t), "end", 12));
    }
    b.append(axes());
    int c = 0;
    for (Series s : series) {
      String color = COLORS[c % COLORS.length];
      StringBuilder pts = new StringBuilder();
      for (int i = 0; i < s.x.length; i++) {
        double y = s.y[i];
        if (logY) {
          if (y <= 0) {
            continue;
          }
          y = Math.log10(y) - yLo;
        }
        pts.append(String.format(Locale.ROOT, "%.1f,%.1f ", px(s.x[i], xMax), py(y, yHi - yLo)));
      }
      b.append("<polyline fill=\"none\" stroke=\"").append(color).append("\" stroke-width=\"2\" points=\"")
          .append(pts).append("\"/>\n");
      if (s.labels != null) {
        marks(b, s, color, xMax, logY, yLo, yHi);
      }
      int ly = TOP + 14 + 16 * c;
      b.append(line(W - RIGHT - 190, ly - 4, W - RIGHT - 170, ly - 4, color));
      b.append(text(W - RIGHT - 165, ly, esc(s.name), "start", 12));
      c++;
    }
    return b.append("</svg>\n").toString();
  }

  /** A marker on each point of {@code s}, and its label above it. */
  private static void marks(StringBuilder b, Series s, String color, double xMax, boolean logY, double yLo,
      double yHi) {
    for (int i = 0; i < s.x.length; i++) {
      double y = s.y[i];
      if (logY) {
        if (y <= 0) {
          continue;
        }
        y = Math.log10(y) - yLo;
      }
      double px = px(s.x[i], xMax);
      double py = py(y, yHi - yLo);
      b.append(String.format(Locale.ROOT, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>%n", px, py,
          color));
      if (i < s.labels.length && s.labels[i] != null && !s.labels[i].isEmpty()) {
        b.append(text(px, py - 8, esc(s.labels[i]), "middle", 10));
      }
    }
  }

  /** Charts of this class's size stacked one above the other in one image, with a title over them all. */
  static String stacked(String title, List<String> charts) {
    int top = 30;
    int height = top + H * charts.size();
    StringBuilder b = new StringBuilder();
    b.append("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"").append(W).append("\" height=\"").append(height)
        .append("\" viewBox=\"0 0 ").append(W).append(' ').append(height)
        .append("\" font-family=\"sans-serif\">\n");
    b.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    b.append(text(W / 2.0, 22, esc(title), "middle", 17));
    for (int i = 0; i < charts.size(); i++) {
      // A nested <svg> places each chart, with its own coordinates, at its offset.
      b.append(charts.get(i).replaceFirst("<svg ", "<svg y=\"" + (top + H * i) + "\" "));
    }
    return b.append("</svg>\n").toString();
  }

  /** A bar chart: one bar per label. */
  static String barChart(String title, String xLabel, String yLabel, List<String> labels, double[] values) {
    StringBuilder b = header(title, xLabel, yLabel);
    double max = 1e-9;
    for (double v : values) {
      max = Math.max(max, v);
    }
    double[] yTicks = ticks(max);
    double yHi = yTicks[yTicks.length - 1];
    for (double t : yTicks) {
      double py = py(t, yHi);
      b.append(line(LEFT, py, W - RIGHT, py, "#eee"));
      b.append(text(LEFT - 6, py + 4, fmt(t), "end", 12));
    }
    int n = Math.max(1, values.length);
    double slot = (double) (W - LEFT - RIGHT) / n;
    int every = Math.max(1, (int) Math.ceil(n / 12.0));
    for (int i = 0; i < values.length; i++) {
      double x = LEFT + i * slot + slot * 0.1;
      double top = py(values[i], yHi);
      b.append(String.format(Locale.ROOT,
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", x, top, slot * 0.8,
          H - BOTTOM - top, COLORS[0]));
      if (i % every == 0) {
        b.append(text(x + slot * 0.4, H - BOTTOM + 16, esc(labels.get(i)), "middle", 10));
      }
    }
    b.append(axes());
    return b.append("</svg>\n").toString();
  }

  private static StringBuilder header(String title, String xLabel, String yLabel) {
    StringBuilder b = new StringBuilder();
    b.append("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"").append(W).append("\" height=\"").append(H)
        .append("\" viewBox=\"0 0 ").append(W).append(' ').append(H)
        .append("\" font-family=\"sans-serif\">\n");
    b.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    b.append(text(W / 2.0, 22, esc(title), "middle", 16));
    b.append(text(W / 2.0 + (LEFT - RIGHT) / 2.0, H - 14, esc(xLabel), "middle", 13));
    b.append(String.format(Locale.ROOT, "<text x=\"18\" y=\"%d\" font-size=\"13\" text-anchor=\"middle\""
        + " transform=\"rotate(-90 18 %d)\">%s</text>%n", (TOP + H - BOTTOM) / 2, (TOP + H - BOTTOM) / 2,
        esc(yLabel)));
    return b;
  }

  private static String axes() {
    return line(LEFT, TOP, LEFT, H - BOTTOM, "#333") + line(LEFT, H - BOTTOM, W - RIGHT, H - BOTTOM, "#333");
  }

  private static double px(double x, double xMax) {
    return LEFT + (W - LEFT - RIGHT) * x / xMax;
  }

  private static double py(double y, double yMax) {
    return H - BOTTOM - (H - TOP - BOTTOM) * y / yMax;
  }

  /** Round tick values from 0 to at least {@code max}. */
  static double[] ticks(double max) {
    double raw = max / 5;
    double mag = Math.pow(10, Math.floor(Math.log10(raw)));
    double step = raw / mag < 1.5 ? mag : raw / mag < 3 ? 2 * mag : raw / mag < 7 ? 5 * mag : 10 * mag;
    int n = (int) Math.ceil(max / step - 1e-9);
    double[] t = new double[Math.max(1, n) + 1];
    for (int i = 0; i < t.length; i++) {
      t[i] = i * step;
    }
    return t;
  }

  private static String line(double x1, double y1, double x2, double y2, String color) {
    return String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>%n",
        x1, y1, x2, y2, color);
  }

  private static String text(double x, double y, String s, String anchor, int size) {
    return String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" text-anchor=\"%s\">%s</text>%n",
        x, y, size, anchor, s);
  }

  static String fmt(double v) {
    if (v == 0) {
      return "0";
    }
    if (Math.abs(v) >= 1_000_000) {
      return String.format(Locale.ROOT, "%.1fM", v / 1e6).replace(".0M", "M");
    }
    if (Math.abs(v) >= 10_000) {
      return String.format(Locale.ROOT, "%.0fk", v / 1e3);
    }
    if (Math.abs(v) >= 1) {
      return v == Math.rint(v) ? String.format(Locale.ROOT, "%.0f", v) : String.format(Locale.ROOT, "%.1f", v);
    }
    return String.format(Locale.ROOT, "%.2g", v);
  }

  private static String esc(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
  }
}
