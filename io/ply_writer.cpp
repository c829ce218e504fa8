// Streaming PLY writer and a small PLY reader.
//
// Header layout written by PlyWriter:
//   ply
//   format binary_little_endian 1.0        (or: format ascii 1.0)
//   comment <each user comment>
//   comment padding ....................   <- resized at finish()
//   element vertex <N>
//   property float x, double y, float z, float intensity, float quality,
//            uchar slot, ushort width
//   end_header
// Binary records are packed (27 bytes, no padding), little-endian.
// The padding comment sits before the element line (rply, used by Open3D and
// CloudCompare, does not accept a comment between an element's properties).
// The vertex count has at most 20 digits; the padding comment carries the
// digits the count does not use, so the header has the same length whatever N
// is and finish() rewrites it in place.
#include "io/ply_writer.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include "core/errors.h"
#include "io/atomic_file.h"

namespace stripeline::io {
namespace {

namespace fs = std::filesystem;

static_assert(std::numeric_limits<float>::is_iec559, "PLY float is IEEE 754 binary32");
static_assert(std::numeric_limits<double>::is_iec559, "PLY double is IEEE 754 binary64");

constexpr std::size_t kCountDigits = 20;  // digits of the largest uint64
constexpr std::size_t kBufferBytes = std::size_t{1} << 20;

[[noreturn]] void input_error(const fs::path& path, const std::string& message) {
  throw InputError(path.string() + ": " + message);
}

}  // namespace

std::string ply_header(PlyEncoding encoding, const std::vector<std::string>& comments, std::uint64_t count) {
  std::string h = "ply\n";
  h += encoding == PlyEncoding::Ascii ? "format ascii 1.0\n" : "format binary_little_endian 1.0\n";
  for (const std::string& c : comments) h += "comment " + c + "\n";
  const std::string digits = std::to_string(count);
  h += "comment padding " + std::string(kCountDigits - digits.size() + 1, '.') + "\n";
  h += "element vertex " + digits + "\n";
  h += "property float x\nproperty double y\nproperty float z\nproperty float intensity\nproperty float quality\n"
       "property uchar slot\nproperty ushort width\nend_header\n";
  return h;
}

namespace {

// Stores `value` little-endian at p; returns the byte after it.
template <class T>
unsigned char* store_le(unsigned char* p, T value) {
  unsigned char b[sizeof(T)];
  std::memcpy(b, &value, sizeof(T));
  for (std::size_t i = 0; i < sizeof(T); ++i) p[i] = std::endian::native == std::endian::little ? b[i] : b[sizeof(T) - 1 - i];
  return p + sizeof(T);
}

}  // namespace

void pack_ply_vertex(const PlyVertex& v, unsigned char* p) {
  p = store_le(p, v.x);
  p = store_le(p, v.y);
  p = store_le(p, v.z);
  p = store_le(p, v.intensity);
  p = store_le(p, v.quality);
  p = store_le(p, v.slot);
  store_le(p, v.width);
}

namespace {
}  // namespace

class PlyWriter::Impl {
 public:
  Impl(const fs::path& path, PlyEncoding encoding, std::vector<std::string> comments)
      : file_(path), encoding_(encoding), comments_(std::move(comments)) {
    file_.require_seekable("a PLY (its vertex count is written into the header at the end)");
    for (std::string& c : comments_) {
      std::replace_if(c.begin(), c.end(), [](char ch) { return ch == '\n' || ch == '\r'; }, ' ');
    }
    header_ = ply_header(encoding_, comments_, 0);
    file_.write(header_.data(), header_.size());
    buffer_.reserve(kBufferBytes);
  }

  void write(const PlyVertex* v, std::size_t count) {
    if (finished_) throw std::logic_error("PlyWriter::write after finish() for " + file_.target().string());
    if (encoding_ == PlyEncoding::BinaryLittleEndian) {
      for (std::size_t i = 0; i < count; ++i) {
        if (buffer_.size() + kPlyVertexBytes > kBufferBytes) flush();
        const std::size_t at = buffer_.size();
        buffer_.resize(at + kPlyVertexBytes);
        pack_ply_vertex(v[i], reinterpret_cast<unsigned char*>(buffer_.data() + at));
      }
      return;
    }
    // ASCII: shortest representation that reads back to the same float (y: double).
    for (std::size_t i = 0; i < count; ++i) {
      if (buffer_.size() + 7 * 32 > kBufferBytes) flush();
      auto put = [&](auto value, char sep) {
        char text[32];  // a double's shortest form is at most 24 characters
        const auto r = std::to_chars(text, text + sizeof text, value);
        buffer_.append(text, r.ec == std::errc() ? r.ptr : text);
        buffer_.push_back(sep);
      };
      put(v[i].x, ' ');
      put(v[i].y, ' ');
      put(v[i].z, ' ');
      put(v[i].intensity, ' ');
      put(v[i].quality, ' ');
      put(static_cast<unsigned>(v[i].slot), ' ');
      put(static_cast<unsigned>(v[i].width), '\n');
    }
  }

