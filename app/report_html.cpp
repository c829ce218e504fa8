#include "app/report_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/metadata.h"
#include "io/atomic_file.h"
#include "io/render.h"

namespace stripeline {
namespace {

// Line colours of the profiles (the height colour map is for surfaces).
constexpr const char* kProfileColours[] = {"#1b6ca8", "#c0392b", "#2e8b57", "#8e44ad", "#d35400", "#444444"};
constexpr double kSvgW = 900, kSvgH = 280, kLeft = 70, kRight = 110, kTop = 16, kBottom = 44;

std::string num(double v, int decimals = 2) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

std::string img(const std::string& cls, const std::string& alt, const io::Canvas& c) {
  return "<img class=\"" + cls + "\" alt=\"" + html_escape(alt) + "\" width=\"" + std::to_string(c.width) + "\" height=\"" +
         std::to_string(c.height) + "\" src=\"data:image/png;base64," + base64(io::encode_png(c)) + "\">\n";
}

// An SVG plot frame: axes, ticks and titles for x in [x0, x1], y in [y0, y1].
struct SvgPlot {
  double x0, x1, y0, y1;
  double X(double x) const { return kLeft + (x - x0) / (x1 > x0 ? x1 - x0 : 1) * (kSvgW - kLeft - kRight); }
  double Y(double y) const { return kSvgH - kBottom - (y - y0) / (y1 > y0 ? y1 - y0 : 1) * (kSvgH - kTop - kBottom); }
  std::string axes(const std::string& xt, const std::string& yt) const {
    std::string s = "<rect x=\"" + num(kLeft) + "\" y=\"" + num(kTop) + "\" width=\"" + num(kSvgW - kLeft - kRight) +
                    "\" height=\"" + num(kSvgH - kTop - kBottom) + "\" fill=\"none\" stroke=\"#333\"/>\n";
    for (const io::Tick& t : io::axis_ticks(x0, x1, 8))
      s += "<text x=\"" + num(X(t.value)) + "\" y=\"" + num(kSvgH - kBottom + 16) + "\" text-anchor=\"middle\">" + t.label + "</text>\n";
    for (const io::Tick& t : io::axis_ticks(y0, y1, 5))
      s += "<text x=\"" + num(kLeft - 6) + "\" y=\"" + num(Y(t.value) + 4) + "\" text-anchor=\"end\">" + t.label + "</text>\n";
    s += "<text x=\"" + num((kLeft + kSvgW - kRight) / 2) + "\" y=\"" + num(kSvgH - 6) + "\" text-anchor=\"middle\">" + html_escape(xt) + "</text>\n";
    s += "<text transform=\"translate(14 " + num((kTop + kSvgH - kBottom) / 2) + ") rotate(-90)\" text-anchor=\"middle\">" + html_escape(yt) + "</text>\n";
    return s;
  }
};

std::string svg_open(const std::string& cls, const std::string& label) {
  return "<svg class=\"" + cls + "\" role=\"img\" aria-label=\"" + html_escape(label) + "\" viewBox=\"0 0 " + num(kSvgW, 0) + " " +
         num(kSvgH, 0) + "\" width=\"" + num(kSvgW, 0) + "\" height=\"" + num(kSvgH, 0) + "\">\n";
}

std::string unit_title(const std::string& name, const std::string& unit) { return name == unit ? name : name + " [" + unit + "]"; }

std::string profiles_svg(const io::Field& f, double lo, double hi, int count) {
  const SvgPlot p{f.x.at(0), f.x.at(f.width - 1), lo, hi};
  std::string s = svg_open("profiles", "profiles") + p.axes(unit_title(f.x.name, f.x.unit), unit_title(f.value_name, f.value_unit));
  const int stride = std::max(1, f.width / 1600);
  const std::int64_t n = std::clamp<std::int64_t>(count, 1, f.height);
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t row = n == 1 ? f.height / 2 : (2 * k + 1) * f.height / (2 * n);
    const char* colour = kProfileColours[k % std::size(kProfileColours)];
    std::string points;
    auto flush = [&] {
      if (!points.empty()) s += "<polyline fill=\"none\" stroke-width=\"1.2\" stroke=\"" + std::string(colour) + "\" points=\"" + points + "\"/>\n";
      points.clear();
    };
    for (int col = 0; col < f.width; col += stride) {
      const float v = f.at(col, row);
      if (!std::isfinite(v)) {
        flush();
        continue;
      }
      points += num(p.X(f.x.at(col)), 1) + "," + num(p.Y(std::clamp<double>(v, lo, hi)), 1) + " ";
    }
    flush();
    const double y = f.y.at(static_cast<double>(row));
    const std::string at = f.y.unit == "frame" ? "frame " + num(y, 0) : f.y.name + " = " + num(y, 3) + " " + f.y.unit;
    s += "<text class=\"legend\" fill=\"" + std::string(colour) + "\" x=\"" + num(kSvgW - kRight + 8) + "\" y=\"" +
         num(kTop + 10 + 14 * static_cast<double>(k)) + "\">" + html_escape(at) + "</text>\n";
  }
  return s + "</svg>\n";
}

std::string histogram_svg(const io::Field& f, double lo, double hi, int bins) {
  const std::vector<std::uint64_t> h = io::histogram(f, lo, hi, bins);
  const double top = static_cast<double>(std::max<std::uint64_t>(1, *std::max_element(h.begin(), h.end())));
  const SvgPlot p{lo, hi > lo ? hi : lo + 1, 0, top};
  std::string s = svg_open("histogram", "histogram of heights") + p.axes(unit_title(f.value_name, f.value_unit), "cells");
  const double bw = (p.x1 - p.x0) / static_cast<double>(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) {
    const double x = p.X(p.x0 + bw * static_cast<double>(i)), x2 = p.X(p.x0 + bw * static_cast<double>(i + 1));
    const io::Rgb8 c = io::height_colour((static_cast<double>(i) + 0.5) / static_cast<double>(h.size()));
    char fill[16];
    std::snprintf(fill, sizeof fill, "#%02x%02x%02x", c.r, c.g, c.b);
    s += "<rect class=\"bin\" x=\"" + num(x) + "\" y=\"" + num(p.Y(static_cast<double>(h[i]))) + "\" width=\"" + num(std::max(0.5, x2 - x - 0.5)) +
         "\" height=\"" + num(p.Y(0) - p.Y(static_cast<double>(h[i]))) + "\" fill=\"" + fill + "\"><title>" + std::to_string(h[i]) + "</title></rect>\n";
  }
  return s + "</svg>\n";
}

void settings_rows(const metadata::Json& j, const std::string& prefix, std::string& out) {
  for (const auto& [key, value] : j.items()) {
    if (value.is_object()) {
      settings_rows(value, prefix + key + ".", out);
      continue;
    }
    const std::string text = value.is_string() ? value.get<std::string>() : metadata::text(value);
    out += "<tr><th>" + html_escape(prefix + key) + "</th><td>" + html_escape(text) + "</td></tr>\n";
  }
}

std::string section(const std::filesystem::path& file, int index, const ReportOptions& o) {
  const io::ScanFields scan = io::load_scan(file);
  const io::Field& f = scan.height;
  const std::string name = file.filename().string();
  std::string s = "<section class=\"scan\" id=\"scan-" + std::to_string(index) + "\">\n<h2>" + html_escape(name) + "</h2>\n";
  s += "<p class=\"summary\">" + html_escape(scan.kind) + " (" + scan.format + "), " + std::to_string(f.width) + " &times; " +
       std::to_string(f.height) + " cells" + (scan.points ? ", " + std::to_string(scan.points) + " points" : "") + ". Unit: " +
       html_escape(scan.unit_note) + ".</p>\n";
  io::RenderOptions ro;
  ro.max_width = o.max_width, ro.max_height = o.max_height;
  ro.title = name + ": " + f.value_name + " [" + f.value_unit + "]";
  io::RenderLayout layout;
  const io::Canvas height = io::render_field(f, ro, &layout);
  s += "<h3>Height map</h3>\n" + img("heightmap", "height map of " + name, height);
  s += "<h3>Intensity</h3>\n";
  if (scan.intensity) {
    io::RenderOptions gi = ro;
    gi.palette = io::Palette::Grey, gi.title = name + ": intensity";
    s += img("intensity", "intensity of " + name, io::render_field(*scan.intensity, gi));
  } else {
    s += "<p class=\"no-intensity\">This file records no intensity (a " + html_escape(scan.kind) +
         " holds heights only; the PLY of the same scan has it).</p>\n";
  }
  double lo = INFINITY, hi = -INFINITY;  // the whole range: profiles and histogram show the extremes the picture clips
  for (const float v : f.values)
    if (std::isfinite(v)) lo = std::min<double>(lo, v), hi = std::max<double>(hi, v);
  s += "<h3>Profiles</h3>\n" + profiles_svg(f, std::isfinite(lo) ? lo : layout.lo, std::isfinite(hi) ? hi : layout.hi, o.profiles);
  s += "<h3>Histogram of heights</h3>\n" + (std::isfinite(lo) ? histogram_svg(f, lo, hi, o.histogram_bins) : "<p>No heights.</p>\n");
  const std::uint64_t missing = io::missing_cells(f);
  const double cells = static_cast<double>(f.values.size());
  s += "<h3>Where no point was found</h3>\n<p class=\"missing\">No point in <b>" + num(100.0 * static_cast<double>(missing) / cells) +
       " %</b> of the cells (" + std::to_string(missing) + " of " + std::to_string(f.values.size()) + ").</p>\n";
  io::RenderOptions mo = ro;
  mo.palette = io::Palette::Mask, mo.title = name + ": where a point was found";
  s += img("nopoint", "where no point was found in " + name, io::render_field(f, mo));
  s += "<h3>Settings</h3>\n<table class=\"settings\">\n";
  settings_rows(scan.document, "", s);
  return s + "</table>\n</section>\n";
}

constexpr const char* kStyle =
    "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1900px}"
    "img{max-width:100%;height:auto;image-rendering:pixelated;border:1px solid #ccc}"
    "svg{max-width:100%;height:auto;font-size:11px;font-family:sans-serif}"
    "table.settings{border-collapse:collapse;font-size:13px}table.settings th,table.settings td{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}"
    "table.settings th{font-weight:normal;color:#555;font-family:monospace}section.scan{border-top:2px solid #888;margin-top:2em}";

}  // namespace

