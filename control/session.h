// One authenticated control-plane connection on the I/O thread (both ends use it): Hello exchange,
// per-direction keys, a write queue, and a FrameReader that drops the peer at the first bad frame.
// All methods run on the I/O thread.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "control/wire.h"

namespace wirewise::control {

class Session : public std::enable_shared_from_this<Session> {
 public:
  using OnFrame = std::function<void(const Frame&)>;
  using OnClose = std::function<void(const std::string& why)>;

  Session(boost::asio::ip::tcp::socket sock, std::vector<uint8_t> jobKey, bool server);
  void start(OnFrame onFrame, OnClose onClose);
  // Queued until the handshake completes.
  void send(MsgType type, std::span<const uint8_t> payload);
  void close(const std::string& why);
  bool open() const { return !closed_; }
  bool keyed() const { return keyed_; }  // the peer's Hello came: the handshake is done
  const std::string& peer() const { return peer_; }
  size_t queuedBytes() const { return queuedBytes_; }

 private:
  void read();
  void consume();
  void flush();
  void writeNext();

  boost::asio::ip::tcp::socket sock_;
  std::vector<uint8_t> jobKey_;
  bool server_;
  std::string peer_;
  OnFrame onFrame_;
  OnClose onClose_;
  FrameReader reader_;
  uint8_t rbuf_[16384];
  Nonce myNonce_{};
  bool keyed_ = false, writing_ = false, closed_ = false;
  std::optional<HmacSha256Key> sendKey_;  // pads precomputed once: every frame's MAC reuses them
  uint64_t sendCounter_ = 0;
  std::vector<std::pair<MsgType, std::vector<uint8_t>>> beforeKey_;
  // Frames queued since the write in progress began, back to back, and the frames of that write: two
  // buffers kept for the connection's life, so a frame costs no allocation and a burst of them one write.
  std::vector<uint8_t> out_, inflight_;
  Frame frame_;  // the frame being handled, its payload buffer reused
  size_t queuedBytes_ = 0;
};

Nonce randomNonce();

}  // namespace wirewise::control