  void write_records(const unsigned char* records, std::size_t count) {
    if (finished_) throw std::logic_error("PlyWriter::write after finish() for " + file_.target().string());
    if (encoding_ != PlyEncoding::BinaryLittleEndian) throw std::logic_error("PlyWriter::write_records on an ASCII PLY: " + file_.target().string());
    const std::size_t bytes = count * kPlyVertexBytes;
    if (buffer_.size() + bytes > kBufferBytes) {
      flush();
      if (bytes >= kBufferBytes / 2) {  // large: straight to the file, no copy through the buffer
        file_.write(reinterpret_cast<const char*>(records), bytes);
        return;
      }
    }
    buffer_.append(reinterpret_cast<const char*>(records), bytes);
  }
  PlyEncoding encoding() const { return encoding_; }

  void finish(std::uint64_t count) {
    if (finished_) throw std::logic_error("PlyWriter::finish called twice for " + file_.target().string());
    finished_ = true;
    flush();
    const std::string header = ply_header(encoding_, comments_, count);
    if (header.size() != header_.size()) {
      throw std::logic_error("PlyWriter: the rewritten header changed length");  // cannot happen
    }
    file_.seek(0);
    file_.write(header.data(), header.size());
    file_.commit();
  }

 private:
  void flush() {
    file_.write(buffer_.data(), buffer_.size());
    buffer_.clear();
  }

  AtomicFile file_;
  PlyEncoding encoding_;
  std::vector<std::string> comments_;
  std::string header_;
  std::string buffer_;
  bool finished_ = false;
};

PlyWriter::PlyWriter(const std::filesystem::path& path, PlyEncoding encoding, std::vector<std::string> comments)
    : impl_(std::make_unique<Impl>(path, encoding, std::move(comments))) {}

PlyWriter::~PlyWriter() = default;  // an unfinished file is discarded by AtomicFile

void PlyWriter::write(const PlyVertex* vertices, std::size_t count) {
  if (count == 0) return;
  impl_->write(vertices, count);
  count_ += count;
}

void PlyWriter::write_records(const unsigned char* records, std::size_t count) {
  if (count == 0) return;
  impl_->write_records(records, count);
  count_ += count;
}

PlyEncoding PlyWriter::encoding() const { return impl_->encoding(); }

void PlyWriter::finish() { impl_->finish(count_); }

// ---------------------------------------------------------------------------
// read_ply
namespace {

enum class PlyType { Int8, UInt8, Int16, UInt16, Int32, UInt32, Float32, Float64 };

bool parse_type(std::string_view name, PlyType& type) {
  static const struct {
    const char* name;
    PlyType type;
  } table[] = {{"char", PlyType::Int8},     {"int8", PlyType::Int8},       {"uchar", PlyType::UInt8},
               {"uint8", PlyType::UInt8},   {"short", PlyType::Int16},     {"int16", PlyType::Int16},
               {"ushort", PlyType::UInt16}, {"uint16", PlyType::UInt16},   {"int", PlyType::Int32},
               {"int32", PlyType::Int32},   {"uint", PlyType::UInt32},     {"uint32", PlyType::UInt32},
               {"float", PlyType::Float32}, {"float32", PlyType::Float32}, {"double", PlyType::Float64},
               {"float64", PlyType::Float64}};
  for (const auto& t : table) {
    if (name == t.name) {
      type = t.type;
      return true;
    }
  }
  return false;
}

std::size_t type_size(PlyType t) {
  switch (t) {
    case PlyType::Int8:
    case PlyType::UInt8: return 1;
    case PlyType::Int16:
    case PlyType::UInt16: return 2;
    case PlyType::Int32:
    case PlyType::UInt32:
    case PlyType::Float32: return 4;
    case PlyType::Float64: return 8;
  }
  return 0;
}

struct PlyProperty {
  std::string name;
  PlyType type = PlyType::Float32;
  bool is_list = false;
  PlyType count_type = PlyType::UInt8;
};

struct PlyElement {
  std::string name;
  std::uint64_t count = 0;
  std::vector<PlyProperty> properties;
};

enum class PlyFormat { Ascii, BinaryLittle, BinaryBig };

struct FileCloser {
  void operator()(std::FILE* f) const noexcept {
    if (f != nullptr) std::fclose(f);
  }
};

// Buffered byte source over a FILE.
class Source {
 public:
  Source(const fs::path& path, std::FILE* f) : path_(path), f_(f), buffer_(kBufferBytes) {}

