// A recording's picture (io/render.h): some of its frames, grey, as the head
// saw them, with the line a height map of it records drawn over them.
#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "io/image_reader.h"
#include "io/render.h"
#include "io/render_grid.h"

namespace stripeline::io {
namespace {

constexpr Rgb8 kLine{255, 40, 40};
constexpr Rgb8 kAxis{40, 40, 40};

std::vector<std::int64_t> pick_frames(const std::filesystem::path& path, std::int64_t frames, const RecordingRenderOptions& o) {
  if (o.frame >= 0) {
    if (o.frame >= frames)
      throw InputError(path.string() + ": frame " + std::to_string(o.frame) + " is beyond the recording (expected 0.." +
                       std::to_string(frames - 1) + ")");
    return {o.frame};
  }
  const std::int64_t n = std::clamp<std::int64_t>(o.count, 1, frames);
  std::vector<std::int64_t> picked;
  for (std::int64_t k = 0; k < n; ++k) picked.push_back(n == 1 ? 0 : k * (frames - 1) / (n - 1));
  return picked;
}

// The frame's rows as grey levels (16-bit: the significant bits' top 8).
std::vector<std::uint8_t> read_frame_grey(ImageReader& reader, std::int64_t first_row, int height, int bits16) {
  const ImageInfo& info = reader.info();
  const std::size_t n = static_cast<std::size_t>(info.width) * static_cast<std::size_t>(height);
  std::vector<std::uint8_t> grey(n);
  reader.seek_row(first_row);
  if (info.format == PixelFormat::Mono8) {
    reader.read_rows(reinterpret_cast<std::byte*>(grey.data()), height);
    return grey;
  }
  std::vector<std::uint16_t> words(n);
  reader.read_rows(reinterpret_cast<std::byte*>(words.data()), height);
  for (std::size_t i = 0; i < n; ++i) grey[i] = static_cast<std::uint8_t>(std::min<std::uint32_t>(words[i] >> (bits16 - 8), 255));
  return grey;
}

}  // namespace

Canvas render_recording(const std::filesystem::path& path, const RecordingRenderOptions& o, std::string* description) {
  auto reader = open_image(path);
  const ImageInfo info = reader->info();
  const int fh = info.recorded_frame_height;
  if (fh <= 0)
    throw InputError(path.string() + ": records no frame height (expected a recording written by stripeline synth or a camera capture)");
  const std::int64_t frames = info.height / fh;
  if (frames <= 0) throw InputError(path.string() + ": shorter than one frame of " + std::to_string(fh) + " rows");
  const std::vector<std::int64_t> picked = pick_frames(path, frames, o);
  const int bits16 = info.significant_bits.known() ? info.significant_bits.bits : 16;
  const int cells = std::max(1, (info.width + o.max_width - 1) / std::max(1, o.max_width));
  const int plot_w = (info.width + cells - 1) / cells;
  const int s = plot_w >= 1200 ? 2 : 1;
  const int zoom = std::clamp(96 / fh, 1, 4);  // a thin frame is drawn taller, whole rows
  const int strip = fh * zoom, gap = 14 * s, left = 90 * s, top = 30 * s;
  Canvas c(std::max(left + plot_w + 20 * s, 420 * s), top + static_cast<int>(picked.size()) * (strip + gap) + 40 * s, kWhite);
  const std::string title = path.filename().string() + ": recording, " + std::to_string(frames) + " frames of " +
                            std::to_string(info.width) + " x " + std::to_string(fh) + " px" +
                            (o.line.empty() ? "" : "; red: the line of " + o.line.filename().string());
  draw_text(c, 6 * s, 8 * s, title, kAxis, s);
  for (std::size_t k = 0; k < picked.size(); ++k) {
    const int y0 = top + static_cast<int>(k) * (strip + gap);
    const std::vector<std::uint8_t> g = read_frame_grey(*reader, picked[k] * fh, fh, bits16);
    for (int r = 0; r < fh; ++r)
      for (int px = 0; px < plot_w; ++px) {
        const std::uint8_t v = g[static_cast<std::size_t>(r) * info.width + static_cast<std::size_t>(px * cells)];
        c.fill_rect(left + px, y0 + r * zoom, 1, zoom, Rgb8{v, v, v});
      }
    if (!o.line.empty()) {
      const std::vector<float> rows = heightmap_rows(o.line, info.width, picked[k], 1);
      for (int px = 0; px < plot_w; ++px) {
        const float row = rows[static_cast<std::size_t>(px * cells)];
        if (std::isfinite(row)) c.set(left + px, y0 + static_cast<int>(std::floor((row + 0.5f) * zoom)), kLine);
      }
    }
    const std::string name = "frame " + std::to_string(picked[k]);
    draw_text(c, left - 6 * s - text_width(name, s), y0 + strip / 2 - 3 * s, name, kAxis, s);
    c.hline(left - 1, left + plot_w, y0 + strip, kAxis);
  }
  const int below = top + static_cast<int>(picked.size()) * (strip + gap) - gap + 1;
  for (int col = 0; col < info.width; col += (info.width > 1000 ? 256 : 64)) {
    const int x = left + col / cells;
    c.vline(x, below, below + 4 * s, kAxis);
    draw_text(c, x - text_width(std::to_string(col), s) / 2, below + 6 * s, std::to_string(col), kAxis, s);
  }
  draw_text(c, left + plot_w / 2 - text_width("column [px]", s) / 2, below + 18 * s, "column [px]", kAxis, s);
  if (description) {
    metadata::Json d = metadata::document("render");
    d["source"] = path.filename().string();
    d["kind"] = "recording";
    d["frames"] = picked;
    d["frame_height"] = fh;
    d["plot"] = {{"x", left}, {"y", top}, {"width", plot_w}, {"strip", strip}, {"gap", gap}, {"cells_x", cells}, {"zoom", zoom}};
    *description = metadata::text(d);
  }
  return c;
}

}  // namespace stripeline::io
