#include "control/session.h"

#include <fcntl.h>

#include <boost/asio/write.hpp>
#include <random>

namespace wirewise::control {

namespace asio = boost::asio;
using asio::ip::tcp;

Nonce randomNonce() {
  std::random_device rd;
  Nonce n;
  for (size_t i = 0; i < n.size(); i += 4) {
    uint32_t v = rd();
    for (size_t j = 0; j < 4 && i + j < n.size(); ++j) n[i + j] = static_cast<uint8_t>(v >> (8 * j));
  }
  return n;
}

Session::Session(tcp::socket sock, std::vector<uint8_t> jobKey, bool server)
    : sock_(std::move(sock)), jobKey_(std::move(jobKey)), server_(server), myNonce_(randomNonce()) {
  boost::system::error_code ec;
  auto ep = sock_.remote_endpoint(ec);
  peer_ = ec ? std::string("?") : ep.address().to_string() + ":" + std::to_string(ep.port());
  sock_.set_option(tcp::no_delay(true), ec);
  // Close-on-exec: a program the host process starts must not keep this connection open. It would hide a
  // close from the peer (no FIN while a copy lives), and a member would wait on a dead connection.
  int fd = sock_.native_handle();
  if (int flags = ::fcntl(fd, F_GETFD); flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

void Session::start(OnFrame onFrame, OnClose onClose) {
  onFrame_ = std::move(onFrame);
  onClose_ = std::move(onClose);
  appendFrame(&out_, MsgType::Hello, 0, encode(Hello{myNonce_}), nullptr);
  writeNext();
  read();
}

void Session::send(MsgType type, std::span<const uint8_t> payload) {
  if (closed_) return;
  if (!keyed_) {
    beforeKey_.emplace_back(type, std::vector<uint8_t>(payload.begin(), payload.end()));
    return;
  }
  const size_t before = out_.size();
  appendFrame(&out_, type, ++sendCounter_, payload, &*sendKey_);
  queuedBytes_ += out_.size() - before;
  if (!writing_) writeNext();
}

void Session::close(const std::string& why) {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ec;
  sock_.shutdown(tcp::socket::shutdown_both, ec);
  sock_.close(ec);
  out_.clear();
  if (onClose_) {
    auto cb = std::move(onClose_);
    onClose_ = nullptr;
    cb(why);
  }
  onFrame_ = nullptr;
}

void Session::read() {
  if (closed_) return;
  sock_.async_read_some(asio::buffer(rbuf_), [self = shared_from_this()](boost::system::error_code ec, size_t n) {
    if (self->closed_) return;
    if (ec) return self->close(ec == asio::error::eof ? "peer closed the connection" : ec.message());
    self->reader_.append({self->rbuf_, n});
    self->consume();
    self->read();
  });
}

void Session::consume() {
  Frame& f = frame_;
  for (;;) {
    if (closed_) return;
    WireError e = reader_.next(&f);
    if (e == WireError::NeedMore) return;
    if (e != WireError::None) return close(std::string("rejected: ") + wireErrorName(e));
    if (!keyed_) {
      Hello h;
      if (!decode(f.payload, &h)) return close("rejected: malformed hello");
      SessionKeys k =
          server_ ? deriveSessionKeys(jobKey_, myNonce_, h.nonce) : deriveSessionKeys(jobKey_, h.nonce, myNonce_);
      reader_.setKey(server_ ? k.toServer : k.toClient);
      sendKey_.emplace(server_ ? k.toClient : k.toServer);
      keyed_ = true;
      auto pending = std::move(beforeKey_);
      beforeKey_.clear();
      for (auto& [t, p] : pending) send(t, p);
      continue;
    }
    if (onFrame_) onFrame_(f);
  }
}

void Session::writeNext() {
  if (closed_ || out_.empty()) {
    writing_ = false;
    return;
  }
  writing_ = true;
  // Everything queued goes in one write: a burst of reports or verdicts costs one syscall.
  inflight_.swap(out_);
  auto self = shared_from_this();
  asio::async_write(sock_, asio::buffer(inflight_), [self](boost::system::error_code ec, size_t n) {
    if (self->closed_) return;
    if (ec) return self->close(ec.message());
    self->queuedBytes_ -= std::min(self->queuedBytes_, n);
    self->inflight_.clear();
    // A backlog (a slow reader) may have grown it far beyond a round's frames: give that memory back.
    if (self->inflight_.capacity() > (size_t{1} << 20)) self->inflight_.shrink_to_fit();
    self->writeNext();
  });
}

}  // namespace wirewise::control