  // Next byte, or -1 at the end of the file.
  int get() {
    if (pos_ == end_ && !fill()) return -1;
    return static_cast<unsigned char>(buffer_[pos_++]);
  }
  bool read(void* out, std::size_t bytes) { return read_some(out, bytes) == bytes; }
  // Copies up to `bytes` bytes; fewer only at the end of the file.
  std::size_t read_some(void* out, std::size_t bytes) {
    auto* o = static_cast<char*>(out);
    const std::size_t wanted = bytes;
    while (bytes > 0) {
      if (pos_ == end_ && !fill()) return wanted - bytes;
      const std::size_t n = std::min(bytes, end_ - pos_);
      std::memcpy(o, buffer_.data() + pos_, n);
      pos_ += n;
      o += n;
      bytes -= n;
    }
    return wanted;
  }
  bool skip(std::uint64_t bytes) {
    while (bytes > 0) {
      if (pos_ == end_ && !fill()) return false;
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(bytes, end_ - pos_));
      pos_ += n;
      bytes -= n;
    }
    return true;
  }
  // Next white-space separated token (ASCII body); empty at the end.
  std::string_view token() {
    token_.clear();
    int c = get();
    while (c != -1 && std::isspace(c)) c = get();
    while (c != -1 && !std::isspace(c)) {
      token_.push_back(static_cast<char>(c));
      if (token_.size() > 256) input_error(path_, "malformed ASCII PLY: a value is longer than 256 characters");
      c = get();
    }
    return token_;
  }
  // One header line without its end of line; false at the end of the file.
  bool line(std::string& out) {
    out.clear();
    int c = get();
    if (c == -1) return false;
    while (c != -1 && c != '\n') {
      out.push_back(static_cast<char>(c));
      if (out.size() > 4096) input_error(path_, "malformed PLY header: a line is longer than 4096 characters");
      c = get();
    }
    if (!out.empty() && out.back() == '\r') out.pop_back();
    return true;
  }

 private:
  bool fill() {
    pos_ = 0;
    end_ = std::fread(buffer_.data(), 1, buffer_.size(), f_);
    if (end_ == 0 && std::ferror(f_) != 0) input_error(path_, std::string("read error: ") + std::strerror(errno));
    return end_ > 0;
  }

  const fs::path& path_;
  std::FILE* f_;
  std::vector<char> buffer_;
  std::size_t pos_ = 0, end_ = 0;
  std::string token_;
};

std::vector<std::string_view> split(std::string_view s) {
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    const std::size_t start = i;
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i > start) words.push_back(s.substr(start, i - start));
  }
  return words;
}

double decode_binary(const unsigned char* p, PlyType type, bool big_endian) {
  unsigned char b[8];
  const std::size_t n = type_size(type);
  const bool swap = big_endian != (std::endian::native == std::endian::big);
  for (std::size_t i = 0; i < n; ++i) b[i] = swap ? p[n - 1 - i] : p[i];
  switch (type) {
    case PlyType::Int8: return static_cast<std::int8_t>(b[0]);
    case PlyType::UInt8: return b[0];
    case PlyType::Int16: { std::int16_t v; std::memcpy(&v, b, 2); return v; }
    case PlyType::UInt16: { std::uint16_t v; std::memcpy(&v, b, 2); return v; }
    case PlyType::Int32: { std::int32_t v; std::memcpy(&v, b, 4); return v; }
    case PlyType::UInt32: { std::uint32_t v; std::memcpy(&v, b, 4); return v; }
    case PlyType::Float32: { float v; std::memcpy(&v, b, 4); return v; }
    case PlyType::Float64: { double v; std::memcpy(&v, b, 8); return v; }
  }
  return 0.0;
}

}  // namespace

