#include "acquisition/gentl/producer/node_map.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>

#include "acquisition/gentl/genicam_zip.h"

namespace stripeline::gentl_sim {

namespace {

std::string hex(std::uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

const char* access(const Feature& f) { return f.writable ? (f.readable ? "RW" : "WO") : "RO"; }

std::size_t register_length(const Feature& f) { return f.kind == Feature::Kind::String ? f.string_length : 8; }

}  // namespace

NodeMap::NodeMap(std::string vendor, std::string model_name, std::string file_name)
    : vendor_(std::move(vendor)), model_(std::move(model_name)), file_name_(std::move(file_name)) {}

void NodeMap::add(Feature f) {
  if (f.chunk_id == 0) {
    f.address = next_address_;
    next_address_ += (register_length(f) + 7) / 8 * 8;
  }
  features_.push_back(std::move(f));
}

// The XML follows GenApi schema 1.1: a Root category, one node per feature
// and one register node behind it ("<Name>Reg"), on the port "Device" (or a
// chunk port). Registers are not cached: the simulation changes them.
void NodeMap::finish() {
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
    << "<RegisterDescription ModelName=\"" << escape(model_) << "\" VendorName=\"" << escape(vendor_)
    << "\" ToolTip=\"stripeline simulated GenTL producer\" StandardNameSpace=\"None\" SchemaMajorVersion=\"1\""
       " SchemaMinorVersion=\"1\" SchemaSubMinorVersion=\"0\" MajorVersion=\"1\" MinorVersion=\"0\" SubMinorVersion=\"0\""
       " ProductGuid=\"5f8d3c1e-6a27-4b0e-9c51-2d7e4a9b1c30\" VersionGuid=\"0b6e2f94-3c1d-4e8a-a7f5-9d2c6b1e8a47\""
       " xmlns=\"http://www.genicam.org/GenApi/Version_1_1\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\""
       " xsi:schemaLocation=\"http://www.genicam.org/GenApi/Version_1_1 http://www.genicam.org/GenApi/GenApiSchema_Version_1_1.xsd\">\n";

  std::vector<std::string> categories;
  std::map<std::string, std::vector<std::string>> members;
  for (const Feature& f : features_) {
    if (!members.count(f.category)) categories.push_back(f.category);
    members[f.category].push_back(f.name);
  }
  x << "  <Category Name=\"Root\" NameSpace=\"Standard\">\n";
  for (const auto& c : categories) x << "    <pFeature>" << c << "</pFeature>\n";
  x << "  </Category>\n";
  for (const auto& c : categories) {
    x << "  <Category Name=\"" << c << "\" NameSpace=\"Standard\">\n";
    for (const auto& m : members[c]) x << "    <pFeature>" << m << "</pFeature>\n";
    x << "  </Category>\n";
  }

  std::map<std::uint64_t, std::string> chunk_ports;
  for (const Feature& f : features_) {
    const std::string reg = f.name + "Reg";
    const std::string port = f.chunk_id ? "ChunkPort" + hex(f.chunk_id).substr(2) : "Device";
    if (f.chunk_id) chunk_ports[f.chunk_id] = port;
    // The node's common elements, in the schema's order: ToolTip, then pIsLocked.
    const std::string tip = (f.tooltip.empty() ? "" : "    <ToolTip>" + escape(f.tooltip) + "</ToolTip>\n") +
                            (f.p_is_locked.empty() ? "" : "    <pIsLocked>" + f.p_is_locked + "</pIsLocked>\n");
    switch (f.kind) {
      case Feature::Kind::Integer:
        x << "  <Integer Name=\"" << f.name << "\" NameSpace=\"Standard\">\n" << tip << "    <pValue>" << reg << "</pValue>\n";
        if (f.writable) {
          x << "    <Min>" << f.min << "</Min>\n";
          if (f.p_max.empty())
            x << "    <Max>" << f.max << "</Max>\n";
          else
            x << "    <pMax>" << f.p_max << "</pMax>\n";
          x << "    <Inc>" << f.inc << "</Inc>\n";
        }
        x << "  </Integer>\n";
        break;
      case Feature::Kind::Float:
        x << "  <Float Name=\"" << f.name << "\" NameSpace=\"Standard\">\n"
          << tip << "    <pValue>" << reg << "</pValue>\n    <Min>" << f.fmin << "</Min>\n    <Max>" << f.fmax << "</Max>\n";
        if (!f.unit.empty()) x << "    <Unit>" << f.unit << "</Unit>\n";
        x << "  </Float>\n";
        break;
      case Feature::Kind::Enumeration:
        x << "  <Enumeration Name=\"" << f.name << "\" NameSpace=\"Standard\">\n" << tip;
        for (const auto& [entry, value] : f.entries)
          x << "    <EnumEntry Name=\"" << entry << "\" NameSpace=\"Standard\">\n      <Value>" << value << "</Value>\n    </EnumEntry>\n";
        x << "    <pValue>" << reg << "</pValue>\n  </Enumeration>\n";
        break;
      case Feature::Kind::Boolean:
        x << "  <Boolean Name=\"" << f.name << "\" NameSpace=\"Standard\">\n"
          << tip << "    <pValue>" << reg << "</pValue>\n    <OnValue>1</OnValue>\n    <OffValue>0</OffValue>\n  </Boolean>\n";
        break;
      case Feature::Kind::Command:
        x << "  <Command Name=\"" << f.name << "\" NameSpace=\"Standard\">\n"
          << tip << "    <pValue>" << reg << "</pValue>\n    <CommandValue>1</CommandValue>\n  </Command>\n";
        break;
      case Feature::Kind::String:
        x << "  <StringReg Name=\"" << f.name << "\" NameSpace=\"Standard\">\n"
          << tip << "    <Address>" << hex(f.address) << "</Address>\n    <Length>" << f.string_length << "</Length>\n    <AccessMode>"
          << access(f) << "</AccessMode>\n    <pPort>Device</pPort>\n  </StringReg>\n";
        continue;  // a string is its own register
    }
    const bool is_float = f.kind == Feature::Kind::Float;
    x << "  <" << (is_float ? "FloatReg" : "IntReg") << " Name=\"" << reg << "\">\n"
      << "    <Address>" << hex(f.chunk_id ? f.chunk_offset : f.address) << "</Address>\n    <Length>8</Length>\n    <AccessMode>"
      << access(f) << "</AccessMode>\n    <pPort>" << port << "</pPort>\n    <Cachable>NoCache</Cachable>\n";
    if (!is_float) x << "    <Sign>Signed</Sign>\n";
    x << "    <Endianess>LittleEndian</Endianess>\n  </" << (is_float ? "FloatReg" : "IntReg") << ">\n";
  }
  x << "  <Port Name=\"Device\" NameSpace=\"Standard\"/>\n";
  for (const auto& [id, name] : chunk_ports)
    x << "  <Port Name=\"" << name << "\">\n    <ChunkID>" << hex(id).substr(2) << "</ChunkID>\n  </Port>\n";
  x << "</RegisterDescription>\n";
  xml_ = x.str();
  const bool zipped = file_name_.size() > 4 && file_name_.compare(file_name_.size() - 4, 4, ".zip") == 0;
  if (zipped) {
    const std::string inner = file_name_.substr(0, file_name_.size() - 4) + ".xml";
    file_ = gentl::zip_one_file(inner, xml_);
  } else {
    file_.assign(xml_.begin(), xml_.end());
  }
}

std::string NodeMap::url() const {
  char b[256];
  std::snprintf(b, sizeof b, "local:%s;%llx;%zx?SchemaVersion=1.1.0", file_name_.c_str(), static_cast<unsigned long long>(kFileAddress),
                file_.size());
  return b;
}

const Feature* NodeMap::find(std::uint64_t address, std::size_t size) const {
  for (const Feature& f : features_)
    // Overflow-safe: address - f.address cannot wrap once address >= f.address.
    if (f.chunk_id == 0 && address >= f.address && address - f.address <= register_length(f) &&
        size <= register_length(f) - (address - f.address))
      return &f;
  return nullptr;
}

GC_ERROR NodeMap::read(std::uint64_t address, void* buffer, std::size_t size) const {
  if (address >= kFileAddress) {
    const std::uint64_t offset = address - kFileAddress;
    if (offset > file_.size() || size > file_.size() - offset) {  // overflow-safe
      last_error_ = "read past the end of the XML file";
      return GC_ERR_INVALID_ADDRESS;
    }
    std::memcpy(buffer, file_.data() + offset, size);
    return GC_ERR_SUCCESS;
  }
  const Feature* f = find(address, size);
  if (!f) {
    last_error_ = "no register at " + hex(address) + " (" + std::to_string(size) + " bytes)";
    return GC_ERR_INVALID_ADDRESS;
  }
  if (!f->readable) {
    last_error_ = f->name + " is write-only";
    return GC_ERR_ACCESS_DENIED;
  }
  std::uint8_t reg[256] = {};
  if (f->kind == Feature::Kind::String) {
    const std::string s = f->get_string ? f->get_string() : std::string();
    std::memcpy(reg, s.data(), std::min(s.size(), f->string_length - 1));
  } else if (f->kind == Feature::Kind::Float) {
    const double v = f->get_float ? f->get_float() : 0.0;
    std::memcpy(reg, &v, 8);  // little-endian host (x86-64, aarch64)
  } else {
    const std::int64_t v = f->get_int ? f->get_int() : 0;
    std::memcpy(reg, &v, 8);
  }
  std::memcpy(buffer, reg + (address - f->address), size);
  return GC_ERR_SUCCESS;
}

GC_ERROR NodeMap::write(std::uint64_t address, const void* buffer, std::size_t size) {
  const Feature* f = find(address, size);
  if (!f || address != f->address || (f->kind != Feature::Kind::String && size != 8)) {
    last_error_ = "no writable register at " + hex(address) + " (" + std::to_string(size) + " bytes)";
    return GC_ERR_INVALID_ADDRESS;
  }
  if (!f->writable) {
    last_error_ = f->name + " is read-only";
    return GC_ERR_ACCESS_DENIED;
  }
  GC_ERROR rc = GC_ERR_SUCCESS;
  if (f->kind == Feature::Kind::Float) {
    double v = 0;
    std::memcpy(&v, buffer, 8);
    if (!(v >= f->fmin && v <= f->fmax)) {
      last_error_ = f->name + " = " + std::to_string(v) + " is out of range";
      return GC_ERR_INVALID_VALUE;
    }
    rc = f->set_float ? f->set_float(v) : GC_ERR_ACCESS_DENIED;
  } else if (f->kind != Feature::Kind::String) {
    std::int64_t v = 0;
    std::memcpy(&v, buffer, 8);
    if (f->kind == Feature::Kind::Enumeration &&
        std::none_of(f->entries.begin(), f->entries.end(), [v](const auto& e) { return e.second == v; })) {
      last_error_ = f->name + ": " + std::to_string(v) + " is no entry";
      return GC_ERR_INVALID_VALUE;
    }
    rc = f->set_int ? f->set_int(v) : GC_ERR_ACCESS_DENIED;
  } else {
    rc = GC_ERR_ACCESS_DENIED;
  }
  if (rc != GC_ERR_SUCCESS) last_error_ = f->name + ": the write was refused";
  return rc;
}

}  // namespace stripeline::gentl_sim
