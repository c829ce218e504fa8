// Ports: every module's register space (GCReadPort/GCWritePort) and the URL
// of its node map. A module handle is its own port; the remote device's
// port is DevGetPort's handle.
#include "acquisition/gentl/producer/sim_producer.h"

using namespace stripeline::gentl_sim;

namespace {

GC_ERROR check_port(PORT_HANDLE h) {
  SIM_HANDLE(Module, m, h);
  return ok();
}

// GCReadPortStacked/GCWritePortStacked: the entries in order, through the
// single access; on a failure *piNumEntries is the count that succeeded.
template <class Access>
GC_ERROR stacked(PORT_HANDLE hPort, PORT_REGISTER_STACK_ENTRY* pEntries, size_t* piNumEntries, Access access) {
  if (const GC_ERROR rc = check_port(hPort); rc != GC_ERR_SUCCESS) return rc;
  if (!pEntries || !piNumEntries) return fail(GC_ERR_INVALID_PARAMETER, "null entries");
  for (size_t i = 0; i < *piNumEntries; ++i) {
    size_t size = pEntries[i].Size;
    const GC_ERROR rc = access(hPort, pEntries[i].Address, pEntries[i].pBuffer, &size);
    if (rc != GC_ERR_SUCCESS) {
      *piNumEntries = i;
      return rc;
    }
  }
  return ok();
}

}  // namespace

extern "C" {

GC_ERROR GCReadPort(PORT_HANDLE hPort, uint64_t iAddress, void* pBuffer, size_t* piSize) {
  SIM_HANDLE(Module, m, hPort);
  if (!pBuffer || !piSize) return fail(GC_ERR_INVALID_PARAMETER, "null buffer or size");
  if (!m->map) return fail(GC_ERR_NOT_IMPLEMENTED, "this module has no registers");
  const GC_ERROR rc = m->map->read(iAddress, pBuffer, *piSize);
  return rc == GC_ERR_SUCCESS ? rc : fail(rc, m->map->last_error());
}

GC_ERROR GCWritePort(PORT_HANDLE hPort, uint64_t iAddress, const void* pBuffer, size_t* piSize) {
  SIM_HANDLE(Module, m, hPort);
  if (!pBuffer || !piSize) return fail(GC_ERR_INVALID_PARAMETER, "null buffer or size");
  if (!m->map) return fail(GC_ERR_NOT_IMPLEMENTED, "this module has no registers");
  if (m->read_only) return fail(GC_ERR_ACCESS_DENIED, "the device was opened read-only (DEVICE_ACCESS_READONLY)");
  last_error() = {};
  const GC_ERROR rc = m->map->write(iAddress, pBuffer, *piSize);
  if (rc == GC_ERR_SUCCESS) return rc;
  // A setter's own message (set through fail()) is more precise than the map's.
  return last_error().code == rc ? rc : fail(rc, m->map->last_error());
}

GC_ERROR GCReadPortStacked(PORT_HANDLE hPort, PORT_REGISTER_STACK_ENTRY* pEntries, size_t* piNumEntries) {
  return stacked(hPort, pEntries, piNumEntries, GCReadPort);
}

GC_ERROR GCWritePortStacked(PORT_HANDLE hPort, PORT_REGISTER_STACK_ENTRY* pEntries, size_t* piNumEntries) {
  return stacked(hPort, pEntries, piNumEntries, GCWritePort);
}

GC_ERROR GCGetPortURL(PORT_HANDLE hPort, char* sURL, size_t* piSize) {
  SIM_HANDLE(Module, m, hPort);
  if (!m->map) return fail(GC_ERR_NOT_AVAILABLE, "this module has no node map");
  return put_string(m->map->url(), nullptr, sURL, piSize);
}

GC_ERROR GCGetNumPortURLs(PORT_HANDLE hPort, uint32_t* piNumURLs) {
  SIM_HANDLE(Module, m, hPort);
  return put_out(piNumURLs, m->map ? 1u : 0u, "count");
}

GC_ERROR GCGetPortURLInfo(PORT_HANDLE hPort, uint32_t iURLIndex, URL_INFO_CMD iInfoCmd, INFO_DATATYPE* piType, void* pBuffer,
                          size_t* piSize) {
  SIM_HANDLE(Module, m, hPort);
  if (!m->map || iURLIndex != 0) return fail(GC_ERR_INVALID_INDEX, "URL index " + std::to_string(iURLIndex));
  switch (iInfoCmd) {
    case URL_INFO_URL: return put_string(m->map->url(), piType, pBuffer, piSize);
    case URL_INFO_SCHEMA_VER_MAJOR: return put_i32(1, piType, pBuffer, piSize);
    case URL_INFO_SCHEMA_VER_MINOR: return put_i32(1, piType, pBuffer, piSize);
    case URL_INFO_FILE_VER_MAJOR: return put_i32(1, piType, pBuffer, piSize);
    case URL_INFO_FILE_VER_MINOR:
    case URL_INFO_FILE_VER_SUBMINOR: return put_i32(0, piType, pBuffer, piSize);
    case URL_INFO_FILE_REGISTER_ADDRESS: return put_u64(NodeMap::kFileAddress, piType, pBuffer, piSize);
    case URL_INFO_SCHEME: return put_i32(URL_SCHEME_LOCAL, piType, pBuffer, piSize);
    case URL_INFO_FILENAME: return put_string(m->map->file_name(), piType, pBuffer, piSize);
    default: return fail(GC_ERR_NOT_IMPLEMENTED, "URL info " + std::to_string(iInfoCmd));
  }
}

GC_ERROR GCGetPortInfo(PORT_HANDLE hPort, PORT_INFO_CMD iInfoCmd, INFO_DATATYPE* piType, void* pBuffer, size_t* piSize) {
  SIM_HANDLE(Module, m, hPort);
  switch (iInfoCmd) {
    case PORT_INFO_ID: return put_string(m->id, piType, pBuffer, piSize);
    case PORT_INFO_VENDOR: return put_string(kVendor, piType, pBuffer, piSize);
    case PORT_INFO_MODEL: return put_string(m->kind == Kind::Remote ? "Simulated laser line camera" : "stripeline simulated producer", piType, pBuffer, piSize);
    case PORT_INFO_TLTYPE: return put_string(kTlType, piType, pBuffer, piSize);
    case PORT_INFO_MODULE: return put_string(m->module_name(), piType, pBuffer, piSize);
    case PORT_INFO_LITTLE_ENDIAN: return put_bool(true, piType, pBuffer, piSize);
    case PORT_INFO_BIG_ENDIAN: return put_bool(false, piType, pBuffer, piSize);
    case PORT_INFO_ACCESS_READ: return put_bool(m->map != nullptr, piType, pBuffer, piSize);
    case PORT_INFO_ACCESS_WRITE: return put_bool(m->map != nullptr && !m->read_only, piType, pBuffer, piSize);
    case PORT_INFO_ACCESS_NA: return put_bool(false, piType, pBuffer, piSize);
    case PORT_INFO_ACCESS_NI: return put_bool(m->map == nullptr, piType, pBuffer, piSize);
    case PORT_INFO_VERSION: return put_string("1.0", piType, pBuffer, piSize);
    case PORT_INFO_PORTNAME: return put_string("Device", piType, pBuffer, piSize);
    default: return fail(GC_ERR_NOT_IMPLEMENTED, "port info " + std::to_string(iInfoCmd));
  }
}

}  // extern "C"