namespace {

struct PlyHeader {
  PlyFormat format = PlyFormat::Ascii;
  std::vector<PlyElement> elements;
  std::uint64_t bytes = 0;  // the header's length in the file
};

PlyHeader read_header(const fs::path& path, Source& src) {
  std::string line;
  if (!src.line(line) || line != "ply") input_error(path, "not a PLY file (expected the first line to be 'ply')");
  std::optional<PlyFormat> format;
  PlyHeader h;
  std::vector<PlyElement>& elements = h.elements;
  std::uint64_t& header_bytes = h.bytes;
  header_bytes = 4;
  bool ended = false;
  while (src.line(line)) {
    header_bytes += line.size() + 1;
    const auto w = split(line);
    if (w.empty()) continue;
    if (w[0] == "comment" || w[0] == "obj_info") continue;
    if (w[0] == "end_header") {
      ended = true;
      break;
    }
    if (w[0] == "format") {
      if (w.size() != 3 || w[2] != "1.0") input_error(path, "malformed PLY format line '" + line + "'");
      if (w[1] == "ascii") format = PlyFormat::Ascii;
      else if (w[1] == "binary_little_endian") format = PlyFormat::BinaryLittle;
      else if (w[1] == "binary_big_endian") format = PlyFormat::BinaryBig;
      else input_error(path, "unsupported PLY format '" + std::string(w[1]) + "' (expected ascii or binary)");
    } else if (w[0] == "element") {
      std::uint64_t count = 0;
      if (w.size() != 3 || std::from_chars(w[2].data(), w[2].data() + w[2].size(), count).ec != std::errc() ||
          std::from_chars(w[2].data(), w[2].data() + w[2].size(), count).ptr != w[2].data() + w[2].size()) {
        input_error(path, "malformed PLY element line '" + line + "' (expected 'element <name> <count>')");
      }
      elements.push_back(PlyElement{std::string(w[1]), count, {}});
    } else if (w[0] == "property") {
      if (elements.empty()) input_error(path, "PLY property before any element: '" + line + "'");
      PlyProperty p;
      if (w.size() == 3 && parse_type(w[1], p.type)) {
        p.name = w[2];
      } else if (w.size() == 5 && w[1] == "list" && parse_type(w[2], p.count_type) && parse_type(w[3], p.type)) {
        p.is_list = true;
        p.name = w[4];
      } else {
        input_error(path, "unsupported PLY property line '" + line + "'");
      }
      elements.back().properties.push_back(p);
    } else {
      input_error(path, "unexpected PLY header line '" + line + "'");
    }
  }
  if (!ended) input_error(path, "PLY header has no end_header (truncated or not a PLY file)");
  if (!format) input_error(path, "PLY header has no format line");
  h.format = *format;
  return h;
}

// Which property of the vertex element is which (-1: absent).
struct VertexColumns {
  int ix = -1, iy = -1, iz = -1, ii = -1, iq = -1, is = -1, iw = -1;
};

VertexColumns vertex_columns(const fs::path& path, const PlyElement& vertex) {
  VertexColumns c;
  int &ix = c.ix, &iy = c.iy, &iz = c.iz, &ii = c.ii, &iq = c.iq, &is = c.is, &iw = c.iw;
  for (std::size_t k = 0; k < vertex.properties.size(); ++k) {
    const PlyProperty& p = vertex.properties[k];
    int* slot = p.name == "x"           ? &ix
                : p.name == "y"         ? &iy
                : p.name == "z"         ? &iz
                : p.name == "intensity" ? &ii
                : p.name == "quality"   ? &iq
                : p.name == "slot"      ? &is
                : p.name == "width"     ? &iw
                                        : nullptr;
    if (slot == nullptr) continue;
    if (p.is_list) input_error(path, "PLY vertex property '" + p.name + "' is a list (expected a scalar)");
    *slot = static_cast<int>(k);
  }
  if (ix < 0 || iy < 0 || iz < 0) input_error(path, "PLY vertex element lacks x, y or z (expected float x, y, z)");

  return c;
}

// PlyWriter's own layout: only the vertex element, exactly float x, double
// y, float z, float intensity, float quality, uchar slot, ushort width,
// little-endian.
bool own_layout(const PlyHeader& h, const PlyElement& vertex, const VertexColumns& c) {
  static constexpr PlyType kOwn[] = {PlyType::Float32, PlyType::Float64, PlyType::Float32, PlyType::Float32,
                                     PlyType::Float32, PlyType::UInt8,   PlyType::UInt16};
  bool own = h.format == PlyFormat::BinaryLittle && h.elements.size() == 1 && vertex.properties.size() == 7 && c.ix == 0 && c.iy == 1 &&
             c.iz == 2 && c.ii == 3 && c.iq == 4 && c.is == 5 && c.iw == 6;
  for (std::size_t k = 0; own && k < 7; ++k) own = !vertex.properties[k].is_list && vertex.properties[k].type == kOwn[k];
  return own;
}

// The fast path: whole records, a chunk at a time.
void read_own_layout(const fs::path& path, Source& src, const PlyElement& vertex, std::vector<PlyVertex>& out) {
  constexpr std::uint64_t kChunk = 1 << 16;
  std::vector<unsigned char> records(static_cast<std::size_t>(kChunk) * kPlyVertexBytes);
  for (std::uint64_t done = 0; done < vertex.count;) {
    const std::uint64_t n = std::min(kChunk, vertex.count - done);
    const std::size_t got = src.read_some(records.data(), static_cast<std::size_t>(n) * kPlyVertexBytes);
    if (got != n * kPlyVertexBytes) {
      input_error(path, "PLY ends or is malformed in element 'vertex' item " + std::to_string(done + got / kPlyVertexBytes) +
                            " of " + std::to_string(vertex.count));
    }
    for (std::uint64_t i = 0; i < n; ++i) {
      const unsigned char* r = records.data() + i * kPlyVertexBytes;
      PlyVertex v;
      v.x = static_cast<float>(decode_binary(r, PlyType::Float32, false));
      v.y = decode_binary(r + 4, PlyType::Float64, false);
      v.z = static_cast<float>(decode_binary(r + 12, PlyType::Float32, false));
      v.intensity = static_cast<float>(decode_binary(r + 16, PlyType::Float32, false));
      v.quality = static_cast<float>(decode_binary(r + 20, PlyType::Float32, false));
      v.slot = r[24];
      v.width = static_cast<std::uint16_t>(r[25] | (r[26] << 8));
      out.push_back(v);
    }
    done += n;
  }
}

// Any other layout: property by property, ASCII or binary of either order.
void read_generic(const fs::path& path, Source& src, const PlyHeader& h, const PlyElement& vertex, const VertexColumns& c,
                  std::vector<PlyVertex>& out) {
  const auto& elements = h.elements;
  const int ix = c.ix, iy = c.iy, iz = c.iz, ii = c.ii, iq = c.iq, is = c.is, iw = c.iw;
  const bool ascii = h.format == PlyFormat::Ascii;
  const bool big = h.format == PlyFormat::BinaryBig;
  std::vector<double> values;
  for (const PlyElement& element : elements) {
    const bool is_vertex = &element == &vertex;
    values.assign(element.properties.size(), 0.0);
    for (std::uint64_t n = 0; n < element.count; ++n) {
      for (std::size_t k = 0; k < element.properties.size(); ++k) {
        const PlyProperty& p = element.properties[k];
        auto fail = [&]() {
          input_error(path, "PLY ends or is malformed in element '" + element.name + "' item " + std::to_string(n) +
                                " of " + std::to_string(element.count) + " (property '" + p.name + "')");
        };
        if (ascii) {
          // A float property is parsed as a float (no double rounding).
          auto number = [&](bool as_float = false) -> double {
            std::string_view t = src.token();
            if (!t.empty() && t[0] == '+') t.remove_prefix(1);
            double v = 0.0;
            std::from_chars_result r{};
            if (as_float) {
              float f = 0.0f;
              r = std::from_chars(t.data(), t.data() + t.size(), f);
              v = f;
            } else {
              r = std::from_chars(t.data(), t.data() + t.size(), v);
            }
            if (t.empty() || r.ec != std::errc() || r.ptr != t.data() + t.size()) fail();
            return v;
          };
          if (p.is_list) {
            const double len = number();
            if (len < 0 || len > 1e9) fail();
            for (std::uint64_t j = 0; j < static_cast<std::uint64_t>(len); ++j) (void)number();
          } else {
            values[k] = number(p.type == PlyType::Float32);
          }
        } else {
          unsigned char b[8];
          if (p.is_list) {
            if (!src.read(b, type_size(p.count_type))) fail();
            const double len = decode_binary(b, p.count_type, big);
            if (len < 0) fail();
            if (!src.skip(static_cast<std::uint64_t>(len) * type_size(p.type))) fail();
          } else {
            if (!src.read(b, type_size(p.type))) fail();
            values[k] = decode_binary(b, p.type, big);
          }
        }
      }
      if (is_vertex) {
        PlyVertex v;
        v.x = static_cast<float>(values[ix]);
        v.y = values[iy];
        v.z = static_cast<float>(values[iz]);
        v.intensity = ii >= 0 ? static_cast<float>(values[ii]) : 0.0f;
        v.quality = iq >= 0 ? static_cast<float>(values[iq]) : 0.0f;
        v.slot = is >= 0 && values[is] >= 0 && values[is] <= 255 ? static_cast<std::uint8_t>(values[is]) : std::uint8_t{0};
        v.width = iw >= 0 && values[iw] >= 0 && values[iw] <= 65535 ? static_cast<std::uint16_t>(values[iw]) : std::uint16_t{0};
        out.push_back(v);
      }
    }
    if (is_vertex) break;  // elements after the vertices are not needed
  }
}

}  // namespace

