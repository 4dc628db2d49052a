#include "runtime/metrics_http.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string_view>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace wirewise {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// A scraper sends its request at once; a connection silent this long is a stray one (or a slow attack).
constexpr auto kIoTimeout = std::chrono::seconds(5);
// Prometheus needs one connection per scrape; more than a few open at once is not a scraper.
constexpr int kMaxOpen = 8;
// The exposition format's media type (text format 0.0.4), as every Prometheus exporter announces it.
constexpr const char* kMetricsType = "text/plain; version=0.0.4; charset=utf-8";

// One connection: read one request, write one response, close.
class MetricsSession : public std::enable_shared_from_this<MetricsSession> {
 public:
  MetricsSession(tcp::socket s, const MetricsHttp::RenderFn& render, std::atomic<int>& open)
      : stream_(std::move(s)), render_(render), open_(open) {
    open_.fetch_add(1);
  }
  ~MetricsSession() { open_.fetch_sub(1); }

  void run() {
    // Requests are a line and a few headers; a body is never needed.
    parser_.header_limit(8192);
    parser_.body_limit(4096);
    stream_.expires_after(kIoTimeout);
    http::async_read(stream_, buffer_, parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->respond(ec); });
  }

 private:
  void respond(beast::error_code ec) {
    if (ec) return close();  // timeout, reset, malformed request: nothing to answer
    const auto& req = parser_.get();
    res_.version(req.version());
    res_.keep_alive(false);
    res_.set(http::field::server, "wirewise");
    const std::string_view target(req.target().data(), req.target().size());
    if (req.method() != http::verb::get) {
      res_.result(http::status::method_not_allowed);
      res_.set(http::field::allow, "GET");
      res_.set(http::field::content_type, "text/plain");
      res_.body() = "wirewise serves GET /metrics\n";
    } else if (target == "/metrics" || target.starts_with("/metrics?")) {
      res_.result(http::status::ok);
      res_.set(http::field::content_type, kMetricsType);
      res_.body() = render_();
    } else {
      res_.result(http::status::not_found);
      res_.set(http::field::content_type, "text/plain");
      res_.body() = "not found: wirewise serves GET /metrics\n";
    }
    res_.prepare_payload();
    stream_.expires_after(kIoTimeout);
    http::async_write(stream_, res_, [self = shared_from_this()](beast::error_code, size_t) { self->close(); });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request_parser<http::string_body> parser_;
  http::response<http::string_body> res_;
  const MetricsHttp::RenderFn& render_;
  std::atomic<int>& open_;
};

}  // namespace

struct MetricsHttp::Impl {
  explicit Impl(RenderFn r) : render(std::move(r)) {}

  void accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket s) {
      if (ec == asio::error::operation_aborted) return;  // stop()
      if (ec) {
        // Out of descriptors or memory: retrying at once would spin; try again shortly.
        retry.expires_after(std::chrono::milliseconds(100));
        retry.async_wait([this](beast::error_code e) {
          if (!e) accept();
        });
        return;
      }
      // Past the limit the socket closes as it goes out of scope.
      if (open.load() < kMaxOpen) std::make_shared<MetricsSession>(std::move(s), render, open)->run();
      accept();
    });
  }

  // Sessions still pending when the io_context goes are destroyed with it and use render and open then:
  // both are declared before it so that they outlive it.
  RenderFn render;
  std::atomic<int> open{0};
  asio::io_context io;  // before the acceptor and timer: they are destroyed first
  tcp::acceptor acceptor{io};
  asio::steady_timer retry{io};
  std::thread thread;
  bool stopped = false;
};

MetricsHttp::MetricsHttp(RenderFn render) : impl_(std::make_unique<Impl>(std::move(render))) {}

MetricsHttp::~MetricsHttp() { stop(); }

bool MetricsHttp::start(uint16_t port, std::string* problem, const std::string& address) {
  beast::error_code ec;
  const auto addr = asio::ip::make_address(address, ec);
  const tcp::endpoint ep(addr, port);
  auto& a = impl_->acceptor;
  if (!ec) a.open(ep.protocol(), ec);
  // Lets a restarted job bind while the previous one's connections linger in TIME_WAIT; on Linux it never
  // lets two listeners share the port.
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    *problem = "cannot listen on " + address + ":" + std::to_string(port) + ": " + ec.message();
    beast::error_code ignored;
    a.close(ignored);
    return false;
  }
  impl_->accept();
  impl_->thread = std::thread([impl = impl_.get()] {
    // The thread's top: a handler that throws (memory) must not end the job; the server carries on.
    for (;;) {
      try {
        impl->io.run();
        return;
      } catch (...) {
      }
    }
  });
  return true;
}

void MetricsHttp::stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  if (impl_->thread.joinable()) {
    impl_->io.stop();
    impl_->thread.join();
  }
  beast::error_code ignored;
  impl_->acceptor.close(ignored);
}

uint16_t MetricsHttp::port() const {
  beast::error_code ec;
  const auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

std::optional<int> launcherLocalRank(const EnvSource& env) {
  for (const char* name : {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"}) {
    const char* v = env(name);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    const long r = std::strtol(v, &end, 10);
    if (*end != '\0' || r < 0 || r > 65535) return std::nullopt;
    return static_cast<int>(r);
  }
  return std::nullopt;
}

}  // namespace wirewise
