// Joins the outputs of a replay's parts (see shard_join.h): the parts are
// checked against each other first (kind, metadata, ranges), then each kind is
// joined by the writer that wrote it, so that the bytes come out as one
// replay's: PLYs by their own header (io/ply_writer.h ply_header) and their
// records copied, images decoded and written again by the same writer with the
// same options (io/image_writer.h, io/float_tiff_writer.h).
#include "io/shard_join.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "core/errors.h"
#include "core/metadata.h"
#include "io/atomic_file.h"
#include "io/float_tiff_reader.h"
#include "io/float_tiff_writer.h"
#include "io/image_reader.h"
#include "io/image_writer.h"
#include "io/metadata_reader.h"
#include "io/ply_writer.h"

namespace stripeline::io {

const char* to_string(ShardKind kind) {
  switch (kind) {
    case ShardKind::PointCloud: return "point cloud";
    case ShardKind::HeightMap: return "height map";
    case ShardKind::RangeMap: return "range map";
    case ShardKind::RangeCodes: return "range-map codes";
    case ShardKind::Xyz: return "XYZ TIFF";
  }
  return "?";
}

namespace {

namespace fs = std::filesystem;

struct Shard {
  fs::path path;
  std::string format;       // "PLY", "PNG", "TIFF"
  ShardKind kind = ShardKind::PointCloud;
  metadata::Json document;  // as written, frame_range included
  FrameRange range;
};

[[noreturn]] void refuse(const std::string& message) { throw InputError(message); }

std::string span(const FrameRange& r) { return std::to_string(r.start) + ":" + std::to_string(r.end); }

std::string kind_text(const Shard& s) { return std::string(to_string(s.kind)) + " (" + s.format + ")"; }

Shard read_shard(const fs::path& path) {
  Shard s;
  s.path = path;
  s.document = read_document(path, &s.format);
  const std::string kind = s.document.value("stripeline", std::string());
  const bool image = s.format == "PNG" || s.format == "TIFF";
  if (kind == "point-cloud" && s.format == "PLY") s.kind = ShardKind::PointCloud;
  else if (kind == "heightmap" && image) s.kind = ShardKind::HeightMap;
  else if (kind == "range-map" && image && s.document.contains("code")) s.kind = ShardKind::RangeCodes;
  else if (kind == "range-map" && s.format == "TIFF") s.kind = ShardKind::RangeMap;
  else if (kind == "xyz" && s.format == "TIFF") s.kind = ShardKind::Xyz;
  else
    refuse(path.string() + ": a " + kind + " (" + s.format +
           ") is not an output join joins (expected a PLY, height map, range map or XYZ TIFF written by replay --frames)");
  const std::optional<FrameRange> range = metadata::frame_range_of(s.document, path.string());
  if (!range)
    refuse(path.string() + ": records no frame range, so it is no part of a replay (expected an output of replay --frames START:END)");
  s.range = *range;
  return s;
}

// The first key in which two documents differ ("" when they are equal).
std::string first_difference(const metadata::Json& a, const metadata::Json& b) {
  for (const auto& [key, value] : a.items())
    if (!b.contains(key) || b.at(key) != value) return key;
  for (const auto& [key, value] : b.items())
    if (!a.contains(key)) return key;
  return "";
}

// The parts against the first, then in frame order without gap or overlap.
// Sorts `shards` by their first frame; returns the union of their ranges.
FrameRange check_fit(std::vector<Shard>& shards) {
  const Shard& a = shards.front();
  metadata::Json base = a.document;
  base.erase(metadata::kFrameRangeKey);
  for (const Shard& s : shards) {
    if (s.kind != a.kind || s.format != a.format)
      refuse(s.path.string() + ": a " + kind_text(s) + ", but " + a.path.string() + " is a " + kind_text(a) +
             " (expected one kind of output per join)");
    if (s.range.of != a.range.of)
      refuse(s.path.string() + ": a part of a recording of " + std::to_string(s.range.of) + " frames, " + a.path.string() + " of " +
             std::to_string(a.range.of) + " (expected parts of one recording)");
    if (s.range.settings != a.range.settings)
      refuse(s.path.string() + ": made with other settings than " + a.path.string() + " (settings digest " + s.range.settings + ", not " +
             a.range.settings + ": a [source], [processing], [output] or [calibration] value differs; expected parts of one replay)");
    metadata::Json d = s.document;
    d.erase(metadata::kFrameRangeKey);
    if (const std::string key = first_difference(base, d); !key.empty())
      refuse(s.path.string() + ": its metadata's '" + key + "' differs from " + a.path.string() +
             "'s (expected parts of one replay: the same recording, settings, calibration and software)");
  }
  std::stable_sort(shards.begin(), shards.end(), [](const Shard& x, const Shard& y) { return x.range.start < y.range.start; });
  for (std::size_t i = 1; i < shards.size(); ++i) {
    const Shard& p = shards[i - 1];
    const Shard& c = shards[i];
    if (c.range.start < p.range.end)
      refuse(c.path.string() + " (frames " + span(c.range) + ") overlaps " + p.path.string() + " (frames " + span(p.range) +
             ") (expected parts whose frames do not overlap)");
    if (c.range.start > p.range.end)
      refuse("frames " + span(FrameRange{p.range.end, c.range.start, p.range.of, {}}) + " are in no part: between " + p.path.string() +
             " (frames " + span(p.range) + ") and " + c.path.string() + " (frames " + span(c.range) +
             ") (expected parts that follow each other without a gap)");
  }
  return FrameRange{shards.front().range.start, shards.back().range.end, a.range.of, a.range.settings};
}

// The joined metadata: the parts' own, recording the union, or nothing when
// the union is the whole recording (then it is what one replay records).
metadata::Json joined_document(const Shard& first, const FrameRange& all) {
  metadata::Json d = first.document;
  if (all.whole())
    d.erase(metadata::kFrameRangeKey);
  else
    d[metadata::kFrameRangeKey] = metadata::frame_range(all);  // in place: the key keeps its position
  return d;
}

void check_output(const std::vector<Shard>& shards, const fs::path& out) {
  std::string ext = out.extension().string();
  for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const std::string& format = shards.front().format;
  const bool fits = (format == "PLY" && ext == ".ply") || (format == "PNG" && ext == ".png") ||
                    (format == "TIFF" && (ext == ".tif" || ext == ".tiff"));
  if (!fits)
    refuse("--out " + out.string() + ": the parts are " + format + " files (expected a " +
           (format == "PLY" ? std::string(".ply") : format == "PNG" ? std::string(".png") : std::string(".tif or .tiff")) + " name)");
  std::error_code ec;
  for (const Shard& s : shards)
    if (fs::equivalent(s.path, out, ec) || s.path.lexically_normal() == out.lexically_normal())
      refuse("--out " + out.string() + " is one of the parts (expected a new file name)");
}

std::uint64_t join_ply(const std::vector<Shard>& shards, const metadata::Json& joined, const fs::path& out) {
  std::vector<PlyFileHeader> headers;
  std::uint64_t total = 0;
  for (const Shard& s : shards) {
    headers.push_back(read_own_ply_header(s.path));
    const PlyFileHeader& h = headers.back();
    if (h.encoding != headers.front().encoding)
      refuse(s.path.string() + ": " + (h.encoding == PlyEncoding::Ascii ? "ASCII" : "binary") + ", but " + shards.front().path.string() +
             " is not (expected parts written with one --ply-format)");
    total += h.vertices;
  }
  // The comments: the first part's, its metadata comment replaced by the joined document.
  std::vector<std::string> comments = headers.front().comments;
  const auto is_metadata = [](const std::string& c) { return c.rfind(metadata::kPlyCommentKey, 0) == 0; };
  for (std::size_t i = 1; i < shards.size(); ++i) {
    std::vector<std::string> a = comments, b = headers[i].comments;
    std::erase_if(a, is_metadata);
    std::erase_if(b, is_metadata);
    if (a != b) refuse(shards[i].path.string() + ": its header comments differ from " + shards.front().path.string() + "'s (expected parts of one replay)");
  }
  for (std::string& c : comments)
    if (is_metadata(c)) c = metadata::ply_comment(joined);
  const PlyEncoding encoding = headers.front().encoding;
  AtomicFile file(out);
  const std::string header = ply_header(encoding, comments, total);
  file.write(header.data(), header.size());
  std::vector<char> buffer(std::size_t{4} << 20);
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const PlyFileHeader& h = headers[i];
    const fs::path& path = shards[i].path;
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(std::fopen(path.c_str(), "rbe"), std::fclose);
    if (!in || std::fseek(in.get(), static_cast<long>(h.bytes), SEEK_SET) != 0)
      refuse(path.string() + ": cannot be read (" + std::strerror(errno) + ")");
    std::uint64_t bytes = 0, lines = 0;
    for (std::size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), in.get())) > 0;) {
      if (encoding == PlyEncoding::Ascii) lines += static_cast<std::uint64_t>(std::count(buffer.data(), buffer.data() + n, '\n'));
      file.write(buffer.data(), n);
      bytes += n;
    }
    if (std::ferror(in.get())) refuse(path.string() + ": read error (" + std::strerror(errno) + ")");
    const bool complete = encoding == PlyEncoding::Ascii ? lines == h.vertices : bytes == h.vertices * kPlyVertexBytes;
    if (!complete)
      refuse(path.string() + ": its header says " + std::to_string(h.vertices) + " vertices, but it holds " +
             (encoding == PlyEncoding::Ascii ? std::to_string(lines) + " lines" : std::to_string(bytes) + " bytes") +
             " of records (expected a complete PLY)");
  }
  file.commit();
  return total;
}