PlyFileHeader read_own_ply_header(const std::filesystem::path& path) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rbe"));
  if (!file) input_error(path, std::string("cannot open: ") + std::strerror(errno));
  // The header ends at the first "end_header" line; ours stay far below 1 MiB.
  std::string head(std::size_t{1} << 20, '\0');
  head.resize(std::fread(head.data(), 1, head.size(), file.get()));
  const auto not_ours = [&](const std::string& why) {
    input_error(path, why + " (expected a PLY as stripeline writes it: replay's --ply)");
  };
  const std::size_t end = head.find("\nend_header\n");
  if (head.compare(0, 4, "ply\n") != 0 || end == std::string::npos) not_ours("not a PLY, or its header does not end within 1 MiB");
  PlyFileHeader h;
  h.bytes = end + std::string_view("\nend_header\n").size();
  std::size_t at = 4;
  const auto line = [&]() {
    const std::size_t eol = head.find('\n', at);
    std::string_view l(head.data() + at, eol - at);
    at = eol + 1;
    return l;
  };
  const std::string_view format = line();
  if (format == "format ascii 1.0") h.encoding = PlyEncoding::Ascii;
  else if (format != "format binary_little_endian 1.0") not_ours("format line '" + std::string(format) + "'");
  constexpr std::string_view kComment = "comment ", kPadding = "comment padding ", kElement = "element vertex ";
  std::string_view l = line();
  for (; l.substr(0, kComment.size()) == kComment && l.substr(0, kPadding.size()) != kPadding; l = line())
    h.comments.emplace_back(l.substr(kComment.size()));
  if (l.substr(0, kPadding.size()) != kPadding) not_ours("no padding comment");
  l = line();
  const std::string_view digits = l.substr(std::min(l.size(), kElement.size()));
  const auto parsed = std::from_chars(digits.data(), digits.data() + digits.size(), h.vertices);
  if (l.substr(0, kElement.size()) != kElement || parsed.ec != std::errc() || parsed.ptr != digits.data() + digits.size())
    not_ours("no 'element vertex N' after the padding");
  if (head.compare(0, h.bytes, ply_header(h.encoding, h.comments, h.vertices)) != 0) not_ours("a header PlyWriter would not write");
  return h;
}

