#pragma once
// `stripeline report FILE... --out report.html` (docs/render.md): one
// self-contained HTML page about one or more scans. For each file, a section:
// the rendered height map and intensity (PNGs inlined as base64 data: URIs),
// a few profiles plotted (inline SVG), the histogram of heights (inline SVG),
// where no point was found (a map and the fraction), and every processing
// setting the file records (its metadata document, as a table). No external
// reference of any kind (no URL, font, script or style sheet from elsewhere):
// the page opens from disk with no network. The pictures come from
// io/render.h; this file only assembles the page.
// Thread-safety: pure functions.
#include <filesystem>
#include <string>
#include <vector>

namespace stripeline {

struct ReportOptions {
  int profiles = 4;        // rows of the scan plotted as profiles, spread evenly
  int histogram_bins = 64;
  int max_width = 1600;    // the pictures' largest plot width (pixels)
  int max_height = 1200;
};

// The page. InputError naming the file (io::load_scan) when one is not a scan.
std::string report_html(const std::vector<std::filesystem::path>& files, const ReportOptions& options = {});
// report_html() written atomically as `out`; nothing is written when a file is bad.
void write_report(const std::vector<std::filesystem::path>& files, const std::filesystem::path& out,
                  const ReportOptions& options = {});

// RFC 4648 base64 (with padding): the PNGs' data: URIs.
std::string base64(const std::string& bytes);
// Text made safe inside HTML elements and attribute values (& < > " ').
std::string html_escape(const std::string& text);

}  // namespace stripeline