std::string base64(const std::string& bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const auto v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) | static_cast<unsigned char>(bytes[i + 2]);
    out += {kAlphabet[(v >> 18) & 63], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], kAlphabet[v & 63]};
  }
  if (i < bytes.size()) {
    const bool two = i + 1 < bytes.size();
    const auto v = (static_cast<unsigned char>(bytes[i]) << 16) | (two ? static_cast<unsigned char>(bytes[i + 1]) << 8 : 0);
    out += {kAlphabet[(v >> 18) & 63], kAlphabet[(v >> 12) & 63], two ? kAlphabet[(v >> 6) & 63] : '=', '='};
  }
  return out;
}

std::string html_escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string report_html(const std::vector<std::filesystem::path>& files, const ReportOptions& o) {
  std::string body;
  std::string index = "<ul class=\"files\">\n";
  for (std::size_t i = 0; i < files.size(); ++i) {
    body += section(files[i], static_cast<int>(i), o);
    index += "<li><a href=\"#scan-" + std::to_string(i) + "\">" + html_escape(files[i].filename().string()) + "</a></li>\n";
  }
  const std::string software = metadata::document("report").value("software", std::string("stripeline"));
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>stripeline report</title>\n"
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\">\n<style>" +
         std::string(kStyle) + "</style>\n</head>\n<body>\n<h1>stripeline report</h1>\n<p>Made by " + html_escape(software) +
         ". Heights in the colour map of every stripeline picture (dark = low, light = high; grey: no point found); the scale bar "
         "beside each picture gives the values, the axes the file's unit.</p>\n" + index + "</ul>\n" + body + "</body>\n</html>\n";
}

void write_report(const std::vector<std::filesystem::path>& files, const std::filesystem::path& out, const ReportOptions& o) {
  io::write_file_atomically(out, report_html(files, o));
}

}  // namespace stripeline