std::vector<PlyVertex> read_ply(const std::filesystem::path& path) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (!fs::exists(st)) input_error(path, "file not found (expected a PLY file)");
  if (!fs::is_regular_file(st)) input_error(path, "not a regular file (expected a PLY file)");
  const std::uintmax_t file_size = fs::file_size(path, ec);
  if (file_size == 0) input_error(path, "file is empty (0 bytes; expected a PLY file)");
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rbe"));
  if (!file) input_error(path, std::string("cannot open: ") + std::strerror(errno));
  Source src(path, file.get());
  const PlyHeader header = read_header(path, src);
  auto vertex_it = std::find_if(header.elements.begin(), header.elements.end(), [](const PlyElement& e) { return e.name == "vertex"; });
  if (vertex_it == header.elements.end()) input_error(path, "PLY has no vertex element");
  const PlyElement& vertex = *vertex_it;
  const VertexColumns columns = vertex_columns(path, vertex);

  // Never trust the count for an allocation: bound it by the bytes left.
  const std::uint64_t body = file_size > header.bytes ? file_size - header.bytes : 0;
  std::vector<PlyVertex> out;
  out.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(vertex.count, body / 4)));
  if (own_layout(header, vertex, columns))
    read_own_layout(path, src, vertex, out);
  else
    read_generic(path, src, header, vertex, columns, out);
  return out;
}

}  // namespace stripeline::io
