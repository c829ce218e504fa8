#include "acquisition/gentl/genicam_zip.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <stdexcept>

namespace stripeline::gentl {

namespace {

// Zip records are little-endian with fixed layouts (PKWARE APPNOTE 6.3).
constexpr std::uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50, kEndOfCentral = 0x06054b50;

std::uint32_t u32(const std::uint8_t* p) { return p[0] | p[1] << 8 | p[2] << 16 | static_cast<std::uint32_t>(p[3]) << 24; }
std::uint16_t u16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | p[1] << 8); }
void put16(std::vector<std::uint8_t>& v, std::uint16_t x) {
  v.push_back(x & 0xff);
  v.push_back(x >> 8);
}
void put32(std::vector<std::uint8_t>& v, std::uint32_t x) {
  put16(v, x & 0xffff);
  put16(v, x >> 16);
}

bool ends_with_xml(const std::string& name) {
  if (name.size() < 4) return false;
  std::string tail = name.substr(name.size() - 4);
  std::transform(tail.begin(), tail.end(), tail.begin(), [](unsigned char c) { return std::tolower(c); });
  return tail == ".xml";
}

std::string inflate_raw(const std::uint8_t* data, std::size_t size, std::size_t expected) {
  std::string out(expected, '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw std::runtime_error("zip: cannot initialise zlib");
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = static_cast<uInt>(size);
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&z, Z_FINISH);
  const std::size_t produced = z.total_out;
  inflateEnd(&z);
  if (rc != Z_STREAM_END || produced != expected)
    throw std::runtime_error("zip: the XML entry does not inflate to its recorded size (" + std::to_string(expected) + " bytes)");
  return out;
}

}  // namespace

std::string unzip_genicam_xml(const std::uint8_t* data, std::size_t size) {
  if (size < 22) throw std::runtime_error("zip: " + std::to_string(size) + " bytes is too short for an archive");
  // The end-of-central-directory record is in the last 22 + 65535 bytes.
  std::size_t eocd = std::string::npos;
  for (std::size_t i = size - 22 + 1; i-- > 0 && size - i <= 22 + 65535;)
    if (u32(data + i) == kEndOfCentral) {
      eocd = i;
      break;
    }
  if (eocd == std::string::npos) throw std::runtime_error("zip: no end-of-central-directory record (not a zip archive)");
  const std::size_t entries = u16(data + eocd + 10);
  std::size_t at = u32(data + eocd + 16);
  for (std::size_t e = 0; e < entries; ++e) {
    if (at + 46 > size || u32(data + at) != kCentralHeader) throw std::runtime_error("zip: damaged central directory");
    const std::uint16_t method = u16(data + at + 10);
    const std::uint32_t crc = u32(data + at + 16);
    const std::size_t compressed = u32(data + at + 20), plain = u32(data + at + 24);
    const std::size_t name_len = u16(data + at + 28), extra_len = u16(data + at + 30), comment_len = u16(data + at + 32);
    const std::size_t local = u32(data + at + 42);
    if (at + 46 + name_len > size) throw std::runtime_error("zip: damaged central directory");
    const std::string name(reinterpret_cast<const char*>(data + at + 46), name_len);
    at += 46 + name_len + extra_len + comment_len;
    if (!ends_with_xml(name)) continue;
    if (local + 30 > size || u32(data + local) != kLocalHeader) throw std::runtime_error("zip: damaged entry '" + name + "'");
    const std::size_t start = local + 30 + u16(data + local + 26) + u16(data + local + 28);
    if (start + compressed > size) throw std::runtime_error("zip: entry '" + name + "' runs past the end of the archive");
    std::string xml;
    if (method == 0)
      xml.assign(reinterpret_cast<const char*>(data + start), compressed);
    else if (method == 8)
      xml = inflate_raw(data + start, compressed, plain);
    else
      throw std::runtime_error("zip: entry '" + name + "' uses compression method " + std::to_string(method) +
                               " (expected 0 stored or 8 deflate)");
    if (crc32(0, reinterpret_cast<const Bytef*>(xml.data()), static_cast<uInt>(xml.size())) != crc)
      throw std::runtime_error("zip: entry '" + name + "' fails its CRC check");
    return xml;
  }
  throw std::runtime_error("zip: the archive holds no .xml file");
}

std::vector<std::uint8_t> zip_one_file(const std::string& name, const std::string& contents) {
  std::vector<std::uint8_t> packed(compressBound(static_cast<uLong>(contents.size())) + 64);
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("zip: cannot initialise zlib");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(contents.data()));
  z.avail_in = static_cast<uInt>(contents.size());
  z.next_out = packed.data();
  z.avail_out = static_cast<uInt>(packed.size());
  const int rc = deflate(&z, Z_FINISH);
  packed.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("zip: deflate failed");
  const std::uint32_t crc = crc32(0, reinterpret_cast<const Bytef*>(contents.data()), static_cast<uInt>(contents.size()));

  std::vector<std::uint8_t> zip;
  auto header = [&](bool central, std::uint32_t local_offset) {
    put32(zip, central ? kCentralHeader : kLocalHeader);
    if (central) put16(zip, 20);  // made by
    put16(zip, 20);               // needed to extract
    put16(zip, 0);                // flags
    put16(zip, 8);                // deflate
    put16(zip, 0);                // time
    put16(zip, 0x21);             // date: 1980-01-01
    put32(zip, crc);
    put32(zip, static_cast<std::uint32_t>(packed.size()));
    put32(zip, static_cast<std::uint32_t>(contents.size()));
    put16(zip, static_cast<std::uint16_t>(name.size()));
    put16(zip, 0);  // extra
    if (central) {
      put16(zip, 0);  // comment
      put16(zip, 0);  // disk
      put16(zip, 0);  // internal attributes
      put32(zip, 0);  // external attributes
      put32(zip, local_offset);
    }
    zip.insert(zip.end(), name.begin(), name.end());
  };
  header(false, 0);
  zip.insert(zip.end(), packed.begin(), packed.end());
  const auto central_at = static_cast<std::uint32_t>(zip.size());
  header(true, 0);
  const auto central_size = static_cast<std::uint32_t>(zip.size()) - central_at;
  put32(zip, kEndOfCentral);
  put16(zip, 0);
  put16(zip, 0);
  put16(zip, 1);
  put16(zip, 1);
  put32(zip, central_size);
  put32(zip, central_at);
  put16(zip, 0);
  return zip;
}

}  // namespace stripeline::gentl
