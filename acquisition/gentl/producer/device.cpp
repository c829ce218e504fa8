// The Device module: the simulated grabber (its own port: the grabber's node
// map) with the camera behind it (the remote port: the camera's node map).
#include "acquisition/gentl/producer/sim_producer.h"

namespace stripeline::gentl_sim {
namespace {

std::string device_info_string(const Device* d, DEVICE_INFO_CMD cmd) {
  switch (cmd) {
    case DEVICE_INFO_ID: return d->id;
    case DEVICE_INFO_VENDOR: return kVendor;
    case DEVICE_INFO_MODEL: return "Simulated laser line grabber";
    case DEVICE_INFO_TLTYPE: return kTlType;
    case DEVICE_INFO_DISPLAYNAME: return "stripeline simulated grabber " + std::to_string(d->index);
    case DEVICE_INFO_USER_DEFINED_NAME: return "";
    case DEVICE_INFO_SERIAL_NUMBER: return d->serial();
    case DEVICE_INFO_VERSION: return STRIPELINE_VERSION;
    default: return {};
  }
}

void reset_controls(Device* d) {
  d->settings = Settings{};
  d->frame_rate.store(d->settings.frame_rate);
  d->drop_every.store(0);
  d->incomplete_every.store(0);
  d->fail_every.store(0);
  d->unplug_after.store(0);
  d->trigger_credits.store(0);
  d->acquiring.store(false);
}

}  // namespace

GC_ERROR device_info(const Device* d, DEVICE_INFO_CMD cmd, INFO_DATATYPE* t, void* b, std::size_t* n) {
  if (cmd == DEVICE_INFO_ACCESS_STATUS) {
    const std::int32_t status = !d->open       ? DEVICE_ACCESS_STATUS_READWRITE
                                : d->read_only ? DEVICE_ACCESS_STATUS_OPEN_READONLY
                                               : DEVICE_ACCESS_STATUS_OPEN_READWRITE;
    return put_i32(status, t, b, n);
  }
  if (cmd == DEVICE_INFO_TIMESTAMP_FREQUENCY) return put_u64(1000000000ull, t, b, n);
  if (cmd < DEVICE_INFO_ID || cmd > DEVICE_INFO_VERSION) return fail(GC_ERR_NOT_IMPLEMENTED, "device info " + std::to_string(cmd));
  return put_string(device_info_string(d, cmd), t, b, n);
}

GC_ERROR open_device(Device* d, DEVICE_ACCESS_FLAGS flags) {
  if (flags != DEVICE_ACCESS_READONLY && flags != DEVICE_ACCESS_CONTROL && flags != DEVICE_ACCESS_EXCLUSIVE)
    return fail(GC_ERR_INVALID_PARAMETER, "access flag " + std::to_string(flags) + " (READONLY 2, CONTROL 3 or EXCLUSIVE 4)");
  if (d->open) return fail(GC_ERR_RESOURCE_IN_USE, "device '" + d->id + "' is already open");
  reset_controls(d);
  d->remote = std::make_unique<Remote>();
  d->remote->device = d;
  d->remote->id = d->id + "-camera";
  build_camera_map(d);
  build_grabber_map(d);
  // Read-only: every port write is refused, on the camera and the grabber.
  d->read_only = d->remote->read_only = flags == DEVICE_ACCESS_READONLY;
  d->open = true;
  lib().live.insert(d);
  lib().live.insert(d->remote.get());
  return ok();
}

std::vector<std::string> child_ids(const Device&) { return {"Stream0"}; }

void close_device(Device* d) {
  close_stream(d);
  d->acquiring.store(false);
  if (d->remote) forget(d->remote.get());
  d->remote.reset();
  forget(d);
  d->open = false;
  d->read_only = false;
}

}  // namespace stripeline::gentl_sim

using namespace stripeline::gentl_sim;

extern "C" {

GC_ERROR DevGetPort(DEV_HANDLE hDevice, PORT_HANDLE* phRemoteDevice) {
  SIM_HANDLE(Device, d, hDevice);
  return put_out(phRemoteDevice, d->remote.get(), "handle");
}

GC_ERROR DevGetNumDataStreams(DEV_HANDLE hDevice, uint32_t* piNumDataStreams) { return num_children<Device>(hDevice, piNumDataStreams); }

GC_ERROR DevGetDataStreamID(DEV_HANDLE hDevice, uint32_t iIndex, char* sDataStreamID, size_t* piSize) {
  return child_id<Device>(hDevice, iIndex, sDataStreamID, piSize);
}

GC_ERROR DevGetInfo(DEV_HANDLE hDevice, DEVICE_INFO_CMD iInfoCmd, INFO_DATATYPE* piType, void* pBuffer, size_t* piSize) {
  SIM_HANDLE(Device, d, hDevice);
  return device_info(d, iInfoCmd, piType, pBuffer, piSize);
}

GC_ERROR DevGetParentIF(DEV_HANDLE hDevice, IF_HANDLE* phIface) {
  SIM_HANDLE(Device, d, hDevice);
  return put_out(phIface, d->parent, "handle");
}

GC_ERROR DevClose(DEV_HANDLE hDevice) {
  SIM_HANDLE(Device, d, hDevice);
  close_device(d);
  return ok();
}

}  // extern "C"
