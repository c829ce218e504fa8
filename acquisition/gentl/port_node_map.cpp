#include "acquisition/gentl/port_node_map.h"

#include <arv.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "acquisition/gentl/genicam_zip.h"
#include "core/errors.h"

namespace stripeline::gentl {

namespace {

// What the ArvDevice subclass carries: the port its registers live behind.
struct PortContext {
  std::shared_ptr<Producer> producer;
  PORT_HANDLE port = nullptr;
  std::string what, xml;
  ArvGc* gc = nullptr;
};

}  // namespace
}  // namespace stripeline::gentl

// The GObject subclass (C layout, registered once).
extern "C" {
typedef struct {
  ArvDevice parent;
  stripeline::gentl::PortContext* ctx;
} SlGenTLPortDevice;
typedef struct {
  ArvDeviceClass parent_class;
} SlGenTLPortDeviceClass;
}

namespace stripeline::gentl {
namespace {

gpointer g_parent_class = nullptr;

PortContext* ctx_of(ArvDevice* d) { return reinterpret_cast<SlGenTLPortDevice*>(d)->ctx; }

void port_finalize(GObject* o) {
  auto* self = reinterpret_cast<SlGenTLPortDevice*>(o);
  if (self->ctx) {
    if (self->ctx->gc) g_object_unref(self->ctx->gc);
    delete self->ctx;
    self->ctx = nullptr;
  }
  G_OBJECT_CLASS(g_parent_class)->finalize(o);
}

ArvGc* port_get_genicam(ArvDevice* d) { return ctx_of(d)->gc; }

const char* port_get_genicam_xml(ArvDevice* d, size_t* size) {
  *size = ctx_of(d)->xml.size();
  return ctx_of(d)->xml.c_str();
}

gboolean port_transfer(ArvDevice* d, guint64 address, guint32 size, void* buffer, bool write, GError** error) {
  PortContext* c = ctx_of(d);
  const Api& api = c->producer->api();
  std::size_t n = size;
  const GC_ERROR rc = write ? api.GCWritePort(c->port, address, buffer, &n) : api.GCReadPort(c->port, address, buffer, &n);
  if (rc == GC_ERR_SUCCESS && n == size) return TRUE;
  const std::string text = c->producer->last_error_text();
  g_set_error(error, ARV_DEVICE_ERROR, ARV_DEVICE_ERROR_TRANSFER_ERROR, "%s of %u bytes at 0x%llx: %s%s%s", write ? "GCWritePort" : "GCReadPort",
              size, static_cast<unsigned long long>(address), error_name(rc), text.empty() ? "" : ": ", text.c_str());
  return FALSE;
}
gboolean port_read_memory(ArvDevice* d, guint64 address, guint32 size, void* buffer, GError** error) {
  return port_transfer(d, address, size, buffer, false, error);
}
gboolean port_write_memory(ArvDevice* d, guint64 address, guint32 size, void* buffer, GError** error) {
  return port_transfer(d, address, size, buffer, true, error);
}
gboolean port_read_register(ArvDevice* d, guint64 address, guint32* value, GError** error) {
  return port_transfer(d, address, 4, value, false, error);
}
gboolean port_write_register(ArvDevice* d, guint64 address, guint32 value, GError** error) {
  return port_transfer(d, address, 4, &value, true, error);
}

void port_class_init(gpointer klass, gpointer) {
  g_parent_class = g_type_class_peek_parent(klass);
  G_OBJECT_CLASS(klass)->finalize = port_finalize;
  ArvDeviceClass* dc = ARV_DEVICE_CLASS(klass);
  dc->get_genicam = port_get_genicam;
  dc->get_genicam_xml = port_get_genicam_xml;
  dc->read_memory = port_read_memory;
  dc->write_memory = port_write_memory;
  dc->read_register = port_read_register;
  dc->write_register = port_write_register;
}

GType port_device_type() {
  static const GType type = g_type_register_static_simple(ARV_TYPE_DEVICE, "StripelineGenTLPortDevice", sizeof(SlGenTLPortDeviceClass),
                                                          port_class_init, sizeof(SlGenTLPortDevice), nullptr, GTypeFlags(0));
  return type;
}

std::uint64_t parse_hex(const std::string& s, const std::string& url) {
  std::string t = s;
  if (t.rfind("0x", 0) == 0 || t.rfind("0X", 0) == 0) t = t.substr(2);
  if (t.empty() || !std::all_of(t.begin(), t.end(), [](unsigned char c) { return std::isxdigit(c); }))
    throw InputError("GenICam URL '" + url + "': '" + s + "' is not a hexadecimal number");
  return std::stoull(t, nullptr, 16);
}

std::string percent_decode(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) && std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool ends_with_zip(const std::string& name) {
  if (name.size() < 4) return false;
  std::string t = name.substr(name.size() - 4);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  return t == ".zip";
}

}  // namespace

GenICamUrl parse_genicam_url(const std::string& url) {
  GenICamUrl u;
  std::string lower = url.substr(0, std::min<std::size_t>(url.size(), 8));
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  const std::string body = url.substr(0, url.find('?'));
  if (lower.rfind("local:", 0) == 0) {
    u.scheme = GenICamUrl::Scheme::Local;
    std::string rest = body.substr(6);
    while (!rest.empty() && rest.front() == '/') rest.erase(0, 1);
    const auto a = rest.find(';'), b = a == std::string::npos ? a : rest.find(';', a + 1);
    if (a == std::string::npos || b == std::string::npos)
      throw InputError("GenICam URL '" + url + "': expected local:name;address;length");
    u.file_name = rest.substr(0, a);
    u.address = parse_hex(rest.substr(a + 1, b - a - 1), url);
    u.length = parse_hex(rest.substr(b + 1), url);
  } else if (lower.rfind("file:", 0) == 0) {
    u.scheme = GenICamUrl::Scheme::File;
    std::string path = body.substr(5);
    if (path.rfind("///", 0) == 0)
      path = path.substr(2);  // file:///abs/path -> /abs/path
    else if (path.rfind("//", 0) == 0)
      path = path.substr(path.find('/', 2) == std::string::npos ? path.size() : path.find('/', 2));  // file://host/path
    u.file_name = percent_decode(path);
    if (u.file_name.empty()) throw InputError("GenICam URL '" + url + "': no file path");
  } else if (lower.rfind("http:", 0) == 0 || lower.rfind("https:", 0) == 0) {
    u.scheme = GenICamUrl::Scheme::Http;
    u.file_name = body;
  } else {
    throw InputError("GenICam URL '" + url + "': unknown scheme (expected local:, file: or http:)");
  }
  u.zipped = ends_with_zip(u.file_name);
  return u;
}

std::string read_port_xml(const Producer& producer, PORT_HANDLE port, const std::string& what) {
  const Api& api = producer.api();
  std::string url;
  std::uint32_t count = 0;
  if (api.GCGetNumPortURLs && api.GCGetPortURLInfo && api.GCGetNumPortURLs(port, &count) == GC_ERR_SUCCESS && count > 0) {
    url = info_string(producer, what + ": GCGetPortURLInfo(URL)", [&](INFO_DATATYPE* t, void* b, std::size_t* s) {
      return api.GCGetPortURLInfo(port, 0, URL_INFO_URL, t, b, s);
    });
  } else if (api.GCGetPortURL) {
    url = info_string(producer, what + ": GCGetPortURL", [&](INFO_DATATYPE*, void* b, std::size_t* s) {
      return api.GCGetPortURL(port, static_cast<char*>(b), s);
    });
  } else {
    throw DeviceUnavailable(what + ": the producer gives no URL for its node map (no GCGetPortURLInfo or GCGetPortURL)");
  }
  GenICamUrl u;
  try {
    u = parse_genicam_url(url);
  } catch (const InputError& e) {
    throw DeviceUnavailable(what + ": " + e.what());
  }
  std::string file;
  switch (u.scheme) {
    case GenICamUrl::Scheme::Local: {
      if (u.length == 0 || u.length > (64u << 20)) throw DeviceUnavailable(fmt::format("{}: XML length {} in '{}' is absurd", what, u.length, url));
      file.resize(u.length);
      // Read in pieces: some ports limit one transfer.
      constexpr std::size_t kPiece = 64 * 1024;
      for (std::size_t at = 0; at < file.size(); at += kPiece) {
        std::size_t n = std::min(kPiece, file.size() - at);
        producer.check(api.GCReadPort(port, u.address + at, file.data() + at, &n), what + ": GCReadPort(XML)");
      }
      break;
    }
    case GenICamUrl::Scheme::File: {
      std::ifstream in(u.file_name, std::ios::binary);
      if (!in) throw DeviceUnavailable(fmt::format("{}: cannot read the node map file {} (from '{}')", what, u.file_name, url));
      std::ostringstream s;
      s << in.rdbuf();
      file = s.str();
      break;
    }
    case GenICamUrl::Scheme::Http:
      throw DeviceUnavailable(fmt::format(
          "{}: the producer points its node map at '{}'; stripeline does not download GenICam XML (save the file and use "
          "a producer setting that serves it locally)",
          what, url));
  }
  if (!u.zipped) return file;
  try {
    return unzip_genicam_xml(reinterpret_cast<const std::uint8_t*>(file.data()), file.size());
  } catch (const std::runtime_error& e) {
    throw DeviceUnavailable(fmt::format("{}: node map '{}': {}", what, u.file_name, e.what()));
  }
}

PortNodeMap::PortNodeMap(std::shared_ptr<Producer> producer, PORT_HANDLE port, std::string what)
    : producer_(std::move(producer)), what_(std::move(what)) {
  auto ctx = std::make_unique<PortContext>();
  ctx->producer = producer_;
  ctx->port = port;
  ctx->what = what_;
  ctx->xml = read_port_xml(*producer_, port, what_);
  auto* dev = static_cast<SlGenTLPortDevice*>(g_object_new(port_device_type(), nullptr));
  dev->ctx = ctx.release();
  device_ = ARV_DEVICE(dev);
  dev->ctx->gc = arv_gc_new(device_, dev->ctx->xml.data(), dev->ctx->xml.size());
  if (!dev->ctx->gc) {
    g_object_unref(device_);
    throw DeviceUnavailable(what_ + ": its GenICam XML cannot be parsed");
  }
  // Out-of-range values are refused by the node map (with the bounds), not
  // left to the device.
  arv_gc_set_range_check_policy(dev->ctx->gc, ARV_RANGE_CHECK_POLICY_ENABLE);
}

PortNodeMap::~PortNodeMap() {
  if (device_) g_object_unref(device_);
}

bool PortNodeMap::has(const std::string& feature) const {
  if (!arv_device_get_feature(device_, feature.c_str())) return false;
  return arv_device_is_feature_available(device_, feature.c_str(), nullptr);
}

void PortNodeMap::apply(const std::string& assignment, const std::string& key) {
  const auto eq = assignment.find('=');
  const std::string name = assignment.substr(0, eq);
  if (!arv_device_get_feature(device_, name.c_str()))
    throw ConfigError(fmt::format("{}: the {} has no feature '{}'", key, what_, name));
  GError* err = nullptr;
  const gboolean ok = arv_device_set_features_from_string(device_, assignment.c_str(), &err);
  if (!ok || err) {
    const std::string msg = err ? err->message : "refused";
    if (err) g_error_free(err);
    throw ConfigError(fmt::format("{}: the {} refused '{}': {}", key, what_, assignment, msg));
  }
}

}  // namespace stripeline::gentl
