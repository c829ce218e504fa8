#pragma once
// CURVE security of the stream: key files, and the ZAP handler (RFC 27) that
// lets in only the subscribers whose public keys are listed. Without a ZAP
// handler a CURVE server accepts any client key, so the publisher always
// starts one with CURVE on.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <zmq.hpp>

namespace stripeline {

// [security] of a configuration.
struct CurveConfig {
  bool enabled = false;
  std::filesystem::path server_secret_key;         // Z85 secret (zcert or bare); must not be readable by group/others
  std::vector<std::filesystem::path> client_keys;  // allowed client public keys (Z85; zcert or bare)

  // ConfigError naming the key (security.<key>) when enabled without keys.
  void validate() const;
  // Reads every key file now (ConfigError for a missing, unreadable or
  // too-open one): a reload must not fail later on a key file.
  void check_key_files() const;
  bool operator==(const CurveConfig&) const = default;
};

// Reads a Z85 key (40 characters) from a file: either a bare key on a line,
// or a ZeroMQ certificate (public-key = "..." / secret-key = "..."). A secret
// key file readable by group or others is refused. Throws ConfigError.
std::string read_curve_key(const std::filesystem::path& path, bool secret);
// Writes a new key pair as ZeroMQ certificates: <base>.pub (public key) and
// <base>.secret (both keys, mode 0600). Returns {public, secret} in Z85.
// Throws RuntimeFailure.
std::pair<std::string, std::string> write_curve_keypair(const std::filesystem::path& base);
// True when libzmq was built with CURVE.
bool curve_available();

// Answers the context's ZAP requests on its own thread: CURVE clients whose
// public key is in `allowed` get 200, every other request 400 (counted).
class ZapHandler {
 public:
  ZapHandler(zmq::context_t& ctx, std::set<std::string> allowed);
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;
  std::uint64_t denied() const { return denied_.load(); }

 private:
  void loop();
  std::set<std::string> allowed_;
  zmq::socket_t rep_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> denied_{0};
  std::thread thread_;
};

// Makes `socket` a CURVE client of a server whose public key is in
// `server_key_file`, with the secret key in `client_key_file` (mode 0600).
// Both or neither: InputError naming what is missing or invalid.
void make_curve_client(zmq::socket_t& socket, const std::string& server_key_file, const std::string& client_key_file);

// Makes `socket` a CURVE server with the configured secret key, and starts
// the ZAP handler that enforces the client allowlist. Throws ConfigError.
std::unique_ptr<ZapHandler> make_curve_server(zmq::context_t& ctx, zmq::socket_t& socket, const CurveConfig& config);

}  // namespace stripeline
