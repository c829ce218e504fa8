#pragma once
// Receiving the stream in tests: the next message on a SUB socket, decoded
// (wire::decode throws MalformedMessage for one that breaks the format).
#include <chrono>
#include <iterator>
#include <optional>
#include <vector>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "streaming/wire_format.h"

namespace stripeline::test {

// The next message within `wait`, decoded; nullopt when none came.
inline std::optional<wire::Decoded> receive_decoded(zmq::socket_t& sock, std::chrono::milliseconds wait) {
  zmq::pollitem_t item{sock.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, wait) <= 0) return std::nullopt;
  std::vector<zmq::message_t> parts;
  if (!zmq::recv_multipart(sock, std::back_inserter(parts), zmq::recv_flags::dontwait)) return std::nullopt;
  return wire::decode(parts);
}

}  // namespace stripeline::test