// 16-bit height maps and range-map codes: rows decoded, written again as one map.
std::uint64_t join_codes(const std::vector<Shard>& shards, const metadata::Json& joined, const fs::path& out) {
  std::vector<std::uint16_t> codes;
  int width = 0;
  std::int64_t rows = 0;
  for (const Shard& s : shards) {
    const std::unique_ptr<ImageReader> reader = open_image(s.path);
    const ImageInfo& info = reader->info();
    if (info.format != PixelFormat::Mono16)
      refuse(s.path.string() + ": an 8-bit image (expected the 16-bit " + to_string(s.kind) + " replay writes)");
    if (width == 0) width = info.width;
    if (info.width != width)
      refuse(s.path.string() + ": " + std::to_string(info.width) + " columns, " + shards.front().path.string() + " " + std::to_string(width) +
             " (expected parts of one replay)");
    const std::size_t at = codes.size();
    codes.resize(at + static_cast<std::size_t>(info.width) * static_cast<std::size_t>(info.height));
    reader->read_rows(reinterpret_cast<std::byte*>(codes.data() + at), info.height);
    rows += info.height;
  }
  ImageWriteOptions options;
  options.description = metadata::text(joined);
  write_image(out, codes.data(), width, rows, PixelFormat::Mono16, options);
  return static_cast<std::uint64_t>(rows);
}

