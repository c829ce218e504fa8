#include "io/metadata_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "core/errors.h"
#include "io/tiff_support.h"

namespace stripeline::io {
namespace {

namespace fs = std::filesystem;
constexpr std::size_t kMaxText = std::size_t{64} << 20;  // a JSON summary or a PLY header larger than this is not ours

std::string head(const fs::path& path, std::size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot be opened for reading (" + std::strerror(errno) + ")");
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(path, ec);
  std::string out(ec ? bytes : static_cast<std::size_t>(std::min<std::uintmax_t>(size, bytes)), '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<std::size_t>(in.gcount()));
  return out;
}

std::uint32_t be32(const std::string& s, std::size_t at) {
  return (std::uint32_t{static_cast<unsigned char>(s[at])} << 24) | (std::uint32_t{static_cast<unsigned char>(s[at + 1])} << 16) |
         (std::uint32_t{static_cast<unsigned char>(s[at + 2])} << 8) | std::uint32_t{static_cast<unsigned char>(s[at + 3])};
}

// The text of the first tEXt "Description" chunk ("" when none).
std::string png_description(const fs::path& path) {
  const std::string data = head(path, kMaxText);
  for (std::size_t at = 8; at + 8 <= data.size();) {
    const std::size_t n = be32(data, at);
    const std::string_view kind(data.data() + at + 4, 4);
    if (at + 12 + n > data.size() || kind == "IEND") break;
    const std::string_view body(data.data() + at + 8, n);
    if (kind == "tEXt" && body.substr(0, 12) == std::string_view("Description\0", 12)) return std::string(body.substr(12));
    at += 12 + n;
  }
  return "";
}

std::string tiff_description(const fs::path& path) {
  detail::TiffMessages messages;
  detail::TiffOpenOptions options(messages);
  std::unique_ptr<TIFF, void (*)(TIFF*)> tif(TIFFOpenExt(path.c_str(), "r", options.get()), TIFFClose);
  if (!tif) throw InputError(path.string() + ": not a readable TIFF (" + messages.text() + ")");
  const char* text = nullptr;
  return TIFFGetField(tif.get(), TIFFTAG_IMAGEDESCRIPTION, &text) == 1 && text != nullptr ? std::string(text) : std::string();
}

// The "stripeline-metadata" comment of a PLY header ("" when none).
std::string ply_comment(const fs::path& path) {
  const std::string data = head(path, std::size_t{1} << 20);
  const std::size_t end = data.find("end_header");
  std::size_t at = 0;
  const std::string key = "comment " + std::string(metadata::kPlyCommentKey);
  while (at < end) {
    std::size_t eol = data.find('\n', at);
    if (eol == std::string::npos || eol > end) eol = end;
    std::string_view line(data.data() + at, eol - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.substr(0, key.size()) == key) return std::string(line.substr(std::string_view("comment ").size()));
    at = eol + 1;
  }
  return "";
}

metadata::Json checked(metadata::Json document, const fs::path& path) {
  if (document.is_null())
    throw InputError(path.string() + ": carries no stripeline metadata (written before it, or not by stripeline; docs/data-model.md)");
  return document;
}

}  // namespace

metadata::Json read_document(const fs::path& path, std::string* format) {
  const std::string magic = head(path, 8);
  const auto is_tiff = [&] {
    return magic.size() >= 4 && (magic.compare(0, 4, std::string("II*\0", 4)) == 0 || magic.compare(0, 4, std::string("MM\0*", 4)) == 0 ||
                                 magic.compare(0, 4, std::string("II+\0", 4)) == 0 || magic.compare(0, 4, std::string("MM\0+", 4)) == 0);
  };
  std::string kind;
  metadata::Json document;
  if (magic.size() == 8 && magic == std::string("\x89PNG\r\n\x1a\n", 8)) {
    kind = "PNG";
    document = metadata::find_document(png_description(path));
  } else if (is_tiff()) {
    kind = "TIFF";
    document = metadata::find_document(tiff_description(path));
  } else if (magic.compare(0, 4, "ply\n") == 0 || magic.compare(0, 5, "ply\r\n") == 0) {
    kind = "PLY";
    document = metadata::find_document(ply_comment(path));
  } else {
    const std::string text = head(path, kMaxText);
    const std::size_t first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos || text[first] != '{')
      throw InputError(path.string() + ": not a PNG, TIFF, PLY or JSON file (expected a stripeline output)");
    kind = "JSON";
    document = metadata::find_document(std::string_view(text).substr(first));
  }
  if (format != nullptr) *format = kind;
  return checked(std::move(document), path);
}

metadata::Json read_metadata(const fs::path& path) {
  std::string format;
  metadata::Json document = read_document(path, &format);
  metadata::Json out = {{"format", format}};
  out.update(document);
  return out;
}

}  // namespace stripeline::io