// Float TIFFs: a range map (one plane) or the XYZ export (three).
std::uint64_t join_floats(const std::vector<Shard>& shards, const metadata::Json& joined, const fs::path& out, std::size_t planes) {
  std::vector<std::vector<float>> all(planes);
  int width = 0;
  std::int64_t rows = 0;
  for (const Shard& s : shards) {
    FloatPlanes part = read_float_tiff(s.path);
    if (part.planes.size() != planes)
      refuse(s.path.string() + ": " + std::to_string(part.planes.size()) + " planes (expected " + std::to_string(planes) + ", as a " +
             to_string(s.kind) + " has)");
    if (width == 0) width = part.width;
    if (part.width != width)
      refuse(s.path.string() + ": " + std::to_string(part.width) + " columns, " + shards.front().path.string() + " " + std::to_string(width) +
             " (expected parts of one replay)");
    for (std::size_t k = 0; k < planes; ++k) all[k].insert(all[k].end(), part.planes[k].begin(), part.planes[k].end());
    rows += part.height;
  }
  const std::string description = metadata::text(joined);
  if (planes == 1) {
    write_float_tiff(out, all[0].data(), width, rows, description);
  } else {
    std::vector<const float*> pointers;
    for (const auto& p : all) pointers.push_back(p.data());
    ImageWriteOptions options;
    options.description = description;
    write_float_planes_tiff(out, pointers.data(), static_cast<int>(planes), width, rows, options);
  }
  return static_cast<std::uint64_t>(rows);
}

}  // namespace

JoinResult join_shards(const std::vector<fs::path>& paths, const fs::path& out) {
  if (paths.empty()) refuse("join: no parts given (expected the outputs of replay --frames, one per part)");
  std::vector<Shard> shards;
  for (const fs::path& p : paths) shards.push_back(read_shard(p));
  check_output(shards, out);
  JoinResult r;
  r.frames = check_fit(shards);
  r.kind = shards.front().kind;
  r.parts = shards.size();
  const metadata::Json joined = joined_document(shards.front(), r.frames);
  switch (r.kind) {
    case ShardKind::PointCloud: r.items = join_ply(shards, joined, out); break;
    case ShardKind::HeightMap:
    case ShardKind::RangeCodes: r.items = join_codes(shards, joined, out); break;
    case ShardKind::RangeMap: r.items = join_floats(shards, joined, out, 1); break;
    case ShardKind::Xyz: r.items = join_floats(shards, joined, out, 3); break;
  }
  return r;
}

}  // namespace stripeline::io
